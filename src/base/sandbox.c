/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Library work on a tree, in a confined child under the read deadline (sandbox.h). */
#include "base/sandbox.h"

#include "base/deadline.h"
#include "base/host-vet.h"
#include "base/test-hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Landlock's interface (include/uapi/linux/landlock.h), spelt out here: build hosts' headers lag
 * the kernels they run on, and the rights a newer ABI adds must be denied where they exist. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_ABI1 ((1ull << 13) - 1) /* execute, write, read, read_dir, remove_*, make_* */
#define LL_FS_REFER (1ull << 13)      /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15)  /* ABI 5 */
#define LL_NET_ALL 3ull               /* ABI 4: bind_tcp, connect_tcp */
#define LL_SCOPE_ALL 3ull             /* ABI 6: abstract unix sockets, signals */

struct ll_ruleset_attr {
        uint64_t handled_access_fs, handled_access_net, scoped;
};
struct ll_path_beneath_attr {
        uint64_t allowed_access;
        int32_t parent_fd;
} __attribute__((packed));

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static int landlock_abi(void)
{
        long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
        return v < 0 ? 0 : (int)v;
}

/* A chroot needs CAP_SYS_ADMIN and CAP_SYS_CHROOT: root's, or those of a new user namespace. */
static bool chroot_possible(void)
{
        if (geteuid() == 0)
                return true;
        static const char *const knobs[] = {"/proc/sys/user/max_user_namespaces",
                                            "/proc/sys/kernel/unprivileged_userns_clone"};
        for (size_t i = 0; i < ARRAY_SIZE(knobs); i++) {
                _cleanup_fclose_ FILE *fp = fopen(knobs[i], "re");
                long v = 1;
                if (fp && fscanf(fp, "%ld", &v) != 1)
                        v = 0;
                if (v <= 0)
                        return false;
        }
        return true;
}

static enum confinement strongest(void)
{
        static int kind = -1;
        if (kind < 0) {
                kind = landlock_abi() > 0 ? CONFINE_LANDLOCK : chroot_possible() ? CONFINE_CHROOT : CONFINE_VET;
                /* The test suite's way to run the fallbacks on a kernel that has Landlock: weaker only. */
                const char *forced = test_confinement();
                if (streq(forced, "chroot") && kind < CONFINE_CHROOT)
                        kind = CONFINE_CHROOT;
                else if (streq(forced, "vet"))
                        kind = CONFINE_VET;
        }
        return (enum confinement)kind;
}

enum confinement sandbox_confinement(const struct root *r) { return root_is_host(r) ? CONFINE_NONE : strongest(); }

const char *confinement_name(enum confinement c)
{
        static const char *const names[] = {"none", "landlock", "chroot", "vet"};
        return names[c];
}

/* --- the child -------------------------------------------------------------------------------- */

/* Every descriptor but KEEP (and 0-2) closed: Landlock does not check what is already open, so the
 * child must hold nothing of the parent's (the apply lock, the change log, the root handle). */
static int close_others(int keep1, int keep2)
{
        int lo = keep1 < keep2 ? keep1 : keep2, hi = keep1 < keep2 ? keep2 : keep1;
        unsigned ranges[3][2] = {{3, (unsigned)lo - 1}, {(unsigned)lo + 1, (unsigned)hi - 1}, {(unsigned)hi + 1, ~0u}};
        for (size_t i = 0; i < ARRAY_SIZE(ranges); i++) {
                if (ranges[i][0] > ranges[i][1])
                        continue;
                if (syscall(SYS_close_range, ranges[i][0], ranges[i][1], 0) == 0)
                        continue;
                if (errno != ENOSYS)
                        return -errno;
                struct rlimit nf;
                unsigned top = getrlimit(RLIMIT_NOFILE, &nf) == 0 && nf.rlim_cur < 65536 ? (unsigned)nf.rlim_cur : 65536;
                for (unsigned fd = ranges[i][0]; fd <= ranges[i][1] && fd < top; fd++)
                        close((int)fd);
        }
        return 0;
}

