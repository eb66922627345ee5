/* test_errors.c: the error codes users see: their values, names, messages and classes, written out. */
#include <criterion/criterion.h>

#include "prstm.h"

/* The codes, names and messages users see, written out here rather than
 * generated from the error table, so that a changed code, a swapped name or
 * message, or a lost entry fails. */
Test(errors, every_code_has_its_documented_name_message_and_class) {
  static const struct {
    int code, value;
    const char *name, *message;
    int input;
  } want[] = {
      {PRSTM_EINVAL, -1, "PRSTM_EINVAL", "invalid argument", 1},
      {PRSTM_ENOMEM, -2, "PRSTM_ENOMEM", "out of memory", 0},
      {PRSTM_EIO, -3, "PRSTM_EIO", "file could not be read or written", 0},
      {PRSTM_EPARSE, -4, "PRSTM_EPARSE", "malformed JSON", 1},
      {PRSTM_ECONFIG, -5, "PRSTM_ECONFIG", "invalid configuration or batch", 1},
      {PRSTM_ENOGPU, -6, "PRSTM_ENOGPU", "no usable GPU", 0},
      {PRSTM_ECUDA, -7, "PRSTM_ECUDA", "CUDA runtime error", 0},
      {PRSTM_ETHREAD, -8, "PRSTM_ETHREAD", "thread could not be created", 0},
      {PRSTM_ETOOBIG, -9, "PRSTM_ETOOBIG", "batch or state does not fit in memory", 0},
      {PRSTM_EUNKNOWN, -10, "PRSTM_EUNKNOWN", "unknown workload or transaction type", 1},
      {PRSTM_ESTALLED, -11, "PRSTM_ESTALLED", "the run made no progress within the watchdog limit", 0},
      {PRSTM_EPLUGIN, -12, "PRSTM_EPLUGIN", "workload plugin could not be loaded", 1},
  };
  unsigned listed = 0;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    cr_assert_eq(want[i].code, want[i].value, "%s is %d, documented as %d", want[i].name, want[i].code, want[i].value);
    cr_assert_str_eq(prstm_err_name(want[i].code), want[i].name);
    cr_assert_str_eq(prstm_strerror(want[i].code), want[i].message);
    cr_assert_eq(prstm_is_input_error(want[i].code), want[i].input, "%s", want[i].name);
  }
  /* Every code of the table is listed above. */
#define COUNT_ERR(name, code, msg) listed++;
  PRSTM_ERRNO_MAP(COUNT_ERR)
#undef COUNT_ERR
  cr_assert_eq(listed, sizeof want / sizeof want[0], "the error table has codes this test does not list");
  cr_assert_str_eq(prstm_strerror(0), "success");
  cr_assert_str_eq(prstm_strerror(-999), "unknown error");
  cr_assert_str_eq(prstm_err_name(-999), "PRSTM_UNKNOWN_ERROR");
  cr_assert_eq(prstm_is_input_error(0), 0);
}
