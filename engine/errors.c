/* errors.c: the error codes' names, messages and classes, generated from the one table in prstm.h. */
#include "prstm.h"

const char *prstm_strerror(int err) {
  switch (err) {
    case 0:
      return "success";
#define PRSTM_STRERROR_CASE(name, code, msg) \
  case PRSTM_##name:                         \
    return msg;
      PRSTM_ERRNO_MAP(PRSTM_STRERROR_CASE)
#undef PRSTM_STRERROR_CASE
    default:
      return "unknown error";
  }
}

const char *prstm_err_name(int err) {
  switch (err) {
    case 0:
      return "0";
#define PRSTM_ERRNAME_CASE(name, code, msg) \
  case PRSTM_##name:                        \
    return "PRSTM_" #name;
      PRSTM_ERRNO_MAP(PRSTM_ERRNAME_CASE)
#undef PRSTM_ERRNAME_CASE
    default:
      return "PRSTM_UNKNOWN_ERROR";
  }
}

int prstm_is_input_error(int err) {
  return err == PRSTM_EINVAL || err == PRSTM_EPARSE || err == PRSTM_ECONFIG || err == PRSTM_EUNKNOWN ||
         err == PRSTM_EPLUGIN;
}
