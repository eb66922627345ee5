/* no_entry.c: a test shared library without the PRSTM_PLUGIN entry points, which prstm-run must refuse. */
int prstm_test_not_a_plugin(void);
int prstm_test_not_a_plugin(void) { return 42; }
