/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPU -> NUMA node -> CPU sets, from the fact store (gpu.N.numa_node, numa.node.N.cpus, cpu.online)
 * and the CPU topology files under the root (core_cpus_list, or thread_siblings_list on kernels
 * before 5.7: Documentation/admin-guide/cputopology.rst). Policies and the file format are in
 * affinity.h.
 */
#include "facts/readers/affinity.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "facts/readers/cpu-topo.h"
#include "base/file-format.h"
#include "base/parse.h"

#define CPU_DIR "/sys/devices/system/cpu"

static const char *const policy_names[] = {"node", "share", "share-nosmt"};

const char *affinity_policy_name(enum affinity_policy p) { return p < _AFFINITY_MAX ? policy_names[p] : "?"; }

int affinity_policy_parse(const char *s, enum affinity_policy *ret)
{
        for (size_t i = 0; i < ARRAY_SIZE(policy_names); i++)
                if (streq(s, policy_names[i])) {
                        *ret = (enum affinity_policy)i;
                        return 0;
                }
        return -EINVAL;
}

void affinity_map_done(struct affinity_map *m)
{
        for (size_t i = 0; i < m->n; i++) {
                free(m->v[i].address);
                free(m->v[i].why);
                for (size_t k = 0; k < _AFFINITY_MAX; k++)
                        free(m->v[i].set[k].cpus);
        }
        free(m->v);
        *m = (struct affinity_map){0};
}

static bool has_cpu(const unsigned *v, size_t n, unsigned cpu)
{
        for (size_t i = 0; i < n; i++)
                if (v[i] == cpu)
                        return true;
        return false;
}

/* A string fact's CPU list; -errno when absent, unreadable or garbage. */
static int fact_cpulist(struct facts *f, const char *name, unsigned **ret)
{
        const struct fact *fc = facts_get(f, name);
        if (!fc || fc->status != FACT_OK)
                return -ENOENT;
        if (!*fc->str) {
                *ret = NULL;
                return 0;
        }
        return parse_cpulist(fc->str, ret);
}

/* One physical core: its hardware threads inside the node, lowest first. */
struct core {
        unsigned *cpus;
        size_t n;
};

/* Group the node's CPUs into cores as the shared topology reader counts them (cpu-topo.c: sibling
 * lists, else package/die/cluster/core ids). A CPU without readable topology is its own core (a VM
 * without SMT looks like that too). Cores come in order of their lowest CPU. */
static size_t node_cores(struct facts *f, const unsigned *cpus, size_t n, struct core **ret)
{
        const struct cpu_topo *t = cpu_topo_cores(f);
        struct core *cores = xcalloc(n + 1, sizeof(*cores));
        size_t nc = 0;
        bool *taken = xcalloc(n + 1, sizeof(*taken));
        int *key = xcalloc(n + 1, sizeof(*key));
        for (size_t i = 0; i < n; i++) {
                long k = cpu_topo_index(t, cpus[i]);
                key[i] = k >= 0 ? t->core[k] : -1;
        }
        for (size_t i = 0; i < n; i++) {
                if (taken[i])
                        continue;
                struct core *c = &cores[nc++];
                c->cpus = xcalloc(n, sizeof(unsigned));
                /* cpus[] is sorted, so walking it keeps the core's threads sorted. */
                for (size_t j = i; j < n; j++)
                        if (j == i || (key[i] >= 0 && key[j] == key[i])) {
                                taken[j] = true;
                                c->cpus[c->n++] = cpus[j];
                        }
        }
        free(key);
        free(taken);
        *ret = cores;
        return nc;
}

/* Frees the N cores of C and C itself; returns NULL. */
static struct core *cores_free(struct core *c, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(c[i].cpus);
        free(c);
        return NULL;
}

static int cmp_unsigned(const void *a, const void *b)
{
        unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
        return x < y ? -1 : x > y;
}

