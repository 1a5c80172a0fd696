/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * iommu.*: whether DMA is translated by an IOMMU (Documentation/arch/x86/iommu.rst;
 * Documentation/admin-guide/kernel-parameters.txt iommu=, iommu.passthrough=).
 *   iommu.units  IOMMU hardware units the kernel registered (/sys/class/iommu: dmar0, ivhd0, ...)
 *   iommu.mode   off | passthrough | translated
 *   iommu.gpu_traffic  the DMA between devices that an IOMMU in translated mode would handle, the
 *                peer-memory path first: peermem (GPUDirect RDMA through nvidia_peermem or
 *                nv_peer_mem, which NVIDIA's GPUDirect RDMA documentation requires with the IOMMU
 *                off or in pass-through), rdma (GPUDirect RDMA through DMA-BUF with an RDMA device),
 *                p2p (two or more NVIDIA GPUs without NVSwitches: peer copies cross PCIe, which the
 *                CUDA Programming Guide does not support with the IOMMU on, on bare metal), none
 * The default domain type of the IOMMU groups (/sys/kernel/iommu_groups/N/type, Linux 5.11+:
 * "identity" = passthrough, "DMA"/"DMA-FQ" = translated; Documentation/ABI/testing/
 * sysfs-kernel-iommu_groups) decides; without it the command line (iommu=pt, iommu.passthrough=,
 * intel_iommu=off, amd_iommu=off, iommu=off; Documentation/admin-guide/kernel-parameters.txt).
 */
#include <errno.h>

#include "facts/facts.h"
#include "facts/probes/probes.h"

#define CLASS_DIR "/sys/class/iommu"
#define GROUPS_DIR "/sys/kernel/iommu_groups"