static int confine_landlock(int root_fd, int wfd, struct sbuf *why)
{
        int abi = landlock_abi();
        struct ll_ruleset_attr attr = {.handled_access_fs = LL_FS_ABI1};
        size_t size = sizeof(attr.handled_access_fs);
        if (abi >= 2)
                attr.handled_access_fs |= LL_FS_REFER;
        if (abi >= 3)
                attr.handled_access_fs |= LL_FS_TRUNCATE;
        if (abi >= 5)
                attr.handled_access_fs |= LL_FS_IOCTL_DEV;
        if (abi >= 4) {
                attr.handled_access_net = LL_NET_ALL;
                size = offsetof(struct ll_ruleset_attr, scoped);
        }
        if (abi >= 6) {
                attr.scoped = LL_SCOPE_ALL;
                size = sizeof(attr);
        }
        _cleanup_close_ int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
        if (rs < 0) {
                sbuf_addf(why, "landlock_create_ruleset: %s", strerror(errno));
                return -EPERM;
        }
        struct ll_path_beneath_attr beneath = {.allowed_access = LL_FS_READ_FILE | LL_FS_READ_DIR, .parent_fd = root_fd};
        int rc = 0;
        if (syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &beneath, 0) < 0)
                sbuf_addf(why, "landlock_add_rule: %s", strerror(errno)), rc = -EPERM;
        else if (close_others(wfd, rs) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                sbuf_addf(why, "preparing Landlock: %s", strerror(errno)), rc = -EPERM;
        else if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
                sbuf_addf(why, "landlock_restrict_self: %s", strerror(errno)), rc = -EPERM;
        return rc;
}

static int write_text(const char *path, const char *text)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write_all(fd, text, strlen(text));
}

/* Root inside a new user namespace of one's own, when not root: the capabilities a chroot needs. */
static int own_userns(void)
{
        uid_t uid = geteuid();
        gid_t gid = getegid();
        if (unshare(CLONE_NEWUSER) < 0)
                return -errno;
        char map[64];
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
        int rc = write_text("/proc/self/uid_map", map);
        if (rc == 0)
                rc = write_text("/proc/self/setgroups", "deny");
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
        return rc < 0 ? rc : write_text("/proc/self/gid_map", map);
}

/* The tree bound read-only (nodev, nosuid, noexec) in a mount namespace of the child's own, then
 * chroot into it and every capability dropped, so the chroot cannot be left again. */
static int confine_chroot(const char *host, int wfd, struct sbuf *why)
{
        const char *step = "unshare";
        int rc = geteuid() == 0 ? 0 : own_userns();
        if (rc == 0 && unshare(CLONE_NEWNS) < 0)
                rc = -errno;
        if (rc == 0 && (step = "mount", mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
                                                mount(host, host, NULL, MS_BIND | MS_REC, NULL) < 0 ||
                                                mount(NULL, host, NULL,
                                                      MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NODEV | MS_NOSUID | MS_NOEXEC,
                                                      NULL) < 0))
                rc = -errno;
        if (rc == 0 && (step = "chroot", chroot(host) < 0 || chdir("/") < 0))
                rc = -errno;
        if (rc == 0 && (step = "closing descriptors", close_others(wfd, wfd) < 0))
                rc = -errno;
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {{0}};
        if (rc == 0 && (step = "dropping capabilities",
                        syscall(SYS_capset, &hdr, none) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0))
                rc = -errno;
        if (rc < 0)
                sbuf_addf(why, "%s: %s", step, strerror(-rc));
        return rc < 0 ? -EPERM : 0;
}

/* Bounds that hold whatever the library does: CPU (a deadline of it), memory, no core file, and
 * death with the parent. */
static void child_limits(pid_t parent)
{
        rlim_t s = (deadline_ms() + 999) / 1000;
        struct rlimit cpu = {s, s + 1}, none = {0, 0};
        setrlimit(RLIMIT_CPU, &cpu);
        setrlimit(RLIMIT_CORE, &none);
#ifndef UNDER_ASAN /* ASan's shadow memory is terabytes of address space */
        struct rlimit as = {SANDBOX_MEMORY_MAX, SANDBOX_MEMORY_MAX};
        setrlimit(RLIMIT_AS, &as);
#endif
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
                _exit(127);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3 && null >= 0; fd++)
                dup2(null, fd); /* the libraries print nothing to the user's terminal */
        if (null > 2)
                close(null);
}

/* The result: FN's return value (4 bytes), then what it wrote. R is NULL for work apart, which
 * keeps KEEP_FD open. */
