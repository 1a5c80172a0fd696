/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPU -> NUMA node -> CPU sets on the fixture roots (LLMTUNE_ROOTS: BUILDDIR/tests/roots), the
 * gpu-affinity.conf format, and real binding on this machine: `llmtune exec` (LLMTUNE_BIN) started
 * with a narrowed CPU set must give its command the node's CPUs (the child's Cpus_allowed_list).
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "facts/readers/affinity.h"
#include "facts/facts.h"
#include "base/parse.h"
#include "unit-main.h"

static struct root *root;
static struct facts *facts;

static struct facts *open_fixture(const char *name)
{
        const char *dir = getenv("LLMTUNE_ROOTS");
        ck_assert_msg(dir, "LLMTUNE_ROOTS is not set (run through meson test)");
        _cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
        ck_assert_int_eq(root_new(p, &root), 0);
        facts = facts_new(root);
        return facts;
}

static void teardown(void)
{
        facts = facts_free(facts);
        root = root_free(root);
}

static char *set_str(const struct cpuset_list *s) { return s->n ? format_cpulist(s->cpus, s->n) : xstrdup("-"); }

struct expect {
        int node;
        const char *node_cpus, *share, *nosmt;
};

static void check_map(const char *fixture, const struct expect *e, size_t n)
{
        struct facts *f = open_fixture(fixture);
        struct affinity_map m;
        char *err = NULL;
        ck_assert_int_eq(affinity_compute(f, &m, &err), 0);
        ck_assert_uint_eq(m.n, n);
        for (size_t i = 0; i < n; i++) {
                const struct gpu_affinity *g = &m.v[i];
                ck_assert_uint_eq(g->index, i);
                ck_assert_int_eq(g->numa_node, e[i].node);
                const char *want[] = {e[i].node_cpus, e[i].share, e[i].nosmt};
                for (size_t k = 0; k < _AFFINITY_MAX; k++) {
                        _cleanup_free_ char *s = set_str(&g->set[k]);
                        ck_assert_msg(streq(s, want[k]), "%s GPU %zu %s: %s, want %s", fixture, i,
                                      affinity_policy_name(k), s, want[k]);
                }
        }
        /* No two ranks on one core: the shares are disjoint. */
        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++)
                        for (size_t a = 0; a < m.v[i].set[AFFINITY_SHARE].n; a++)
                                for (size_t b = 0; b < m.v[j].set[AFFINITY_SHARE].n; b++)
                                        ck_assert_uint_ne(m.v[i].set[AFFINITY_SHARE].cpus[a],
                                                          m.v[j].set[AFFINITY_SHARE].cpus[b]);
        affinity_map_done(&m);
}

START_TEST(dgx_a100_pairs_on_nodes_3_1_7_5)
{
        /* NPS4: node k holds CPUs 16k..16k+15 and their SMT siblings 128+16k..; two GPUs a node. */
        static const struct expect e[] = {
                {3, "48-63,176-191", "48-55,176-183", "48-55"},
                {3, "48-63,176-191", "56-63,184-191", "56-63"},
                {1, "16-31,144-159", "16-23,144-151", "16-23"},
                {1, "16-31,144-159", "24-31,152-159", "24-31"},
                {7, "112-127,240-255", "112-119,240-247", "112-119"},
                {7, "112-127,240-255", "120-127,248-255", "120-127"},
                {5, "80-95,208-223", "80-87,208-215", "80-87"},
                {5, "80-95,208-223", "88-95,216-223", "88-95"},
        };
        check_map("dgx-a100", e, ARRAY_SIZE(e));
}
END_TEST
DEFINE_TEST(dgx_a100_pairs_on_nodes_3_1_7_5, .description = "dgx a100 pairs on nodes 3 1 7 5", .root = "dgx-a100");

START_TEST(hgx_h100_four_per_socket)
{
        /* 56 cores a node, 4 GPUs: 14 cores each. */
        static const struct expect e[] = {
                {0, "0-55,112-167", "0-13,112-125", "0-13"},
                {0, "0-55,112-167", "14-27,126-139", "14-27"},
                {0, "0-55,112-167", "28-41,140-153", "28-41"},
                {0, "0-55,112-167", "42-55,154-167", "42-55"},
                {1, "56-111,168-223", "56-69,168-181", "56-69"},
                {1, "56-111,168-223", "70-83,182-195", "70-83"},
                {1, "56-111,168-223", "84-97,196-209", "84-97"},
                {1, "56-111,168-223", "98-111,210-223", "98-111"},
        };
        check_map("hgx-h100", e, ARRAY_SIZE(e));
}
END_TEST
DEFINE_TEST(hgx_h100_four_per_socket, .description = "hgx h100 four per socket", .root = "hgx-h100");

