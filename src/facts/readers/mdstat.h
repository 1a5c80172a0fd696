/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /proc/mdstat (drivers/md/md.c md_seq_show): one block per array,
 *   md0 : active raid0 sdb[1] sda[0]
 *         1048576 blocks super 1.2 512k chunks
 * with the many states real machines show: inactive, (read-only), (auto-read-only), external
 * metadata, and resync/recovery/check/reshape progress or resync=DELAYED/PENDING lines.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mdstat_array {
        char *name;        /* "md0" */
        char *state;       /* sysfs array_state words: "active", "inactive", "readonly", "read-auto" */
        char *level;       /* "raid0", "linear", ...; NULL when an inactive array shows none */
        char *members;     /* member devices without [n] and flags, in line order, space-separated */
        unsigned members_n, spares, faulty;
        unsigned raid_disks; /* [n/m] n; raid0/linear print no counts: members that are not spare/faulty */
        int working;         /* [n/m] m, or -1 when not printed */
        uint64_t chunk;      /* bytes; 0 when the line has no chunk size */
        char *metadata;      /* "1.2", "external:imsm", ... or NULL */
        char *sync;          /* "resync", "recovery", "check", "reshape", "resync=DELAYED", ... or NULL */
        char *bad;           /* why the block could not be parsed, or NULL */
};

/* Parse the whole file. Blocks that cannot be parsed are kept with bad set. Returns 0 or -EBADMSG
 * when the text is not mdstat at all (no "Personalities" line). */
int mdstat_parse(const char *text, struct mdstat_array **ret, size_t *ret_n);
/* Frees the N arrays of A and A itself; returns NULL: `a = mdstat_free(a, n);`. */
struct mdstat_array *mdstat_free(struct mdstat_array *a, size_t n);
