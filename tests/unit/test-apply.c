/* SPDX-License-Identifier: MIT */
/* The pieces of apply: unified diffs, atomic file replacement under the root, tree emulation. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actions.h"
#include "diff.h"
#include "tmptree.h"

static void setup(void) { tmptree_new("apply"); }

START_TEST(diffs)
{
        char *d = unified_diff("/etc/fstab", "a\nb\nswap\nc\n", "a\nb\n#off# swap\nc\n");
        ck_assert_str_eq(d, "--- a/etc/fstab\n+++ b/etc/fstab\n@@ -1,4 +1,4 @@\n a\n b\n-swap\n+#off# swap\n c\n");
        free(d);
        d = unified_diff("/etc/x.conf", NULL, "k = 1\n");
        ck_assert_str_eq(d, "--- /dev/null\n+++ b/etc/x.conf\n@@ -0,0 +1,1 @@\n+k = 1\n");
        free(d);
        d = unified_diff("/etc/x.conf", "k = 1\n", NULL);
        ck_assert_str_eq(d, "--- a/etc/x.conf\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-k = 1\n");
        free(d);
        d = unified_diff("/etc/x", "same\n", "same\n");
        ck_assert_str_eq(d, "");
        free(d);
        d = unified_diff("/etc/x", "a", "b");
        ck_assert_ptr_nonnull(strstr(d, "\\ No newline at end of file"));
        free(d);
}
END_TEST

START_TEST(atomic_write_keeps_mode_and_refuses_links)
{
        tmptree_put("etc/fstab", "old\n", 0640);
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        ck_assert_int_eq(root_write_file(r, "/etc/fstab", "new\n", 4, 0644), 0);
        char *s = tmptree_get("etc/fstab");
        ck_assert_str_eq(s, "new\n");
        free(s);
        struct stat st;
        char *p = xasprintf("%s/etc/fstab", tmptree_path());
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0640);
        free(p);
        /* A link planted at a managed path is refused, never followed (it could point at /etc/shadow). */
        p = xasprintf("%s/etc/sysctl.conf", tmptree_path());
        ck_assert_int_eq(symlink("/etc/shadow", p), 0);
        ck_assert_int_eq(root_write_file(r, "/etc/sysctl.conf", "x\n", 2, 0644), -ELOOP);
        free(p);
        /* A link in a parent directory is refused too (RESOLVE_NO_SYMLINKS), even one that would
         * resolve inside the root: nothing is created through it. */
        p = xasprintf("%s/etc/evil", tmptree_path());
        ck_assert_int_eq(symlink("/", p), 0);
        ck_assert_int_eq(root_write_file(r, "/etc/evil/etc/created-inside", "x\n", 2, 0644), -ELOOP);
        free(p);
        ck_assert_ptr_null(tmptree_get("etc/created-inside"));
        root_free(r);
}
END_TEST

START_TEST(tree_values_read_like_the_kernel)
{
        tmptree_put("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n", 0644);
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        struct change c = {.type = CHANGE_VALUE, .target = "/sys/kernel/mm/transparent_hugepage/enabled",
                           .before = "always", .after = "madvise"};
        char *err = NULL, *now = NULL;
        ck_assert_int_eq(action_apply(r, &c, &err), 0);
        char *s = tmptree_get("sys/kernel/mm/transparent_hugepage/enabled");
        ck_assert_str_eq(s, "always [madvise] never\n");
        free(s);
        ck_assert_int_eq(action_current(r, &c, &now), 0);
        ck_assert_str_eq(now, "madvise");
        free(now);
        struct change bad = c;
        bad.after = "sometimes"; /* not a choice: the kernel says EINVAL */
        ck_assert_int_eq(action_apply(r, &bad, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "transparent_hugepage/enabled"));
        free(err);
        ck_assert_int_eq(action_undo(r, &c, &err), 0);
        s = tmptree_get("sys/kernel/mm/transparent_hugepage/enabled");
        ck_assert_str_eq(s, "[always] madvise never\n");
        free(s);
        root_free(r);
}
END_TEST

START_TEST(tree_swapoff_and_back)
{
        tmptree_put("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/swap\\040file file 1024 0 -2\n", 0444);
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        struct change c = {.type = CHANGE_SWAP, .target = "/swap file", .before = "on", .after = "off",
                           .aux = "/swap\\040file file 1024 0 -2"};
        char *err = NULL, *now = NULL;
        ck_assert_int_eq(action_apply(r, &c, &err), 0);
        ck_assert_int_eq(action_current(r, &c, &now), 0);
        ck_assert_str_eq(now, "off");
        free(now);
        ck_assert_int_eq(action_undo(r, &c, &err), 0);
        ck_assert_int_eq(action_current(r, &c, &now), 0);
        ck_assert_str_eq(now, "on");
        free(now);
        char *s = tmptree_get("proc/swaps");
        ck_assert_str_eq(s, "Filename\tType\tSize\tUsed\tPriority\n/swap\\040file file 1024 0 -2\n");
        free(s);
        root_free(r);
}
END_TEST

START_TEST(commands_never_run_on_this_machine_under_a_root)
{
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        struct change c = {.type = CHANGE_COMMAND, .target = "touch"};
        char *marker = xasprintf("%s-marker", tmptree_path());
        strv_add(&c.argv, "touch");
        strv_add(&c.argv, marker);
        char *err = NULL;
        ck_assert_int_eq(action_apply(r, &c, &err), 1); /* skipped */
        ck_assert_int_ne(access(marker, F_OK), 0);
        strv_free(&c.argv);
        free(marker);
        root_free(r);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("apply");
        TCase *tc = tcase_create("apply");
        tcase_add_checked_fixture(tc, setup, tmptree_drop);
        tcase_add_test(tc, diffs);
        tcase_add_test(tc, atomic_write_keeps_mode_and_refuses_links);
        tcase_add_test(tc, tree_values_read_like_the_kernel);
        tcase_add_test(tc, tree_swapoff_and_back);
        tcase_add_test(tc, commands_never_run_on_this_machine_under_a_root);
        suite_add_tcase(s, tc);
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
