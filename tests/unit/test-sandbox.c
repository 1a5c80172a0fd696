/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sandbox libraries read a tree in (src/base/sandbox.h) and the read deadline
 * (src/base/deadline.h). A work function standing for a library opens paths by host path, the
 * way hwloc and libkmod do, and reports what it could read; the host file beside the tree must
 * never be read, whatever link leads to it, and nothing may block past the deadline.
 *
 * The tree: TMP/tree is the root; TMP/host/secret is a host file beside it, TMP/host/fifo a host
 * FIFO. Inside the tree: abs -> TMP/host/secret (absolute), esc -> TMP/host (a link to a host
 * directory), d/rel -> ../esc/secret (relative, out through esc), d/climb -> ../../host/secret
 * (relative, climbing out), d/escfifo -> ../esc/fifo.
 *
 * The confinement this machine gives is the "live" suite (run as test sandbox-live): Landlock
 * where the kernel has it, else skipped. chroot and vet are forced (LLMTUNE_TEST_CONFINEMENT) in
 * the tree suite, which runs everywhere (as root or with user namespaces, else chroot is skipped).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/deadline.h"
#include "base/root.h"
#include "base/sandbox.h"
#include "base/test-hooks.h"
#include "tmptree.h"
#include "unit-main.h"
#include "base/util.h"

static const char *const outward[] = {"abs", "esc/secret", "d/rel", "d/climb"};

static struct root *make_tree(void)
{
        tmptree_new("sandbox");
        tmptree_put("tree/etc/marker", "inside\n", 0644);
        tmptree_mkdir("tree/proc");
        tmptree_mkdir("tree/sys");
        tmptree_put("host/secret", "HOST-SECRET\n", 0644);
        _cleanup_free_ char *host = xasprintf("%s/host", tmptree_path());
        _cleanup_free_ char *secret = xasprintf("%s/host/secret", tmptree_path());
        tmptree_link("tree/abs", secret);
        tmptree_link("tree/esc", host);
        tmptree_link("tree/d/rel", "../esc/secret");
        tmptree_link("tree/d/climb", "../../host/secret");
        tmptree_link("tree/d/escfifo", "../esc/fifo");
        _cleanup_free_ char *fifo = xasprintf("%s/host/fifo", tmptree_path());
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        _cleanup_free_ char *path = xasprintf("%s/tree", tmptree_path());
        struct root *r = NULL;
        ck_assert_int_eq(root_new(path, &r), 0);
        return r;
}

/* "REL=first line" or "REL=-errno" for each path, as a library would open it (by host path). */
static int read_paths(void *arg, const char *root_path, struct sbuf *out)
{
        const char *const *rels = arg;
        for (; *rels; rels++) {
                _cleanup_free_ char *p = xasprintf("%s/%s", root_path, *rels);
                int fd = open(p, O_RDONLY | O_CLOEXEC);
                if (fd < 0) {
                        sbuf_addf(out, "%s=%d\n", *rels, -errno);
                        continue;
                }
                char buf[64] = {0};
                ssize_t n = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                buf[n > 0 ? strcspn(buf, "\n") : 0] = '\0';
                sbuf_addf(out, "%s=%s\n", *rels, buf);
        }
        return 0;
}

static char *run_reads(struct root *r, const char *const *rels, int *rc)
{
        char *res = NULL, *why = NULL;
        size_t len = 0;
        *rc = sandbox_run(r, read_paths, (void *)rels, &res, &len, &why);
        if (*rc < 0) {
                free(res);
                return why;
        }
        free(why);
        return res;
}

/* The host file is never read: every outward path fails (with EXPECT_ERR when not 0), the tree's
 * own file is read. */
