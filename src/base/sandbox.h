/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Libraries that read a foreign tree by host path (hwloc's HWLOC_FSROOT, libkmod's configuration
 * directories) do so where the host cannot be reached. The host kernel resolves their paths, so a
 * link in the tree (absolute, or climbing out with "..", through as many links as it likes) would
 * lead them to a host file, and a FIFO would hold them forever. Rather than vetting the tree for
 * every such case, the work runs in a forked child that can read nothing but the tree:
 *
 *   landlock  read-only access beneath the root's directory and nothing else (Landlock,
 *             Linux 5.13+): a link leading out fails with EACCES instead of being followed; no
 *             writes, no network, no signals or abstract sockets outside the child;
 *   chroot    where Landlock is missing or disabled: a private mount namespace with the tree bound
 *             read-only, nodev and nosuid, chroot into it, every capability dropped (as root, or
 *             in an unprivileged user namespace): links resolve inside the tree;
 *   vet       where neither can be had: the old walk of the tree's /proc and /sys (no FIFO, device,
 *             socket or link out of the tree), and the library runs only on a tree that passes.
 *
 * Whichever it is, the child also gets the read deadline (deadline.h): its parent kills it when it
 * waits a deadline without using CPU, uses a deadline of CPU (RLIMIT_CPU: a sparse 20 GiB
 * /proc/cpuinfo is read for seconds, not minutes) or runs 60 deadlines in all; its address space
 * is capped (RLIMIT_AS, SANDBOX_MEMORY_MAX) and its result too (SANDBOX_RESULT_MAX). The live
 * system needs none of this: its tree is the host, and the work runs in the process itself.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "base/root.h"
#include "base/util.h"

enum confinement {
        CONFINE_NONE,     /* the live system: nothing to confine */
        CONFINE_LANDLOCK,
        CONFINE_CHROOT,
        CONFINE_VET,
};

#define SANDBOX_RESULT_MAX (64u << 20)
#define SANDBOX_MEMORY_MAX (4ull << 30)

/* How libraries reading R by host path are kept inside it here (decided once per process). */
enum confinement sandbox_confinement(const struct root *r);
const char *confinement_name(enum confinement c);

/*
 * The work a library does on the tree. ROOT_PATH is the path that names the root's "/" where the
 * work runs (the host path of the tree, or "/." inside a chroot: hwloc takes "/" for the live
 * system); the result goes to OUT. Returns 0, or -errno with OUT saying why.
 */
typedef int (*sandbox_fn)(void *arg, const char *root_path, struct sbuf *out);

/*
 * Run FN on R's tree, confined as sandbox_confinement() says, under the deadline and the limits.
 * State FN needs may be prepared before the call (libraries loaded, handles made): the child is
 * a fork. Returns 0 with the result (*ret NUL-terminated, *ret_len bytes; caller frees), or -errno
 * with *ret_why (caller frees): -ETIMEDOUT (DEADLINE_REASON), -EFBIG (a limit was passed), -EPERM
 * (the vet refused the tree, or the child could not be confined), -EIO (the child failed or died),
 * or FN's own error with what it wrote.
 */
int sandbox_run(struct root *r, sandbox_fn fn, void *arg, char **ret, size_t *ret_len, char **ret_why);

/* FN in a child under the deadline and the limits, but unconfined, whatever the root: for work on
 * a descriptor already opened through the root handle (KEEP_FD, the one the child keeps), whose
 * read may never come back (a file on FUSE or NFS: root.c). ROOT_PATH is "". Returns as
 * sandbox_run. */
/* The children run so far in this process (sandbox_run outside CONFINE_NONE, sandbox_apart) and
 * the CPU time (user + system, microseconds) they used: for LLMTUNE_STATS, since a process's own
 * CPU time leaves out the libraries' loads done in its children. */
void sandbox_children_used(unsigned *ret_n, uint64_t *ret_cpu_us);

int sandbox_apart(int keep_fd, sandbox_fn fn, void *arg, char **ret, size_t *ret_len, char **ret_why);
