/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The live NVML path (src/facts/adapters/nvml-live.c) end to end against the test double of
 * libnvidia-ml.so.1 (tests/nvml-double): healthy 8-GPU H100 node, MIG on, a pending row remap, NVLinks
 * down, a hardware slowdown, NVML errors (nvmlInit_v2, one call, a lost GPU), a missing library, a
 * library without the core symbols, an old driver without optional ones, a GPU on PCI that NVML does
 * not list; and through the binary: `facts nvml` live, never under --root, and an audit that needs no
 * nvml.* fact does not load NVML. The double's directories come from LLMTUNE_NVML_DOUBLE_DIR (full/
 * and old/); its description file is LLMTUNE_NVML_DOUBLE, written by each test.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "facts/facts.h"
#include "facts/adapters/nvgpu.h"
#include "base/root.h"
#include "tmptree.h"
#include "factcheck.h"
#include "unit-main.h"

static void setup(void) { tmptree_new("nvml"); }

static void put(const char *rel, const char *text) { tmptree_write(rel, text, strlen(text)); }

static struct facts *f;

static char *lib(const char *variant)
{
        return xasprintf("%s/%s/libnvidia-ml.so.1", getenv("LLMTUNE_NVML_DOUBLE_DIR"), variant);
}

/* Describe the GPUs, then read them through NVML (the double) as the live probe does. */
static int nvml(const char *variant, const char *desc)
{
        put("nvml.desc", desc);
        _cleanup_free_ char *d = xasprintf("%s/nvml.desc", tmptree_path());
        setenv("LLMTUNE_NVML_DOUBLE", d, 1);
        f = open_facts(NULL);
        _cleanup_free_ char *so = lib(variant);
        int n = nvml_live_facts(f, so);
        nvgpu_unlisted(f, n);
        nvgpu_derived(f, n);
        return n;
}

static void done(void) { close_facts(f); }

/* An HGX H100 node as NVML describes it; NVML's index order differs from bus order on purpose. */
static char *h100(const char *extra)
{
        static const char *const bus[] = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
                                          "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"};
        struct sbuf s = {0};
        sbuf_addf(&s, "driver = 550.54.15\ncount = 8\n");
        for (int i = 0; i < 8; i++) {
                int b = 7 - i; /* reversed */
                sbuf_addf(&s,
                          "gpu.%d.bus = %s\ngpu.%d.name = NVIDIA H100 80GB HBM3\ngpu.%d.uuid = GPU-%08d-0000-0000-0000-000000000000\n"
                          "gpu.%d.persistence = 1\ngpu.%d.ecc = 1,1\ngpu.%d.ecc_volatile = 0,0\ngpu.%d.ecc_aggregate = 2,0\n"
                          "gpu.%d.remap = 0,0,0,0\ngpu.%d.mig = 0,0\ngpu.%d.compute = 0\ngpu.%d.reasons = 0x1\n"
                          "gpu.%d.power = 700000,700000,200000,700000\ngpu.%d.pcie = 5,5,16,16,0\ngpu.%d.nvlinks = 18\n"
                          "gpu.%d.clocks = 1755,2619,1755,2619,1980,2619\n",
                          i, bus[b], i, i, b, i, i, i, i, i, i, i, i, i, i, i, i);
        }
        sbuf_add(&s, extra);
        return sbuf_steal(&s);
}

