/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "apply/actions.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "facts/readers/affinity.h"
#include "base/site-config.h"
#include "apply/command.h"
#include "facts/readers/dropin-order.h"
#include "facts/facts.h"
#include "base/fileattr.h"
#include "facts/readers/mounts.h"
#include "base/parse.h"
#include "facts/readers/swaps.h"
#include "base/test-hooks.h"

/* Split PATH into an open directory fd and its last component. The directory is reached without
 * following any symbolic link (root_open_nolinks) unless FOLLOW: a link planted in a parent of a
 * managed path must not redirect a write. Only runtime values in a fixture tree follow links, the
 * way the kernel's sysfs paths do. */
/* Where FD is, as the kernel names it (NULL if it cannot say). */
static char *fd_path(int fd)
{
        char link[64], buf[4096];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, buf, sizeof(buf) - 1);
        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        return xstrdup(buf);
}

/* Is the directory DFD, wherever links led, under /sys or /proc/sys of the root? Runtime values
 * follow links (sysfs is made of them) but must not be led anywhere else: a link planted in a tree
 * (policy0 -> /etc/cron.d) would turn a value write into a file in another area. */
static bool in_value_area(struct root *r, int dfd)
{
        int rfd = root_open(r, "/", O_PATH | O_DIRECTORY, 0);
        if (rfd < 0)
                return false;
        _cleanup_free_ char *top = fd_path(rfd), *dir = fd_path(dfd);
        close(rfd);
        if (!top || !dir)
                return false;
        size_t n = streq(top, "/") ? 0 : strlen(top);
        if (strncmp(dir, top, n) != 0)
                return false;
        const char *rel = dir + n;
        return streq(rel, "/sys") || startswith(rel, "/sys/") || streq(rel, "/proc/sys") || startswith(rel, "/proc/sys/");
}

static int open_dir_at(struct root *r, const char *path, char **ret_base, bool follow)
{
        _cleanup_free_ char *p = xstrdup(path);
        char *slash = strrchr(p, '/');
        if (!slash || !slash[1])
                return -EINVAL;
        *slash = '\0';
        int fd = follow ? root_open(r, *p ? p : "/", O_RDONLY | O_DIRECTORY, 0)
                        : root_open_nolinks(r, *p ? p : "/", O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd;
        if (follow && !in_value_area(r, fd)) {
                close(fd);
                return -EXDEV;
        }
        *ret_base = xstrdup(slash + 1);
        return fd;
}

static int open_dir_of(struct root *r, const char *path, char **ret_base)
{
        return open_dir_at(r, path, ret_base, false);
}

/* Test hook (src/base/test-hooks.h): make changing one target fail with a chosen errno. */
static int injected_failure(const char *path) { return test_fault(path); }

/* EXPECT_SET: the target must still hold EXPECT (NULL: be absent) when the rename comes, else
 * -ESTALE and nothing is replaced; *READ_ERR (may be NULL) is set when the target could not be
 * read then (the errno), which is not the same as another process having written it. */
static int write_file_checked(struct root *r, const char *path, const char *data, size_t len, mode_t mode_if_new,
                              bool follow_dirs, bool expect_set, const char *expect, int *read_err)
{
        int rc = injected_failure(path);
        if (rc < 0)
                return rc;
        _cleanup_free_ char *base = NULL;
        int dfd = open_dir_at(r, path, &base, follow_dirs);
        if (dfd < 0)
                return dfd;
        rc = replace_file_at(dfd, base, path, data, len, mode_if_new, expect_set, expect, read_err);
        close(dfd);
        root_forget(r, path);
        return rc;
}

static int write_file(struct root *r, const char *path, const char *data, size_t len, mode_t mode_if_new,
                      bool follow_dirs)
{
        return write_file_checked(r, path, data, len, mode_if_new, follow_dirs, false, NULL, NULL);
}

static int remove_file(struct root *r, const char *path, bool expect_set, const char *expect, int *read_err)
{
        int rc0 = injected_failure(path);
        if (rc0 < 0)
                return rc0;
        _cleanup_free_ char *base = NULL;
        int dfd = open_dir_of(r, path, &base);
        if (dfd < 0)
                return dfd == -ENOENT ? (expect_set && expect ? -ESTALE : 0) : dfd;
        if (expect_set) {
                int holds = file_at_holds(dfd, base, expect);
                if (holds < 0 && read_err)
                        *read_err = -holds;
                if (holds <= 0) {
                        close(dfd);
                        return -ESTALE;
                }
        }
        int rc = unlinkat(dfd, base, 0) < 0 && errno != ENOENT ? -errno : 0;
        if (rc == 0)
                fsync(dfd);
        close(dfd);
        root_forget(r, path);
        return rc;
}

static int make_dirs(struct root *r, const struct strv *dirs)
{
        for (size_t i = 0; i < dirs->n; i++) {
                _cleanup_free_ char *base = NULL;
                int dfd = open_dir_of(r, dirs->v[i], &base);
                if (dfd < 0)
                        return dfd;
                /* 0755 whatever the umask: under umask 077 the launchers that read
                 * /etc/llmtune/gpu-affinity.conf could not reach it. */
                int rc = mkdirat_exact(dfd, base, 0755);
                close(dfd);
                if (rc < 0)
                        return rc;
        }
        return 0;
}

/* Remove the directories a change created, innermost first, if they are empty again. */
static void remove_dirs(struct root *r, const struct strv *dirs)
{
        for (size_t i = dirs->n; i-- > 0;) {
                _cleanup_free_ char *base = NULL;
                int dfd = open_dir_of(r, dirs->v[i], &base);
                if (dfd < 0)
                        continue;
                unlinkat(dfd, base, AT_REMOVEDIR);
                close(dfd);
                root_forget(r, dirs->v[i]); /* and root.c's open directory, which may be this one */
        }
}

static int set_symlink(struct root *r, const char *path, const char *target)
{
        int rc = injected_failure(path);
        if (rc < 0)
                return rc;
        _cleanup_free_ char *base = NULL;
        int dfd = open_dir_of(r, path, &base);
        if (dfd < 0)
                return dfd;
        if (!target) {
                rc = unlinkat(dfd, base, 0) < 0 && errno != ENOENT ? -errno : 0;
        } else {
                struct stat st;
                if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode)) {
                        close(dfd);
                        return -EEXIST; /* the plan removes a file in the way first */
                }
                _cleanup_free_ char *tmp = xasprintf(".%s.llmtune-%d", base, (int)getpid());
                unlinkat(dfd, tmp, 0);
                if (symlinkat(target, dfd, tmp) < 0 || renameat(dfd, tmp, dfd, base) < 0) {
                        rc = -errno;
                        unlinkat(dfd, tmp, 0);
                }
        }
        if (rc == 0)
                fsync(dfd);
        close(dfd);
        root_forget(r, path); /* a directory root.c keeps open may have been reached through it */
        return rc;
}

