/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * aer.*: PCIe Advanced Error Reporting counters since boot of the devices a training node depends on
 * (GPUs, RDMA/network adapters, NVMe drives) and of every port above them, from the kernel's
 * per-device statistics (Documentation/PCI/pcieaer-howto.rst; ABI:
 * Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats): aer_dev_correctable,
 * aer_dev_nonfatal, aer_dev_fatal, each "ERROR_NAME COUNT" lines ending in TOTAL_ERR_COR /
 * TOTAL_ERR_NONFATAL / TOTAL_ERR_FATAL. The ports above a device are the PCI addresses on its
 * sysfs path (/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/...).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "facts/probes/counters.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

#define PCI_DEVS "/sys/bus/pci/devices"

struct item {
        char addr[32];
        const char *role; /* gpu, nic, nvme, port */
};

static bool is_bdf(const char *s)
{
        struct pci_addr pa;
        return pci_addr_parse(s, &pa);
}

static const char *role_of(struct root *r, const char *addr, int *err)
{
        uint64_t cls;
        int rc = root_readf_u64(r, &cls, PCI_DEVS "/%s/class", addr);
        if (rc < 0 && !root_gone(rc))
                *err = rc; /* it may be a GPU, NIC or NVMe drive */
        if (rc < 0)
                return NULL;
        if ((cls >> 16) == 0x03) /* display: VGA 0x0300, 3D controller 0x0302 */
                return "gpu";
        if ((cls >> 8) == 0x0200 || (cls >> 8) == 0x0207) /* Ethernet, InfiniBand */
                return "nic";
        if ((cls >> 8) == 0x0108) /* NVM Express (and other non-volatile memory controllers) */
                return "nvme";
        return NULL;
}

static void add(struct item **v, size_t *n, const char *addr, const char *role)
{
        for (size_t i = 0; i < *n; i++)
                if (streq((*v)[i].addr, addr))
                        return;
        *v = xrealloc(*v, (*n + 1) * sizeof(**v));
        snprintf((*v)[*n].addr, sizeof((*v)[*n].addr), "%s", addr);
        (*v)[*n].role = role;
        (*n)++;
}

/* The TOTAL_ line of an aer_dev_* file; without one, the sum of the counts. */
static int total(const char *data, const char *key, uint64_t *ret)
{
        uint64_t sum = 0;
        bool any = false;
        for (const char *line = data; *line; line += strcspn(line, "\n"), line += *line == '\n') {
                size_t len = strcspn(line, "\n");
                if (!len)
                        continue;
                _cleanup_free_ char *l = xstrndup(line, len);
                char *sp = strrchr(l, ' ');
                uint64_t v;
                if (!sp || parse_u64(sp + 1, &v) < 0)
                        return -EBADMSG;
                *sp = '\0';
                if (streq(l, key)) {
                        *ret = v;
                        return 0;
                }
                sum += v;
                any = true;
        }
        if (!any)
                return -ENODATA;
        *ret = sum;
        return 0;
}

static int cmp_item(const void *x, const void *y) { return natcmp(((const struct item *)x)->addr, ((const struct item *)y)->addr); }

/* The devices AER matters for (role_of) in NAMES, with the ports above each (every PCI address on
 * the path before the device itself), sorted by address. Returns how many into *RET; *BAD (owned)
 * and *BAD_RC: a device whose class could not be read, so whether AER matters for it is unknown. */
static size_t collect_items(struct root *r, const struct strv *names, struct item **ret, char **bad, int *bad_rc)
{
        struct item *items = NULL;
        size_t n = 0;
        for (size_t i = 0; i < names->n; i++) {
                if (!is_bdf(names->v[i]))
                        continue;
                int err = 0;
                const char *role = role_of(r, names->v[i], &err);
                if (err && !*bad) {
                        *bad = xasprintf(PCI_DEVS "/%s/class", names->v[i]);
                        *bad_rc = err;
                }
                if (!role)
                        continue;
                _cleanup_free_ char *link = xasprintf(PCI_DEVS "/%s", names->v[i]);
                _cleanup_free_ char *target = NULL;
                if (root_readlink(r, link, &target) == 0) {
                        _cleanup_free_ char *copy = xstrdup(target);
                        char *save = NULL;
                        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                                if (is_bdf(c) && !streq(c, names->v[i]))
                                        add(&items, &n, c, "port");
                }
                add(&items, &n, names->v[i], role);
        }
        qsort(items, n, sizeof(*items), cmp_item);
        *ret = items;
        return n;
}