/* numa_node -1 on a machine with one NUMA node means node 0 (issue 13.10): no "-1 - - -" line. */
START_TEST(ws_4090_single_node)
{
        static const struct expect e[] = {{0, "0-31", "0-7,16-23", "0-7"}, {0, "0-31", "8-15,24-31", "8-15"}};
        check_map("ws-4090", e, ARRAY_SIZE(e));
        struct affinity_map m;
        char *err = NULL;
        ck_assert_int_eq(affinity_compute(facts, &m, &err), 0);
        ck_assert_ptr_null(m.v[0].why);
        affinity_map_done(&m);
}
END_TEST
DEFINE_TEST(ws_4090_single_node, .description = "ws 4090 single node", .root = "ws-4090");

START_TEST(vm_no_gpu)
{
        struct facts *f = open_fixture("vm-nogpu");
        char *err = NULL;
        char *s = affinity_conf_render(f, &err);
        ck_assert_ptr_null(s);
        ck_assert_str_eq(err, "no NVIDIA GPU");
        free(err);
}
END_TEST
DEFINE_TEST(vm_no_gpu, .description = "vm no gpu", .root = "vm-nogpu");

START_TEST(conf_round_trip)
{
        static const char *const fixtures[] = {"dgx-a100", "hgx-h100", "ws-4090"};
        for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
                struct facts *f = open_fixture(fixtures[i]);
                char *err = NULL;
                _cleanup_free_ char *text = affinity_conf_render(f, &err);
                ck_assert_ptr_nonnull(text);
                struct affinity_map m, again;
                ck_assert_int_eq(affinity_compute(f, &m, &err), 0);
                ck_assert_msg(affinity_conf_parse(text, &again, &err) == 0, "%s: %s", fixtures[i], err);
                ck_assert_uint_eq(again.n, m.n);
                for (size_t g = 0; g < m.n; g++) {
                        ck_assert_str_eq(again.v[g].address, m.v[g].address);
                        ck_assert_int_eq(again.v[g].numa_node, m.v[g].numa_node);
                        for (size_t k = 0; k < _AFFINITY_MAX; k++) {
                                _cleanup_free_ char *a = set_str(&again.v[g].set[k]), *b = set_str(&m.v[g].set[k]);
                                ck_assert_str_eq(a, b);
                        }
                }
                /* The data lines, as documented: "0 0000:07:00.0 3 48-63,176-191 48-55,176-183 48-55". */
                if (i == 0)
                        ck_assert_ptr_nonnull(strstr(text, "\n0 0000:07:00.0 3 48-63,176-191 48-55,176-183 48-55\n"));
                affinity_map_done(&m);
                affinity_map_done(&again);
                teardown();
        }
}
END_TEST
DEFINE_TEST(conf_round_trip, .description = "conf round trip", .root = "dgx-a100, hgx-h100, ws-4090");