/* Fill the sets of every GPU on NODE: the node's CPUs, and the k-th exclusive share of its cores. */
static void place_node(struct facts *f, struct affinity_map *m, int node, const unsigned *online, int nonline)
{
        size_t on_node = 0;
        for (size_t i = 0; i < m->n; i++)
                on_node += m->v[i].numa_node == node;
        _cleanup_free_ char *name = xasprintf("numa.node.%d.cpus", node);
        _cleanup_free_ unsigned *all = NULL;
        int n = fact_cpulist(f, name, &all);
        if (n < 0) {
                for (size_t i = 0; i < m->n; i++)
                        if (m->v[i].numa_node == node && !m->v[i].why)
                                m->v[i].why = xasprintf("the CPUs of NUMA node %d are unknown (%s)", node, name);
                return;
        }
        /* Only online CPUs can run anything. */
        size_t k = 0;
        for (int i = 0; i < n; i++)
                if (nonline < 0 || has_cpu(online, (size_t)nonline, all[i]))
                        all[k++] = all[i];
        if (k == 0) {
                for (size_t i = 0; i < m->n; i++)
                        if (m->v[i].numa_node == node && !m->v[i].why)
                                m->v[i].why = xasprintf("NUMA node %d has no online CPUs (memory-only node)", node);
                return;
        }
        struct core *cores;
        size_t ncores = node_cores(f, all, k, &cores);
        size_t share = ncores / on_node, rank = 0;
        for (size_t i = 0; i < m->n; i++) {
                struct gpu_affinity *g = &m->v[i];
                if (g->numa_node != node)
                        continue;
                g->set[AFFINITY_NODE].cpus = xmalloc(k * sizeof(unsigned));
                memcpy(g->set[AFFINITY_NODE].cpus, all, k * sizeof(unsigned));
                g->set[AFFINITY_NODE].n = k;
                if (share == 0) {
                        if (!g->why)
                                g->why = xasprintf("NUMA node %d has %zu cores for %zu GPUs: no exclusive share", node,
                                                   ncores, on_node);
                        rank++;
                        continue;
                }
                struct cpuset_list *smt = &g->set[AFFINITY_SHARE], *one = &g->set[AFFINITY_SHARE_NOSMT];
                smt->cpus = xcalloc(k, sizeof(unsigned));
                one->cpus = xcalloc(share, sizeof(unsigned));
                for (size_t c = rank * share; c < (rank + 1) * share; c++) {
                        memcpy(smt->cpus + smt->n, cores[c].cpus, cores[c].n * sizeof(unsigned));
                        smt->n += cores[c].n;
                        one->cpus[one->n++] = cores[c].cpus[0];
                }
                qsort_safe(smt->cpus, smt->n, sizeof(unsigned), cmp_unsigned);
                rank++;
        }
        cores_free(cores, ncores);
}

/* GPU I's index, address and NUMA node (or why its locality is unknown) into G; -EINVAL, with ERR,
 * when its address from the tree is not a PCI address: the address is a field of
 * gpu-affinity.conf, and a newline in it would write a line of its own. */
static int gpu_place(struct facts *f, size_t i, struct gpu_affinity *g, char **err)
{
        g->index = (unsigned)i;
        g->numa_node = -1;
        _cleanup_free_ char *an = xasprintf("gpu.%zu.address", i), *nn = xasprintf("gpu.%zu.numa_node", i);
        const struct fact *a = facts_get(f, an), *nf = facts_get(f, nn);
        const char *why = a && a->status == FACT_OK ? ff_check(FF_GPU_AFFINITY, FF_ADDRESS, a->str) : NULL;
        if (why) {
                *err = ff_refusal(FF_GPU_AFFINITY, "the GPU address", a->str, a->source, why);
                return -EINVAL;
        }
        g->address = xstrdup(a && a->status == FACT_OK ? a->str : "?");
        bool neg;
        uint64_t v;
        if (!nf || nf->status != FACT_OK || !fact_number(nf, &neg, &v))
                g->why = xasprintf("locality unknown: %s is %s", nn, nf && nf->status == FACT_ABSENT ? "absent" : "unreadable");
        else if (neg)
                g->why = xasprintf("locality unknown: numa_node is -1 (the firmware does not say which NUMA "
                                   "node the GPU is attached to)");
        else if (v > 65535)
                g->why = xasprintf("locality unknown: implausible numa_node %" PRIu64, v);
        else
                g->numa_node = (int)v;
        return 0;
}

