/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A runtime value under /sys or /proc/sys: before/after are the values. On the live system the
 * kernel's file is written; in a fixture tree a plain file, made to read the way the kernel would
 * print it. sysfs is made of links, so the way there follows them, but never out of /sys and
 * /proc/sys.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "apply/actions-internal.h"
#include "apply/change-kind.h"
#include "base/parse.h"
#include "base/test-hooks.h"

/* A link on the way that leads out of /sys and /proc/sys is refused (act_open_dir's -EXDEV). */
static char *value_errmsg(const struct change *c, const char *what, int rc)
{
        if (rc == -EXDEV)
                return xasprintf("%s %s: refused: a link on the way leads out of /sys and /proc/sys", what, c->target);
        return act_errmsg(c, what, rc);
}

/* A runtime value. Live: the kernel's file. A fixture tree: a plain file, which we make read the
 * way the kernel would print it (a bracketed choice list keeps its choices, the new one marked). */
static int write_value(struct root *r, const char *path, const char *value)
{
        int rc = test_fault(path);
        if (rc < 0)
                return rc;
        if (root_is_live(r)) {
                _cleanup_free_ char *base = NULL;
                _cleanup_close_ int dfd = act_open_dir(r, path, &base, true);
                if (dfd < 0)
                        return dfd;
                int fd = openat(dfd, base, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return -errno;
                rc = write_all(fd, value, strlen(value));
                /* an error the file reports only at close is the write's */
                if (close(fd) < 0 && rc == 0)
                        rc = -errno;
                root_forget(r, path);
                return rc;
        }
        _cleanup_free_ char *line = NULL;
        root_forget(r, path);
        if (root_read_line(r, path, &line) == 0 && strchr(line, '[')) {
                _cleanup_free_ char *active = NULL;
                _cleanup_strv_ struct strv all = {0};
                if (parse_bracketed(line, &active, &all) < 0)
                        return -EBADMSG;
                struct sbuf b = {0};
                bool found = false;
                for (size_t i = 0; i < all.n; i++) {
                        bool me = streq(all.v[i], value);
                        found |= me;
                        sbuf_addf(&b, "%s%s%s%s", i ? " " : "", me ? "[" : "", all.v[i], me ? "]" : "");
                }
                sbuf_add(&b, "\n");
                rc = found ? act_write_file(r, path, b.s, b.len, 0644, true) : -EINVAL; /* as the kernel: EINVAL */
                free(sbuf_steal(&b));
                return rc;
        }
        _cleanup_free_ char *text = xasprintf("%s\n", value);
        return act_write_file(r, path, text, strlen(text), 0644, true);
}

/* Values naming a program the kernel runs on its own: never a runtime value llmtune sets. */
static const char *const exec_values[] = {
        "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/kernel/poweroff_cmd",
        "/proc/sys/kernel/hotplug",      "/sys/kernel/uevent_helper", "/proc/sys/fs/binfmt_misc/",
};

static bool value_allowed(const char *t)
{
        if (!act_clean_path(t) || !(startswith(t, "/sys/") || startswith(t, "/proc/sys/")))
                return false;
        for (size_t i = 0; i < ARRAY_SIZE(exec_values); i++)
                if (startswith(t, exec_values[i]))
                        return false;
        return true;
}

static int value_check(const struct change *c, char **why)
{
        if (act_has_control(c->before) || act_has_control(c->after)) {
                *why = xasprintf("refused to change %s: the value holds a control character", c->target);
                return -EPERM;
        }
        return 0;
}

static int value_apply(struct root *r, const struct change *c, char **err)
{
        int rc = write_value(r, c->target, c->after);
        if (rc < 0)
                *err = value_errmsg(c, "cannot write", rc);
        return rc;
}

static int value_undo(struct root *r, const struct change *c, char **err)
{
        if (!c->before)
                return 0;
        int rc = write_value(r, c->target, c->before);
        if (rc < 0)
                *err = value_errmsg(c, "cannot restore", rc);
        return rc;
}

static int value_current(struct root *r, const struct change *c, char **ret)
{
        _cleanup_free_ char *line = NULL;
        root_forget(r, c->target); /* the state now, not what this run read before changing it */
        int rc = root_read_line(r, c->target, &line);
        if (rc < 0 && !root_gone(rc) && rc != -ENODATA)
                return rc; /* an empty value reads as absent, as before */
        /* The active entry of what was just read (the handle's cache: one read of the file). */
        *ret = rc == 0 ? root_read_active(r, c->target) : NULL;
        return 0;
}

/* Runtime values read back may carry a trailing newline or space the logged value lacks. */
static bool same_value(const struct change *c, const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        while (la && (a[la - 1] == '\n' || a[la - 1] == ' '))
                la--;
        while (lb && (b[lb - 1] == '\n' || b[lb - 1] == ' '))
                lb--;
        return la == lb && memcmp(a, b, la) == 0;
}

static void value_leftovers(struct root *r, const struct change *c)
{
        if (!root_is_live(r))
                act_remove_temp_of(r, c->target, true);
}

/* The directory as the write opens it: led out of /sys and /proc/sys by a link is refused; a
 * missing one is the write's to report. */
static int value_foresee(struct root *r, const struct change *c, bool target_planned, char **why)
{
        _cleanup_free_ char *base = NULL;
        _cleanup_close_ int dfd = act_open_dir(r, c->target, &base, true);
        if (dfd >= 0 || dfd == -ENOENT)
                return 0;
        *why = value_errmsg(c, "cannot write", dfd);
        return dfd;
}

const struct change_kind change_kind_value = {
        .name = "value",
        .grouped = true,
        .allowed = value_allowed,
        .area = "under /sys or /proc/sys (not a file naming a program the kernel runs)",
        .check = value_check,
        .foresee = value_foresee,
        .apply = value_apply,
        .undo = value_undo,
        .current = value_current,
        .equal = same_value,
        .leftovers = value_leftovers,
        .sections = {"Runtime values"},
};
