/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A swap area turned off at runtime (swapoff(2)) and back on by the undo with its priority:
 * before/after are "on"/"off", aux the area's /proc/swaps line. In a fixture tree the tree's
 * /proc/swaps stands in for the kernel's table.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/swap.h>

#include "apply/actions-internal.h"
#include "apply/change-kind.h"
#include "facts/readers/swaps.h"
#include "base/test-hooks.h"

static bool swap_listed(const char *swaps, const char *dev)
{
        struct swap_area *areas = NULL;
        size_t n = 0;
        bool found = false;
        if (swaps && swaps_parse(swaps, strlen(swaps), &areas, &n) == 0)
                for (size_t i = 0; i < n && !found; i++)
                        found = streq(areas[i].path, dev);
        swaps_free(areas, n);
        return found;
}

static int tree_swap(struct root *r, const struct change *c, bool on)
{
        _cleanup_free_ char *cur = act_read_whole(r, "/proc/swaps");
        if (!cur)
                return -ENOENT;
        _cleanup_free_ char *text = swaps_rewrite(cur, c->target, on ? c->aux : NULL);
        return root_write_file(r, "/proc/swaps", text, strlen(text), 0444);
}

static int swap_check(const struct change *c, char **why)
{
        if (act_has_control(c->aux)) {
                *why = xasprintf("refused to change %s: the swap line holds a control character", c->target);
                return -EPERM;
        }
        return 0;
}

static int swap_apply(struct root *r, const struct change *c, char **err)
{
        int rc = test_fault(c->target);
        if (rc == 0)
                rc = root_is_live(r) ? (swapoff(c->target) < 0 ? -errno : 0) : tree_swap(r, c, false);
        if (rc < 0)
                *err = act_errmsg(c, "cannot swapoff", rc);
        return rc;
}

static int swap_undo(struct root *r, const struct change *c, char **err)
{
        int rc = test_fault(c->target);
        if (rc == 0 && root_is_live(r)) {
                int prio = 0, flags = 0;
                char dev[4096], type[64];
                unsigned long long size, used;
                if (c->aux && sscanf(c->aux, "%4095s %63s %llu %llu %d", dev, type, &size, &used, &prio) == 5 && prio >= 0)
                        flags = SWAP_FLAG_PREFER | (prio & SWAP_FLAG_PRIO_MASK);
                rc = swapon(c->target, flags) < 0 ? -errno : 0;
        } else if (rc == 0)
                rc = tree_swap(r, c, true);
        if (rc < 0)
                *err = act_errmsg(c, "cannot swapon", rc);
        return rc;
}

/* swapon(2) fails with ENOENT where the area's device or file is not there, and EINVAL where it
 * holds no swap signature: a zram device the generator sets up at boot, after a boot with the
 * generator masked, is either. */
static bool swap_not_set_up(int rc) { return rc == -ENOENT || rc == -EINVAL; }

static int swap_current(struct root *r, const struct change *c, char **ret)
{
        _cleanup_free_ char *swaps = NULL;
        int rc = act_read_whole_rc(r, "/proc/swaps", &swaps);
        if (rc < 0)
                return rc; /* not "off": the table of active swap cannot be read */
        *ret = xstrdup(swap_listed(swaps, c->target) ? "on" : "off");
        return 0;
}

static void swap_leftovers(struct root *r, const struct change *c)
{
        if (!root_is_live(r))
                act_remove_temp_of(r, "/proc/swaps", false);
}

static char *swap_line(const struct change *c) { return xasprintf("swapoff %s", c->target); }

const struct change_kind change_kind_swap = {
        .name = "swap",
        .allowed = act_clean_path,
        .area = "a clean absolute path",
        .check = swap_check,
        .apply = swap_apply,
        .undo = swap_undo,
        .not_set_up = swap_not_set_up,
        .current = swap_current,
        .leftovers = swap_leftovers,
        .sections = {"Swap"},
        .line = swap_line,
};
