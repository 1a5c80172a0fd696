/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/cpu-topo.h"

#include <errno.h>
#include <stdio.h>

#include "base/parse.h"

#define CPU_DIR "/sys/devices/system/cpu"
#define HANDLE_KEY "cpu-topo"

static void topo_free(void *p)
{
        struct cpu_topo *t = p;
        if (!t)
                return;
        free(t->cpus);
        free(t->socket);
        free(t->core);
        free(t);
}

static int cmp_uint(const void *x, const void *y)
{
        unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;
        return a < b ? -1 : a > b;
}

/* Online CPUs: the "online" list, else the cpuN directories whose own online is not 0. */
static int load_online(struct root *r, struct cpu_topo *t)
{
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(r, CPU_DIR "/online", &line);
        if (rc == 0) {
                t->online_src = CPU_DIR "/online";
                rc = parse_cpulist(line, &t->cpus);
                if (rc < 0)
                        return rc;
                t->n = (size_t)rc;
                qsort_safe(t->cpus, t->n, sizeof(*t->cpus), cmp_uint);
                return 0;
        }
        if (rc != -ENOENT)
                return rc;
        struct strv names = {0};
        rc = root_list(r, CPU_DIR, &names);
        if (rc < 0)
                return rc;
        t->online_src = CPU_DIR "/cpu*";
        t->cpus = xcalloc(names.n + 1, sizeof(*t->cpus));
        for (size_t i = 0; i < names.n; i++) {
                unsigned c;
                if (!parse_name_index(names.v[i], "cpu", &c))
                        continue;
                _cleanup_free_ char *on = NULL;
                rc = root_readf_line(r, &on, CPU_DIR "/cpu%u/online", c);
                if (rc < 0 && !root_gone(rc)) {
                        /* whether that CPU is online is unknown (no file: cpu0, always online) */
                        strv_done(&names);
                        return rc;
                }
                if (rc == 0 && streq(on, "0"))
                        continue;
                t->cpus[t->n++] = c;
        }
        strv_done(&names);
        if (t->n == 0)
                return -ENOENT;
        qsort_safe(t->cpus, t->n, sizeof(*t->cpus), cmp_uint);
        return 0;
}

static bool read_i64(struct root *r, unsigned cpu, const char *file, int64_t *ret)
{
        return root_readf_i64(r, ret, CPU_DIR "/cpu%u/topology/%s", cpu, file) == 0;
}

/* The lowest online CPU of the sibling list of CPU (core_cpus_list, then thread_siblings_list);
 * -1 when neither is readable. Offline siblings (SMT off) are not in t->cpus and do not count. */
static int64_t sibling_key(struct root *r, const struct cpu_topo *t, unsigned cpu)
{
        static const char *const files[] = {"core_cpus_list", "thread_siblings_list"};
        for (size_t k = 0; k < ARRAY_SIZE(files); k++) {
                _cleanup_free_ char *line = NULL;
                _cleanup_free_ unsigned *sib = NULL;
                if (root_readf_line(r, &line, CPU_DIR "/cpu%u/topology/%s", cpu, files[k]) < 0)
                        continue;
                int n = parse_cpulist(line, &sib);
                if (n <= 0)
                        continue;
                int64_t lowest = -1;
                for (int i = 0; i < n; i++)
                        if (cpu_topo_index(t, sib[i]) >= 0 && (lowest < 0 || sib[i] < lowest))
                                lowest = sib[i];
                if (lowest >= 0)
                        return lowest;
        }
        return -1;
}

struct key {
        int64_t a, b, c, d;
};

static int cmp_key(const void *x, const void *y)
{
        const struct key *p = x, *q = y;
        if (p->a != q->a)
                return p->a < q->a ? -1 : 1;
        if (p->b != q->b)
                return p->b < q->b ? -1 : 1;
        if (p->c != q->c)
                return p->c < q->c ? -1 : 1;
        return p->d < q->d ? -1 : p->d > q->d;
}

