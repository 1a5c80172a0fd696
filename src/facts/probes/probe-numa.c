/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * numa.*: NUMA nodes with their CPUs and memory. A node without CPUs is memory-only; one that the
 * NVIDIA driver reports in /proc/driver/nvidia/gpus/BDF/numa_status (POWER9 + V100 NVLink) is GPU
 * memory: neither is a CPU socket.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "facts/facts.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

#define NODE_DIR "/sys/devices/system/node"
#define NV_GPUS "/proc/driver/nvidia/gpus"

/* What could not be read of a source, for the facts it leaves unknown. */
struct numa_bad {
        char *path;
        int rc;
};

static void numa_bad_note(struct numa_bad *b, const char *path, int rc)
{
        if (rc < 0 && !root_gone(rc) && !b->path) {
                b->path = xstrdup(path);
                b->rc = rc;
        }
}

/* NUMA nodes the NVIDIA driver says hold GPU memory; *bad: a listing or numa_status that is there
 * but could not be read (a CPU-less node may then hold GPU memory or not). */
static void gpu_memory_nodes(struct root *r, struct strv *ret, struct numa_bad *bad)
{
        struct strv gpus = {0};
        int rc = root_list(r, NV_GPUS, &gpus);
        numa_bad_note(bad, NV_GPUS, rc);
        if (rc < 0)
                return;
        for (size_t i = 0; i < gpus.n; i++) {
                _cleanup_free_ char *p = xasprintf(NV_GPUS "/%s/numa_status", gpus.v[i]);
                const char *data;
                rc = root_read(r, p, &data, NULL);
                numa_bad_note(bad, p, rc);
                if (rc < 0)
                        continue;
                unsigned node;
                if (sscanf(data, "Node: %u", &node) == 1) {
                        _cleanup_free_ char *s = xasprintf("%u", node);
                        if (!strv_contains(ret, s))
                                strv_add(ret, s);
                }
        }
        strv_done(&gpus);
}

static void probe_node(struct facts *f, unsigned id, const struct strv *gpu_nodes, const struct numa_bad *gpu_bad,
                       int *cpu_nodes, struct numa_bad *cpu_bad)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *cpath = xasprintf(NODE_DIR "/node%u/cpulist", id);
        _cleanup_free_ char *list = NULL;
        int ncpu = 0;
        int rc = root_read_line(r, cpath, &list);
        if (rc == 0 || rc == -ENODATA) {
                ncpu = rc == 0 ? parse_cpulist(list, NULL) : 0;
                if (ncpu < 0)
                        fact_unreadable(f, cpath, ncpu, list, "numa.node.%u.cpus", id);
                else
                        fact_str(f, cpath, list ? list : "", "numa.node.%u.cpus", id);
        } else if (rc == -ENOENT)
                fact_absent(f, cpath, "no cpulist for the node in this tree", "numa.node.%u.cpus", id);
        else {
                fact_unreadable(f, cpath, rc, NULL, "numa.node.%u.cpus", id);
                /* whether the node has CPUs is unknown: its kind and the count of CPU nodes too */
                numa_bad_note(cpu_bad, cpath, rc);
        }
        int cpu_rc = rc;
        bool cpus_unknown = rc < 0 && rc != -ENODATA && !root_gone(rc);
        if (ncpu < 0)
                ncpu = 0;

        _cleanup_free_ char *mpath = xasprintf(NODE_DIR "/node%u/meminfo", id);
        const char *data;
        rc = root_read(r, mpath, &data, NULL);
        if (rc == -ENOENT)
                fact_absent(f, mpath, "no meminfo for the node in this tree", "numa.node.%u.mem_total", id);
        else if (rc < 0)
                fact_unreadable(f, mpath, rc, NULL, "numa.node.%u.mem_total", id);
        else {
                uint64_t bytes;
                if (meminfo_text_bytes(data, "MemTotal", &bytes) == 0)
                        fact_uint(f, mpath, bytes, "numa.node.%u.mem_total", id);
                else
                        fact_unreadable(f, mpath, 0, "no parsable MemTotal line", "numa.node.%u.mem_total", id);
        }

        _cleanup_free_ char *ids = xasprintf("%u", id);
        if (cpus_unknown) {
                fact_unreadable(f, cpath, cpu_rc, "whether the node has CPUs is unknown", "numa.node.%u.kind", id);
                return;
        }
        if (ncpu <= 0 && !strv_contains(gpu_nodes, ids) && gpu_bad->path) {
                fact_unreadable(f, gpu_bad->path, gpu_bad->rc, "whether the node holds GPU memory is unknown",
                                "numa.node.%u.kind", id);
                return;
        }
        const char *kind = ncpu > 0 ? "cpu" : strv_contains(gpu_nodes, ids) ? "gpu-memory" : "memory-only";
        fact_str(f, NODE_DIR, kind, "numa.node.%u.kind", id);
        if (ncpu > 0)
                (*cpu_nodes)++;
}

static int numa_run(struct facts *f)
{
        struct root *r = facts_root(f);
        struct strv names = {0}, gpu_nodes = {0};
        int rc = root_list(r, NODE_DIR, &names);
        if (root_gone(rc)) {
                /* Kernels built without NUMA have no node directory: one node holds everything. A
                 * foreign tree may just not have copied it. */
                fact_absent(f, NODE_DIR,
                            root_runs_here(r) ? "kernel without NUMA support (no " NODE_DIR ")"
                                            : "no " NODE_DIR " in this tree",
                            "numa.nodes");
                return 0;
        }
        if (rc < 0) {
                fact_unreadable(f, NODE_DIR, rc, NULL, "numa.nodes");
                return 0;
        }
        struct numa_bad gpu_bad = {0}, cpu_bad = {0};
        gpu_memory_nodes(r, &gpu_nodes, &gpu_bad);
        unsigned *ids = xcalloc(names.n + 1, sizeof(*ids));
        size_t n = 0;
        for (size_t i = 0; i < names.n; i++) {
                unsigned id;
                if (parse_name_index(names.v[i], "node", &id))
                        ids[n++] = id;
        }
        for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
                        unsigned t = ids[j];
                        ids[j] = ids[j - 1];
                        ids[j - 1] = t;
                }
        int cpu_nodes = 0;
        for (size_t i = 0; i < n; i++)
                probe_node(f, ids[i], &gpu_nodes, &gpu_bad, &cpu_nodes, &cpu_bad);
        _cleanup_free_ char *list = format_cpulist(ids, n);
        fact_str(f, NODE_DIR, list, "numa.node_list");
        fact_int(f, NODE_DIR, (int64_t)n, "numa.nodes");
        if (cpu_bad.path)
                fact_unreadable(f, cpu_bad.path, cpu_bad.rc, "a node's CPUs are unknown", "numa.cpu_nodes");
        else
                fact_int(f, NODE_DIR, cpu_nodes, "numa.cpu_nodes");
        free(cpu_bad.path);
        free(gpu_bad.path);
        free(ids);
        strv_done(&names);
        strv_done(&gpu_nodes);
        return 0;
}

const struct probe probe_numa = {
        .name = "numa",
        .prefixes = {"numa."},
        .run = numa_run,
};
