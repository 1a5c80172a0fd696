/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/pci-link.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "facts/adapters/lib-pci.h"
#include "base/parse.h"

#define PCI_DEVS "/sys/bus/pci/devices"
#define MAX_DEPTH 16 /* bridges between a device and its root bus; real trees have at most ~6 */

enum { L_SPEED, L_WIDTH, L_MAX_SPEED, L_MAX_WIDTH, L_MPS, L_MAX_MPS, L_MRRS, L_N };
/* The first four: the sysfs link attributes stand in for config space; the rest are only there. */
#define L_SYSFS (L_MAX_WIDTH + 1)
static const char *const lnames[L_N] = {"speed", "width", "max_speed", "max_width", "mps", "max_mps", "mrrs"};

struct lval {
        unsigned v;
        int state; /* 0 value, 1 absent, < 0 unreadable (negative errno) */
        char *why;
        char *src;
};

struct linkinfo {
        struct lval l[L_N];
        int type; /* PCIe device/port type, -1 unknown */
        size_t cfg_len;
};

static void linkinfo_done(struct linkinfo *li)
{
        for (int k = 0; k < L_N; k++) {
                free(li->l[k].why);
                free(li->l[k].src);
        }
        *li = (struct linkinfo){0};
}

static void lset(struct lval *l, int state, unsigned v, const char *src, const char *why)
{
        l->state = state;
        l->v = v;
        l->src = xstrdup(src);
        l->why = why ? xstrdup(why) : NULL;
}

/* The kernel's link attributes (4.13+, PCIe functions only), when config space says nothing. */
static void link_sysfs(struct facts *f, const char *addr, const char *no_cap_why, struct linkinfo *li)
{
        struct root *r = facts_root(f);
        static const char *const files[L_SYSFS] = {"current_link_speed", "current_link_width", "max_link_speed",
                                                   "max_link_width"};
        for (int k = L_SYSFS; k < L_N; k++) /* Device Control has no sysfs attribute */
                lset(&li->l[k], 1, 0, PCI_DEVS, no_cap_why);
        for (int k = 0; k < L_SYSFS; k++) {
                _cleanup_free_ char *p = xasprintf(PCI_DEVS "/%s/%s", addr, files[k]);
                _cleanup_free_ char *line = NULL;
                int rc = root_read_line(r, p, &line);
                if (rc == -ENOENT) {
                        lset(&li->l[k], 1, 0, p, no_cap_why);
                        continue;
                }
                if (rc < 0) {
                        lset(&li->l[k], rc, 0, p, NULL);
                        continue;
                }
                if (k == L_SPEED || k == L_MAX_SPEED) {
                        unsigned mts;
                        rc = parse_link_speed(line, &mts);
                        if (rc == -ENODATA)
                                lset(&li->l[k], 1, 0, p, "the kernel reports the speed as Unknown");
                        else if (rc < 0)
                                lset(&li->l[k], rc, 0, p, line);
                        else
                                lset(&li->l[k], 0, mts, p, NULL);
                        continue;
                }
                uint64_t w;
                rc = parse_u64(line, &w);
                if (rc < 0)
                        lset(&li->l[k], rc, 0, p, line);
                else if (w == 255)
                        lset(&li->l[k], 1, 0, p, "the kernel reports width 255 (unknown)");
                else if (w == 0 || w > 32)
                        lset(&li->l[k], 1, 0, p, "no link (width 0)");
                else
                        lset(&li->l[k], 0, (unsigned)w, p, NULL);
        }
}

