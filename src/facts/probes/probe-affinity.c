/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * affinity.*: whether /etc/llmtune/gpu-affinity.conf (the GPU -> NUMA node -> CPU map that apply
 * writes for other launchers, format in affinity.h) matches this machine's topology now.
 */
#include <errno.h>

#include "facts/readers/affinity.h"
#include "facts/facts.h"
#include "facts/probes/probes.h"

static int affinity_run(struct facts *f)
{
        char *err = NULL;
        _cleanup_free_ char *want = affinity_conf_render(f, &err);
        if (!want) {
                fact_absent(f, AFFINITY_CONF, err ? err : "no GPU", "affinity.conf.current");
                free(err);
                return 0;
        }
        const char *data;
        size_t len;
        int rc = fact_read_present(f, AFFINITY_CONF, &data, &len, "affinity.conf.present");
        if (rc == -ENOENT) {
                fact_bool(f, AFFINITY_CONF, false, "affinity.conf.current");
                return 0;
        }
        if (rc < 0) {
                fact_unreadable(f, AFFINITY_CONF, rc, NULL, "affinity.conf.current");
                return rc;
        }
        fact_bool(f, AFFINITY_CONF, len == strlen(want) && memcmp(data, want, len) == 0, "affinity.conf.current");
        return 0;
}

const struct probe probe_affinity = {
        .name = "affinity",
        .prefixes = {"affinity."},
        .run = affinity_run,
};
