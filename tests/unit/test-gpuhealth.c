/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPU and fabric health facts read from files: nvml.* from every real `nvidia-smi -q -x` capture of
 * the corpus (../shared/corpus/nvidia-smi, see its PROVENANCE.md) and from broken ones.
 * The corpus is found through LLMTUNE_CORPUS; without it the corpus tests skip (exit 77) unless
 * LLMTUNE_REQUIRE_CORPUS=1.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "facts/probes/counters.h"
#include "facts/facts.h"
#include "facts/readers/kmsg.h"
#include "facts/readers/nvlink-status.h"
#include "base/root.h"
#include "tmptree.h"
#include "factcheck.h"
#include "unit-main.h"

static void setup(void) { tmptree_new("gpuhealth"); }

static void put(const char *rel, const char *text) { tmptree_write(rel, text, strlen(text)); }

/* The facts of the case's tree, with the source tree's data (the Xid catalogue). */
static struct facts *open_gpu_facts(void)
{
        struct facts *f = open_facts(NULL);
        facts_set_handle(f, "datadir", (void *)LLMTUNE_SRCDIR, NULL);
        return f;
}

static const char *corpus(void) { return getenv("LLMTUNE_CORPUS"); }
static bool have_corpus(void) { return corpus() != NULL; }

/* The corpus file NAME (under nvidia-smi/) copied to REL in the tree. */
static void copy_corpus(const char *name, const char *rel)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/nvidia-smi/%s", corpus(), name);
        FILE *in = fopen(path, "re");
        ck_assert_msg(in != NULL, "%s: %s", path, strerror(errno));
        static char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof(buf), in);
        ck_assert(feof(in));
        fclose(in);
        tmptree_write(rel, buf, n);
}

#define CAPTURE "var/lib/llmtune/captures/nvidia-smi.xml"

static struct facts *capture(const char *name)
{
        copy_corpus(name, CAPTURE);
        return open_gpu_facts();
}

/* --- nvml.* from captures: every corpus XML ------------------------------------------------------ */

START_TEST(xml_v100_dgx2_retired_pages)
{
        struct facts *f = capture("v100-sxm3-32gb-dgx2-retired-pages-driver410-v10.xml");
        eq(f, "nvml.count", "1");
        eq(f, "nvml.attached", "16"); /* trimmed capture: 1 of 16 */
        eq(f, "nvml.driver_version", "410.104");
        eq(f, "nvml.0.address", "0000:34:00.0");
        eq(f, "nvml.0.name", "Tesla V100-SXM3-32GB");
        eq(f, "nvml.0.retired.dbe", "2");
        eq(f, "nvml.0.retired.sbe", "0");
        eq(f, "nvml.0.retired.pending", "true");
        eq(f, "nvml.0.ecc.volatile.corrected", "1");
        eq(f, "nvml.0.ecc.volatile.uncorrected", "1");
        eq(f, "nvml.0.ecc.aggregate.corrected", "291");
        eq(f, "nvml.0.ecc.aggregate.uncorrected", "7627");
        eq(f, "nvml.0.ecc.current", "true");
        eq(f, "nvml.0.persistence_mode", "true");
        absent(f, "nvml.0.remap.pending", "no <remapped_rows> in the capture (driver 410.104)");
        absent(f, "nvml.0.mig.current", "no <mig_mode>");
        eq(f, "nvml.0.power.limit_mw", "350000");
        eq(f, "nvml.0.power.default_limit_mw", "350000");
        eq(f, "nvml.0.clock_events.active", "idle");
        absent(f, "nvml.0.nvlink.count", "does not report NVLink");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_v100_dgx2_retired_pages,
            .description = "xml v100 dgx2 retired pages", .root = "corpus", .when = have_corpus);

START_TEST(xml_a100_80gb_mig_v12)
{
        struct facts *f = capture("a100-sxm4-80gb-mig-driver535-v12.xml");
        eq(f, "nvml.count", "1");
        eq(f, "nvml.attached", "4");
        eq(f, "nvml.0.name", "NVIDIA A100-SXM4-80GB");
        eq(f, "nvml.0.mig.current", "true");
        eq(f, "nvml.0.mig.pending", "true");
        eq(f, "nvml.0.mig.instances", "4");
        absent(f, "nvml.0.remap.pending", "N/A in the capture (<remapped_rows>)"); /* MIG mode */
        eq(f, "nvml.0.ecc.volatile.uncorrected", "0");
        eq(f, "nvml.0.ecc.aggregate.corrected", "0");
        absent(f, "nvml.0.retired.dbe", "N/A");
        /* 535 names: clocks_event_reasons, gpu_power_readings/current_power_limit */
        eq(f, "nvml.0.clock_events.active", "none");
        eq(f, "nvml.0.clock_event.hw_slowdown", "false");
        eq(f, "nvml.0.power.limit_mw", "500000");
        eq(f, "nvml.0.power.min_limit_mw", "100000");
        eq(f, "nvml.0.persistence_mode", "false");
        eq(f, "nvml.0.pcie.gen", "4");
        eq(f, "nvml.0.uuid", "GPU-513536b6-7d19-9063-b049-1e69664bb298");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_a100_80gb_mig_v12, .description = "xml a100 80gb mig v12", .root = "corpus", .when = have_corpus);

START_TEST(xml_a100_40gb_mig_v11)
{
        struct facts *f = capture("a100-sxm4-40gb-mig-gcp-driver510-v11.xml");
        eq(f, "nvml.0.name", "NVIDIA A100-SXM4-40GB");
        eq(f, "nvml.0.mig.instances", "2");
        eq(f, "nvml.0.mig.current", "true");
        absent(f, "nvml.0.ecc.volatile.corrected", "N/A"); /* volatile N/A, aggregate 0 */
        eq(f, "nvml.0.ecc.aggregate.uncorrected", "0");
        /* "Not Active" wrapped across lines in this re-indented file */
        eq(f, "nvml.0.clock_event.applications_clocks", "false");
        eq(f, "nvml.0.power.limit_mw", "400000"); /* pre-535 enforced_power_limit */
        eq(f, "nvml.driver_version", "510.47.03");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_a100_40gb_mig_v11, .description = "xml a100 40gb mig v11", .root = "corpus", .when = have_corpus);