START_TEST(healthy_h100)
{
        _cleanup_free_ char *d = h100("");
        ck_assert_int_eq(nvml("full", d), 8);
        eq(f, "nvml.count", "8");
        eq(f, "nvml.attached", "8");
        eq(f, "nvml.lost", "none");
        eq(f, "nvml.driver_version", "550.54.15");
        eq(f, "nvml.0.address", "0000:18:00.0"); /* bus order */
        eq(f, "nvml.7.address", "0000:db:00.0");
        eq(f, "nvml.0.uuid", "GPU-00000000-0000-0000-0000-000000000000");
        eq(f, "nvml.0.name", "NVIDIA H100 80GB HBM3");
        eq(f, "nvml.3.persistence_mode", "true");
        eq(f, "nvml.3.ecc.current", "true");
        eq(f, "nvml.3.ecc.aggregate.corrected", "2");
        eq(f, "nvml.3.ecc.volatile.uncorrected", "0");
        eq(f, "nvml.3.remap.pending", "false");
        eq(f, "nvml.3.mig.current", "false");
        eq(f, "nvml.3.compute_mode", "Default");
        eq(f, "nvml.3.clock_events.active", "idle");
        eq(f, "nvml.3.clock_event.hw_slowdown", "false");
        eq(f, "nvml.3.power.limit_mw", "700000");
        eq(f, "nvml.3.power.min_limit_mw", "200000");
        eq(f, "nvml.3.clocks.app_graphics_mhz", "1755");
        eq(f, "nvml.3.clocks.max_graphics_mhz", "1980");
        eq(f, "nvml.3.clocks.default_app_memory_mhz", "2619");
        eq(f, "nvml.3.clocks.app_below_default", "false");
        eq(f, "nvml.3.pcie.gen", "5");
        eq(f, "nvml.3.pcie.width", "16");
        eq(f, "nvml.3.nvlink.count", "18");
        eq(f, "nvml.3.nvlink.up", "18");
        eq(f, "nvml.3.nvlink.down", "0");
        eq(f, "nvml.3.nvlink.errors", "0");
        eq(f, "nvml.3.nvlink.17.state", "up");
        absent(f, "nvml.3.retired.dbe", "Not Supported"); /* Hopper: no page retirement */
        absent(f, "nvml.3.mig.instances", "captures only");
        get_as(f, "nvml.3.address", FACT_OK);
        /* no PCI tree under this root: the cross-check says so */
        absent(f, "nvml.unlisted", "/sys/bus/pci/devices");
        done();
}
END_TEST
DEFINE_TEST(healthy_h100, .description = "healthy h100", .root = "tmptree");

START_TEST(faults)
{
        _cleanup_free_ char *d = h100("gpu.7.mig = 1,1\n"            /* bus 18:00.0 = nvml.0 */
                                      "gpu.6.remap = 3,1,1,0\n"      /* 2a:00.0 = nvml.1 */
                                      "gpu.5.remap = 0,9,0,1\n"      /* 3a:00.0 = nvml.2 */
                                      "gpu.4.nvlinks = 18\ngpu.4.nvlink_down = 3,11\n"
                                      "gpu.4.nvlink_errors = 2:5:1:7:1\n" /* 5d:00.0 = nvml.3 */
                                      "gpu.3.reasons = 0x48\n"       /* 9a:00.0 = nvml.4: hw slowdown + hw thermal */
                                      "gpu.2.power = 500000,700000,200000,700000\n" /* ab:00.0 = nvml.5 */
                                      "gpu.2.clocks = 1200,2619,1755,2619,1980,2619\n" /* nvidia-smi -ac 2619,1200 */
                                      "gpu.1.ecc_volatile = 0,4\ngpu.1.ecc = 1,0\n"); /* ba:00.0 = nvml.6 */
        nvml("full", d);
        eq(f, "nvml.0.mig.current", "true");
        eq(f, "nvml.0.mig.pending", "true");
        eq(f, "nvml.1.remap.correctable", "3");
        eq(f, "nvml.1.remap.uncorrectable", "1");
        eq(f, "nvml.1.remap.pending", "true");
        eq(f, "nvml.1.remap.failure", "false");
        eq(f, "nvml.2.remap.failure", "true");
        eq(f, "nvml.3.nvlink.count", "18");
        eq(f, "nvml.3.nvlink.up", "16");
        eq(f, "nvml.3.nvlink.down", "2");
        eq(f, "nvml.3.nvlink.3.state", "down");
        eq(f, "nvml.3.nvlink.11.state", "down");
        eq(f, "nvml.3.nvlink.2.replay", "5");
        eq(f, "nvml.3.nvlink.2.recovery", "1");
        eq(f, "nvml.3.nvlink.2.crc", "8");
        eq(f, "nvml.3.nvlink.errors", "14");
        eq(f, "nvml.4.clock_events.active", "hw_slowdown,hw_thermal_slowdown");
        eq(f, "nvml.4.clock_event.hw_thermal_slowdown", "true");
        eq(f, "nvml.5.power.limit_mw", "500000");
        eq(f, "nvml.5.power.default_limit_mw", "700000");
        eq(f, "nvml.5.power.below_default", "true");
        eq(f, "nvml.4.power.below_default", "false");
        eq(f, "nvml.5.clocks.app_graphics_mhz", "1200");
        eq(f, "nvml.5.clocks.app_below_default", "true");
        eq(f, "nvml.4.clocks.app_below_default", "false");
        eq(f, "nvml.6.ecc.volatile.uncorrected", "4");
        eq(f, "nvml.6.ecc.pending", "false");
        done();
}
END_TEST
DEFINE_TEST(faults, .description = "faults", .root = "tmptree");

