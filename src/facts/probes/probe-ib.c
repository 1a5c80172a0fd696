/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ib.*: RDMA devices and their ports from /sys/class/infiniband
 * (Documentation/ABI/stable/sysfs-class-infiniband). Devices keep their kernel names (mlx5_0).
 * The PCIe link of each HCA comes from pci-link.c (ib.DEV.link.*, ib.DEV.upstream.*); the port
 * counts ib.infiniband_ports / ib.active_ports let rules ask for "N InfiniBand ports ACTIVE".
 * Not every RDMA device is an HCA: on NVLink 5 baseboards the ConnectX functions that bridge the host
 * to the NVSwitches are mlx5 devices too (facts/readers/nvlink-bridge.h); they get the role
 * nvlink-mgmt and are left out of the HCA counts, the compute fabrics and NCCL's rails.
 */
#include <errno.h>
#include <stdio.h>

#include "facts/probes/counters.h"
#include "facts/facts.h"
#include "base/parse.h"
#include "facts/readers/nvlink-bridge.h"
#include "facts/readers/pci-link.h"
#include "facts/probes/probes.h"
#include "facts/probes/roce.h"

#define IB_DIR "/sys/class/infiniband"

/* "4: ACTIVE" / "5: LinkUp": the code and the word. */
static int parse_coded(const char *s, int64_t *code, char **word)
{
        const char *colon = strchr(s, ':');
        if (!colon)
                return -EINVAL;
        _cleanup_free_ char *num = xstrndup(s, (size_t)(colon - s));
        int rc = parse_i64(num, code);
        if (rc < 0)
                return rc;
        const char *w = colon + 1;
        while (*w == ' ' || *w == '\t')
                w++;
        if (!*w)
                return -ENODATA;
        for (const char *p = w; *p; p++)
                if (*p == ' ' || *p == '\t' || *p == '\n')
                        return -EINVAL;
        *word = xstrdup(w);
        return 0;
}

struct counts {
        int infiniband, active;  /* HCA ports with link layer InfiniBand; of those, ACTIVE */
        bool unknown;            /* a state or link layer could not be read */
        struct strv compute;     /* the fabrics of the compute ports (ib, roce, efa, other) */
};

/* ib.DEV.port.PORT.state and state_code from the port's directory DIR. Returns whether it is
 * ACTIVE; C->unknown is set when it cannot be read. */
static bool port_state(struct facts *f, const char *dir, const char *dev, const char *port, struct counts *c)
{
        _cleanup_free_ char *sp = xasprintf("%s/state", dir);
        _cleanup_free_ char *line = NULL, *word = NULL;
        int64_t code;
        bool active = false;
        int rc = root_read_line(facts_root(f), sp, &line);
        if (rc == 0)
                rc = parse_coded(line, &code, &word);
        if (rc == 0) {
                active = streq(word, "ACTIVE");
                fact_str(f, sp, word, "ib.%s.port.%s.state", dev, port);
                fact_int(f, sp, code, "ib.%s.port.%s.state_code", dev, port);
        } else if (rc == -ENOENT) {
                fact_absent(f, sp, "no state file", "ib.%s.port.%s.state", dev, port);
                fact_absent(f, sp, "no state file", "ib.%s.port.%s.state_code", dev, port);
        } else {
                c->unknown = true;
                fact_unreadable(f, sp, rc, line, "ib.%s.port.%s.state", dev, port);
                fact_unreadable(f, sp, rc, line, "ib.%s.port.%s.state_code", dev, port);
        }
        return active;
}

/* ib.DEV.port.PORT.phys_state from the port's directory DIR. */
static void port_phys_state(struct facts *f, const char *dir, const char *dev, const char *port)
{
        _cleanup_free_ char *pp = xasprintf("%s/phys_state", dir);
        _cleanup_free_ char *line = NULL, *word = NULL;
        int64_t code;
        int rc = root_read_line(facts_root(f), pp, &line);
        if (rc == 0)
                rc = parse_coded(line, &code, &word);
        if (rc == 0)
                fact_str(f, pp, word, "ib.%s.port.%s.phys_state", dev, port);
        else if (rc == -ENOENT)
                fact_absent(f, pp, "no phys_state file", "ib.%s.port.%s.phys_state", dev, port);
        else
                fact_unreadable(f, pp, rc, line, "ib.%s.port.%s.phys_state", dev, port);
}