static void read_link(struct facts *f, struct pcilib *p, const char *pci_err, const char *addr, struct linkinfo *li)
{
        struct root *r = facts_root(f);
        *li = (struct linkinfo){.type = -1};
        _cleanup_free_ char *cfg = xasprintf(PCI_DEVS "/%s/config", addr);
        const char *data;
        size_t len = 0;
        int crc = root_read(r, cfg, &data, &len);
        if (crc < 0)
                len = 0;
        li->cfg_len = len;
        struct pcie_link l;
        struct pci_addr pa;
        int rc = !pci_addr_parse(addr, &pa) ? -EINVAL
                 : p                        ? pcilib_pcie_link(p, pa.dom, pa.bus, pa.dev, pa.fn, len, &l)
                                            : -EIO;
        if (rc == 0) {
                static const char *const zero[L_N] = {"Link Status speed code not defined",
                                                      "link down (negotiated width 0)",
                                                      "Link Capabilities speed code not defined",
                                                      "Link Capabilities width 0",
                                                      "Device Control payload size code reserved",
                                                      "Device Capabilities payload size code reserved",
                                                      "Device Control read request size code reserved"};
                unsigned v[L_N] = {l.speed, l.width, l.max_speed, l.max_width, l.mps, l.max_mps, l.mrrs};
                for (int k = 0; k < L_N; k++)
                        lset(&li->l[k], v[k] ? 0 : 1, v[k], cfg, v[k] ? NULL : zero[k]);
                li->type = l.type;
                return;
        }
        _cleanup_free_ char *why =
                crc == -ENOENT ? xstrdup("no config space file in the tree and no sysfs link attributes")
                : crc < 0    ? xasprintf("config space unreadable (%s) and no sysfs link attributes", errno_name(crc))
                : len <= 64  ? xstrdup("config space holds only the 64-byte header (unprivileged reads stop there) "
                                       "and no sysfs link attributes")
                : rc == -EIO ? xasprintf("libpci failed on the config space (%s) and no sysfs link attributes",
                                         p ? pcilib_last_error(p) : pci_err)
                : len < 256  ? xasprintf("config space truncated to %zu bytes and no sysfs link attributes", len)
                             : xstrdup("not a PCI Express function");
        link_sysfs(f, addr, why, li);
}

static void record(struct facts *f, const char *prefix, const struct linkinfo *li)
{
        for (int k = 0; k < L_N; k++) {
                const struct lval *l = &li->l[k];
                if (l->state == 0)
                        fact_int(f, l->src, l->v, "%s.%s", prefix, lnames[k]);
                else if (l->state == 1)
                        fact_absent(f, l->src, l->why, "%s.%s", prefix, lnames[k]);
                else
                        fact_unreadable(f, l->src, l->state, l->why, "%s.%s", prefix, lnames[k]);
        }
}

int pci_ancestors(struct facts *f, const char *addr, struct strv *ret, char **ret_why)
{
        _cleanup_free_ char *link = xasprintf(PCI_DEVS "/%s", addr);
        _cleanup_free_ char *target = NULL;
        int rc = root_readlink(facts_root(f), link, &target);
        if (rc < 0) {
                *ret_why = rc == -EINVAL ? xstrdup("the sysfs entry is not a link to the device path (trimmed tree)")
                                         : xasprintf("no device path (%s)", errno_name(rc));
                return rc;
        }
        struct strv parts = {0};
        _cleanup_free_ char *copy = xstrdup(target);
        char *save = NULL;
        for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save))
                strv_add(&parts, t);
        if (parts.n == 0 || !streq(parts.v[parts.n - 1], addr)) {
                strv_done(&parts);
                *ret_why = xasprintf("the device path %s does not end in %s", target, addr);
                return -EINVAL;
        }
        struct pci_addr pa;
        for (size_t i = parts.n - 1; i-- > 0 && ret->n < MAX_DEPTH;) {
                if (!pci_addr_parse(parts.v[i], &pa))
                        break; /* pci0000:00: the root bus */
                strv_add(ret, parts.v[i]);
        }
        strv_done(&parts);
        return 0;
}

