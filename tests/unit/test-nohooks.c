/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The llmtune that is installed has no test hooks, whatever the build options: the copy of
 * src/base/test-hooks.c it links ignores every LLMTUNE_TEST_* variable (no injected fault, no crash
 * point, no trace file), and its file names none of them, while llmtune-test, the same objects
 * linked with the hooks on, does (so the search can find them). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/test-hooks.h"
#include "unit-main.h"

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
        setenv("LLMTUNE_TEST_CONFINEMENT", "vet", 1);
        ck_assert_int_eq(test_fault("/etc/x"), 0);
        test_points_in_action(1);
        ck_assert_int_eq(test_points_active(), 0);
        ck_assert_ptr_null(test_confinement());
        test_point("intent-logged", "/etc/x"); /* with hooks: SIGKILL here */
        ck_assert_int_ne(access(trace, F_OK), 0);
}
END_TEST
DEFINE_TEST(hooks_are_ignored, .description = "hooks are ignored", .root = "none");

/* How many of the hooks' variable names the file PATH holds (as strings(1) would find them). */
static int hook_names_in(const char *path)
{
        static const char *const names[] = {"LLMTUNE_TEST_FAULT", "LLMTUNE_TEST_FAIL_WRITE", "LLMTUNE_TEST_KILL_AT",
                                            "LLMTUNE_TEST_STOP_AT", "LLMTUNE_TEST_POINTS", "LLMTUNE_TEST_CONFINEMENT"};
        FILE *f = fopen(path, "rb");
        ck_assert_msg(f != NULL, "cannot open %s", path);
        size_t cap = 1 << 20, len = 0;
        char *buf = malloc(cap);
        size_t n;
        while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
                len += n;
                if (len == cap)
                        buf = realloc(buf, cap *= 2);
        }
        fclose(f);
        int found = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                found += memmem(buf, len, names[i], strlen(names[i])) != NULL;
        free(buf);
        return found;
}

START_TEST(installed_binary_has_no_hooks)
{
        const char *bin = getenv("LLMTUNE_BIN"), *test_bin = getenv("LLMTUNE_TEST_BIN");
        ck_assert_msg(bin && test_bin, "LLMTUNE_BIN and LLMTUNE_TEST_BIN name the two builds");
        ck_assert_int_eq(hook_names_in(bin), 0);
        ck_assert_int_eq(hook_names_in(test_bin), 6);
}
END_TEST
DEFINE_TEST(installed_binary_has_no_hooks, .description = "installed binary has no hooks", .root = "none");

UNIT_MAIN(.name = "nohooks")
