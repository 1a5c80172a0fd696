/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PCI Express link facts of one PCI function, shared by the GPU (probe-pci.c) and HCA
 * (probe-ib.c) probes. For the function at ADDR, under PREFIX ("gpu.3", "ib.mlx5_0"):
 *
 *   PREFIX.link.{speed,width,max_speed,max_width}   Link Status / Link Capabilities (MT/s, lanes)
 *   PREFIX.upstream                                 address of the port above (root or switch port)
 *   PREFIX.upstream_link.{speed,width,max_speed,max_width}
 *   PREFIX.link.{mps,max_mps,mrrs}                  Device Control / Capabilities: payload set, payload
 *                                                   supported, read request size (bytes)
 *   PREFIX.upstream_link.{mps,max_mps,mrrs}
 *   PREFIX.link.width_ok, PREFIX.link.speed_ok      negotiated >= what both ends can do
 *   PREFIX.link.mps_ok                              payload set >= what both ends support
 *   PREFIX.link.slot_limited                        the port above can do less than the function
 *   PREFIX.acs_redirect                             "none", or the PCIe switch ports above with ACS
 *                                                   P2P Request/Completion Redirect enabled
 *
 * Config space first (libpci: exact registers), the kernel's sysfs link attributes second
 * (Documentation/ABI/testing/sysfs-bus-pci: current_link_speed, max_link_width, ...).
 */
#pragma once

#include "facts/facts.h"

void pci_link_facts(struct facts *f, const char *prefix, const char *addr);

/* The bridges above the PCI function ADDR, nearest first (the last is the root port, or whatever
 * sits on the root bus), from the device path its /sys/bus/pci/devices link points at
 * ("../../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:08.0/0000:07:00.0"). Returns 0, or
 * -errno with *ret_why (caller frees) when the path is not known (a trimmed tree without links). */
int pci_ancestors(struct facts *f, const char *addr, struct strv *ret, char **ret_why);

/* Where a PCI function sits in the PCIe tree: the bridges above it (pci_ancestors: nearest first, the
 * root port last) and its host bridge, the root bus "DDDD:BB" that the root port (or the function
 * itself, on a root bus) hangs from: the kernel's /sys/devices/pciDDDD:BB. */
struct pci_place {
        struct strv up;
        char host[16];
};

/* 0, or -errno with *ret_why (caller frees) as pci_ancestors. */
int pci_place_get(struct facts *f, const char *addr, struct pci_place *ret, char **ret_why);
void pci_place_done(struct pci_place *p);

/* How near two functions are: the nearest thing above A that B sits below too. */
enum pci_near {
        PCI_NEAR_SWITCH,      /* a bridge below the root port: one PCIe switch (or a chain of them) */
        PCI_NEAR_ROOT_PORT,   /* the root port */
        PCI_NEAR_HOST_BRIDGE, /* only the host bridge (the root complex) */
        PCI_NEAR_NONE,        /* nothing: another host bridge */
};

/* The level, and in *ret_depth (may be NULL) how many bridges above A the shared one is (0: the
 * bridge right above A), so that of two functions behind one switch the nearer one can be told. */
enum pci_near pci_place_near(const struct pci_place *a, const struct pci_place *b, size_t *ret_depth);