static void derived(struct facts *f, const char *prefix, const struct linkinfo *dev, const struct linkinfo *up,
                    bool have_up)
{
        const char *src = dev->l[L_WIDTH].src;
        static const struct {
                const char *fact;
                int cur, max;
        } pairs[] = {{"link.width_ok", L_WIDTH, L_MAX_WIDTH}, {"link.speed_ok", L_SPEED, L_MAX_SPEED},
                     {"link.mps_ok", L_MPS, L_MAX_MPS}};
        for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
                const struct lval *cur = &dev->l[pairs[i].cur], *max = &dev->l[pairs[i].max];
                if (cur->state != 0 || max->state != 0) {
                        fact_absent(f, cur->src ? cur->src : src, cur->state ? cur->why : max->why, "%s.%s", prefix,
                                    pairs[i].fact);
                        continue;
                }
                /* What both ends can do: the slot's capability caps the card's. */
                unsigned cap = max->v;
                const struct lval *umax = have_up ? &up->l[pairs[i].max] : NULL;
                if (umax && umax->state == 0 && umax->v < cap)
                        cap = umax->v;
                fact_bool(f, src, cur->v >= cap, "%s.%s", prefix, pairs[i].fact);
        }
        const struct lval *mw = &dev->l[L_MAX_WIDTH], *ms = &dev->l[L_MAX_SPEED];
        if (!have_up)
                fact_absent(f, src, "the port above is not known", "%s.link.slot_limited", prefix);
        else if (mw->state || ms->state || up->l[L_MAX_WIDTH].state || up->l[L_MAX_SPEED].state)
                fact_absent(f, src, "a maximum link width or speed is not known", "%s.link.slot_limited", prefix);
        else
                fact_bool(f, up->l[L_MAX_WIDTH].src,
                          up->l[L_MAX_WIDTH].v < mw->v || up->l[L_MAX_SPEED].v < ms->v, "%s.link.slot_limited",
                          prefix);
}

/* Switch ports above the function with ACS P2P redirect (NCCL troubleshooting: P2P then goes
 * through the root complex). Root ports are not counted: P2P between root ports crosses the root
 * complex anyway. */
static void acs_facts(struct facts *f, struct pcilib *p, const char *pci_err, const char *prefix,
                      const struct strv *up, const char *up_why)
{
        struct root *r = facts_root(f);
        if (up_why) {
                fact_absent(f, PCI_DEVS, up_why, "%s.acs_redirect", prefix);
                return;
        }
        if (!p && up->n) {
                fact_unreadable(f, "libpci", 0, pci_err, "%s.acs_redirect", prefix);
                return;
        }
        struct strv hits = {0};
        for (size_t i = 0; i < up->n; i++) {
                const char *a = up->v[i];
                _cleanup_free_ char *cfg = xasprintf(PCI_DEVS "/%s/config", a);
                const char *data;
                size_t len = 0;
                unsigned ctrl;
                struct pcie_link l;
                int crc = root_read(r, cfg, &data, &len);
                if (crc < 0)
                        len = 0;
                struct pci_addr pa;
                int rc = pci_addr_parse(a, &pa) ? pcilib_pcie_link(p, pa.dom, pa.bus, pa.dev, pa.fn, len, &l) : -EINVAL;
                if (rc == -ENOENT && len > 64)
                        continue; /* a conventional PCI bridge: no ACS */
                if (rc < 0) {
                        /* Say what is missing: no file at all (a trimmed tree), a file that could not
                         * be read, or a 64-byte one (what an unprivileged read of sysfs returns). */
                        _cleanup_free_ char *why =
                                crc == -ENOENT ? xasprintf("no config space file for %s in the tree", a)
                                : crc < 0      ? xasprintf("config space of %s unreadable (%s)", a, errno_name(crc))
                                : len <= 64    ? xasprintf("config space of %s holds only the 64-byte header%s", a,
                                                           geteuid() == 0 ? " (the file was captured unprivileged)"
                                                                          : " (run as root)")
                                               : xasprintf("config space of %s not decodable (%s)", a,
                                                           p ? pcilib_last_error(p) : pci_err);
                        /* There but unreadable (EISDIR, EIO): unreadable, not absent (issue 14 item 2). */
                        if (crc < 0 && !root_gone(crc))
                                fact_unreadable(f, cfg, crc, why, "%s.acs_redirect", prefix);
                        else
                                fact_absent(f, cfg, why, "%s.acs_redirect", prefix);
                        strv_done(&hits);
                        return;
                }
                if (l.type != PCIE_TYPE_SWITCH_UP && l.type != PCIE_TYPE_SWITCH_DOWN)
                        continue;
                rc = pcilib_acs_ctrl(p, pa.dom, pa.bus, pa.dev, pa.fn, len, &ctrl);
                if (rc == -ENOENT)
                        continue;
                if (rc < 0) {
                        _cleanup_free_ char *why =
                                rc == -ENODATA ? xasprintf("extended config space of switch port %s not readable", a)
                                               : xasprintf("ACS capability of %s not decodable (%s)", a,
                                                           pcilib_last_error(p));
                        fact_absent(f, cfg, why, "%s.acs_redirect", prefix);
                        strv_done(&hits);
                        return;
                }
                if (ctrl & (ACS_CTRL_REQ_REDIR | ACS_CTRL_CMPLT_REDIR))
                        strv_add(&hits, a);
        }
        _cleanup_free_ char *list = hits.n ? strv_join(&hits, ",") : xstrdup("none");
        _cleanup_free_ char *src = up->n ? xasprintf(PCI_DEVS "/%s/config", up->v[0]) : xstrdup(PCI_DEVS);
        fact_str(f, src, list, "%s.acs_redirect", prefix);
        strv_done(&hits);
}