START_TEST(conf_parse_errors)
{
        static const struct {
                const char *text, *err;
        } bad[] = {
                {"0 0000:07:00.0 3 48-63\n", "line 1: expected 6 fields"},
                {"# c\n1 0000:07:00.0 3 1 1 1\n", "line 2: GPU must be the next index"},
                {"0 0000:07:00.0 -2 1 1 1\n", "line 1: NUMA_NODE"},
                {"0 0000:07:00.0 -1 1 - -\n", "line 1: a GPU with NUMA_NODE -1"},
                {"0 0000:07:00.0 0 1-x 1 1\n", "line 1: a CPU set"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                struct affinity_map m;
                char *err = NULL;
                ck_assert_int_eq(affinity_conf_parse(bad[i].text, &m, &err), -EINVAL);
                ck_assert_msg(startswith(err, bad[i].err), "%s: %s", bad[i].text, err);
                free(err);
        }
        struct affinity_map m;
        char *err = NULL;
        ck_assert_int_eq(affinity_conf_parse("# only comments\n\n0 a -1 - - -\n1 b 0 0-3 0-1 0\n", &m, &err), 0);
        ck_assert_uint_eq(m.n, 2);
        ck_assert_uint_eq(m.v[1].set[AFFINITY_NODE].n, 4);
        affinity_map_done(&m);
}
END_TEST
DEFINE_TEST(conf_parse_errors, .description = "conf parse errors", .root = "none");

START_TEST(policy_names)
{
        enum affinity_policy p;
        ck_assert_int_eq(affinity_policy_parse("share-nosmt", &p), 0);
        ck_assert_int_eq(p, AFFINITY_SHARE_NOSMT);
        ck_assert_int_eq(affinity_policy_parse("socket", &p), -EINVAL);
        ck_assert_str_eq(affinity_policy_name(AFFINITY_NODE), "node");
}
END_TEST
DEFINE_TEST(policy_names, .description = "policy names", .root = "none");

/* --- binding on this machine ------------------------------------------------------------------ */

static int allowed_cpus(unsigned **ret)
{
        cpu_set_t set;
        CPU_ZERO(&set);
        /* No ck_assert here: main() calls this too, outside any test. */
        if (sched_getaffinity(0, sizeof(set), &set) < 0) {
                *ret = NULL;
                return -1;
        }
        unsigned *v = xcalloc(CPU_SETSIZE, sizeof(unsigned));
        int n = 0;
        for (unsigned c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set))
                        v[n++] = c;
        *ret = v;
        return n;
}

START_TEST(bind_cpus_in_child)
{
        _cleanup_free_ unsigned *cpus = NULL;
        int n = allowed_cpus(&cpus);
        ck_assert_int_gt(n, 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                struct cpuset_list one = {&cpus[n - 1], 1};
                if (affinity_bind_cpus(&one) < 0)
                        _exit(2);
                cpu_set_t set;
                CPU_ZERO(&set);
                sched_getaffinity(0, sizeof(set), &set);
                _exit(CPU_COUNT(&set) == 1 && CPU_ISSET(cpus[n - 1], &set) ? 0 : 3);
        }
        int st;
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 0);
        struct cpuset_list none = {0};
        ck_assert_int_eq(affinity_bind_cpus(&none), -EINVAL);
}
END_TEST
DEFINE_TEST(bind_cpus_in_child, .description = "bind cpus in child", .root = "none");

/* Run `llmtune ARGS...` with its CPU set narrowed to one CPU; return its stdout. */
static char *run_narrowed(unsigned cpu, char *const argv[], int *status)
{
        int fds[2];
        ck_assert_int_eq(pipe(fds), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(cpu, &set);
                if (sched_setaffinity(0, sizeof(set), &set) < 0)
                        _exit(90);
                dup2(fds[1], STDOUT_FILENO);
                close(fds[0]);
                close(fds[1]);
                execv(argv[0], argv);
                _exit(91);
        }
        close(fds[1]);
        struct sbuf b = {0};
        char buf[4096];
        ssize_t r;
        while ((r = read(fds[0], buf, sizeof(buf))) > 0)
                sbuf_addn(&b, buf, (size_t)r);
        close(fds[0]);
        ck_assert_int_eq(waitpid(pid, status, 0), pid);
        return b.s ? sbuf_steal(&b) : xstrdup("");
}

static char *status_field(const char *text, const char *field)
{
        const char *p = strstr(text, field);
        if (!p)
                return NULL;
        p += strlen(field);
        p += strspn(p, ":\t ");
        return xstrndup(p, strcspn(p, "\n"));
}

/* The first NUMA node of this machine whose CPUs this process may all use (a cgroup cpuset may
 * forbid some), with its CPU list: NULL, or why there is none (the live test is then skipped). */
static char *usable_node(int *ret_node, char **ret_cpus)
{
        struct root *r = NULL;
        if (root_new("/", &r) < 0)
                return xstrdup("cannot open the root /");
        struct facts *f = facts_new(r);
        char *why = NULL;
        _cleanup_free_ unsigned *allowed = NULL, *nodes = NULL;
        const struct fact *nl = facts_get(f, "numa.node_list");
        if (!nl || nl->status != FACT_OK) {
                why = xstrdup("no NUMA node list on this machine (numa.node_list not readable)");
                goto out;
        }
        int na = allowed_cpus(&allowed);
        int nn = parse_cpulist(nl->str, &nodes);
        *ret_node = -1;
        for (int i = 0; i < nn && *ret_node < 0; i++) {
                _cleanup_free_ char *name = xasprintf("numa.node.%u.cpus", nodes[i]);
                const struct fact *fc = facts_get(f, name);
                _cleanup_free_ unsigned *cpus = NULL;
                int n = fc && fc->status == FACT_OK && *fc->str ? parse_cpulist(fc->str, &cpus) : 0;
                bool ok = n > 0;
                for (int k = 0; k < n && ok; k++) {
                        ok = false;
                        for (int a = 0; a < na; a++)
                                ok |= allowed[a] == cpus[k];
                }
                if (ok) {
                        *ret_node = (int)nodes[i];
                        *ret_cpus = format_cpulist(cpus, (size_t)n);
                }
        }
        if (*ret_node < 0)
                why = xstrdup("no NUMA node whose CPUs this process may all use");
out:
        facts_free(f);
        root_free(r);
        return why;
}

