/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /etc/nccl.conf generated from the profile and the hardware (NCCL env.rst; what the hardware
 * implies per NCCL src/transport/net_ib/init.cc, src/os/linux.cc). NCCL reads the file literally
 * (src/misc/param.cc): KEY=VALUE, no trimming, no quotes, '#' comments in column 1 only, and the
 * FIRST definition of a key wins. So the managed block goes first, and the site's own lines are
 * kept after it, with the lines NCCL would misread (or that would override nothing) commented out.
 * A site's NCCL_P2P_DISABLE/NCCL_IB_DISABLE/NCCL_SHM_DISABLE that acts is kept (it may be the
 * workaround the machine needs) unless the profile says nccl_debug_switches = remove; one that does
 * nothing (=0) is commented out.
 */
#pragma once

#include "facts/facts.h"
#include "nccl/nccl-lint.h"
#include "engine/profiles.h"

#define NCCL_GEN_BEGIN "# BEGIN llmtune managed"
#define NCCL_GEN_END "# END llmtune managed"
#define NCCL_GEN_DISABLED "#llmtune-disabled# "

/* One managed setting: the key, its value and why (one line, for a comment and for `nccl env`). */
struct nccl_setting {
        char *key, *value, *why;
};

struct nccl_settings {
        struct nccl_setting *v;
        size_t n;
        struct strv notes; /* what was considered and not written ("no ACTIVE IB port: NCCL_IB_HCA not set") */
};

/* The managed settings: the profile's [nccl] keys (which override the hardware-derived ones of the
 * same name) then NCCL_IB_HCA, NCCL_SOCKET_IFNAME and GPUDirect RDMA keys derived from the facts.
 * Debugging switches (NCCL_P2P_DISABLE, NCCL_IB_DISABLE, NCCL_SHM_DISABLE) are taken from the
 * profile only when it gives a reason (a comment on the line before the key). Never fails. */
void nccl_settings_build(struct facts *f, const struct resolved *profile, const struct nccl_catalog *c,
                         struct nccl_settings *ret);
void nccl_settings_done(struct nccl_settings *s);

/* New /etc/nccl.conf content: the site's lines kept (lines that NCCL would misread or that are
 * unknown/removed/foreign, transport switches that do nothing (or any, with nccl_debug_switches =
 * remove) or duplicate a managed key are commented out behind
 * "#llmtune-disabled# "), and one managed block between "# BEGIN llmtune managed" /
 * "# END llmtune managed" markers holding the profile's [nccl] keys and the hardware-derived keys,
 * FIRST in the file. EXISTING may be NULL (no file). Rendering an already rendered file gives the
 * identical text. Returns a malloc'd string. */
char *nccl_conf_render(struct facts *f, const struct resolved *profile, const struct nccl_catalog *c,
                       const char *existing);

/* The same settings as `export KEY='VALUE'` lines for a job script (shell-quoted). */
char *nccl_env_render(const struct nccl_settings *s);

/* The NCCL configuration files of a root, in NCCL's reading order after the environment:
 * ~/.nccl.conf of /root and of every /home/NAME, then /etc/nccl.conf (homes outside /home are not
 * looked for). Paths are under the root; they may not exist. Returns 0, or the error of a /home that
 * is there but cannot be listed (a ~/.nccl.conf in it may be missing from RET). */
int nccl_conf_paths(struct root *r, struct strv *ret);

/* Is IFNAME one of the names container runtimes, network plugins, libvirt and VPNs give their
 * interfaces (kept out of NCCL_SOCKET_IFNAME whatever sysfs says; rules/consistency.conf leaves the
 * same names out of the fleet check)? */
bool nccl_ifname_screened(const char *ifname);