void pci_link_facts(struct facts *f, const char *prefix, const char *addr)
{
        struct pcilib *p = NULL;
        const char *err = NULL;
        if (pcilib_get(f, &p, &err) < 0)
                p = NULL;
        const char *pci_err = err ? err : "libpci unavailable";

        struct linkinfo dev, up = {0};
        read_link(f, p, pci_err, addr, &dev);
        _cleanup_free_ char *lp = xasprintf("%s.link", prefix);
        record(f, lp, &dev);

        struct strv anc = {0};
        _cleanup_free_ char *why = NULL;
        bool have_up = false;
        int arc = pci_ancestors(f, addr, &anc, &why);
        if (arc == 0 && anc.n == 0)
                why = xstrdup("on a root bus: no port above (root complex integrated device or virtual machine)");
        if (why) {
                fact_absent(f, PCI_DEVS, why, "%s.upstream", prefix);
                for (int k = 0; k < L_N; k++)
                        fact_absent(f, PCI_DEVS, why, "%s.upstream_link.%s", prefix, lnames[k]);
        } else {
                _cleanup_free_ char *dir = xasprintf(PCI_DEVS "/%s", anc.v[0]);
                fact_str(f, dir, anc.v[0], "%s.upstream", prefix);
                read_link(f, p, pci_err, anc.v[0], &up);
                _cleanup_free_ char *ulp = xasprintf("%s.upstream_link", prefix);
                record(f, ulp, &up);
                have_up = true;
        }
        derived(f, prefix, &dev, &up, have_up);
        acs_facts(f, p, pci_err, prefix, &anc, arc < 0 ? why : NULL);
        strv_done(&anc);
        linkinfo_done(&dev);
        linkinfo_done(&up);
}

int pci_place_get(struct facts *f, const char *addr, struct pci_place *ret, char **ret_why)
{
        *ret = (struct pci_place){0};
        int rc = pci_ancestors(f, addr, &ret->up, ret_why);
        if (rc < 0) {
                strv_done(&ret->up);
                return rc;
        }
        /* The root port, or the function itself, is on the host bridge's root bus. */
        struct pci_addr top;
        if (!pci_addr_parse(ret->up.n ? ret->up.v[ret->up.n - 1] : addr, &top)) {
                strv_done(&ret->up);
                *ret_why = xasprintf("%s is not a PCI address", addr);
                return -EINVAL;
        }
        snprintf(ret->host, sizeof(ret->host), "%04x:%02x", top.dom, top.bus);
        return 0;
}

void pci_place_done(struct pci_place *p)
{
        strv_done(&p->up);
        *p = (struct pci_place){0};
}

enum pci_near pci_place_near(const struct pci_place *a, const struct pci_place *b, size_t *ret_depth)
{
        size_t depth = 0;
        enum pci_near near = PCI_NEAR_NONE;
        for (size_t k = 0; k < a->up.n && near == PCI_NEAR_NONE; k++)
                if (strv_contains(&b->up, a->up.v[k])) {
                        depth = k;
                        near = k + 1 < a->up.n ? PCI_NEAR_SWITCH : PCI_NEAR_ROOT_PORT;
                }
        if (near == PCI_NEAR_NONE && streq(a->host, b->host)) {
                depth = a->up.n;
                near = PCI_NEAR_HOST_BRIDGE;
        }
        if (ret_depth)
                *ret_depth = depth;
        return near;
}
