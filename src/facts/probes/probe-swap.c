/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swap.*: active swap areas (/proc/swaps, proc(5)) and everything that turns swap back on at boot:
 * fstab "swap" lines (systemd-fstab-generator; Ubuntu's /swap.img is one), native .swap units,
 * zram-generator (zram-generator.conf(5): its main file and the *.conf.d/ drop-ins) and Debian's
 * zramswap, and swap partitions systemd-gpt-auto-generator(8) activates by their GPT type.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>

#include "facts/readers/cmdline.h"
#include "facts/facts.h"
#include "facts/readers/mounts.h"
#include "base/parse.h"
#include "facts/probes/probes.h"
#include "facts/readers/swaps.h"

#define SWAPS "/proc/swaps"

static bool is_zram(const char *path)
{
        if (!startswith(path, "/dev/zram"))
                return false;
        const char *d = path + strlen("/dev/zram");
        if (!*d)
                return false;
        for (; *d; d++)
                if (*d < '0' || *d > '9')
                        return false;
        return true;
}

/* One area of /proc/swaps (swaps.c); sizes in KiB. Returns whether it is a zram device. */
static bool swap_area_facts(struct facts *f, const struct swap_area *a, size_t idx)
{
        if (a->err < 0) {
                _cleanup_free_ char *why = xasprintf("malformed line %zu (want: path type size used priority)", idx + 2);
                static const char *const names[] = {"path", "type", "size", "used", "priority"};
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        fact_unreadable(f, SWAPS, a->err, why, "swap.active.%zu.%s", idx, names[i]);
                return false;
        }
        fact_str(f, SWAPS, a->path, "swap.active.%zu.path", idx);
        fact_str(f, SWAPS, a->type, "swap.active.%zu.type", idx);
        fact_uint(f, SWAPS, a->size * 1024, "swap.active.%zu.size", idx);
        fact_uint(f, SWAPS, a->used * 1024, "swap.active.%zu.used", idx);
        fact_int(f, SWAPS, a->priority, "swap.active.%zu.priority", idx);
        return is_zram(a->path);
}

static void probe_active(struct facts *f)
{
        const char *data;
        size_t len;
        int rc = root_read_text(facts_root(f), SWAPS, &data, &len);
        const char *count_names[] = {"swap.active.count", "swap.zram.active", "swap.active"};
        if (rc == -ENOENT) {
                /* A fact has more than one source: /proc/meminfo's SwapTotal says whether swap is
                 * on (and how much), though not which areas. */
                uint64_t total;
                int mrc = meminfo_bytes(facts_root(f), "SwapTotal", &total);
                _cleanup_free_ char *why =
                        root_runs_here(facts_root(f)) ? xstrdup("no /proc/swaps (kernel without swap support)")
                        : mrc == 0 ? xasprintf("no /proc/swaps in this tree (/proc/meminfo SwapTotal: %" PRIu64 " kB)",
                                               total / 1024)
                                   : xstrdup("no /proc/swaps in this tree");
                fact_absent(f, SWAPS, why, "swap.active.count");
                fact_absent(f, SWAPS, why, "swap.zram.active");
                if (mrc == 0)
                        fact_bool(f, "/proc/meminfo", total > 0, "swap.active");
                else if (mrc == -ENOENT)
                        fact_absent(f, SWAPS, "no /proc/swaps and no SwapTotal in /proc/meminfo", "swap.active");
                else
                        fact_unreadable(f, "/proc/meminfo", mrc, "SwapTotal", "swap.active");
                return;
        }
        struct swap_area *areas = NULL;
        size_t n = 0, zram = 0;
        if (rc < 0) {
                for (size_t i = 0; i < ARRAY_SIZE(count_names); i++)
                        fact_unreadable(f, SWAPS, rc, NULL, "%s", count_names[i]);
                return;
        }
        rc = swaps_parse(data, len, &areas, &n);
        if (rc < 0) {
                _cleanup_free_ char *why =
                        rc == -E2BIG ? xasprintf("more than %d swap areas listed: the kernel allows at most %d "
                                                 "(MAX_SWAPFILES), so this is not a /proc/swaps it wrote",
                                                 SWAPS_MAX, SWAPS_MAX)
                                     : xstrdup("no \"Filename Type Size Used Priority\" header");
                for (size_t i = 0; i < ARRAY_SIZE(count_names); i++)
                        fact_unreadable(f, SWAPS, rc, why, "%s", count_names[i]);
                return;
        }
        for (size_t i = 0; i < n; i++)
                zram += swap_area_facts(f, &areas[i], i);
        swaps_free(areas, n);
        fact_uint(f, SWAPS, n, "swap.active.count");
        fact_uint(f, SWAPS, zram, "swap.zram.active");
        fact_bool(f, SWAPS, n > 0, "swap.active");
}

static void probe_fstab(struct facts *f)
{
        struct mount_entry *m = NULL;
        size_t n = 0;
        int rc = fstab_read(facts_root(f), &m, &n);
        if (rc == -ENOENT) {
                fact_uint(f, "/etc/fstab", 0, "swap.fstab.count");
                return;
        }
        if (rc < 0) {
                fact_unreadable(f, "/etc/fstab", rc, NULL, "swap.fstab.count");
                return;
        }
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (!streq(m[i].fstype, "swap"))
                        continue;
                fact_str(f, "/etc/fstab", m[i].source, "swap.fstab.%zu.spec", k);
                fact_uint(f, "/etc/fstab", m[i].line, "swap.fstab.%zu.line", k);
                k++;
        }
        fact_uint(f, "/etc/fstab", k, "swap.fstab.count");
        mounts_free(m, n);
}

