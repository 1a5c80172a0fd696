/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/adapters/lib-pci.h"

#include <errno.h>
#include <pci/pci.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdnoreturn.h>

#define HANDLE_KEY "libpci"
#define LIBPCI_NO_PATH "/dev/null"

/* One PCI function, asked for once and kept: its config space comes from the root handle's
 * cached read of ".../config" (pci_setup_cache), so libpci does not open that file again and the
 * capability list is walked once however many registers are read. */
struct pdev_cached {
        unsigned dom, bus, dev, fn;
        struct pci_dev *d;
        uint8_t *cfg;
};

struct pcilib {
        struct pci_access *pacc; /* NULL when setup failed */
        char *setup_err;
        char last[256];
        struct root *root;
        struct pdev_cached *devs;
        size_t ndevs, capdevs;
};

/* libpci's callbacks carry no context: the call in progress registers itself here. */
static _Thread_local struct pcilib *active;
static _Thread_local jmp_buf *active_jmp;

static void record(const char *msg, va_list ap)
{
        if (active)
                vsnprintf(active->last, sizeof(active->last), msg, ap);
}

/* pci_access.error must not return (PCI_NONRET): go back to the setjmp of the caller. */
static noreturn _printf_(1, 2) void on_error(char *msg, ...)
{
        va_list ap;
        va_start(ap, msg);
        record(msg, ap);
        va_end(ap);
        if (active_jmp)
                longjmp(*active_jmp, 1);
        /* Only reachable if libpci called back outside one of our calls: never exit() quietly. */
        abort();
}

/* Warnings ("Cannot open .../config") are kept as the last message; library code never prints. */
static _printf_(1, 2) void on_warning(char *msg, ...)
{
        va_list ap;
        va_start(ap, msg);
        record(msg, ap);
        va_end(ap);
}

static _printf_(1, 2) void on_debug(char *msg, ...) {}

static void pcilib_free(void *ptr)
{
        struct pcilib *p = ptr;
        if (!p)
                return;
        for (size_t i = 0; i < p->ndevs; i++) {
                if (p->devs[i].d)
                        pci_free_dev(p->devs[i].d);
                free(p->devs[i].cfg);
        }
        free(p->devs);
        if (p->pacc)
                pci_cleanup(p->pacc);
        free(p->setup_err);
        free(p);
}

#define ENTER(p, jb)                    \
        active = (p);                   \
        active_jmp = &(jb);             \
        (p)->last[0] = '\0'
#define LEAVE()               \
        do {                  \
                active = NULL;      \
                active_jmp = NULL;  \
        } while (0)

int pcilib_get(struct facts *f, struct pcilib **ret, const char **ret_err)
{
        struct pcilib *p = facts_handle(f, HANDLE_KEY);
        if (!p) {
                p = xcalloc(1, sizeof(*p));
                p->root = facts_root(f);
                facts_set_handle(f, HANDLE_KEY, p, pcilib_free);
                struct pci_access *volatile pacc = pci_alloc();
                jmp_buf jb;
                ENTER(p, jb);
                if (setjmp(jb)) {
                        LEAVE();
                        p->setup_err = xasprintf("libpci setup failed: %s", p->last);
                        /* pci_cleanup() could call back into the error handler; leak instead. */
                } else {
                        pacc->error = on_error;
                        pacc->warning = on_warning;
                        pacc->debug = on_debug;
                        /* The sysfs method, never the live /proc/bus/pci or port I/O a probe-all
                         * would try, and on a path under which nothing can be opened: a file under
                         * a character device is ENOTDIR. The only machine state libpci sees is the
                         * config space read through the root handle (get_dev), so it reads nothing
                         * of a tree by host path, whatever links or FIFOs the tree holds. */
                        pacc->method = PCI_ACCESS_SYS_BUS_PCI;
                        if (pci_set_param(pacc, (char *)"sysfs.path", (char *)LIBPCI_NO_PATH) < 0)
                                on_error((char *)"libpci has no sysfs.path parameter");
                        /* No name lookups (pci-ids.c names devices): udev's hwdb and DNS stay off. */
                        pacc->id_lookup_mode = PCI_LOOKUP_NO_HWDB;
                        pci_init(pacc);
                        LEAVE();
                        p->pacc = pacc;
                }
        }
        if (!p->pacc) {
                if (ret_err)
                        *ret_err = p->setup_err;
                return -EIO;
        }
        *ret = p;
        return 0;
}

