/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The site configuration (src/base/site-config.c): reading llmtune.conf through a root, its errors
 * with file:line, and `profile set/unset` rewriting only the pin. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/site-config.h"
#include "tmptree.h"
#include "unit-main.h"

static void setup(void) { tmptree_new("config"); }

static int load(const char *text, struct site_config *c, struct diags *d)
{
        if (text)
                tmptree_put("etc/llmtune/llmtune.conf", text, 0644);
        struct root *r;
        ck_assert_int_eq(root_new(tmptree_path(), &r), 0);
        int rc = site_config_load(r, c, d);
        root_free(r);
        return rc;
}

START_TEST(missing_is_empty)
{
        struct site_config c;
        struct diags d = {0};
        ck_assert_int_eq(load(NULL, &c, &d), 0);
        ck_assert(!c.present);
        ck_assert_ptr_null(c.profile);
        ck_assert_int_eq(c.apply_wait, -1);
        ck_assert_uint_eq(d.msgs.n, 0);
        site_config_done(&c);
}
END_TEST
DEFINE_TEST(missing_is_empty, .description = "missing is empty", .root = "tmptree");

START_TEST(values_and_sections)
{
        struct site_config c;
        struct diags d = {0};
        ck_assert_int_eq(load("# pinned by ansible\nprofile = a100-8x\n[audit]\nfail_on = critical\n[apply]\nwait = yes\n"
                              "[rollback]\nwait = false\n",
                              &c, &d),
                         0);
        ck_assert_str_eq(c.profile, "a100-8x");
        ck_assert_uint_eq(c.profile_line, 2);
        ck_assert_str_eq(c.fail_on, "critical");
        ck_assert_int_eq(c.apply_wait, 1);
        ck_assert_int_eq(c.rollback_wait, 0);
        site_config_done(&c);
        ck_assert_int_eq(load("[llmtune]\nprofile = base\n", &c, &d), 0);
        ck_assert_str_eq(c.profile, "base");
        site_config_done(&c);
}
END_TEST
DEFINE_TEST(values_and_sections, .description = "values and sections", .root = "tmptree");

START_TEST(errors_name_the_line)
{
        struct site_config c;
        struct diags d = {0};
        ck_assert_int_eq(load("profile = A100!\n[audit]\nfail_on = often\nwhat = 1\n[colours]\nx = 1\n[apply]\nwait = maybe\n",
                              &c, &d),
                         -EINVAL);
        ck_assert_uint_eq(d.msgs.n, 5);
        ck_assert_ptr_nonnull(strstr(d.msgs.v[0], "llmtune.conf:1: profile 'A100!'"));
        ck_assert_ptr_nonnull(strstr(d.msgs.v[1], "llmtune.conf:3: fail_on 'often'"));
        ck_assert_ptr_nonnull(strstr(d.msgs.v[2], "llmtune.conf:4: unknown key 'what' in [audit]"));
        ck_assert_ptr_nonnull(strstr(d.msgs.v[3], "llmtune.conf:6: unknown section [colours]"));
        ck_assert_ptr_nonnull(strstr(d.msgs.v[4], "llmtune.conf:8: wait 'maybe'"));
        strv_done(&d.msgs);
        site_config_done(&c);
        ck_assert_int_eq(load("profile = a\nprofile = b\n", &c, &d), -EINVAL);
        ck_assert_ptr_nonnull(strstr(d.msgs.v[0], "profile given twice (first at line 1)"));
        strv_done(&d.msgs);
        site_config_done(&c);
}
END_TEST
DEFINE_TEST(errors_name_the_line, .description = "errors name the line", .root = "tmptree");

/*
 * The site configuration chooses the profile (its pin), so it is taken as a profile is: judged by
 * the trust policy on the file that is read (ini_read_input). A llmtune.conf every user can write
 * is refused by its path, not read; one only root can write is read. Trust is judged only when
 * llmtune runs as root (trust.h).
 */
START_TEST(others_writable_refused)
{
        if (geteuid() != 0)
                return;
        struct site_config c;
        struct diags d = {0};
        tmptree_put("etc/llmtune/llmtune.conf", "profile = evil\n", 0666);
        ck_assert_int_eq(load(NULL, &c, &d), -EPERM);
        ck_assert_ptr_null(c.profile);
        ck_assert_uint_eq(d.msgs.n, 1);
        ck_assert_msg(strstr(d.msgs.v[0], "/etc/llmtune/llmtune.conf: refused: the file itself is writable by every user"),
                      "%s", d.msgs.v[0]);
        strv_done(&d.msgs);
        site_config_done(&c);
        tmptree_put("etc/llmtune/llmtune.conf", "profile = ours\n", 0644);
        ck_assert_int_eq(load(NULL, &c, &d), 0);
        ck_assert_str_eq(c.profile, "ours");
        ck_assert_uint_eq(d.msgs.n, 0);
        site_config_done(&c);
}
END_TEST
DEFINE_TEST(others_writable_refused, .description = "a llmtune.conf other users can write is refused by its path",
            .root = "tmptree");

START_TEST(rewrite_keeps_other_lines)
{
        char *t = site_config_with_profile(NULL, "base");
        ck_assert_str_eq(t, "# llmtune site configuration: see llmtune(1), CONFIGURATION.\nprofile = base\n");
        free(t);
        t = site_config_with_profile("# ours\nprofile = old  \n[audit]\nfail_on = info\n", "new");
        ck_assert_str_eq(t, "# ours\nprofile = new\n[audit]\nfail_on = info\n");
        free(t);
        /* no pin yet: it goes before the first section (a key there belongs to that section) */
        t = site_config_with_profile("# ours\n[audit]\nfail_on = info\n", "new");
        ck_assert_str_eq(t, "# ours\nprofile = new\n[audit]\nfail_on = info\n");
        free(t);
        /* a pin in [llmtune] is replaced at the top, once; a 'profile' key elsewhere is not ours */
        t = site_config_with_profile("[apply]\nprofile_x = 1\n[llmtune]\nprofile: old\n", "new");
        ck_assert_str_eq(t, "profile = new\n[apply]\nprofile_x = 1\n[llmtune]\n");
        free(t);
        t = site_config_with_profile("# ours\nprofile = old\n[audit]\nfail_on = info", NULL);
        ck_assert_str_eq(t, "# ours\n[audit]\nfail_on = info\n");
        free(t);
}
END_TEST
DEFINE_TEST(rewrite_keeps_other_lines, .description = "rewrite keeps other lines", .root = "tmptree");

UNIT_MAIN(.name = "config", .setup = setup, .teardown = tmptree_drop)
