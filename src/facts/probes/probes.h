/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The probe table: one probe per fact source, each in its own probe-*.c file. */
#pragma once

#include <stddef.h>

#include "facts/facts.h"

extern const struct probe probe_cpu;     /* cpu.*     probe-cpu.c */
extern const struct probe probe_numa;    /* numa.*    probe-numa.c */
extern const struct probe probe_mem;     /* mem.*     probe-mem.c */
extern const struct probe probe_thp;     /* thp.*     probe-mem.c */
extern const struct probe probe_sysctl;  /* sysctl.*  probe-sysctl.c */
extern const struct probe probe_swap;    /* swap.*    probe-swap.c */
extern const struct probe probe_kernel;  /* kernel.*, module.*, modprobe.*, nvidia.*  probe-kernel.c */
extern const struct probe probe_pci;     /* gpu.*, nvswitch.*, nvme.*, accel.*  probe-pci.c */
extern const struct probe probe_ib;      /* ib.*      probe-ib.c */
extern const struct probe probe_net;     /* net.*     probe-net.c */
extern const struct probe probe_storage; /* md.*, mount.*  probe-storage.c */
extern const struct probe probe_affinity; /* affinity.* probe-affinity.c */
extern const struct probe probe_boot;    /* boot.*    probe-boot.c */
extern const struct probe probe_iommu;   /* iommu.*   probe-iommu.c */
extern const struct probe probe_edac;    /* edac.*    probe-edac.c */
extern const struct probe probe_limits;  /* limits.*  probe-limits.c */
extern const struct probe probe_slurm;   /* slurm.*   probe-slurm.c */
extern const struct probe probe_cmdline; /* cmdline.* probe-cmdline.c */
extern const struct probe probe_service; /* service.*, gpudirect.*  probe-service.c */
extern const struct probe probe_tuner;   /* tuner.*   probe-tuner.c (boot-time governor/THP tuners) */
extern const struct probe probe_xid;     /* xid.*     probe-xid.c (kernel log, rules/xid-catalog.tsv) */
extern const struct probe probe_aer;     /* aer.*     probe-aer.c */
extern const struct probe probe_counters; /* counters.* counters.c (the state growth is judged against) */
extern const struct probe probe_nvml;    /* nvml.*    probe-nvml.c (NVML, or an nvidia-smi capture) */
extern const struct probe probe_root;    /* root.*    probe-root.c (how the tree is read) */

/* Every probe: facts/'s own, then those a layer above registered (probe_nccl, nccl/probe-nccl.c). */
#define PROBES_MAX 32
extern const struct probe *probe_table[PROBES_MAX];
extern size_t probe_count;
/* Adds a probe of a layer above facts/ (nccl/) to the table; called from a constructor of that
 * layer, before any struct facts exists. Adding one twice adds it once. */
void facts_register_probe(const struct probe *p);

/* Whether the kernel.release fact (probe-kernel.c) is Linux MAJ.MIN or later: 1 or 0, -ENODATA
 * when the release is unknown or does not start "MAJ.MIN". *ret_release (may be NULL): the
 * release when the fact is there, else NULL. */
int kernel_release_at_least(struct facts *f, unsigned maj, unsigned min, const char **ret_release);

/* Shared by probes that need /proc/meminfo values (probe-mem.c): KEY's value in bytes (a value
 * without a unit is kB). -ENOENT without the key, -EBADMSG for another unit or no number. */
int meminfo_bytes(struct root *r, const char *key, uint64_t *ret);
/* The same of meminfo text DATA: /proc/meminfo's, or a NUMA node's ("Node N KEY: ..." lines). */
int meminfo_text_bytes(const char *data, const char *key, uint64_t *ret);
/* A unitless /proc/meminfo count (HugePages_Total). */
int meminfo_count(struct root *r, const char *key, uint64_t *ret);

/* The NCCL catalog for this run (probe-nccl.c); NULL when the data directory is unknown. */
struct nccl_catalog;
const struct nccl_catalog *facts_nccl_catalog(struct facts *f);