/* What a job would find: memory in use and the processes, named from the root's /proc (health-check
 * --prolog); the old driver's _v2 entry points give the same. */
START_TEST(usage_and_processes)
{
        static const char *const variants[] = {"full", "old"};
        for (size_t v = 0; v < 2; v++) {
                put("proc/4242/comm", "python\n");
                _cleanup_free_ char *d = h100("gpu.7.memory = 85899345920,44040192\ngpu.7.procs = none\ngpu.7.gprocs = none\n"
                                              "gpu.6.memory = 85899345920,21474836480\n"
                                              "gpu.6.procs = 4242:21474836480,999:1048576\ngpu.6.gprocs = 77:4194304\n");
                nvml(variants[v], d);
                eq(f, "nvml.0.memory.used", "44040192");
                eq(f, "nvml.0.memory.total", "85899345920");
                eq(f, "nvml.0.processes.compute", "0");
                eq(f, "nvml.0.processes.list", "none");
                eq(f, "nvml.1.processes.compute", "2");
                eq(f, "nvml.1.processes.graphics", "1");
                eq(f, "nvml.1.processes.list", "4242 python 20480 MiB, 999 ? 1 MiB"); /* 999 has no /proc entry */
                absent(f, "nvml.2.processes.compute", "Not Supported");
                done();
        }
}
END_TEST
DEFINE_TEST(usage_and_processes, .description = "memory in use and the processes, named from the root's /proc, from the full and the old driver",
            .root = "tmptree");

START_TEST(nvml_errors)
{
        nvml("full", "init = 18\n");
        unreadable(f, "nvml.count", "nvmlInit_v2: RM has detected an NVML/RM version mismatch. (18)");
        unreadable(f, "nvml.unlisted", "nvmlInit_v2");
        done();

        _cleanup_free_ char *d = h100("gpu.0.fail = nvmlDeviceGetEccMode:15\n"   /* db:00.0 = nvml.7 */
                                      "gpu.0.fail = nvmlDeviceGetNvLinkState:999\n"
                                      "gpu.1.fail = nvmlDeviceGetTotalEccErrors:4\n");
        nvml("full", d);
        eq(f, "nvml.count", "8");
        unreadable(f, "nvml.7.ecc.current", "nvmlDeviceGetEccMode: GPU is lost (15)");
        unreadable(f, "nvml.7.ecc.pending", "GPU is lost");
        unreadable(f, "nvml.7.nvlink.count", "Unknown Error");
        unreadable(f, "nvml.6.ecc.volatile.corrected", "Insufficient Permissions");
        eq(f, "nvml.7.persistence_mode", "true"); /* one failing call spoils only its facts */
        done();
}
END_TEST
DEFINE_TEST(nvml_errors, .description = "nvml errors", .root = "tmptree");

START_TEST(missing_library_and_symbols)
{
        f = open_facts(NULL);
        ck_assert_int_eq(nvml_live_facts(f, "/nonexistent/libnvidia-ml.so.1"), -1);
        absent(f, "nvml.count", "NVML not available");
        absent(f, "nvml.count", "/nonexistent/libnvidia-ml.so.1");
        done();

        /* a library that is not NVML at all: no nvmlInit_v2 */
        f = open_facts(NULL);
        ck_assert_int_eq(nvml_live_facts(f, "libm.so.6"), -1);
        absent(f, "nvml.count", "libm.so.6 has no nvmlInit_v2");
        done();

        /* an older driver: no row remapping entry point, throttle reasons under the old name */
        _cleanup_free_ char *d = h100("gpu.3.reasons = 0x80\n");
        ck_assert_int_eq(nvml("old", d), 8);
        absent(f, "nvml.0.remap.pending", "has no nvmlDeviceGetRemappedRows");
        eq(f, "nvml.4.clock_event.hw_power_brake_slowdown", "true");
        eq(f, "nvml.4.clock_events.active", "hw_power_brake_slowdown");
        done();
}
END_TEST
DEFINE_TEST(missing_library_and_symbols, .description = "missing library and symbols", .root = "tmptree");

static void pci_gpu(const char *addr)
{
        char p[256];
        snprintf(p, sizeof(p), "sys/bus/pci/devices/%s/vendor", addr);
        put(p, "0x10de\n");
        snprintf(p, sizeof(p), "sys/bus/pci/devices/%s/device", addr);
        put(p, "0x2330\n");
        snprintf(p, sizeof(p), "sys/bus/pci/devices/%s/class", addr);
        put(p, "0x030200\n");
}

