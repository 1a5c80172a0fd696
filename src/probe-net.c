/* SPDX-License-Identifier: MIT */
/* net.: not probed yet (placeholder while the probe is written). */
#include "facts.h"
#include "probes.h"

const struct probe probe_net = {
        .name = "net",
        .prefixes = {"net."},
};
