/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libpci, set up once per fact store and kept as the store's "libpci" handle. It decodes config
 * space that the root handle read (pci_setup_cache); names come from pci-ids.c, not from it. It is
 * given no path into the tree (method linux-sysfs on a path that cannot be opened), so nothing in
 * a tree reaches it but those bytes. libpci reports fatal errors through
 * a callback that must not return (its default calls exit()); ours longjmps back into the call
 * that failed, which then returns -EIO with the library's message.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "facts/facts.h"

struct pcilib;

/* What the PCI Express capability says about the link. Speeds in MT/s; 0 = not known. */
struct pcie_link {
        unsigned speed, width;         /* Link Status: what was negotiated */
        unsigned max_speed, max_width; /* Link Capabilities: what the function can do */
        int type;                      /* PCI Express Capabilities bits 7:4 (PCI_EXP_TYPE_*) */
        /* Device Capabilities / Device Control, bytes: the largest payload the function supports, the
         * payload and read request size it is set to use (PCIe Base Spec 7.5.3.3-4). */
        unsigned max_mps, mps, mrrs;
};

/* Device/port types of the PCI Express Capabilities register (PCIe Base Spec 7.5.3.2). */
enum {
        PCIE_TYPE_ENDPOINT = 0x0,
        PCIE_TYPE_ROOT_PORT = 0x4,
        PCIE_TYPE_SWITCH_UP = 0x5,
        PCIE_TYPE_SWITCH_DOWN = 0x6,
};

/* ACS Control register bits (PCIe Base Spec 7.7.8.3). */
enum {
        ACS_CTRL_SRC_VALID = 0x01,
        ACS_CTRL_TRANS_BLOCK = 0x02,
        ACS_CTRL_REQ_REDIR = 0x04,
        ACS_CTRL_CMPLT_REDIR = 0x08,
        ACS_CTRL_UPSTREAM_FWD = 0x10,
        ACS_CTRL_EGRESS_CTRL = 0x20,
        ACS_CTRL_DIRECT_TRANS = 0x40,
};

/* The store's libpci, opened on first use. Returns 0, or a negative errno with *ret_err set to
 * a reason (static or owned by the handle) when libpci could not be set up; a failure is
 * remembered, not retried. */
int pcilib_get(struct facts *f, struct pcilib **ret, const char **ret_err);

/*
 * Find the PCI Express capability of DDDD:BB:DD.F and decode LnkCap (+0x0c) and LnkSta (+0x12).
 * cfg_len is how many bytes of config space the root really holds (unprivileged readers get 64):
 * registers beyond it are not trusted (libpci would read them as 0xff).
 * Returns 0, -ENOENT when there is no PCI Express capability within cfg_len, -EIO on a libpci error.
 */
int pcilib_pcie_link(struct pcilib *p, unsigned domain, unsigned bus, unsigned dev, unsigned func, size_t cfg_len,
                     struct pcie_link *ret);

/*
 * The ACS Control word of DDDD:BB:DD.F: extended capability 0x0d, control at +6. Returns 0,
 * -ENOENT when the function has no ACS capability, -ENODATA when cfg_len does not reach the
 * extended config space (only 64 or 256 bytes readable), -EIO on a libpci error.
 */
int pcilib_acs_ctrl(struct pcilib *p, unsigned domain, unsigned bus, unsigned dev, unsigned func, size_t cfg_len,
                    unsigned *ret);

/* The last libpci error or warning text ("" when none). */
const char *pcilib_last_error(const struct pcilib *p);

/* PCIe speed code of LnkCap/LnkSta (1..6) to MT/s; 0 for codes the spec does not define. */
unsigned pcie_speed_mts(unsigned code);
