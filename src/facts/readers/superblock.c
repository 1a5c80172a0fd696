/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/superblock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* ext2/3/4: struct ext4_super_block at byte 1024 (Documentation/filesystems/ext4/super.rst). */
#define EXT_SB 1024u
#define EXT_LOG_BLOCK_SIZE 0x18u
#define EXT_MAGIC_OFF 0x38u
#define EXT_MAGIC 0xEF53u
#define EXT_FEATURE_COMPAT 0x5Cu
#define EXT_FEATURE_INCOMPAT 0x60u
#define EXT_FEATURE_RO_COMPAT 0x64u
#define EXT_RAID_STRIDE 0x164u       /* le16 */
#define EXT_RAID_STRIPE_WIDTH 0x170u /* le32 */
#define EXT_COMPAT_HAS_JOURNAL 0x0004u
/* Features an ext3 driver knows; anything beyond makes it ext4 (blkid's rule, probe_ext4). */
#define EXT3_INCOMPAT_SUPP (0x0002u | 0x0004u | 0x0010u) /* filetype, recover, meta_bg */
#define EXT3_RO_COMPAT_SUPP (0x0001u | 0x0002u | 0x0004u) /* sparse_super, large_file, btree_dir */

/* XFS: struct xfs_dsb at byte 0, big-endian (fs/xfs/libxfs/xfs_format.h). */
#define XFS_BLOCKSIZE 4u
#define XFS_UNIT 0xB8u
#define XFS_WIDTH 0xBCu
#define XFS_AGBLOCKS 0x54u

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int parse_xfs(const uint8_t *buf, size_t len, struct fs_superblock *ret, const char **reason)
{
        if (len < XFS_WIDTH + 4) {
                *reason = "XFS superblock truncated (shorter than 192 bytes)";
                return -ENODATA;
        }
        uint32_t bs = be32(buf + XFS_BLOCKSIZE);
        /* XFS block sizes are powers of two from 512 bytes to 64 KiB. */
        if (bs < 512 || bs > 65536 || (bs & (bs - 1))) {
                *reason = "XFS superblock with an impossible sb_blocksize";
                return -EBADMSG;
        }
        snprintf(ret->type, sizeof(ret->type), "xfs");
        ret->block_size = bs;
        ret->stride = be32(buf + XFS_UNIT);
        ret->stripe_width = be32(buf + XFS_WIDTH);
        ret->agblocks = be32(buf + XFS_AGBLOCKS);
        return 0;
}

static int parse_ext(const uint8_t *buf, size_t len, struct fs_superblock *ret, const char **reason)
{
        const uint8_t *sb = buf + EXT_SB;
        if (len < EXT_SB + EXT_RAID_STRIPE_WIDTH + 4) {
                *reason = "ext2/3/4 superblock truncated (shorter than 1396 bytes)";
                return -ENODATA;
        }
        uint32_t log = le32(sb + EXT_LOG_BLOCK_SIZE);
        /* 1 KiB << 0..6: ext4 blocks are 1 KiB to 64 KiB. */
        if (log > 6) {
                *reason = "ext2/3/4 superblock with an impossible s_log_block_size";
                return -EBADMSG;
        }
        uint32_t compat = le32(sb + EXT_FEATURE_COMPAT), incompat = le32(sb + EXT_FEATURE_INCOMPAT),
                 ro_compat = le32(sb + EXT_FEATURE_RO_COMPAT);
        const char *type = (incompat & ~EXT3_INCOMPAT_SUPP) || (ro_compat & ~EXT3_RO_COMPAT_SUPP) ? "ext4"
                           : (compat & EXT_COMPAT_HAS_JOURNAL)                                      ? "ext3"
                                                                                                    : "ext2";
        snprintf(ret->type, sizeof(ret->type), "%s", type);
        ret->block_size = 1024u << log;
        ret->stride = le16(sb + EXT_RAID_STRIDE);
        ret->stripe_width = le32(sb + EXT_RAID_STRIPE_WIDTH);
        return 0;
}

int superblock_parse(const uint8_t *buf, size_t len, struct fs_superblock *ret, const char **reason)
{
        struct fs_superblock sb = {0};
        int rc;
        if (len >= 4 && memcmp(buf, "XFSB", 4) == 0)
                rc = parse_xfs(buf, len, &sb, reason);
        else if (len >= EXT_SB + EXT_MAGIC_OFF + 2 && le16(buf + EXT_SB + EXT_MAGIC_OFF) == EXT_MAGIC)
                rc = parse_ext(buf, len, &sb, reason);
        else if (len < EXT_SB + EXT_MAGIC_OFF + 2) {
                *reason = "too short to hold an ext2/3/4 or XFS superblock (truncated)";
                return -ENODATA;
        } else {
                *reason = "no ext2/3/4 or XFS superblock";
                return -ENOENT;
        }
        if (rc == 0)
                *ret = sb;
        return rc;
}

/* A device node under a foreign root names a disk of this machine (and opening an md node can
 * even create the array in the live kernel, md.c md_probe): decide from the inode, before open.
 * Unless the tree is of this machine's kernel (root_runs_here: a container's view of its host),
 * whose arrays its /proc/mdstat lists: then the node is the tree's own disk, read as live. */
static int check_type(struct root *r, const struct stat *st, const char **reason)
{
        if (S_ISBLK(st->st_mode) && !root_runs_here(r)) {
                *reason = "block device node under a foreign root (it would read this machine's disk)";
                return -EXDEV;
        }
        if (!S_ISBLK(st->st_mode) && !S_ISREG(st->st_mode)) {
                *reason = "neither a block device nor an image file";
                return -EINVAL;
        }
        return 0;
}

int superblock_read(struct root *r, const char *path, struct fs_superblock *ret, const char **reason)
{
        struct stat st, st2;
        int rc = root_stat(r, path, &st, true);
        if (rc < 0) {
                *reason = rc == -ENOENT ? "no such device node" : "cannot stat the device";
                return rc;
        }
        rc = check_type(r, &st, reason);
        if (rc < 0)
                return rc;
        _cleanup_close_ int fd = root_open(r, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
        if (fd < 0) {
                *reason = "cannot open the device";
                return fd;
        }
        if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
                *reason = "the device node changed while it was opened";
                return -EAGAIN;
        }
        _cleanup_free_ uint8_t *buf = xmalloc(SUPERBLOCK_READ);
        size_t len = 0;
        while (len < SUPERBLOCK_READ) {
                ssize_t n = pread(fd, buf + len, SUPERBLOCK_READ - len, (off_t)len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        *reason = "read error";
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        /* For `llmtune gather`: the region read, stored as an image file at the device's path. */
        root_record_data(r, path, buf, len);
        return superblock_parse(buf, len, ret, reason);
}
