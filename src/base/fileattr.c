/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chattr(1) flags kept across an atomic replace, and the ones that forbid it (fileattr.h). */
#include "base/fileattr.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

/* The flags that describe how the content is kept, which the replacing file takes over (chattr(1):
 * A, d, S, c, m, C, s, u, t, j). Not kept: i and a (they refuse the replace instead), and what
 * the filesystem sets itself or only on directories (e, E, I, N, V, T, D, P, F, x). */
#define KEPT_FLAGS                                                                                                  \
        (FS_NOATIME_FL | FS_NODUMP_FL | FS_SYNC_FL | FS_COMPR_FL | FS_NOCOMP_FL | FS_NOCOW_FL | FS_SECRM_FL |         \
         FS_UNRM_FL | FS_NOTAIL_FL | FS_JOURNAL_DATA_FL)

static int no_flags_here(int err) { return err == ENOTTY || err == EOPNOTSUPP || err == EINVAL || err == ENOSYS; }

int fileattr_get(int fd, unsigned *flags)
{
        int v = 0; /* the kernel reads and writes an int, whatever the ioctl's name says */
        *flags = 0;
        if (ioctl(fd, FS_IOC_GETFLAGS, &v) < 0)
                return no_flags_here(errno) ? 0 : -errno;
        *flags = (unsigned)v;
        return 0;
}

const char *fileattr_blocks(unsigned flags)
{
        if (flags & FS_IMMUTABLE_FL)
                return "immutable (chattr +i)";
        if (flags & FS_APPEND_FL)
                return "append-only (chattr +a)";
        return NULL;
}

int fileattr_keep(int fd, unsigned old)
{
        unsigned cur;
        int rc = fileattr_get(fd, &cur);
        if (rc < 0)
                return rc;
        /* The new file may have inherited some from its directory (ext4 passes A, S, d... down):
         * the replaced file's own are what count. */
        unsigned want = (cur & ~(unsigned)KEPT_FLAGS) | (old & KEPT_FLAGS);
        if (want == cur)
                return 0;
        int v = (int)want;
        return ioctl(fd, FS_IOC_SETFLAGS, &v) < 0 ? -errno : 0;
}

int fileattr_get_at(int dfd, const char *name, unsigned *flags)
{
        *flags = 0;
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
                return 0;
        /* O_NONBLOCK: never wait on what was swapped in after the stat (a FIFO). */
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fileattr_get(fd, flags);
}
