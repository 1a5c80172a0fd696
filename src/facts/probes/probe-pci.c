/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpu.*, nvswitch.*, nvme.*: PCI devices that matter for training, from sysfs
 * (Documentation/ABI/testing/sysfs-bus-pci), libpci (PCI Express capability), pci.ids (names,
 * pci-ids.c) and hwloc (locality cross-check).
 *
 * The facts come in stages so that a rule reading only sysfs facts loads neither library:
 *   sysfs  - addresses, IDs, class, driver, numa_node, local_cpus, BARs, counts
 *   socket - socket, per_socket, sockets_used, balanced (every CPU's package and siblings: cpu-topo.c)
 *   names  - vendor/name/arch (pci.ids, the tree's own else this host's: pci-ids.c)
 *   libpci - link.*, upstream*, acs_redirect (config space first, sysfs link files second)
 *   hwloc  - hwloc_numa_node, locality_agrees
 *   ib     - local_hca, local_hca_via (asks the ib probe for the HCAs' addresses and NUMA nodes),
 *            pcie_switch (the GPU's place in the PCIe tree, the same walk)
 *   bridges - nvswitch.bridge_count, bridges, present (the VPD of the ConnectX functions: an NVLink 5
 *             board's switches are reached through them)
 * facts_get() of one name runs only the stage that provides it (lookup), a glob pattern only the
 * stages that provide a name it matches (match); listing the prefix runs all of them.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

#include "facts/readers/cpu-topo.h"
#include "facts/facts.h"
#include "facts/adapters/lib-hwloc.h"
#include "base/parse.h"
#include "facts/readers/nvlink-bridge.h"
#include "facts/readers/pci-ids.h"
#include "facts/readers/pci-link.h"
#include "facts/probes/probes.h"

#define PCI_DEVS "/sys/bus/pci/devices"
#define NODE_DIR "/sys/devices/system/node"
#define CPU_DIR "/sys/devices/system/cpu"
#define NVME_DIR "/sys/class/nvme"
#define NV_GPUS "/proc/driver/nvidia/gpus"
#define STATE_KEY "probe-pci"

#define VENDOR_NVIDIA 0x10de
#define CLASS_NVME 0x010802
#define CPUMASK_MAX_WORDS (1u << 15) /* 1M CPUs, like parse_cpulist */

/* resource flags (include/linux/ioport.h) */
#define IORESOURCE_MEM 0x00000200
#define IORESOURCE_PREFETCH 0x00002000
#define IORESOURCE_MEM_64 0x00100000

struct pdev {
        char *addr;
        struct pci_addr loc; /* addr parsed */
        int vendor, device; /* -1 when not known */
        const char *vendor_src;
        uint32_t cls;
        bool has_class;
};

struct gpu {
        struct pdev *d;
        bool numa_known; /* numa_node file parsed (-1 included) */
        int numa_node;
        int socket;      /* dense socket index, -1 unknown */
        unsigned *lcpus; /* local_cpus as the sysfs stage read them, for the socket stage */
        int nlc;
};

struct state {
        bool sysfs, socket, names, libpci, hwloc, ib, bridges; /* stages done */
        int scan_rc;                                   /* of listing PCI_DEVS */
        size_t nvswitches;                             /* NVIDIA "bridge, other" functions */
        struct pdev *devs;
        size_t ndevs;
        struct gpu *gpus;
        size_t ngpus;
        const struct cpu_topo *topo; /* owned by the store; the socket stage's */
        int nsockets;                /* 0 when no topology */
};

static void state_free(void *p)
{
        struct state *s = p;
        if (!s)
                return;
        for (size_t i = 0; i < s->ndevs; i++)
                free(s->devs[i].addr);
        for (size_t i = 0; i < s->ngpus; i++)
                free(s->gpus[i].lcpus);
        free(s->devs);
        free(s->gpus);
        free(s);
}

static int cmp_bus(const struct pdev *a, const struct pdev *b) { return pci_addr_cmp(&a->loc, &b->loc); }

static int cmp_pdev(const void *x, const void *y) { return cmp_bus(x, y); }

/* NVIDIA first, each group in bus order: index = CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID. */
static int cmp_gpu(const void *x, const void *y)
{
        const struct gpu *a = x, *b = y;
        bool an = a->d->vendor == VENDOR_NVIDIA, bn = b->d->vendor == VENDOR_NVIDIA;
        if (an != bn)
                return an ? -1 : 1;
        return cmp_bus(a->d, b->d);
}

static char *dev_path(const struct pdev *d, const char *file) { return xasprintf(PCI_DEVS "/%s/%s", d->addr, file); }

/* A hex ID file ("0x10de"); -errno, or -EINVAL/-ERANGE for garbage or a value above MAX. */
static int read_hex(struct root *r, const char *path, uint64_t max, uint64_t *ret, char **ret_line)
{
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(r, path, &line);
        if (rc < 0)
                return rc;
        if (!startswith(line, "0x"))
                rc = -EINVAL;
        else if ((rc = parse_u64(line, ret)) == 0 && *ret > max)
                rc = -ERANGE;
        if (rc < 0 && ret_line)
                *ret_line = xstrdup(line);
        return rc;
}

/* --- CPU topology: socket of a CPU (cpu-topo.c, shared with the cpu probe) --------------------- */

/* The single socket of a set of CPUs: >= 0, -ENOENT (none known), -E2BIG (several). */
static int socket_of(const struct cpu_topo *t, const unsigned *cpus, int n)
{
        int found = -ENOENT;
        for (int i = 0; i < n; i++) {
                long k = cpu_topo_index(t, cpus[i]);
                if (k < 0 || t->socket[k] < 0)
                        continue;
                int sock = t->socket[k];
                if (found >= 0 && found != sock)
                        return -E2BIG;
                found = sock;
        }
        return found;
}

/* "0000,00000000,0000ffff" (32-bit words, most significant first) -> sorted CPU numbers. */
static int parse_cpumask(const char *str, unsigned **ret)
{
        size_t words = 1;
        for (const char *p = str; *p; p++)
                words += *p == ',';
        if (words > CPUMASK_MAX_WORDS)
                return -ERANGE;
        unsigned *v = xcalloc(words * 32 + 1, sizeof(*v));
        int n = 0;
        _cleanup_free_ char *copy = xstrdup(str);
        strip_trailing(copy);
        if (!*copy) {
                free(v);
                return -ENODATA;
        }
        /* walk the words from the last (CPUs 0-31) to the first */
        size_t w = 0;
        for (char *end = copy + strlen(copy);; w++) {
                char *start = end;
                while (start > copy && start[-1] != ',')
                        start--;
                size_t len = (size_t)(end - start);
                uint32_t word = 0;
                if (len == 0 || len > 8) {
                        free(v);
                        return -EINVAL;
                }
                for (size_t i = 0; i < len; i++) {
                        char c = start[i];
                        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
                        if (d > 15) {
                                free(v);
                                return -EINVAL;
                        }
                        word = word << 4 | d;
                }
                for (unsigned b = 0; b < 32; b++)
                        if (word & (1u << b))
                                v[n++] = (unsigned)(w * 32 + b);
                if (start == copy)
                        break;
                end = start - 1;
        }
        /* words were walked low to high, bits low to high: already sorted */
        *ret = v;
        return n;
}

/* --- sysfs stage ------------------------------------------------------------------------------ */

/* Lists the PCI functions. Returns 0, or -errno of the listing; *ret_bad names the first function
 * whose class could not be read (it may be a GPU: the counts cannot be known). */
static int scan_devices(struct facts *f, struct state *s, char **ret_bad)
{
        struct root *r = facts_root(f);
        struct strv names = {0};
        int lrc = root_list(r, PCI_DEVS, &names);
        if (lrc < 0)
                return lrc;
        s->devs = xcalloc(names.n + 1, sizeof(*s->devs));
        for (size_t i = 0; i < names.n; i++) {
                struct pdev d = {.vendor = -1, .device = -1};
                if (!pci_addr_parse(names.v[i], &d.loc))
                        continue;
                d.addr = xstrdup(names.v[i]);
                uint64_t v;
                _cleanup_free_ char *cp = dev_path(&d, "class");
                _cleanup_free_ char *vp = dev_path(&d, "vendor");
                _cleanup_free_ char *dp = dev_path(&d, "device");
                int crc = read_hex(r, cp, 0xffffff, &v, NULL);
                if (crc == 0) {
                        d.cls = (uint32_t)v;
                        d.has_class = true;
                } else if (crc != -ENOENT && !*ret_bad)
                        /* a trimmed tree without class files is not this: the file is there */
                        *ret_bad = xasprintf("%s: %s", cp, errno_name(crc));
                if (read_hex(r, vp, 0xffff, &v, NULL) == 0) {
                        d.vendor = (int)v;
                        d.vendor_src = "vendor";
                } else {
                        /* Trimmed trees (the POWER9 corpus) keep only class: the NVIDIA driver's
                         * own per-GPU directory still says whose device it is. */
                        _cleanup_free_ char *nv = xasprintf(NV_GPUS "/%s", d.addr);
                        struct stat st;
                        if (root_stat(r, nv, &st, true) == 0 && S_ISDIR(st.st_mode)) {
                                d.vendor = VENDOR_NVIDIA;
                                d.vendor_src = NV_GPUS;
                        }
                }
                if (read_hex(r, dp, 0xffff, &v, NULL) == 0)
                        d.device = (int)v;
                s->devs[s->ndevs++] = d;
        }
        strv_done(&names);
        qsort_safe(s->devs, s->ndevs, sizeof(*s->devs), cmp_pdev);
        return 0;
}

/* vendor_id / device_id: "10de" (4 lowercase hex digits). */
static void fact_id(struct facts *f, const char *prefix, const struct pdev *d, const char *file, const char *fact)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *p = dev_path(d, file);
        _cleanup_free_ char *bad = NULL;
        uint64_t v;
        int rc = read_hex(r, p, 0xffff, &v, &bad);
        if (rc == 0) {
                char buf[16];
                snprintf(buf, sizeof(buf), "%04x", (unsigned)(v & 0xffff));
                fact_str(f, p, buf, "%s.%s", prefix, fact);
        } else if (streq(file, "vendor") && d->vendor >= 0) {
                char buf[16];
                snprintf(buf, sizeof(buf), "%04x", (unsigned)d->vendor & 0xffffu);
                fact_str(f, d->vendor_src, buf, "%s.%s", prefix, fact);
        } else if (rc == -ENOENT)
                fact_absent(f, p, "no such file (trimmed sysfs tree)", "%s.%s", prefix, fact);
        else
                fact_unreadable(f, p, rc, bad ? bad : NULL, "%s.%s", prefix, fact);
}

/* What identifies the function D, as PREFIX.address, .vendor_id, .device_id and .class (the class
 * without its programming interface, as lspci -n prints it). */
static void fact_function(struct facts *f, const char *prefix, const struct pdev *d)
{
        _cleanup_free_ char *dir = xasprintf(PCI_DEVS "/%s", d->addr);
        fact_str(f, dir, d->addr, "%s.address", prefix);
        fact_id(f, prefix, d, "vendor", "vendor_id");
        fact_id(f, prefix, d, "device", "device_id");
        _cleanup_free_ char *cp = dev_path(d, "class");
        char buf[16];
        snprintf(buf, sizeof(buf), "%04x", (unsigned)(d->cls >> 8) & 0xffffu);
        fact_str(f, cp, buf, "%s.class", prefix);
}

/* BAR sizes from "resource": one "start end flags" line per region, BARs 0-5 first. */
static void fact_bars(struct facts *f, const char *prefix, const struct pdev *d)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *p = dev_path(d, "resource");
        const char *data;
        int rc = root_read(r, p, &data, NULL);
        if (rc < 0) {
                if (rc == -ENOENT)
                        fact_absent(f, p, "no resource file (trimmed sysfs tree)", "%s.large_bar", prefix);
                else
                        fact_unreadable(f, p, rc, NULL, "%s.large_bar", prefix);
                return;
        }
        bool large = false;
        const char *line = data;
        for (unsigned bar = 0; bar < 6; bar++) {
                const char *nl = strchr(line, '\n');
                if (!nl) {
                        fact_unreadable(f, p, -EBADMSG, "truncated: fewer than 6 BAR lines", "%s.large_bar", prefix);
                        return;
                }
                _cleanup_free_ char *l = xstrndup(line, (size_t)(nl - line));
                uint64_t start, end, flags;
                char tail;
                if (sscanf(l, "0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64 " %c", &start, &end, &flags, &tail) != 3) {
                        _cleanup_free_ char *why = xasprintf("BAR %u line is not \"start end flags\": \"%.60s\"", bar, l);
                        fact_unreadable(f, p, -EBADMSG, why, "%s.large_bar", prefix);
                        return;
                }
                line = nl + 1;
                if (end <= start)
                        continue; /* unused BAR (or the upper half of a 64-bit one) */
                uint64_t size = end - start + 1;
                fact_uint(f, p, size, "%s.bar.%u.size", prefix, bar);
                if ((flags & IORESOURCE_MEM) && (flags & IORESOURCE_PREFETCH) && (flags & IORESOURCE_MEM_64) &&
                    size >= (4ull << 30))
                        large = true;
        }
        fact_bool(f, p, large, "%s.large_bar", prefix);
}

static void fact_local_cpus(struct facts *f, const char *prefix, const struct pdev *d, unsigned **ret_cpus,
                            int *ret_n)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *lp = dev_path(d, "local_cpulist");
        _cleanup_free_ char *mp = dev_path(d, "local_cpus");
        _cleanup_free_ char *line = NULL;
        unsigned *cpus = NULL;
        int rc = root_read_line(r, lp, &line), n;
        const char *src = lp;
        if (rc == 0)
                n = parse_cpulist(line, &cpus);
        else if (rc == -ENOENT && (rc = root_read_line(r, mp, &line)) == 0) {
                n = parse_cpumask(line, &cpus);
                src = mp;
        } else {
                if (rc == -ENOENT)
                        fact_absent(f, mp, "no local_cpulist or local_cpus", "%s.local_cpus", prefix);
                else
                        fact_unreadable(f, lp, rc, NULL, "%s.local_cpus", prefix);
                return;
        }
        if (n < 0) {
                fact_unreadable(f, src, n, line, "%s.local_cpus", prefix);
                free(cpus);
                return;
        }
        _cleanup_free_ char *list = format_cpulist(cpus, (size_t)n);
        fact_str(f, src, list, "%s.local_cpus", prefix);
        *ret_cpus = cpus;
        *ret_n = n;
}

/* Socket of the GPU: the package of its NUMA node's CPUs; with numa_node -1 (or none), of its
 * local_cpus unless those are every CPU (the kernel's "I don't know"). */
static void fact_socket(struct facts *f, struct state *s, const char *prefix, struct gpu *g, const unsigned *lcpus,
                        int nl)
{
        struct root *r = facts_root(f);
        g->socket = -1;
        if (s->nsockets == 0) {
                fact_absent(f, CPU_DIR, "no CPU topology (physical_package_id) under the root", "%s.socket", prefix);
                return;
        }
        if (g->numa_known && g->numa_node >= 0) {
                _cleanup_free_ char *p = xasprintf(NODE_DIR "/node%d/cpulist", g->numa_node);
                _cleanup_free_ char *line = NULL;
                _cleanup_free_ unsigned *cpus = NULL;
                int rc = root_read_line(r, p, &line);
                int n = rc == 0 ? parse_cpulist(line, &cpus) : rc == -ENODATA ? 0 : rc;
                if (n < 0) {
                        fact_unreadable(f, p, n, line, "%s.socket", prefix);
                        return;
                }
                int sock = socket_of(s->topo, cpus, n);
                if (n == 0)
                        fact_absent(f, p, "the GPU's NUMA node has no CPUs (memory-only node)", "%s.socket", prefix);
                else if (sock == -E2BIG)
                        fact_absent(f, p, "the GPU's NUMA node spans several sockets", "%s.socket", prefix);
                else if (sock < 0)
                        fact_absent(f, p, "no topology for the NUMA node's CPUs", "%s.socket", prefix);
                else {
                        g->socket = sock;
                        fact_int(f, p, sock, "%s.socket", prefix);
                }
                return;
        }
        _cleanup_free_ char *src = dev_path(g->d, "local_cpus");
        if (!lcpus) {
                fact_absent(f, src, "numa_node unknown and no local_cpus", "%s.socket", prefix);
                return;
        }
        int sock = socket_of(s->topo, lcpus, nl);
        if (sock == -E2BIG)
                fact_absent(f, src, "numa_node is -1 and local_cpus spans sockets: locality unknown", "%s.socket",
                            prefix);
        else if (sock < 0)
                fact_absent(f, src, "no topology for the local CPUs", "%s.socket", prefix);
        else {
                g->socket = sock;
                fact_int(f, src, sock, "%s.socket", prefix);
        }
}

/* Whether the root has exactly one NUMA node (numa.nodes == 1). */
static bool single_node(struct facts *f)
{
        const struct fact *n = facts_get(f, "numa.nodes");
        bool neg;
        uint64_t v;
        return n && fact_number(n, &neg, &v) && !neg && v == 1;
}

static void gpu_sysfs(struct facts *f, struct state *s, size_t i)
{
        struct root *r = facts_root(f);
        struct gpu *g = &s->gpus[i];
        const struct pdev *d = g->d;
        _cleanup_free_ char *prefix = xasprintf("gpu.%zu", i);
        fact_function(f, prefix, d);

        _cleanup_free_ char *drvp = dev_path(d, "driver");
        _cleanup_free_ char *target = NULL;
        int rc = root_readlink(r, drvp, &target);
        if (rc == 0) {
                const char *slash = strrchr(target, '/');
                fact_str(f, drvp, slash ? slash + 1 : target, "%s.driver", prefix);
        } else if (rc == -ENOENT)
                fact_absent(f, drvp, "no driver bound", "%s.driver", prefix);
        else
                fact_unreadable(f, drvp, rc, NULL, "%s.driver", prefix);

        _cleanup_free_ char *np = dev_path(d, "numa_node");
        int64_t node;
        int nrc = root_read_i64(r, np, &node);
        if (nrc == 0 && node == -1 && single_node(f)) {
                /* -1 is "the firmware does not say"; with one NUMA node there is only one answer. */
                _cleanup_free_ char *src = xasprintf("%s (-1 on a machine with one NUMA node)", np);
                fact_int(f, src, 0, "%s.numa_node", prefix);
                g->numa_known = true;
                g->numa_node = 0;
        } else if (fact_file_int(f, np, "no numa_node attribute (kernel without NUMA, or trimmed tree)",
                                 "%s.numa_node", prefix) == 0 &&
                   nrc == 0 && node >= -1 && node < INT32_MAX) {
                g->numa_known = true;
                g->numa_node = (int)node;
        }

        fact_local_cpus(f, prefix, d, &g->lcpus, &g->nlc);
        fact_bars(f, prefix, d);
}

/* Host RAM per NVIDIA GPU (mem.total / gpu.nvidia_count): profiles ask for a multiple of the
 * GPU's memory (pinned staging buffers, checkpoints and data loaders live in host RAM). */
static void gpu_ram(struct facts *f, size_t nvidia)
{
        const struct fact *mt = facts_get(f, "mem.total");
        bool neg;
        uint64_t total;
        if (nvidia == 0)
                fact_absent(f, PCI_DEVS, "no NVIDIA GPU", "gpu.ram_per_gpu");
        else if (!mt || mt->status == FACT_ABSENT)
                fact_absent(f, mt ? mt->source : "/proc/meminfo", mt ? mt->reason : "no mem.total",
                            "gpu.ram_per_gpu");
        else if (mt->status != FACT_OK || !fact_number(mt, &neg, &total) || neg)
                fact_unreadable(f, mt->source, -EINVAL, "mem.total is not a size", "gpu.ram_per_gpu");
        else
                fact_uint(f, mt->source, total / nvidia, "gpu.ram_per_gpu");
}

static void gpu_balance(struct facts *f, struct state *s)
{
        const char *src = PCI_DEVS;
        size_t nv = 0;
        int *per = xcalloc((size_t)s->nsockets + 1, sizeof(int));
        const char *why = NULL;
        for (size_t i = 0; i < s->ngpus; i++) {
                if (s->gpus[i].d->vendor != VENDOR_NVIDIA)
                        continue;
                nv++;
                if (s->gpus[i].socket < 0)
                        why = "the socket of an NVIDIA GPU is unknown";
                else
                        per[s->gpus[i].socket]++;
        }
        if (nv == 0)
                why = "no NVIDIA GPU";
        else if (s->nsockets == 0)
                why = "no CPU topology under the root";
        if (why) {
                fact_absent(f, src, why, "gpu.per_socket");
                fact_absent(f, src, why, "gpu.sockets_used");
                fact_absent(f, src, why, "gpu.balanced");
                free(per);
                return;
        }
        struct sbuf b = {0};
        int used = 0, lo = per[0], hi = per[0];
        for (int k = 0; k < s->nsockets; k++) {
                sbuf_addf(&b, "%s%d", k ? "," : "", per[k]);
                used += per[k] > 0;
                lo = per[k] < lo ? per[k] : lo;
                hi = per[k] > hi ? per[k] : hi;
        }
        _cleanup_free_ char *list = sbuf_steal(&b);
        fact_str(f, src, list, "gpu.per_socket");
        fact_int(f, src, used, "gpu.sockets_used");
        fact_bool(f, src, hi - lo <= 1, "gpu.balanced");
        free(per);
}

/*
 * Each GPU's socket and the placement facts over them: a stage of its own, since it needs every
 * CPU's package and core siblings (cpu-topo.c: 768 files on a 384-CPU node), which a profile's
 * match block (gpu.*.device_id, gpu.*.arch) never asks for. Run after the sysfs stage, whose
 * "unknown" marks for the placement facts come first (first writer wins).
 */
static void stage_socket(struct facts *f, struct state *s)
{
        s->socket = true;
        s->topo = cpu_topo_get(f);
        s->nsockets = s->topo->nsockets;
        for (size_t i = 0; i < s->ngpus; i++) {
                char prefix[32];
                snprintf(prefix, sizeof(prefix), "gpu.%zu", i);
                fact_socket(f, s, prefix, &s->gpus[i], s->gpus[i].lcpus, s->gpus[i].nlc);
        }
        gpu_balance(f, s);
}

/* NVMe controllers: /sys/class/nvme/nvmeN (kernel names, natural order); kernels before 4.x
 * without that class: PCI functions of class 0x010802. */
static void nvme_sysfs(struct facts *f, struct state *s)
{
        struct root *r = facts_root(f);
        struct strv names = {0};
        if (root_list(r, NVME_DIR, &names) < 0) {
                size_t n = 0;
                for (size_t i = 0; i < s->ndevs; i++) {
                        const struct pdev *d = &s->devs[i];
                        if (!d->has_class || d->cls != CLASS_NVME)
                                continue;
                        _cleanup_free_ char *dir = xasprintf(PCI_DEVS "/%s", d->addr);
                        _cleanup_free_ char *np = dev_path(d, "numa_node");
                        fact_absent(f, NVME_DIR, "no " NVME_DIR " (old kernel or no nvme driver)", "nvme.%zu.name", n);
                        fact_str(f, dir, d->addr, "nvme.%zu.address", n);
                        fact_file_int(f, np, "no numa_node attribute", "nvme.%zu.numa_node", n);
                        n++;
                }
                fact_int(f, PCI_DEVS, (int64_t)n, "nvme.count");
                return;
        }
        /* natural order: nvme2 before nvme10 */
        for (size_t i = 1; i < names.n; i++)
                for (size_t j = i; j > 0 && natcmp(names.v[j - 1], names.v[j]) > 0; j--) {
                        char *t = names.v[j];
                        names.v[j] = names.v[j - 1];
                        names.v[j - 1] = t;
                }
        size_t n = 0;
        for (size_t i = 0; i < names.n; i++) {
                if (!startswith(names.v[i], "nvme"))
                        continue;
                _cleanup_free_ char *dir = xasprintf(NVME_DIR "/%s", names.v[i]);
                _cleanup_free_ char *link = xasprintf("%s/device", dir);
                _cleanup_free_ char *np = xasprintf("%s/device/numa_node", dir);
                _cleanup_free_ char *target = NULL;
                fact_str(f, dir, names.v[i], "nvme.%zu.name", n);
                int rc = root_readlink(r, link, &target);
                struct pci_addr pa;
                const char *base = target ? strrchr(target, '/') : NULL;
                base = base ? base + 1 : target;
                if (rc < 0)
                        fact_absent(f, link, "no device link (NVMe over fabrics?)", "nvme.%zu.address", n);
                else if (!pci_addr_parse(base, &pa))
                        fact_absent(f, link, "not a PCI device (NVMe over fabrics?)", "nvme.%zu.address", n);
                else
                        fact_str(f, link, base, "nvme.%zu.address", n);
                fact_file_int(f, np, "no numa_node attribute", "nvme.%zu.numa_node", n);
                n++;
        }
        fact_int(f, NVME_DIR, (int64_t)n, "nvme.count");
        strv_done(&names);
}

/*
 * Display controllers that are not compute GPUs: the baseboard management controller's VGA (ASPEED
 * AST2x00 on most servers, Matrox G200 on HPE/Dell/Lenovo, the ATI ES1000 of older servers) and the
 * emulated adapters of virtual machines. They are PCI class 0x03 like a GPU; counting them made a
 * 4-GPU node report 5. A device ID of -1 excludes every device of the vendor.
 */
static const struct {
        int vendor, device;
        const char *what;
} not_gpus[] = {
        {0x1a03, -1, "ASPEED BMC display"},
        {0x102b, -1, "Matrox BMC display"},
        {0x1002, 0x515e, "ATI ES1000 server display"},
        {0x1234, 0x1111, "QEMU standard VGA"},
        {0x1b36, 0x0100, "QXL virtual display"},
        {0x1af4, 0x1050, "virtio GPU (virtual display)"},
        {0x15ad, 0x0405, "VMware SVGA"},
        {0x1013, -1, "Cirrus Logic virtual display"},
        {0x1414, 0x5353, "Hyper-V virtual display"},
};

static const char *not_a_gpu(const struct pdev *d)
{
        for (size_t i = 0; i < ARRAY_SIZE(not_gpus); i++)
                if (d->vendor == not_gpus[i].vendor && (not_gpus[i].device < 0 || d->device == not_gpus[i].device))
                        return not_gpus[i].what;
        return NULL;
}

/* Compute accelerators that are not display-class GPUs: PCI class 0x12 "processing accelerator"
 * (Intel Gaudi, AMD Instinct MI200/MI300, many inference cards) and 0x0b40 "co-processor". */
static bool is_accel(const struct pdev *d) { return (d->cls >> 16) == 0x12 || (d->cls >> 8) == 0x0b40; }

static void accel_sysfs(struct facts *f, const struct pdev *d, size_t n)
{
        _cleanup_free_ char *prefix = xasprintf("accel.%zu", n);
        fact_function(f, prefix, d);
        _cleanup_free_ char *np = dev_path(d, "numa_node");
        fact_file_int(f, np, "no numa_node attribute (kernel without NUMA, or trimmed tree)", "%s.numa_node", prefix);
}

/* NAMES when the listing of PCI_DEVS is gone (absent) or failed (LRC < 0) or a class could not be
 * read (BAD): unreadable is never "no GPU". */
static void mark_unknown(struct facts *f, int lrc, const char *bad, const char *const *names, size_t n)
{
        _cleanup_free_ char *unread = lrc < 0 ? xstrdup("listing failed") : bad ? xasprintf("class of %s", bad) : NULL;
        for (size_t i = 0; i < n; i++) {
                if (root_gone(lrc))
                        fact_absent(f, PCI_DEVS, "no " PCI_DEVS " under the root", "%s", names[i]);
                else if (unread)
                        fact_unreadable(f, PCI_DEVS, lrc < 0 ? lrc : 0, unread, "%s", names[i]);
        }
}

struct pci_counts {
        size_t nvidia, nvswitch, accel;
        struct strv excluded;
};

/* Each function by its class: a GPU (not a BMC's display adapter), an accelerator, an NVSwitch. */
static void classify(struct facts *f, struct state *s, struct pci_counts *c)
{
        s->gpus = xcalloc(s->ndevs + 1, sizeof(*s->gpus));
        for (size_t i = 0; i < s->ndevs; i++) {
                struct pdev *d = &s->devs[i];
                if (!d->has_class)
                        continue;
                const char *bmc = (d->cls >> 16) == 0x03 ? not_a_gpu(d) : NULL;
                if (bmc)
                        strv_push(&c->excluded, xasprintf("%s (%s)", d->addr, bmc));
                else if ((d->cls >> 16) == 0x03) {
                        s->gpus[s->ngpus++] = (struct gpu){.d = d, .numa_node = -1, .socket = -1};
                        c->nvidia += d->vendor == VENDOR_NVIDIA;
                }
                if (is_accel(d))
                        accel_sysfs(f, d, c->accel++);
                /* NVSwitch: NVIDIA "bridge, other" (A100 systems 1af1, H100 22a3) */
                if ((d->cls >> 8) == 0x0680 && d->vendor == VENDOR_NVIDIA) {
                        _cleanup_free_ char *dir = xasprintf(PCI_DEVS "/%s", d->addr);
                        fact_str(f, dir, d->addr, "nvswitch.%zu.address", c->nvswitch++);
                }
        }
}

static void stage_sysfs(struct facts *f, struct state *s)
{
        s->sysfs = true;
        _cleanup_free_ char *bad = NULL;
        int lrc = scan_devices(f, s, &bad);
        s->scan_rc = lrc;
        static const char *const counts[] = {"gpu.count", "gpu.nvidia_count", "nvswitch.count", "accel.count",
                                             "gpu.excluded"};
        mark_unknown(f, lrc, bad, counts, ARRAY_SIZE(counts));

        struct pci_counts c = {0};
        classify(f, s, &c);
        qsort_safe(s->gpus, s->ngpus, sizeof(*s->gpus), cmp_gpu);
        for (size_t i = 0; i < s->ngpus; i++)
                gpu_sysfs(f, s, i);
        fact_int(f, PCI_DEVS, (int64_t)s->ngpus, "gpu.count");
        fact_int(f, PCI_DEVS, (int64_t)c.nvidia, "gpu.nvidia_count");
        fact_int(f, PCI_DEVS, (int64_t)c.nvswitch, "nvswitch.count");
        s->nvswitches = c.nvswitch;
        fact_int(f, PCI_DEVS, (int64_t)c.accel, "accel.count");
        if (c.excluded.n) {
                _cleanup_free_ char *list = strv_join(&c.excluded, ", ");
                fact_str(f, PCI_DEVS, list, "gpu.excluded");
        } else
                fact_absent(f, PCI_DEVS, "no BMC or virtual display adapter", "gpu.excluded");
        strv_done(&c.excluded);
        /* Placement and RAM per GPU are about the GPUs found: with no PCI listing (or one that
         * failed) they are as unknown as gpu.count, not "no NVIDIA GPU". */
        static const char *const derived[] = {"gpu.per_socket", "gpu.sockets_used", "gpu.balanced",
                                              "gpu.ram_per_gpu"};
        mark_unknown(f, lrc, bad, derived, ARRAY_SIZE(derived));
        gpu_ram(f, c.nvidia);
        nvme_sysfs(f, s);
}

/* --- libpci stage ----------------------------------------------------------------------------- */

/* An NVIDIA GPU's architecture from the chip code that opens its pci.ids name ("GH100 [H100 SXM5
 * 80GB]", "GA100GL [A30 PCIe]"): NVIDIA names each chip by its architecture's letters and a number,
 * so a board the table lists but nobody listed here (an H200 is GH100, a B200 GB100) is known. */
static const char *nvidia_arch(const char *name)
{
        static const struct {
                const char *code, *arch;
        } codes[] = {{"GK", "kepler"}, {"GM", "maxwell"}, {"GP", "pascal"}, {"GV", "volta"},  {"TU", "turing"},
                     {"GA", "ampere"}, {"AD", "ada"},     {"GH", "hopper"}, {"GB", "blackwell"}};
        for (size_t k = 0; k < ARRAY_SIZE(codes); k++)
                if (strncmp(name, codes[k].code, 2) == 0 && isdigit((unsigned char)name[2]))
                        return codes[k].arch;
        return NULL;
}

static void gpu_arch(struct facts *f, const char *src, const char *prefix, const struct pdev *d, const char *name)
{
        const char *arch = name ? nvidia_arch(name) : NULL;
        if (d->vendor != 0x10de)
                fact_absent(f, src, "not an NVIDIA GPU", "%s.arch", prefix);
        else if (arch)
                fact_str(f, src, arch, "%s.arch", prefix);
        else if (!name)
                fact_absent(f, src, "device not in pci.ids (the tree's, else this host's): update it (update-pciids)",
                            "%s.arch", prefix);
        else
                fact_absent(f, src, "no known architecture's chip code opens the pci.ids name", "%s.arch", prefix);
}

/* gpu.N.{vendor,name,arch} from pci.ids (pci-ids.c). */
static void gpu_names(struct facts *f, size_t i, const struct pdev *d)
{
        _cleanup_free_ char *prefix = xasprintf("gpu.%zu", i);
        _cleanup_free_ char *vn = NULL, *dn = NULL;
        const char *src = NULL;
        int rc = d->vendor < 0 ? 0
                               : pci_ids_names(f, (unsigned)d->vendor, d->device < 0 ? 0u : (unsigned)d->device, &vn,
                                               &dn, &src);
        const char *where = src ? src : "pci.ids";
        if (rc < 0) {
                static const char *const names[] = {"vendor", "name", "arch"};
                for (size_t k = 0; k < ARRAY_SIZE(names); k++)
                        fact_absent(f, where, "no pci.ids in the tree (/usr/share/misc, /usr/share/hwdata) nor on this host",
                                    "%s.%s", prefix, names[k]);
                return;
        }
        if (vn)
                fact_str(f, where, vn, "%s.vendor", prefix);
        else
                fact_absent(f, where, d->vendor < 0 ? "vendor ID unknown" : "vendor not in pci.ids", "%s.vendor", prefix);
        if (dn && d->device >= 0)
                fact_str(f, where, dn, "%s.name", prefix);
        else
                fact_absent(f, where, d->device < 0 ? "device ID unknown" : "device not in pci.ids", "%s.name", prefix);
        gpu_arch(f, where, prefix, d, d->device >= 0 ? dn : NULL);
}

/* Link facts (config space through libpci): link.*, upstream.*, acs_redirect, config space first,
 * then the kernel's sysfs view. */
static void stage_libpci(struct facts *f, struct state *s)
{
        s->libpci = true;
        for (size_t i = 0; i < s->ngpus; i++) {
                _cleanup_free_ char *prefix = xasprintf("gpu.%zu", i);
                pci_link_facts(f, prefix, s->gpus[i].d->addr);
        }
}

static void stage_names(struct facts *f, struct state *s)
{
        s->names = true;
        for (size_t i = 0; i < s->ngpus; i++)
                gpu_names(f, i, s->gpus[i].d);
}

/* --- hwloc stage ------------------------------------------------------------------------------ */

static void stage_hwloc(struct facts *f, struct state *s)
{
        s->hwloc = true;
        for (size_t i = 0; i < s->ngpus; i++) {
                const struct gpu *g = &s->gpus[i];
                struct hwloc_locality loc;
                const char *err = NULL;
                const char *src = "hwloc";
                if (hwloc_pci_locality(f, g->d->loc.dom, g->d->loc.bus, g->d->loc.dev, g->d->loc.fn, &loc, &err) < 0) {
                        fact_unreadable(f, src, 0, err, "gpu.%zu.hwloc_numa_node", i);
                        fact_unreadable(f, src, 0, err, "gpu.%zu.locality_agrees", i);
                        continue;
                }
                _cleanup_free_ char *nodes = loc.nodes;
                if (!loc.found)
                        fact_absent(f, src, "hwloc has no object for this PCI function", "gpu.%zu.hwloc_numa_node", i);
                else if (loc.on_machine)
                        fact_absent(f, src, "hwloc attaches the GPU to the whole Machine: locality unknown",
                                    "gpu.%zu.hwloc_numa_node", i);
                else if (loc.numa_node < 0) {
                        _cleanup_free_ char *why =
                                xasprintf("hwloc places the GPU under several NUMA nodes (%s)", nodes ? nodes : "?");
                        fact_absent(f, src, why, "gpu.%zu.hwloc_numa_node", i);
                } else
                        fact_int(f, src, loc.numa_node, "gpu.%zu.hwloc_numa_node", i);

                /* Agreement of sysfs numa_node and hwloc: both known and equal. numa_node -1 while
                 * hwloc places the GPU (from local_cpus) is a disagreement; neither knowing, or no
                 * numa_node file at all, says nothing. */
                bool sys_known = g->numa_known && g->numa_node >= 0;
                bool hw_known = loc.found && !loc.on_machine && loc.numa_node >= 0;
                _cleanup_free_ char *np = dev_path(g->d, "numa_node");
                if (!g->numa_known)
                        fact_absent(f, np, "no sysfs numa_node value to compare with hwloc", "gpu.%zu.locality_agrees",
                                    i);
                else if (!sys_known && !hw_known)
                        fact_absent(f, np, "neither sysfs numa_node nor hwloc knows the GPU's NUMA node",
                                    "gpu.%zu.locality_agrees", i);
                else
                        fact_bool(f, np, sys_known && hw_known && g->numa_node == loc.numa_node,
                                  "gpu.%zu.locality_agrees", i);
        }
}

/* --- ib stage: GPU/HCA affinity ---------------------------------------------------------------- */

/*
 * gpu.N.local_hca: the RDMA devices nearest each GPU, as NCCL and GPUDirect RDMA pair them, from the
 * PCIe tree first (pci-link.c's pci_place, the walk that gives the HCA roles in probe-ib.c): an HCA
 * behind the GPU's PCIe switch (of several switches, the nearest), else one on its root port, else
 * on its host bridge; only when the tree pairs none, the NUMA node (an HCA on the GPU's node
 * crosses the CPU's fabric, one on the other socket the inter-socket link). gpu.N.local_hca_via
 * says which decided. "none" needs every HCA placed: an HCA whose place and node are unknown may be
 * the GPU's neighbour, so with none found the answer is unknown (unreadable, naming it).
 */
enum { VIA_SWITCH, VIA_ROOT_PORT, VIA_HOST_BRIDGE, VIA_NUMA, VIA_NONE };
static const char *const via_names[] = {"pcie_switch", "root_port", "host_bridge", "numa_node"};

struct hca {
        char *dev;
        bool placed; /* its place in the PCIe tree is known */
        struct pci_place place;
        int node;    /* its NUMA node, -1 unknown */
        char *why;   /* why neither is known */
};

static void hcas_done(struct hca *h, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(h[i].dev);
                pci_place_done(&h[i].place);
                free(h[i].why);
        }
        free(h);
}

/* Every HCA (an ib.DEV.numa_node fact, present whatever its state) with its place and node; the
 * RDMA devices of role nvlink-mgmt (probe-ib.c) are no HCAs. */
static struct hca *hcas_get(struct facts *f, size_t *ret_n)
{
        const struct fact **all = NULL;
        size_t n = facts_match(f, "ib.*.numa_node", &all), k = 0;
        struct hca *h = xcalloc(n ? n : 1, sizeof(*h));
        for (size_t i = 0; i < n; i++) {
                const char *name = all[i]->name + strlen("ib.");
                const char *dot = strchr(name, '.');
                if (!dot || !streq(dot, ".numa_node"))
                        continue;
                _cleanup_free_ char *dev = xstrndup(name, (size_t)(dot - name));
                /* an NVLink switch management bridge carries no GPU's network traffic */
                _cleanup_free_ char *rn = xasprintf("ib.%s.role", dev);
                const struct fact *rf = facts_get(f, rn);
                if (rf && rf->status == FACT_OK && streq(rf->str, "nvlink-mgmt"))
                        continue;
                struct hca *c = &h[k++];
                c->dev = TAKE_PTR(dev);
                _cleanup_free_ char *an = xasprintf("ib.%s.address", c->dev), *why = NULL;
                const struct fact *af = facts_get(f, an);
                c->placed = af && af->status == FACT_OK && pci_place_get(f, af->str, &c->place, &why) == 0;
                bool neg;
                uint64_t node;
                c->node = all[i]->status == FACT_OK && fact_number(all[i], &neg, &node) && !neg && node < INT32_MAX
                                  ? (int)node
                                  : -1;
                if (!c->placed && c->node < 0)
                        c->why = xasprintf("%s (%s)", c->dev,
                                           all[i]->status != FACT_OK ? all[i]->reason : "numa_node -1");
        }
        free(all);
        *ret_n = k;
        return h;
}

/* How near HCA H is to the GPU (its place GP, when known, and NUMA NODE, -1 unknown): VIA_* and,
 * behind one switch, the depth of the shared bridge; VIA_NONE when nothing is shared, -1 unknown. */
static int hca_near(const struct hca *h, const struct pci_place *gp, int node, size_t *depth)
{
        *depth = 0;
        if (gp && h->placed) {
                enum pci_near near = pci_place_near(gp, &h->place, depth);
                if (near != PCI_NEAR_NONE)
                        return near == PCI_NEAR_SWITCH ? VIA_SWITCH : near == PCI_NEAR_ROOT_PORT ? VIA_ROOT_PORT
                                                                                                 : VIA_HOST_BRIDGE;
        }
        if (node < 0 || h->node < 0)
                return -1;
        return h->node == node ? VIA_NUMA : VIA_NONE;
}

static void gpu_local_hca(struct facts *f, const struct gpu *g, size_t idx, const struct hca *h, size_t nh)
{
        struct pci_place gp;
        _cleanup_free_ char *why = NULL, *np = dev_path(g->d, "numa_node");
        bool placed = pci_place_get(f, g->d->addr, &gp, &why) == 0;
        int node = g->numa_known ? g->numa_node : -1;
        int best = VIA_NONE;
        size_t best_depth = 0;
        struct strv hcas = {0}, unknown = {0};
        for (size_t k = 0; k < nh; k++) {
                size_t depth;
                int via = hca_near(&h[k], placed ? &gp : NULL, node, &depth);
                if (via < 0) {
                        strv_add(&unknown, h[k].why ? h[k].why : h[k].dev);
                        continue;
                }
                if (via > best || (via == best && (via == VIA_NONE || depth > best_depth)))
                        continue;
                if (via < best || depth < best_depth)
                        strv_done(&hcas);
                best = via;
                best_depth = depth;
                strv_add(&hcas, h[k].dev);
        }
        _cleanup_free_ char *gdir = xasprintf(PCI_DEVS "/%s", g->d->addr);
        const char *src = best == VIA_NUMA || !placed ? np : gdir;
        if (!hcas.n && !placed && node < 0) {
                fact_absent(f, np, "neither the GPU's place in the PCIe tree nor its NUMA node is known",
                            "gpu.%zu.local_hca", idx);
                fact_absent(f, np, "neither the GPU's place in the PCIe tree nor its NUMA node is known",
                            "gpu.%zu.local_hca_via", idx);
        } else if (!hcas.n && unknown.n) {
                _cleanup_free_ char *list = strv_join(&unknown, ", ");
                _cleanup_free_ char *msg = xasprintf("no HCA known to be near the GPU (PCIe tree%s), and the place of %s "
                                                     "is unknown",
                                                     node >= 0 ? ", NUMA node" : "", list);
                fact_unreadable(f, "/sys/class/infiniband", 0, msg, "gpu.%zu.local_hca", idx);
                fact_unreadable(f, "/sys/class/infiniband", 0, msg, "gpu.%zu.local_hca_via", idx);
        } else {
                _cleanup_free_ char *list = hcas.n ? strv_join(&hcas, ",") : xstrdup("none");
                fact_str(f, src, list, "gpu.%zu.local_hca", idx);
                if (hcas.n)
                        fact_str(f, src, via_names[best], "gpu.%zu.local_hca_via", idx);
                else
                        fact_absent(f, src, "no HCA near the GPU", "gpu.%zu.local_hca_via", idx);
        }
        strv_done(&hcas);
        strv_done(&unknown);
        if (placed)
                pci_place_done(&gp);
}

/* gpu.N.pcie_switch: a PCIe switch sits between the GPU and its root port (a bridge below the root
 * port among its ancestors). HGX and DGX baseboards put each GPU and its rail there; ib-gpu-affinity
 * then asks for an HCA behind that switch, the path on which NCCL uses GPUDirect RDMA by default. */
static void gpu_pcie_switch(struct facts *f, const struct gpu *g, size_t idx)
{
        struct pci_place gp;
        _cleanup_free_ char *why = NULL, *gdir = xasprintf(PCI_DEVS "/%s", g->d->addr);
        int rc = pci_place_get(f, g->d->addr, &gp, &why);
        if (rc < 0) {
                /* a tree whose entry is not a link (trimmed, an export) gives no place: not there */
                if (root_gone(rc) || rc == -EINVAL)
                        fact_absent(f, gdir, why, "gpu.%zu.pcie_switch", idx);
                else
                        fact_unreadable(f, gdir, rc, why, "gpu.%zu.pcie_switch", idx);
                return;
        }
        fact_bool(f, gdir, gp.up.n >= 2, "gpu.%zu.pcie_switch", idx);
        pci_place_done(&gp);
}

static void stage_ib(struct facts *f, struct state *s)
{
        s->ib = true;
        for (size_t i = 0; i < s->ngpus; i++)
                gpu_pcie_switch(f, &s->gpus[i], i);
        if (s->ngpus == 0)
                return;
        const struct fact *count = facts_get(f, "ib.count");
        if (!count || count->status != FACT_OK) {
                const char *why = count ? count->reason : "no ib.count";
                for (size_t i = 0; i < s->ngpus; i++)
                        for (int k = 0; k < 2; k++) {
                                const char *name = k ? "local_hca_via" : "local_hca";
                                if (count && count->status == FACT_ABSENT)
                                        fact_absent(f, "/sys/class/infiniband", why, "gpu.%zu.%s", i, name);
                                else
                                        fact_unreadable(f, "/sys/class/infiniband", -EIO, why, "gpu.%zu.%s", i, name);
                        }
                return;
        }
        size_t nh;
        struct hca *h = hcas_get(f, &nh);
        for (size_t i = 0; i < s->ngpus; i++)
                gpu_local_hca(f, &s->gpus[i], i, h, nh);
        hcas_done(h, nh);
}

/* --- bridges stage: NVLink 5 switches behind ConnectX management bridges ----------------------- */

#define VENDOR_MELLANOX 0x15b3

/*
 * nvswitch.bridge_count, nvswitch.bridges, nvswitch.present. On NVLink 5 baseboards (HGX B200/B300)
 * the NVSwitches are no PCI functions of the host: they are reached through ConnectX management
 * bridges (facts/readers/nvlink-bridge.h decides which function is one, for probe-ib.c's roles too),
 * and the fabric manager then runs the NVLink Subnet Manager (NVLSM) over them. That is how NVIDIA's
 * own driver container tells such a system from an older one whose NVSwitches are PCI functions
 * (nvswitch.count). A VPD that is there but cannot be read (it is root's only) may be a bridge's:
 * unknown, never "none".
 */
static const char *const bridge_facts[] = {"nvswitch.bridge_count", "nvswitch.bridges", "nvswitch.present"};

static void stage_bridges(struct facts *f, struct state *s)
{
        s->bridges = true;
        if (s->scan_rc < 0) {
                mark_unknown(f, s->scan_rc, NULL, bridge_facts, ARRAY_SIZE(bridge_facts));
                return;
        }
        struct strv found = {0};
        _cleanup_free_ char *bad = NULL;
        int bad_rc = 0;
        if (!s->names)
                stage_names(f, s); /* the GPUs' architectures, for nvlink_bridges_possible */
        bool possible = nvlink_bridges_possible(f);
        for (size_t i = 0; possible && i < s->ndevs; i++) {
                /* nvlink_bridge_check decides (and checks the vendor itself); this only saves
                 * reading the vendor files of the other functions again */
                if (s->devs[i].vendor != VENDOR_MELLANOX)
                        continue;
                int rc = nvlink_bridge_check(facts_root(f), s->devs[i].addr);
                if (rc > 0)
                        strv_add(&found, s->devs[i].addr);
                else if (rc < 0 && !bad) {
                        bad = nvlink_bridge_vpd_path(s->devs[i].addr);
                        bad_rc = rc;
                }
        }
        if (bad && !found.n) {
                /* NVSwitches on the bus answer "present" whatever the bridges are */
                if (s->nvswitches)
                        fact_bool(f, PCI_DEVS, true, "nvswitch.present");
                for (size_t k = 0; k < ARRAY_SIZE(bridge_facts); k++)
                        fact_unreadable(f, bad, bad_rc, "the VPD of a ConnectX function (NVLink 5 switch bridges say "
                                                        "SW_MNG there) cannot be read", "%s", bridge_facts[k]);
        } else {
                fact_int(f, PCI_DEVS, (int64_t)found.n, "nvswitch.bridge_count");
                _cleanup_free_ char *list = found.n ? strv_join(&found, ",") : xstrdup("none");
                fact_str(f, PCI_DEVS, list, "nvswitch.bridges");
                fact_bool(f, PCI_DEVS, found.n || s->nvswitches, "nvswitch.present");
        }
        strv_done(&found);
}

/* --- probe entry points ----------------------------------------------------------------------- */

static struct state *get_state(struct facts *f)
{
        struct state *s = facts_state(f, STATE_KEY, sizeof(*s), state_free);
        if (!s->sysfs)
                stage_sysfs(f, s);
        return s;
}

static int pci_run(struct facts *f)
{
        struct state *s = get_state(f);
        if (!s->socket)
                stage_socket(f, s);
        if (!s->names)
                stage_names(f, s);
        if (!s->libpci)
                stage_libpci(f, s);
        if (!s->hwloc)
                stage_hwloc(f, s);
        if (!s->ib)
                stage_ib(f, s);
        if (!s->bridges)
                stage_bridges(f, s);
        return 0;
}

/* "PREFIX.N.REST": N, and REST in *ret_rest; -1 when NAME is not of that shape. */
static long item_index(const char *name, const char *prefix, const char **ret_rest)
{
        if (!startswith(name, prefix))
                return -1;
        const char *p = name + strlen(prefix);
        long n = 0;
        if (*p < '0' || *p > '9')
                return -1;
        for (; *p >= '0' && *p <= '9'; p++)
                if ((n = n * 10 + (*p - '0')) > 1000000)
                        return -1;
        if (*p != '.')
                return -1;
        *ret_rest = p + 1;
        return n;
}

static bool in_list(const char *s, const char *const *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (streq(s, v[i]))
                        return true;
        return false;
}

static const char *const gpu_sysfs_facts[] = {"address", "vendor_id", "device_id", "class", "driver", "numa_node",
                                              "local_cpus", "large_bar"};
static const char *const gpu_socket_facts[] = {"socket"};
/* The socket stage's facts that are no GPU's own. */
static const char *const socket_facts[] = {"gpu.per_socket", "gpu.sockets_used", "gpu.balanced"};
static const char *const gpu_names_facts[] = {"vendor", "name", "arch"};
static const char *const gpu_libpci_facts[] = {
        "link.speed", "link.width", "link.max_speed", "link.max_width", "link.width_ok",
        "link.speed_ok", "link.slot_limited", "upstream", "upstream_link.speed", "upstream_link.width",
        "upstream_link.max_speed", "upstream_link.max_width", "acs_redirect", "link.mps", "link.max_mps",
        "link.mrrs", "link.mps_ok", "upstream_link.mps", "upstream_link.max_mps", "upstream_link.mrrs"};
static const char *const gpu_hwloc_facts[] = {"hwloc_numa_node", "locality_agrees"};
static const char *const gpu_ib_facts[] = {"local_hca", "local_hca_via", "pcie_switch"};

/* The stages after sysfs, each with the GPU facts it provides and whether it has run. */
static const struct gpu_stage {
        const char *const *facts;
        size_t n;
        void (*run)(struct facts *f, struct state *s);
        size_t done; /* offset of its flag in struct state */
} gpu_stages[] = {
        {gpu_socket_facts, ARRAY_SIZE(gpu_socket_facts), stage_socket, offsetof(struct state, socket)},
        {gpu_names_facts, ARRAY_SIZE(gpu_names_facts), stage_names, offsetof(struct state, names)},
        {gpu_libpci_facts, ARRAY_SIZE(gpu_libpci_facts), stage_libpci, offsetof(struct state, libpci)},
        {gpu_hwloc_facts, ARRAY_SIZE(gpu_hwloc_facts), stage_hwloc, offsetof(struct state, hwloc)},
        {gpu_ib_facts, ARRAY_SIZE(gpu_ib_facts), stage_ib, offsetof(struct state, ib)},
};

static bool stage_done(const struct state *s, const struct gpu_stage *g) { return *(const bool *)((const char *)s + g->done); }

/* GPU IDX's fact REST (NAME in full): the stage that provides it; absent for a GPU or BAR that is
 * not there. */
static void gpu_lookup(struct facts *f, struct state *s, size_t idx, const char *rest, const char *name)
{
        unsigned bar;
        char tail;
        bool is_bar = sscanf(rest, "bar.%u.siz%c", &bar, &tail) == 2 && tail == 'e' && endswith(rest, ".size") &&
                      bar < 6;
        bool known = is_bar || in_list(rest, gpu_sysfs_facts, ARRAY_SIZE(gpu_sysfs_facts));
        for (size_t k = 0; k < ARRAY_SIZE(gpu_stages); k++) {
                const struct gpu_stage *g = &gpu_stages[k];
                if (!in_list(rest, g->facts, g->n))
                        continue;
                known = true;
                if (!stage_done(s, g))
                        g->run(f, s);
        }
        if (known && idx < s->ngpus && is_bar)
                fact_absent(f, PCI_DEVS, "BAR not implemented (no size in resource)", "%s", name);
        if (known && idx >= s->ngpus)
                fact_absent(f, PCI_DEVS, "no such GPU", "%s", name);
}

/* The other items: a well-formed name of one that is not there is absent. */
static const struct item_kind {
        const char *prefix, *dir, *reason;
        const char *const facts[6];
} item_kinds[] = {
        {"nvme.", NVME_DIR, "no such NVMe controller", {"name", "address", "numa_node"}},
        {"accel.", PCI_DEVS, "no such accelerator", {"address", "vendor_id", "device_id", "class", "numa_node"}},
        {"nvswitch.", PCI_DEVS, "no such NVSwitch", {"address"}},
};

/*
 * One name on demand: only the stage that provides it runs. A well-formed name for an item that
 * does not exist (gpu.7.numa_node on a 4-GPU host, an unused BAR) is recorded as absent, so that
 * asking for it does not fall through to the full probe (which would load libpci and hwloc).
 */
static int pci_lookup(struct facts *f, const char *name)
{
        struct state *s = get_state(f);
        const char *rest = NULL;
        long idx = item_index(name, "gpu.", &rest);
        if (idx >= 0) {
                gpu_lookup(f, s, (size_t)idx, rest, name);
                return 0;
        }
        if (!s->bridges && in_list(name, bridge_facts, ARRAY_SIZE(bridge_facts)))
                stage_bridges(f, s);
        if (!s->socket && in_list(name, socket_facts, ARRAY_SIZE(socket_facts)))
                stage_socket(f, s);
        for (size_t k = 0; k < ARRAY_SIZE(item_kinds); k++) {
                const struct item_kind *ik = &item_kinds[k];
                size_t n = 0;
                while (n < ARRAY_SIZE(ik->facts) && ik->facts[n])
                        n++;
                if (item_index(name, ik->prefix, &rest) >= 0 && in_list(rest, ik->facts, n))
                        fact_absent(f, ik->dir, ik->reason, "%s", name);
        }
        /* first writer wins: the absent records above never replace a real fact */
        return 0;
}

/* Could PATTERN name field FIELDS[k] of one of the GPUs here? A field the pattern's literal end
 * rules out is not formatted for each GPU. */
static bool pattern_hits(const struct state *s, const char *pattern, const char *const *fields, size_t n)
{
        for (size_t k = 0; k < n; k++) {
                char end[128];
                snprintf(end, sizeof(end), ".%s", fields[k]);
                if (!fact_pattern_may_end(pattern, end))
                        continue;
                for (size_t i = 0; i < s->ngpus; i++) {
                        char name[128];
                        snprintf(name, sizeof(name), "gpu.%zu.%s", i, fields[k]);
                        if (glob_match(pattern, name))
                                return true;
                }
        }
        return false;
}

/*
 * A glob pattern ("all gpu.*.numa_node" in a rule or a profile's match block): the sysfs stage
 * always (it is cheap and provides the counts), the others only when the pattern can name one of
 * their facts, so that a sysfs-only rule loads neither libpci nor hwloc.
 */
static int pci_match(struct facts *f, const char *pattern)
{
        struct state *s = get_state(f);
        for (size_t k = 0; k < ARRAY_SIZE(gpu_stages); k++) {
                const struct gpu_stage *g = &gpu_stages[k];
                if (!stage_done(s, g) && pattern_hits(s, pattern, g->facts, g->n))
                        g->run(f, s);
        }
        for (size_t k = 0; k < ARRAY_SIZE(bridge_facts) && !s->bridges; k++)
                if (glob_match(pattern, bridge_facts[k]))
                        stage_bridges(f, s);
        for (size_t k = 0; k < ARRAY_SIZE(socket_facts) && !s->socket; k++)
                if (glob_match(pattern, socket_facts[k]))
                        stage_socket(f, s);
        return 0;
}

const struct probe probe_pci = {
        .name = "pci",
        .prefixes = {"gpu.", "nvswitch.", "nvme.", "accel."},
        .run = pci_run,
        .lookup = pci_lookup,
        .match = pci_match,
};