/* The error kinds: the kernel's aer_dev_* file, its total line, and the fact's name. */
static const struct {
        const char *file, *key, *fact;
} kinds[] = {{"aer_dev_correctable", "TOTAL_ERR_COR", "correctable"},
             {"aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", "nonfatal"},
             {"aer_dev_fatal", "TOTAL_ERR_FATAL", "fatal"}};

/* The counts of device A as facts; A is added to BAD[k] when kind k counted errors, and
 * UNKNOWN[k] is set when its file could not be read. Returns whether any kind was read. */
static bool device_counts(struct facts *f, struct root *r, const char *a, struct sbuf bad[3], bool unknown[3])
{
        bool any = false;
        for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
                _cleanup_free_ char *p = xasprintf(PCI_DEVS "/%s/%s", a, kinds[k].file);
                const char *data;
                uint64_t v = 0;
                int rc = root_read(r, p, &data, NULL);
                if (rc == 0)
                        rc = total(data, kinds[k].key, &v);
                _cleanup_free_ char *name = xasprintf("aer.%s.%s", a, kinds[k].fact);
                if (rc == -ENOENT)
                        fact_absent(f, p, "no AER statistics (no AER capability, or a kernel before 4.17)", "%s", name);
                else if (rc < 0)
                        fact_unreadable(f, p, rc, NULL, "%s", name);
                else
                        fact_uint(f, p, v, "%s", name);
                counter_growth(f, name, NULL); /* NAME_growth: since the last recorded reading */
                unknown[k] |= rc < 0 && rc != -ENOENT;
                any |= rc == 0;
                if (rc == 0 && v)
                        sbuf_addf(&bad[k], "%s%s", bad[k].len ? "," : "", a);
        }
        return any;
}

static int aer_run(struct facts *f)
{
        struct root *r = facts_root(f);
        _cleanup_(strv_done) struct strv names = {0};
        int rc = root_list(r, PCI_DEVS, &names);
        static const char *const summaries[] = {"aer.count", "aer.devices", "aer.fatal_devices", "aer.nonfatal_devices",
                                                "aer.correctable_devices"};
        if (rc < 0) {
                for (size_t i = 0; i < ARRAY_SIZE(summaries); i++)
                        if (rc == -ENOENT)
                                fact_absent(f, PCI_DEVS, "no " PCI_DEVS " under the root", "%s", summaries[i]);
                        else
                                fact_unreadable(f, PCI_DEVS, rc, NULL, "%s", summaries[i]);
                return 0;
        }
        _cleanup_free_ struct item *items = NULL;
        _cleanup_free_ char *bad_class = NULL;
        int bad_rc = 0;
        size_t n = collect_items(r, &names, &items, &bad_class, &bad_rc);

        struct sbuf devs = {0}, bad[3] = {{0}};
        size_t counted = 0;
        bool unknown[3] = {false};
        for (size_t i = 0; i < n; i++) {
                const char *a = items[i].addr;
                fact_str(f, PCI_DEVS, items[i].role, "aer.%s.role", a);
                if (device_counts(f, r, a, bad, unknown)) {
                        sbuf_addf(&devs, "%s%s", devs.len ? "," : "", a);
                        counted++;
                }
        }
        static const char *const lists[] = {"aer.correctable_devices", "aer.nonfatal_devices", "aer.fatal_devices"};
        if (bad_class) {
                /* a device left out may be one whose errors count */
                for (size_t i = 0; i < ARRAY_SIZE(summaries); i++)
                        fact_unreadable(f, bad_class, bad_rc, "a device's class is unknown", "%s", summaries[i]);
        } else {
                fact_uint(f, PCI_DEVS, counted, "aer.count");
                fact_str(f, PCI_DEVS, counted ? devs.s : "none", "aer.devices");
        }
        for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
                if (bad_class) {
                        free(sbuf_steal(&bad[k])); /* the lists are unreadable, said above */
                        continue;
                }
                if (unknown[k])
                        fact_unreadable(f, PCI_DEVS, -EIO, "an aer_dev_ file could not be read", "%s", lists[k]);
                else if (!counted)
                        fact_absent(f, PCI_DEVS, "no device with AER statistics", "%s", lists[k]);
                else
                        fact_str(f, PCI_DEVS, bad[k].len ? bad[k].s : "none", "%s", lists[k]);
                free(sbuf_steal(&bad[k]));
        }
        free(sbuf_steal(&devs));
        return 0;
}

const struct probe probe_aer = {
        .name = "aer",
        .prefixes = {"aer."},
        .run = aer_run,
};
