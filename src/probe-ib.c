/* SPDX-License-Identifier: MIT */
/* ib.: not probed yet (placeholder while the probe is written). */
#include "facts.h"
#include "probes.h"

const struct probe probe_ib = {
        .name = "ib",
        .prefixes = {"ib."},
};