static noreturn void child_main(struct root *r, enum confinement c, int keep_fd, sandbox_fn fn, void *arg, int wfd,
                                pid_t parent)
{
        child_limits(parent);
        _cleanup_free_ char *host = r ? root_host_path(r, "/") : xstrdup("");
        const char *where = host;
        struct sbuf out = {0};
        int rc = 0;
        if (c == CONFINE_LANDLOCK)
                rc = confine_landlock(root_dirfd(r), wfd, &out);
        else if (c == CONFINE_CHROOT) {
                rc = confine_chroot(host, wfd, &out);
                where = "/."; /* the root, but not the spelling that makes hwloc take the live system */
        } else
                rc = close_others(wfd, keep_fd >= 0 ? keep_fd : wfd);
        if (rc == 0)
                rc = fn(arg, where, &out);
        int32_t head = rc;
        if (write_all(wfd, (const char *)&head, sizeof(head)) == 0 && out.len)
                (void)!write_all(wfd, out.s, out.len);
        _exit(0);
}

/* --- the parent ------------------------------------------------------------------------------- */

static uint64_t cpu_ns(clockid_t clk)
{
        struct timespec ts;
        return clock_gettime(clk, &ts) == 0 ? (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec : 0;
}

/*
 * Read the child's result as it comes, waking four times a deadline to see whether it still uses
 * CPU. A child blocked on a FIFO or a file that never answers uses none; one that is slow because
 * the machine is busy still gets milliseconds in a quarter of a deadline; one fed a byte now and
 * then by a file system that means to keep it waiting uses microseconds. So it is killed after a
 * deadline of quarters each with less than IDLE_CPU_NS of CPU, or after SANDBOX_WALL_DEADLINES
 * deadlines in all. Returns 0 at the end of its output, or -errno with *why.
 */
#define IDLE_CPU_NS 1000000u
#define SANDBOX_WALL_DEADLINES 60u
static int collect(pid_t pid, int rfd, struct sbuf *res, char **why)
{
        unsigned ms = deadline_ms(), q = ms / 4 ? ms / 4 : 1, idle = 0;
        uint64_t waited = 0;
        clockid_t clk;
        bool have_clk = clock_getcpuclockid(pid, &clk) == 0;
        uint64_t last = have_clk ? cpu_ns(clk) : 0;
        char buf[65536];
        for (;;) {
                struct pollfd p = {.fd = rfd, .events = POLLIN};
                int n = poll(&p, 1, (int)q);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n > 0) {
                        ssize_t got = read(rfd, buf, sizeof(buf));
                        if (got < 0 && errno == EINTR)
                                continue;
                        if (got <= 0)
                                return 0;
                        if (res->len + (size_t)got > SANDBOX_RESULT_MAX) {
                                *why = xasprintf("its result passed %u MiB", SANDBOX_RESULT_MAX >> 20);
                                return -EFBIG;
                        }
                        sbuf_addn(res, buf, (size_t)got);
                        idle = 0;
                        continue;
                }
                waited += q;
                uint64_t now = have_clk ? cpu_ns(clk) : last;
                idle = now - last >= IDLE_CPU_NS ? 0 : idle + 1;
                last = now;
                if (idle >= 4 || waited >= (uint64_t)SANDBOX_WALL_DEADLINES * ms) {
                        if (ms < deadline_read_timeout_ms()) { /* the end of the run's or the rule's time */
                                deadline_note_cut();
                                *why = xstrdup(BUDGET_REASON);
                                return -ETIME;
                        }
                        *why = xstrdup(DEADLINE_REASON);
                        return -ETIMEDOUT;
                }
        }
}

/* Reap PID without waiting for ever: one stuck in a wait even SIGKILL cannot end is left behind
 * (init reaps it once this process exits). Returns its wait status, or -1; *RU its resource use. */
static int reap(pid_t pid, bool kill_it, struct rusage *ru)
{
        if (kill_it)
                kill(pid, SIGKILL);
        for (unsigned i = 0; i < 200; i++) {
                int st;
                pid_t w = wait4(pid, &st, kill_it ? WNOHANG : 0, ru);
                if (w == pid)
                        return st;
                if (w < 0 && errno != EINTR)
                        return -1;
                if (w == 0) {
                        struct timespec ts = {0, 5000000};
                        nanosleep(&ts, NULL);
                }
        }
        return -1;
}