/* ib.DEV.port.PORT.rate and rate_gbps from the port's directory DIR: "56 Gb/sec (4X FDR)"; the
 * kernel prints tenths only as ".5" (2.5 Gb/sec SDR 1X). */
static void port_rate(struct facts *f, const char *dir, const char *dev, const char *port)
{
        _cleanup_free_ char *rp = xasprintf("%s/rate", dir);
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(facts_root(f), rp, &line);
        if (rc == -ENOENT) {
                fact_absent(f, rp, "no rate file", "ib.%s.port.%s.rate", dev, port);
                fact_absent(f, rp, "no rate file", "ib.%s.port.%s.rate_gbps", dev, port);
                return;
        }
        if (rc < 0) {
                fact_unreadable(f, rp, rc, NULL, "ib.%s.port.%s.rate", dev, port);
                fact_unreadable(f, rp, rc, NULL, "ib.%s.port.%s.rate_gbps", dev, port);
                return;
        }
        fact_str(f, rp, line, "ib.%s.port.%s.rate", dev, port);
        unsigned whole = 0, half = 0;
        int n = 0;
        char tail;
        if (sscanf(line, "%u Gb/sec%n", &whole, &n) == 1 && n > 0 && whole < 100000)
                fact_int(f, rp, whole, "ib.%s.port.%s.rate_gbps", dev, port);
        else if (sscanf(line, "%u.%1u Gb/sec%n%c", &whole, &half, &n, &tail) >= 2 && n > 0 && half == 5 &&
                 whole < 100000) {
                char buf[32];
                snprintf(buf, sizeof(buf), "%u.5", whole);
                fact_str(f, rp, buf, "ib.%s.port.%s.rate_gbps", dev, port);
        } else
                fact_unreadable(f, rp, -EINVAL, line, "ib.%s.port.%s.rate_gbps", dev, port);
}

/* Error counters since the counters were last cleared (Documentation/ABI/stable/
 * sysfs-class-infiniband, counters/): a port whose symbol errors or link-downed count grow is
 * flapping, which stalls or kills NCCL jobs long before it goes down for good. */
static void port_counters(struct facts *f, const char *dir, const char *dev, const char *port)
{
        static const char *const counters[] = {"symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
                                               "local_link_integrity_errors", "excessive_buffer_overrun_errors"};
        for (size_t i = 0; i < ARRAY_SIZE(counters); i++) {
                _cleanup_free_ char *cp = xasprintf("%s/counters/%s", dir, counters[i]);
                /* A device without a Performance Management Agent (iWARP: i40iw, irdma in iWARP
                 * mode) has the files, but the kernel prints "N/A (no PMA)" in them
                 * (drivers/infiniband/core/sysfs.c, show_pma_counter): not there, not broken. */
                _cleanup_free_ char *val = NULL;
                if (root_read_line(facts_root(f), cp, &val) == 0 && strncmp(val, "N/A", 3) == 0) {
                        fact_absent(f, cp, "the adapter has no Performance Management Agent (the kernel prints \"N/A (no PMA)\")",
                                    "ib.%s.port.%s.%s", dev, port, counters[i]);
                        continue;
                }
                fact_file_int(f, cp, "no counters file (an Ethernet/RoCE port, or the driver does not provide it)",
                              "ib.%s.port.%s.%s", dev, port, counters[i]);
                _cleanup_free_ char *name = xasprintf("ib.%s.port.%s.%s", dev, port, counters[i]);
                counter_growth(f, name, NULL); /* NAME_growth: since the last recorded reading */
        }
}

/*
 * The fabric a port runs (ib.DEV.port.P.fabric), from its link layer (drivers/infiniband/core/
 * sysfs.c show_port_link_layer): "InfiniBand" is ib; "Ethernet" is RoCE (or iWARP, which NCCL's
 * IB transport does not use either way); "Unspecified" is what AWS's EFA reports, known by the
 * device's driver (efa), and any other such device is "other". Returns NULL when unreadable.
 */
static const char *port_fabric(const char *layer, int rc, bool efa)
{
        if (rc == -ENOENT || (rc == 0 && streq(layer, "InfiniBand")))
                return "ib"; /* without the file (kernels before 2.6.37) every port was InfiniBand */
        if (rc < 0)
                return NULL;
        if (streq(layer, "Ethernet"))
                return "roce";
        return efa ? "efa" : "other";
}

