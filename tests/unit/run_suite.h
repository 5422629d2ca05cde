/* Runs one Check suite and turns its result into the process's exit status. */
#ifndef ROUNDTRIM_TEST_RUN_SUITE_H
#define ROUNDTRIM_TEST_RUN_SUITE_H

#include <check.h>
#include <stdlib.h>

static int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