START_TEST(xml_k80_x4_hyperv)
{
        struct facts *f = capture("tesla-k80-x4-azure-ecc-retired-driver430-v10.xml");
        eq(f, "nvml.count", "4");
        /* PCI order, not minor-number order; Hyper-V domains as sysfs spells them */
        eq(f, "nvml.0.address", "1580:00:00.0");
        eq(f, "nvml.1.address", "2df7:00:00.0");
        eq(f, "nvml.2.address", "4968:00:00.0");
        eq(f, "nvml.3.address", "f8d6:00:00.0");
        eq(f, "nvml.0.retired.sbe", "1");
        eq(f, "nvml.0.retired.dbe", "1");
        eq(f, "nvml.0.ecc.aggregate.corrected", "7");
        eq(f, "nvml.0.ecc.aggregate.uncorrected", "7");
        eq(f, "nvml.1.ecc.aggregate.corrected", "34");
        eq(f, "nvml.1.ecc.aggregate.uncorrected", "4");
        eq(f, "nvml.0.retired.pending", "false"); /* pending_blacklist, the old name */
        eq(f, "nvml.0.clock_events.active", "applications_clocks");
        eq(f, "nvml.2.clock_events.active", "idle");
        eq(f, "nvml.2.pcie.gen", "1");
        eq(f, "nvml.0.power.limit_mw", "149000");
        absent(f, "nvml.0.clock_event.hw_thermal_slowdown", "N/A");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_k80_x4_hyperv, .description = "xml k80 x4 hyperv", .root = "corpus", .when = have_corpus);

START_TEST(xml_t4_x8)
{
        struct facts *f = capture("tesla-t4-aws-driver515-v11.xml");
        eq(f, "nvml.0.name", "Tesla T4");
        eq(f, "nvml.0.pcie.width", "8");
        eq(f, "nvml.0.pcie.max_width", "16");
        eq(f, "nvml.0.pcie.gen", "3");
        eq(f, "nvml.0.retired.dbe", "0");
        eq(f, "nvml.0.retired.pending", "false");
        absent(f, "nvml.0.remap.correctable", "N/A");
        eq(f, "nvml.0.mig.instances", "0");
        absent(f, "nvml.0.mig.current", "N/A");
        eq(f, "nvml.0.power.limit_mw", "70000");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_t4_x8, .description = "xml t4 x8", .root = "corpus", .when = have_corpus);

START_TEST(xml_a10g_remap)
{
        struct facts *f = capture("a10g-aws-driver515-v11.xml");
        eq(f, "nvml.0.name", "NVIDIA A10G");
        eq(f, "nvml.0.remap.correctable", "0");
        eq(f, "nvml.0.remap.uncorrectable", "0");
        eq(f, "nvml.0.remap.pending", "false");
        eq(f, "nvml.0.remap.failure", "false");
        absent(f, "nvml.0.retired.sbe", "N/A");
        eq(f, "nvml.0.pcie.gen", "1");
        eq(f, "nvml.0.pcie.width", "8");
        eq(f, "nvml.0.clock_event.idle", "true");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_a10g_remap, .description = "xml a10g remap", .root = "corpus", .when = have_corpus);

START_TEST(xml_rtx4090)
{
        struct facts *f = capture("geforce-rtx-4090-driver535-v12.xml");
        eq(f, "nvml.0.name", "NVIDIA GeForce RTX 4090");
        eq(f, "nvml.0.ecc.current", "false");
        absent(f, "nvml.0.ecc.volatile.uncorrected", "N/A");
        eq(f, "nvml.0.remap.pending", "false");
        eq(f, "nvml.0.power.limit_mw", "450000");
        eq(f, "nvml.0.power.max_limit_mw", "600000");
        eq(f, "nvml.0.power.min_limit_mw", "10000");
        eq(f, "nvml.0.persistence_mode", "true");
        eq(f, "nvml.0.pcie.max_gen", "3"); /* host-limited */
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_rtx4090, .description = "xml rtx4090", .root = "corpus", .when = have_corpus);

START_TEST(xml_p100_ecc)
{
        struct facts *f = capture("tesla-p100-pcie-16gb-gcp-driver510-v11.xml");
        eq(f, "nvml.0.name", "Tesla P100-PCIE-16GB");
        eq(f, "nvml.0.ecc.aggregate.corrected", "3");
        eq(f, "nvml.0.ecc.aggregate.uncorrected", "0");
        eq(f, "nvml.0.retired.sbe", "0");
        eq(f, "nvml.0.retired.pending", "false");
        eq(f, "nvml.0.power.min_limit_mw", "125000");
        eq(f, "nvml.0.processes.compute", "0");
        eq(f, "nvml.0.processes.list", "none");
        eq(f, "nvml.0.memory.used", "0");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_p100_ecc, .description = "xml p100 ecc", .root = "corpus", .when = have_corpus);

START_TEST(xml_a5000_x2_v13)
{
        struct facts *f = capture("rtx-a5000-x2-driver590-v13.xml");
        eq(f, "nvml.count", "2");
        eq(f, "nvml.0.address", "0000:81:00.0");
        eq(f, "nvml.1.address", "0000:c1:00.0");
        eq(f, "nvml.0.uuid", "GPU-12345678-aaaa-bbbb-cccc-0123456789ab");
        eq(f, "nvml.1.uuid", "GPU-12345678-aaaa-bbbb-cccc-0123456789cd");
        eq(f, "nvml.1.name", "NVIDIA RTX A5000");
        eq(f, "nvml.0.remap.pending", "false");
        absent(f, "nvml.0.ecc.aggregate.uncorrected", "N/A"); /* v13 sram_uncorrectable_parity/secded */
        eq(f, "nvml.0.ecc.current", "false");
        eq(f, "nvml.driver_version", "590.44.01");
        eq(f, "nvml.0.power.limit_mw", "230000");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_a5000_x2_v13, .description = "xml a5000 x2 v13", .root = "corpus", .when = have_corpus);