int affinity_compute(struct facts *f, struct affinity_map *ret, char **err)
{
        *ret = (struct affinity_map){0};
        const struct fact *cnt = facts_get(f, "gpu.nvidia_count");
        bool neg;
        uint64_t ngpu;
        if (!cnt || cnt->status != FACT_OK || !fact_number(cnt, &neg, &ngpu)) {
                *err = xasprintf("the GPUs are unknown: gpu.nvidia_count is %s%s%s",
                                 cnt && cnt->status == FACT_ABSENT ? "absent" : "unreadable", cnt ? ": " : "",
                                 cnt ? cnt->reason : "");
                return -EIO;
        }
        if (ngpu == 0) {
                *err = xstrdup("no NVIDIA GPU");
                return -ENODEV;
        }
        if (ngpu > 4096) {
                *err = xasprintf("implausible GPU count %" PRIu64, ngpu);
                return -EINVAL;
        }
        struct affinity_map m = {.v = xcalloc(ngpu, sizeof(*m.v)), .n = ngpu};
        /* NVIDIA GPUs come first in gpu.N, in PCI bus order (docs/FACTS.md). */
        for (size_t i = 0; i < m.n; i++)
                if (gpu_place(f, i, &m.v[i], err) < 0) {
                        affinity_map_done(&m);
                        return -EINVAL;
                }
        _cleanup_free_ unsigned *online = NULL;
        int nonline = fact_cpulist(f, "cpu.online", &online);
        for (size_t i = 0; i < m.n; i++) {
                int node = m.v[i].numa_node;
                bool first = node >= 0;
                for (size_t j = 0; j < i && first; j++)
                        first = m.v[j].numa_node != node;
                if (first)
                        place_node(f, &m, node, online, nonline);
        }
        *ret = m;
        return 0;
}

static void add_set(struct sbuf *b, const struct cpuset_list *s)
{
        if (!s->n) {
                sbuf_add(b, " -");
                return;
        }
        _cleanup_free_ char *l = format_cpulist(s->cpus, s->n);
        sbuf_addf(b, " %s", l);
}

char *affinity_map_render(const struct affinity_map *m)
{
        struct sbuf b = {0};
        sbuf_add(&b, "# llmtune gpu-affinity format 1: written by `llmtune apply`, printed by `llmtune affinity`.\n"
                     "# One line per NVIDIA GPU, fields separated by one space:\n"
                     "#   GPU ADDRESS NUMA_NODE NODE_CPUS SHARE_CPUS SHARE_NOSMT_CPUS\n"
                     "# GPU is CUDA's index with CUDA_DEVICE_ORDER=PCI_BUS_ID (PCI bus order). CPU sets are kernel\n"
                     "# CPU lists: NODE_CPUS every CPU of the GPU's NUMA node; SHARE_CPUS an exclusive equal share of\n"
                     "# that node's cores per GPU on the node, with SMT siblings; SHARE_NOSMT_CPUS one thread per\n"
                     "# core of that share. \"-\": unknown (NUMA_NODE -1) or impossible (fewer cores than GPUs).\n");
        for (size_t i = 0; i < m->n; i++) {
                const struct gpu_affinity *g = &m->v[i];
                if (g->why) {
                        _cleanup_free_ char *why = ff_comment(FF_GPU_AFFINITY, g->why);
                        sbuf_addf(&b, "# GPU %u: %s\n", g->index, why);
                }
                sbuf_addf(&b, "%u %s %d", g->index, g->address, g->numa_node);
                for (size_t k = 0; k < _AFFINITY_MAX; k++)
                        add_set(&b, &g->set[k]);
                sbuf_add(&b, "\n");
        }
        return sbuf_steal(&b);
}

char *affinity_conf_render(struct facts *f, char **err)
{
        struct affinity_map m;
        if (affinity_compute(f, &m, err) < 0)
                return NULL;
        char *s = affinity_map_render(&m);
        affinity_map_done(&m);
        return s;
}