static const char *probe_port(struct facts *f, const char *dev, const char *port, bool efa, struct counts *c)
{
        _cleanup_free_ char *dir = xasprintf(IB_DIR "/%s/ports/%s", dev, port);
        bool active = port_state(f, dir, dev, port, c);
        port_phys_state(f, dir, dev, port);
        port_rate(f, dir, dev, port);
        port_counters(f, dir, dev, port);

        _cleanup_free_ char *lp = xasprintf("%s/link_layer", dir);
        fact_file_str(f, lp, "no link_layer file (kernel before 2.6.37)", "ib.%s.port.%s.link_layer", dev, port);
        _cleanup_free_ char *layer = NULL;
        int rc = root_read_line(facts_root(f), lp, &layer);
        const char *fabric = port_fabric(layer, rc, efa);
        if (fabric)
                fact_str(f, lp, fabric, "ib.%s.port.%s.fabric", dev, port);
        else
                fact_unreadable(f, lp, rc, NULL, "ib.%s.port.%s.fabric", dev, port);
        if (fabric && streq(fabric, "roce"))
                roce_port_facts(f, dev, port, dir);
        if (fabric && streq(fabric, "ib")) {
                c->infiniband++;
                c->active += active;
        } else if (!fabric)
                c->unknown = true;
        return fabric;
}

/*
 * Compute or storage HCA (ib.DEV.port.N.role): NCCL's rails are the HCAs paired with a GPU, and the
 * port rules judge only those. An HCA is paired with a GPU when the two share a PCIe switch, or any
 * bridge below the root port (HGX/DGX boards put each rail behind its GPU's switch); an HCA on a root
 * port of its own, behind no GPU's switch, carries storage or management traffic (DGX H100's storage
 * adapters), even on a NUMA node with GPUs. When no HCA shares a bridge with a GPU the tree says
 * nothing about pairing (GPUs and HCAs on root ports, or no device links in a trimmed tree), and the
 * NUMA node decides: an HCA on a node without NVIDIA GPUs is storage. "storage" needs proof: an HCA
 * whose place is unknown is "compute", so the rules keep judging it. An NVLink switch management
 * bridge is "nvlink-mgmt" wherever it sits, and takes no part in the pairing (a bridge behind a GPU's
 * switch does not make the tree pair HCAs); that needs proof too: a device whose VPD cannot be read
 * keeps the role its place gives (ib.DEV.nvlink_bridge says it is unknown).
 */
struct placement {
        bool numa_known;         /* NVIDIA GPUs exist and every one's NUMA node is known */
        struct strv nodes;       /* their NUMA nodes */
        struct pci_place *gpus;  /* the NVIDIA GPUs whose place in the tree is known */
        size_t ngpus;
        struct strv shared;      /* HCAs behind a bridge below the root port above one of them */
        struct strv apart;       /* HCAs whose path is known and behind none of them */
};

static void placement_done(struct placement *pl)
{
        strv_done(&pl->nodes);
        for (size_t i = 0; i < pl->ngpus; i++)
                pci_place_done(&pl->gpus[i]);
        free(pl->gpus);
        strv_done(&pl->shared);
        strv_done(&pl->apart);
}

static void gpu_places(struct facts *f, struct placement *pl)
{
        const struct fact **v;
        size_t n = facts_match(f, "gpu.*.vendor_id", &v);
        bool ok = true;
        size_t nvidia = 0;
        pl->gpus = xcalloc(n ? n : 1, sizeof(*pl->gpus));
        for (size_t i = 0; i < n; i++) {
                if (v[i]->status != FACT_OK) {
                        ok = false;
                        continue;
                }
                if (!streq(v[i]->str, "10de"))
                        continue;
                nvidia++;
                size_t plen = strlen(v[i]->name) - strlen("vendor_id");
                _cleanup_free_ char *np = xasprintf("%.*snuma_node", (int)plen, v[i]->name);
                _cleanup_free_ char *ap = xasprintf("%.*saddress", (int)plen, v[i]->name);
                const struct fact *nf = facts_get(f, np), *af = facts_get(f, ap);
                bool neg;
                uint64_t node;
                if (!nf || nf->status != FACT_OK || !fact_number(nf, &neg, &node) || neg)
                        ok = false;
                else if (!strv_contains(&pl->nodes, nf->str))
                        strv_add(&pl->nodes, nf->str);
                _cleanup_free_ char *why = NULL;
                if (af && af->status == FACT_OK && pci_place_get(f, af->str, &pl->gpus[pl->ngpus], &why) == 0)
                        pl->ngpus++;
        }
        free(v);
        pl->numa_known = ok && nvidia > 0;
}