START_TEST(xml_blackwell_v13)
{
        struct facts *f = capture("rtx-pro-6000-blackwell-maxq-driver590-v13.xml");
        eq(f, "nvml.0.name", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition");
        eq(f, "nvml.0.clock_events.active", "none");
        eq(f, "nvml.0.clock_event.sw_power_cap", "false");
        eq(f, "nvml.0.pcie.gen", "1");
        eq(f, "nvml.0.power.limit_mw", "300000");
        eq(f, "nvml.0.power.max_limit_mw", "325000");
        eq(f, "nvml.0.remap.uncorrectable", "0");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_blackwell_v13, .description = "xml blackwell v13", .root = "corpus", .when = have_corpus);

START_TEST(xml_ada_v13)
{
        struct facts *f = capture("rtx-4000-sff-ada-driver595-v13.xml");
        eq(f, "nvml.0.name", "NVIDIA RTX 4000 SFF Ada Generation");
        eq(f, "nvml.driver_version", "595.84");
        eq(f, "nvml.0.remap.correctable", "0");
        eq(f, "nvml.0.ecc.current", "false");
        eq(f, "nvml.0.power.limit_mw", "70000");
        eq(f, "nvml.0.persistence_mode", "true");
        /* a desktop in use: two CUDA processes (C, C+G) and two graphics-only ones */
        eq(f, "nvml.0.processes.compute", "2");
        eq(f, "nvml.0.processes.graphics", "2");
        eq(f, "nvml.0.processes.list", "4937 python 160 MiB, 34626 /usr/lib/chromium/chromium 183 MiB");
        eq(f, "nvml.0.memory.used", "3705667584"); /* 3534 MiB */
        eq(f, "nvml.0.memory.total", "21469593600"); /* 20475 MiB */
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_ada_v13, .description = "xml ada v13", .root = "corpus", .when = have_corpus);

START_TEST(xml_2080ti_x2_v10)
{
        struct facts *f = capture("geforce-rtx-2080ti-x2-driver410-v10.xml");
        eq(f, "nvml.count", "2");
        absent(f, "nvml.0.ecc.current", "N/A");
        absent(f, "nvml.1.retired.dbe", "N/A");
        absent(f, "nvml.1.retired.pending", "N/A");
        eq(f, "nvml.1.clock_event.sw_power_cap", "true");
        eq(f, "nvml.1.clock_events.active", "sw_power_cap");
        eq(f, "nvml.0.clock_events.active", "idle");
        eq(f, "nvml.0.pcie.gen", "1");
        eq(f, "nvml.0.power.max_limit_mw", "280000");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_2080ti_x2_v10, .description = "xml 2080ti x2 v10", .root = "corpus", .when = have_corpus);

/* --- nvml.* from broken or missing captures, and the PCI cross-check ----------------------------- */

START_TEST(xml_missing_and_broken)
{
        struct facts *f = open_gpu_facts();
        absent(f, "nvml.count", "no nvidia-smi capture");
        absent(f, "nvml.unlisted", "no nvidia-smi capture");
        close_facts(f);

        put(CAPTURE, "<nvidia_smi_log><gpu id=\"00000000:01:00.0\"><product_name>x</product_nam");
        f = open_gpu_facts();
        unreadable(f, "nvml.count", "not XML");
        close_facts(f);

        put(CAPTURE, "<?xml version=\"1.0\"?><html><body/></html>");
        f = open_gpu_facts();
        unreadable(f, "nvml.count", "no <nvidia_smi_log>");
        close_facts(f);

        /* an entity must not be expanded from outside the capture */
        put(CAPTURE, "<?xml version=\"1.0\"?>\n<!DOCTYPE nvidia_smi_log [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>\n"
                     "<nvidia_smi_log><driver_version>&x;</driver_version><attached_gpus>1</attached_gpus>"
                     "<gpu id=\"00000000:01:00.0\">\n <persistence_mode>\n  Enabled\n </persistence_mode>"
                     "<compute_mode>[Unknown Error]</compute_mode><pci><replay_counter>lots</replay_counter></pci>"
                     "</gpu></nvidia_smi_log>");
        f = open_gpu_facts();
        eq(f, "nvml.count", "1");
        const struct fact *dv = facts_get(f, "nvml.driver_version");
        ck_assert(dv && (dv->status != FACT_OK || !strstr(dv->str, "root:")));
        eq(f, "nvml.0.persistence_mode", "true"); /* whitespace around the value */
        unreadable(f, "nvml.0.compute_mode", "[Unknown Error]");
        unreadable(f, "nvml.0.pcie.replay", "not a number");
        absent(f, "nvml.0.uuid", "no <uuid>");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_missing_and_broken, .description = "xml missing and broken", .root = "tmptree");

static void pci_gpu(const char *addr)
{
        char p[256];
        snprintf(p, sizeof(p), "sys/bus/pci/devices/%s/vendor", addr);
        put(p, "0x10de\n");
        snprintf(p, sizeof(p), "sys/bus/pci/devices/%s/device", addr);
        put(p, "0x20b2\n");
        snprintf(p, sizeof(p), "sys/bus/pci/devices/%s/class", addr);
        put(p, "0x030200\n");
}

START_TEST(xml_unlisted_gpu)
{
        /* the DGX-2 capture lists one GPU (34:00.0); sysfs has it and one more */
        copy_corpus("v100-sxm3-32gb-dgx2-retired-pages-driver410-v10.xml", CAPTURE);
        pci_gpu("0000:34:00.0");
        pci_gpu("0000:36:00.0");
        struct facts *f = open_gpu_facts();
        eq(f, "nvml.unlisted", "0000:36:00.0");
        eq(f, "nvml.unlisted_count", "1");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_unlisted_gpu, .description = "xml unlisted gpu", .root = "corpus", .when = have_corpus);

START_TEST(xml_all_listed)
{
        copy_corpus("tesla-k80-x4-azure-ecc-retired-driver430-v10.xml", CAPTURE);
        pci_gpu("1580:00:00.0");
        pci_gpu("2df7:00:00.0");
        pci_gpu("4968:00:00.0");
        pci_gpu("f8d6:00:00.0");
        struct facts *f = open_gpu_facts();
        eq(f, "nvml.unlisted", "none");
        eq(f, "nvml.unlisted_count", "0");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_all_listed, .description = "xml all listed", .root = "corpus", .when = have_corpus);

/* Asking for other facts does not parse the capture. */
START_TEST(xml_lazy)
{
        put(CAPTURE, "not xml at all");
        struct facts *f = open_gpu_facts();
        const struct fact **all = NULL;
        size_t n = facts_under(f, "cpu", &all);
        free(all);
        (void)n;
        ck_assert_ptr_null(strstr(facts_handles_loaded(), "nvidia-smi-xml"));
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_lazy, .description = "xml lazy", .root = "tmptree");


/* NVLink from a `nvidia-smi nvlink -s` capture beside the -q -x one, matched by UUID: the real A100
 * outputs (12 links up; NVML's "all links are inActive") given to the corpus's A100 capture. */
static char *corpus_text(const char *name)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/nvidia-smi/%s", corpus(), name);
        char *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(read_user_file(path, 1 << 20, &data, &len), 0);
        return data;
}