/*
 * zram-generator.conf(5): the main file is the first of /etc, /run, /usr/local/lib, /usr/lib
 * (systemd/zram-generator.conf); drop-ins are every zram-generator.conf.d/NAME.conf of those
 * directories, a name in an earlier directory hiding the same name in a later one, read in name
 * order. A /dev/null link masks a file. Only a [zramN] section creates a device. Debian's
 * zram-tools (zramswap.service, /etc/default/zramswap) is the other source.
 * swap.zram.generator: the files in effect that define a device, space-separated; absent when none.
 * swap.zram.devices: the [zramN] sections they define.
 */
static const char *const zram_dirs[] = {"/etc/systemd", "/run/systemd", "/usr/local/lib/systemd", "/usr/lib/systemd"};

static bool zram_sections(const char *data, struct strv *devs)
{
        bool any = false;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                char *l = it.line + strspn(it.line, " \t");
                strip_trailing(l);
                if (startswith(l, "[zram") && endswith(l, "]")) {
                        l[strlen(l) - 1] = '\0';
                        if (!strv_contains(devs, l + 1))
                                strv_add(devs, l + 1);
                        any = true;
                }
        }
        return any;
}

/* What the zram probe found: the files in effect that define a device, the devices, and the
 * first file or directory that could not be read (then "none found" cannot be said). */
struct zram_scan {
        struct root *r;
        struct strv files, devs;
        int bad;
        char *bad_path;
};

static void zram_note_bad(struct zram_scan *z, const char *path, int rc)
{
        if (z->bad)
                return;
        z->bad = rc;
        z->bad_path = xstrdup(path);
}

static void zram_read_file(struct zram_scan *z, const char *path)
{
        const char *data;
        int rc = root_read(z->r, path, &data, NULL);
        if (rc < 0)
                zram_note_bad(z, path, rc);
        else if (zram_sections(data, &z->devs))
                strv_add(&z->files, path);
}

/* The main file: the first directory that has one decides, a mask included. */
static void zram_main_file(struct zram_scan *z)
{
        for (size_t i = 0; i < ARRAY_SIZE(zram_dirs); i++) {
                _cleanup_free_ char *p = xasprintf("%s/zram-generator.conf", zram_dirs[i]);
                if (root_masked(z->r, p))
                        return;
                const char *data;
                int rc = root_read(z->r, p, &data, NULL);
                if (rc == -ENOENT)
                        continue;
                if (rc < 0)
                        zram_note_bad(z, p, rc);
                else if (zram_sections(data, &z->devs))
                        strv_add(&z->files, p);
                return;
        }
}

/* Drop-ins in name order across the directories, a name's copy in the first directory that has
 * it hiding the others (a /dev/null link there masks the name). */