static int parse_set(const char *field, struct cpuset_list *ret)
{
        *ret = (struct cpuset_list){0};
        if (streq(field, "-"))
                return 0;
        int n = parse_cpulist(field, &ret->cpus);
        if (n <= 0)
                return n < 0 ? n : -EINVAL;
        ret->n = (size_t)n;
        return 0;
}

int affinity_conf_parse(const char *text, struct affinity_map *ret, char **err)
{
        struct affinity_map m = {0};
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(text);
        while (line_next(&it)) {
                char *line = it.line;
                unsigned lineno = it.lineno;
                strip_trailing(line);
                if (!*line || line[0] == '#')
                        continue;
                char *fields[7] = {0};
                size_t nf = 0;
                for (char *tok = strtok(line, " \t"); tok; tok = strtok(NULL, " \t"))
                        if (nf < ARRAY_SIZE(fields))
                                fields[nf++] = tok;
                        else
                                nf++;
                int64_t idx, node;
                const char *why = NULL;
                if (nf != 6)
                        why = "expected 6 fields: GPU ADDRESS NUMA_NODE NODE_CPUS SHARE_CPUS SHARE_NOSMT_CPUS";
                else if (parse_i64(fields[0], &idx) < 0 || idx < 0 || idx > 65535 || idx != (int64_t)m.n)
                        why = "GPU must be the next index, counting from 0";
                else if (parse_i64(fields[2], &node) < 0 || node < -1 || node > 65535)
                        why = "NUMA_NODE must be -1 or a node number";
                if (!why) {
                        struct gpu_affinity g = {.index = (unsigned)idx, .numa_node = (int)node,
                                                 .address = xstrdup(fields[1])};
                        for (size_t k = 0; k < _AFFINITY_MAX && !why; k++)
                                if (parse_set(fields[3 + k], &g.set[k]) < 0)
                                        why = "a CPU set is neither a CPU list nor \"-\"";
                        if (!why && node < 0)
                                for (size_t k = 0; k < _AFFINITY_MAX && !why; k++)
                                        if (g.set[k].n)
                                                why = "a GPU with NUMA_NODE -1 has no CPU set";
                        m.v = xrealloc(m.v, (m.n + 1) * sizeof(*m.v));
                        m.v[m.n++] = g;
                }
                if (why) {
                        *err = xasprintf("line %u: %s", lineno, why);
                        affinity_map_done(&m);
                        return -EINVAL;
                }
        }
        *ret = m;
        return 0;
}

int affinity_bind_cpus(const struct cpuset_list *s)
{
        if (!s->n)
                return -EINVAL;
        unsigned max = s->cpus[s->n - 1];
        size_t size = CPU_ALLOC_SIZE(max + 1);
        cpu_set_t *set = CPU_ALLOC(max + 1);
        if (!set)
                return -ENOMEM;
        CPU_ZERO_S(size, set);
        for (size_t i = 0; i < s->n; i++)
                CPU_SET_S(s->cpus[i], size, set);
        int rc = sched_setaffinity(0, size, set) < 0 ? -errno : 0;
        CPU_FREE(set);
        return rc;
}

/* From <linux/mempolicy.h>; the raw syscall avoids a dependency on libnuma. */
#define LT_MPOL_PREFERRED 1
#define LT_MPOL_BIND 2

int affinity_bind_memory(int node, enum affinity_mem mode)
{
        if (mode == AFFINITY_MEM_NONE)
                return 0;
        if (node < 0 || node > 65535)
                return -EINVAL;
        size_t bits = 8 * sizeof(unsigned long);
        size_t words = (size_t)node / bits + 1;
        _cleanup_free_ unsigned long *mask = xcalloc(words, sizeof(unsigned long));
        mask[(size_t)node / bits] |= 1UL << ((size_t)node % bits);
        /* maxnode counts bits, and the kernel ignores the last one (set_mempolicy(2) NOTES), so +1. */
        long rc = syscall(SYS_set_mempolicy, mode == AFFINITY_MEM_BIND ? LT_MPOL_BIND : LT_MPOL_PREFERRED, mask,
                          words * bits + 1);
        return rc < 0 ? -errno : 0;
}

void affinity_reset_memory(void) { (void)syscall(SYS_set_mempolicy, 0 /* MPOL_DEFAULT */, NULL, 0UL); }