static void a100_with_uuid(const char *uuid)
{
        _cleanup_free_ char *xml = corpus_text("a100-sxm4-80gb-mig-driver535-v12.xml");
        char *u = strstr(xml, "GPU-513536b6-7d19-9063-b049-1e69664bb298");
        ck_assert_ptr_nonnull(u);
        memcpy(u, uuid, strlen("GPU-513536b6-7d19-9063-b049-1e69664bb298"));
        put(CAPTURE, xml);
}

START_TEST(xml_nvlink_status)
{
        _cleanup_free_ char *x8 = corpus_text("nvlink-s-a100-sxm4-80gb-x8.txt");
        a100_with_uuid("GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4"); /* GPU 1 of the x8 output */
        put(NVLINK_STATUS_CAPTURE, x8);
        struct facts *f = open_facts(NULL);
        eq(f, "nvml.0.nvlink.count", "12");
        eq(f, "nvml.0.nvlink.up", "12");
        eq(f, "nvml.0.nvlink.down", "0");
        eq(f, "nvml.0.nvlink.11.state", "up");
        absent(f, "nvml.0.nvlink.errors", "no error counters");
        close_facts(f);

        char *link3 = strstr(strstr(x8, "GPU 1:"), "Link 3: ") + strlen("Link 3: ");
        _cleanup_free_ char *down = xasprintf("%.*s<inactive>%s", (int)(link3 - x8), x8, link3 + strlen("25 GB/s"));
        put(NVLINK_STATUS_CAPTURE, down); /* a link down, as nvidia-smi prints it */
        f = open_facts(NULL);
        eq(f, "nvml.0.nvlink.up", "11");
        eq(f, "nvml.0.nvlink.down", "1");
        eq(f, "nvml.0.nvlink.3.state", "down");
        close_facts(f);

        _cleanup_free_ char *dead = corpus_text("nvlink-s-a100-sxm4-80gb-all-links-inactive-azure.txt");
        a100_with_uuid("GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44");
        put(NVLINK_STATUS_CAPTURE, dead);
        f = open_facts(NULL);
        eq(f, "nvml.0.nvlink.up", "0");
        absent(f, "nvml.0.nvlink.count", "all links are inActive");
        close_facts(f);

        a100_with_uuid("GPU-00000000-0000-0000-0000-000000000000"); /* not in the nvlink capture */
        f = open_facts(NULL);
        absent(f, "nvml.0.nvlink.up", "is not in /var/lib/llmtune/captures/nvidia-smi-nvlink.txt");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xml_nvlink_status, .description = "NVLink state from an nvidia-smi nvlink -s capture, matched by UUID",
            .root = "corpus", .when = have_corpus);

/* --- xid.* from kernel logs ---------------------------------------------------------------------- */

START_TEST(xid_corpus_dmesg)
{
        copy_corpus("dmesg-xid119-gsp-timeout-dell-xe9680.log", "var/log/dmesg");
        struct facts *f = open_gpu_facts();
        eq(f, "xid.source", "/var/log/dmesg");
        eq(f, "xid.events", "5");
        eq(f, "xid.codes", "119");
        eq(f, "xid.critical", "119");
        eq(f, "xid.warning", "none");
        eq(f, "xid.unknown", "none");
        eq(f, "xid.devices", "0000:9b:00");
        eq(f, "xid.0000:9b:00.codes", "119");
        eq(f, "xid.0000:9b:00.events", "5");
        eq(f, "xid.0000:9b:00.actions", "119:RESET_GPU");
        const struct fact *last = get_as(f, "xid.0000:9b:00.last", FACT_OK);
        ck_assert_ptr_nonnull(strstr(last->str, "name=gpud, Timeout after 6s of waiting for RPC response from GPU4 GSP"));
        close_facts(f);
}
END_TEST
DEFINE_TEST(xid_corpus_dmesg, .description = "xid corpus dmesg", .root = "corpus", .when = have_corpus);

/* /dev/kmsg's reader over a stand-in with the same read() contract: a non-blocking SOCK_SEQPACKET
 * socket gives one record per read and EAGAIN at the end of what was written. */
struct kmsg_seen {
        char lines[4][128];
        unsigned n, stop_after;
};

static int kmsg_collect(char *line, size_t len, void *userdata)
{
        struct kmsg_seen *s = userdata;
        ck_assert_uint_eq(len, strlen(line));
        snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s", line);
        return ++s->n == s->stop_after;
}

static int kmsg_stand_in(void)
{
        static const char *const recs[] = {
                "6,1,5000123,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
                " SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n",
                "4,5000000000,6000000,c;second\n",
                "not a record\n",
        };
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
        for (size_t i = 0; i < ARRAY_SIZE(recs); i++)
                ck_assert_int_eq(write(sv[1], recs[i], strlen(recs[i])), (ssize_t)strlen(recs[i]));
        close(sv[1]);
        return sv[0];
}

