/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hwloc, loaded once per fact store and only when a fact needs it (an audit of sysfs-only rules
 * never pays for a topology load). Under a foreign root it reads the tree by host path
 * (HWLOC_FSROOT, with HWLOC_COMPONENTS=linux,stop: hwloc 2.x dropped hwloc_topology_set_fsroot(),
 * and without "stop" the x86 CPUID backend of the build host leaks into a fixture's topology), so
 * it loads in the sandbox (sandbox.h): a child that can read the tree and nothing else, under the
 * read deadline, which sends back what the probes ask of hwloc. An archive root made by gather
 * loads the export hwloc wrote on the machine itself (HWLOC_CAPTURE_XML), in the sandbox too.
 */
#pragma once

#include "base/archive-root.h"
#include "facts/facts.h"

/* What hwloc says about the locality of one PCI function. */
struct hwloc_locality {
        bool found;    /* hwloc has an object for the function */
        bool on_machine; /* attached to the Machine of a multi-NUMA host: locality unknown */
        int numa_node; /* OS index of the single NUMA node it is local to, or -1 */
        char *nodes;   /* the nodeset of its non-I/O ancestor, as a list ("0-1"); caller frees */
};

/* Load (once) and query. Returns 0, or -errno with *ret_err naming why hwloc gave nothing
 * (-ETIMEDOUT: DEADLINE_REASON; -EPERM: the tree could not be confined; -EIO: hwloc failed). */
int hwloc_pci_locality(struct facts *f, unsigned domain, unsigned bus, unsigned dev, unsigned func,
                       struct hwloc_locality *ret, const char **ret_err);

/* Whether the store has loaded hwloc (tests check that sysfs-only facts do not). */
bool hwloc_loaded(struct facts *f);

/* The discovery components of the store's locality load that name themselves in the root
 * object's Backend infos ("Linux"; comma-separated), or NULL before a load or when it failed:
 * tests check which component read a tree, and that the live load did load. */
const char *hwloc_backends(struct facts *f);

/* HWLOC_CAPTURE_XML (archive-root.h): where an archive root keeps hwloc's export of the topology. */

/* The topology as hwloc XML (caller frees); -errno with *ret_err when hwloc could not load. */
int hwloc_export_xml(struct facts *f, char **ret, size_t *ret_len, const char **ret_err);