/* What a child that sent no whole result died of: RLIMIT_CPU sends SIGXCPU, then SIGKILL. */
static int died(int st, const struct rusage *ru, char **why)
{
        unsigned limit = (deadline_ms() + 999) / 1000;
        uint64_t used_ms = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000 +
                           (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1000;
        bool cpu_spent = used_ms >= (uint64_t)limit * 1000;
        if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGXCPU || (WTERMSIG(st) == SIGKILL && cpu_spent))) {
                *why = xasprintf("used more than %u s of CPU (a file far larger than the kernel writes?)", limit);
                return -EFBIG;
        }
        if (WIFSIGNALED(st))
                *why = xasprintf("its process died of signal %d (%s; out of memory, past %llu GiB?)", WTERMSIG(st),
                                 strsignal(WTERMSIG(st)), SANDBOX_MEMORY_MAX >> 30);
        else
                *why = xasprintf("its process ended without a result (status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return -EIO;
}

/* What the children cost, for LLMTUNE_STATS (sandbox.h). */
static unsigned children_run;
static uint64_t children_cpu_us;

void sandbox_children_used(unsigned *ret_n, uint64_t *ret_cpu_us)
{
        *ret_n = children_run;
        *ret_cpu_us = children_cpu_us;
}

static int run_here(sandbox_fn fn, void *arg, char **ret, size_t *ret_len, char **ret_why)
{
        struct sbuf out = {0};
        int rc = fn(arg, "/", &out);
        size_t len = out.len;
        char *s = out.s ? sbuf_steal(&out) : xstrdup("");
        if (rc < 0) {
                *ret_why = s;
                return rc;
        }
        *ret_len = len;
        *ret = s;
        return 0;
}

/* FN in a child confined as C (R's tree; R NULL: apart, keeping KEEP_FD), its result collected
 * under the deadline. */
static int run_child(struct root *r, enum confinement c, int keep_fd, sandbox_fn fn, void *arg, char **ret,
                     size_t *ret_len, char **ret_why)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                int e = -errno;
                *ret_why = xasprintf("pipe: %s", strerror(-e));
                return e;
        }
        pid_t parent = getpid();
        pid_t pid = fork();
        int e = pid < 0 ? -errno : 0; /* before the close below, which may change errno */
        if (pid == 0) {
                close(p[0]);
                child_main(r, c, keep_fd, fn, arg, p[1], parent);
        }
        close(p[1]);
        if (pid < 0) {
                close(p[0]);
                *ret_why = xasprintf("fork: %s", strerror(-e));
                return e;
        }
        struct sbuf res = {0};
        deadline_pause();
        int rc = collect(pid, p[0], &res, ret_why);
        close(p[0]);
        struct rusage ru = {0};
        int st = reap(pid, rc < 0, &ru);
        deadline_resume();
        children_run++;
        children_cpu_us += (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
        int32_t head = 0;
        if (rc == 0 && res.len < sizeof(head))
                rc = st == -1 ? -EIO : died(st, &ru, ret_why);
        if (rc == 0) {
                memcpy(&head, res.s, sizeof(head));
                size_t len = res.len - sizeof(head);
                char *body = xmalloc(len + 1); /* may hold NULs (field separators): not a string copy */
                memcpy(body, res.s + sizeof(head), len);
                body[len] = '\0';
                if (head < 0) {
                        *ret_why = body;
                        rc = head;
                } else {
                        *ret = body;
                        *ret_len = len;
                }
        }
        free(res.s);
        if (rc < 0 && !*ret_why)
                *ret_why = xstrdup("the library's process failed");
        return rc;
}

int sandbox_run(struct root *r, sandbox_fn fn, void *arg, char **ret, size_t *ret_len, char **ret_why)
{
        *ret = *ret_why = NULL;
        *ret_len = 0;
        if (deadline_spent()) {
                *ret_why = xstrdup(BUDGET_REASON);
                return -ETIME;
        }
        enum confinement c = sandbox_confinement(r);
        if (c == CONFINE_NONE)
                return run_here(fn, arg, ret, ret_len, ret_why);
        if (c == CONFINE_VET) {
                const char *unfit = host_vet(r);
                if (unfit) {
                        *ret_why = xasprintf("%s (neither Landlock nor a chroot can be had here, so the tree is vetted)",
                                             unfit);
                        return -EPERM;
                }
        }
        return run_child(r, c, -1, fn, arg, ret, ret_len, ret_why);
}

int sandbox_apart(int keep_fd, sandbox_fn fn, void *arg, char **ret, size_t *ret_len, char **ret_why)
{
        *ret = *ret_why = NULL;
        *ret_len = 0;
        if (deadline_spent()) {
                *ret_why = xstrdup(BUDGET_REASON);
                return -ETIME;
        }
        return run_child(NULL, CONFINE_NONE, keep_fd, fn, arg, ret, ret_len, ret_why);
}
