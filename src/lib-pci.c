/* SPDX-License-Identifier: MIT */
#include "lib-pci.h"

#include <errno.h>
#include <pci/pci.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdnoreturn.h>

#define HANDLE_KEY "libpci"

struct pcilib {
        struct pci_access *pacc; /* NULL when setup failed */
        char *setup_err;
        char last[256];
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
                facts_set_handle(f, HANDLE_KEY, p, pcilib_free);
                _cleanup_free_ char *sysfs = root_host_path(facts_root(f), "/sys/bus/pci");
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
                        /* The sysfs method on ROOT/sys/bus/pci, never the live /proc/bus/pci or
                         * port I/O a probe-all would try. */
                        pacc->method = PCI_ACCESS_SYS_BUS_PCI;
                        if (pci_set_param(pacc, (char *)"sysfs.path", sysfs) < 0)
                                on_error((char *)"libpci has no sysfs.path parameter");
                        /* pci.ids of the host; udev's hwdb and DNS lookups stay off. */
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

int pcilib_names(struct pcilib *p, unsigned vendor, unsigned device, char **ret_vendor, char **ret_device)
{
        char vbuf[256], dbuf[256];
        const char *volatile vn = NULL;
        const char *volatile dn = NULL;
        jmp_buf jb;
        ENTER(p, jb);
        if (setjmp(jb)) {
                /* A corrupt pci.ids is reported through the error callback. */
                LEAVE();
                return -EIO;
        }
        int flags = PCI_LOOKUP_NO_NUMBERS | PCI_LOOKUP_NO_HWDB;
        vn = pci_lookup_name(p->pacc, vbuf, sizeof(vbuf), flags | PCI_LOOKUP_VENDOR, vendor);
        dn = pci_lookup_name(p->pacc, dbuf, sizeof(dbuf), flags | PCI_LOOKUP_DEVICE, vendor, device);
        LEAVE();
        *ret_vendor = vn ? xstrdup(vn) : NULL;
        *ret_device = dn ? xstrdup(dn) : NULL;
        return 0;
}

unsigned pcie_speed_mts(unsigned code)
{
        /* PCIe Base Spec, Link Capabilities/Status: 1 = 2.5 GT/s ... 6 = 64 GT/s */
        static const unsigned mts[] = {0, 2500, 5000, 8000, 16000, 32000, 64000};
        return code < ARRAY_SIZE(mts) ? mts[code] : 0;
}

int pcilib_pcie_link(struct pcilib *p, unsigned domain, unsigned bus, unsigned dev, unsigned func, size_t cfg_len,
                     struct pcie_link *ret)
{
        struct pci_dev *volatile d = NULL;
        volatile int rc = 0;
        volatile unsigned addr = 0;
        volatile uint32_t lnkcap = 0;
        volatile uint16_t lnksta = 0, flags = 0;
        jmp_buf jb;
        ENTER(p, jb);
        if (setjmp(jb)) {
                LEAVE();
                if (d)
                        pci_free_dev(d);
                return -EIO;
        }
        /* pci_get_dev, not pci_scan_bus: a scan stops at the first device missing a mandatory file
         * (the POWER9 corpus has PCI directories with only class and local_cpus). */
        d = pci_get_dev(p->pacc, (int)domain, (int)bus, (int)dev, (int)func);
        struct pci_cap *cap = pci_find_cap(d, PCI_CAP_ID_EXP, PCI_CAP_NORMAL);
        if (!cap || cap->addr + PCI_EXP_LNKSTA + 2 > cfg_len)
                rc = -ENOENT;
        else {
                addr = cap->addr;
                lnkcap = pci_read_long(d, (int)addr + PCI_EXP_LNKCAP);
                lnksta = pci_read_word(d, (int)addr + PCI_EXP_LNKSTA);
                flags = pci_read_word(d, (int)addr + PCI_EXP_FLAGS);
        }
        pci_free_dev(d);
        LEAVE();
        if (rc < 0)
                return rc;
        /* speed = bits 3:0, width = bits 9:4 of both registers */
        ret->max_speed = pcie_speed_mts(lnkcap & 0xf);
        ret->max_width = (lnkcap & 0x3f0) >> 4;
        ret->speed = pcie_speed_mts(lnksta & 0xf);
        ret->width = (lnksta & 0x3f0) >> 4;
        ret->type = (flags & PCI_EXP_FLAGS_TYPE) >> 4;
        return 0;
}

int pcilib_acs_ctrl(struct pcilib *p, unsigned domain, unsigned bus, unsigned dev, unsigned func, size_t cfg_len,
                    unsigned *ret)
{
        /* Extended capabilities start at 0x100; without the 4 KiB space libpci would read 0xff. */
        if (cfg_len <= 0x100)
                return -ENODATA;
        struct pci_dev *volatile d = NULL;
        volatile int rc = 0;
        volatile uint16_t ctrl = 0;
        jmp_buf jb;
        ENTER(p, jb);
        if (setjmp(jb)) {
                LEAVE();
                if (d)
                        pci_free_dev(d);
                return -EIO;
        }
        d = pci_get_dev(p->pacc, (int)domain, (int)bus, (int)dev, (int)func);
        struct pci_cap *cap = pci_find_cap(d, PCI_EXT_CAP_ID_ACS, PCI_CAP_EXTENDED);
        if (!cap)
                rc = -ENOENT;
        else if (cap->addr + PCI_ACS_CTRL + 2 > cfg_len)
                rc = -ENODATA;
        else
                ctrl = pci_read_word(d, (int)cap->addr + PCI_ACS_CTRL);
        pci_free_dev(d);
        LEAVE();
        if (rc < 0)
                return rc;
        *ret = ctrl;
        return 0;
}
