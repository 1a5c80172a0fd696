/* SPDX-License-Identifier: MIT */
/* gpu.", "nvswitch.", "nvme.: not probed yet (placeholder while the probe is written). */
#include "facts.h"
#include "probes.h"

const struct probe probe_pci = {
        .name = "pci",
        .prefixes = {"gpu.", "nvswitch.", "nvme."},
};