/* Dense ranks of the valid KEYS (the others get -1); returns how many distinct keys. */
static int rank_keys(const struct key *keys, const bool *valid, size_t n, int *ret)
{
        struct key *sorted = xcalloc(n + 1, sizeof(*sorted));
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
                if (valid[i])
                        sorted[m++] = keys[i];
        qsort_safe(sorted, m, sizeof(*sorted), cmp_key);
        size_t distinct = 0;
        for (size_t i = 0; i < m; i++)
                if (i == 0 || cmp_key(&sorted[i], &sorted[distinct - 1]) != 0)
                        sorted[distinct++] = sorted[i];
        for (size_t i = 0; i < n; i++) {
                const struct key *hit = valid[i] ? bsearch(&keys[i], sorted, distinct, sizeof(*sorted), cmp_key) : NULL;
                ret[i] = hit ? (int)(hit - sorted) : -1;
        }
        free(sorted);
        return (int)distinct;
}

/* Online CPUs and each one's package: all cpu.sockets and a GPU's socket need. */
static struct cpu_topo *load(struct facts *f)
{
        struct root *r = facts_root(f);
        struct cpu_topo *t = xcalloc(1, sizeof(*t));
        t->err = load_online(r, t);
        if (t->err < 0) {
                free(t->cpus);
                t->cpus = NULL;
                t->n = 0;
        }
        size_t n = t->n;
        t->socket = xcalloc(n + 1, sizeof(int));
        t->core = xcalloc(n + 1, sizeof(int));
        struct key *pk = xcalloc(n + 1, sizeof(*pk));
        bool *pv = xcalloc(n + 1, sizeof(bool));
        for (size_t i = 0; i < n; i++) {
                int64_t pkg;
                t->core[i] = -1;
                if (!read_i64(r, t->cpus[i], "physical_package_id", &pkg))
                        continue; /* hwloc's trimmed tarballs keep CPUs without topology */
                pk[i] = (struct key){pkg, 0, 0, 0};
                pv[i] = true;
                t->known++;
        }
        t->nsockets = rank_keys(pk, pv, n, t->socket);
        free(pk);
        free(pv);
        return t;
}

/* Each CPU's core, for the CPUs with a package: the lowest online CPU of its sibling list, else
 * (package, die, cluster, core_id), the package by its dense index (the same order as its id). */
static void load_cores(struct facts *f, struct cpu_topo *t)
{
        struct root *r = facts_root(f);
        size_t n = t->n;
        struct key *ck = xcalloc(n + 1, sizeof(*ck));
        bool *cv = xcalloc(n + 1, sizeof(bool));
        for (size_t i = 0; i < n; i++) {
                unsigned cpu = t->cpus[i];
                if (t->socket[i] < 0)
                        continue;
                int64_t sib = sibling_key(r, t, cpu);
                if (sib >= 0) {
                        ck[i] = (struct key){-1, sib, 0, 0};
                        cv[i] = true;
                        continue;
                }
                int64_t die = 0, cluster = 0, core;
                if (!read_i64(r, cpu, "core_id", &core))
                        continue;
                read_i64(r, cpu, "die_id", &die);
                read_i64(r, cpu, "cluster_id", &cluster);
                ck[i] = (struct key){t->socket[i], die, cluster, core};
                cv[i] = true;
        }
        /* Keys from sibling lists (a = -1) and from ids (a = package index) never collide: a CPU
         * either has a sibling list or not, and siblings share theirs. */
        t->ncores = rank_keys(ck, cv, n, t->core);
        t->cores_loaded = true;
        free(ck);
        free(cv);
}

static struct cpu_topo *topo_get(struct facts *f)
{
        struct cpu_topo *t = facts_handle(f, HANDLE_KEY);
        if (!t) {
                t = load(f);
                facts_set_handle(f, HANDLE_KEY, t, topo_free);
        }
        return t;
}

const struct cpu_topo *cpu_topo_get(struct facts *f) { return topo_get(f); }

const struct cpu_topo *cpu_topo_cores(struct facts *f)
{
        struct cpu_topo *t = topo_get(f);
        if (!t->cores_loaded)
                load_cores(f, t);
        return t;
}

long cpu_topo_index(const struct cpu_topo *t, unsigned cpu)
{
        const unsigned *hit = t->cpus ? bsearch(&cpu, t->cpus, t->n, sizeof(*t->cpus), cmp_uint) : NULL;
        return hit ? hit - t->cpus : -1;
}