/* What the command line says: "off", "passthrough", "translated" or NULL. The last word wins. */
static const char *cmdline_mode(const char *cmdline)
{
        const char *mode = NULL;
        _cleanup_free_ char *copy = xstrdup(cmdline);
        char *save = NULL;
        for (char *t = strtok_r(copy, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
                if (streq(t, "iommu=pt") || streq(t, "iommu.passthrough=1") || streq(t, "iommu.passthrough=on"))
                        mode = "passthrough";
                else if (streq(t, "iommu.passthrough=0") || streq(t, "iommu.passthrough=off"))
                        mode = "translated";
                else if (streq(t, "iommu=off") || streq(t, "intel_iommu=off") || streq(t, "amd_iommu=off"))
                        mode = "off";
                else if (startswith(t, "intel_iommu=") && strstr(t, "on") && !mode)
                        mode = "translated";
        }
        return mode;
}

/* The groups' default domain types: how many are identity and DMA, the first file that said so
 * (*src), and the first that could not be read (*bad, *bad_rc; a group's type unknown). */
struct domains {
        unsigned identity, dma;
        char *src, *bad;
        int bad_rc;
};

static void count_domains(struct root *r, const struct strv *groups, int grc, struct domains *d)
{
        d->bad_rc = grc;
        if (grc < 0 && !root_gone(grc))
                d->bad = xstrdup(GROUPS_DIR);
        for (size_t i = 0; grc == 0 && i < groups->n; i++) {
                _cleanup_free_ char *p = xasprintf(GROUPS_DIR "/%s/type", groups->v[i]);
                _cleanup_free_ char *t = NULL;
                int rc = root_read_line(r, p, &t);
                if (rc < 0 && !root_gone(rc) && !d->bad) {
                        d->bad = xstrdup(p); /* that group's default domain is unknown */
                        d->bad_rc = rc;
                }
                if (rc < 0)
                        continue;
                if (streq(t, "identity"))
                        d->identity++;
                else if (startswith(t, "DMA"))
                        d->dma++;
                else
                        continue; /* "unmanaged" (VFIO), "blocked": not the default domain */
                if (!d->src)
                        d->src = xstrdup(p);
        }
}

/* iommu.mode when neither the domains nor the absence of every unit decide: the command line, or
 * why it cannot be known. */
static void mode_otherwise(struct facts *f, int urc, const struct domains *d)
{
        struct root *r = facts_root(f);
        const struct fact *cl = facts_get(f, "kernel.cmdline");
        const char *cmd = cl && cl->status == FACT_OK ? cmdline_mode(cl->str) : NULL;
        /* A foreign tree without /sys/class/iommu (not copied) still has the command line the
         * machine booted with; on the live system a missing class directory means no IOMMU driver,
         * whatever the command line asks for. */
        if (cmd && (urc == 0 || streq(cmd, "off") || (urc == -ENOENT && !root_runs_here(r))))
                fact_str(f, "/proc/cmdline", cmd, "iommu.mode");
        else if (urc == 0 && d->bad)
                fact_unreadable(f, d->bad, d->bad_rc, NULL, "iommu.mode");
        else if (urc == 0)
                fact_absent(f, GROUPS_DIR,
                            "an IOMMU is registered but the groups' default domain type is not exported (kernel "
                            "before 5.11) and the command line does not say",
                            "iommu.mode");
        else if (urc == -ENOENT)
                fact_absent(f, CLASS_DIR, "no " CLASS_DIR " under the root and nothing on the command line",
                            "iommu.mode");
        else
                fact_unreadable(f, CLASS_DIR, urc, NULL, "iommu.mode");
}

static int iommu_run(struct facts *f)
{
        struct root *r = facts_root(f);
        _cleanup_(strv_done) struct strv units = {0}, groups = {0};
        int urc = root_list(r, CLASS_DIR, &units);
        int grc = root_list(r, GROUPS_DIR, &groups);
        if (urc == 0)
                fact_int(f, CLASS_DIR, (int64_t)units.n, "iommu.units");
        else if (urc == -ENOENT)
                fact_absent(f, CLASS_DIR, "no " CLASS_DIR " (kernel without IOMMU support, or a trimmed tree)",
                            "iommu.units");
        else
                fact_unreadable(f, CLASS_DIR, urc, NULL, "iommu.units");

        struct domains d = {0};
        count_domains(r, &groups, grc, &d);
        if (d.dma)
                fact_str(f, d.src, "translated", "iommu.mode");
        else if (d.identity)
                fact_str(f, d.src, "passthrough", "iommu.mode");
        else if (urc == 0 && units.n == 0 && (grc < 0 || groups.n == 0))
                fact_str(f, CLASS_DIR, "off", "iommu.mode");
        else
                mode_otherwise(f, urc, &d);
        free(d.src);
        free(d.bad);
        return 0;
}

static const char *fact_str_of(struct facts *f, const char *name, int *err, const char **bad)
{
        const struct fact *fc = facts_get(f, name);
        if (fc && fc->status == FACT_UNREADABLE && !*err) {
                *err = -EIO;
                *bad = fc->name;
        }
        return fc && fc->status == FACT_OK ? fc->str : NULL;
}

static int64_t fact_int_of(struct facts *f, const char *name, int *err, const char **bad)
{
        const struct fact *fc = facts_get(f, name);
        if (fc && fc->status == FACT_UNREADABLE && !*err) {
                *err = -EIO;
                *bad = fc->name;
        }
        return fc && fc->status == FACT_OK ? (int64_t)fc->mag : 0;
}

static void gpu_traffic(struct facts *f)
{
        int err = 0;
        const char *bad = NULL;
        const char *peermem = fact_str_of(f, "gpudirect.peermem", &err, &bad);
        const char *mode = fact_str_of(f, "gpudirect.mode", &err, &bad);
        int64_t gpus = fact_int_of(f, "gpu.nvidia_count", &err, &bad);
        int64_t hcas = fact_int_of(f, "ib.count", &err, &bad);
        /* NVSwitches on the PCI bus, or an NVLink 5 board's behind its ConnectX bridges: peer copies
         * go over NVLink; only where neither is known to be there do they cross PCIe */
        const char *switches = fact_str_of(f, "nvswitch.present", &err, &bad);
        const char *use = (peermem && !streq(peermem, "none")) || (mode && streq(mode, "peermem")) ? "peermem"
                          : mode && streq(mode, "dmabuf") && hcas > 0                              ? "rdma"
                          : gpus >= 2 && switches && streq(switches, "false")                      ? "p2p"
                                                                                                    : NULL;
        if (use)
                fact_str(f, "gpudirect.*, gpu.nvidia_count, ib.count, nvswitch.present", use, "iommu.gpu_traffic");
        else if (err)
                fact_unreadable(f, bad, err, "it may decide the path", "iommu.gpu_traffic");
        else
                fact_str(f, "gpudirect.*, gpu.nvidia_count, ib.count, nvswitch.present", "none", "iommu.gpu_traffic");
}

static int iommu_probe_run(struct facts *f)
{
        iommu_run(f);
        gpu_traffic(f);
        return 0;
}

const struct probe probe_iommu = {
        .name = "iommu",
        .prefixes = {"iommu."},
        .run = iommu_probe_run,
};
