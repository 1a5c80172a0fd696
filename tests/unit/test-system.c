/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * System probes (swap.*, kernel.*, module.*, modprobe.*, nvidia.*, md.*, mount.*) against small
 * machine roots written here, plus the mdstat parser against the real-machine corpus.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "config.h"
#include "facts/facts.h"
#include "facts/readers/mdstat.h"
#include "base/root.h"
#include "facts/readers/superblock.h"
#include "facts/readers/swaps.h"
#include "tmptree.h"
#include "factcheck.h"
#include "unit-main.h"

static void puts_(const char *rel, const char *text) { tmptree_write(rel, text, strlen(text)); }


/* --- swap -------------------------------------------------------------------------------------- */

START_TEST(swap_active_and_boot_sources)
{
        tmptree_new("system");
        puts_("proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
                            "/swap\\040file                           file\t\t1048576\t\t0\t\t-2\n"
                            "/dev/zram0                              partition\t8388604\t\t76\t\t100\n");
        puts_("proc/meminfo", "MemTotal:       3742148 kB\nSwapTotal:       9436668 kB\n");
        puts_("etc/fstab", "# /etc/fstab\nUUID=abcd / ext4 defaults 0 1\n/swap.img\tnone\tswap\tsw\t0\t0\n"
                           "#/dev/sdb2 none swap sw 0 0\n/dev/sdb2 none swap sw 0 0\n");
        tmptree_link("etc/systemd/zram-generator.conf", "/dev/null");
        puts_("usr/lib/systemd/zram-generator.conf", "[zram0]\n");
        puts_("etc/systemd/system/dev-sdc1.swap", "[Swap]\nWhat=/dev/sdc1\n");
        tmptree_link("etc/systemd/system/swapfile.swap", "/dev/null");
        puts_("etc/systemd/system/foo.service", "");
        struct facts *f = open_facts(NULL);
        eq(f, "swap.total", "9663148032");
        eq(f, "swap.active.count", "2");
        eq(f, "swap.active.0.path", "/swap file");
        eq(f, "swap.active.0.type", "file");
        eq(f, "swap.active.0.size", "1073741824");
        eq(f, "swap.active.0.priority", "-2");
        eq(f, "swap.active.1.used", "77824");
        eq(f, "swap.zram.active", "1");
        eq(f, "swap.fstab.count", "2");
        eq(f, "swap.fstab.0.spec", "/swap.img");
        eq(f, "swap.fstab.0.line", "3");
        eq(f, "swap.fstab.1.spec", "/dev/sdb2");
        eq(f, "swap.fstab.1.line", "5");
        /* /etc's /dev/null link masks the /usr/lib configuration */
        has_status(f, "swap.zram.generator", FACT_ABSENT, "masked");
        eq(f, "swap.units.count", "1");
        eq(f, "swap.units.names", "dev-sdc1.swap");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(swap_active_and_boot_sources, .description = "swap active and boot sources", .root = "tmptree");

START_TEST(swap_generators)
{
        tmptree_new("system");
        puts_("proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
        puts_("etc/default/zramswap", "ALGO=lz4\n");
        struct facts *f = open_facts(NULL);
        eq(f, "swap.active.count", "0");
        eq(f, "swap.zram.active", "0");
        eq(f, "swap.zram.generator", "/etc/default/zramswap");
        eq(f, "swap.fstab.count", "0");
        eq(f, "swap.units.count", "0");
        has_status(f, "swap.total", FACT_ABSENT, NULL);
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(swap_generators, .description = "swap generators", .root = "tmptree");

/* systemd.gpt_auto= given twice: the last one decides, as systemd-gpt-auto-generator reads it. */
START_TEST(swap_gpt_auto_last_occurrence)
{
        tmptree_new("system");
        puts_("proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
        puts_("proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda2 systemd.gpt_auto=0 quiet systemd.gpt_auto=1\n");
        struct facts *f = open_facts(NULL);
        /* on: whether a partition is swap is then up to the udev database, which this tree lacks */
        has_status(f, "swap.gpt_auto.count", FACT_ABSENT, "no udev database");
        close_facts(f);
        puts_("proc/cmdline", "systemd.gpt_auto=1 systemd.gpt-auto=no systemd.gpt_auto=maybe\n");
        f = open_facts(NULL);
        eq(f, "swap.gpt_auto.count", "0"); /* off; "maybe" is no boolean and changes nothing */
        eq(f, "swap.gpt_auto.devices", "");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(swap_gpt_auto_last_occurrence,
            .description = "systemd.gpt_auto= on the command line twice: the last occurrence decides", .root = "tmptree");

/* numa_balancing= given twice: the kernel's setup_numabalancing runs for each, the last one stands;
 * a value it refuses changes nothing. */
START_TEST(numa_balancing_last_occurrence)
{
        tmptree_new("system");
        puts_("sys/devices/system/node/node0/cpulist", "0-3\n");
        puts_("sys/devices/system/node/node1/cpulist", "4-7\n");
        puts_("proc/cmdline", "numa_balancing=disable quiet numa_balancing=enable\n");
        struct facts *f = open_facts(NULL);
        eq(f, "sysctl.persistent.kernel.numa_balancing", "1");
        close_facts(f);
        puts_("proc/cmdline", "numa_balancing=enable numa_balancing=disable numa_balancing=maybe\n");
        f = open_facts(NULL);
        eq(f, "sysctl.persistent.kernel.numa_balancing", "0");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(numa_balancing_last_occurrence,
            .description = "numa_balancing= on the command line twice: the last occurrence is the kernel default",
            .root = "tmptree");

/* A NUMA node is a directory the kernel names "node%d": "node01", "node-1", "node+1" or "node 1" in
 * a tree are not nodes (sscanf's %u took each, as node 1 again or as node 4294967295). */
START_TEST(numa_node_names_as_the_kernel_prints_them)
{
        tmptree_new("system");
        puts_("sys/devices/system/node/node0/cpulist", "0-3\n");
        puts_("sys/devices/system/node/node1/cpulist", "4-7\n");
        static const char *const not_nodes[] = {"node01", "node-1", "node+1", "node 1"};
        for (size_t i = 0; i < ARRAY_SIZE(not_nodes); i++) {
                _cleanup_free_ char *p = xasprintf("sys/devices/system/node/%s/cpulist", not_nodes[i]);
                puts_(p, "8-9\n");
        }
        struct facts *f = open_facts(NULL);
        eq(f, "numa.nodes", "2");
        eq(f, "numa.node_list", "0-1");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(numa_node_names_as_the_kernel_prints_them,
            .description = "NUMA node directories: node and digits only, as the kernel names them", .root = "tmptree");

/* A node's meminfo is /proc/meminfo's format behind "Node N ": read by meminfo_text_bytes, the
 * same reader as /proc/meminfo's; a value without a number is no size. */
START_TEST(numa_node_meminfo)
{
        tmptree_new("system");
        puts_("sys/devices/system/node/node0/cpulist", "0-3\n");
        puts_("sys/devices/system/node/node0/meminfo", "Node 0 MemFree:  7 kB\nNode 0 MemTotal:       1000 kB\n");
        puts_("sys/devices/system/node/node1/cpulist", "4-7\n");
        puts_("sys/devices/system/node/node1/meminfo", "Node 1 MemTotal:  lots kB\n");
        struct facts *f = open_facts(NULL);
        eq(f, "numa.node.0.mem_total", "1024000");
        has_status(f, "numa.node.1.mem_total", FACT_UNREADABLE, "no parsable MemTotal line");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(numa_node_meminfo, .description = "a NUMA node's MemTotal, read as /proc/meminfo is", .root = "tmptree");

START_TEST(swap_garbage)
{
        tmptree_new("system");
        struct facts *f = open_facts(NULL);
        has_status(f, "swap.active.count", FACT_ABSENT, "no /proc/swaps");
        close_facts(f);

        puts_("proc/swaps", "/dev/sda2 partition 10 0 -2\n");
        f = open_facts(NULL);
        has_status(f, "swap.active.count", FACT_UNREADABLE, "header");
        close_facts(f);

        puts_("proc/swaps", "Filename Type Size Used Priority\n/dev/sda2 partition 1x0 0 -2\n/dev/sda3 partition\n"
                            "/dev/sda4 partition 4 0 high\n");
        puts_("proc/meminfo", "SwapTotal: lots kB\n");
        f = open_facts(NULL);
        eq(f, "swap.active.count", "3");
        has_status(f, "swap.active.0.size", FACT_UNREADABLE, "malformed line 2");
        has_status(f, "swap.active.1.path", FACT_UNREADABLE, "malformed line 3");
        has_status(f, "swap.active.2.priority", FACT_UNREADABLE, "EINVAL");
        has_status(f, "swap.total", FACT_UNREADABLE, NULL);
        close_facts(f);

        /* MAX_SWAPFILES (32) areas at most: 32 lines are read, 33 are not a kernel's. */
        struct sbuf b = {0};
        sbuf_add(&b, "Filename Type Size Used Priority\n");
        for (int i = 0; i < SWAPS_MAX; i++)
                sbuf_addf(&b, "/swap%d file 1024 0 -%d\n", i, i + 2);
        puts_("proc/swaps", b.s);
        f = open_facts(NULL);
        eq(f, "swap.active.count", "32");
        eq(f, "swap.active.31.path", "/swap31");
        close_facts(f);
        sbuf_add(&b, "/swap32 file 1024 0 -34\n");
        puts_("proc/swaps", b.s);
        f = open_facts(NULL);
        has_status(f, "swap.active.count", FACT_UNREADABLE, "more than 32 swap areas listed");
        has_status(f, "swap.active", FACT_UNREADABLE, "the kernel allows at most 32");
        close_facts(f);
        free(sbuf_steal(&b));
        tmptree_drop();
}
END_TEST
DEFINE_TEST(swap_garbage, .description = "swap garbage", .root = "tmptree");

/* --- kernel, modules, modprobe.d ---------------------------------------------------------------- */

static void kernel_tree(void)
{
        tmptree_new("system");
        puts_("proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
        puts_("proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro module_blacklist=nvidiafb,nouveau "
                              "modprobe.blacklist=foo-bar nvidia-drm.modeset=1 quiet opt=\"a b\" -- x.y=1\n");
        puts_("proc/modules", "nvidia_uvm 1437696 0 - Live 0x0000000000000000 (POE)\n"
                              "nvidia_drm 77824 2 - Live 0x0000000000000000 (POE)\n"
                              "nvidia 56512512 45 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
                              "mlx5_core 2035712 1 mlx5_ib, Loading 0x0000000000000000\n");
        puts_("proc/driver/nvidia/version",
              "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
              "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n");
        puts_("etc/modprobe.d/blacklist-nouveau.conf", "# NVIDIA installer\nblacklist nouveau\n"
                                                        "options nouveau modeset=0\n");
        puts_("usr/lib/modprobe.d/nvidia.conf", "install nv-peer-mem /bin/false\noptions nvidia NVreg_X=1\n"
                                                 "this line is garbage\nblacklist\n");
        puts_("lib/modprobe.d/snd.conf", "options snd* index=-2\n");
}

START_TEST(kernel_and_modules)
{
        kernel_tree();
        struct facts *f = open_facts(NULL);
        eq(f, "kernel.release", "6.8.0-45-generic");
        eq(f, "kernel.cmdline.module_blacklist", "nvidiafb,nouveau,foo_bar");
        eq(f, "nvidia.driver.version", "535.104.05");
        eq(f, "module.loaded", "mlx5_core nvidia nvidia_drm nvidia_uvm");
        eq(f, "module.nvidia.loaded", "true");
        eq(f, "module.nvidia.state", "live");
        eq(f, "module.mlx5_core.state", "loading");
        eq(f, "module.nouveau.loaded", "false");
        has_status(f, "module.nouveau.state", FACT_ABSENT, "not loaded");
        /* on demand, either spelling */
        eq(f, "module.nvidia-uvm.loaded", "true");
        eq(f, "module.ext4.loaded", "false");
        ck_assert_ptr_null(facts_get(f, "module.bad/name.loaded"));
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(kernel_and_modules, .description = "kernel and modules", .root = "tmptree");

START_TEST(modprobe_config)
{
        kernel_tree();
        /* libkmod must not print about the garbage line (library code never prints) */
        fflush(stderr);
        int saved = dup(2);
        FILE *err = tmpfile();
        dup2(fileno(err), 2);
        struct facts *f = open_facts(NULL);
        const struct fact *bl = facts_get(f, "modprobe.blacklist");
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        ck_assert_int_eq(lseek(fileno(err), 0, SEEK_END), 0);
        fclose(err);

        ck_assert_ptr_nonnull(bl);
        ck_assert_str_eq(bl->str, "foo_bar nouveau nvidiafb");
        eq(f, "modprobe.nouveau.blacklisted", "true");
        eq(f, "modprobe.nouveau.options", "modeset=0");
        has_status(f, "modprobe.nouveau.install", FACT_ABSENT, NULL);
        eq(f, "modprobe.nvidia.blacklisted", "false");
        eq(f, "modprobe.nvidia.options", "NVreg_X=1");
        eq(f, "modprobe.nv_peer_mem.install", "/bin/false");
        /* from ROOT's command line, asked for in either spelling */
        eq(f, "modprobe.nvidia-drm.options", "modeset=1");
        ck_assert_str_eq(get(f, "modprobe.nvidia-drm.options")->source, "/proc/cmdline");
        eq(f, "modprobe.foo-bar.blacklisted", "true");
        eq(f, "modprobe.snd_hda_intel.options", "index=-2");
        /* "--" ends the kernel's words: x.y=1 belongs to init */
        has_status(f, "modprobe.x.options", FACT_ABSENT, NULL);
        /* nothing of the build machine's own /proc/cmdline (random.trust_cpu=1 and the like) */
        has_status(f, "modprobe.random.options", FACT_ABSENT, NULL);
        has_status(f, "modprobe.rcupdate.options", FACT_ABSENT, NULL);
        ck_assert_ptr_nonnull(facts_handle(f, "kmod"));
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(modprobe_config, .description = "modprobe config", .root = "tmptree");

START_TEST(modules_without_proc_modules)
{
        tmptree_new("system");
        puts_("proc/version", "Linux version 5.15.0-91-generic (buildd@lcy02) (gcc 11.4.0) #101-Ubuntu SMP\n");
        puts_("sys/module/nvidia/initstate", "live\n");
        tmptree_mkdir("sys/module/nouveau/parameters");
        struct facts *f = open_facts(NULL);
        eq(f, "kernel.release", "5.15.0-91-generic");
        has_status(f, "kernel.cmdline", FACT_ABSENT, NULL);
        eq(f, "module.nvidia.loaded", "true");
        eq(f, "module.nvidia.state", "live");
        eq(f, "module.nouveau.loaded", "true");
        eq(f, "module.nouveau.state", "builtin");
        has_status(f, "module.ib_core.loaded", FACT_ABSENT, "no /proc/modules in this tree");
        eq(f, "module.loaded", "nvidia");
        has_status(f, "nvidia.driver.version", FACT_ABSENT, "no NVIDIA driver loaded");
        has_status(f, "kernel.cmdline.module_blacklist", FACT_ABSENT, NULL);
        eq(f, "modprobe.blacklist", "");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(modules_without_proc_modules, .description = "modules without proc modules", .root = "tmptree");

START_TEST(modules_garbage)
{
        tmptree_new("system");
        puts_("proc/modules", "nvidia 56512512 45 - Live 0x0\nthis is not a module line\n");
        puts_("proc/driver/nvidia/version", "NVRM version: something odd\n");
        puts_("proc/sys/kernel/osrelease", "");
        struct facts *f = open_facts(NULL);
        has_status(f, "module.loaded", FACT_UNREADABLE, "malformed line 2");
        has_status(f, "module.nvidia.loaded", FACT_UNREADABLE, "malformed line 2");
        has_status(f, "nvidia.driver.version", FACT_UNREADABLE, "NVRM version");
        has_status(f, "kernel.release", FACT_ABSENT, NULL);
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(modules_garbage, .description = "modules garbage", .root = "tmptree");

/* --- md, filesystems, mounts ---------------------------------------------------------------------- */

static void le16(uint8_t *p, unsigned v)
{
        p[0] = v & 0xff;
        p[1] = (v >> 8) & 0xff;
}
static void le32(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (v >> (8 * i)) & 0xff;
}
static void be32(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (v >> (24 - 8 * i)) & 0xff;
}

/* 64 KiB image with an ext4 superblock: 1 KiB << log blocks, the given RAID hints. */
static void ext4_image(const char *rel, unsigned log, unsigned stride, uint32_t width)
{
        uint8_t *img = xcalloc(1, 65536), *sb = img + 1024;
        le32(sb + 0x18, log);
        le16(sb + 0x38, 0xEF53);
        le32(sb + 0x5C, 0x4);          /* has_journal */
        le32(sb + 0x60, 0x0002 | 0x0040); /* filetype, extents */
        le16(sb + 0x164, stride);
        le32(sb + 0x170, width);
        tmptree_write(rel, img, 65536);
        free(img);
}

static void xfs_image(const char *rel, uint32_t bs, uint32_t unit, uint32_t width)
{
        uint8_t *img = xcalloc(1, 65536);
        memcpy(img, "XFSB", 4);
        be32(img + 4, bs);
        be32(img + 0xB8, unit);
        be32(img + 0xBC, width);
        tmptree_write(rel, img, 65536);
        free(img);
}

static void md_sysfs(const char *md, const char *level, const char *chunk, const char *disks, const char *members)
{
        char *p;
        p = xasprintf("sys/block/%s/md/level", md);
        puts_(p, level);
        free(p);
        p = xasprintf("sys/block/%s/md/chunk_size", md);
        puts_(p, chunk);
        free(p);
        p = xasprintf("sys/block/%s/md/raid_disks", md);
        puts_(p, disks);
        free(p);
        p = xasprintf("sys/block/%s/md/array_state", md);
        puts_(p, "clean\n");
        free(p);
        char *copy = xstrdup(members), *save = NULL;
        for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                p = xasprintf("sys/block/%s/md/dev-%s/state", md, t);
                puts_(p, "in_sync\n");
                free(p);
        }
        free(copy);
}

/* A snapshot that copied /proc/self/mounts but not the /proc/mounts link (13.8); a mount table that
 * cannot be read is unreadable, not "no mounts" (14.2). */
START_TEST(mounts_fallback_and_unreadable)
{
        tmptree_new("system");
        puts_("proc/self/mounts", "/dev/md0 /data ext4 rw,nobarrier 0 0\ntmpfs /dev/shm tmpfs rw,size=1024k 0 0\n");
        struct facts *f = open_facts(NULL);
        eq(f, "mount.count", "2");
        ck_assert_str_eq(get(f, "mount.0.options")->source, "/proc/self/mounts");
        eq(f, "mem.shm.size", "1048576");
        close_facts(f);
        tmptree_drop();

        tmptree_new("system");
        tmptree_link("proc/mounts", "mounts"); /* ELOOP, for root too */
        f = open_facts(NULL);
        has_status(f, "mount.count", FACT_UNREADABLE, "ELOOP");
        has_status(f, "mem.shm.size", FACT_UNREADABLE, "ELOOP");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(mounts_fallback_and_unreadable, .description = "mounts fallback and unreadable", .root = "tmptree");

/* A tree without /proc/swaps, /proc/modules, the THP directory or /proc/sys: the second source where
 * there is one (meminfo), else a reason that names what the tree lacks (13.1, 13.6). */
START_TEST(partial_tree_second_sources)
{
        tmptree_new("system");
        puts_("proc/meminfo", "MemTotal:       3742148 kB\nSwapTotal:       8388604 kB\nSwapFree:        8388604 kB\n"
                              "AnonHugePages:     26624 kB\nHugePages_Total:    4096\nHugePages_Free:     4096\n");
        puts_("proc/sys/vm/swappiness", "60\n");
        struct facts *f = open_facts(NULL);
        eq(f, "swap.active", "true");
        ck_assert_str_eq(get(f, "swap.active")->source, "/proc/meminfo");
        has_status(f, "swap.active.count", FACT_ABSENT, "no /proc/swaps in this tree (/proc/meminfo SwapTotal: 8388604 kB)");
        has_status(f, "module.loaded", FACT_ABSENT, "no /proc/modules in this tree");
        has_status(f, "module.nvidia.loaded", FACT_ABSENT, "no /proc/modules in this tree");
        has_status(f, "thp.enabled", FACT_ABSENT, "AnonHugePages");
        eq(f, "sysctl.vm.nr_hugepages", "4096");
        ck_assert_str_eq(get(f, "sysctl.vm.nr_hugepages")->source, "/proc/meminfo");
        close_facts(f);
        tmptree_drop();

        /* no swap by meminfo, and no /proc/sys at all */
        tmptree_new("system");
        puts_("proc/meminfo", "MemTotal:       3742148 kB\nSwapTotal:             0 kB\n");
        f = open_facts(NULL);
        eq(f, "swap.active", "false");
        has_status(f, "sysctl.vm.swappiness", FACT_ABSENT, "no /proc/sys in this tree");
        has_status(f, "thp.enabled", FACT_ABSENT, "no /sys/kernel/mm/transparent_hugepage in this tree");
        close_facts(f);
        tmptree_drop();

        /* with /proc/swaps, swap.active follows it */
        tmptree_new("system");
        puts_("proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
        puts_("proc/meminfo", "SwapTotal:       8388604 kB\n");
        f = open_facts(NULL);
        eq(f, "swap.active", "false");
        eq(f, "swap.active.count", "0");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(partial_tree_second_sources, .description = "partial tree second sources", .root = "tmptree");

/* aarch64: cpu.model from the implementer/part fields, as lscpu names them (13.11). */
START_TEST(arm_cpu_model)
{
        tmptree_new("system");
        /* a GB10-style desktop: 10 Cortex-X925 + 10 Cortex-A725, old "Processor" line too */
        struct sbuf b = {0};
        sbuf_add(&b, "Processor\t: AArch64 Processor rev 1 (aarch64)\n");
        for (int i = 0; i < 4; i++)
                sbuf_addf(&b, "processor\t: %d\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
                              "CPU variant\t: 0x0\nCPU part\t: %s\nCPU revision\t: 1\n\n",
                          i, i < 2 ? "0xd85" : "0xd87");
        puts_("proc/cpuinfo", b.s);
        free(sbuf_steal(&b));
        struct facts *f = open_facts(NULL);
        eq(f, "cpu.model", "ARM Cortex-X925 + ARM Cortex-A725");
        close_facts(f);
        /* Grace (Neoverse-V2), and a part not in the table */
        puts_("proc/cpuinfo", "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n\n"
                              "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n");
        f = open_facts(NULL);
        eq(f, "cpu.model", "ARM Neoverse-V2");
        close_facts(f);
        puts_("proc/cpuinfo", "processor\t: 0\nCPU implementer\t: 0x4e\nCPU part\t: 0x0ff\n");
        f = open_facts(NULL);
        eq(f, "cpu.model", "NVIDIA part 0x0ff");
        close_facts(f);
        /* no MIDR fields: the device-tree model */
        puts_("proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 50.00\n");
        tmptree_write("proc/device-tree/model", "NVIDIA Jetson AGX Orin Developer Kit", 37);
        f = open_facts(NULL);
        eq(f, "cpu.model", "NVIDIA Jetson AGX Orin Developer Kit");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(arm_cpu_model, .description = "arm cpu model", .root = "tmptree");

START_TEST(md_alignment)
{
        tmptree_new("system");
        /* 4 x 512 KiB raid0, ext4 made with the folklore stride=16,stripe_width=64 */
        md_sysfs("md0", "raid0\n", "524288\n", "4\n", "sda sdb sdc sdd");
        ext4_image("dev/md0", 2, 16, 64);
        /* 3-disk raid5, XFS with su=512k,sw=2 (sunit/swidth in 4 KiB blocks) */
        md_sysfs("md1", "raid5\n", "524288\n", "3\n", "nvme0n1 nvme1n1 nvme2n1");
        xfs_image("dev/md1", 4096, 128, 256);
        tmptree_link("dev/md/fast", "../md1");
        /* garbage */
        md_sysfs("md2", "raid0\n", "big\n", "2\n", "sde sdf");
        ext4_image("dev/md2", 2, 128, 256);
        md_sysfs("md3", "raid0\n", "65536\n", "2\n", "sdg sdh");
        tmptree_write("dev/md3", "\x53\xef", 2);
        md_sysfs("md4", "raid6\n", "65536\n", "6\n", "sdi sdj sdk sdl sdm sdn");
        ext4_image("dev/md4", 9, 16, 64);
        md_sysfs("md5", "raid1\n", "0\n", "2\n", "sdo sdp");
        tmptree_write("dev/md5", (char[4096]){0}, 4096);
        md_sysfs("md6", "raid10\n", "524288\n", "4\n", "sdq sdr sds sdt");
        /* reshapes print "NEW (OLD)" */
        md_sysfs("md7", "raid5\n", "1048576 (524288)\n", "5 (4)\n", "sdu sdv sdw sdx sdy");
        md_sysfs("md8", "raid5\n", "524288\n", "5 (4\n", "sdu sdv sdw sdx sdy");
        tmptree_write("dev/md6", (char[4096]){0}, 4096);
        puts_("proc/mounts", "sysfs /sys sysfs rw,nosuid 0 0\n"
                             "/dev/md0 /data ext4 rw,relatime,stripe=64 0 0\n"
                             "/dev/md/fast /scratch\\040space xfs rw,noatime,nobarrier 0 0\n"
                             "/dev/md2 /old ext4 rw,noatime,barrier=0 0 0\n"
                             "/dev/md6 /m6 ext4 rw 0 0\n"
                             "/dev/md0 /data/bind ext4 rw,noatime 0 0\n");

        struct facts *f = open_facts(NULL);
        eq(f, "md.count", "9");
        eq(f, "md.md0.level", "raid0");
        eq(f, "md.md0.chunk_size", "524288");
        eq(f, "md.md0.raid_disks", "4");
        eq(f, "md.md0.data_disks", "4");
        eq(f, "md.md0.members", "sda sdb sdc sdd");
        eq(f, "md.md0.state", "clean");
        eq(f, "md.md0.fs.type", "ext4");
        eq(f, "md.md0.fs.block_size", "4096");
        eq(f, "md.md0.fs.stride", "16");
        eq(f, "md.md0.fs.stripe_width", "64");
        eq(f, "md.md0.fs.expected_stride", "128");
        eq(f, "md.md0.fs.expected_stripe_width", "512");
        eq(f, "md.md0.fs.aligned", "false");
        eq(f, "md.md0.mount.point", "/data");
        eq(f, "md.md0.mount.noatime", "false"); /* relatime is not noatime */
        eq(f, "md.md0.mount.nobarrier", "false");
        eq(f, "md.md0.mount.stripe", "64");

        eq(f, "md.md1.data_disks", "2");
        eq(f, "md.md1.fs.type", "xfs");
        eq(f, "md.md1.fs.stride", "128");
        eq(f, "md.md1.fs.stripe_width", "256");
        eq(f, "md.md1.fs.aligned", "true");
        eq(f, "md.md1.mount.point", "/scratch space");
        eq(f, "md.md1.mount.noatime", "true");
        eq(f, "md.md1.mount.nobarrier", "true");

        has_status(f, "md.md2.chunk_size", FACT_UNREADABLE, "big");
        has_status(f, "md.md2.fs.expected_stride", FACT_UNREADABLE, NULL);
        eq(f, "md.md2.fs.stride", "128");
        eq(f, "md.md2.mount.nobarrier", "true");

        has_status(f, "md.md3.fs.type", FACT_UNREADABLE, "truncated");
        has_status(f, "md.md3.mount.point", FACT_ABSENT, "not mounted");
        has_status(f, "md.md4.fs.stride", FACT_UNREADABLE, "s_log_block_size");
        eq(f, "md.md4.data_disks", "4");
        /* raid1: nothing on it, no striping */
        eq(f, "md.md5.data_disks", "1");
        has_status(f, "md.md5.fs.type", FACT_ABSENT, "no ext2/3/4 or XFS superblock");
        /* mounted as ext4 but no superblock there: unreadable, not absent */
        eq(f, "md.md6.data_disks", "2");
        has_status(f, "md.md6.fs.type", FACT_UNREADABLE, "no ext2/3/4 or XFS superblock");

        eq(f, "md.md7.raid_disks", "5");
        eq(f, "md.md7.reshape_from.raid_disks", "4");
        eq(f, "md.md7.chunk_size", "1048576");
        eq(f, "md.md7.reshape_from.chunk_size", "524288");
        eq(f, "md.md7.data_disks", "4");
        has_status(f, "md.md8.raid_disks", FACT_UNREADABLE, "EINVAL");
        has_status(f, "md.md8.data_disks", FACT_UNREADABLE, NULL);

        eq(f, "mount.count", "6");
        eq(f, "mount.1.source", "/dev/md0");
        eq(f, "mount.2.target", "/scratch space");
        eq(f, "mount.2.fstype", "xfs");
        eq(f, "mount.0.options", "rw,nosuid");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(md_alignment, .description = "md alignment", .root = "tmptree");

START_TEST(md_from_mdstat_only)
{
        tmptree_new("system");
        puts_("proc/mdstat", "Personalities : [raid0] [raid1] [raid6]\n"
                             "md127 : active raid0 nvme1n1[1] nvme0n1[0]\n"
                             "      7501209600 blocks super 1.2 512k chunks\n\n"
                             "md1 : active raid6 sdb1[0] sde1[3] sdd1[2] sdc1[1](F)\n"
                             "      7813735424 blocks super 1.2 level 6, 512k chunk, algorithm 2 [4/3] [U_UU]\n"
                             "      [=>...................]  recovery =  8.5% (16775552/195310144) finish=17.0min\n\n"
                             "md9 : active raid0 sda[0] sdb[x\n"
                             "      100 blocks 64k chunks\n\n"
                             "unused devices: <none>\n");
        ext4_image("dev/md127", 2, 128, 256);
        puts_("proc/mounts", "/dev/md127 /data ext4 rw,noatime 0 0\n");
        struct facts *f = open_facts(NULL);
        eq(f, "md.count", "3");
        eq(f, "md.md127.level", "raid0");
        eq(f, "md.md127.chunk_size", "524288");
        eq(f, "md.md127.raid_disks", "2");
        eq(f, "md.md127.members", "nvme1n1 nvme0n1");
        eq(f, "md.md127.fs.aligned", "true");
        eq(f, "md.md127.mount.noatime", "true");
        eq(f, "md.md1.raid_disks", "4");
        eq(f, "md.md1.degraded", "1");
        eq(f, "md.md1.data_disks", "2");
        eq(f, "md.md1.sync_action", "recover");
        has_status(f, "md.md9.level", FACT_UNREADABLE, "malformed member");
        has_status(f, "md.md9.data_disks", FACT_ABSENT, NULL);
        close_facts(f);

        puts_("proc/mdstat", "garbage\n");
        f = open_facts(NULL);
        has_status(f, "md.count", FACT_UNREADABLE, "EBADMSG");
        has_status(f, "md.mdstat", FACT_UNREADABLE, "Personalities");
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(md_from_mdstat_only, .description = "md from mdstat only", .root = "tmptree");

/* A device node in a foreign tree is this machine's disk: never opened. */
START_TEST(md_device_node_in_foreign_root)
{
        tmptree_new("system");
        md_sysfs("md0", "raid0\n", "524288\n", "2\n", "sda sdb");
        tmptree_mkdir("dev");
        char *p = xasprintf("%s/dev/md0", tmptree_path());
        /* main() ran this case only where mknod works (else the test system-live is skipped). */
        ck_assert_msg(mknod(p, S_IFBLK | 0600, makedev(9, 0)) == 0, "mknod: %s", strerror(errno));
        free(p);
        struct facts *f = open_facts(NULL);
        has_status(f, "md.md0.fs.type", FACT_ABSENT, "foreign root");
        has_status(f, "md.md0.fs.aligned", FACT_ABSENT, NULL);
        close_facts(f);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(md_device_node_in_foreign_root,
            .description = "md device node in foreign root", .root = "this machine", .live = true);

START_TEST(superblocks)
{
        uint8_t buf[2048] = {0};
        struct fs_superblock sb;
        const char *why;
        ck_assert_int_eq(superblock_parse(buf, sizeof(buf), &sb, &why), -ENOENT);
        ck_assert_int_eq(superblock_parse(buf, 100, &sb, &why), -ENODATA);
        le16(buf + 1024 + 0x38, 0xEF53);
        ck_assert_int_eq(superblock_parse(buf, 1100, &sb, &why), -ENODATA);
        ck_assert_int_eq(superblock_parse(buf, sizeof(buf), &sb, &why), 0);
        ck_assert_str_eq(sb.type, "ext2");
        ck_assert_uint_eq(sb.block_size, 1024);
        le32(buf + 1024 + 0x18, 7);
        ck_assert_int_eq(superblock_parse(buf, sizeof(buf), &sb, &why), -EBADMSG);
        memset(buf, 0, sizeof(buf));
        memcpy(buf, "XFSB", 4);
        be32(buf + 4, 3000);
        ck_assert_int_eq(superblock_parse(buf, sizeof(buf), &sb, &why), -EBADMSG);
        ck_assert_int_eq(superblock_parse(buf, 100, &sb, &why), -ENODATA);
        be32(buf + 4, 65536);
        be32(buf + 0xB8, 16);
        ck_assert_int_eq(superblock_parse(buf, sizeof(buf), &sb, &why), 0);
        ck_assert_str_eq(sb.type, "xfs");
        ck_assert_uint_eq(sb.stride, 16);
}
END_TEST
DEFINE_TEST(superblocks, .description = "superblocks", .root = "none");

/* --- the corpus ------------------------------------------------------------------------------------ */

static char *corpus_file(const char *rel)
{
        char *p = xasprintf("%s/../shared/corpus/%s", LLMTUNE_SRCDIR, rel);
        if (access(p, R_OK) == 0)
                return p;
        free(p);
        return NULL;
}

static char *slurp(const char *path)
{
        FILE *fp = fopen(path, "re");
        ck_assert_ptr_nonnull(fp);
        static char buf[65536];
        size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        buf[n] = '\0';
        return xstrdup(buf);
}

static const struct mdstat_array *find_md(const struct mdstat_array *a, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (streq(a[i].name, name))
                        return &a[i];
        ck_abort_msg("no array %s", name);
        return NULL;
}

START_TEST(corpus_mdstat)
{
        char *path = corpus_file("node_exporter-collector-fixtures/proc/mdstat");
        if (!path) {
                ck_assert_msg(!getenv("LLMTUNE_REQUIRE_CORPUS"), "corpus missing and LLMTUNE_REQUIRE_CORPUS set");
                fprintf(stderr, "corpus_mdstat: ../shared/corpus not found, skipped\n");
                return;
        }
        char *text = slurp(path);
        struct mdstat_array *a;
        size_t n;
        ck_assert_int_eq(mdstat_parse(text, &a, &n), 0);
        ck_assert_uint_eq(n, 17);
        for (size_t i = 0; i < n; i++)
                ck_assert_msg(a[i].bad == NULL, "%s: %s", a[i].name, a[i].bad);
        const struct mdstat_array *m = find_md(a, n, "md3");
        ck_assert_str_eq(m->level, "raid6");
        ck_assert_uint_eq(m->chunk, 65536);
        ck_assert_uint_eq(m->raid_disks, 8);
        ck_assert_uint_eq(m->spares, 2);
        m = find_md(a, n, "md4");
        ck_assert_str_eq(m->state, "inactive");
        ck_assert_str_eq(m->level, "raid1");
        ck_assert_uint_eq(m->faulty, 1);
        m = find_md(a, n, "md6");
        ck_assert_str_eq(m->sync, "recovery");
        ck_assert_int_eq(m->working, 1);
        ck_assert_str_eq(find_md(a, n, "md8")->sync, "resync");
        ck_assert_str_eq(find_md(a, n, "md201")->sync, "check");
        ck_assert_str_eq(find_md(a, n, "md9")->sync, "resync=DELAYED");
        m = find_md(a, n, "md10");
        ck_assert_str_eq(m->level, "raid0");
        ck_assert_uint_eq(m->chunk, 65536);
        ck_assert_uint_eq(m->raid_disks, 2);
        m = find_md(a, n, "md11");
        ck_assert_str_eq(m->state, "read-auto");
        ck_assert_str_eq(m->sync, "resync=PENDING");
        m = find_md(a, n, "md126");
        ck_assert_str_eq(m->metadata, "external:/md127/0");
        ck_assert_uint_eq(m->chunk, 131072);
        m = find_md(a, n, "md219");
        ck_assert_str_eq(m->state, "inactive");
        ck_assert_ptr_null(m->level);
        ck_assert_str_eq(m->metadata, "external:imsm");
        ck_assert_uint_eq(m->spares, 3);
        m = find_md(a, n, "md120");
        ck_assert_str_eq(m->level, "linear");
        ck_assert_uint_eq(m->chunk, 0);
        m = find_md(a, n, "md101");
        ck_assert_str_eq(m->state, "readonly");
        ck_assert_uint_eq(m->raid_disks, 3);
        ck_assert_uint_eq(m->chunk, 524288);
        mdstat_free(a, n);
        free(text);
        free(path);
}
END_TEST
DEFINE_TEST(corpus_mdstat, .description = "corpus mdstat", .root = "corpus");

START_TEST(corpus_swaps)
{
        char *path = corpus_file("node_exporter-collector-fixtures/proc/swaps");
        if (!path) {
                ck_assert_msg(!getenv("LLMTUNE_REQUIRE_CORPUS"), "corpus missing and LLMTUNE_REQUIRE_CORPUS set");
                return;
        }
        tmptree_new("system");
        char *text = slurp(path);
        puts_("proc/swaps", text);
        free(text);
        free(path);
        path = corpus_file("node_exporter-collector-fixtures/proc/meminfo");
        text = slurp(path);
        puts_("proc/meminfo", text);
        struct facts *f = open_facts(NULL);
        eq(f, "swap.active.count", "1");
        eq(f, "swap.active.0.path", "/dev/zram0");
        eq(f, "swap.active.0.size", "8589930496");
        eq(f, "swap.active.0.priority", "100");
        eq(f, "swap.zram.active", "1");
        eq(f, "swap.total", "4294963200"); /* SwapTotal 4194300 kB: the composite disagrees */
        close_facts(f);
        free(text);
        free(path);
        tmptree_drop();
}
END_TEST
DEFINE_TEST(corpus_swaps, .description = "corpus swaps", .root = "corpus");

/* Whether this process may make a block device node (root, outside a restricted container). */
static char *live_missing(void)
{
        char dir[] = "/tmp/llmtune-mknod-XXXXXX";
        if (!mkdtemp(dir))
                return xasprintf("mkdtemp: %s", strerror(errno));
        char *node = xasprintf("%s/md0", dir);
        int r = mknod(node, S_IFBLK | 0600, makedev(9, 0));
        int e = errno;
        unlink(node);
        rmdir(dir);
        free(node);
        return r < 0 ? xasprintf("mknod of a block device node: %s", strerror(e)) : NULL;
}

UNIT_MAIN(.name = "system", .live_missing = live_missing)
