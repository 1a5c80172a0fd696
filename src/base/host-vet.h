/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host-read vet: the last fallback of sandbox.h, for a kernel without Landlock where no chroot
 * can be had either (not root, no user namespaces). A library that reads a tree by host path
 * follows the host's links and blocks on a FIFO, so the parts of the tree hwloc and libkmod read
 * by host path (its /proc, /sys, the modprobe.d directories and lib/modules) are walked first: no
 * FIFO, socket or device node, and no link that the host kernel resolves to anything but what the
 * root handle (RESOLVE_IN_ROOT) resolves it to. A walk of what is there now cannot hold against a
 * tree that changes while the library reads it, and the libraries' own paths are not all known
 * (issue 28), so this is used only where nothing that holds by construction is available, and
 * `facts` says so (root.confinement = vet).
 */
#pragma once

#include "base/root.h"

/* NULL when the tree is fit, else why not (static storage of the handle: the walk is made once per
 * root). */
const char *host_vet(struct root *r);
