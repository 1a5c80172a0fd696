/* SPDX-License-Identifier: MIT */
/* swap.: not probed yet (placeholder while the probe is written). */
#include "facts.h"
#include "probes.h"

const struct probe probe_swap = {
        .name = "swap",
        .prefixes = {"swap."},
};
