/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A build without test hooks (-Dtest_hooks=disabled: release builds, the packages) ignores every
 * LLMTUNE_TEST_* variable: no injected fault, no crash point, no trace file written. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test-hooks.h"

START_TEST(hooks_are_ignored)
{
        char trace[] = "/tmp/llmtune-nohooks-XXXXXX";
        int fd = mkstemp(trace);
        ck_assert_int_ge(fd, 0);
        close(fd);
        unlink(trace);
        setenv("LLMTUNE_TEST_FAULT", "/etc/x:EIO", 1);
        setenv("LLMTUNE_TEST_FAIL_WRITE", "/etc/x", 1);
        setenv("LLMTUNE_TEST_POINTS", trace, 1);
        setenv("LLMTUNE_TEST_KILL_AT", "1", 1);
        setenv("LLMTUNE_TEST_STOP_AT", "1", 1);
        ck_assert_int_eq(test_fault("/etc/x"), 0);
        test_points_in_action(1);
        ck_assert_int_eq(test_points_active(), 0);
        test_point("intent-logged", "/etc/x"); /* with hooks: SIGKILL here */
        ck_assert_int_ne(access(trace, F_OK), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("nohooks");
        TCase *tc = tcase_create("nohooks");
        tcase_add_test(tc, hooks_are_ignored);
        suite_add_tcase(s, tc);
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