START_TEST(kmsg_records)
{
        struct kmsg_seen s = {.stop_after = 99};
        int fd = kmsg_stand_in();
        ck_assert_int_eq(kmsg_read_records(fd, 10, kmsg_collect, &s), 0);
        close(fd);
        ck_assert_uint_eq(s.n, 3); /* the end of the buffer ends the read, not an error */
        ck_assert_str_eq(s.lines[0], "6,1,5000123,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.");
        ck_assert_str_eq(s.lines[1], "4,5000000000,6000000,c;second"); /* continuation lines left out */

        unsigned long long usec = 0;
        const char *text = NULL;
        ck_assert(kmsg_record_parse(s.lines[1], &usec, &text)); /* a sequence number past 32 bits */
        ck_assert_uint_eq(usec, 6000000);
        ck_assert_str_eq(text, "second");
        ck_assert(!kmsg_record_parse(s.lines[2], &usec, &text));
        ck_assert(!kmsg_record_parse("[  600.2] NVRM: Xid (PCI:0000:3b:00): 13; x", &usec, &text));

        /* MAX records, and the callback's stop */
        struct kmsg_seen one = {.stop_after = 99}, two = {.stop_after = 2};
        fd = kmsg_stand_in();
        ck_assert_int_eq(kmsg_read_records(fd, 1, kmsg_collect, &one), 0);
        close(fd);
        ck_assert_uint_eq(one.n, 1);
        fd = kmsg_stand_in();
        ck_assert_int_eq(kmsg_read_records(fd, 10, kmsg_collect, &two), 0);
        close(fd);
        ck_assert_uint_eq(two.n, 2);

        /* A read that fails otherwise is an error, not the end of the log */
        ck_assert_int_eq(kmsg_read_records(-1, 10, kmsg_collect, &s), -EBADF);
}
END_TEST
DEFINE_TEST(kmsg_records, .description = "the /dev/kmsg reader: one record per read, its first line, EAGAIN the end",
            .root = "none");

/* A kern.log spanning two boots: only the last one counts. Several GPUs, unknown codes, both line
 * formats. */
START_TEST(xid_kern_log_boots)
{
        put("var/log/kern.log",
            "Nov 29 01:00:00 n1 kernel: [    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)\n"
            "Nov 29 03:00:00 n1 kernel: [ 9000.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
            "Nov 30 01:00:00 n1 kernel: [    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)\n"
            "Nov 30 01:10:00 n1 kernel: [  600.2] NVRM: Xid (PCI:0000:3B:00): 13, pid=99, name=python, Graphics Exception\n"
            "Nov 30 01:10:01 n1 kernel: [  601.2] NVRM: Xid (PCI:0000:3b:00): 13, pid=99, name=python, Graphics Exception\n"
            "Nov 30 01:20:00 n1 kernel: [ 1200.0] NVRM: Xid (PCI:0000:86:00): 48, pid=7, name=train, DBE (double bit error)\n"
            "Nov 30 01:30:00 n1 kernel: [ 1800.0] NVRM: Xid (0000:01:00): 31, Ch 0000000b, engmask 00000120\n"
            "Nov 30 01:40:00 n1 kernel: [ 2400.0] NVRM: Xid (PCI:0000:86:00): 999, pid=7, name=train, from the future\n"
            "Nov 30 01:50:00 n1 kernel: [ 3000.0] NVRM: Xid (PCI:0000:86:00: garbage line\n"
            "Nov 30 01:50:01 n1 kernel: [ 3000.1] NVRM: GPU at PCI:0000:86:00: GPU-0000\n");
        struct facts *f = open_gpu_facts();
        eq(f, "xid.source", "/var/log/kern.log");
        eq(f, "xid.events", "5");
        eq(f, "xid.codes", "13,31,48,999");
        eq(f, "xid.critical", "48"); /* 79 was the boot before */
        eq(f, "xid.warning", "13,31");
        eq(f, "xid.unknown", "999");
        eq(f, "xid.devices", "0000:3b:00,0000:86:00,0000:01:00");
        eq(f, "xid.0000:3b:00.events", "2");
        eq(f, "xid.0000:86:00.codes", "48,999");
        eq(f, "xid.0000:86:00.actions", "48:RESET_GPU,999:UNKNOWN");
        eq(f, "xid.0000:01:00.actions", "31:RESTART_APP");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xid_kern_log_boots, .description = "xid kern log boots", .root = "tmptree");

/* The gather capture wins over the syslog files; /dev/kmsg record syntax is understood. */
START_TEST(xid_kmsg_capture_first)
{
        put("var/lib/llmtune/captures/kmsg.txt",
            "6,1001,5000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"
            "4,1002,9000000,-;NVRM: Xid (PCI:0000:c6:00): 79, pid=1101234, name=nvc:[driver], GPU has fallen off the bus.\n"
            " SUBSYSTEM=pci\n"
            "4,1003,9000001,-;NVRM: Xid (PCI:0000:c6:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)\n");
        put("var/log/kern.log", "Nov 30 kernel: NVRM: Xid (PCI:0000:01:00): 13, pid=1, x\n");
        struct facts *f = open_gpu_facts();
        eq(f, "xid.source", "/var/lib/llmtune/captures/kmsg.txt");
        eq(f, "xid.critical", "79,154");
        eq(f, "xid.0000:c6:00.actions", "79:RESTART_BM,154:FOLLOW_MESSAGE");
        eq(f, "xid.devices", "0000:c6:00");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xid_kmsg_capture_first, .description = "xid kmsg capture first", .root = "tmptree");

START_TEST(xid_no_log_no_catalog)
{
        struct facts *f = open_gpu_facts();
        absent(f, "xid.events", "no kernel log under the root");
        absent(f, "xid.critical", "no kernel log under the root");
        close_facts(f);

        put("var/log/dmesg", "[ 1.0] NVRM: Xid (PCI:0000:01:00): 48, DBE\n");
        f = open_facts(NULL); /* no data directory: the catalogue is unknown, the events are not */
        eq(f, "xid.events", "1");
        eq(f, "xid.codes", "48");
        unreadable(f, "xid.critical", "rules/xid-catalog.tsv not found");
        unreadable(f, "xid.0000:01:00.actions", "not found");
        close_facts(f);

        put("var/log/dmesg", "");
        f = open_gpu_facts();
        eq(f, "xid.events", "0");
        eq(f, "xid.critical", "none");
        eq(f, "xid.devices", "none");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xid_no_log_no_catalog, .description = "xid no log no catalog", .root = "tmptree");

