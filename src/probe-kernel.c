/* SPDX-License-Identifier: MIT */
/* kernel.", "module.", "modprobe.", "nvidia.: not probed yet (placeholder while the probe is written). */
#include "facts.h"
#include "probes.h"

const struct probe probe_kernel = {
        .name = "kernel",
        .prefixes = {"kernel.", "module.", "modprobe.", "nvidia."},
};
