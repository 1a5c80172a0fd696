/* SPDX-License-Identifier: MIT */
/* md.", "mount.: not probed yet (placeholder while the probe is written). */
#include "facts.h"
#include "probes.h"

const struct probe probe_storage = {
        .name = "storage",
        .prefixes = {"md.", "mount."},
};
