/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The RAID alignment fields of an ext2/3/4 or XFS superblock: block size and the stripe geometry
 * mkfs stored (ext4 s_raid_stride/s_raid_stripe_width, mke2fs(8); XFS sb_unit/sb_width, xfs(5)).
 * Only the first SUPERBLOCK_READ bytes of a device are ever read.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/root.h"

#define SUPERBLOCK_READ (64u << 10)

struct fs_superblock {
        char type[8];          /* "ext2", "ext3", "ext4", "xfs" */
        uint32_t block_size;   /* bytes */
        uint64_t stride;       /* ext4: s_raid_stride; XFS: sb_unit; both in filesystem blocks */
        uint64_t stripe_width; /* ext4: s_raid_stripe_width; XFS: sb_width; filesystem blocks */
        uint64_t agblocks;     /* XFS: sb_agblocks (a new sunit must divide it, fs/xfs/xfs_mount.c); ext: 0 */
};

/*
 * Identify the filesystem in the first LEN bytes of a device. Returns 0; -ENOENT when neither
 * magic is there; -ENODATA when the data is too short to hold the superblock (truncated);
 * -EBADMSG when the magic is there but a field is impossible. *reason (static text) says which.
 */
int superblock_parse(const uint8_t *buf, size_t len, struct fs_superblock *ret, const char **reason);

/*
 * Read the superblock of PATH under the root with one bounded pread. A block device is read only
 * on the live system: under a foreign root a device node names a disk of this machine, not of
 * the tree (-EXDEV).
 */
int superblock_read(struct root *r, const char *path, struct fs_superblock *ret, const char **reason);
