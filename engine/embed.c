/* embed.c: conveniences for programs that embed prstm: appending a transaction by type name with its arguments checked, status names, and the workload's invariant check. */
#include <stdio.h>
#include <string.h>

#include "txtable.h"

int prstm_batch_append_named(prstm_batch *batch, const char *type, const prstm_word *args, unsigned nargs) {
  const prstm_workload *wl = prstm_batch_workload(batch);
  if (wl == NULL) return PRSTM_EINVAL;
  if (type == NULL) return txtable_fail(batch, PRSTM_EINVAL, "no type name");
  if (nargs > 0 && args == NULL) return txtable_fail(batch, PRSTM_EINVAL, "%u argument words but no array", nargs);
  int index = prstm_type_find(wl, type);
  if (index < 0)
    return txtable_fail(batch, PRSTM_EUNKNOWN, "unknown transaction type '%s' in workload %s", type, wl->name);
  const prstm_type_desc *desc = &wl->types[index];
  if (desc->nargs > PRSTM_MAX_ARGS)
    return txtable_fail(batch, PRSTM_EINVAL, "type %s declares too many arguments", type);
  /* Only the last argument may be an address list; it takes one word for its
   * count and one per entry, so the number of words depends on that count. */
  int has_list = desc->nargs > 0 && desc->args[desc->nargs - 1].kind == PRSTM_ARG_ADDRESS_LIST;
  if (!has_list) {
    if (nargs != desc->nargs)
      return txtable_fail(batch, PRSTM_EINVAL, "type %s takes %u argument words, got %u", type, desc->nargs, nargs);
  } else {
    unsigned fixed = desc->nargs - 1;
    if (nargs < fixed + 1)
      return txtable_fail(batch, PRSTM_EINVAL,
                          "type %s takes %u argument words, then the count of its %s list and its entries; got %u",
                          type, fixed, desc->args[fixed].name, nargs);
    prstm_word count = args[fixed];
    /* An empty list is refused as the JSON loaders refuse it: such a
     * transaction would do nothing and almost certainly is a caller's bug. */
    if (count == 0)
      return txtable_fail(batch, PRSTM_EINVAL, "type %s: the %s list is empty", type, desc->args[fixed].name);
    if (count != (prstm_word)(nargs - fixed - 1))
      return txtable_fail(batch, PRSTM_EINVAL, "type %s: the %s list says %llu entries, %u follow", type,
                          desc->args[fixed].name, (unsigned long long)count, nargs - fixed - 1);
  }
  return prstm_batch_append(batch, (unsigned)index, args, nargs);
}

const char *prstm_status_name(prstm_status status) {
  switch (status) {
    case PRSTM_PENDING:
      return "pending";
    case PRSTM_COMMITTED:
      return "committed";
    case PRSTM_ABANDONED:
      return "abandoned";
    case PRSTM_FAILED:
      return "failed";
    default:
      return "unknown status";
  }
}

int prstm_engine_check_invariant(const prstm_engine *engine, const prstm_batch *batch, int *ok, char *msg,
                                 size_t msglen) {
  if (engine == NULL || batch == NULL || ok == NULL || (msglen > 0 && msg == NULL)) return PRSTM_EINVAL;
  /* The verdict is written even on refusal, so that a caller who ignores the
   * return code still never reads an uninitialised "ok". */
  *ok = 0;
  char scratch[256];
  if (msglen == 0) {
    msg = scratch;
    msglen = sizeof scratch;
  }
  const prstm_workload *wl = prstm_engine_workload(engine);
  if (prstm_batch_workload(batch) != wl) {
    snprintf(msg, msglen, "batch of workload %s checked against an engine of workload %s",
             prstm_batch_workload(batch)->name, wl->name);
    return PRSTM_EINVAL;
  }
  if (wl->check_invariant == NULL) {
    snprintf(msg, msglen, "workload %s has no invariant check", wl->name);
    return PRSTM_EINVAL;
  }
  if (prstm_engine_state(engine, NULL) == NULL) {
    snprintf(msg, msglen, "the engine has no state: set or init it first");
    return PRSTM_EINVAL;
  }
  msg[0] = '\0';
  return wl->check_invariant(engine, batch, ok, msg, msglen);
}
