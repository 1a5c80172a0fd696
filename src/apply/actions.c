/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Carrying out, undoing, reading and comparing a change, whatever its kind: each action_* asks the
 * change's kind (change-kind.h; the kinds are src/apply/change-*.c). Below the dispatch, the
 * pieces the kinds share (actions-internal.h): reaching a directory without links, replacing a
 * file atomically, making and removing the directories a change creates, running a program.
 */
#include "apply/actions.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apply/actions-internal.h"
#include "apply/change-kind.h"
#include "base/fileattr.h"
#include "base/test-hooks.h"

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
        _cleanup_close_ int rfd = root_open(r, "/", O_PATH | O_DIRECTORY, 0);
        if (rfd < 0)
                return false;
        _cleanup_free_ char *top = fd_path(rfd), *dir = fd_path(dfd);
        if (!top || !dir)
                return false;
        size_t n = streq(top, "/") ? 0 : strlen(top);
        if (strncmp(dir, top, n) != 0)
                return false;
        const char *rel = dir + n;
        return streq(rel, "/sys") || startswith(rel, "/sys/") || streq(rel, "/proc/sys") || startswith(rel, "/proc/sys/");
}

/* A link planted in a parent of a managed path must not redirect a write: the directory is reached
 * without following one (root_open_nolinks) unless FOLLOW. Only runtime values follow links, the
 * way the kernel's sysfs paths do. */
