/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /proc/swaps (proc(5)): a "Filename Type Size Used Priority" header, then one line per active
 * swap area, the path with " \t\n\\" escaped as \ooo (mm/swapfile.c swap_show). Read here for the
 * swap probe, the planner and apply, and rewritten here for a fixture tree's swapoff/swapon.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct swap_area {
        char *line;       /* the line as written (trailing white space too) */
        int err;          /* 0, or -EBADMSG/-EINVAL/-ERANGE: not "path type size used priority" */
        char *path;       /* octal escapes decoded; NULL when err */
        char *type;
        uint64_t size, used; /* KiB, as the kernel prints them */
        int64_t priority;
};

/* At most this many swap areas are active at once: MAX_SWAPFILES, 1 << MAX_SWAPFILES_SHIFT (5)
 * less the swap types the kernel reserves for migration, hwpoison, device-private and PTE-marker
 * entries (include/linux/swap.h, include/linux/swapops.h). */
#define SWAPS_MAX 32

/* The areas of TEXT (LEN bytes), blank lines skipped. -EBADMSG when TEXT holds a NUL or does not
 * start with the "Filename" header; -E2BIG when it lists more than SWAPS_MAX lines (malformed ones
 * count): no kernel writes that, and a fact per line of a huge file would be made up. */
int swaps_parse(const char *text, size_t len, struct swap_area **ret, size_t *ret_n);
/* Frees the N areas of A and A itself; returns NULL: `a = swaps_free(a, n);`. */
struct swap_area *swaps_free(struct swap_area *a, size_t n);

/* TEXT without the lines of DEV, and with ADD appended when not NULL: what swapoff/swapon of DEV
 * leaves in a fixture tree's /proc/swaps. The header line is kept as it is. */
char *swaps_rewrite(const char *text, const char *dev, const char *add);