/* Every line of the shipped catalogue parses: codes the rules rely on are there. */
START_TEST(xid_catalog_shipped)
{
        put("var/log/dmesg", "[1] NVRM: Xid (PCI:0000:01:00): 48, x\n[2] NVRM: Xid (PCI:0000:01:00): 61, x\n"
                             "[3] NVRM: Xid (PCI:0000:01:00): 62, x\n[4] NVRM: Xid (PCI:0000:01:00): 63, x\n"
                             "[5] NVRM: Xid (PCI:0000:01:00): 64, x\n[6] NVRM: Xid (PCI:0000:01:00): 74, x\n"
                             "[7] NVRM: Xid (PCI:0000:01:00): 79, x\n[8] NVRM: Xid (PCI:0000:01:00): 92, x\n"
                             "[9] NVRM: Xid (PCI:0000:01:00): 94, x\n[10] NVRM: Xid (PCI:0000:01:00): 95, x\n"
                             "[11] NVRM: Xid (PCI:0000:01:00): 119, x\n[12] NVRM: Xid (PCI:0000:01:00): 120, x\n"
                             "[13] NVRM: Xid (PCI:0000:01:00): 45, x\n");
        struct facts *f = open_gpu_facts();
        eq(f, "xid.critical", "48,61,62,63,64,74,79,92,94,95,119,120");
        eq(f, "xid.warning", "none"); /* 45 is info */
        eq(f, "xid.unknown", "none");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xid_catalog_shipped, .description = "xid catalog shipped", .root = "tmptree");

/* The real storm of Xid 119 (dmesg -T: wall-clock times): five lines collapse into one code with
 * its count and first and last time; the ages count from the log's last dated line, as the capture
 * has no /proc/uptime. */
START_TEST(xid_corpus_dedup_times)
{
        copy_corpus("dmesg-xid119-gsp-timeout-dell-xe9680.log", "var/log/dmesg");
        struct facts *f = open_gpu_facts();
        eq(f, "xid.count", "1");
        eq(f, "xid.0000:9b:00.code.119.count", "5");
        eq(f, "xid.0000:9b:00.code.119.first", "2025-02-23T16:24:18Z");
        eq(f, "xid.0000:9b:00.code.119.last", "2025-02-23T16:30:13Z");
        eq(f, "xid.0000:9b:00.code.119.age", "0");
        eq(f, "xid.0000:9b:00.code.119.cleared", "false");
        eq(f, "xid.0000:9b:00.critical", "119");
        eq(f, "xid.0000:9b:00.critical_events", "5");
        eq(f, "xid.0000:9b:00.critical_age", "0");
        eq(f, "xid.0000:9b:00.reset", "none");
        absent(f, "xid.0000:9b:00.warning_age", "no such Xid");
        const struct fact *clock = get_as(f, "xid.clock", FACT_OK);
        ck_assert_msg(strstr(clock->str, "2025-02-23T16:30:13Z"), "%s", clock->str);
        close_facts(f);
}
END_TEST
DEFINE_TEST(xid_corpus_dedup_times, .description = "xid corpus dedup times", .root = "corpus", .when = have_corpus);

/* A storm written like the one peers count as 629 events: one code, one collapsed entry. */
START_TEST(xid_storm_collapses)
{
        struct sbuf b = {0};
        for (unsigned i = 0; i < 629; i++)
                sbuf_addf(&b, "4,%u,%llu,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python, Graphics SM Warp "
                              "Exception on (GPC 1, TPC 2, SM %u): Illegal Instruction Encoding\n",
                          1000 + i, 5000000000ull + i * 1000ull, i % 2);
        put("var/lib/llmtune/captures/kmsg.txt", b.s);
        free(sbuf_steal(&b));
        put("proc/uptime", "6000.00 90000.00\n");
        struct facts *f = open_gpu_facts();
        eq(f, "xid.events", "629");
        eq(f, "xid.codes", "13");
        eq(f, "xid.0000:3b:00.code.13.count", "629");
        eq(f, "xid.0000:3b:00.code.13.first", "boot+5000.0s");
        eq(f, "xid.0000:3b:00.code.13.last", "boot+5000.6s");
        eq(f, "xid.0000:3b:00.code.13.age", "999"); /* /proc/uptime 6000 s */
        eq(f, "xid.0000:3b:00.warning_events", "629");
        eq(f, "xid.0000:3b:00.warning_age", "999");
        eq(f, "xid.0000:3b:00.critical", "none");
        absent(f, "xid.0000:3b:00.critical_age", "no such Xid");
        get_as(f, "xid.clock", FACT_OK);
        close_facts(f);
}
END_TEST
DEFINE_TEST(xid_storm_collapses, .description = "xid storm collapses", .root = "tmptree");

/* Xid 48 -> 63 -> 94 on one GPU (a double-bit error, the row remap it triggers, the contained
 * error), then the driver's Xid 154 back to "None" after the reset: the GPU is no longer critical;
 * a new Xid 94 after the reset is. */
START_TEST(xid_reset_clears)
{
        static const char seq[] =
                "[ 3600.100000] NVRM: Xid (PCI:0000:86:00): 48, pid=7, name=train, DBE (double bit error) ECC error\n"
                "[ 3600.200000] NVRM: Xid (PCI:0000:86:00): 63, pid=7, name=train, Row Remapper: New row marked for remapping, reset gpu to activate.\n"
                "[ 3600.300000] NVRM: Xid (PCI:0000:86:00): 94, pid=7, name=train, Contained: CE User Channel (0x9). RST: No, D-RST: No\n"
                "[ 3600.400000] NVRM: Xid (PCI:0000:86:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)\n"
                "[ 3600.500000] NVRM: Xid (PCI:0000:3b:00): 31, pid=9, name=python, MMU Fault\n";
        put("var/log/dmesg", seq);
        put("proc/uptime", "7200.50 1.00\n");
        struct facts *f = open_gpu_facts();
        eq(f, "xid.critical", "48,63,94,154");
        eq(f, "xid.0000:86:00.critical_events", "4");
        eq(f, "xid.0000:86:00.critical_age", "3600");
        eq(f, "xid.0000:86:00.reset", "none");
        eq(f, "xid.count", "2");
        close_facts(f);

        _cleanup_free_ char *reset = xasprintf(
                "%s[ 4000.000000] NVRM: Xid (PCI:0000:86:00): 154, GPU recovery action changed from 0x1 (GPU Reset "
                "Required) to 0x0 (None)\n",
                seq);
        put("var/log/dmesg", reset);
        f = open_gpu_facts();
        eq(f, "xid.critical", "none");
        eq(f, "xid.warning", "31");
        eq(f, "xid.0000:86:00.critical", "none");
        eq(f, "xid.0000:86:00.critical_events", "0");
        absent(f, "xid.0000:86:00.critical_age", "since the GPU's last reset");
        eq(f, "xid.0000:86:00.reset", "boot+4000.0s");
        eq(f, "xid.0000:86:00.code.48.cleared", "true");
        eq(f, "xid.0000:86:00.events", "5"); /* since boot: the reset does not unsay them */
        eq(f, "xid.0000:86:00.codes", "48,63,94,154");
        close_facts(f);

        _cleanup_free_ char *again = xasprintf(
                "%s[ 7000.000000] NVRM: Xid (PCI:0000:86:00): 94, pid=8, name=train, Contained: SM (0x1). RST: No\n",
                reset);
        put("var/log/dmesg", again);
        f = open_gpu_facts();
        eq(f, "xid.critical", "94");
        eq(f, "xid.0000:86:00.critical_events", "1");
        eq(f, "xid.0000:86:00.critical_age", "201");
        eq(f, "xid.0000:86:00.code.94.count", "2");
        eq(f, "xid.0000:86:00.code.94.cleared", "false");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xid_reset_clears, .description = "xid reset clears", .root = "tmptree");