static void zram_dropins(struct zram_scan *z)
{
        struct strv lists[ARRAY_SIZE(zram_dirs)] = {{0}}, names = {0};
        for (size_t i = 0; i < ARRAY_SIZE(zram_dirs); i++) {
                _cleanup_free_ char *d = xasprintf("%s/zram-generator.conf.d", zram_dirs[i]);
                int rc = root_list(z->r, d, &lists[i]);
                if (rc < 0 && rc != -ENOENT)
                        zram_note_bad(z, d, rc);
                for (size_t k = 0; k < lists[i].n; k++)
                        if (endswith(lists[i].v[k], ".conf") && !strv_contains(&names, lists[i].v[k]))
                                strv_add(&names, lists[i].v[k]);
        }
        strv_sort(&names);
        for (size_t k = 0; k < names.n; k++)
                for (size_t i = 0; i < ARRAY_SIZE(zram_dirs); i++) {
                        if (!strv_contains(&lists[i], names.v[k]))
                                continue;
                        _cleanup_free_ char *p = xasprintf("%s/zram-generator.conf.d/%s", zram_dirs[i], names.v[k]);
                        if (!root_masked(z->r, p))
                                zram_read_file(z, p);
                        break;
                }
        for (size_t i = 0; i < ARRAY_SIZE(zram_dirs); i++)
                strv_done(&lists[i]);
        strv_done(&names);
}

/* Debian's zram-tools: /etc/default/zramswap, unless its service is masked. */
static void zram_tools(struct zram_scan *z)
{
        struct stat st;
        int rc = root_stat(z->r, "/etc/default/zramswap", &st, false);
        if (rc < 0 && rc != -ENOENT)
                zram_note_bad(z, "/etc/default/zramswap", rc);
        else if (rc == 0 && !root_masked(z->r, "/etc/systemd/system/zramswap.service"))
                strv_add(&z->files, "/etc/default/zramswap");
}

static void probe_zram_generator(struct facts *f)
{
        struct zram_scan z = {.r = facts_root(f)};
        zram_main_file(&z);
        zram_dropins(&z);
        zram_tools(&z);
        if (z.files.n) {
                _cleanup_free_ char *list = strv_join(&z.files, " ");
                _cleanup_free_ char *dl = strv_join(&z.devs, " ");
                fact_str(f, z.files.v[0], list, "swap.zram.generator");
                fact_str(f, z.files.v[0], dl, "swap.zram.devices");
        } else if (z.bad) {
                fact_unreadable(f, z.bad_path, z.bad, NULL, "swap.zram.generator");
                fact_unreadable(f, z.bad_path, z.bad, NULL, "swap.zram.devices");
        } else {
                const char *why = "no zram-generator configuration with a [zramN] device (main file or conf.d drop-in, "
                                  "not masked) and no zramswap";
                fact_absent(f, "/etc/systemd/zram-generator.conf", why, "swap.zram.generator");
                fact_absent(f, "/etc/systemd/zram-generator.conf", why, "swap.zram.devices");
        }
        strv_done(&z.files);
        strv_done(&z.devs);
        free(z.bad_path);
}

/*
 * systemd-gpt-auto-generator(8) activates, at every boot, the partitions of the root file system's
 * disk whose GPT type is "Linux swap" (0657fd6d-a4ab-43c4-84e5-0933c84b4f4f, the Discoverable
 * Partitions Specification) unless attribute bit 63 ("no-auto") is set, with no fstab line at all;
 * systemd.gpt_auto=0 or systemd.swap=0 on the kernel command line turns that off. Partition types
 * come from udev's database (/run/udev/data/bMAJ:MIN, ID_PART_ENTRY_TYPE and _FLAGS).
 * swap.gpt_auto.count / swap.gpt_auto.devices: such partitions (on the root's disk when it is
 * known, else on any disk).
 */
#define GPT_SWAP_TYPE "0657fd6d-a4ab-43c4-84e5-0933c84b4f4f"

static char *udev_value(const char *data, const char *key)
{
        _cleanup_free_ char *needle = xasprintf("E:%s=", key);
        for (const char *p = data; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                if (len >= strlen(needle) && strncmp(p, needle, strlen(needle)) == 0)
                        return xstrndup(p + strlen(needle), len - strlen(needle));
                p = nl ? nl + 1 : NULL;
        }
        return NULL;
}

