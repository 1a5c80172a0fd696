/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probes.h"

const struct probe *const probe_table[] = {
        &probe_cpu, &probe_numa, &probe_mem,  &probe_thp, &probe_sysctl, &probe_swap,
        &probe_kernel, &probe_pci, &probe_ib, &probe_net, &probe_storage, &probe_nccl, &probe_boot, &probe_affinity,
        &probe_iommu, &probe_edac, &probe_limits, &probe_slurm, &probe_service, &probe_tuner, &probe_nvml, &probe_xid, &probe_aer,
        &probe_root, &probe_counters,
};
const size_t probe_count = ARRAY_SIZE(probe_table);