/* A syslog line without a printk time: the event is counted, its age is unknown (never 0). */
START_TEST(xid_untimed)
{
        put("var/log/kern.log", "Nov 30 01:00:00 n1 kernel: NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n");
        struct facts *f = open_gpu_facts();
        eq(f, "xid.0000:01:00.critical", "79");
        unreadable(f, "xid.0000:01:00.critical_age", "no time");
        unreadable(f, "xid.0000:01:00.code.79.age", "no time");
        eq(f, "xid.0000:01:00.code.79.first", "unknown");
        close_facts(f);
}
END_TEST
DEFINE_TEST(xid_untimed, .description = "xid untimed", .root = "tmptree");

/* --- aer.* and InfiniBand error counters ---------------------------------------------------------- */

static void dev(const char *chain, const char *addr, const char *cls)
{
        _cleanup_free_ char *p = xasprintf("sys/devices/pci0000:00/%s%s%s/class", chain, *chain ? "/" : "", addr);
        put(p, cls);
        _cleanup_free_ char *l = xasprintf("sys/bus/pci/devices/%s", addr);
        _cleanup_free_ char *rel = xasprintf("../../../devices/pci0000:00/%s%s%s", chain, *chain ? "/" : "", addr);
        tmptree_link(l, rel);
}

static void aer(const char *chain, const char *addr, unsigned cor, unsigned nonfatal, unsigned fatal)
{
        char p[1024], text[512];
        const char *base = "sys/devices/pci0000:00";
        snprintf(p, sizeof(p), "%s/%s%s%s/aer_dev_correctable", base, chain, *chain ? "/" : "", addr);
        snprintf(text, sizeof(text), "RxErr 0\nBadTLP %u\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\n"
                                     "CorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR %u\n", cor, cor);
        put(p, text);
        snprintf(p, sizeof(p), "%s/%s%s%s/aer_dev_nonfatal", base, chain, *chain ? "/" : "", addr);
        snprintf(text, sizeof(text), "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO %u\nTOTAL_ERR_NONFATAL %u\n",
                 nonfatal, nonfatal);
        put(p, text);
        snprintf(p, sizeof(p), "%s/%s%s%s/aer_dev_fatal", base, chain, *chain ? "/" : "", addr);
        snprintf(text, sizeof(text), "Undefined 0\nDLP %u\nSDES 0\nTLP 0\nTOTAL_ERR_FATAL %u\n", fatal, fatal);
        put(p, text);
}

START_TEST(aer_counters)
{
        /* root port 00:01.0 -> switch 01:00.0 -> 02:00.0 -> GPU 03:00.0; NVMe 04:00.0 on port 00:02.0;
         * an HCA 05:00.0 without AER statistics; a USB controller nobody cares about */
        dev("", "0000:00:01.0", "0x060400\n");
        dev("0000:00:01.0", "0000:01:00.0", "0x060400\n");
        dev("0000:00:01.0/0000:01:00.0", "0000:02:00.0", "0x060400\n");
        dev("0000:00:01.0/0000:01:00.0/0000:02:00.0", "0000:03:00.0", "0x030200\n");
        dev("", "0000:00:02.0", "0x060400\n");
        dev("0000:00:02.0", "0000:04:00.0", "0x010802\n");
        dev("", "0000:05:00.0", "0x020700\n");
        dev("", "0000:06:00.0", "0x0c0330\n");
        aer("", "0000:00:01.0", 0, 0, 1);
        aer("0000:00:01.0", "0000:01:00.0", 0, 0, 0);
        aer("0000:00:01.0/0000:01:00.0", "0000:02:00.0", 0, 0, 0);
        aer("0000:00:01.0/0000:01:00.0/0000:02:00.0", "0000:03:00.0", 7, 2, 0);
        aer("", "0000:00:02.0", 0, 0, 0);
        aer("0000:00:02.0", "0000:04:00.0", 1, 0, 0);
        aer("", "0000:06:00.0", 0, 0, 9); /* USB: not ours */
        struct facts *f = open_gpu_facts();
        eq(f, "aer.count", "6");
        eq(f, "aer.fatal_devices", "0000:00:01.0");
        eq(f, "aer.nonfatal_devices", "0000:03:00.0");
        eq(f, "aer.correctable_devices", "0000:03:00.0,0000:04:00.0");
        eq(f, "aer.0000:03:00.0.role", "gpu");
        eq(f, "aer.0000:02:00.0.role", "port");
        eq(f, "aer.0000:04:00.0.role", "nvme");
        eq(f, "aer.0000:05:00.0.role", "nic");
        eq(f, "aer.0000:03:00.0.correctable", "7");
        eq(f, "aer.0000:03:00.0.nonfatal", "2");
        eq(f, "aer.0000:00:01.0.fatal", "1");
        absent(f, "aer.0000:05:00.0.fatal", "no AER statistics");
        ck_assert_ptr_null(facts_get(f, "aer.0000:06:00.0.fatal"));
        close_facts(f);

        put("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/aer_dev_fatal", "TOTAL_ERR_FATAL lots\n");
        f = open_gpu_facts();
        unreadable(f, "aer.0000:01:00.0.fatal", "EBADMSG");
        unreadable(f, "aer.fatal_devices", "could not be read");
        eq(f, "aer.nonfatal_devices", "0000:03:00.0");
        close_facts(f);
}
END_TEST
DEFINE_TEST(aer_counters, .description = "aer counters", .root = "tmptree");