/* Whether HCA DEV (its PCI function ADDR) shares a bridge below the root port with a GPU. */
static void hca_place(struct facts *f, const char *dev, const char *addr, struct placement *pl)
{
        struct pci_place hp;
        _cleanup_free_ char *why = NULL;
        if (pci_place_get(f, addr, &hp, &why) < 0)
                return;
        bool shared = false;
        for (size_t k = 0; k < pl->ngpus && !shared; k++)
                shared = pci_place_near(&hp, &pl->gpus[k], NULL) == PCI_NEAR_SWITCH;
        strv_add(shared ? &pl->shared : &pl->apart, dev);
        pci_place_done(&hp);
}

/* One RDMA device of /sys/class/infiniband: its PCI function, and whether that is an NVLink switch
 * management bridge (nvlink_bridge_check: 1, 0, -errno; 0 for a device that is no PCI function). */
struct ibdev {
        const char *name;
        char *addr;
        int bridge;
};

static const char *hca_role(struct facts *f, const struct ibdev *d, const struct placement *pl)
{
        const char *dev = d->name;
        if (d->bridge > 0) /* the NVLink Subnet Manager's, never NCCL's */
                return "nvlink-mgmt";
        if (pl->shared.n) /* the tree pairs HCAs with GPUs */
                return strv_contains(&pl->apart, dev) ? "storage" : "compute";
        if (!pl->numa_known)
                return "compute";
        _cleanup_free_ char *name = xasprintf("ib.%s.numa_node", dev);
        const struct fact *nf = facts_get(f, name);
        bool neg;
        uint64_t node;
        if (!nf || nf->status != FACT_OK || !fact_number(nf, &neg, &node) || neg)
                return "compute";
        return strv_contains(&pl->nodes, nf->str) ? "compute" : "storage";
}

/* ib.DEV.nvlink_bridge: whether the device's PCI function is an NVLink switch management bridge. */
static void bridge_fact(struct facts *f, const struct ibdev *d)
{
        if (!d->addr) {
                _cleanup_free_ char *link = xasprintf(IB_DIR "/%s/device", d->name);
                if (d->bridge < 0)
                        fact_unreadable(f, link, d->bridge, "the device link names the PCI function",
                                        "ib.%s.nvlink_bridge", d->name);
                else
                        fact_absent(f, link, "not a PCI device", "ib.%s.nvlink_bridge", d->name);
                return;
        }
        _cleanup_free_ char *vpd = nvlink_bridge_vpd_path(d->addr);
        if (d->bridge < 0)
                fact_unreadable(f, vpd, d->bridge,
                                "the function's VPD says whether it is an NVLink switch management bridge (SW_MNG)",
                                "ib.%s.nvlink_bridge", d->name);
        else
                fact_bool(f, vpd, d->bridge > 0, "ib.%s.nvlink_bridge", d->name);
}