static int apply_file(struct root *r, const struct change *c, const char *content, bool undo, int *read_err)
{
        if (!undo) {
                int rc = make_dirs(r, &c->mkdirs);
                if (rc < 0)
                        return rc;
        }
        /* Apply replaces only what the plan read (c->before); an undo puts back what was there. */
        int rc = content ? write_file_checked(r, c->target, content, strlen(content), c->mode ? c->mode : 0644, false,
                                              !undo, c->before, read_err)
                         : remove_file(r, c->target, !undo, c->before, read_err);
        /* After an undo, or a failed write: the directories this change created go again. */
        if ((rc == 0 && undo) || (rc < 0 && !undo))
                remove_dirs(r, &c->mkdirs);
        return rc;
}

/* A runtime value. Live: the kernel's file. A fixture tree: a plain file, which we make read the
 * way the kernel would print it (a bracketed choice list keeps its choices, the new one marked). */
static int write_value(struct root *r, const char *path, const char *value)
{
        int rc = injected_failure(path);
        if (rc < 0)
                return rc;
        if (root_is_live(r)) {
                _cleanup_free_ char *base = NULL;
                int dfd = open_dir_at(r, path, &base, true);
                if (dfd < 0)
                        return dfd;
                int fd = openat(dfd, base, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
                fd = fd < 0 ? -errno : fd;
                close(dfd);
                if (fd < 0)
                        return fd;
                rc = write_all(fd, value, strlen(value));
                if (close(fd) < 0 && rc == 0)
                        rc = -errno;
                root_forget(r, path);
                return rc;
        }
        _cleanup_free_ char *line = NULL;
        root_forget(r, path);
        if (root_read_line(r, path, &line) == 0 && strchr(line, '[')) {
                char *active = NULL;
                struct strv all = {0};
                if (parse_bracketed(line, &active, &all) < 0)
                        return -EBADMSG;
                free(active);
                struct sbuf b = {0};
                bool found = false;
                for (size_t i = 0; i < all.n; i++) {
                        bool me = streq(all.v[i], value);
                        found |= me;
                        sbuf_addf(&b, "%s%s%s%s", i ? " " : "", me ? "[" : "", all.v[i], me ? "]" : "");
                }
                strv_done(&all);
                sbuf_add(&b, "\n");
                rc = found ? write_file(r, path, b.s, b.len, 0644, true) : -EINVAL; /* as the kernel: EINVAL */
                free(sbuf_steal(&b));
                return rc;
        }
        _cleanup_free_ char *text = xasprintf("%s\n", value);
        return write_file(r, path, text, strlen(text), 0644, true);
}

/* --- /proc/swaps and /proc/mounts of a fixture tree --------------------------------------------- */

static char *read_whole(struct root *r, const char *path)
{
        root_forget(r, path);
        const char *data;
        size_t len;
        return root_read(r, path, &data, &len) == 0 ? xstrndup(data, len) : NULL;
}

/* The same, and -errno when PATH is there but cannot be read (*RET NULL: absent). */
static int read_whole_rc(struct root *r, const char *path, char **ret)
{
        root_forget(r, path);
        const char *data;
        size_t len;
        int rc = root_read(r, path, &data, &len);
        *ret = rc == 0 ? xstrndup(data, len) : NULL;
        return rc == 0 || root_gone(rc) ? 0 : rc;
}

static bool swap_listed(const char *swaps, const char *dev)
{
        struct swap_area *areas = NULL;
        size_t n = 0;
        bool found = false;
        if (swaps && swaps_parse(swaps, strlen(swaps), &areas, &n) == 0)
                for (size_t i = 0; i < n && !found; i++)
                        found = streq(areas[i].path, dev);
        swaps_free(areas, n);
        return found;
}

static int tree_swap(struct root *r, const struct change *c, bool on)
{
        _cleanup_free_ char *cur = read_whole(r, "/proc/swaps");
        if (!cur)
                return -ENOENT;
        _cleanup_free_ char *text = swaps_rewrite(cur, c->target, on ? c->aux : NULL);
        return root_write_file(r, "/proc/swaps", text, strlen(text), 0444);
}

/* Options of the (last) mount at MP in ROOT/proc/mounts. */
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
        _cleanup_free_ char *cur = read_whole(r, "/proc/mounts");
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

/* --- commands ---------------------------------------------------------------------------------- */

/* KEEP_FD (or -1) stays open in the child: the image a command is handed as /proc/self/fd/N. */
static int run_argv(char *const *argv, int keep_fd, char **err)
{
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int devnull = open("/dev/null", O_RDONLY);
                if (devnull >= 0)
                        dup2(devnull, STDIN_FILENO);
                dup2(STDERR_FILENO, STDOUT_FILENO); /* our stdout may be JSON */
                if (keep_fd >= 0)
                        fcntl(keep_fd, F_SETFD, 0);
                execvp(argv[0], argv);
                _exit(127);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        *err = WIFEXITED(status) ? xasprintf("%s exited with status %d%s", argv[0], WEXITSTATUS(status),
                                             WEXITSTATUS(status) == 127 ? " (not found?)" : "")
                                 : xasprintf("%s killed by signal %d", argv[0], WTERMSIG(status));
        return -EIO;
}

/*
 * Run one of llmtune's commands (command.h): ARGV is parsed into typed fields and the argv that
 * runs is built from them, never taken as it stands (it may come from the change log). Under a
 * foreign root only tune2fs on an image inside the tree runs, handed the image as /proc/self/fd/N
 * of a file opened through the root handle; anything else would act on this machine and is
 * skipped. 1 = skipped.
 */
static int run_command(struct root *r, const struct strv *argv, char **err)
{
        if (argv->n == 0)
                return 1;
        struct cmd c;
        int rc = cmd_parse(argv, &c, err);
        if (rc < 0)
                return -EPERM;
        int fault = injected_failure(argv->v[0]);
        if (fault < 0) {
                *err = xasprintf("%s: %s (an injected fault: test build)", argv->v[0], strerror(-fault));
                cmd_done(&c);
                return fault;
        }
        int fd = -1;
        _cleanup_free_ char *devarg = NULL;
        rc = 0;
        if (!root_is_live(r)) {
                if (c.tool != CMD_TUNE2FS)
                        rc = 1;
                else if ((fd = cmd_open_image(r, c.device, err)) < 0)
                        rc = fd;
                else
                        devarg = xasprintf("/proc/self/fd/%d", fd);
        } else if (c.tool == CMD_TUNE2FS) {
                struct stat st;
                if (stat(c.device, &st) < 0 || !S_ISBLK(st.st_mode)) {
                        *err = xasprintf("tune2fs: %s is not a block device", c.device);
                        rc = -EPERM;
                }
        }
        if (rc == 0) {
                struct strv v = {0};
                cmd_argv(&c, devarg, &v);
                rc = run_argv(v.v, fd, err);
                strv_done(&v);
        }
        if (fd >= 0)
                close(fd);
        cmd_done(&c);
        return rc;
}

/* --- leftovers of an interrupted run ----------------------------------------------------------- */

/* Remove ".BASE.llmtune-PID" entries (write_file's and set_symlink's temporary names) beside PATH. */
static void remove_temp_of(struct root *r, const char *path, bool follow)
{
        _cleanup_free_ char *base = NULL;
        int dfd = open_dir_at(r, path, &base, follow);
        if (dfd < 0)
                return;
        _cleanup_free_ char *prefix = xasprintf(".%s.llmtune-", base);
        dir_remove_matching(dfd, name_is_prefix_pid, prefix);
        close(dfd);
}

void action_remove_created_dirs(struct root *r, const struct change *c)
{
        if (c->type == CHANGE_FILE || c->type == CHANGE_SYMLINK)
                remove_dirs(r, &c->mkdirs);
}

static char *errmsg(const struct change *c, const char *what, int rc);

/* Remount C's mount point with OPTIONS: mount(8) on the live system, /proc/mounts in a tree. */
static int remount(struct root *r, const struct change *c, const char *options, char **err)
{
        int rc;
        if (root_is_live(r)) {
                _cleanup_free_ char *o = xasprintf("remount,%s", options);
                struct strv argv = {0};
                strv_add(&argv, "mount");
                strv_add(&argv, "-o");
                strv_add(&argv, o);
                strv_add(&argv, c->target);
                rc = run_argv(argv.v, -1, err);
                strv_done(&argv);
                return rc;
        }
        rc = tree_remount(r, c->target, options);
        if (rc < 0)
                *err = errmsg(c, "cannot remount", rc);
        return rc;
}

static char *errmsg(const struct change *c, const char *what, int rc)
{
        if (rc == -EXDEV && c->type == CHANGE_VALUE)
                return xasprintf("%s %s: refused: a link on the way leads out of /sys and /proc/sys", what, c->target);
        if (rc == -ENOTREG)
                return xasprintf("%s %s: refused: not a regular file (a FIFO, socket or device is at that path)",
                                 what, c->target);
        if (rc == -ESTALE)
                return xasprintf("%s %s: refused: it changed since the plan read it (another process wrote it); "
                                 "its new content is kept, run apply again to plan from it",
                                 what, c->target);
        if (rc == -ELOOP)
                return xasprintf("%s %s: refused: a symbolic link is at that path or in a directory above it "
                                 "(it could point anywhere; replace it with a real file or directory)",
                                 what, c->target);
        return xasprintf("%s %s: %s", what, c->target, strerror(-rc));
}

/*
 * Where each kind of change may write (the confinement apply promises, whatever a rule or profile
 * says): files and links only under /etc, runtime values only under /sys and /proc/sys; an
 * absolute path without "." or ".." components or empty ones. Swap devices, mount points and
 * commands name no file llmtune writes on the live system (under --root, the tree's /proc/swaps
 * and /proc/mounts stand in for the kernel's tables).
 */
static bool clean_path(const char *p)
{
        if (!p || p[0] != '/' || strlen(p) >= 4096)
                return false;
        for (const char *s = p + 1;;) {
                const char *e = strchrnul(s, '/');
                size_t n = (size_t)(e - s);
                if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
                        return false;
                if (!*e)
                        return true;
                s = e + 1;
        }
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

/* Link targets llmtune writes: /dev/null (masking) or a unit file (enabling). */
static bool link_value_allowed(const char *v)
{
        return !v || streq(v, "/dev/null") ||
               (clean_path(v) && (startswith(v, "/etc/systemd/system/") || startswith(v, "/usr/lib/systemd/system/") ||
                                  startswith(v, "/lib/systemd/system/")));
}

/* Values naming a program the kernel runs on its own: never a runtime value llmtune sets. */
static const char *const exec_values[] = {
        "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/kernel/poweroff_cmd",
        "/proc/sys/kernel/hotplug",      "/sys/kernel/uevent_helper", "/proc/sys/fs/binfmt_misc/",
};

/* Tabs separate the fields of kernel tables and multi-number sysctls ("4096\t131072\t6291456"). */
static bool has_control(const char *s)
{
        for (; s && *s; s++)
                if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
                        return true;
        return false;
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

/* ---- one set of operations per kind of change ---- */

/* Directories created for a file or link are its own parents under /etc. */
static int check_mkdirs(const struct change *c, char **why)
{
        for (size_t i = 0; i < c->mkdirs.n; i++) {
                const char *d = c->mkdirs.v[i];
                size_t n = strlen(d);
                if (!clean_path(d) || !startswith(d, "/etc/") || strncmp(c->target, d, n) != 0 || c->target[n] != '/') {
                        *why = xasprintf("refused to change %s: directory %s is not a parent of it", c->target, d);
                        return -EPERM;
                }
        }
        return 0;
}

static bool file_allowed(const char *t) { return clean_path(t) && file_target_allowed(t); }

static int file_check(const struct change *c, char **why)
{
        if (check_mkdirs(c, why) < 0)
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
                *err = errmsg(c, what, rc);
        return rc;
}

static int file_undo(struct root *r, const struct change *c, char **err)
{
        int rc = apply_file(r, c, c->before, true, NULL);
        if (rc < 0)
                *err = errmsg(c, "cannot restore", rc);
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
        return read_whole_rc(r, c->target, ret);
}

static char *file_describe(const char *s) { return xasprintf("%zu bytes", strlen(s)); }

static void file_leftovers(struct root *r, const struct change *c) { remove_temp_of(r, c->target, false); }

static bool link_allowed(const char *t) { return clean_path(t) && startswith(t, "/etc/systemd/"); }

static int link_check(const struct change *c, char **why)
{
        if (check_mkdirs(c, why) < 0)
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
        int rc = make_dirs(r, &c->mkdirs);
        if (rc == 0)
                rc = set_symlink(r, c->target, c->after);
        if (rc < 0)
                *err = errmsg(c, "cannot link", rc);
        return rc;
}

static int link_undo(struct root *r, const struct change *c, char **err)
{
        int rc = set_symlink(r, c->target, c->before);
        if (rc == 0)
                remove_dirs(r, &c->mkdirs);
        if (rc < 0)
                *err = errmsg(c, "cannot restore link", rc);
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

static bool value_allowed(const char *t)
{
        if (!clean_path(t) || !(startswith(t, "/sys/") || startswith(t, "/proc/sys/")))
                return false;
        for (size_t i = 0; i < ARRAY_SIZE(exec_values); i++)
                if (startswith(t, exec_values[i]))
                        return false;
        return true;
}

static int value_check(const struct change *c, char **why)
{
        if (has_control(c->before) || has_control(c->after)) {
                *why = xasprintf("refused to change %s: the value holds a control character", c->target);
                return -EPERM;
        }
        return 0;
}

static int value_apply(struct root *r, const struct change *c, char **err)
{
        int rc = write_value(r, c->target, c->after);
        if (rc < 0)
                *err = errmsg(c, "cannot write", rc);
        return rc;
}

static int value_undo(struct root *r, const struct change *c, char **err)
{
        if (!c->before)
                return 0;
        int rc = write_value(r, c->target, c->before);
        if (rc < 0)
                *err = errmsg(c, "cannot restore", rc);
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
                remove_temp_of(r, c->target, true);
}

static int swap_check(const struct change *c, char **why)
{
        if (has_control(c->aux)) {
                *why = xasprintf("refused to change %s: the swap line holds a control character", c->target);
                return -EPERM;
        }
        return 0;
}

static int swap_apply(struct root *r, const struct change *c, char **err)
{
        int rc = injected_failure(c->target);
        if (rc == 0)
                rc = root_is_live(r) ? (swapoff(c->target) < 0 ? -errno : 0) : tree_swap(r, c, false);
        if (rc < 0)
                *err = errmsg(c, "cannot swapoff", rc);
        return rc;
}

static int swap_undo(struct root *r, const struct change *c, char **err)
{
        int rc = injected_failure(c->target);
        if (rc == 0 && root_is_live(r)) {
                int prio = 0, flags = 0;
                char dev[4096], type[64];
                unsigned long long size, used;
                if (c->aux && sscanf(c->aux, "%4095s %63s %llu %llu %d", dev, type, &size, &used, &prio) == 5 && prio >= 0)
                        flags = SWAP_FLAG_PREFER | (prio & SWAP_FLAG_PRIO_MASK);
                rc = swapon(c->target, flags) < 0 ? -errno : 0;
        } else if (rc == 0)
                rc = tree_swap(r, c, true);
        if (rc < 0)
                *err = errmsg(c, "cannot swapon", rc);
        return rc;
}

/* swapon(2) fails with ENOENT where the area's device or file is not there, and EINVAL where it
 * holds no swap signature: a zram device the generator sets up at boot, after a boot with the
 * generator masked, is either. */
static bool swap_not_set_up(int rc) { return rc == -ENOENT || rc == -EINVAL; }

static int swap_current(struct root *r, const struct change *c, char **ret)
{
        _cleanup_free_ char *swaps = NULL;
        int rc = read_whole_rc(r, "/proc/swaps", &swaps);
        if (rc < 0)
                return rc; /* not "off": the table of active swap cannot be read */
        *ret = xstrdup(swap_listed(swaps, c->target) ? "on" : "off");
        return 0;
}

static void swap_leftovers(struct root *r, const struct change *c)
{
        if (!root_is_live(r))
                remove_temp_of(r, "/proc/swaps", false);
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
        int rc = injected_failure(c->target);
        if (rc < 0) {
                *err = errmsg(c, "cannot remount", rc);
                return rc;
        }
        return remount(r, c, c->after, err);
}

static int mount_undo(struct root *r, const struct change *c, char **err) { return remount(r, c, c->before, err); }

/* The options as a remount sets them: without the stripe=, which a remount leaves as it is (see
 * plan_mount_option). */
static int mount_current(struct root *r, const struct change *c, char **ret)
{
        _cleanup_free_ char *all = NULL;
        int rc = mount_options_of(r, c->target, &all);
        if (rc < 0)
                return rc; /* the mount table cannot be read: not "not mounted" */
        *ret = all ? mount_options_without(all, "stripe") : NULL;
        return 0;
}

/* Option lists compare as sets: the kernel prints remount options in its own order. */
static bool same_options(const char *a, const char *b)
{
        _cleanup_free_ char *x = xstrdup(a), *y = xstrdup(b);
        struct strv sa = {0}, sb = {0};
        char *save = NULL;
        for (char *t = strtok_r(x, ",", &save); t; t = strtok_r(NULL, ",", &save))
                strv_add(&sa, t);
        for (char *t = strtok_r(y, ",", &save); t; t = strtok_r(NULL, ",", &save))
                strv_add(&sb, t);
        strv_sort(&sa);
        strv_sort(&sb);
        bool eq = sa.n == sb.n;
        for (size_t i = 0; eq && i < sa.n; i++)
                eq = streq(sa.v[i], sb.v[i]);
        strv_done(&sa);
        strv_done(&sb);
        return eq;
}

static bool has_option(const struct strv *l, const char *opt) { return strv_contains(l, opt); }

static void split_options(const char *list, struct strv *out)
{
        _cleanup_free_ char *x = xstrdup(list);
        char *save = NULL;
        for (char *t = strtok_r(x, ",", &save); t; t = strtok_r(NULL, ",", &save))
                strv_add(out, t);
}

/* Is the mount in state WANT (the change's before or after) as far as this change goes: the
 * options it added are there and those it removed are not (for "before", the reverse)? Options it
 * did not touch are not its business: in a service's mount namespace (ProtectSystem=) every mount
 * shows ro,nosuid, and llmtune-verify.service reported noatime as drift on every machine (found by
 * the boot lab, tests/bootlab). */
static bool mount_state_equal(const struct change *c, const char *current, const char *want)
{
        const char *other = c->after && streq(want, c->after) ? c->before : c->after;
        if (!other || streq(other, want))
                return same_options(current, want);
        struct strv cur = {0}, w = {0}, o = {0};
        split_options(current, &cur);
        split_options(want, &w);
        split_options(other, &o);
        bool eq = true;
        for (size_t i = 0; eq && i < w.n; i++)
                eq = has_option(&o, w.v[i]) || has_option(&cur, w.v[i]);
        for (size_t i = 0; eq && i < o.n; i++)
                eq = has_option(&w, o.v[i]) || !has_option(&cur, o.v[i]);
        strv_done(&cur);
        strv_done(&w);
        strv_done(&o);
        return eq;
}

static void mount_leftovers(struct root *r, const struct change *c)
{
        if (!root_is_live(r))
                remove_temp_of(r, "/proc/mounts", false);
}

static bool any_target(const char *t) { return true; }

static int command_check(const struct change *c, char **why)
{
        return cmd_check_undo(&c->argv, &c->undo, why) < 0 ? -EPERM : 0;
}

/* 1: skipped under a foreign root */
static int command_apply(struct root *r, const struct change *c, char **err) { return run_command(r, &c->argv, err); }

static int command_undo(struct root *r, const struct change *c, char **err)
{
        /* action_check: the undo is the inverse llmtune plans for the command */
        if (c->undo.n == 0)
                return 1; /* nothing llmtune can run to reverse it */
        return run_command(r, &c->undo, err);
}

static int nothing(struct root *r, const struct change *c, char **err) { return 0; }

/*
 * What each kind of change is: where it may write (ALLOWED, AREA for the refusal), what else its
 * record must satisfy (CHECK), how it is made and reversed, how its target's state is read
 * (CURRENT; NULL: it cannot be, commands and notes) and compared (EQUAL; NULL: as strings), how a
 * state is shown in a message (DESCRIBE; NULL: as it is), and what an interrupted change of it
 * leaves (LEFTOVERS). apply, rollback, recovery and verify all go through this table.
 */
struct change_ops {
        bool (*allowed)(const char *target);
        const char *area;
        int (*check)(const struct change *c, char **why);
        int (*apply)(struct root *r, const struct change *c, char **err);
        int (*undo)(struct root *r, const struct change *c, char **err);
        int (*current)(struct root *r, const struct change *c, char **ret);
        bool (*equal)(const struct change *c, const char *current, const char *want);
        char *(*describe)(const char *state);
        void (*leftovers)(struct root *r, const struct change *c);
        /* A runtime state that a boot sets up from a source of its own (a swap area): is RC, the
         * undo's failure, the area not being set up in this boot? NULL: no such state. */
        bool (*not_set_up)(int rc);
};

static const struct change_ops change_ops[] = {
        [CHANGE_FILE] = {file_allowed,
                         "/etc/fstab, /etc/nccl.conf, " AFFINITY_CONF ", " SITE_CONFIG_PATH ", " PROFILES_SITE_DIR
                         "/*.ini, a file of the drop-in families llmtune models (/etc/sysctl.conf, sysctl.d, "
                         "tmpfiles.d, security/limits.conf, limits.d, systemd/system.conf, system.conf.d, "
                         "modprobe.d, modules-load.d) or a file named *llmtune* in a drop-in directory (udev "
                         "rules.d, ...)",
                         file_check, file_apply, file_undo, file_current, NULL, file_describe, file_leftovers},
        [CHANGE_SYMLINK] = {link_allowed, "under /etc/systemd", link_check, link_apply, link_undo, link_current, NULL,
                            NULL, file_leftovers},
        [CHANGE_VALUE] = {value_allowed, "under /sys or /proc/sys (not a file naming a program the kernel runs)",
                          value_check, value_apply, value_undo, value_current, same_value, NULL, value_leftovers},
        [CHANGE_SWAP] = {clean_path, "a clean absolute path", swap_check, swap_apply, swap_undo, swap_current, NULL, NULL,
                         swap_leftovers, swap_not_set_up},
        [CHANGE_MOUNTOPT] = {clean_path, "a clean absolute path", mount_check, mount_apply, mount_undo, mount_current,
                             mount_state_equal, NULL, mount_leftovers},
        [CHANGE_COMMAND] = {any_target, "anything", command_check, command_apply, command_undo, NULL, NULL, NULL, NULL},
        [CHANGE_NOTE] = {any_target, "anything", NULL, nothing, nothing, NULL, NULL, NULL, NULL},
};

static const struct change_ops *ops_of(const struct change *c)
{
        return (unsigned)c->type < ARRAY_SIZE(change_ops) ? &change_ops[c->type] : NULL;
}

bool action_target_allowed(const struct change *c)
{
        const struct change_ops *o = ops_of(c);
        return o && o->allowed(c->target);
}

int action_check(const struct change *c, char **why)
{
        *why = NULL;
        const struct change_ops *o = ops_of(c);
        if (!o)
                return -EINVAL;
        if (!o->allowed(c->target)) {
                *why = xasprintf("refused to change %s: a %s change may only write %s", c->target ? c->target : "(none)",
                                 change_type_name(c->type), o->area);
                return -EPERM;
        }
        return o->check ? o->check(c, why) : 0;
}

int action_blocked(struct root *r, const struct change *c, char **why)
{
        *why = NULL;
        if (c->type != CHANGE_FILE && c->type != CHANGE_SYMLINK)
                return 0;
        /* The target and the directory it is written in; when directories are to be made, the
         * existing one the first of them goes in. */
        const char *path = c->mkdirs.n ? c->mkdirs.v[0] : c->target;
        _cleanup_free_ char *base = NULL;
        int dfd = open_dir_of(r, path, &base);
        if (dfd < 0)
                return 0; /* making the change says why it cannot be */
        unsigned file = 0, dir = 0;
        if (!c->mkdirs.n)
                (void)fileattr_get_at(dfd, base, &file);
        (void)fileattr_get(dfd, &dir);
        close(dfd);
        const char *what = fileattr_blocks(file);
        if (what)
                *why = xasprintf("%s is %s: llmtune does not lift that flag, and changes nothing in this run; "
                                 "remove it (chattr -%c) if the change is wanted", c->target, what, what[strlen(what) - 2]);
        else if ((what = fileattr_blocks(dir)))
                *why = xasprintf("the directory %s is written in is %s: llmtune does not lift that flag, and "
                                 "changes nothing in this run; remove it (chattr -%c) if the change is wanted",
                                 c->target, what, what[strlen(what) - 2]);
        return *why ? -EPERM : 0;
}

/* The deepest directory on the way to PATH that exists, opened as a write opens it (no link on the
 * way): -ELOOP, -ENOTDIR and the like are what the write would meet. *IS_PARENT: it is PATH's own. */
static int deepest_dir_nolinks(struct root *r, const char *path, bool *is_parent)
{
        _cleanup_free_ char *dir = xstrdup(path);
        *is_parent = true;
        for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/'), *is_parent = false) {
                *slash = '\0';
                int fd = root_open_nolinks(r, *dir ? dir : "/", O_RDONLY | O_DIRECTORY, 0);
                if (fd != -ENOENT)
                        return fd;
        }
        return -ENOENT;
}

/* What writing file or link C would meet on its way: a link above it (-ELOOP), a non-directory
 * (-ENOTDIR), and for a file written, a link (-ELOOP) or no regular file (-ENOTREG, -EISDIR) at
 * its place, as replace_file_at refuses them. */
static int path_foresee(struct root *r, const struct change *c)
{
        bool is_parent;
        int dfd = deepest_dir_nolinks(r, c->target, &is_parent);
        if (dfd < 0)
                return dfd == -ENOENT ? 0 : dfd;
        int rc = 0;
        struct stat st;
        if (c->type == CHANGE_FILE && c->after && is_parent &&
            fstatat(dfd, strrchr(c->target, '/') + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
                rc = S_ISLNK(st.st_mode) ? -ELOOP : S_ISDIR(st.st_mode) ? -EISDIR : -ENOTREG;
        close(dfd);
        return rc;
}

int action_foresee(struct root *r, const struct change *c, bool target_planned, char **why)
{
        int rc = action_check(c, why);
        if (rc < 0)
                return rc;
        const char *what = c->type == CHANGE_SYMLINK ? "cannot link" : c->type == CHANGE_FILE && !c->after ? "cannot remove" : "cannot write";
        if (c->type == CHANGE_VALUE) {
                _cleanup_free_ char *base = NULL;
                int dfd = open_dir_at(r, c->target, &base, true); /* as write_value opens it */
                rc = dfd == -ENOENT ? 0 : dfd; /* ENOENT: the write says so, no refusal */
                if (dfd >= 0)
                        close(dfd);
        } else if ((c->type == CHANGE_FILE || c->type == CHANGE_SYMLINK) && !target_planned) {
                rc = path_foresee(r, c);
        }
        if (rc < 0)
                *why = errmsg(c, what, rc);
        return rc < 0 ? rc : 0;
}

int action_apply(struct root *r, const struct change *c, char **err)
{
        int rc = action_check(c, err);
        return rc < 0 ? rc : ops_of(c)->apply(r, c, err);
}

bool action_undo_waits_for_boot(const struct change *c, int rc)
{
        const struct change_ops *o = ops_of(c);
        return o && o->not_set_up && o->not_set_up(rc);
}

int action_undo(struct root *r, const struct change *c, char **err)
{
        int rc = action_check(c, err);
        return rc < 0 ? rc : ops_of(c)->undo(r, c, err);
}

int action_current(struct root *r, const struct change *c, char **ret)
{
        *ret = NULL;
        const struct change_ops *o = ops_of(c);
        if (!o)
                return -EINVAL;
        return o->current ? o->current(r, c, ret) : -EOPNOTSUPP;
}

/* "Is the target in this state": the one comparison apply, verify, rollback and recovery use. */
bool action_state_equal(const struct change *c, const char *current, const char *want)
{
        if (!current || !want)
                return !current && !want;
        const struct change_ops *o = ops_of(c);
        return o && o->equal ? o->equal(c, current, want) : streq(current, want);
}

char *action_describe(const struct change *c, const char *state)
{
        if (!state)
                return xstrdup("(absent)");
        const struct change_ops *o = ops_of(c);
        return o && o->describe ? o->describe(state) : xstrdup(state);
}

void action_remove_leftovers(struct root *r, const struct change *c)
{
        const struct change_ops *o = ops_of(c);
        if (c->target && o && o->leftovers)
                o->leftovers(r, c);
}
