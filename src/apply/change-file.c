/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A file: created, replaced or removed (before/after are its contents, NULL = absent). Replaced
 * atomically (a temporary file in the same directory, fsync, the mode and owner of the replaced
 * file kept, rename, fsync of the directory), and only while it still holds what the plan read.
 * Only the files a remedy writes (file_target_allowed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/actions-internal.h"
#include "facts/readers/affinity.h"
#include "apply/change-kind.h"
#include "facts/readers/dropin-order.h"
#include "base/parse.h"
#include "base/site-config.h"
#include "base/test-hooks.h"

static int remove_file(struct root *r, const char *path, bool expect_set, const char *expect, int *read_err)
{
        int fault = test_fault(path); /* before the directory: an injected ENOENT is not "absent" */
        if (fault < 0)
                return fault;
        _cleanup_free_ char *base = NULL;
        _cleanup_close_ int dfd = act_open_dir(r, path, &base, false);
        if (dfd == -ENOENT)
                return expect_set && expect ? -ESTALE : 0;
        if (dfd < 0)
                return dfd;
        if (expect_set) {
                int holds = file_at_holds(dfd, base, expect);
                if (holds < 0 && read_err)
                        *read_err = -holds;
                if (holds <= 0)
                        return -ESTALE;
        }
        int rc = unlinkat(dfd, base, 0) < 0 && errno != ENOENT ? -errno : 0;
        if (rc == 0)
                fsync(dfd);
        root_forget(r, path);
        return rc;
}

static int apply_file(struct root *r, const struct change *c, const char *content, bool undo, int *read_err)
{
        if (!undo) {
                int rc = act_make_dirs(r, &c->mkdirs);
                if (rc < 0)
                        return rc;
        }
        /* Apply replaces only what the plan read (c->before); an undo puts back what was there. */
        int rc = content ? act_write_file_checked(r, c->target, content, strlen(content), c->mode ? c->mode : 0644,
                                                  false, !undo, c->before, read_err)
                         : remove_file(r, c->target, !undo, c->before, read_err);
        /* After an undo, or a failed write: the directories this change created go again. */
        if ((rc == 0 && undo) || (rc < 0 && !undo))
                act_remove_dirs(r, &c->mkdirs);
        return rc;
}

/* Directories where a file change may put a file named "*llmtune*": the drop-in directories a
 * remedy writes (sysctl.d, tmpfiles.d, modprobe.d, the rules' "dropin" paths). Not cron.d,
 * sudoers.d, profile.d or any other place whose files run something for someone. */
static const char *const dropin_dirs[] = {
        "/etc/sysctl.d/",           "/etc/tmpfiles.d/",        "/etc/modprobe.d/",
        "/etc/modules-load.d/",     "/etc/security/limits.d/", "/etc/systemd/system.conf.d/",
        "/etc/systemd/user.conf.d/", "/etc/udev/rules.d/",     "/etc/default/grub.d/",
        "/etc/dracut.conf.d/",      "/etc/initramfs-tools/conf.d/",
};

/* Files a remedy writes in place, and the unit files and configuration a link masks (a real file
 * in the way of such a link is removed first, and put back by rollback). */
static const char *const fixed_files[] = {
        "/etc/fstab", "/etc/nccl.conf", AFFINITY_CONF, "/etc/systemd/zram-generator.conf",
        "/etc/systemd/system/zramswap.service", "/etc/sysctl.conf", SITE_CONFIG_PATH,
};

#define WANTS_DIR "/etc/systemd/system/multi-user.target.wants/"

static bool file_target_allowed(const char *t)
{
        for (size_t i = 0; i < ARRAY_SIZE(fixed_files); i++)
                if (streq(t, fixed_files[i]))
                        return true;
        const char *base = strrchr(t, '/') + 1;
        /* a file in the way of the link service-enable makes */
        if (startswith(t, WANTS_DIR) && base == t + strlen(WANTS_DIR))
                return true;
        /* a file of a family llmtune models whose line would beat llmtune's at boot (its drop-in
         * directory in /etc, or its main file there): the line is commented out behind the marker
         * (never deleted), or a vendor file is shadowed by an /etc copy of the same name
         * (sysctl.d(5), tmpfiles.d(5), limits.conf(5), systemd-system.conf(5), modprobe.d(5)).
         * Not udev rules, which llmtune never writes. */
        const struct dropin_family *fam = dropin_family_of(t);
        if (fam && fam->parse && startswith(t, "/etc/"))
                return true;
        /* a zram-generator drop-in of /etc in the way of the /dev/null link that masks it */
        if (startswith(t, "/etc/systemd/zram-generator.conf.d/") &&
            base == t + strlen("/etc/systemd/zram-generator.conf.d/") && endswith(base, ".conf"))
                return true;
        /* the site profile of apply --param (profiles are data: they run nothing) */
        if (startswith(t, PROFILES_SITE_DIR "/") && base == t + strlen(PROFILES_SITE_DIR "/") && endswith(base, ".ini"))
                return true;
        if (!strstr(base, "llmtune"))
                return false;
        for (size_t i = 0; i < ARRAY_SIZE(dropin_dirs); i++)
                if (startswith(t, dropin_dirs[i]) && base == t + strlen(dropin_dirs[i]))
                        return true;
        /* a unit drop-in: /etc/systemd/system/UNIT.d/NAME.conf */
        if (startswith(t, "/etc/systemd/system/") && endswith(base, ".conf")) {
                const char *d = t + strlen("/etc/systemd/system/");
                const char *slash = strchr(d, '/');
                if (slash && slash + 1 == base && slash - d > 2 && strncmp(slash - 2, ".d", 2) == 0)
                        return true;
        }
        return false;
}

static bool file_allowed(const char *t) { return act_clean_path(t) && file_target_allowed(t); }

static int file_check(const struct change *c, char **why)
{
        if (act_check_mkdirs(c, why) < 0)
                return -EPERM;
        if (c->mode & 07022) {
                *why = xasprintf("refused to change %s: mode %04o is writable by others or set-id", c->target,
                                 (unsigned)(c->mode & 07777));
                return -EPERM;
        }
        return 0;
}

static int file_apply(struct root *r, const struct change *c, char **err)
{
        int read_err = 0;
        int rc = apply_file(r, c, c->after, false, &read_err);
        const char *what = c->after ? "cannot write" : "cannot remove";
        if (rc == -ESTALE && read_err)
                /* Not "another process wrote it": what it holds now is not known at all. */
                *err = xasprintf("%s %s: refused: it cannot be read now (%s), so whether it still holds what the "
                                 "plan read is not known; %s",
                                 what, c->target, errno_name(read_err), c->after ? "nothing replaced" : "nothing removed");
        else if (rc < 0)
                *err = act_errmsg(c, what, rc);
        return rc;
}

static int file_undo(struct root *r, const struct change *c, char **err)
{
        int rc = apply_file(r, c, c->before, true, NULL);
        if (rc < 0)
                *err = act_errmsg(c, "cannot restore", rc);
        return rc;
}

/* The *_current readers: 0 with *RET the state (NULL: absent, as root_gone says), or -errno when
 * something is there that cannot be read (a directory in a file's place, a link loop above it):
 * verify, rollback and recovery must not take that for "absent" (issue 14 item 2). */
static int file_current(struct root *r, const struct change *c, char **ret)
{
        struct stat st;
        int rc = root_stat(r, c->target, &st, false);
        if (rc < 0)
                return root_gone(rc) ? 0 : rc;
        if (S_ISLNK(st.st_mode)) {
                _cleanup_free_ char *t = NULL;
                root_readlink(r, c->target, &t);
                *ret = xasprintf("(a symbolic link to %s)", t ? t : "?");
                return 0;
        }
        return act_read_whole_rc(r, c->target, ret);
}

static char *file_describe(const char *s) { return xasprintf("%zu bytes", strlen(s)); }

static void file_leftovers(struct root *r, const struct change *c) { act_remove_temp_of(r, c->target, false); }

static int file_foresee(struct root *r, const struct change *c, bool target_planned, char **why)
{
        return act_foresee_path(r, c, target_planned, c->after != NULL, c->after ? "cannot write" : "cannot remove", why);
}

/* Shown in a table by its length and the start of its hash. */
static char *file_short_form(const struct change *c, const char *state, const char *sha)
{
        return state ? xasprintf("%zu bytes %.8s", strlen(state), sha ? sha : "") : xstrdup("(absent)");
}

const struct change_kind change_kind_file = {
        .name = "file",
        .content = true,
        .in_etc = true,
        .allowed = file_allowed,
        .area = "/etc/fstab, /etc/nccl.conf, " AFFINITY_CONF ", " SITE_CONFIG_PATH ", " PROFILES_SITE_DIR
                "/*.ini, a file of the drop-in families llmtune models (/etc/sysctl.conf, sysctl.d, tmpfiles.d, "
                "security/limits.conf, limits.d, systemd/system.conf, system.conf.d, modprobe.d, modules-load.d) "
                "or a file named *llmtune* in a drop-in directory (udev rules.d, ...)",
        .check = file_check,
        .foresee = file_foresee,
        .apply = file_apply,
        .undo = file_undo,
        .current = file_current,
        .describe = file_describe,
        .leftovers = file_leftovers,
        .short_form = file_short_form,
};
