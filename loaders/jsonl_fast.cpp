/* jsonl_fast.cpp: the fast path of the JSON Lines loader, one record read with simdjson, behind the C interface of loaders_internal.h. */
#include <cstring>
#include <new>
#include <string_view>

#define SIMDJSON_EXCEPTIONS 0
#include <simdjson.h>

extern "C" {
#include "loaders_internal.h"
}

/* The parser keeps its buffers from one record to the next, and the record is
 * copied into a buffer of its own because simdjson reads up to
 * SIMDJSON_PADDING bytes past the end of its input. */
struct loaders_jsonl_fast {
  simdjson::dom::parser parser;
  char *buf = nullptr;
  size_t cap = 0;
};

extern "C" loaders_jsonl_fast *loaders_jsonl_fast_create(void) { return new (std::nothrow) loaders_jsonl_fast(); }

extern "C" void loaders_jsonl_fast_destroy(loaders_jsonl_fast *fast) {
  if (fast == nullptr) return;
  delete[] fast->buf;
  delete fast;
}

/* A JSON integer the strict path takes as it is: written as an integer (not
 * 1.0 or 1e3, which the strict path reads through a double), not negative,
 * and at most 2^53-1 (above that the strict path refuses it). */
static bool fast_uint(simdjson::dom::element e, uint64_t *out) {
  simdjson::dom::element_type t = e.type();
  if (t != simdjson::dom::element_type::INT64 && t != simdjson::dom::element_type::UINT64) return false;
  uint64_t v;
  if (e.get_uint64().get(v) != simdjson::SUCCESS) return false;
  if (v > 9007199254740991ull) return false;
  *out = v;
  return true;
}

static bool fast_address(simdjson::dom::element e, uint64_t nwords, prstm_word *out) {
  uint64_t v;
  if (!fast_uint(e, &v) || v >= nwords) return false;
  *out = v;
  return true;
}

/* The type whose name is `name`, or -1. */
static int fast_type(const prstm_workload *wl, std::string_view name) {
  for (unsigned t = 0; t < wl->ntypes; t++) {
    const char *tn = wl->types[t].name;
    if (std::strncmp(tn, name.data(), name.size()) == 0 && tn[name.size()] == '\0') return (int)t;
  }
  return -1;
}

/* The argument of desc named `key`, or -1. */
static int fast_arg(const prstm_type_desc *desc, std::string_view key) {
  for (unsigned a = 0; a < desc->nargs; a++) {
    const char *an = desc->args[a].name;
    if (std::strncmp(an, key.data(), key.size()) == 0 && an[key.size()] == '\0') return (int)a;
  }
  return -1;
}

extern "C" int loaders_jsonl_fast_record(loaders_jsonl_fast *fast, const char *text, size_t n, const prstm_workload *wl,
                                         uint64_t nwords, unsigned *type_out, prstm_word *args, unsigned *nargs_out) {
  /* Escapes and NUL bytes are left to the strict path: it refuses a \u0000
   * that simdjson would decode into a string, and it places every error. */
  if (std::memchr(text, '\\', n) != nullptr || std::memchr(text, '\0', n) != nullptr) return 0;
  if (n + simdjson::SIMDJSON_PADDING > fast->cap) {
    size_t cap = fast->cap ? fast->cap : 256;
    while (cap < n + simdjson::SIMDJSON_PADDING) cap *= 2;
    char *bigger = new (std::nothrow) char[cap];
    if (bigger == nullptr) return 0;
    delete[] fast->buf;
    fast->buf = bigger;
    fast->cap = cap;
  }
  std::memcpy(fast->buf, text, n);
  std::memset(fast->buf + n, 0, simdjson::SIMDJSON_PADDING);

  simdjson::dom::element root;
  if (fast->parser.parse(fast->buf, n, false).get(root) != simdjson::SUCCESS) return 0;
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) return 0;

  /* The type first, since it decides which keys are allowed. */
  simdjson::dom::element type_item;
  std::string_view type_name;
  if (obj["type"].get(type_item) != simdjson::SUCCESS || type_item.get_string().get(type_name) != simdjson::SUCCESS)
    return 0;
  int type = fast_type(wl, type_name);
  if (type < 0) return 0;
  const prstm_type_desc *desc = &wl->types[type];
  if (desc->nargs > PRSTM_MAX_ARGS) return 0;

  /* Each argument's value, by the position of its name; every key must be
   * known and appear once (simdjson keeps both copies of a repeated key). */
  simdjson::dom::element values[PRSTM_MAX_ARGS];
  unsigned seen = 0, have_type = 0;
  for (simdjson::dom::key_value_pair field : obj) {
    if (field.key == "type") {
      if (have_type++) return 0;
      continue;
    }
    int a = fast_arg(desc, field.key);
    if (a < 0 || (seen >> a) & 1u) return 0;
    seen |= 1u << a;
    values[a] = field.value;
  }
  if (seen != (desc->nargs >= 32 ? ~0u : (1u << desc->nargs) - 1u)) return 0;

  unsigned nargs = 0;
  for (unsigned a = 0; a < desc->nargs; a++) {
    switch (desc->args[a].kind) {
      case PRSTM_ARG_ADDRESS:
        if (!fast_address(values[a], nwords, &args[nargs])) return 0;
        nargs++;
        break;
      case PRSTM_ARG_UINT: {
        uint64_t v;
        if (!fast_uint(values[a], &v)) return 0;
        args[nargs++] = v;
        break;
      }
      case PRSTM_ARG_ADDRESS_LIST: {
        simdjson::dom::array list;
        if (a + 1 != desc->nargs || values[a].get_array().get(list) != simdjson::SUCCESS) return 0;
        size_t count = list.size();
        if (count == 0 || count > (size_t)LOADERS_MAX_LIST) return 0;
        args[nargs++] = (prstm_word)count;
        for (simdjson::dom::element e : list) {
          if (!fast_address(e, nwords, &args[nargs])) return 0;
          nargs++;
        }
        break;
      }
      default:
        return 0;
    }
  }
  *type_out = (unsigned)type;
  *nargs_out = nargs;
  return 1;
}