/* The disk that holds the root file system ("nvme4n1" for /dev/nvme4n1p2), NULL when unknown. */
static char *root_disk(struct root *r)
{
        struct mount_entry *m = NULL;
        size_t n = 0;
        char *disk = NULL;
        if (mounts_read(r, &m, &n) < 0)
                return NULL;
        for (size_t i = 0; i < n && !disk; i++) {
                if (!streq(m[i].target, "/") || !startswith(m[i].source, "/dev/") || strchr(m[i].source + 5, '/'))
                        continue;
                _cleanup_free_ char *link = xasprintf("/sys/class/block/%s", m[i].source + 5);
                _cleanup_free_ char *t = NULL;
                _cleanup_free_ char *part = xasprintf("%s/partition", link);
                struct stat st;
                if (root_readlink(r, link, &t) < 0)
                        continue;
                if (root_stat(r, part, &st, true) < 0) {
                        disk = xstrdup(m[i].source + 5); /* a whole disk */
                        continue;
                }
                char *slash = strrchr(t, '/');
                if (slash) {
                        *slash = '\0';
                        char *up = strrchr(t, '/');
                        disk = xstrdup(up ? up + 1 : t);
                }
        }
        mounts_free(m, n);
        return disk;
}

/* The command line turns systemd-gpt-auto-generator's swap off (systemd.gpt_auto=, systemd.swap=). */
/* systemd.gpt_auto= or systemd.swap= turns the generator's swap off: the last occurrence of each
 * that is a boolean (systemd-gpt-auto-generator parses them in order, skipping bad values). */
static bool gpt_auto_off(const char *cmdline)
{
        bool on;
        return (cmdline_get_bool(cmdline, "systemd.gpt_auto", &on) && !on) ||
               (cmdline_get_bool(cmdline, "systemd.swap", &on) && !on);
}

/* Block device NAME is a partition of DISK (any disk when NULL) whose GPT type is swap and that
 * does not carry the "no auto" flag (bit 63). Returns 1 yes, 0 no, <0 when its type cannot be
 * told: *ret_unread then names what could not be read. */
static int gpt_swap_partition(struct root *r, const char *disk, const char *name, char **ret_unread)
{
        _cleanup_free_ char *base = xasprintf("/sys/class/block/%s", name);
        _cleanup_free_ char *part = xasprintf("%s/partition", base);
        struct stat st;
        if (root_stat(r, part, &st, true) < 0)
                return 0;
        if (disk) {
                _cleanup_free_ char *t = NULL;
                _cleanup_free_ char *want = xasprintf("/%s/%s", disk, name);
                if (root_readlink(r, base, &t) < 0 || !endswith(t, want))
                        return 0;
        }
        _cleanup_free_ char *devp = xasprintf("%s/dev", base);
        _cleanup_free_ char *dev = NULL;
        int rc = root_read_line(r, devp, &dev);
        if (rc < 0) {
                if (root_gone(rc))
                        return 0;
                *ret_unread = devp;
                devp = NULL;
                return rc;
        }
        _cleanup_free_ char *db = xasprintf("/run/udev/data/b%s", dev);
        const char *data;
        rc = root_read(r, db, &data, NULL);
        if (rc < 0) {
                if (root_gone(rc))
                        return 0;
                *ret_unread = db;
                db = NULL;
                return rc;
        }
        _cleanup_free_ char *type = udev_value(data, "ID_PART_ENTRY_TYPE");
        _cleanup_free_ char *flags = udev_value(data, "ID_PART_ENTRY_FLAGS");
        unsigned long long fl = flags ? strtoull(flags, NULL, 0) : 0;
        return type && strcasecmp(type, GPT_SWAP_TYPE) == 0 && !(fl & (1ull << 63));
}

