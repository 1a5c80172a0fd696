/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * edac.*: memory errors counted by the EDAC memory controller drivers since boot
 * (Documentation/admin-guide/ras.rst, Documentation/ABI/testing/sysfs-devices-edac).
 *   edac.count                  memory controllers (mc0, mc1, ...)
 *   edac.MC.{ce_count,ue_count} per controller, kernel names
 *   edac.ce_count, edac.ue_count sums: corrected, uncorrected
 */
#include <errno.h>

#include "facts/facts.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

#define MC_DIR "/sys/devices/system/edac/mc"

static int edac_run(struct facts *f)
{
        struct root *r = facts_root(f);
        struct strv names = {0};
        int rc = root_list(r, MC_DIR, &names);
        if (rc < 0) {
                const char *why = "no EDAC driver for the memory controller (virtual machine, or the driver is not "
                                  "loaded)";
                if (rc == -ENOENT) {
                        fact_absent(f, MC_DIR, why, "edac.count");
                        fact_absent(f, MC_DIR, why, "edac.ce_count");
                        fact_absent(f, MC_DIR, why, "edac.ue_count");
                } else {
                        fact_unreadable(f, MC_DIR, rc, NULL, "edac.count");
                        fact_unreadable(f, MC_DIR, rc, NULL, "edac.ce_count");
                        fact_unreadable(f, MC_DIR, rc, NULL, "edac.ue_count");
                }
                return 0;
        }
        static const char *const counters[] = {"ce_count", "ue_count"};
        uint64_t sum[2] = {0, 0};
        int bad[2] = {0, 0};
        char *bad_path[2] = {NULL, NULL};
        int64_t n = 0;
        for (size_t i = 0; i < names.n; i++) {
                uint64_t idx;
                if (!startswith(names.v[i], "mc") || parse_u64(names.v[i] + 2, &idx) < 0)
                        continue;
                n++;
                for (int k = 0; k < 2; k++) {
                        _cleanup_free_ char *p = xasprintf(MC_DIR "/%s/%s", names.v[i], counters[k]);
                        _cleanup_free_ char *line = NULL;
                        uint64_t v;
                        rc = root_read_line(r, p, &line);
                        if (rc == 0)
                                rc = parse_u64(line, &v);
                        if (rc == 0) {
                                fact_uint(f, p, v, "edac.%s.%s", names.v[i], counters[k]);
                                sum[k] = v > UINT64_MAX - sum[k] ? UINT64_MAX : sum[k] + v;
                                continue;
                        }
                        fact_unreadable(f, p, rc, line, "edac.%s.%s", names.v[i], counters[k]);
                        if (!bad[k]) {
                                bad[k] = rc;
                                bad_path[k] = xstrdup(p);
                        }
                }
        }
        fact_int(f, MC_DIR, n, "edac.count");
        for (int k = 0; k < 2; k++) {
                if (n == 0)
                        fact_absent(f, MC_DIR, "no memory controller registered with EDAC", "edac.%s", counters[k]);
                else if (bad[k])
                        fact_unreadable(f, bad_path[k], bad[k], "a controller's counter is unreadable", "edac.%s",
                                        counters[k]);
                else
                        fact_uint(f, MC_DIR, sum[k], "edac.%s", counters[k]);
                free(bad_path[k]);
        }
        strv_done(&names);
        return 0;
}

const struct probe probe_edac = {
        .name = "edac",
        .prefixes = {"edac."},
        .run = edac_run,
};
