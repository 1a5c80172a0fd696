/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An archive made by `llmtune gather` used as a root (`--root FILE.tar.gz`).
 *
 * The archive is untrusted input. It is read once through libarchive, every member checked
 * against the rules below and against its MANIFEST, and written into a private temporary
 * directory (mode 0700) that the root handle then serves like any tree; root_free removes it.
 * Unpacking rather than serving from memory is deliberate: libpci, hwloc and libkmod read their
 * inputs by host path (sysfs.path, HWLOC_FSROOT, the modprobe.d directories), so they need a real
 * directory, and every read of llmtune itself keeps going through the same openat2 confinement.
 *
 * Layout: the first member is MANIFEST (JSON, see gather.h), every other member lies under
 * "root/" and is listed in the MANIFEST with its type, and for regular files size and SHA-256.
 * Refused, with a message naming the member: absolute names, "..", names outside root/, members
 * not in the MANIFEST or differing from it, duplicates, hard links, device nodes, FIFOs and
 * sockets, members under a symbolic link, members larger than ROOT_READ_MAX, symbolic links that
 * climb out of the root, more than ARCHIVE_MAX_MEMBERS members or ARCHIVE_MAX_TOTAL bytes unpacked
 * (a decompression bomb), a MANIFEST missing, first in the wrong place or listing absent members.
 * Absolute link targets are rewritten relative to the link, so that they name the same path under
 * the root for the host-path libraries too (llmtune's own reads resolve "/" at the root anyway).
 */
#pragma once

#include <stddef.h>

#include "base/util.h"

/* Where `llmtune gather` stores hwloc's XML export of the topology under the root. An archive
 * root loads hwloc from it when present (the archive holds llmtune's own evidence, not every file
 * hwloc's Linux backend reads). */
#define HWLOC_CAPTURE_XML "/var/lib/llmtune/captures/topology.xml"

#define ARCHIVE_MANIFEST "MANIFEST"
#define ARCHIVE_ROOT_DIR "root"
#define ARCHIVE_MAX_MEMBERS 200000u
#define ARCHIVE_MAX_TOTAL (256ull << 20)
#define ARCHIVE_MAX_MANIFEST (64u << 20)
#define ARCHIVE_MAX_DEPTH 64

/* Paths gathered as names only, with what reading them gave on the machine (-errno); directories
 * that could not be listed there ("unlisted") too. */
struct archive_unread {
        struct strv paths;
        int *err;
};
void archive_unread_done(struct archive_unread *u);

/* Unpack FILE into a new private directory (*ret_dir, caller frees and removes it with
 * archive_root_remove). *ret_unread gets the root paths gathered as names only. On failure
 * returns -errno (-EINVAL for a refused archive) and *ret_why says why (caller frees). */
int archive_root_unpack(const char *file, char **ret_dir, struct archive_unread *ret_unread, char **ret_why);
/* The same from memory (the fuzz target). */
int archive_root_unpack_mem(const void *data, size_t size, char **ret_dir, struct archive_unread *ret_unread,
                            char **ret_why);

/* Remove DIR (made by private_tmp_make: private-tmp.h) and everything under it, never following
 * a link. */
void archive_root_remove(const char *dir);

/* The link target to store for a link at REL (root-relative, no leading "/") pointing to TARGET,
 * confined to the root: NULL when TARGET climbs above the root. Caller frees. */
char *archive_confine_link(const char *rel, const char *target);
