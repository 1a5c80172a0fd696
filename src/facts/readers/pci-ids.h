/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Vendor and device names from pci.ids: the machine's own list (/usr/share/misc/pci.ids, or
 * /usr/share/hwdata/pci.ids, read through the root handle: a tree gathered on a newer system names
 * GPUs, an H200 or a B200, that this host's list may predate), else this host's. Only the one
 * vendor's section is searched, not the whole 1.3 MB list parsed into a table as libpci does for
 * its first lookup (27 million instructions for a full audit, more than the rest of it).
 */
#pragma once

#include "facts/facts.h"

/* The names of VENDOR and of its DEVICE (*ret_* NULL when the list lacks them; caller frees) and
 * the list they came from (*ret_source, static). Returns 0, or -ENOENT when there is no list. */
int pci_ids_names(struct facts *f, unsigned vendor, unsigned device, char **ret_vendor, char **ret_device,
                  const char **ret_source);
