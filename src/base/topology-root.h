/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An lstopo XML export used as a root (`--topology FILE.xml`, or `--root FILE.xml`).
 *
 * Sites keep hwloc exports of nodes they cannot log into (schedulers store them). hwloc imports
 * the XML; from its objects a private tree (mode 0700, removed with the root) is written holding
 * exactly what the export knows, in the files the kernel would show: the CPUs and their
 * package/die/core (/sys/devices/system/cpu), the NUMA nodes with their CPUs and memory
 * (/sys/devices/system/node, MemTotal in /proc/meminfo), every PCI function with vendor, device,
 * class and locality (/sys/bus/pci/devices: numa_node, local_cpus), the CPU model where the export
 * carries it (/proc/cpuinfo), and the export itself at HWLOC_CAPTURE_XML, where hwloc's own facts
 * load it from. Every other fact is then absent, with the path that is not there, exactly as on a
 * partial tree: llmtune's probes read the same files whatever their origin, so there is one reader
 * per fact, not a second one for XML. Read-only, like a gathered archive.
 */
#pragma once

#include <stdbool.h>

#include "base/util.h"

/* Whether PATH starts like an XML document (a regular file that is not a gathered archive). */
bool topology_file_is_xml(const char *path);

/* Build the tree from XML into a new private directory (*ret_dir, caller frees and removes it
 * with archive_root_remove). -errno and *ret_why (caller frees) when hwloc cannot import it. */
int topology_root_build(const char *xml, char **ret_dir, char **ret_why);
