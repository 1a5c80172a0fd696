/* SPDX-License-Identifier: MIT */
/*
 * sysctl.*: any sysctl by name, read from ROOT/proc/sys (dots become slashes, sysctl(8)).
 * Listing all facts shows the ones training hosts care about; any other is read on demand.
 */
#include <errno.h>
#include <sys/stat.h>

#include "facts.h"
#include "parse.h"
#include "probes.h"

static const char *const well_known[] = {
        "kernel.shmmax",        "kernel.shmall",       "kernel.shmmni",     "kernel.numa_balancing",
        "vm.swappiness",        "vm.overcommit_memory", "vm.zone_reclaim_mode", "vm.max_map_count",
        "vm.nr_hugepages",      "vm.min_free_kbytes",  "kernel.osrelease",
};

static int sysctl_lookup(struct facts *f, const char *name)
{
        const char *key = name + strlen("sysctl.");
        /* Refuse names that could walk the tree: the root handle would clamp them, but a
         * "sysctl" that is not under /proc/sys is a typo the user should hear about. */
        if (!*key || strstr(key, "..") || strchr(key, '/') || key[0] == '.')
                return -EINVAL;
        _cleanup_free_ char *path = xasprintf("/proc/sys/%s", key);
        for (char *p = path + strlen("/proc/sys/"); *p; p++)
                if (*p == '.')
                        *p = '/';
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(facts_root(f), path, &line);
        if (rc == -ENOENT || rc == -ENOTDIR) {
                /* vm.nr_hugepages is the default-size pool that /proc/meminfo counts as
                 * HugePages_Total (Documentation/admin-guide/mm/hugetlbpage.rst): a tree without
                 * /proc/sys still says it there. */
                uint64_t pages;
                if (streq(name, "sysctl.vm.nr_hugepages") && meminfo_count(facts_root(f), "HugePages_Total", &pages) == 0) {
                        fact_uint(f, "/proc/meminfo", pages, "%s", name);
                        return 0;
                }
                struct stat st;
                bool in_tree = root_is_live(facts_root(f)) || root_stat(facts_root(f), "/proc/sys", &st, true) == 0;
                fact_absent(f, path, in_tree ? "no such sysctl on this kernel" : "no /proc/sys in this tree", "%s",
                            name);
                return rc;
        }
        if (rc == -ENODATA) {
                fact_str(f, path, "", "%s", name);
                return 0;
        }
        if (rc < 0) {
                fact_unreadable(f, path, rc, NULL, "%s", name);
                return rc;
        }
        bool neg;
        uint64_t mag;
        if (parse_integer(line, &neg, &mag) == 0) {
                if (neg)
                        fact_int(f, path, (int64_t)(0 - mag), "%s", name);
                else
                        fact_uint(f, path, mag, "%s", name);
        } else
                fact_str(f, path, line, "%s", name);
        return 0;
}

static int sysctl_run(struct facts *f)
{
        for (size_t i = 0; i < ARRAY_SIZE(well_known); i++) {
                _cleanup_free_ char *name = xasprintf("sysctl.%s", well_known[i]);
                sysctl_lookup(f, name);
        }
        return 0;
}

const struct probe probe_sysctl = {
        .name = "sysctl",
        .prefixes = {"sysctl."},
        .run = sysctl_run,
        .lookup = sysctl_lookup,
};