static char *live_missing(void)
{
        int node;
        char *cpus = NULL;
        char *why = usable_node(&node, &cpus);
        free(cpus);
        return why;
}

START_TEST(exec_binds_to_node)
{
        const char *bin = getenv("LLMTUNE_BIN");
        ck_assert_msg(bin, "LLMTUNE_BIN is not set (run through meson test)");
        int node = -1;
        _cleanup_free_ char *want = NULL;
        _cleanup_free_ char *why = usable_node(&node, &want);
        /* main() ran this test only where usable_node() found a node (else: skipped). */
        ck_assert_msg(!why, "%s", why);
        _cleanup_free_ unsigned *allowed = NULL;
        ck_assert_int_gt(allowed_cpus(&allowed), 0);
        ck_assert_int_eq(root_new("/", &root), 0);
        facts = facts_new(root);
        _cleanup_free_ char *nodearg = xasprintf("%d", node);
        char *argv[] = {(char *)bin, "exec", "--node", nodearg, "--", "cat", "/proc/self/status", NULL};
        int st;
        _cleanup_free_ char *out = run_narrowed(allowed[0], argv, &st);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 0);
        _cleanup_free_ char *got = status_field(out, "Cpus_allowed_list");
        ck_assert_ptr_nonnull(got);
        ck_assert_msg(streq(got, want), "Cpus_allowed_list %s, want node %d's %s", got, node, want);

        /* The memory policy is inherited: the command's mappings show prefer:N in numa_maps (the
         * default, issue 12 item 17), bind:N with --mem bind. */
        char *argv2[] = {(char *)bin, "exec", "--node", nodearg, "--", "cat", "/proc/self/numa_maps", NULL};
        _cleanup_free_ char *maps = run_narrowed(allowed[0], argv2, &st);
        _cleanup_free_ char *tag = xasprintf(" prefer:%d ", node);
        if (*maps)
                ck_assert_msg(strstr(maps, tag), "numa_maps without%s:\n%s", tag, maps);
        char *argvb[] = {(char *)bin, "exec", "--mem", "bind", "--node", nodearg, "--", "cat", "/proc/self/numa_maps", NULL};
        _cleanup_free_ char *maps3 = run_narrowed(allowed[0], argvb, &st);
        _cleanup_free_ char *tag3 = xasprintf(" bind:%d ", node);
        if (*maps3)
                ck_assert_msg(strstr(maps3, tag3), "numa_maps without%s:\n%s", tag3, maps3);

        /* With a GPU here (and a known node), --gpu 0 binds to the GPU's node. */
        struct affinity_map m;
        char *err = NULL;
        if (affinity_compute(facts, &m, &err) == 0) {
                if (m.v[0].set[AFFINITY_NODE].n) {
                        _cleanup_free_ char *gw = set_str(&m.v[0].set[AFFINITY_NODE]);
                        char *argv3[] = {(char *)bin, "exec", "--gpu", "0", "--", "cat", "/proc/self/status", NULL};
                        _cleanup_free_ char *o3 = run_narrowed(allowed[0], argv3, &st);
                        _cleanup_free_ char *g3 = status_field(o3, "Cpus_allowed_list");
                        ck_assert_ptr_nonnull(g3);
                        ck_assert_msg(streq(g3, gw), "--gpu 0: Cpus_allowed_list %s, want %s", g3, gw);
                }
                affinity_map_done(&m);
        } else
                free(err);
}
END_TEST
DEFINE_TEST(exec_binds_to_node, .description = "exec binds to node", .root = "this machine", .live = true);

UNIT_MAIN(.name = "affinity", .teardown = teardown, .live_missing = live_missing)