int act_open_dir(struct root *r, const char *path, char **ret_base, bool follow)
{
        _cleanup_free_ char *p = xstrdup(path);
        char *slash = strrchr(p, '/');
        if (!slash || !slash[1])
                return -EINVAL;
        *slash = '\0';
        _cleanup_close_ int fd = follow ? root_open(r, *p ? p : "/", O_RDONLY | O_DIRECTORY, 0)
                                        : root_open_nolinks(r, *p ? p : "/", O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd;
        if (follow && !in_value_area(r, fd))
                return -EXDEV;
        *ret_base = xstrdup(slash + 1);
        return TAKE_FD(fd);
}

int act_open_target_dir(struct root *r, const char *path, char **ret_base, bool follow)
{
        int rc = test_fault(path);
        return rc < 0 ? rc : act_open_dir(r, path, ret_base, follow);
}

/* EXPECT_SET: the target must still hold EXPECT (NULL: be absent) when the rename comes, else
 * -ESTALE and nothing is replaced; *READ_ERR (may be NULL) is set when the target could not be
 * read then (the errno), which is not the same as another process having written it. */
int act_write_file_checked(struct root *r, const char *path, const char *data, size_t len, mode_t mode_if_new,
                           bool follow_dirs, bool expect_set, const char *expect, int *read_err)
{
        _cleanup_free_ char *base = NULL;
        _cleanup_close_ int dfd = act_open_target_dir(r, path, &base, follow_dirs);
        if (dfd < 0)
                return dfd;
        int rc = replace_file_at(dfd, base, path, data, len, mode_if_new, expect_set, expect, read_err);
        root_forget(r, path);
        return rc;
}

int act_write_file(struct root *r, const char *path, const char *data, size_t len, mode_t mode_if_new,
                   bool follow_dirs)
{
        return act_write_file_checked(r, path, data, len, mode_if_new, follow_dirs, false, NULL, NULL);
}

int act_make_dirs(struct root *r, const struct strv *dirs)
{
        for (size_t i = 0; i < dirs->n; i++) {
                _cleanup_free_ char *base = NULL;
                _cleanup_close_ int dfd = act_open_dir(r, dirs->v[i], &base, false);
                if (dfd < 0)
                        return dfd;
                /* 0755 whatever the umask: under umask 077 the launchers that read
                 * /etc/llmtune/gpu-affinity.conf could not reach it. */
                int rc = mkdirat_exact(dfd, base, 0755);
                if (rc < 0)
                        return rc;
        }
        return 0;
}

/* Remove the directories a change created, innermost first, if they are empty again. */
void act_remove_dirs(struct root *r, const struct strv *dirs)
{
        for (size_t i = dirs->n; i-- > 0;) {
                _cleanup_free_ char *base = NULL;
                _cleanup_close_ int dfd = act_open_dir(r, dirs->v[i], &base, false);
                if (dfd < 0)
                        continue;
                unlinkat(dfd, base, AT_REMOVEDIR);
                root_forget(r, dirs->v[i]); /* and root.c's open directory, which may be this one */
        }
}

int act_read_whole_rc(struct root *r, const char *path, char **ret)
{
        root_forget(r, path);
        const char *data;
        size_t len;
        int rc = root_read(r, path, &data, &len);
        *ret = rc == 0 ? xstrndup(data, len) : NULL;
        return rc == 0 || root_gone(rc) ? 0 : rc;
}

char *act_read_whole(struct root *r, const char *path)
{
        char *s;
        (void)act_read_whole_rc(r, path, &s); /* unreadable is NULL too */
        return s;
}

/* KEEP_FD (or -1) stays open in the child: the image a command is handed as /proc/self/fd/N. */
int act_run_argv(char *const *argv, int keep_fd, char **err)
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

/* Remove ".BASE.llmtune-PID" entries (write_file's and set_symlink's temporary names) beside PATH. */
void act_remove_temp_of(struct root *r, const char *path, bool follow)
{
        _cleanup_free_ char *base = NULL;
        _cleanup_close_ int dfd = act_open_dir(r, path, &base, follow);
        if (dfd < 0)
                return;
        _cleanup_free_ char *prefix = xasprintf(".%s.llmtune-", base);
        dir_remove_matching(dfd, name_is_prefix_pid, prefix);
}

char *act_errmsg(const struct change *c, const char *what, int rc)
{
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
bool act_clean_path(const char *p)
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

/* Tabs separate the fields of kernel tables and multi-number sysctls ("4096\t131072\t6291456"). */
bool act_has_control(const char *s)
{
        for (; s && *s; s++)
                if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
                        return true;
        return false;
}

/* Directories created for a file or link are its own parents under /etc. */
int act_check_mkdirs(const struct change *c, char **why)
{
        for (size_t i = 0; i < c->mkdirs.n; i++) {
                const char *d = c->mkdirs.v[i];
                size_t n = strlen(d);
                if (!act_clean_path(d) || !startswith(d, "/etc/") || strncmp(c->target, d, n) != 0 || c->target[n] != '/') {
                        *why = xasprintf("refused to change %s: directory %s is not a parent of it", c->target, d);
                        return -EPERM;
                }
        }
        return 0;
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

int act_path_foresee(struct root *r, const struct change *c, bool file_written)
{
        bool is_parent;
        _cleanup_close_ int dfd = deepest_dir_nolinks(r, c->target, &is_parent);
        if (dfd < 0)
                return dfd == -ENOENT ? 0 : dfd;
        struct stat st;
        if (file_written && is_parent &&
            fstatat(dfd, strrchr(c->target, '/') + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
                return S_ISLNK(st.st_mode) ? -ELOOP : S_ISDIR(st.st_mode) ? -EISDIR : -ENOTREG;
        return 0;
}

int act_foresee_path(struct root *r, const struct change *c, bool target_planned, bool file_written,
                     const char *what, char **why)
{
        int rc = target_planned ? 0 : act_path_foresee(r, c, file_written);
        if (rc < 0)
                *why = act_errmsg(c, what, rc);
        return rc;
}

bool action_target_allowed(const struct change *c)
{
        const struct change_kind *o = change_kind_of(c);
        return o && o->allowed(c->target);
}

int action_check(const struct change *c, char **why)
{
        *why = NULL;
        const struct change_kind *o = change_kind_of(c);
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
        const struct change_kind *k = change_kind_of(c);
        if (!k || !k->in_etc)
                return 0;
        /* The target and the directory it is written in; when directories are to be made, the
         * existing one the first of them goes in. */
        const char *path = c->mkdirs.n ? c->mkdirs.v[0] : c->target;
        _cleanup_free_ char *base = NULL;
        _cleanup_close_ int dfd = act_open_dir(r, path, &base, false);
        if (dfd < 0)
                return 0; /* making the change says why it cannot be */
        unsigned file = 0, dir = 0;
        if (!c->mkdirs.n)
                (void)fileattr_get_at(dfd, base, &file);
        (void)fileattr_get(dfd, &dir);
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

int action_foresee(struct root *r, const struct change *c, bool target_planned, char **why)
{
        int rc = action_check(c, why);
        if (rc < 0)
                return rc;
        const struct change_kind *k = change_kind_of(c);
        return k->foresee ? k->foresee(r, c, target_planned, why) : 0;
}

int action_apply(struct root *r, const struct change *c, char **err)
{
        int rc = action_check(c, err);
        return rc < 0 ? rc : change_kind_of(c)->apply(r, c, err);
}

bool action_undo_waits_for_boot(const struct change *c, int rc)
{
        const struct change_kind *o = change_kind_of(c);
        return o && o->not_set_up && o->not_set_up(rc);
}

int action_undo(struct root *r, const struct change *c, char **err)
{
        int rc = action_check(c, err);
        return rc < 0 ? rc : change_kind_of(c)->undo(r, c, err);
}

int action_current(struct root *r, const struct change *c, char **ret)
{
        *ret = NULL;
        const struct change_kind *o = change_kind_of(c);
        if (!o)
                return -EINVAL;
        return o->current ? o->current(r, c, ret) : -EOPNOTSUPP;
}

/* "Is the target in this state": the one comparison apply, verify, rollback and recovery use. */
bool action_state_equal(const struct change *c, const char *current, const char *want)
{
        if (!current || !want)
                return !current && !want;
        const struct change_kind *o = change_kind_of(c);
        return o && o->equal ? o->equal(c, current, want) : streq(current, want);
}

char *action_describe(const struct change *c, const char *state)
{
        if (!state)
                return xstrdup("(absent)");
        const struct change_kind *o = change_kind_of(c);
        return o && o->describe ? o->describe(state) : xstrdup(state);
}

void action_remove_leftovers(struct root *r, const struct change *c)
{
        const struct change_kind *o = change_kind_of(c);
        if (c->target && o && o->leftovers)
                o->leftovers(r, c);
}

void action_remove_created_dirs(struct root *r, const struct change *c)
{
        const struct change_kind *k = change_kind_of(c);
        if (k && k->in_etc)
                act_remove_dirs(r, &c->mkdirs);
}
