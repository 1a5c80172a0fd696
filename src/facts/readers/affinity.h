/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPU -> NUMA node -> CPU sets (Documentation/ABI/testing/sysfs-bus-pci: numa_node, local_cpulist).
 * GPUs are the NVIDIA GPUs of the fact store in PCI bus order, which is CUDA's numbering with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID. A GPU's node is its sysfs numa_node; -1 means the firmware did not
 * say, and then there is no CPU set (local_cpulist lists every CPU: not "local to everything").
 *
 * Policies:
 *   node        every CPU of the GPU's NUMA node (ranks on one node share them)
 *   share       an exclusive, equal share of the node's physical cores per GPU on that node, with
 *               their SMT siblings: the node's cores in order, floor(cores / GPUs-on-node) each,
 *               the k-th GPU of the node (in PCI order) taking the k-th share; leftover cores
 *               belong to no rank. No two ranks ever share a core.
 *   share-nosmt the same cores, one hardware thread (the lowest-numbered) per core
 *
 * /etc/llmtune/gpu-affinity.conf (format 1), written by apply, read by other launchers:
 *   # comment lines start with '#'; one line per GPU, fields separated by one space:
 *   GPU ADDRESS NUMA_NODE NODE_CPUS SHARE_CPUS SHARE_NOSMT_CPUS
 *   e.g. "0 0000:07:00.0 3 48-63,176-191 48-55,176-183 48-55"
 * GPU is the CUDA index (PCI bus order); CPU sets are kernel CPU lists; a NUMA_NODE of -1 has
 * "-" for every CPU set, as has a share that cannot be made (fewer cores than GPUs on the node).
 */
#pragma once

#include "facts/facts.h"

enum affinity_policy {
        AFFINITY_NODE,
        AFFINITY_SHARE,
        AFFINITY_SHARE_NOSMT,
        _AFFINITY_MAX,
};

struct cpuset_list {
        unsigned *cpus; /* sorted */
        size_t n;       /* 0: none (unknown locality, or no share possible) */
};

struct gpu_affinity {
        unsigned index;    /* CUDA index under CUDA_DEVICE_ORDER=PCI_BUS_ID */
        char *address;     /* PCI address "0000:07:00.0" */
        int numa_node;     /* -1: unknown */
        char *why;         /* why a set is missing (unknown locality, too few cores), else NULL */
        struct cpuset_list set[_AFFINITY_MAX];
};

struct affinity_map {
        struct gpu_affinity *v;
        size_t n;
};

const char *affinity_policy_name(enum affinity_policy p);
int affinity_policy_parse(const char *s, enum affinity_policy *ret);

/* Compute the map for every NVIDIA GPU of F. Returns 0, or a negative errno with *err (malloc'd)
 * when there is no GPU or the facts are unreadable. */
int affinity_compute(struct facts *f, struct affinity_map *ret, char **err);
void affinity_map_done(struct affinity_map *m);

/* Render the map in the gpu-affinity.conf format. */
char *affinity_map_render(const struct affinity_map *m);
/* Parse gpu-affinity.conf text; on error *err says which line and why. */
int affinity_conf_parse(const char *text, struct affinity_map *ret, char **err);

/* Content of /etc/llmtune/gpu-affinity.conf for the facts (documented format); NULL with *err
 * when there is no GPU. */
char *affinity_conf_render(struct facts *f, char **err);

/* Memory policy for the bound process (set_mempolicy(2)). */
enum affinity_mem {
        AFFINITY_MEM_BIND,      /* MPOL_BIND: allocate on the node only (numactl --membind) */
        AFFINITY_MEM_PREFERRED, /* MPOL_PREFERRED: the node first, others when it is full */
        AFFINITY_MEM_NONE,      /* leave the memory policy alone */
};

/* Bind the calling thread, and what it execs, to the CPUs of S (sched_setaffinity(2)). Returns 0 or
 * -errno (-EINVAL: none of the CPUs is allowed, e.g. outside the cgroup's cpuset). */
int affinity_bind_cpus(const struct cpuset_list *s);
/* Set the memory policy of the calling thread to NODE (inherited across fork and execve). */
int affinity_bind_memory(int node, enum affinity_mem mode);
/* Back to the default memory policy (MPOL_DEFAULT: allocate on the local node). */
void affinity_reset_memory(void);

#define AFFINITY_CONF "/etc/llmtune/gpu-affinity.conf"
