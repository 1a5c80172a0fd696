/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A symbolic link under /etc/systemd (masking a unit or a generator, enabling a unit): before/after
 * are link targets, NULL = absent. Made under a temporary name and renamed over its place, so the
 * place is never empty; a real file in the way is a file change of its own, made first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/actions-internal.h"
#include "apply/change-kind.h"

static int set_symlink(struct root *r, const char *path, const char *target)
{
        _cleanup_free_ char *base = NULL;
        _cleanup_close_ int dfd = act_open_target_dir(r, path, &base, false);
        if (dfd < 0)
                return dfd;
        int rc = 0;
        if (!target) {
                rc = unlinkat(dfd, base, 0) < 0 && errno != ENOENT ? -errno : 0;
        } else {
                struct stat st;
                if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode))
                        return -EEXIST; /* the plan removes a file in the way first */
                _cleanup_free_ char *tmp = xasprintf(".%s.llmtune-%d", base, (int)getpid());
                unlinkat(dfd, tmp, 0);
                if (symlinkat(target, dfd, tmp) < 0 || renameat(dfd, tmp, dfd, base) < 0) {
                        rc = -errno;
                        unlinkat(dfd, tmp, 0);
                }
        }
        if (rc == 0)
                fsync(dfd);
        root_forget(r, path); /* a directory root.c keeps open may have been reached through it */
        return rc;
}

/* Link targets llmtune writes: /dev/null (masking) or a unit file (enabling). */
static bool link_value_allowed(const char *v)
{
        return !v || streq(v, "/dev/null") ||
               (act_clean_path(v) && (startswith(v, "/etc/systemd/system/") || startswith(v, "/usr/lib/systemd/system/") ||
                                  startswith(v, "/lib/systemd/system/")));
}

static bool link_allowed(const char *t) { return act_clean_path(t) && startswith(t, "/etc/systemd/"); }

static int link_check(const struct change *c, char **why)
{
        if (act_check_mkdirs(c, why) < 0)
                return -EPERM;
        if (!link_value_allowed(c->before) || !link_value_allowed(c->after)) {
                *why = xasprintf("refused to change %s: a link llmtune writes points at /dev/null or a unit file",
                                 c->target);
                return -EPERM;
        }
        return 0;
}

static int link_apply(struct root *r, const struct change *c, char **err)
{
        int rc = act_make_dirs(r, &c->mkdirs);
        if (rc == 0)
                rc = set_symlink(r, c->target, c->after);
        if (rc < 0)
                *err = act_errmsg(c, "cannot link", rc);
        return rc;
}

static int link_undo(struct root *r, const struct change *c, char **err)
{
        int rc = set_symlink(r, c->target, c->before);
        if (rc == 0)
                act_remove_dirs(r, &c->mkdirs);
        if (rc < 0)
                *err = act_errmsg(c, "cannot restore link", rc);
        return rc;
}

static int link_current(struct root *r, const struct change *c, char **ret)
{
        struct stat st;
        int rc = root_stat(r, c->target, &st, false);
        if (rc < 0)
                return root_gone(rc) ? 0 : rc;
        if (!S_ISLNK(st.st_mode)) {
                *ret = xstrdup("(not a symbolic link)");
                return 0;
        }
        rc = root_readlink(r, c->target, ret);
        if (rc < 0)
                *ret = NULL;
        return rc < 0 && !root_gone(rc) ? rc : 0;
}

static int link_foresee(struct root *r, const struct change *c, bool target_planned, char **why)
{
        return act_foresee_path(r, c, target_planned, false, "cannot link", why);
}

static void link_leftovers(struct root *r, const struct change *c) { act_remove_temp_of(r, c->target, false); }

static char *link_short_form(const struct change *c, const char *state, const char *sha)
{
        return state ? change_short_line(state) : xstrdup("(absent)");
}

const struct change_kind change_kind_link = {
        .name = "symlink",
        .in_etc = true,
        .allowed = link_allowed,
        .area = "under /etc/systemd",
        .check = link_check,
        .foresee = link_foresee,
        .apply = link_apply,
        .undo = link_undo,
        .current = link_current,
        .leftovers = link_leftovers,
        .sections = {"Links"},
        .short_form = link_short_form,
};
