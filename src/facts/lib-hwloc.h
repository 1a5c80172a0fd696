/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hwloc, pointed at the root once per fact store and loaded only when a fact needs it (an audit
 * of sysfs-only rules never pays for a topology load). Under a foreign root it is aimed with
 * HWLOC_FSROOT and HWLOC_COMPONENTS=linux,stop (hwloc 2.x dropped hwloc_topology_set_fsroot();
 * without "stop" the x86 CPUID backend of the build host leaks into a fixture's topology).
 */
#pragma once

#include "archive-root.h"
#include "facts.h"

/* What hwloc says about the locality of one PCI function. */
struct hwloc_locality {
        bool found;    /* hwloc has an object for the function */
        bool on_machine; /* attached to the Machine of a multi-NUMA host: locality unknown */
        int numa_node; /* OS index of the single NUMA node it is local to, or -1 */
        char *nodes;   /* the nodeset of its non-I/O ancestor, as a list ("0-1"); caller frees */
};

/* Load (once) and query. Returns 0, or -EIO with *ret_err naming why hwloc could not load. */
int hwloc_pci_locality(struct facts *f, unsigned domain, unsigned bus, unsigned dev, unsigned func,
                       struct hwloc_locality *ret, const char **ret_err);

/* Whether the store has loaded hwloc (tests check that sysfs-only facts do not). */
bool hwloc_loaded(struct facts *f);

/* Libraries that read a foreign root by host path (hwloc, libpci) follow the host's links and block
 * on a FIFO: NULL when the tree's /proc and /sys hold no FIFO, device node, socket or link leading
 * out of the tree, else why not (caller frees). Not called for the live system. The walk is made
 * once per store, whichever library asks first. */
char *host_read_vet(struct facts *f);

/* HWLOC_CAPTURE_XML (archive-root.h): where an archive root keeps hwloc's export of the topology. */

/* The topology as hwloc XML (caller frees); -EIO with *ret_err when hwloc could not load. */
int hwloc_export_xml(struct facts *f, char **ret, size_t *ret_len, const char **ret_err);