static void assert_confined(struct root *r, int expect_err)
{
        static const char *const rels[] = {"etc/marker", "abs", "esc/secret", "d/rel", "d/climb", NULL};
        int rc;
        _cleanup_free_ char *res = run_reads(r, rels, &rc);
        ck_assert_msg(rc == 0, "sandbox_run: %d %s", rc, res);
        ck_assert_msg(strstr(res, "etc/marker=inside\n"), "the tree's own file is read: %s", res);
        ck_assert_msg(!strstr(res, "HOST-SECRET"), "no host content: %s", res);
        for (size_t i = 0; i < ARRAY_SIZE(outward); i++) {
                _cleanup_free_ char *want = expect_err ? xasprintf("%s=%d\n", outward[i], -expect_err) : NULL;
                _cleanup_free_ char *key = xasprintf("%s=-", outward[i]);
                ck_assert_msg(want ? strstr(res, want) != NULL : strstr(res, key) != NULL, "%s fails%s: %s",
                              outward[i], want ? " with the expected errno" : "", res);
        }
}

/* Landlock: a link whose target lies outside the allowed hierarchy is refused with EACCES (the
 * target's path is what Landlock checks), wherever the link is and however it climbs. */
START_TEST(landlock_refuses_links_out_with_eacces)
{
        struct root *r = make_tree();
        ck_assert_str_eq(confinement_name(sandbox_confinement(r)), "landlock");
        assert_confined(r, EACCES);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(landlock_refuses_links_out_with_eacces,
            .description = "landlock refuses links out with eacces", .root = "this machine", .live = true);

/* A FIFO outside, reached through esc: refused by Landlock before the open could block. */
START_TEST(landlock_refuses_a_host_fifo_without_waiting)
{
        struct root *r = make_tree();
        static const char *const rels[] = {"d/escfifo", NULL};
        int rc;
        _cleanup_free_ char *res = run_reads(r, rels, &rc);
        ck_assert_int_eq(rc, 0);
        _cleanup_free_ char *want = xasprintf("d/escfifo=%d\n", -EACCES);
        ck_assert_str_eq(res, want);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(landlock_refuses_a_host_fifo_without_waiting,
            .description = "landlock refuses a host fifo without waiting", .root = "this machine", .live = true);

/* What the child may do besides reading: create a file in the tree, use a descriptor of the
 * parent's (the apply lock, the change log). */
static int try_more(void *arg, const char *root_path, struct sbuf *out)
{
        int parent_fd = *(int *)arg;
        _cleanup_free_ char *p = xasprintf("%s/etc/new", root_path);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        int create = fd < 0 ? -errno : 0;
        int held = fcntl(parent_fd, F_GETFD) < 0 ? -errno : 0;
        sbuf_addf(out, "create=%d parent_fd=%d", create, held);
        return 0;
}

START_TEST(the_child_writes_nothing_and_holds_nothing_of_the_parent)
{
        struct root *r = make_tree();
        _cleanup_free_ char *secret = xasprintf("%s/host/secret", tmptree_path());
        int held = open(secret, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(held, 0);
        char *res = NULL, *why = NULL;
        size_t len;
        ck_assert_int_eq(sandbox_run(r, try_more, &held, &res, &len, &why), 0);
        _cleanup_free_ char *want = xasprintf("create=%d parent_fd=%d", -EACCES, -EBADF);
        ck_assert_str_eq(res, want);
        ck_assert_ptr_null(tmptree_get("tree/etc/new"));
        free(res);
        close(held);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(the_child_writes_nothing_and_holds_nothing_of_the_parent,
            .description = "the child writes nothing and holds nothing of the parent", .root = "this machine",
            .live = true);

/* Without root, a chroot needs a user namespace of one's own, which a machine may disable. */
static bool is_root(void) { return geteuid() == 0; }

/* Forced fallbacks (LLMTUNE_TEST_CONFINEMENT), one per process: Check forks per test. */
START_TEST(chroot_keeps_links_inside)
{
        setenv("LLMTUNE_TEST_CONFINEMENT", "chroot", 1);
        struct root *r = make_tree();
        ck_assert_str_eq(confinement_name(sandbox_confinement(r)), "chroot");
        /* Inside the chroot the links resolve in the tree, where nothing of that name is. */
        assert_confined(r, ENOENT);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(chroot_keeps_links_inside, .description = "chroot keeps links inside", .root = "tmptree", .when = is_root);

START_TEST(vet_refuses_a_tree_with_a_link_out_and_runs_on_a_fit_one)
{
        setenv("LLMTUNE_TEST_CONFINEMENT", "vet", 1);
        struct root *r = make_tree();
        ck_assert_str_eq(confinement_name(sandbox_confinement(r)), "vet");
        static const char *const rels[] = {"etc/marker", NULL};
        int rc;
        _cleanup_free_ char *ok = run_reads(r, rels, &rc);
        ck_assert_msg(rc == 0 && streq(ok, "etc/marker=inside\n"), "links outside what the libraries read: %d %s", rc, ok);
        root_free(r);
        /* The same link out, under /sys where hwloc reads. */
        _cleanup_free_ char *secret = xasprintf("%s/host/secret", tmptree_path());
        tmptree_link("tree/sys/abs", secret);
        _cleanup_free_ char *path = xasprintf("%s/tree", tmptree_path());
        ck_assert_int_eq(root_new(path, &r), 0);
        _cleanup_free_ char *why = run_reads(r, rels, &rc);
        ck_assert_int_eq(rc, -EPERM);
        ck_assert_msg(strstr(why, "/sys/abs is a link leading out of the tree"), "%s", why);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(vet_refuses_a_tree_with_a_link_out_and_runs_on_a_fit_one,
            .description = "vet refuses a tree with a link out and runs on a fit one", .root = "tmptree");

/* --- the deadline and the limits ------------------------------------------------------------- */

/* Opens ROOT/fifo as a library would: without O_NONBLOCK, so it waits for a writer for ever. */
static int open_fifo(void *arg, const char *root_path, struct sbuf *out)
{
        _cleanup_free_ char *p = xasprintf("%s/fifo", root_path);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        sbuf_addf(out, "opened %d", fd);
        return 0;
}

START_TEST(a_fifo_in_the_tree_times_out)
{
        struct root *r = make_tree();
        _cleanup_free_ char *fifo = xasprintf("%s/tree/fifo", tmptree_path());
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        deadline_set_ms(200);
        char *res = NULL, *why = NULL;
        size_t len;
        ck_assert_int_eq(sandbox_run(r, open_fifo, NULL, &res, &len, &why), -ETIMEDOUT);
        ck_assert_str_eq(why, DEADLINE_REASON);
        ck_assert_ptr_null(res);
        free(why);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(a_fifo_in_the_tree_times_out, .description = "a fifo in the tree times out", .root = "tmptree");

static int spin(void *arg, const char *root_path, struct sbuf *out)
{
        for (volatile unsigned long i = 0;; i++)
                ;
        return 0;
}

/* A library reading a huge sparse file uses CPU, not waits: RLIMIT_CPU ends it after a deadline
 * of CPU (here 1 s), and the reason says so. */
START_TEST(cpu_is_limited_to_a_deadline)
{
        struct root *r = make_tree();
        deadline_set_ms(1000);
        char *res = NULL, *why = NULL;
        size_t len;
        unsigned n0, n1;
        uint64_t us0, us1;
        sandbox_children_used(&n0, &us0);
        ck_assert_int_eq(sandbox_run(r, spin, NULL, &res, &len, &why), -EFBIG);
        ck_assert_msg(strstr(why, "used more than 1 s of CPU"), "%s", why);
        /* LLMTUNE_STATS's children_cpu_ms: the spinning child is counted, with its CPU time (rusage
         * may say less than the RLIMIT_CPU second that ended it: the kernel samples the two apart) */
        sandbox_children_used(&n1, &us1);
        ck_assert_uint_eq(n1, n0 + 1);
        ck_assert_msg(us1 - us0 >= 100000, "%llu us", (unsigned long long)(us1 - us0));
        free(why);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(cpu_is_limited_to_a_deadline, .description = "cpu is limited to a deadline", .root = "tmptree");

static int die(void *arg, const char *root_path, struct sbuf *out)
{
        raise(SIGTERM);
        return 0;
}

static int fail_with_text(void *arg, const char *root_path, struct sbuf *out)
{
        sbuf_add(out, "no such thing");
        return -ENOENT;
}

/* Results may hold NULs (libkmod's records are NUL-separated): all LEN bytes come back. */
static int binary(void *arg, const char *root_path, struct sbuf *out)
{
        sbuf_addn(out, "a\0b\0", 4);
        return 0;
}

START_TEST(errors_deaths_and_results_come_back)
{
        struct root *r = make_tree();
        char *res = NULL, *why = NULL;
        size_t len = 0;
        ck_assert_int_eq(sandbox_run(r, die, NULL, &res, &len, &why), -EIO);
        ck_assert_msg(strstr(why, "died of signal 15"), "%s", why);
        free(why);
        ck_assert_int_eq(sandbox_run(r, fail_with_text, NULL, &res, &len, &why), -ENOENT);
        ck_assert_str_eq(why, "no such thing");
        free(why);
        ck_assert_int_eq(sandbox_run(r, binary, NULL, &res, &len, &why), 0);
        ck_assert_uint_eq(len, 4);
        ck_assert_int_eq(memcmp(res, "a\0b\0", 4), 0);
        free(res);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(errors_deaths_and_results_come_back,
            .description = "errors deaths and results come back", .root = "tmptree");

static int report_pid(void *arg, const char *root_path, struct sbuf *out)
{
        sbuf_addf(out, "%d %s", (int)getpid(), root_path);
        return 0;
}

/* The live system's tree is the host: no child, no confinement, and the result still comes back. */
START_TEST(the_live_system_runs_in_the_process)
{
        struct root *r = NULL;
        ck_assert_int_eq(root_new("/", &r), 0);
        ck_assert_str_eq(confinement_name(sandbox_confinement(r)), "none");
        char *res = NULL, *why = NULL;
        size_t len = 0;
        unsigned n0, n1;
        uint64_t us0, us1;
        sandbox_children_used(&n0, &us0);
        ck_assert_int_eq(sandbox_run(r, report_pid, NULL, &res, &len, &why), 0);
        sandbox_children_used(&n1, &us1);
        ck_assert_uint_eq(n1, n0);
        _cleanup_free_ char *want = xasprintf("%d /", (int)getpid());
        ck_assert_str_eq(res, want);
        ck_assert_uint_eq(len, strlen(want));
        free(res);
        root_free(r);
}
END_TEST
DEFINE_TEST(the_live_system_runs_in_the_process, .description = "the live system runs in the process", .root = "none");

/* llmtune's own reads: a FIFO, a socket or a device node is "not a regular file", never read,
 * never waited on. */
START_TEST(own_reads_never_read_special_files)
{
        struct root *r = make_tree();
        _cleanup_free_ char *fifo = xasprintf("%s/tree/fifo", tmptree_path());
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        const char *data;
        ck_assert_int_eq(root_read(r, "/fifo", &data, NULL), -ENOTREG);
        ck_assert_int_eq(root_read(r, "/d/escfifo", &data, NULL), -ENOENT); /* resolved in the tree */
        _cleanup_free_ char *dev = xasprintf("%s/tree/zero", tmptree_path());
        if (mknod(dev, S_IFCHR | 0600, makedev(1, 5)) == 0)
                ck_assert_int_eq(root_read(r, "/zero", &data, NULL), -ENOTREG);
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(own_reads_never_read_special_files, .description = "own reads never read special files", .root = "tmptree");

/* The guard of llmtune's own reads: an operation on the tree that lasts a deadline ends the
 * process through the expiry handler (exit status 42 here; the command line's says why, exit 1). */
static void expired(const char *path, unsigned ms, const char *label)
{
        _exit(streq(path, "/hung/file") && ms == 100 && !label ? 42 : 43);
}

START_TEST(a_read_that_outlasts_the_deadline_ends_the_run)
{
        deadline_set_ms(100);
        deadline_on_expiry(expired);
        deadline_enter("/quick");
        deadline_leave();
        deadline_enter("/hung/file");
        sleep(30); /* a read that never returns */
        deadline_leave();
}
END_TEST
DEFINE_TEST(a_read_that_outlasts_the_deadline_ends_the_run,
            .description = "a read that outlasts the deadline ends the run", .root = "none", .exit_status = 42);

/* Reads that each end in time are not one long read, however long the run. */
START_TEST(many_quick_reads_are_not_a_hung_one)
{
        deadline_set_ms(100);
        deadline_on_expiry(expired);
        for (int i = 0; i < 60; i++) {
                deadline_enter("/quick");
                usleep(10000);
                deadline_leave();
        }
}
END_TEST
DEFINE_TEST(many_quick_reads_are_not_a_hung_one, .description = "many quick reads are not a hung one", .root = "none");

/* A budget (--timeout, --rule-timeout) that has ended: no read of the tree is begun (-ETIME), each
 * refusal counts as a cut, and nothing is cached, so a read with time of its own succeeds. */
START_TEST(a_spent_budget_refuses_reads_and_caches_nothing)
{
        struct root *r = make_tree();
        const char *data;
        unsigned long cuts = deadline_cuts();
        deadline_budget_set(deadline_now_ns() - 1);
        ck_assert_int_eq(root_read(r, "/etc/marker", &data, NULL), -ETIME);
        ck_assert_uint_eq(deadline_cuts(), cuts + 1);
        char *ret = NULL, *why = NULL;
        size_t len;
        const char *const rels[] = {"etc/marker", NULL};
        ck_assert_int_eq(sandbox_run(r, read_paths, (void *)rels, &ret, &len, &why), -ETIME);
        ck_assert_str_eq(why, BUDGET_REASON);
        free(why);
        deadline_budget_set(0);
        ck_assert_int_eq(root_read(r, "/etc/marker", &data, NULL), 0);
        ck_assert_str_eq(data, "inside\n");
        root_free(r);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(a_spent_budget_refuses_reads_and_caches_nothing,
            .description = "a spent budget refuses reads of the tree, counts each as a cut and caches nothing", .root = "none");

/* An operation under way when the budget ends is given DEADLINE_FLOOR_MS, not the read deadline
 * (60 s here), and the give-up names what the run was doing (the rule). */
static void expired_in_budget(const char *path, unsigned ms, const char *label)
{
        _exit(streq(path, "/hung/file") && ms == DEADLINE_FLOOR_MS && label && streq(label, "some-rule") ? 42 : 43);
}

START_TEST(a_budget_bounds_a_hung_read_and_names_the_rule)
{
        deadline_set_ms(60000);
        deadline_on_expiry(expired_in_budget);
        deadline_budget_set(deadline_now_ns() + 10000000u);
        deadline_set_label("some-rule");
        deadline_enter("/hung/file");
        sleep(30); /* a read that never returns: the guard ends the run at the floor, not at 60 s */
        deadline_leave();
}
END_TEST
DEFINE_TEST(a_budget_bounds_a_hung_read_and_names_the_rule,
            .description = "a budget bounds a hung read at the floor and names the rule", .root = "none", .exit_status = 42);


static char *live_missing(void)
{
        struct root *r = NULL;
        if (root_new("/tmp", &r) < 0)
                return xstrdup("cannot open /tmp as a root");
        enum confinement c = sandbox_confinement(r);
        root_free(r);
        return c == CONFINE_LANDLOCK ? NULL
                                     : xasprintf("no Landlock here (the libraries are confined by %s)", confinement_name(c));
}

UNIT_MAIN(.name = "sandbox", .live_missing = live_missing)