static void probe_dev(struct facts *f, const struct ibdev *d, const struct placement *pl, struct counts *c)
{
        struct root *r = facts_root(f);
        const char *dev = d->name;
        _cleanup_free_ char *dir = xasprintf(IB_DIR "/%s", dev);
        _cleanup_free_ char *link = xasprintf("%s/device", dir);
        _cleanup_free_ char *np = xasprintf("%s/device/numa_node", dir);
        _cleanup_free_ char *pdir = xasprintf("%s/ports", dir);
        _cleanup_free_ char *target = NULL;

        int rc = root_readlink(r, link, &target);
        if (rc == 0) {
                const char *base = strrchr(target, '/');
                base = base ? base + 1 : target;
                struct pci_addr pa;
                if (pci_addr_parse(base, &pa)) {
                        fact_str(f, link, base, "ib.%s.address", dev);
                        _cleanup_free_ char *prefix = xasprintf("ib.%s", dev);
                        pci_link_facts(f, prefix, base);
                } else
                        fact_absent(f, link, "not a PCI device (software RDMA device?)", "ib.%s.address", dev);
        } else if (root_gone(rc))
                fact_absent(f, link, "no device link (software RDMA device, or the class link dangles)",
                            "ib.%s.address", dev);
        else
                fact_unreadable(f, link, rc, NULL, "ib.%s.address", dev);
        fact_file_int(f, np, "no numa_node for the device", "ib.%s.numa_node", dev);
        _cleanup_free_ char *fw = xasprintf("%s/fw_ver", dir);
        fact_file_str(f, fw, "the driver does not report a firmware version", "ib.%s.fw_ver", dev);
        _cleanup_free_ char *drv = NULL, *dlink = xasprintf("%s/device/driver", dir);
        bool efa = root_readlink(r, dlink, &drv) == 0 && endswith(drv, "/efa");
        bridge_fact(f, d);
        const char *role = hca_role(f, d, pl);
        fact_str(f, link, role, "ib.%s.role", dev);
        /* a bridge's ports are reported, but counted with no HCA's */
        struct counts scratch = {0};
        struct counts *pc = streq(role, "nvlink-mgmt") ? &scratch : c;

        struct strv ports = {0};
        rc = root_list(r, pdir, &ports);
        if (rc < 0) {
                if (root_gone(rc))
                        fact_absent(f, pdir, "no ports directory", "ib.%s.ports", dev);
                else
                        fact_unreadable(f, pdir, rc, NULL, "ib.%s.ports", dev);
                return;
        }
        int n = 0;
        for (size_t i = 0; i < ports.n; i++) {
                uint64_t p;
                if (parse_u64(ports.v[i], &p) < 0)
                        continue;
                const char *fabric = probe_port(f, dev, ports.v[i], efa, pc);
                fact_str(f, link, role, "ib.%s.port.%s.role", dev, ports.v[i]);
                if (fabric && streq(role, "compute") && !strv_contains(&c->compute, fabric))
                        strv_add(&c->compute, fabric);
                n++;
        }
        fact_int(f, pdir, n, "ib.%s.ports", dev);
        strv_done(&ports);
        strv_done(&scratch.compute);
}

/* The RDMA devices NAMES with their PCI functions and bridge tests. */
static struct ibdev *ibdevs_get(struct facts *f, const struct strv *names)
{
        struct ibdev *v = xcalloc(names->n ? names->n : 1, sizeof(*v));
        int possible = -1; /* nvlink5_possible, asked at the first PCI function */
        for (size_t i = 0; i < names->n; i++) {
                v[i].name = names->v[i];
                _cleanup_free_ char *link = xasprintf(IB_DIR "/%s/device", names->v[i]), *target = NULL;
                int rc = root_readlink(facts_root(f), link, &target);
                if (rc < 0) {
                        v[i].bridge = root_gone(rc) ? 0 : rc;
                        continue;
                }
                const char *base = strrchr(target, '/');
                base = base ? base + 1 : target;
                struct pci_addr pa;
                if (!pci_addr_parse(base, &pa))
                        continue;
                v[i].addr = xstrdup(base);
                if (possible < 0)
                        possible = nvlink_bridges_possible(f);
                v[i].bridge = possible ? nvlink_bridge_check(facts_root(f), base) : 0;
        }
        return v;
}

static struct ibdev *ibdevs_free(struct ibdev *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i].addr);
        free(v);
        return NULL;
}

/* ib.hca_count and ib.nvlink_mgmt_count: the devices that are HCAs, and the bridges. Whether a device
 * is a bridge unknown makes both unknown. */
static void role_counts(struct facts *f, const struct ibdev *v, size_t n)
{
        size_t bridges = 0;
        for (size_t i = 0; i < n; i++) {
                if (v[i].bridge < 0) {
                        _cleanup_free_ char *src = v[i].addr ? nvlink_bridge_vpd_path(v[i].addr)
                                                             : xasprintf(IB_DIR "/%s/device", v[i].name);
                        _cleanup_free_ char *why = xasprintf("whether %s is an NVLink switch management bridge is "
                                                             "unknown (ib.%s.nvlink_bridge)", v[i].name, v[i].name);
                        fact_unreadable(f, src, v[i].bridge, why, "ib.hca_count");
                        fact_unreadable(f, src, v[i].bridge, why, "ib.nvlink_mgmt_count");
                        return;
                }
                bridges += v[i].bridge > 0;
        }
        fact_int(f, IB_DIR, (int64_t)(n - bridges), "ib.hca_count");
        fact_int(f, IB_DIR, (int64_t)bridges, "ib.nvlink_mgmt_count");
}

/* PCI functions of class 0x0207 (InfiniBand controller): an HCA the RDMA core should list. The
 * first one's address in *ret; how many (0 when the bus cannot be listed). */
