/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swap.*: active swap areas (/proc/swaps, proc(5)) and everything that turns swap back on at boot:
 * fstab "swap" lines (systemd-fstab-generator; Ubuntu's /swap.img is one), native .swap units,
 * zram-generator (zram-generator.conf(5)) and Debian's zramswap.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "facts.h"
#include "mounts.h"
#include "parse.h"
#include "probes.h"
#include "swaps.h"

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
                        root_is_live(facts_root(f)) ? xstrdup("no /proc/swaps (kernel without swap support)")
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
        if (swaps_parse(data, len, &areas, &n) < 0) {
                for (size_t i = 0; i < ARRAY_SIZE(count_names); i++)
                        fact_unreadable(f, SWAPS, -EBADMSG, "no \"Filename Type Size Used Priority\" header", "%s",
                                        count_names[i]);
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

static bool masked(struct root *r, const char *path)
{
        _cleanup_free_ char *target = NULL;
        return root_readlink(r, path, &target) == 0 && streq(target, "/dev/null");
}

/* The first zram configuration that exists; a /dev/null link masks it (systemd.unit(5)). */
static void probe_zram_generator(struct facts *f)
{
        static const char *const paths[] = {
                "/etc/systemd/zram-generator.conf",
                "/usr/lib/systemd/zram-generator.conf",
                "/usr/local/lib/systemd/zram-generator.conf",
                "/etc/default/zramswap", /* Debian's zram-tools (zramswap.service) */
        };
        struct root *r = facts_root(f);
        for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
                struct stat st;
                if (root_stat(r, paths[i], &st, false) < 0)
                        continue;
                if (masked(r, paths[i]))
                        fact_absent(f, paths[i], "masked", "swap.zram.generator");
                else
                        fact_str(f, paths[i], paths[i], "swap.zram.generator");
                return;
        }
        fact_absent(f, "/etc/systemd/zram-generator.conf", "no zram-generator or zramswap configuration",
                    "swap.zram.generator");
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
                if (!masked(r, p))
                        strv_add(&units, ents.v[i]);
        }
        fact_uint(f, dir, units.n, "swap.units.count");
        _cleanup_free_ char *names = strv_join(&units, " ");
        fact_str(f, dir, names, "swap.units.names");
        strv_free(&ents);
        strv_free(&units);
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
        probe_units(f);
        return 0;
}

const struct probe probe_swap = {
        .name = "swap",
        .prefixes = {"swap."},
        .run = swap_run,
};