const char *pcilib_last_error(const struct pcilib *p) { return p->last; }

/*
 * The function DDDD:BB:DD.F, with at most CFG_LEN bytes of the root's copy of its config space
 * as libpci's cache (reads beyond it go to libpci's method, which has no file to open and gives
 * 0xff; the callers never use a register past CFG_LEN). Called between
 * ENTER and LEAVE: pci_get_dev may call the error handler. The entry is kept until the handle
 * is freed.
 */
static struct pci_dev *get_dev(struct pcilib *p, unsigned domain, unsigned bus, unsigned dev, unsigned func,
                               size_t cfg_len)
{
        for (size_t i = 0; i < p->ndevs; i++) {
                struct pdev_cached *c = &p->devs[i];
                if (c->dom == domain && c->bus == bus && c->dev == dev && c->fn == func)
                        return c->d; /* NULL when pci_get_dev failed before */
        }
        GREEDY_REALLOC(p->devs, p->capdevs, p->ndevs + 1, 16);
        struct pdev_cached *c = &p->devs[p->ndevs];
        *c = (struct pdev_cached){.dom = domain, .bus = bus, .dev = dev, .fn = func};
        /* Counted before pci_get_dev can longjmp, so that pcilib_free sees every entry. */
        p->ndevs++;
        c->d = pci_get_dev(p->pacc, (int)domain, (int)bus, (int)dev, (int)func);
        char path[96];
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.%u/config", domain, bus, dev, func);
        const char *data;
        size_t len = 0;
        if (p->root && root_read(p->root, path, &data, &len) == 0 && len > 0) {
                /* config space is 256 or 4096 bytes; more would be garbage */
                len = len < cfg_len ? len : cfg_len;
                len = len < 4096 ? len : 4096;
                c->cfg = xmalloc(len);
                memcpy(c->cfg, data, len);
                pci_setup_cache(c->d, c->cfg, (int)len);
        }
        return c->d;
}

unsigned pcie_speed_mts(unsigned code)
{
        /* PCIe Base Spec, Link Capabilities/Status: 1 = 2.5 GT/s ... 6 = 64 GT/s */
        static const unsigned mts[] = {0, 2500, 5000, 8000, 16000, 32000, 64000};
        return code < ARRAY_SIZE(mts) ? mts[code] : 0;
}

/* The registers a caller wants of one capability, copied out under libpci's error trap. */
struct pcie_regs {
        uint32_t lnkcap, devcap;
        uint16_t lnksta, flags, devctl;
};

typedef int (*cap_read_fn)(struct pci_dev *d, unsigned addr, size_t cfg_len, void *out);

/*
 * Finds capability CAP_ID (of TYPE: PCI_CAP_NORMAL or PCI_CAP_EXTENDED) of DDDD:BB:DD.F and calls
 * READ with its offset, all under libpci's error trap: READ's return, -ENOENT without the
 * capability, -EIO when libpci failed (OUT is then not to be used).
 */
