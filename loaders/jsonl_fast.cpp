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
  /* The lengths of the workload's type and argument names, measured once:
   * a record's names are compared by length first. */
  const prstm_workload *wl = nullptr;
  size_t type_len[PRSTM_MAX_TYPES] = {};
  size_t arg_len[PRSTM_MAX_TYPES][PRSTM_MAX_ARGS] = {};
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

/* Measures the names of wl's types and arguments, once per workload; false
 * for a workload with more types or arguments than the fast path keeps. */
static bool fast_names(loaders_jsonl_fast *fast, const prstm_workload *wl) {
  if (fast->wl == wl) return true;
  if (wl->ntypes > PRSTM_MAX_TYPES) return false;
  for (unsigned t = 0; t < wl->ntypes; t++) {
    const prstm_type_desc *desc = &wl->types[t];
    if (desc->nargs > PRSTM_MAX_ARGS) return false;
    fast->type_len[t] = std::strlen(desc->name);
    for (unsigned a = 0; a < desc->nargs; a++) fast->arg_len[t][a] = std::strlen(desc->args[a].name);
  }
  fast->wl = wl;
  return true;
}

/* The type whose name is `name`, or -1. A name decoded from an escape keeps
 * any NUL it holds in its length, so "\u0000" never matches a name. */
static int fast_type(const loaders_jsonl_fast *fast, const prstm_workload *wl, std::string_view name) {
  for (unsigned t = 0; t < wl->ntypes; t++)
    if (fast->type_len[t] == name.size() && std::memcmp(wl->types[t].name, name.data(), name.size()) == 0)
      return (int)t;
  return -1;
}

/* The argument of type t named `key`, or -1. */
static int fast_arg(const loaders_jsonl_fast *fast, const prstm_workload *wl, unsigned t, std::string_view key) {
  const prstm_type_desc *desc = &wl->types[t];
  for (unsigned a = 0; a < desc->nargs; a++)
    if (fast->arg_len[t][a] == key.size() && std::memcmp(desc->args[a].name, key.data(), key.size()) == 0)
      return (int)a;
  return -1;
}

extern "C" int loaders_jsonl_fast_record(loaders_jsonl_fast *fast, const char *text, size_t n, const prstm_workload *wl,
                                         uint64_t nwords, unsigned *type_out, prstm_word *args, unsigned *nargs_out) {
  /* A NUL byte is not JSON, so simdjson refuses it, and a \u0000 it decodes
   * stays in the name's length, which then matches no name: either way the
   * strict path gets the record, and refuses it as it always has. */
  if (!fast_names(fast, wl)) return 0;
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
  int type = fast_type(fast, wl, type_name);
  if (type < 0) return 0;
  const prstm_type_desc *desc = &wl->types[type];

  /* Each argument's value, by the position of its name; every key must be
   * known and appear once (simdjson keeps both copies of a repeated key). */
  simdjson::dom::element values[PRSTM_MAX_ARGS];
  unsigned seen = 0, have_type = 0;
  for (simdjson::dom::key_value_pair field : obj) {
    if (field.key == "type") {
      if (have_type++) return 0;
      continue;
    }
    int a = fast_arg(fast, wl, (unsigned)type, field.key);
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
