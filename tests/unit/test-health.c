/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Health probes (limits.*, edac.*, iommu.*, service.*, gpudirect.*) against small machine roots
 * written here: precedence of configuration files, garbage, and missing trees.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "facts/facts.h"
#include "base/root.h"
#include "tmptree.h"
#include "factcheck.h"
#include "unit-main.h"

static void setup(void) { tmptree_new("health"); }

static void put(const char *rel, const char *text) { tmptree_write(rel, text, strlen(text)); }


START_TEST(memlock_precedence)
{
        put("etc/security/limits.conf", "# <domain> <type> <item> <value>\n"
                                        "*    soft memlock 1024\n"
                                        "@hpc soft memlock 1\n");
        put("etc/security/limits.d/10-a.conf", "*\t-\tmemlock\tunlimited\n");
        put("etc/security/limits.d/20-b.conf", "*  hard memlock 4096 # after 10-a: wins\n"
                                               "*  soft memlock lots\n"           /* ignored, like pam_limits */
                                               "*  soft memlock 1 2\n");          /* five fields: not a limit line */
        put("etc/security/limits.d/30-c.txt", "* soft memlock 7\n");              /* not *.conf */
        put("etc/systemd/system.conf", "[Manager]\n#DefaultLimitMEMLOCK=\nDefaultLimitMEMLOCK=64K\n"
                                       "[Service]\nDefaultLimitMEMLOCK=1\n");
        put("usr/lib/systemd/system.conf.d/50-x.conf", "[Manager]\nDefaultLimitMEMLOCK=1G:2G\n");
        put("usr/lib/systemd/system.conf.d/60-y.conf", "[Manager]\nDefaultLimitMEMLOCK = 16G:32G\n");
        put("etc/systemd/system.conf.d/50-x.conf", "[Manager]\nDefaultLimitMEMLOCK=infinity\n"); /* hides usr/lib's */
        struct facts *f = open_facts(NULL);
        eq(f, "limits.memlock.login.soft", "unlimited");
        eq(f, "limits.memlock.login.hard", "4194304");
        ck_assert_str_eq(get_as(f, "limits.memlock.login.hard", FACT_OK)->source, "/etc/security/limits.d/20-b.conf:1");
        /* 50-x (etc: infinity), then 60-y: 16G soft, 32G hard */
        eq(f, "limits.memlock.service.soft", "17179869184");
        eq(f, "limits.memlock.service.hard", "34359738368");
        close_facts(f);
}
END_TEST
DEFINE_TEST(memlock_precedence, .description = "memlock precedence", .root = "tmptree");

START_TEST(memlock_defaults)
{
        /* systemd without a setting: 8M; logins without a "*" line inherit it */
        put("etc/systemd/system.conf", "[Manager]\n#DefaultLimitMEMLOCK=\n");
        put("etc/security/limits.conf", "# nothing\n");
        struct facts *f = open_facts(NULL);
        eq(f, "limits.memlock.service.soft", "8388608");
        eq(f, "limits.memlock.login.soft", "8388608");
        ck_assert_ptr_nonnull(strstr(get_as(f, "limits.memlock.login.hard", FACT_OK)->source, "inherited"));
        close_facts(f);
}
END_TEST
DEFINE_TEST(memlock_defaults, .description = "memlock defaults", .root = "tmptree");

START_TEST(memlock_no_systemd)
{
        put("etc/security/limits.conf", "* hard memlock 65536\n");
        struct facts *f = open_facts(NULL);
        /* no systemd and no kernel release: the kernel's default, at most 8 MiB (issue 12 item 11) */
        eq(f, "limits.memlock.service.soft", "8388608");
        eq(f, "limits.memlock.login.soft", "8388608");
        eq(f, "limits.memlock.login.hard", "67108864");
        eq(f, "limits.memlock.root.hard", "8388608"); /* the "*" line does not apply to root */
        close_facts(f);
}
END_TEST
DEFINE_TEST(memlock_no_systemd, .description = "memlock no systemd", .root = "tmptree");

START_TEST(edac_counters)
{
        put("sys/devices/system/edac/mc/mc0/ce_count", "3\n");
        put("sys/devices/system/edac/mc/mc0/ue_count", "0\n");
        put("sys/devices/system/edac/mc/mc1/ce_count", "three\n");
        put("sys/devices/system/edac/mc/mc1/ue_count", "2\n");
        tmptree_mkdir("sys/devices/system/edac/mc/power");
        struct facts *f = open_facts(NULL);
        eq(f, "edac.count", "2");
        eq(f, "edac.mc0.ce_count", "3");
        get_as(f, "edac.mc1.ce_count", FACT_UNREADABLE);
        get_as(f, "edac.ce_count", FACT_UNREADABLE);
        eq(f, "edac.ue_count", "2");
        close_facts(f);
}
END_TEST
DEFINE_TEST(edac_counters, .description = "edac counters", .root = "tmptree");