static int ib_functions_on_pci(struct root *r, char **ret)
{
        struct strv names = {0};
        if (root_list(r, "/sys/bus/pci/devices", &names) < 0)
                return 0;
        int n = 0;
        for (size_t i = 0; i < names.n; i++) {
                uint64_t cls;
                if (root_readf_u64(r, &cls, "/sys/bus/pci/devices/%s/class", names.v[i]) < 0 || (cls >> 8) != 0x0207)
                        continue;
                if (n++ == 0)
                        *ret = xstrdup(names.v[i]);
        }
        strv_done(&names);
        return n;
}

static int ib_run(struct facts *f)
{
        struct strv devs = {0};
        int rc = root_list(facts_root(f), IB_DIR, &devs);
        if (rc < 0) {
                _cleanup_free_ char *first = NULL;
                int on_pci = rc == -ENOENT ? ib_functions_on_pci(facts_root(f), &first) : 0;
                if (rc == -ENOENT && on_pci > 0) {
                        /* No class directory is not "no HCA" when the bus shows them. */
                        _cleanup_free_ char *why = xasprintf(
                                "RDMA devices present on PCI but not in " IB_DIR
                                " (rdma drivers not loaded?): %d InfiniBand controller%s (class 0x0207), first %s",
                                on_pci, on_pci == 1 ? "" : "s", first);
                        fact_absent(f, IB_DIR, why, "ib.count");
                        fact_absent(f, IB_DIR, why, "ib.hca_count");
                        fact_absent(f, IB_DIR, why, "ib.nvlink_mgmt_count");
                        fact_absent(f, IB_DIR, why, "ib.infiniband_ports");
                        fact_absent(f, IB_DIR, why, "ib.active_ports");
                        fact_absent(f, IB_DIR, why, "ib.compute_link_layers");
                } else if (rc == -ENOENT) {
                        fact_int(f, IB_DIR, 0, "ib.count");
                        fact_int(f, IB_DIR, 0, "ib.hca_count");
                        fact_int(f, IB_DIR, 0, "ib.nvlink_mgmt_count");
                        fact_int(f, IB_DIR, 0, "ib.infiniband_ports");
                        fact_int(f, IB_DIR, 0, "ib.active_ports");
                        fact_str(f, IB_DIR, "none", "ib.compute_link_layers");
                } else {
                        fact_unreadable(f, IB_DIR, rc, NULL, "ib.count");
                        fact_unreadable(f, IB_DIR, rc, NULL, "ib.hca_count");
                        fact_unreadable(f, IB_DIR, rc, NULL, "ib.nvlink_mgmt_count");
                        fact_unreadable(f, IB_DIR, rc, NULL, "ib.infiniband_ports");
                        fact_unreadable(f, IB_DIR, rc, NULL, "ib.active_ports");
                        fact_unreadable(f, IB_DIR, rc, NULL, "ib.compute_link_layers");
                }
                return 0;
        }
        struct counts c = {0};
        struct placement pl = {0};
        gpu_places(f, &pl);
        struct ibdev *v = ibdevs_get(f, &devs);
        for (size_t i = 0; i < devs.n; i++)
                if (v[i].addr && v[i].bridge <= 0)
                        hca_place(f, v[i].name, v[i].addr, &pl);
        for (size_t i = 0; i < devs.n; i++)
                probe_dev(f, &v[i], &pl, &c);
        placement_done(&pl);
        fact_int(f, IB_DIR, (int64_t)devs.n, "ib.count");
        role_counts(f, v, devs.n);
        v = ibdevs_free(v, devs.n);
        if (c.unknown) {
                fact_unreadable(f, IB_DIR, -EIO, "a port's state or link_layer is unreadable", "ib.infiniband_ports");
                fact_unreadable(f, IB_DIR, -EIO, "a port's state or link_layer is unreadable", "ib.active_ports");
                fact_unreadable(f, IB_DIR, -EIO, "a port's state or link_layer is unreadable", "ib.compute_link_layers");
        } else {
                fact_int(f, IB_DIR, c.infiniband, "ib.infiniband_ports");
                fact_int(f, IB_DIR, c.active, "ib.active_ports");
                strv_sort(&c.compute);
                _cleanup_free_ char *layers = c.compute.n ? strv_join(&c.compute, ",") : xstrdup("none");
                fact_str(f, IB_DIR, layers, "ib.compute_link_layers");
        }
        strv_done(&c.compute);
        strv_done(&devs);
        return 0;
}

const struct probe probe_ib = {
        .name = "ib",
        .prefixes = {"ib."},
        .run = ib_run,
};