static int read_cap(struct pcilib *p, unsigned domain, unsigned bus, unsigned dev, unsigned func, size_t cfg_len,
                    int cap_id, int type, cap_read_fn read, void *out)
{
        volatile int rc = -ENOENT;
        jmp_buf jb;
        ENTER(p, jb);
        if (setjmp(jb)) {
                LEAVE();
                return -EIO;
        }
        /* pci_get_dev, not pci_scan_bus: a scan stops at the first device missing a mandatory file
         * (the POWER9 corpus has PCI directories with only class and local_cpus). */
        struct pci_dev *d = get_dev(p, domain, bus, dev, func, cfg_len);
        struct pci_cap *cap = d ? pci_find_cap(d, cap_id, type) : NULL;
        if (!d)
                rc = -EIO;
        else if (cap)
                rc = read(d, cap->addr, cfg_len, out);
        LEAVE();
        return rc;
}

static int read_pcie_regs(struct pci_dev *d, unsigned addr, size_t cfg_len, void *out)
{
        struct pcie_regs *r = out;
        if (addr + PCI_EXP_LNKSTA + 2 > cfg_len)
                return -ENOENT;
        r->lnkcap = pci_read_long(d, (int)addr + PCI_EXP_LNKCAP);
        r->lnksta = pci_read_word(d, (int)addr + PCI_EXP_LNKSTA);
        r->flags = pci_read_word(d, (int)addr + PCI_EXP_FLAGS);
        r->devcap = pci_read_long(d, (int)addr + PCI_EXP_DEVCAP);
        r->devctl = pci_read_word(d, (int)addr + PCI_EXP_DEVCTL);
        return 0;
}

int pcilib_pcie_link(struct pcilib *p, unsigned domain, unsigned bus, unsigned dev, unsigned func, size_t cfg_len,
                     struct pcie_link *ret)
{
        struct pcie_regs r = {0};
        int rc = read_cap(p, domain, bus, dev, func, cfg_len, PCI_CAP_ID_EXP, PCI_CAP_NORMAL, read_pcie_regs, &r);
        if (rc < 0)
                return rc;
        /* speed = bits 3:0, width = bits 9:4 of both registers */
        ret->max_speed = pcie_speed_mts(r.lnkcap & 0xf);
        ret->max_width = (r.lnkcap & 0x3f0) >> 4;
        ret->speed = pcie_speed_mts(r.lnksta & 0xf);
        ret->width = (r.lnksta & 0x3f0) >> 4;
        ret->type = (r.flags & PCI_EXP_FLAGS_TYPE) >> 4;
        /* 128 << code: Max_Payload_Size Supported (DevCap 2:0), Max_Payload_Size (DevCtl 7:5), Max_Read_
         * Request_Size (DevCtl 14:12); codes above 5 (4096 bytes) are reserved */
        unsigned codes[3] = {r.devcap & 0x7, (r.devctl >> 5) & 0x7, (r.devctl >> 12) & 0x7};
        ret->max_mps = codes[0] <= 5 ? 128u << codes[0] : 0;
        ret->mps = codes[1] <= 5 ? 128u << codes[1] : 0;
        ret->mrrs = codes[2] <= 5 ? 128u << codes[2] : 0;
        return 0;
}

static int read_acs_ctrl(struct pci_dev *d, unsigned addr, size_t cfg_len, void *out)
{
        if (addr + PCI_ACS_CTRL + 2 > cfg_len)
                return -ENODATA;
        *(uint16_t *)out = pci_read_word(d, (int)addr + PCI_ACS_CTRL);
        return 0;
}

int pcilib_acs_ctrl(struct pcilib *p, unsigned domain, unsigned bus, unsigned dev, unsigned func, size_t cfg_len,
                    unsigned *ret)
{
        /* Extended capabilities start at 0x100; without the 4 KiB space libpci would read 0xff. */
        if (cfg_len <= 0x100)
                return -ENODATA;
        uint16_t ctrl = 0;
        int rc = read_cap(p, domain, bus, dev, func, cfg_len, PCI_EXT_CAP_ID_ACS, PCI_CAP_EXTENDED, read_acs_ctrl,
                          &ctrl);
        if (rc < 0)
                return rc;
        *ret = ctrl;
        return 0;
}
