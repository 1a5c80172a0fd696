/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mem.* and thp.*: total and available memory (/proc/meminfo), the size of /dev/shm, and
 * transparent hugepage "enabled"/"defrag" (Documentation/admin-guide/mm/transhuge.rst).
 *
 * thp.persistent.enabled / .defrag: what the file holds after the next boot. A tmpfiles.d "w" line
 * decides (systemd-tmpfiles-setup runs after the kernel started; which line wins is tmpfiles.d(5)'s
 * rule, dropin-order.h); without one the kernel command line's transparent_hugepage= (for
 * "enabled"), else the kernel's build default: CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS/_MADVISE/_NEVER of
 * /boot/config-RELEASE for "enabled", "madvise" for "defrag" (mm/huge_memory.c since Linux 4.6). A
 * service that sets it later (tuned) is a finding of its own (tuner.*).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "facts/readers/boot-config.h"
#include "facts/readers/cmdline.h"
#include "facts/readers/dropin-order.h"
#include "facts/facts.h"
#include "facts/readers/mounts.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

/* One "KEY: value [kB]" line of meminfo text DATA (after a node's "Node N " prefix): the number,
 * and whether it carried the kB unit. */
static int meminfo_value(const char *data, const char *key, uint64_t *ret, bool *kb_unit)
{
        size_t kl = strlen(key);
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                const char *p = it.line;
                unsigned node;
                int skip = 0;
                if (sscanf(p, "Node %u %n", &node, &skip) == 1 && skip > 0)
                        p += skip;
                if (strncmp(p, key, kl) != 0 || p[kl] != ':')
                        continue;
                uint64_t v;
                char unit[4] = "";
                int n = sscanf(p + kl + 1, " %" SCNu64 " %3s", &v, unit);
                if (n < 1 || (n == 2 && !streq(unit, "kB")))
                        return -EBADMSG;
                *ret = v;
                *kb_unit = n == 2;
                return 0;
        }
        return -ENOENT;
}

int meminfo_text_bytes(const char *data, const char *key, uint64_t *ret)
{
        uint64_t v;
        bool kb = false;
        int rc = meminfo_value(data, key, &v, &kb);
        if (rc < 0)
                return rc;
        if (v > UINT64_MAX / 1024) /* a line without a unit has always been read as kB */
                return -EBADMSG;
        *ret = v * 1024;
        return 0;
}

int meminfo_bytes(struct root *r, const char *key, uint64_t *ret)
{
        const char *data;
        int rc = root_read(r, "/proc/meminfo", &data, NULL);
        return rc < 0 ? rc : meminfo_text_bytes(data, key, ret);
}

int meminfo_count(struct root *r, const char *key, uint64_t *ret)
{
        const char *data;
        bool kb = false;
        int rc = root_read(r, "/proc/meminfo", &data, NULL);
        if (rc == 0)
                rc = meminfo_value(data, key, ret, &kb);
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

/* The kernel's own default for FILE, or NULL (with *src why not). */
static char *thp_kernel_default(struct facts *f, const char *file, char **src, int *err)
{
        const char *rel;
        int since_4_6 = kernel_release_at_least(f, 4, 6, &rel);
        if (since_4_6 < 0) {
                *src = xstrdup("the kernel release is unknown");
                return NULL;
        }
        if (streq(file, "defrag")) {
                bool known = since_4_6;
                *src = xstrdup(known ? "kernel default (mm/huge_memory.c: madvise since Linux 4.6)"
                                     : "the kernel's default before Linux 4.6");
                return known ? xstrdup("madvise") : NULL;
        }
        static const char *const modes[] = {"always", "madvise", "never"};
        for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
                _cleanup_free_ char *sym = xasprintf("TRANSPARENT_HUGEPAGE_%s", modes[i]), *v = NULL, *path = NULL;
                for (char *p = sym; *p; p++)
                        *p = (char)toupper((unsigned char)*p);
                int rc = kernel_config(facts_root(f), rel, sym, &v, &path);
                if (rc == 0 && streq(v, "y")) {
                        *src = xasprintf("kernel default (%s: CONFIG_%s=y)", path, sym);
                        return xstrdup(modes[i]);
                }
                if (rc != -ENODATA) {
                        *err = rc == -ENOENT ? 0 : rc;
                        *src = rc == -ENOENT ? xasprintf("no %s, which holds the kernel's default", path) : xstrdup(path);
                        return NULL;
                }
        }
        *src = xasprintf("/boot/config-%s sets no CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS/MADVISE/NEVER", rel);
        return NULL;
}

/* The words the kernel's transparent_hugepage= takes (mm/huge_memory.c
 * setup_transparent_hugepage); it ignores any other value. */
static bool thp_mode(const char *v) { return v && (streq(v, "always") || streq(v, "madvise") || streq(v, "never")); }

/* Without a tmpfiles.d line: the command line's transparent_hugepage= ("enabled"; the kernel.cmdline
 * fact, CMDLINE), else the kernel's default. 1 with *value, 0 when unknown (*src why), -errno
 * unreadable (*src what). */
static int thp_boot_default(struct facts *f, const char *file, const struct fact *cmdline, char **value,
                            char **src)
{
        if (streq(file, "enabled") && cmdline && cmdline->status == FACT_OK &&
            cmdline_get_key(cmdline->str, "transparent_hugepage", thp_mode, value)) {
                *src = xasprintf("%s (transparent_hugepage=)", cmdline->source);
                return 1;
        }
        int err = 0;
        *value = thp_kernel_default(f, file, src, &err);
        return err < 0 ? err : *value != NULL;
}

static void probe_thp_persistent(struct facts *f, const char *file)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *path = xasprintf(THP_DIR "/%s", file), *bad = NULL;
        struct dropin_entries e;
        int rc = dropin_entries_load(r, &dropin_tmpfiles, NULL, &e, &bad);
        if (rc < 0) {
                fact_unreadable(f, bad, rc, "systemd-tmpfiles reads it at boot (tmpfiles.d(5))", "thp.persistent.%s", file);
                return;
        }
        const struct dropin_entry *w = dropin_effective(r, &e, path);
        if (w) {
                _cleanup_free_ char *src = xasprintf("%s:%u", w->file->path, w->line);
                fact_str(f, src, w->value, "thp.persistent.%s", file);
                dropin_entries_done(&e);
                return;
        }
        dropin_entries_done(&e);
        const struct fact *cl = streq(file, "enabled") ? facts_get(f, "kernel.cmdline") : NULL;
        if (cl && cl->status == FACT_UNREADABLE) {
                fact_unreadable(f, cl->source, 0, cl->reason, "thp.persistent.%s", file);
                return;
        }
        _cleanup_free_ char *value = NULL, *src = NULL;
        rc = thp_boot_default(f, file, cl, &value, &src);
        if (rc > 0)
                fact_str(f, src, value, "thp.persistent.%s", file);
        else if (rc < 0)
                fact_unreadable(f, src, rc, NULL, "thp.persistent.%s", file);
        else {
                _cleanup_free_ char *why = xasprintf("no tmpfiles.d line writes it and %s", src);
                fact_absent(f, "/etc/tmpfiles.d", why, "thp.persistent.%s", file);
        }
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
        probe_thp_persistent(f, "enabled");
        probe_thp_persistent(f, "defrag");
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
