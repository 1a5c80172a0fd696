/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Packing what the probes read (root_record_start) into one archive (`llmtune gather`).
 *
 * Every recorded path is resolved inside the root one component at a time: each symbolic link on
 * the way is stored as a link (sysfs' device links make the PCI tree) and the file itself at its
 * real place. A listed directory is stored with its entries: subdirectories and links as such,
 * regular files that nothing read as "unread" names (empty members the archive root refuses to
 * read, so that "not gathered" never reads as an empty file). Files are stored with the content
 * the probes saw (the root handle's cache), never read a second time.
 *
 * The archive is tar (pax) through libarchive, gzip or zstd compressed, with a MANIFEST first:
 *   {"format": 1, "tool": "llmtune gather", "version", "host", "time", "kernel", "root",
 *    "command_line": [...], "anonymized": bool,
 *    "files": [{"path", "type": "file"|"dir"|"link"|"unread"|"unlisted", "size", "sha256", "target",
 *               "errno", "why"}],
 *    "left_out": [{"path", "why"}]}
 * and every other member under "root/".
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "base/root.h"
#include "base/util.h"

struct gather_opts {
        const char *output;       /* archive path; its suffix picks the compression */
        struct strv exclude;      /* --exclude GLOBs (fnmatch on the absolute path) */
        bool anonymize;           /* replace MACs, serial numbers, host name (anonymize.c) */
        const char *host;         /* for the MANIFEST (NULL: unknown) */
        const char *kernel;       /* kernel release of the gathered root */
        struct strv private;      /* recorded content with no file behind it that not every user may
                                   * read (the kernel log under dmesg_restrict): the archive is then
                                   * owner-only, as with a file of mode 0600 */
        int argc;
        char **argv;
};

/* Statistics for the caller's summary line. */
struct gather_stats {
        size_t files, dirs, links, unread, left_out;
        unsigned long long bytes; /* file content before compression */
        mode_t mode;              /* the archive's: the umask's, owner-only when PRIVATE is set */
        char *private;            /* the first stored file not every user could read (owned; NULL: none) */
};

void gather_stats_done(struct gather_stats *st);

/* The built-in deny list: the pattern PATH matches, or NULL when it may be gathered. A site rule
 * or --exclude cannot lift it. */
const char *gather_denied(const char *path);

/* Write the archive of everything recorded on R. Returns 0 or -errno with *why set. */
int gather_write(struct root *r, const struct gather_opts *o, struct gather_stats *st, char **why)
        __attribute__((warn_unused_result));

/* Whether libarchive here can write zstd (the default suffix is then .tar.zst, else .tar.gz). */
bool gather_have_zstd(void);
