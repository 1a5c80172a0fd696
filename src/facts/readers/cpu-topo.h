/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CPU topology of the root, read once per fact store and shared by the cpu probe (cpu.online,
 * cpu.sockets, cpu.cores), the PCI probe (the socket of a GPU) and affinity (the cores of a NUMA
 * node), so that they never disagree about which CPUs exist or how they group.
 *
 * Online CPUs: /sys/devices/system/cpu/online, else every cpuN directory whose own "online" is not
 * 0 (cpu0 often has none). Sockets: the distinct physical_package_id values, numbered densely in
 * id order (POWER9 numbers its chips 0 and 8). Cores: CPUs sharing a core_cpus_list (Linux 5.7+),
 * else thread_siblings_list, else the same (package, die_id, cluster_id, core_id): core_id alone
 * repeats per die (Threadripper 2990WX: core_id 0-7 on each of 4 dies), as
 * Documentation/admin-guide/cputopology.rst allows.
 */
#pragma once

#include "facts/facts.h"

struct cpu_topo {
        int err;                 /* 0, or -errno when no CPU list could be had (then n == 0) */
        const char *online_src;  /* the file or directory the list came from */
        unsigned *cpus;          /* online CPUs, ascending */
        size_t n;
        int *socket;             /* per CPU: dense package index, -1 when not in the tree */
        int *core;               /* per CPU: dense core index (global), -1 when not in the tree or
                                  * not loaded (cpu_topo_cores) */
        size_t known;            /* CPUs with a package */
        int nsockets, ncores;    /* 0 when no CPU has topology (ncores: or cores not loaded) */
        bool cores_loaded;
};

/* The store's topology (loaded on first use, owned by the store): online CPUs and packages, one
 * file per CPU. */
const struct cpu_topo *cpu_topo_get(struct facts *f);
/* The same with each CPU's core too (its sibling list, a second file per CPU), loaded on first
 * use: cpu.cores and the affinity map need it, cpu.sockets and a GPU's socket do not. */
const struct cpu_topo *cpu_topo_cores(struct facts *f);

/* Index of CPU in t->cpus, or -1. */
long cpu_topo_index(const struct cpu_topo *t, unsigned cpu);