START_TEST(edac_absent)
{
        tmptree_mkdir("sys/devices/system");
        struct facts *f = open_facts(NULL);
        get_as(f, "edac.ue_count", FACT_ABSENT);
        close_facts(f);
}
END_TEST
DEFINE_TEST(edac_absent, .description = "edac absent", .root = "tmptree");

START_TEST(iommu_modes)
{
        tmptree_mkdir("sys/class/iommu/dmar0");
        put("sys/kernel/iommu_groups/0/type", "identity\n");
        put("sys/kernel/iommu_groups/1/type", "unmanaged\n");
        put("proc/cmdline", "root=/dev/sda1 intel_iommu=on\n");
        struct facts *f = open_facts(NULL);
        eq(f, "iommu.mode", "passthrough");
        eq(f, "iommu.units", "1");
        close_facts(f);

        put("sys/kernel/iommu_groups/2/type", "DMA-FQ\n");
        f = open_facts(NULL);
        eq(f, "iommu.mode", "translated");
        close_facts(f);
}
END_TEST
DEFINE_TEST(iommu_modes, .description = "iommu modes", .root = "tmptree");

START_TEST(iommu_off_and_cmdline)
{
        tmptree_mkdir("sys/class/iommu");
        struct facts *f = open_facts(NULL);
        eq(f, "iommu.mode", "off");
        close_facts(f);

        /* no sysfs class at all (trimmed tree): only an explicit command line decides */
        char *cls = xasprintf("%s/sys/class/iommu", tmptree_path());
        ck_assert_int_eq(rmdir(cls), 0);
        free(cls);
        put("proc/cmdline", "quiet amd_iommu=off\n");
        f = open_facts(NULL);
        eq(f, "iommu.mode", "off");
        get_as(f, "iommu.units", FACT_ABSENT);
        close_facts(f);

        /* a foreign tree without /sys/class/iommu: the mode comes from its command line (13.5) */
        static const char *const cases[][2] = {
                {"quiet iommu=pt\n", "passthrough"},
                {"quiet iommu.passthrough=1\n", "passthrough"},
                {"quiet iommu.passthrough=0\n", "translated"},
                {"quiet intel_iommu=on\n", "translated"},
                {"quiet intel_iommu=on iommu=pt\n", "passthrough"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                put("proc/cmdline", cases[i][0]);
                f = open_facts(NULL);
                eq(f, "iommu.mode", cases[i][1]);
                ck_assert_str_eq(facts_get(f, "iommu.mode")->source, "/proc/cmdline");
                close_facts(f);
        }
        put("proc/cmdline", "quiet\n");
        f = open_facts(NULL);
        get_as(f, "iommu.mode", FACT_ABSENT);
        close_facts(f);
}
END_TEST
DEFINE_TEST(iommu_off_and_cmdline, .description = "iommu off and cmdline", .root = "tmptree");

START_TEST(services)
{
        put("usr/lib/systemd/system/nvidia-persistenced.service", "[Unit]\n");
        put("usr/lib/systemd/system/nvidia-fabricmanager.service", "[Unit]\n");
        tmptree_link("etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service",
                     "/usr/lib/systemd/system/nvidia-persistenced.service");
        tmptree_link("etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service",
                     "/usr/lib/systemd/system/nvidia-fabricmanager.service");
        tmptree_link("etc/systemd/system/nvidia-fabricmanager.service", "/dev/null"); /* masked */
        struct facts *f = open_facts(NULL);
        eq(f, "service.nvidia-persistenced.enabled", "true");
        eq(f, "service.nvidia-persistenced.installed", "true");
        eq(f, "service.nvidia-fabricmanager.enabled", "false");
        eq(f, "service.sshd.enabled", "false");
        eq(f, "service.sshd.installed", "false");
        eq(f, "service.enabled", "nvidia-persistenced.service");
        close_facts(f);
}
END_TEST
DEFINE_TEST(services, .description = "services", .root = "tmptree");

START_TEST(services_absent_and_peermem)
{
        put("proc/modules", "nv_peer_mem 16384 0 - Live 0x0000000000000000 (OE)\n"
                            "nvidia 56487936 1 nv_peer_mem, Live 0x0000000000000000 (POE)\n");
        struct facts *f = open_facts(NULL);
        get_as(f, "service.nvidia-persistenced.enabled", FACT_ABSENT);
        eq(f, "gpudirect.peermem", "nv_peer_mem");
        close_facts(f);

        put("proc/modules", "nvidia 56487936 1 - Live 0x0000000000000000 (POE)\n");
        f = open_facts(NULL);
        eq(f, "gpudirect.peermem", "none");
        close_facts(f);
}
END_TEST
DEFINE_TEST(services_absent_and_peermem, .description = "services absent and peermem", .root = "tmptree");

UNIT_MAIN(.name = "health", .setup = setup, .teardown = tmptree_drop)
