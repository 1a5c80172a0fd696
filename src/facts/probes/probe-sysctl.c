/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sysctl.*: any sysctl by name, read from ROOT/proc/sys (dots become slashes, sysctl(8)).
 * Listing all facts shows the ones training hosts care about; any other is read on demand.
 *
 * sysctl.persistent.KEY: the value KEY gets at the next boot, from the last line that sets it in
 * sysctl.d(5) order (dropin-order.h), the file being the source. Where no file sets it the kernel's
 * default applies: known defaults are given with "kernel default" as the source, any other key is
 * absent with that reason. A runtime value that is right says nothing about the next boot.
 */
#include <errno.h>
#include <sys/stat.h>

#include "facts/readers/cmdline.h"
#include "facts/readers/dropin-order.h"
#include "facts/facts.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

static const char *const well_known[] = {
        "kernel.shmmax",        "kernel.shmall",       "kernel.shmmni",     "kernel.numa_balancing",
        "vm.swappiness",        "vm.overcommit_memory", "vm.zone_reclaim_mode", "vm.max_map_count",
        "vm.nr_hugepages",      "vm.min_free_kbytes",  "kernel.osrelease",
};

static void record(struct facts *f, const char *source, const char *value, const char *name)
{
        bool neg;
        uint64_t mag;
        if (parse_integer(value, &neg, &mag) == 0) {
                if (neg)
                        fact_int(f, source, (int64_t)(0 - mag), "%s", name);
                else
                        fact_uint(f, source, mag, "%s", name);
        } else
                fact_str(f, source, value, "%s", name);
}

/* Defaults of the kernels llmtune targets (64-bit), for keys rules look at persistently. NULL with
 * *err set: the default depends on a file that is there but cannot be read. */
/* What setup_numabalancing (kernel/sched/core.c) takes: any other value changes nothing. */
static bool numa_balancing_word(const char *v) { return v && (streq(v, "enable") || streq(v, "disable")); }

/* NULL with *BAD set: the command line that decides it could not be read. */
static const char *kernel_default(struct facts *f, const char *key, const struct fact **bad)
{
        /* include/uapi/linux/shm.h: SHMMAX = SHMALL = ULONG_MAX - (1UL << 24) since Linux 3.16 */
        if (streq(key, "kernel.shmmax") || streq(key, "kernel.shmall"))
                return "18446744073692774399";
        /* kernel/sched/fair.c check_numabalancing_enable(): on with more than one node (the
         * distributions' CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y), unless numa_balancing= says so */
        if (streq(key, "kernel.numa_balancing")) {
                const struct fact *n = facts_get(f, "numa.nodes");
                if (!n || n->status != FACT_OK)
                        return NULL;
                const struct fact *cl = facts_get(f, "kernel.cmdline");
                if (cl && cl->status == FACT_UNREADABLE) {
                        *bad = cl;
                        return NULL;
                }
                _cleanup_free_ char *v = NULL;
                if (cl && cl->status == FACT_OK && cmdline_get_key(cl->str, "numa_balancing", numa_balancing_word, &v))
                        return streq(v, "enable") ? "1" : "0";
                return n->mag > 1 ? "1" : "0";
        }
        return NULL;
}

static int persistent_lookup(struct facts *f, const char *name, const char *key)
{
        if (!*key || strstr(key, "..") || key[0] == '.')
                return -EINVAL;
        struct dropin_entries s;
        _cleanup_free_ char *bad = NULL;
        int rc = dropin_entries_load(facts_root(f), &dropin_sysctl, NULL, &s, &bad);
        if (rc < 0) {
                fact_unreadable(f, bad, rc, NULL, "%s", name);
                return rc;
        }
        const struct dropin_entry *last = dropin_effective(facts_root(f), &s, key);
        if (last) {
                record(f, last->file->path, last->value, name);
        } else {
                const struct fact *cmdline = NULL;
                const char *def = kernel_default(f, key, &cmdline);
                if (cmdline) {
                        _cleanup_free_ char *why = xasprintf("%s (numa_balancing= there decides the kernel default)",
                                                             cmdline->reason);
                        fact_unreadable(f, cmdline->source, 0, why, "%s", name);
                } else if (def)
                        record(f, "kernel default (no sysctl.d file sets it)", def, name);
                else
                        fact_absent(f, "/etc/sysctl.d", "no sysctl.d file sets it: the kernel default applies at boot",
                                    "%s", name);
        }
        dropin_entries_done(&s);
        return 0;
}

static int sysctl_lookup(struct facts *f, const char *name)
{
        const char *key = name + strlen("sysctl.");
        if (startswith(key, "persistent."))
                return persistent_lookup(f, name, key + strlen("persistent."));
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
        if (root_gone(rc)) {
                /* vm.nr_hugepages is the default-size pool that /proc/meminfo counts as
                 * HugePages_Total (Documentation/admin-guide/mm/hugetlbpage.rst): a tree without
                 * /proc/sys still says it there. */
                uint64_t pages;
                if (streq(name, "sysctl.vm.nr_hugepages") && meminfo_count(facts_root(f), "HugePages_Total", &pages) == 0) {
                        fact_uint(f, "/proc/meminfo", pages, "%s", name);
                        return 0;
                }
                struct stat st;
                bool in_tree = root_runs_here(facts_root(f)) || root_stat(facts_root(f), "/proc/sys", &st, true) == 0;
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
        record(f, path, line, name);
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