static void probe_gpt_auto(struct facts *f)
{
        struct root *r = facts_root(f);
        const struct fact *cl = facts_get(f, "kernel.cmdline");
        if (cl && cl->status == FACT_UNREADABLE) {
                /* systemd.gpt_auto=0 or systemd.swap=0 there would turn it off */
                fact_unreadable(f, cl->source, 0, cl->reason, "swap.gpt_auto.count");
                fact_unreadable(f, cl->source, 0, cl->reason, "swap.gpt_auto.devices");
                return;
        }
        if (cl && cl->status == FACT_OK && gpt_auto_off(cl->str)) {
                fact_uint(f, "/proc/cmdline", 0, "swap.gpt_auto.count");
                fact_str(f, "/proc/cmdline", "", "swap.gpt_auto.devices");
                return;
        }
        struct stat st;
        int rc = root_stat(r, "/run/udev/data", &st, true);
        if (rc < 0 && !root_gone(rc)) {
                fact_unreadable(f, "/run/udev/data", rc, NULL, "swap.gpt_auto.count");
                fact_unreadable(f, "/run/udev/data", rc, NULL, "swap.gpt_auto.devices");
                return;
        }
        if (rc < 0) {
                const char *why = root_runs_here(r) ? "no udev database (/run/udev/data): partition types unknown"
                                                  : "no udev database (/run/udev/data) in this tree: partition types unknown";
                fact_absent(f, "/run/udev/data", why, "swap.gpt_auto.count");
                fact_absent(f, "/run/udev/data", why, "swap.gpt_auto.devices");
                return;
        }
        struct strv blocks = {0}, found = {0};
        rc = root_list(r, "/sys/class/block", &blocks);
        if (rc < 0) {
                fact_unreadable(f, "/sys/class/block", rc, NULL, "swap.gpt_auto.count");
                fact_unreadable(f, "/sys/class/block", rc, NULL, "swap.gpt_auto.devices");
                return;
        }
        _cleanup_free_ char *disk = root_disk(r);
        _cleanup_free_ char *bad = NULL;
        int bad_rc = 0;
        for (size_t i = 0; i < blocks.n; i++) {
                _cleanup_free_ char *unread = NULL;
                rc = gpt_swap_partition(r, disk, blocks.v[i], &unread);
                if (rc > 0)
                        strv_push(&found, xasprintf("/dev/%s", blocks.v[i]));
                else if (rc < 0 && !bad) {
                        bad = unread; /* a partition whose type cannot be told */
                        unread = NULL;
                        bad_rc = rc;
                }
        }
        _cleanup_free_ char *list = strv_join(&found, " ");
        if (bad) {
                fact_unreadable(f, bad, bad_rc, "a partition's type is unknown", "swap.gpt_auto.count");
                fact_unreadable(f, bad, bad_rc, "a partition's type is unknown", "swap.gpt_auto.devices");
        } else {
                fact_uint(f, "/run/udev/data", found.n, "swap.gpt_auto.count");
                fact_str(f, "/run/udev/data", list, "swap.gpt_auto.devices");
        }
        strv_done(&blocks);
        strv_done(&found);
}

/* Native swap units an administrator wrote (systemd.swap(5)); /dev/null links are masks. */
static void probe_units(struct facts *f)
{
        struct root *r = facts_root(f);
        const char *dir = "/etc/systemd/system";
        struct strv ents = {0}, units = {0};
        int rc = root_list(r, dir, &ents);
        if (rc < 0 && rc != -ENOENT) {
                fact_unreadable(f, dir, rc, NULL, "swap.units.count");
                return;
        }
        for (size_t i = 0; i < ents.n; i++) {
                if (!endswith(ents.v[i], ".swap"))
                        continue;
                _cleanup_free_ char *p = xasprintf("%s/%s", dir, ents.v[i]);
                if (!root_masked(r, p))
                        strv_add(&units, ents.v[i]);
        }
        fact_uint(f, dir, units.n, "swap.units.count");
        _cleanup_free_ char *names = strv_join(&units, " ");
        fact_str(f, dir, names, "swap.units.names");
        strv_done(&ents);
        strv_done(&units);
}

static int swap_run(struct facts *f)
{
        uint64_t total;
        int rc = meminfo_bytes(facts_root(f), "SwapTotal", &total);
        if (rc == 0)
                fact_uint(f, "/proc/meminfo", total, "swap.total");
        else if (rc == -ENOENT)
                fact_absent(f, "/proc/meminfo", "no SwapTotal line in /proc/meminfo (or no /proc/meminfo)",
                            "swap.total");
        else
                fact_unreadable(f, "/proc/meminfo", rc, "SwapTotal", "swap.total");
        probe_active(f);
        probe_fstab(f);
        probe_zram_generator(f);
        probe_gpt_auto(f);
        probe_units(f);
        return 0;
}

const struct probe probe_swap = {
        .name = "swap",
        .prefixes = {"swap."},
        .run = swap_run,
};