START_TEST(aer_none)
{
        struct facts *f = open_gpu_facts();
        absent(f, "aer.fatal_devices", "no /sys/bus/pci/devices");
        close_facts(f);
        dev("", "0000:03:00.0", "0x030200\n");
        f = open_gpu_facts();
        eq(f, "aer.count", "0");
        absent(f, "aer.fatal_devices", "no device with AER statistics");
        close_facts(f);
}
END_TEST
DEFINE_TEST(aer_none, .description = "aer none", .root = "tmptree");

START_TEST(ib_counters)
{
        put("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
        put("sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
        put("sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error", "12\n");
        put("sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "3\n");
        put("sys/class/infiniband/mlx5_0/ports/1/counters/link_error_recovery", "0\n");
        put("sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_errors", "0\n");
        put("sys/class/infiniband/mlx5_0/ports/1/counters/local_link_integrity_errors", "0\n");
        put("sys/class/infiniband/mlx5_0/ports/1/counters/excessive_buffer_overrun_errors", "x\n");
        put("sys/class/infiniband/mlx5_1/ports/1/state", "4: ACTIVE\n");
        put("sys/class/infiniband/mlx5_1/ports/1/link_layer", "Ethernet\n");
        /* an iWARP adapter: the files exist but hold what the kernel prints without a PMA */
        put("sys/class/infiniband/i40iw0/ports/1/state", "4: ACTIVE\n");
        put("sys/class/infiniband/i40iw0/ports/1/counters/symbol_error", "N/A (no PMA)\n");
        struct facts *f = open_gpu_facts();
        eq(f, "ib.mlx5_0.port.1.symbol_error", "12");
        eq(f, "ib.mlx5_0.port.1.link_downed", "3");
        eq(f, "ib.mlx5_0.port.1.port_rcv_errors", "0");
        unreadable(f, "ib.mlx5_0.port.1.excessive_buffer_overrun_errors", "not an integer");
        absent(f, "ib.mlx5_1.port.1.symbol_error", "no counters file");
        absent(f, "ib.i40iw0.port.1.symbol_error", "no Performance Management Agent");
        close_facts(f);
}
END_TEST
DEFINE_TEST(ib_counters, .description = "ib counters", .root = "tmptree");

/* Counters between runs: NAME_growth against the state file, written by counters_save. */
static void ib_port(const char *link_downed, const char *symbol)
{
        put("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
        put("sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
        put("sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", link_downed);
        put("sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error", symbol);
}

START_TEST(counter_growth_between_runs)
{
        put("proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555\n");
        ib_port("3\n", "10\n");
        struct facts *f = open_gpu_facts();
        absent(f, "ib.mlx5_0.port.1.link_downed_growth", "no earlier reading: the counters are recorded by");
        eq(f, "counters.state", "none");
        ck_assert_int_eq(counters_save(f), 0);
        close_facts(f);
        char *state = tmptree_get("var/lib/llmtune/counters.state");
        ck_assert_ptr_nonnull(strstr(state, "llmtune-counters 1\nboot 11111111-2222-3333-4444-555555555555\ntime "));
        ck_assert_ptr_nonnull(strstr(state, "\nib.mlx5_0.port.1.link_downed 3\n"));
        free(state);
        struct stat st;
        _cleanup_free_ char *sp = xasprintf("%s/var/lib/llmtune/counters.state", tmptree_path());
        ck_assert_int_eq(stat(sp, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0600); /* root-only */

        ib_port("6\n", "10\n"); /* the port went down three times since */
        f = open_gpu_facts();
        eq(f, "ib.mlx5_0.port.1.link_downed_growth", "3");
        eq(f, "ib.mlx5_0.port.1.symbol_error_growth", "0");
        eq(f, "counters.state", "ok");
        eq(f, "counters.same_boot", "true");
        ck_assert_int_eq(counters_save(f), 0);
        close_facts(f);
        f = open_gpu_facts();
        eq(f, "ib.mlx5_0.port.1.link_downed_growth", "0"); /* nothing new since the last record */
        close_facts(f);

        ib_port("2\n", "10\n"); /* cleared (perfquery -R): all of the count is new */
        f = open_gpu_facts();
        eq(f, "ib.mlx5_0.port.1.link_downed_growth", "2");
        close_facts(f);
        put("proc/sys/kernel/random/boot_id", "99999999-2222-3333-4444-555555555555\n");
        ib_port("6\n", "10\n"); /* another boot: the counters restarted, all of it is new */
        f = open_gpu_facts();
        eq(f, "ib.mlx5_0.port.1.link_downed_growth", "6");
        eq(f, "counters.same_boot", "false");
        close_facts(f);

        put("var/lib/llmtune/counters.state", "llmtune-counters 1\nboot x\ntime 12\nib.mlx5_0.port.1.link_downed lots\n");
        f = open_gpu_facts();
        absent(f, "ib.mlx5_0.port.1.link_downed_growth", "is not one llmtune writes (line 4: 'lots' is not a number)");
        eq(f, "counters.state", "foreign");
        ck_assert_int_eq(counters_save(f), 0); /* replaced by a whole one */
        close_facts(f);
        f = open_gpu_facts();
        eq(f, "ib.mlx5_0.port.1.link_downed_growth", "0");
        close_facts(f);
}
END_TEST
DEFINE_TEST(counter_growth_between_runs, .description = "counter growth between runs", .root = "tmptree");

/* A corpus named but missing: the cases that need it are left out, unless CI requires it. */
static int prepare(void)
{
        const char *c = getenv("LLMTUNE_CORPUS");
        if (c && access(c, F_OK) != 0) {
                const char *req = getenv("LLMTUNE_REQUIRE_CORPUS");
                if (req && streq(req, "1")) {
                        fprintf(stderr, "corpus %s missing and LLMTUNE_REQUIRE_CORPUS=1\n", c);
                        return 1;
                }
                unsetenv("LLMTUNE_CORPUS"); /* run the tests that need no corpus */
        }
        return 0;
}

UNIT_MAIN(.name = "gpuhealth", .setup = setup, .teardown = tmptree_drop, .prepare = prepare)
