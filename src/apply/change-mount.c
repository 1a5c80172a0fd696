/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A mount remounted with other options: target = the mount point, before/after = option lists.
 * mount(8) -o remount on the live system; in a fixture tree its /proc/mounts, changed the way the
 * kernel would show it.
 */
#include <errno.h>
#include <stdio.h>

#include "apply/actions-internal.h"
#include "apply/change-kind.h"
#include "facts/readers/mounts.h"
#include "base/test-hooks.h"

/* *RET: the options of the last mount on MP (NULL: not mounted); -errno when the mount table is
 * there but cannot be read. */
static int mount_options_of(struct root *r, const char *mp, char **ret)
{
        root_forget(r, "/proc/mounts");
        struct mount_entry *m = NULL;
        size_t n = 0;
        *ret = NULL;
        int rc = mounts_read(r, &m, &n);
        if (rc == 0)
                for (size_t i = 0; i < n; i++)
                        if (streq(m[i].target, mp)) {
                                free(*ret);
                                *ret = xstrdup(m[i].options);
                        }
        mounts_free(m, n);
        return rc == 0 || root_gone(rc) ? 0 : rc;
}

static int tree_remount(struct root *r, const char *mp, const char *options)
{
        _cleanup_free_ char *cur = act_read_whole(r, "/proc/mounts");
        if (!cur)
                return -ENOENT;
        /* ext4 keeps its stripe across a remount not given stripe= (fs/ext4/super.c applies only the
         * options given), and the kernel goes on showing it: so does the tree. */
        _cleanup_free_ char *was = NULL;
        mount_options_of(r, mp, &was); /* unreadable: no stripe to keep */
        _cleanup_free_ char *stripe = was ? mount_option(was, "stripe") : NULL;
        _cleanup_free_ char *given = mount_option(options, "stripe");
        _cleanup_free_ char *with = stripe && !given ? xasprintf("%s%sstripe=%s", options, *options ? "," : "", stripe)
                                                     : xstrdup(options);
        _cleanup_free_ char *text = mounts_with_options(cur, mp, with);
        return root_write_file(r, "/proc/mounts", text, strlen(text), 0444);
}

/* Remount C's mount point with OPTIONS: mount(8) on the live system, /proc/mounts in a tree. */
static int remount(struct root *r, const struct change *c, const char *options, char **err)
{
        int rc;
        if (root_is_live(r)) {
                _cleanup_free_ char *o = xasprintf("remount,%s", options);
                _cleanup_strv_ struct strv argv = {0};
                strv_add(&argv, "mount");
                strv_add(&argv, "-o");
                strv_add(&argv, o);
                strv_add(&argv, c->target);
                rc = act_run_argv(argv.v, -1, err);
                return rc;
        }
        rc = tree_remount(r, c->target, options);
        if (rc < 0)
                *err = act_errmsg(c, "cannot remount", rc);
        return rc;
}

/* A mount option list as /proc/mounts prints it: no spaces, quotes or control characters. */
static bool options_ok(const char *s)
{
        if (!s || !*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                      strchr("_=,.:/@+-", *s)))
                        return false;
        return true;
}

static int mount_check(const struct change *c, char **why)
{
        if (!options_ok(c->before) || !options_ok(c->after)) {
                *why = xasprintf("refused to change %s: the mount options hold characters no option has", c->target);
                return -EPERM;
        }
        return 0;
}

static int mount_apply(struct root *r, const struct change *c, char **err)
{
        int rc = test_fault(c->target);
        if (rc < 0) {
                *err = act_errmsg(c, "cannot remount", rc);
                return rc;
        }
        return remount(r, c, c->after, err);
}

static int mount_undo(struct root *r, const struct change *c, char **err) { return remount(r, c, c->before, err); }

/* The options the mount point has, as the kernel shows them: verify reports what is there. The
 * comparison (mount_state_equal) judges only the options the change touched, so a stripe= the
 * kernel shows (a remount leaves it as it is, see plan_mount_option) is not a drift. */
static int mount_current(struct root *r, const struct change *c, char **ret)
{
        int rc = mount_options_of(r, c->target, ret);
        return rc < 0 ? rc : 0; /* the mount table cannot be read: not "not mounted" */
}

static void split_options(const char *list, struct strv *out)
{
        _cleanup_free_ char *x = xstrdup(list);
        char *save = NULL;
        for (char *t = strtok_r(x, ",", &save); t; t = strtok_r(NULL, ",", &save))
                strv_add(out, t);
}

/* Option lists compare as sets: the kernel prints remount options in its own order. */
static bool same_options(const char *a, const char *b)
{
        _cleanup_strv_ struct strv sa = {0}, sb = {0};
        split_options(a, &sa);
        split_options(b, &sb);
        strv_sort(&sa);
        strv_sort(&sb);
        bool eq = sa.n == sb.n;
        for (size_t i = 0; eq && i < sa.n; i++)
                eq = streq(sa.v[i], sb.v[i]);
        return eq;
}

static bool has_option(const struct strv *l, const char *opt) { return strv_contains(l, opt); }

/* Is the mount in state WANT (the change's before or after) as far as this change goes: the
 * options it added are there and those it removed are not (for "before", the reverse)? Options it
 * did not touch are not its business: in a service's mount namespace (ProtectSystem=) every mount
 * shows ro,nosuid, and llmtune-verify.service reported noatime as drift on every machine (found by
 * the boot lab, tests/bootlab). */
static bool mount_state_equal(const struct change *c, const char *current, const char *want)
{
        const char *other = c->after && streq(want, c->after) ? c->before : c->after;
        if (!other || streq(other, want)) {
                /* no option to judge by: all of them, but the stripe no remount sets */
                _cleanup_free_ char *cur = mount_options_without(current, "stripe");
                return same_options(cur, want);
        }
        _cleanup_strv_ struct strv cur = {0}, w = {0}, o = {0};
        split_options(current, &cur);
        split_options(want, &w);
        split_options(other, &o);
        bool eq = true;
        for (size_t i = 0; eq && i < w.n; i++)
                eq = has_option(&o, w.v[i]) || has_option(&cur, w.v[i]);
        for (size_t i = 0; eq && i < o.n; i++)
                eq = has_option(&w, o.v[i]) || !has_option(&cur, o.v[i]);
        return eq;
}

static void mount_leftovers(struct root *r, const struct change *c)
{
        if (!root_is_live(r))
                act_remove_temp_of(r, "/proc/mounts", false);
}

const struct change_kind change_kind_mount = {
        .name = "mountopt",
        .allowed = act_clean_path,
        .area = "a clean absolute path",
        .check = mount_check,
        .apply = mount_apply,
        .undo = mount_undo,
        .current = mount_current,
        .equal = mount_state_equal,
        .leftovers = mount_leftovers,
        .sections = {"Remounts"},
};