START_TEST(gpu_missing_from_nvml)
{
        static const char *const addrs[] = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                                            "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};
        for (size_t i = 0; i < ARRAY_SIZE(addrs); i++)
                pci_gpu(addrs[i]);
        /* NVML counts 8, but index 2 (bus 5d) is lost, and only 8 of the PCI GPUs... */
        _cleanup_free_ char *d = h100("gpu.4.fail = nvmlDeviceGetHandleByIndex_v2:15\n");
        ck_assert_int_eq(nvml("full", d), 7);
        eq(f, "nvml.count", "7");
        eq(f, "nvml.lost", "index 4: nvmlDeviceGetHandleByIndex_v2: GPU is lost");
        eq(f, "nvml.unlisted", "0000:5d:00.0");
        eq(f, "nvml.unlisted_count", "1");
        done();

        /* every PCI GPU listed */
        _cleanup_free_ char *ok = h100("");
        nvml("full", ok);
        eq(f, "nvml.unlisted", "none");
        eq(f, "nvml.unlisted_count", "0");
        done();
}
END_TEST
DEFINE_TEST(gpu_missing_from_nvml, .description = "gpu missing from nvml", .root = "tmptree");

/* --- through the binary ------------------------------------------------------------------------- */

static char *run(const char *cmd)
{
        FILE *p = popen(cmd, "r");
        ck_assert_ptr_nonnull(p);
        static char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof(buf) - 1, p);
        buf[n] = '\0';
        pclose(p);
        return buf;
}

START_TEST(cli_live_and_root)
{
        const char *bin = getenv("LLMTUNE_BIN");
        _cleanup_free_ char *d = h100("");
        put("nvml.desc", d);
        _cleanup_free_ char *cmd = xasprintf(
                "LD_LIBRARY_PATH=%s/full LLMTUNE_NVML_DOUBLE=%s/nvml.desc LLMTUNE_STATS=1 %s facts nvml.count "
                "nvml.3.nvlink.up 2>&1",
                getenv("LLMTUNE_NVML_DOUBLE_DIR"), tmptree_path(), bin);
        const char *out = run(cmd);
        ck_assert_msg(strstr(out, "nvml.count") && strstr(out, " 8\n"), "%s", out);
        ck_assert_msg(strstr(out, "nvml.3.nvlink.up") && strstr(out, " 18\n"), "%s", out);
        ck_assert_msg(strstr(out, "handles=") && strstr(out, "nvml"), "%s", out);

        /* under --root NVML is never loaded, even where it could be (the tree needs a proc/ to be
         * taken as a root at all) */
        put("proc/meminfo", "MemTotal:       16384000 kB\n");
        free(cmd);
        cmd = xasprintf("LD_LIBRARY_PATH=%s/full LLMTUNE_NVML_DOUBLE=%s/nvml.desc LLMTUNE_STATS=1 %s --root %s facts nvml "
                        "2>&1",
                        getenv("LLMTUNE_NVML_DOUBLE_DIR"), tmptree_path(), bin, tmptree_path());
        out = run(cmd);
        ck_assert_msg(strstr(out, "no nvidia-smi capture under the root"), "%s", out);
        ck_assert_msg(!strstr(out, "handles=nvml") && !strstr(out, ",nvml"), "%s", out);

        /* facts that need no nvml.* do not load NVML */
        free(cmd);
        cmd = xasprintf("LD_LIBRARY_PATH=%s/full LLMTUNE_NVML_DOUBLE=%s/nvml.desc LLMTUNE_STATS=1 %s facts cpu.count 2>&1",
                        getenv("LLMTUNE_NVML_DOUBLE_DIR"), tmptree_path(), bin);
        out = run(cmd);
        ck_assert_msg(strstr(out, "llmtune-stats:") && !strstr(out, "nvml"), "%s", out);
}
END_TEST
DEFINE_TEST(cli_live_and_root, .description = "cli live and root", .root = "tmptree");

static int prepare(void)
{
        if (!getenv("LLMTUNE_NVML_DOUBLE_DIR")) {
                fprintf(stderr, "LLMTUNE_NVML_DOUBLE_DIR not set\n");
                return 1;
        }
        return 0;
}

UNIT_MAIN(.name = "nvml", .setup = setup, .teardown = tmptree_drop, .prepare = prepare)
