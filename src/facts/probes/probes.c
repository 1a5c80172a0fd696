/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

#include "facts/probes/probes.h"

/* The probes of facts/ itself, and room for those of the layers above it (nccl/), which cannot be
 * named here: they add themselves with facts_register_probe before main runs. */
#define OWN_PROBES \
        &probe_cpu, &probe_numa, &probe_mem,  &probe_thp, &probe_sysctl, &probe_swap, \
        &probe_kernel, &probe_pci, &probe_ib, &probe_net, &probe_storage, &probe_boot, &probe_affinity, \
        &probe_iommu, &probe_edac, &probe_limits, &probe_slurm, &probe_cmdline, &probe_service, &probe_tuner, &probe_nvml, &probe_xid, &probe_aer, \
        &probe_root, &probe_counters
const struct probe *probe_table[PROBES_MAX] = {OWN_PROBES};
size_t probe_count = ARRAY_SIZE(((const struct probe *[]){OWN_PROBES}));

void facts_register_probe(const struct probe *p)
{
        for (size_t i = 0; i < probe_count; i++)
                if (probe_table[i] == p)
                        return;
        /* More probes than PROBES_MAX is a mistake of the build, seen by every test that reads a fact. */
        if (probe_count >= PROBES_MAX)
                abort();
        probe_table[probe_count++] = p;
}
