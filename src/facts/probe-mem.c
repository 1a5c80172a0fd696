/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mem.* and thp.*: total and available memory (/proc/meminfo), the size of /dev/shm, and
 * transparent hugepage "enabled"/"defrag" (Documentation/admin-guide/mm/transhuge.rst).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "facts.h"
#include "mounts.h"
#include "parse.h"
#include "probes.h"

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

/* Value of "Key:   N kB" in /proc/meminfo, in bytes. */
/* One "Key: value [kB]" line: the number, and whether it carried the kB unit. */
static int meminfo_value(struct root *r, const char *key, uint64_t *ret, bool *kb_unit)
{
        const char *data;
        int rc = root_read(r, "/proc/meminfo", &data, NULL);
        if (rc < 0)
                return rc;
        size_t kl = strlen(key);
        for (const char *p = data; *p;) {
                if (strncmp(p, key, kl) == 0 && p[kl] == ':') {
                        uint64_t kb;
                        char unit[4] = "";
                        const char *nl = strchr(p, '\n');
                        _cleanup_free_ char *line = nl ? xstrndup(p, (size_t)(nl - p)) : xstrdup(p);
                        int n = sscanf(line + kl + 1, " %" SCNu64 " %3s", &kb, unit);
                        if (n < 1 || (n == 2 && !streq(unit, "kB")))
                                return -EBADMSG;
                        *ret = kb;
                        *kb_unit = n == 2;
                        return 0;
                }
                const char *nl = strchr(p, '\n');
                if (!nl)
                        break;
                p = nl + 1;
        }
        return -ENOENT;
}

int meminfo_bytes(struct root *r, const char *key, uint64_t *ret)
{
        uint64_t v;
        bool kb = false;
        int rc = meminfo_value(r, key, &v, &kb);
        if (rc < 0)
                return rc;
        if (v > UINT64_MAX / 1024) /* a line without a unit has always been read as kB */
                return -EBADMSG;
        *ret = v * 1024;
        return 0;
}

int meminfo_count(struct root *r, const char *key, uint64_t *ret)
{
        bool kb = false;
        int rc = meminfo_value(r, key, ret, &kb);
        return rc < 0 ? rc : kb ? -EBADMSG : 0;
}

static void mem_fact(struct facts *f, const char *key, const char *name)
{
        uint64_t v;
        int rc = meminfo_bytes(facts_root(f), key, &v);
        if (rc == 0)
                fact_uint(f, "/proc/meminfo", v, "%s", name);
        else if (rc == -ENOENT) {
                const char *d;
                _cleanup_free_ char *why = root_read(facts_root(f), "/proc/meminfo", &d, NULL) == 0
                                                   ? xasprintf("no %s line in /proc/meminfo", key)
                                                   : xstrdup("no /proc/meminfo");
                fact_absent(f, "/proc/meminfo", why, "%s", name);
        }
        else
                fact_unreadable(f, "/proc/meminfo", rc, key, "%s", name);
}

/* /dev/shm: tmpfs size= option, else the tmpfs default of half of RAM (tmpfs(5)). On the live
 * system statvfs is exact and also covers sizes changed by remount. */
static void probe_shm(struct facts *f)
{
        struct root *r = facts_root(f);
        struct mount_entry *m = NULL;
        size_t n = 0;
        int rc = mounts_read(r, &m, &n);
        const struct mount_entry *shm = NULL;
        for (size_t i = 0; rc == 0 && i < n; i++)
                if (streq(m[i].target, "/dev/shm"))
                        shm = &m[i]; /* the last mount on a path is the visible one */
        if (!shm) {
                if (rc < 0 && rc != -ENOENT)
                        fact_unreadable(f, mounts_source(r), rc, NULL, "mem.shm.size");
                else
                        fact_absent(f, mounts_source(r), rc < 0 ? "no /proc/mounts" : "/dev/shm is not a mount",
                                    "mem.shm.size");
                mounts_free(m, n);
                return;
        }
        fact_str(f, mounts_source(r), shm->fstype, "mem.shm.fstype");
        struct statvfs sv;
        if (root_is_live(r) && statvfs("/dev/shm", &sv) == 0) {
                fact_uint(f, "statvfs(/dev/shm)", (uint64_t)sv.f_blocks * sv.f_frsize, "mem.shm.size");
                mounts_free(m, n);
                return;
        }
        _cleanup_free_ char *size = mount_option(shm->options, "size");
        uint64_t total = 0, bytes;
        bool have_total = meminfo_bytes(r, "MemTotal", &total) == 0;
        if (size) {
                rc = parse_size(size, total, &bytes);
                if (rc < 0 || (endswith(size, "%") && !have_total))
                        fact_unreadable(f, mounts_source(r), rc < 0 ? rc : -ENODATA, size, "mem.shm.size");
                else
                        fact_uint(f, mounts_source(r), bytes, "mem.shm.size");
        } else if (streq(shm->fstype, "tmpfs") && have_total)
                fact_uint(f, "/proc/mounts (tmpfs default: half of MemTotal)", total / 2, "mem.shm.size");
        else
                fact_unreadable(f, mounts_source(r), 0, "no size= option and no MemTotal", "mem.shm.size");
        mounts_free(m, n);
}

static void probe_thp_file(struct facts *f, const char *file)
{
        _cleanup_free_ char *path = xasprintf(THP_DIR "/%s", file);
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(facts_root(f), path, &line);
        if (root_gone(rc)) {
                /* Only the live system may conclude anything about the kernel; meminfo's
                 * AnonHugePages line exists only on kernels with THP. */
                uint64_t anon;
                const char *why = !root_runs_here(facts_root(f))
                                          ? meminfo_bytes(facts_root(f), "AnonHugePages", &anon) == 0
                                                    ? "no " THP_DIR " in this tree (/proc/meminfo shows "
                                                      "AnonHugePages: the kernel has THP, its mode is unknown)"
                                                    : "no " THP_DIR " in this tree"
                                          : "kernel without transparent hugepages";
                fact_absent(f, path, why, "thp.%s", file);
                return;
        }
        if (rc < 0) {
                fact_unreadable(f, path, rc, NULL, "thp.%s", file);
                return;
        }
        _cleanup_free_ char *active = NULL;
        struct strv all = {0};
        rc = parse_bracketed(line, &active, &all);
        if (rc < 0) {
                fact_unreadable(f, path, rc, line, "thp.%s", file);
                return;
        }
        _cleanup_free_ char *choices = strv_join(&all, " ");
        fact_str(f, path, active, "thp.%s", file);
        fact_str(f, path, choices, "thp.%s.choices", file);
        strv_done(&all);
}

static int mem_run(struct facts *f)
{
        mem_fact(f, "MemTotal", "mem.total");
        mem_fact(f, "MemAvailable", "mem.available");
        probe_shm(f);
        return 0;
}

static int thp_run(struct facts *f)
{
        probe_thp_file(f, "enabled");
        probe_thp_file(f, "defrag");
        return 0;
}

const struct probe probe_mem = {
        .name = "mem",
        .prefixes = {"mem."},
        .run = mem_run,
};

const struct probe probe_thp = {
        .name = "thp",
        .prefixes = {"thp."},
        .run = thp_run,
};
