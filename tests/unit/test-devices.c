/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpu.*, nvswitch.*, nvme.*, ib.*, net.*: synthetic sysfs trees built here byte by byte (config
 * spaces with a PCI Express capability, broken variants), and the hwloc corpus tarballs of real
 * machines (../shared/corpus; skipped when absent unless LLMTUNE_REQUIRE_CORPUS=1).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "facts/facts.h"
#include "facts/adapters/lib-hwloc.h"
#include "base/root.h"
#include "factcheck.h"
#include "unit-main.h"

static char tmpl[] = "/tmp/llmtune-devices-XXXXXX";
static char *top;

/* --- building trees ----------------------------------------------------------------------- */

static void mkdirs(const char *path)
{
        char *p = xstrdup(path);
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = '\0';
                        mkdir(p, 0755);
                        *s = '/';
                }
        mkdir(p, 0755);
        free(p);
}

static void put_bin(const char *rel, const void *data, size_t len)
{
        char *path = xasprintf("%s/%s", top, rel);
        char *dir = xstrdup(path);
        *strrchr(dir, '/') = '\0';
        mkdirs(dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
        close(fd);
        free(dir);
        free(path);
}

static void put(const char *rel, const char *text) { put_bin(rel, text, strlen(text)); }

static void mkdir_rel(const char *rel)
{
        char *p = xasprintf("%s/%s", top, rel);
        mkdirs(p);
        free(p);
}

static void link_to(const char *rel, const char *target)
{
        char *path = xasprintf("%s/%s", top, rel);
        char *dir = xstrdup(path);
        *strrchr(dir, '/') = '\0';
        mkdirs(dir);
        ck_assert_int_eq(symlink(target, path), 0);
        free(dir);
        free(path);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(p);
}

static void setup(void)
{
        char *t = xstrdup(tmpl);
        top = mkdtemp(t);
        ck_assert_ptr_nonnull(top);
}

static void teardown(void)
{
        nftw(top, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(top);
        top = NULL;
}

/* Two sockets, one NUMA node each: CPUs 0-3 on package 0 / node 0, 4-7 on package 1 / node 1. */
static void two_sockets(void)
{
        put("sys/devices/system/cpu/online", "0-7\n");
        for (int c = 0; c < 8; c++) {
                char *p = xasprintf("sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
                put(p, c < 4 ? "0\n" : "1\n");
                free(p);
        }
        put("sys/devices/system/node/node0/cpulist", "0-3\n");
        put("sys/devices/system/node/node1/cpulist", "4-7\n");
}

struct cfg {
        uint8_t b[4096];
};

static void le16(uint8_t *p, uint16_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
}

static void le32(uint8_t *p, uint32_t v)
{
        le16(p, (uint16_t)v);
        le16(p + 2, (uint16_t)(v >> 16));
}

/* A type-0 header with a capability list: power management at 0x40, PCI Express at 0x60 with
 * LnkCap (max speed code, max width) and LnkSta (speed code, width). */
static void config_pcie(struct cfg *c, uint16_t vendor, uint16_t device, unsigned cap_speed, unsigned cap_width,
                        unsigned sta_speed, unsigned sta_width)
{
        memset(c->b, 0, sizeof(c->b));
        le16(c->b + 0x00, vendor);
        le16(c->b + 0x02, device);
        le16(c->b + 0x06, 0x0010); /* Status: Capabilities List */
        c->b[0x0b] = 0x03;         /* base class: display */
        c->b[0x34] = 0x40;
        c->b[0x40] = 0x01; /* PM */
        c->b[0x41] = 0x60;
        c->b[0x60] = 0x10; /* PCI Express */
        c->b[0x61] = 0x00;
        le32(c->b + 0x60 + 0x0c, cap_speed | cap_width << 4);
        le16(c->b + 0x60 + 0x12, (uint16_t)(sta_speed | sta_width << 4));
}

static void pci_dev(const char *bdf, const char *vendor, const char *device, const char *cls, const char *numa,
                    const char *cpulist)
{
        char *dir = xasprintf("sys/devices/pci0000:00/%s", bdf);
        char *p;
#define F(name, val)                                         \
        if (val) {                                           \
                p = xasprintf("%s/%s", dir, name);           \
                put(p, val);                                 \
                free(p);                                     \
        }
        F("vendor", vendor);
        F("device", device);
        F("class", cls);
        F("numa_node", numa);
        F("local_cpulist", cpulist);
#undef F
        p = xasprintf("sys/bus/pci/devices/%s", bdf);
        char *target = xasprintf("../../../devices/pci0000:00/%s", bdf);
        link_to(p, target);
        free(p);
        free(target);
        free(dir);
}

static void dev_file(const char *bdf, const char *file, const char *text)
{
        char *p = xasprintf("sys/devices/pci0000:00/%s/%s", bdf, file);
        put(p, text);
        free(p);
}

static void dev_config(const char *bdf, const struct cfg *c, size_t len)
{
        char *p = xasprintf("sys/devices/pci0000:00/%s/config", bdf);
        put_bin(p, c->b, len);
        free(p);
}

/* resource: BAR0 16 MiB 32-bit, BAR1 64 GiB 64-bit prefetchable (+ its upper half), rest unused */
static const char *resource_large =
        "0x00000000fa000000 0x00000000faffffff 0x0000000000040200\n"
        "0x0000038000000000 0x0000038fffffffff 0x000000000014220c\n"
        "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
        "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
        "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
        "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
        "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";

/* --- reading facts ------------------------------------------------------------------------ */

/* --- synthetic: GPUs ---------------------------------------------------------------------- */

static void three_gpus(void)
{
        two_sockets();
        struct cfg c;
        /* NVIDIA H100 on node 0: Gen5 x16 capable, running Gen4 x8 */
        pci_dev("0000:07:00.0", "0x10de\n", "0x2330\n", "0x030200\n", "0\n", "0-3\n");
        config_pcie(&c, 0x10de, 0x2330, 5, 16, 4, 8);
        dev_config("0000:07:00.0", &c, 4096);
        dev_file("0000:07:00.0", "resource", resource_large);
        link_to("sys/devices/pci0000:00/0000:07:00.0/driver", "../../../bus/pci/drivers/nvidia");
        /* NVIDIA on node 1, full Gen4 x16 */
        pci_dev("0000:41:00.0", "0x10de\n", "0x20b0\n", "0x030200\n", "1\n", "4-7\n");
        config_pcie(&c, 0x10de, 0x20b0, 4, 16, 4, 16);
        dev_config("0000:41:00.0", &c, 256);
        link_to("sys/devices/pci0000:00/0000:41:00.0/driver", "../../../bus/pci/drivers/nvidia");
        /* An AMD GPU (Vega 10) before them in bus order, numa_node -1 (local_cpulist then lists
         * every CPU); unprivileged 64-byte config: link facts from the sysfs attributes */
        pci_dev("0000:03:00.0", "0x1002\n", "0x687f\n", "0x030000\n", "-1\n", "0-7\n");
        config_pcie(&c, 0x1002, 0x687f, 1, 1, 1, 1);
        dev_config("0000:03:00.0", &c, 64);
        dev_file("0000:03:00.0", "current_link_speed", "2.5 GT/s PCIe\n");
        dev_file("0000:03:00.0", "current_link_width", "1\n");
        dev_file("0000:03:00.0", "max_link_speed", "5.0 GT/s PCIe\n");
        dev_file("0000:03:00.0", "max_link_width", "255\n");
        /* not GPUs: the BMC's VGA (class 0x03 like a GPU), an NVSwitch, a NIC, and a Gaudi
         * processing accelerator (class 0x12: accel.*) */
        pci_dev("0000:02:00.0", "0x1a03\n", "0x2000\n", "0x030000\n", "0\n", "0-3\n");
        pci_dev("0000:4d:00.0", "0x1da3\n", "0x1020\n", "0x120000\n", "1\n", "4-7\n");
        pci_dev("0000:c0:00.0", "0x10de\n", "0x22a3\n", "0x068000\n", "1\n", "4-7\n");
        pci_dev("0000:0a:00.0", "0x15b3\n", "0x101b\n", "0x020700\n", "0\n", "0-3\n");
}

START_TEST(gpu_order_ids_numa)
{
        three_gpus();
        struct facts *c = open_facts(top);
        eq(c, "gpu.count", "3");
        eq(c, "gpu.nvidia_count", "2");
        /* NVIDIA first in bus order, then the others */
        eq(c, "gpu.0.address", "0000:07:00.0");
        eq(c, "gpu.1.address", "0000:41:00.0");
        eq(c, "gpu.2.address", "0000:03:00.0");
        eq(c, "gpu.0.vendor_id", "10de");
        eq(c, "gpu.0.device_id", "2330");
        eq(c, "gpu.0.class", "0302");
        eq(c, "gpu.2.class", "0300");
        eq(c, "gpu.0.driver", "nvidia");
        has_status(c, "gpu.2.driver", FACT_ABSENT, "no driver bound");
        eq(c, "gpu.0.numa_node", "0");
        eq(c, "gpu.1.numa_node", "1");
        eq(c, "gpu.2.numa_node", "-1");
        eq(c, "gpu.2.local_cpus", "0-7");
        eq(c, "gpu.0.socket", "0");
        eq(c, "gpu.1.socket", "1");
        has_status(c, "gpu.2.socket", FACT_ABSENT, "locality unknown");
        eq(c, "gpu.per_socket", "1,1");
        eq(c, "gpu.sockets_used", "2");
        eq(c, "gpu.balanced", "true");
        eq(c, "nvswitch.count", "1");
        eq(c, "nvswitch.0.address", "0000:c0:00.0");
        /* the BMC's VGA is named, not counted; the accelerator is accel.0 */
        eq(c, "gpu.excluded", "0000:02:00.0 (ASPEED BMC display)");
        eq(c, "accel.count", "1");
        eq(c, "accel.0.address", "0000:4d:00.0");
        eq(c, "accel.0.vendor_id", "1da3");
        eq(c, "accel.0.class", "1200");
        eq(c, "accel.0.numa_node", "1");
        has_status(c, "accel.1.address", FACT_ABSENT, "no such accelerator");
        /* BARs */
        eq(c, "gpu.0.bar.0.size", "16777216");
        eq(c, "gpu.0.bar.1.size", "68719476736");
        eq(c, "gpu.0.large_bar", "true");
        has_status(c, "gpu.0.bar.2.size", FACT_ABSENT, "BAR not implemented");
        has_status(c, "gpu.1.large_bar", FACT_ABSENT, "no resource file");
        /* a GPU that does not exist is absent, not unknown to the store */
        has_status(c, "gpu.7.numa_node", FACT_ABSENT, "no such GPU");
        /* none of that needed a library */
        ck_assert_ptr_null(facts_handle(c, "libpci"));
        ck_assert(!hwloc_loaded(c));
        /* an unknown name is unknown (after the whole probe ran) */
        ck_assert_ptr_null(facts_get(c, "gpu.0.no_such_fact"));
        close_facts(c);
}
END_TEST
DEFINE_TEST(gpu_order_ids_numa, .description = "gpu order ids numa", .root = "none");

/* A profile's match block (gpu.*.device_id, gpu.*.arch) needs no CPU topology: the sockets are
 * a stage of their own, read when a socket or placement fact is asked for, and asking for one of
 * the placement facts runs only that stage (neither libpci nor hwloc). */
START_TEST(gpu_sockets_only_when_asked)
{
        three_gpus();
        struct facts *c = open_facts(top);
        const struct fact **m = NULL;
        ck_assert_uint_eq(facts_match(c, "gpu.*.device_id", &m), 3);
        free(m);
        eq(c, "gpu.count", "3");
        ck_assert_ptr_null(facts_handle(c, "cpu-topo"));
        eq(c, "gpu.balanced", "true");
        ck_assert_ptr_nonnull(facts_handle(c, "cpu-topo"));
        ck_assert_ptr_null(facts_handle(c, "libpci"));
        ck_assert(!hwloc_loaded(c));
        eq(c, "gpu.per_socket", "1,1");
        eq(c, "gpu.1.socket", "1");
        close_facts(c);

        c = open_facts(top);
        ck_assert_uint_eq(facts_match(c, "gpu.*.socket", &m), 3);
        free(m);
        ck_assert_ptr_null(facts_handle(c, "libpci"));
        eq(c, "gpu.0.socket", "0");
        eq(c, "gpu.sockets_used", "2");
        close_facts(c);
}
END_TEST
DEFINE_TEST(gpu_sockets_only_when_asked, .description = "GPU sockets read the CPU topology only when asked for",
            .root = "none");

/* cpu.sockets (a profile's match block) reads each CPU's package only; cpu.cores then reads the
 * sibling lists, once. */
START_TEST(cpu_sockets_without_siblings)
{
        two_sockets();
        for (int k = 0; k < 8; k++) {
                char *p = xasprintf("sys/devices/system/cpu/cpu%d/topology/core_cpus_list", k);
                char *v = xasprintf("%d-%d\n", k & ~1, k | 1);
                put(p, v);
                free(p);
                free(v);
        }
        struct facts *c = open_facts(top);
        struct root *r = facts_root(c);
        unsigned before = root_files_opened(r);
        eq(c, "cpu.sockets", "2");
        ck_assert_uint_eq(root_files_opened(r) - before, 9); /* online + 8 package ids */
        eq(c, "cpu.cores", "4");
        eq(c, "cpu.threads_per_core", "2");
        ck_assert_uint_eq(root_files_opened(r) - before, 17);
        close_facts(c);
}
END_TEST
DEFINE_TEST(cpu_sockets_without_siblings, .description = "cpu.sockets reads no sibling list", .root = "none");

START_TEST(gpu_links)
{
        three_gpus();
        struct facts *c = open_facts(top);
        /* from the PCI Express capability */
        eq(c, "gpu.0.link.width", "8");
        eq(c, "gpu.0.link.max_width", "16");
        eq(c, "gpu.0.link.speed", "16000");
        eq(c, "gpu.0.link.max_speed", "32000");
        eq(c, "gpu.1.link.width", "16");
        eq(c, "gpu.1.link.speed", "16000");
        /* 64-byte config: sysfs attributes; width 255 means unknown */
        eq(c, "gpu.2.link.speed", "2500");
        eq(c, "gpu.2.link.width", "1");
        eq(c, "gpu.2.link.max_speed", "5000");
        has_status(c, "gpu.2.link.max_width", FACT_ABSENT, "255");
        ck_assert_ptr_nonnull(facts_handle(c, "libpci"));
        ck_assert(!hwloc_loaded(c));
        /* names come from the host's pci.ids */
        if (access("/usr/share/misc/pci.ids", R_OK) == 0)
                eq(c, "gpu.0.vendor", "NVIDIA Corporation");
        close_facts(c);
}
END_TEST
DEFINE_TEST(gpu_links, .description = "gpu links", .root = "none");

/* GPU names from the tree's own pci.ids, looked up in an order that changes the device, then the
 * vendor with the same device: pci-ids.c keeps the last vendor's section and device line, and a
 * kept line must never answer for another vendor or device. */
START_TEST(gpu_names_from_tree_list)
{
        three_gpus();
        struct cfg c;
        pci_dev("0000:50:00.0", "0x10de\n", "0x2330\n", "0x030200\n", "1\n", "4-7\n");
        config_pcie(&c, 0x10de, 0x2330, 5, 16, 5, 16);
        dev_config("0000:50:00.0", &c, 256);
        pci_dev("0000:01:00.0", "0x1002\n", "0x2330\n", "0x030000\n", "0\n", "0-3\n");
        put("usr/share/misc/pci.ids", "# a list of the format's shape\n"
                                      "1002  Advanced Micro Devices, Inc. [AMD/ATI]\n"
                                      "\t2330  Made-up AMD part\n"
                                      "\t687f  Vega 10 XL/XT [Radeon RX Vega 56/64]\n"
                                      "10de  NVIDIA Corporation\n"
                                      "\t20b0  GA100 [A100 SXM4 40GB]\n"
                                      "\t2330  GH100 [H100 SXM5 80GB]\n"
                                      "\t\t10de 16c1  H100 SXM5 80GB\n"
                                      "15b3  Mellanox Technologies\n");
        struct facts *f = open_facts(top);
        /* NVIDIA first in bus order (07, 41, 50), then 01 and 03 */
        eq(f, "gpu.0.name", "GH100 [H100 SXM5 80GB]");
        eq(f, "gpu.1.name", "GA100 [A100 SXM4 40GB]");
        eq(f, "gpu.2.name", "GH100 [H100 SXM5 80GB]");
        eq(f, "gpu.3.vendor", "Advanced Micro Devices, Inc. [AMD/ATI]");
        eq(f, "gpu.3.name", "Made-up AMD part");
        eq(f, "gpu.4.name", "Vega 10 XL/XT [Radeon RX Vega 56/64]");
        eq(f, "gpu.2.vendor", "NVIDIA Corporation");
        eq(f, "gpu.1.arch", "ampere");
        eq(f, "gpu.2.arch", "hopper");
        close_facts(f);
}
END_TEST
DEFINE_TEST(gpu_names_from_tree_list, .description = "GPU names from the tree's pci.ids, device and vendor changing",
            .root = "none");

/* fact_pattern_may_end may say "maybe" freely but "no" only when no name with that ending matches:
 * checked against glob_match over names built from several beginnings and each ending. */
START_TEST(pattern_may_end_never_wrongly_no)
{
        static const char *const patterns[] = {
                "gpu.*.numa_node", "gpu.*", "gpu.*.link.*", "gpu.0.name", "*.name", "gpu.?.arch", "*_node",
                "cpu.policy.*.governor", "cpu.policy.*.available_governors", "gpu.[0-3].name", "*", "",
                "gpu.*.upstream_link.max_speed", "gpu.*e", "gpu.1*", "cpu.policy.*.persistent_governor",
                "gpu.0.link.max_speed", "x.available_governors"};
        static const char *const endings[] = {".numa_node", ".name", ".arch", ".governor", ".available_governors",
                                              ".link.max_speed", ".upstream_link.max_speed", ".socket"};
        static const char *const starts[] = {"gpu.0", "gpu.1", "gpu.12", "cpu.policy.7", "x"};
        size_t said_no = 0;
        for (size_t i = 0; i < ARRAY_SIZE(patterns); i++)
                for (size_t k = 0; k < ARRAY_SIZE(endings); k++) {
                        if (fact_pattern_may_end(patterns[i], endings[k]))
                                continue;
                        said_no++;
                        for (size_t j = 0; j < ARRAY_SIZE(starts); j++) {
                                char name[128];
                                snprintf(name, sizeof(name), "%s%s", starts[j], endings[k]);
                                ck_assert_msg(!glob_match(patterns[i], name), "%s matches %s but was ruled out",
                                              patterns[i], name);
                        }
                }
        /* and it does rule out: the attributes of a policy, the fields of a GPU stage */
        ck_assert(!fact_pattern_may_end("cpu.policy.*.governor", ".available_governors"));
        ck_assert(!fact_pattern_may_end("gpu.*.numa_node", ".link.max_speed"));
        ck_assert(fact_pattern_may_end("gpu.*.link.*", ".link.max_speed"));
        /* a literal end longer than the ending must end in it */
        ck_assert(!fact_pattern_may_end("cpu.policy.*.persistent_governor", ".governor"));
        ck_assert(fact_pattern_may_end("cpu.policy.*.persistent_governor", "_governor"));
        ck_assert(fact_pattern_may_end("gpu.0.name", ".name"));
        ck_assert(!fact_pattern_may_end("gpu.0.name", ".arch"));
        ck_assert_uint_ge(said_no, 46);
}
END_TEST
DEFINE_TEST(pattern_may_end_never_wrongly_no, .description = "fact_pattern_may_end rules out only what cannot match",
            .root = "none");

START_TEST(gpu_unknown_locality)
{
        two_sockets();
        /* firmware gives no locality: numa_node -1, local_cpulist = every CPU */
        pci_dev("0000:3b:00.0", "0x10de\n", "0x1db4\n", "0x030200\n", "-1\n", "0-7\n");
        pci_dev("0000:d8:00.0", "0x10de\n", "0x1db4\n", "0x030200\n", "1\n", "4-7\n");
        struct facts *c = open_facts(top);
        eq(c, "gpu.0.numa_node", "-1");
        eq(c, "gpu.0.local_cpus", "0-7");
        has_status(c, "gpu.0.socket", FACT_ABSENT, "locality unknown");
        eq(c, "gpu.1.socket", "1");
        has_status(c, "gpu.balanced", FACT_ABSENT, "socket of an NVIDIA GPU is unknown");
        has_status(c, "gpu.per_socket", FACT_ABSENT, NULL);
        close_facts(c);
}
END_TEST
DEFINE_TEST(gpu_unknown_locality, .description = "gpu unknown locality", .root = "none");

START_TEST(gpu_unbalanced)
{
        two_sockets();
        for (int i = 0; i < 4; i++) {
                char *bdf = xasprintf("0000:%02x:00.0", 0x10 + i);
                /* three on node 0, one on node 1 */
                pci_dev(bdf, "0x10de\n", "0x20b0\n", "0x030200\n", i < 3 ? "0\n" : "1\n", i < 3 ? "0-3\n" : "4-7\n");
                free(bdf);
        }
        struct facts *c = open_facts(top);
        eq(c, "gpu.per_socket", "3,1");
        eq(c, "gpu.sockets_used", "2");
        eq(c, "gpu.balanced", "false");
        close_facts(c);
}
END_TEST
DEFINE_TEST(gpu_unbalanced, .description = "gpu unbalanced", .root = "none");

START_TEST(gpu_broken_files)
{
        two_sockets();
        struct cfg c;
        /* garbage device ID, empty numa_node, truncated resource, a looping capability list */
        pci_dev("0000:07:00.0", "0x10de\n", "banana\n", "0x030200\n", "", "0-3\n");
        dev_file("0000:07:00.0", "resource", "0x00000000fa000000 0x00000000faffffff 0x0000000000040200\n0x0000");
        config_pcie(&c, 0x10de, 0x2330, 5, 16, 4, 8);
        c.b[0x41] = 0x40; /* PM capability points at itself */
        dev_config("0000:07:00.0", &c, 4096);
        /* numa_node garbage; config cut inside the PCI Express capability (LnkSta beyond the end) */
        pci_dev("0000:08:00.0", "0x10de\n", "0x2330\n", "0x030200\n", "abc\n", "zz\n");
        config_pcie(&c, 0x10de, 0x2330, 5, 16, 4, 8);
        dev_config("0000:08:00.0", &c, 0x70);
        /* empty class: it may be a GPU, so the counts are unknown (unreadable is never "none") */
        pci_dev("0000:09:00.0", "0x10de\n", "0x2330\n", "", "0\n", "0-3\n");
        /* 64-byte config, no sysfs link files */
        pci_dev("0000:0a:00.0", "0x10de\n", "0x2330\n", "0x030000\n", "0\n", "0-3\n");
        config_pcie(&c, 0x10de, 0x2330, 5, 16, 4, 8);
        dev_config("0000:0a:00.0", &c, 64);
        /* not a PCI address: ignored */
        put("sys/bus/pci/devices/garbage/class", "0x030000\n");

        struct facts *x = open_facts(top);
        has_status(x, "gpu.count", FACT_UNREADABLE, "0000:09:00.0/class: ENODATA");
        has_status(x, "gpu.nvidia_count", FACT_UNREADABLE, "0000:09:00.0/class");
        eq(x, "gpu.2.address", "0000:0a:00.0");
        has_status(x, "gpu.3.address", FACT_ABSENT, "no such GPU");
        has_status(x, "gpu.0.device_id", FACT_UNREADABLE, "banana");
        has_status(x, "gpu.0.numa_node", FACT_UNREADABLE, "ENODATA");
        has_status(x, "gpu.0.large_bar", FACT_UNREADABLE, "truncated");
        eq(x, "gpu.0.bar.0.size", "16777216");
        has_status(x, "gpu.0.link.width", FACT_ABSENT, "not a PCI Express function");
        has_status(x, "gpu.1.numa_node", FACT_UNREADABLE, "not an integer");
        has_status(x, "gpu.1.local_cpus", FACT_UNREADABLE, "zz");
        has_status(x, "gpu.1.link.width", FACT_ABSENT, "truncated to 112 bytes");
        has_status(x, "gpu.2.link.speed", FACT_ABSENT, "64-byte header");
        close_facts(x);
}
END_TEST
DEFINE_TEST(gpu_broken_files, .description = "gpu broken files", .root = "none");

/* A root whose path is longer than libpci's 1024-byte name buffer makes libpci call its error
 * handler ("File name too long"): ours must come back with the message, not exit(). */
START_TEST(libpci_error_handler)
{
        char *saved = top;
        struct sbuf b = {0};
        sbuf_add(&b, saved);
        for (int i = 0; i < 5; i++) {
                sbuf_add(&b, "/");
                for (int k = 0; k < 200; k++)
                        sbuf_add(&b, "d");
        }
        char *deep = sbuf_steal(&b);
        mkdirs(deep);
        top = deep;
        two_sockets();
        struct cfg c;
        pci_dev("0000:07:00.0", "0x10de\n", "0x2330\n", "0x030200\n", "0\n", "0-3\n");
        config_pcie(&c, 0x10de, 0x2330, 5, 16, 4, 8);
        dev_config("0000:07:00.0", &c, 4096);
        dev_file("0000:07:00.0", "current_link_width", "16\n");
        struct facts *x = open_facts(deep);
        /* lib-pci hands libpci the root handle's copy of config space (read relative to the root
         * descriptor, so no PATH_MAX limit): libpci opens nothing and config space answers. The
         * error callback's longjmp is no longer reached from here. */
        eq(x, "gpu.0.link.width", "8");
        eq(x, "gpu.0.link.max_width", "16");
        eq(x, "gpu.0.numa_node", "0");
        close_facts(x);
        top = saved;
        free(deep);
}
END_TEST
DEFINE_TEST(libpci_error_handler, .description = "libpci error handler", .root = "none");

/* A name in /sys/bus/pci/devices that is not an address as the kernel writes one (a sign or white
 * space that sscanf's %x took, a device above 31) is no PCI function, whatever its class file says:
 * one parser of PCI addresses (base/parse.c pci_addr_parse). */
START_TEST(pci_names_not_addresses)
{
        put("proc/cpuinfo", "");
        pci_dev("0000:18:00.0", "0x10de\n", "0x2330\n", "0x030200\n", "0\n", "0-3\n");
        pci_dev("0000:+1:00.0", "0x10de\n", "0x2330\n", "0x030200\n", "0\n", "0-3\n");
        pci_dev(" 0000:1b:00.0", "0x10de\n", "0x2330\n", "0x030200\n", "0\n", "0-3\n");
        pci_dev("0000:1c:20.0", "0x10de\n", "0x2330\n", "0x030200\n", "0\n", "0-3\n");
        struct facts *c = open_facts(top);
        eq(c, "gpu.count", "1");
        eq(c, "gpu.nvidia_count", "1");
        close_facts(c);
}
END_TEST
DEFINE_TEST(pci_names_not_addresses, .description = "names under /sys/bus/pci/devices that are not PCI addresses are not functions",
            .root = "tmptree");

START_TEST(no_pci_at_all)
{
        put("proc/cpuinfo", "");
        struct facts *c = open_facts(top);
        has_status(c, "gpu.count", FACT_ABSENT, "no /sys/bus/pci/devices");
        has_status(c, "nvswitch.count", FACT_ABSENT, NULL);
        eq(c, "nvme.count", "0");
        eq(c, "ib.count", "0");
        has_status(c, "net.count", FACT_ABSENT, NULL);
        close_facts(c);
}
END_TEST
DEFINE_TEST(no_pci_at_all, .description = "no pci at all", .root = "none");


/* --- partial and unreadable trees (issue 13.2, 13.3, 13.4; 14.2) ---------------------------- */

/* A listing or file that cannot be read: a link to itself (ELOOP), which fails for root too. */
static void loop_at(const char *rel)
{
        const char *base = strrchr(rel, '/');
        link_to(rel, base ? base + 1 : rel);
}

START_TEST(pci_unreadable_is_not_nothing)
{
        two_sockets();
        loop_at("sys/bus/pci/devices");
        struct facts *c = open_facts(top);
        has_status(c, "gpu.count", FACT_UNREADABLE, "ELOOP");
        has_status(c, "gpu.nvidia_count", FACT_UNREADABLE, "listing failed");
        close_facts(c);
}
END_TEST
DEFINE_TEST(pci_unreadable_is_not_nothing, .description = "pci unreadable is not nothing", .root = "none");

START_TEST(pci_unreadable_class)
{
        three_gpus();
        pci_dev("0000:e1:00.0", "0x10de\n", "0x2330\n", NULL, "1\n", "4-7\n");
        loop_at("sys/devices/pci0000:00/0000:e1:00.0/class");
        struct facts *c = open_facts(top);
        has_status(c, "gpu.count", FACT_UNREADABLE, "0000:e1:00.0/class");
        has_status(c, "gpu.nvidia_count", FACT_UNREADABLE, "ELOOP");
        /* the GPUs that could be read are still there */
        eq(c, "gpu.0.address", "0000:07:00.0");
        close_facts(c);
}
END_TEST
DEFINE_TEST(pci_unreadable_class, .description = "pci unreadable class", .root = "none");

START_TEST(ib_class_missing_with_hcas_on_pci)
{
        pci_dev("0000:82:00.0", "0x15b3\n", "0x101b\n", "0x020700\n", "1\n", "4-7\n");
        pci_dev("0000:83:00.0", "0x15b3\n", "0x101b\n", "0x020700\n", "1\n", "4-7\n");
        link_to("sys/devices/pci0000:00/0000:82:00.0/driver", "../../../bus/pci/drivers/mlx5_core");
        struct facts *c = open_facts(top);
        has_status(c, "ib.count", FACT_ABSENT, "RDMA devices present on PCI but not in /sys/class/infiniband");
        has_status(c, "ib.count", FACT_ABSENT, "2 InfiniBand controllers");
        has_status(c, "ib.active_ports", FACT_ABSENT, "rdma drivers not loaded");
        close_facts(c);
        /* an Ethernet NIC (class 0x0200) is no HCA: the count is 0 */
        teardown();
        setup();
        pci_dev("0000:82:00.0", "0x8086\n", "0x37d2\n", "0x020000\n", "0\n", "0-3\n");
        c = open_facts(top);
        eq(c, "ib.count", "0");
        close_facts(c);
}
END_TEST
DEFINE_TEST(ib_class_missing_with_hcas_on_pci, .description = "ib class missing with hcas on pci", .root = "none");

/* Without cpu/online the CPUs come from the cpuN directories, for the PCI probe too. */
START_TEST(topology_without_online)
{
        three_gpus();
        char *p = xasprintf("%s/sys/devices/system/cpu/online", top);
        ck_assert_int_eq(unlink(p), 0);
        free(p);
        struct facts *c = open_facts(top);
        eq(c, "cpu.online", "0-7");
        const struct fact *fc = get(c, "cpu.online");
        ck_assert_str_eq(fc->source, "/sys/devices/system/cpu/cpu*");
        eq(c, "cpu.sockets", "2");
        eq(c, "gpu.0.socket", "0");
        eq(c, "gpu.1.socket", "1");
        eq(c, "gpu.per_socket", "1,1");
        eq(c, "gpu.sockets_used", "2");
        eq(c, "gpu.balanced", "true");
        close_facts(c);
}
END_TEST
DEFINE_TEST(topology_without_online, .description = "topology without online", .root = "none");

/* numa_node -1 with one NUMA node means node 0; with several it stays unknown (13.10). */
START_TEST(numa_minus_one_single_node)
{
        put("sys/devices/system/cpu/online", "0-3\n");
        for (int c = 0; c < 4; c++) {
                char *p = xasprintf("sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
                put(p, "0\n");
                free(p);
        }
        put("sys/devices/system/node/node0/cpulist", "0-3\n");
        pci_dev("0000:04:00.0", "0x10de\n", "0x15f8\n", "0x030200\n", "-1\n", "0-3\n");
        struct facts *c = open_facts(top);
        eq(c, "gpu.0.numa_node", "0");
        ck_assert_ptr_nonnull(strstr(get(c, "gpu.0.numa_node")->source, "one NUMA node"));
        eq(c, "gpu.0.socket", "0");
        close_facts(c);
        teardown();
        setup();
        two_sockets();
        pci_dev("0000:04:00.0", "0x10de\n", "0x15f8\n", "0x030200\n", "-1\n", "0-7\n");
        c = open_facts(top);
        eq(c, "gpu.0.numa_node", "-1");
        close_facts(c);
}
END_TEST
DEFINE_TEST(numa_minus_one_single_node, .description = "numa minus one single node", .root = "none");

/* One package of DIES dies x CORES cores x THREADS threads; CPU numbering as Linux gives it on
 * AMD (the second threads after all first threads). SIBLINGS: write thread_siblings_list. */
static void multi_die(int dies, int cores, int threads, bool siblings, const char *id_file, int online_threads)
{
        int per_thread = dies * cores;
        char *p;
        put("sys/devices/system/cpu/online",
            (p = xasprintf("0-%d\n", per_thread * online_threads - 1)));
        free(p);
        for (int t = 0; t < threads; t++)
                for (int d = 0; d < dies; d++)
                        for (int k = 0; k < cores; k++) {
                                int cpu = t * per_thread + d * cores + k;
                                char *dir = xasprintf("sys/devices/system/cpu/cpu%d/topology", cpu);
                                put((p = xasprintf("%s/physical_package_id", dir)), "0\n");
                                free(p);
                                char *v = xasprintf("%d\n", k);
                                put((p = xasprintf("%s/core_id", dir)), v);
                                free(p);
                                free(v);
                                if (id_file) {
                                        v = xasprintf("%d\n", d);
                                        put((p = xasprintf("%s/%s", dir, id_file)), v);
                                        free(p);
                                        free(v);
                                }
                                if (siblings) {
                                        struct sbuf b = {0};
                                        for (int u = 0; u < threads; u++)
                                                sbuf_addf(&b, "%s%d", u ? "," : "", u * per_thread + d * cores + k);
                                        sbuf_add(&b, "\n");
                                        put((p = xasprintf("%s/thread_siblings_list", dir)), b.s);
                                        free(p);
                                        free(sbuf_steal(&b));
                                }
                                free(dir);
                        }
}

static void expect_cores(const char *cores, const char *tpc)
{
        struct facts *c = open_facts(top);
        eq(c, "cpu.sockets", "1");
        eq(c, "cpu.cores", cores);
        eq(c, "cpu.threads_per_core", tpc);
        close_facts(c);
        teardown();
        setup();
}

START_TEST(multi_die_cores)
{
        /* Threadripper 2990WX: 4 dies x 8 cores (core_id 0-7 on each) x 2 threads */
        multi_die(4, 8, 2, true, NULL, 2);
        expect_cores("32", "2");
        /* no sibling lists: package + die_id + core_id */
        multi_die(4, 8, 2, false, "die_id", 2);
        expect_cores("32", "2");
        /* Arm clusters of 4 with core_id repeating per cluster, no SMT */
        multi_die(8, 4, 1, false, "cluster_id", 1);
        expect_cores("32", "1");
        /* SMT off: the second threads are offline, the sibling lists still name them */
        multi_die(4, 8, 2, true, NULL, 1);
        expect_cores("32", "1");
}
END_TEST
DEFINE_TEST(multi_die_cores, .description = "multi die cores", .root = "none");

/* --- synthetic: NVMe, InfiniBand, net ------------------------------------------------------ */

START_TEST(nvme_controllers)
{
        pci_dev("0000:5e:00.0", "0x144d\n", "0xa80a\n", "0x010802\n", "1\n", "4-7\n");
        pci_dev("0000:5f:00.0", "0x144d\n", "0xa80a\n", "0x010802\n", "-1\n", "0-7\n");
        mkdir_rel("sys/devices/pci0000:00/0000:5e:00.0/nvme/nvme0");
        mkdir_rel("sys/devices/pci0000:00/0000:5f:00.0/nvme/nvme10");
        link_to("sys/devices/pci0000:00/0000:5e:00.0/nvme/nvme0/device", "../../../0000:5e:00.0");
        link_to("sys/devices/pci0000:00/0000:5f:00.0/nvme/nvme10/device", "../../../0000:5f:00.0");
        link_to("sys/class/nvme/nvme10", "../../devices/pci0000:00/0000:5f:00.0/nvme/nvme10");
        link_to("sys/class/nvme/nvme0", "../../devices/pci0000:00/0000:5e:00.0/nvme/nvme0");
        /* NVMe over fabrics: no device link */
        mkdir_rel("sys/class/nvme/nvme2");
        struct facts *c = open_facts(top);
        eq(c, "nvme.count", "3");
        eq(c, "nvme.0.name", "nvme0");
        eq(c, "nvme.0.address", "0000:5e:00.0");
        eq(c, "nvme.0.numa_node", "1");
        eq(c, "nvme.1.name", "nvme2");
        has_status(c, "nvme.1.address", FACT_ABSENT, "fabrics");
        eq(c, "nvme.2.name", "nvme10");
        eq(c, "nvme.2.numa_node", "-1");
        has_status(c, "nvme.9.name", FACT_ABSENT, "no such NVMe");
        close_facts(c);
}
END_TEST
DEFINE_TEST(nvme_controllers, .description = "nvme controllers", .root = "none");

/* A rule's cpu.policy.*.governor reads each policy's governor and no other attribute (five per
 * policy before: 1920 files on a 384-CPU host); asking for the rest later reads only the rest, and
 * every file once. */
START_TEST(cpufreq_attributes_on_demand)
{
        two_sockets();
        for (int p = 0; p < 4; p++) {
                char *d = xasprintf("sys/devices/system/cpu/cpufreq/policy%d", p * 2);
                char *f = xasprintf("%s/scaling_driver", d);
                put(f, "acpi-cpufreq\n");
                free(f);
                f = xasprintf("%s/scaling_governor", d);
                put(f, p == 3 ? "powersave\n" : "performance\n");
                free(f);
                f = xasprintf("%s/scaling_available_governors", d);
                put(f, "performance powersave\n");
                free(f);
                f = xasprintf("%s/affected_cpus", d);
                char *cpus = xasprintf("%d %d\n", p * 2, p * 2 + 1);
                put(f, cpus);
                free(cpus);
                free(f);
                free(d);
        }
        struct facts *c = open_facts(top);
        eq(c, "cpu.cpufreq.driver", "acpi-cpufreq");
        eq(c, "cpu.cpufreq.policies", "4");
        unsigned before = root_files_opened(facts_root(c));
        const struct fact **m = NULL;
        ck_assert_uint_eq(facts_match(c, "cpu.policy.*.governor", &m), 4);
        ck_assert_str_eq(m[3]->name, "cpu.policy.6.governor");
        ck_assert_str_eq(m[3]->str, "powersave");
        free(m);
        ck_assert_uint_eq(root_files_opened(facts_root(c)), before + 4);
        const struct fact **all = NULL;
        size_t n = facts_match(c, "cpu.policy.*", &all);
        free(all);
        ck_assert_uint_eq(n, 4 * 6);
        /* the rest: available_governors, cpus and epp (absent: a missing file is not opened) of
         * each policy, and the drivers of the three policies after the first; persistent_governor
         * opens no file where there is no tmpfiles.d directory */
        ck_assert_uint_eq(root_files_opened(facts_root(c)), before + 4 + 4 + 4 + 3);
        has_status(c, "cpu.policy.2.epp", FACT_ABSENT, "no EPP");
        eq(c, "cpu.policy.4.cpus", "4 5");
        close_facts(c);
}
END_TEST
DEFINE_TEST(cpufreq_attributes_on_demand, .description = "cpufreq attributes on demand", .root = "none");

START_TEST(ib_ports)
{
        pci_dev("0000:82:00.0", "0x15b3\n", "0x101b\n", "0x020700\n", "1\n", "4-7\n");
        const char *d = "sys/devices/pci0000:00/0000:82:00.0/infiniband/mlx5_0";
        char *p;
        link_to((p = xasprintf("%s/device", d)), "../../../0000:82:00.0");
        free(p);
        put((p = xasprintf("%s/ports/1/state", d)), "4: ACTIVE\n");
        free(p);
        put((p = xasprintf("%s/ports/1/phys_state", d)), "5: LinkUp\n");
        free(p);
        put((p = xasprintf("%s/ports/1/rate", d)), "200 Gb/sec (4X HDR)\n");
        free(p);
        put((p = xasprintf("%s/ports/1/link_layer", d)), "InfiniBand\n");
        free(p);
        put((p = xasprintf("%s/ports/2/state", d)), "ACTIVE\n");
        free(p);
        put((p = xasprintf("%s/ports/2/phys_state", d)), "");
        free(p);
        put((p = xasprintf("%s/ports/2/rate", d)), "2.5 Gb/sec (1X SDR)\n");
        free(p);
        link_to("sys/class/infiniband/mlx5_0", "../../devices/pci0000:00/0000:82:00.0/infiniband/mlx5_0");
        /* a software device whose class link dangles */
        link_to("sys/class/infiniband/rxe0", "../../devices/virtual/infiniband/rxe0");

        struct facts *c = open_facts(top);
        eq(c, "ib.count", "2");
        eq(c, "ib.mlx5_0.address", "0000:82:00.0");
        eq(c, "ib.mlx5_0.numa_node", "1");
        eq(c, "ib.mlx5_0.ports", "2");
        eq(c, "ib.mlx5_0.port.1.state", "ACTIVE");
        eq(c, "ib.mlx5_0.port.1.state_code", "4");
        eq(c, "ib.mlx5_0.port.1.phys_state", "LinkUp");
        eq(c, "ib.mlx5_0.port.1.rate", "200 Gb/sec (4X HDR)");
        eq(c, "ib.mlx5_0.port.1.rate_gbps", "200");
        eq(c, "ib.mlx5_0.port.1.link_layer", "InfiniBand");
        has_status(c, "ib.mlx5_0.port.2.state", FACT_UNREADABLE, "ACTIVE");
        has_status(c, "ib.mlx5_0.port.2.phys_state", FACT_UNREADABLE, "ENODATA");
        eq(c, "ib.mlx5_0.port.2.rate_gbps", "2.5");
        has_status(c, "ib.mlx5_0.port.2.link_layer", FACT_ABSENT, NULL);
        has_status(c, "ib.rxe0.address", FACT_ABSENT, NULL);
        has_status(c, "ib.rxe0.ports", FACT_ABSENT, NULL);
        close_facts(c);
}
END_TEST
DEFINE_TEST(ib_ports, .description = "ib ports", .root = "none");

/* A PCI function at PATH below pci0000:00 (bridges first: "0000:00:01.0/0000:01:00.0/0000:02:00.0"),
 * linked from /sys/bus/pci/devices as the kernel links it; the bridges themselves are not listed. */
static void pci_at(const char *path, const char *vendor, const char *cls, const char *numa)
{
        const char *bdf = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        /* Under host bridge pci0000:00 unless PATH names another ("pci0000:80/0000:80:01.0/..."). */
        char *full = startswith(path, "pci") ? xstrdup(path) : xasprintf("pci0000:00/%s", path);
        char *p = xasprintf("sys/devices/%s/vendor", full);
        put(p, vendor);
        free(p);
        put((p = xasprintf("sys/devices/%s/device", full)), "0x1234\n");
        free(p);
        put((p = xasprintf("sys/devices/%s/class", full)), cls);
        free(p);
        put((p = xasprintf("sys/devices/%s/numa_node", full)), numa);
        free(p);
        char *target = xasprintf("../../../devices/%s", full);
        link_to((p = xasprintf("sys/bus/pci/devices/%s", bdf)), target);
        free(p);
        free(target);
        free(full);
}

/* An HCA NAME with one ACTIVE InfiniBand port on the PCI function at PATH (as pci_at). */
static void hca_at(const char *name, const char *path, const char *numa)
{
        const char *bdf = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        pci_at(path, "0x15b3\n", "0x020700\n", numa);
        char *full = startswith(path, "pci") ? xstrdup(path) : xasprintf("pci0000:00/%s", path);
        char *d = xasprintf("sys/devices/%s/infiniband/%s", full, name), *p, *t;
        link_to((p = xasprintf("%s/device", d)), (t = xasprintf("../../../%s", bdf)));
        free(p);
        free(t);
        put((p = xasprintf("%s/ports/1/state", d)), "4: ACTIVE\n");
        free(p);
        put((p = xasprintf("%s/ports/1/link_layer", d)), "InfiniBand\n");
        free(p);
        t = xasprintf("../../devices/%s/infiniband/%s", full, name);
        link_to((p = xasprintf("sys/class/infiniband/%s", name)), t);
        free(p);
        free(t);
        free(d);
        free(full);
}

/* Compute or storage HCA from the PCIe tree (issue 29 item 3): on one NUMA node with a GPU, the HCA
 * behind the GPU's switch is a rail, the one on a root port of its own is storage. */
START_TEST(ib_role_from_switch)
{
        two_sockets();
        pci_at("0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", "0x10de\n", "0x030200\n", "0\n");
        hca_at("mlx5_0", "0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", "0\n");
        hca_at("mlx5_1", "0000:00:02.0/0000:05:00.0", "0\n");
        struct facts *c = open_facts(top);
        eq(c, "ib.mlx5_0.port.1.role", "compute");
        eq(c, "ib.mlx5_1.port.1.role", "storage");
        close_facts(c);
}
END_TEST
DEFINE_TEST(ib_role_from_switch, .description = "an HCA behind a GPU's switch is compute, one on a root port of its own storage", .root = "none");

/* Where the tree pairs no HCA with a GPU (all on root ports) the NUMA node decides; an HCA whose
 * place and node are unknown stays compute. */
START_TEST(ib_role_from_numa)
{
        two_sockets();
        pci_at("0000:00:01.0/0000:01:00.0", "0x10de\n", "0x030200\n", "0\n");
        hca_at("mlx5_0", "0000:00:02.0/0000:02:00.0", "0\n");
        hca_at("mlx5_1", "0000:00:03.0/0000:03:00.0", "1\n");
        hca_at("mlx5_2", "0000:00:04.0/0000:04:00.0", "-1\n");
        struct facts *c = open_facts(top);
        eq(c, "ib.mlx5_0.port.1.role", "compute");
        eq(c, "ib.mlx5_1.port.1.role", "storage");
        eq(c, "ib.mlx5_2.port.1.role", "compute");
        close_facts(c);
}
END_TEST
DEFINE_TEST(ib_role_from_numa, .description = "with no switch pairing the NUMA node decides an HCA's role; unknown stays compute", .root = "none");

/* A GPU on NUMA node 0 at GPU and HCAs mlx5_0.. at HCAS (as pci_at's paths, each "PATH@NODE"); the
 * GPU's local_hca and local_hca_via must be WANT and VIA. */
static void local_hca_case(const char *gpu, const char *const *hcas, const char *want, const char *via)
{
        two_sockets();
        pci_at(gpu, "0x10de\n", "0x030200\n", "0\n");
        for (size_t i = 0; hcas[i]; i++) {
                const char *at = strchr(hcas[i], '@');
                char *path = xstrndup(hcas[i], (size_t)(at - hcas[i])), *node = xasprintf("%s\n", at + 1);
                char *name = xasprintf("mlx5_%zu", i);
                hca_at(name, path, node);
                free(path);
                free(node);
                free(name);
        }
        struct facts *c = open_facts(top);
        eq(c, "gpu.0.local_hca", want);
        eq(c, "gpu.0.local_hca_via", via);
        close_facts(c);
}

/* gpu.N.local_hca from the PCIe tree (issue 29): of the HCAs on the GPU's NUMA node, the one behind
 * its own switch, not the one behind the switch above it nor the storage adapter on a root port. */
START_TEST(local_hca_from_switch)
{
        local_hca_case("0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0/0000:04:00.0",
                       (const char *const[]){"0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:01.0/0000:05:00.0@0",
                                             "0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:06:00.0@0",
                                             "0000:00:02.0/0000:07:00.0@0", NULL},
                       "mlx5_0", "pcie_switch");
}
END_TEST
DEFINE_TEST(local_hca_from_switch, .description = "a GPU's local HCA is the one behind its nearest PCIe switch, not any on its NUMA node", .root = "none");

/* Without a shared switch: the GPU's root port, then its host bridge, then its NUMA node. */
START_TEST(local_hca_root_port)
{
        local_hca_case("0000:00:01.0/0000:01:00.0",
                       (const char *const[]){"0000:00:01.0/0000:01:00.1@0", "0000:00:02.0/0000:02:00.0@0", NULL}, "mlx5_0",
                       "root_port");
}
END_TEST
DEFINE_TEST(local_hca_root_port, .description = "without a shared switch, the HCA on the GPU's root port", .root = "none");

START_TEST(local_hca_host_bridge)
{
        local_hca_case("0000:00:01.0/0000:01:00.0",
                       (const char *const[]){"pci0000:40/0000:40:01.0/0000:41:00.0@0", "0000:00:02.0/0000:02:00.0@0", NULL},
                       "mlx5_1", "host_bridge");
}
END_TEST
DEFINE_TEST(local_hca_host_bridge, .description = "without a shared port, the HCA on the GPU's host bridge before another on its NUMA node", .root = "none");

START_TEST(local_hca_numa)
{
        local_hca_case("0000:00:01.0/0000:01:00.0",
                       (const char *const[]){"pci0000:40/0000:40:01.0/0000:41:00.0@0", "pci0000:80/0000:80:01.0/0000:81:00.0@1",
                                             NULL},
                       "mlx5_0", "numa_node");
}
END_TEST
DEFINE_TEST(local_hca_numa, .description = "with nothing shared in the PCIe tree the GPU's NUMA node decides, and says so", .root = "none");

START_TEST(net_foreign_root)
{
        put("sys/class/net/eth0/operstate", "up\n");
        put("sys/class/net/eth0/flags", "0x1003\n");
        put("sys/class/net/eth0.1015/operstate", "down\n");
        put("sys/class/net/eth0.1015/flags", "0x1002\n");
        put("sys/class/net/ib0/operstate", "up\n");
        put("sys/class/net/ib0/flags", "1003\n"); /* no 0x: garbage */
        put("sys/class/net/eth1/operstate", "");
        put("proc/net/if_inet6", "20010db8000000000000000000000001 02 40 00 80     eth0\n"
                                 "fe800000000000000202b3fffe1e8329 03 40 20 80 eth0.1015\n"
                                 "fe800000000000000202b3fffe1e832a 04 40 20 80      eth1\n"
                                 "short line\n");
        put("proc/net/route", "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
                              "eth0.1015\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
        struct facts *c = open_facts(top);
        eq(c, "net.count", "4");
        eq(c, "net.eth0.operstate", "up");
        eq(c, "net.eth0.up", "true");
        eq(c, "net.eth0.has_address", "true");
        eq(c, "net.eth0.addresses", "2001:db8::1");
        eq(c, "net.eth0.1015.up", "false");
        eq(c, "net.eth0.1015.has_address", "true");
        has_status(c, "net.eth0.1015.addresses", FACT_ABSENT, "procfs");
        eq(c, "net.eth1.has_address", "false"); /* link-local only */
        has_status(c, "net.eth1.operstate", FACT_UNREADABLE, "ENODATA");
        has_status(c, "net.eth1.up", FACT_ABSENT, NULL);
        has_status(c, "net.ib0.up", FACT_UNREADABLE, NULL);
        close_facts(c);
}
END_TEST
DEFINE_TEST(net_foreign_root, .description = "net foreign root", .root = "none");

/* --- corpus --------------------------------------------------------------------------------- */

/* Give the PCI function BDF of an unpacked corpus tree another vendor ID (through its
 * sys/bus/pci/devices link, as the probes read it). */
static void set_vendor(const char *root, const char *bdf, const char *vendor)
{
        char *p = xasprintf("%s/sys/bus/pci/devices/%s/vendor", root, bdf);
        FILE *fp = fopen(p, "w");
        ck_assert_msg(fp != NULL, "%s: %s", p, strerror(errno));
        fputs(vendor, fp);
        ck_assert_int_eq(fclose(fp), 0);
        free(p);
}

static char *corpus_root(const char *folder, const char *tarball, const char *topdir)
{
        char *dir = xasprintf("%s/../shared/corpus/%s", LLMTUNE_SRCDIR, folder);
        if (access(dir, R_OK) != 0) {
                ck_assert_msg(!getenv("LLMTUNE_REQUIRE_CORPUS"), "corpus %s missing", dir);
                fprintf(stderr, "skipping: corpus %s not found\n", dir);
                free(dir);
                return NULL;
        }
        char *cmd = xasprintf("tar -xjf '%s/%s' -C '%s'", dir, tarball, top);
        ck_assert_int_eq(system(cmd), 0);
        free(cmd);
        free(dir);
        return xasprintf("%s/%s", top, topdir);
}

START_TEST(corpus_32em64t)
{
        char *r = corpus_root("hwloc-linux-32em64t-2n8c-dax-nvme-mic-dimms", "32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2",
                              "32em64t-2n8c+1mic");
        if (!r)
                return;
        struct facts *c = open_facts(r);
        /* ConnectX-3 on NUMA node 1, port ACTIVE at FDR */
        eq(c, "ib.mlx4_0.address", "0000:82:00.0");
        eq(c, "ib.mlx4_0.numa_node", "1");
        eq(c, "ib.mlx4_0.port.1.state", "ACTIVE");
        eq(c, "ib.mlx4_0.port.1.phys_state", "LinkUp");
        eq(c, "ib.mlx4_0.port.1.rate_gbps", "56");
        eq(c, "ib.mlx4_0.port.1.link_layer", "InfiniBand");
        /* NVMe whose numa_node is -1 (no /sys/class/nvme in this old snapshot) */
        eq(c, "nvme.count", "1");
        eq(c, "nvme.0.address", "0000:00:02.0");
        eq(c, "nvme.0.numa_node", "-1");
        /* the only display device is the ASPEED BMC VGA, on node 0: not a GPU */
        eq(c, "gpu.count", "0");
        eq(c, "gpu.excluded", "0000:05:00.0 (ASPEED BMC display)");
        /* the Xeon Phi (class 0x0b40) is an accelerator */
        eq(c, "accel.count", "1");
        eq(c, "accel.0.address", "0000:83:00.0");
        close_facts(c);

        /* The same device given NVIDIA's vendor ID: the GPU locality code on a real 2-node tree. */
        set_vendor(r, "0000:05:00.0", "0x10de\n");
        c = open_facts(r);
        eq(c, "gpu.count", "1");
        eq(c, "gpu.nvidia_count", "1");
        eq(c, "gpu.0.numa_node", "0");
        eq(c, "gpu.0.socket", "0");
        /* 64-byte config and no sysfs link files: no link facts */
        has_status(c, "gpu.0.link.width", FACT_ABSENT, "64-byte");
        ck_assert(!hwloc_loaded(c));
        eq(c, "gpu.0.hwloc_numa_node", "0");
        eq(c, "gpu.0.locality_agrees", "true");
        ck_assert(hwloc_loaded(c));
        ck_assert_str_eq(hwloc_backends(c), "Linux"); /* a tree: the Linux component alone */
        /* interfaces with a dot in the name, snapshot without /proc/net */
        eq(c, "net.eth0.up", "true");
        eq(c, "net.eth1.operstate", "down");
        has_status(c, "net.eth0.1015.operstate", FACT_ABSENT, NULL);
        has_status(c, "net.eth0.has_address", FACT_ABSENT, "/proc/net");
        close_facts(c);
        free(r);
}
END_TEST
DEFINE_TEST(corpus_32em64t, .description = "corpus 32em64t", .root = "corpus");

START_TEST(corpus_r910)
{
        char *r = corpus_root("hwloc-linux-40intel64-r910-pcilocality", "40intel64-2g2n4c+pcilocality.tar.bz2",
                              "40intel64-2g2n4c+pci");
        if (!r)
                return;
        struct facts *c = open_facts(r);
        eq(c, "ib.qib0.address", "0000:43:00.0");
        eq(c, "ib.qib0.numa_node", "2");
        eq(c, "ib.qib0.port.1.state", "ACTIVE");
        eq(c, "ib.qib0.port.1.rate_gbps", "40");
        /* the Matrox BMC VGA is not a GPU */
        eq(c, "gpu.count", "0");
        eq(c, "gpu.excluded", "0000:09:03.0 (Matrox BMC display)");
        close_facts(c);
        /* Given NVIDIA's vendor ID, a GPU with numa_node -1 on a real 4-node box: unknown everywhere */
        set_vendor(r, "0000:09:03.0", "0x10de\n");
        c = open_facts(r);
        eq(c, "gpu.count", "1");
        eq(c, "gpu.0.numa_node", "-1");
        has_status(c, "gpu.0.socket", FACT_ABSENT, "locality unknown");
        has_status(c, "gpu.0.hwloc_numa_node", FACT_ABSENT, "whole Machine");
        has_status(c, "gpu.0.locality_agrees", FACT_ABSENT, "neither");
        close_facts(c);
        free(r);
}
END_TEST
DEFINE_TEST(corpus_r910, .description = "corpus r910", .root = "corpus");

START_TEST(corpus_power9)
{
        char *r = corpus_root("hwloc-linux-nvidiagpunumanodes-power9-v100", "nvidiagpunumanodes.tar.bz2",
                              "nvidiagpunumanodes");
        if (!r)
                return;
        struct facts *c = open_facts(r);
        /* PCI directories hold only class and local_cpus; the NVIDIA driver's directory says NVIDIA */
        eq(c, "gpu.count", "6");
        eq(c, "gpu.nvidia_count", "6");
        eq(c, "gpu.0.address", "0004:05:00.0");
        eq(c, "gpu.0.vendor_id", "10de");
        has_status(c, "gpu.0.device_id", FACT_ABSENT, NULL);
        has_status(c, "gpu.0.numa_node", FACT_ABSENT, NULL);
        /* socket from local_cpus masks: three GPUs per POWER9 chip */
        eq(c, "gpu.0.local_cpus", "0-15");
        eq(c, "gpu.3.local_cpus", "88-103");
        eq(c, "gpu.0.socket", "0");
        eq(c, "gpu.5.socket", "1");
        eq(c, "gpu.per_socket", "3,3");
        eq(c, "gpu.balanced", "true");
        close_facts(c);
        free(r);
}
END_TEST
DEFINE_TEST(corpus_power9, .description = "corpus power9", .root = "corpus");


/* hwloc's x86 backend moves the calling thread to each PU in turn (to run CPUID there): counted
 * here, in front of libc's (the executable's definition comes first in symbol lookup). */
static unsigned affinity_moves;

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
        affinity_moves++;
        return (int)syscall(SYS_sched_setaffinity, pid, size, set);
}

int pthread_setaffinity_np(pthread_t thread, size_t size, const cpu_set_t *set)
{
        affinity_moves++;
        return thread == pthread_self() && syscall(SYS_sched_setaffinity, 0, size, set) < 0 ? errno : 0;
}

/* The live system's locality load reads what a tree's does: hwloc's Linux component, without the
 * x86 backend, which binds the thread to every PU in turn to run CPUID (each one a trap in a VM)
 * for caches and cores the lean load drops anyway. */
START_TEST(live_hwloc_leaves_cpuid_out)
{
        unsigned moves = affinity_moves;
        struct facts *c = open_facts("/");
        struct hwloc_locality loc = {0};
        const char *err = NULL;
        /* no such function: the answer is "not found", the load happens all the same */
        ck_assert_int_eq(hwloc_pci_locality(c, 0xffff, 0xff, 0x1f, 7, &loc, &err), 0);
        ck_assert(!loc.found);
        const char *b = hwloc_backends(c);
        ck_assert_msg(b && strstr(b, "Linux"), "%s", b ? b : "(none)"); /* it did load, from sysfs */
        ck_assert_uint_eq(affinity_moves, moves); /* 3 on a 2-CPU VM with the x86 backend */
        close_facts(c);
}
END_TEST
DEFINE_TEST(live_hwloc_leaves_cpuid_out,
            .description = "the live locality load leaves hwloc's x86 CPUID backend out (no thread moved to each PU)",
            .root = "this machine");

UNIT_MAIN(.name = "devices", .setup = setup, .teardown = teardown)
