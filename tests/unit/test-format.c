/* SPDX-License-Identifier: GPL-2.0-or-later */
/* src/base/file-format.c: what each written format and field takes, and what it refuses. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/file-format.h"
#include "unit-main.h"

struct want {
        enum file_format fmt;
        enum ff_field field;
        const char *value;
};

/* Values each format must take: the ones llmtune's shipped rules and the fixtures write. */
static const struct want ok[] = {
        {FF_NCCL_CONF, FF_KEY, "NCCL_IB_HCA"},
        {FF_NCCL_CONF, FF_VALUE, "=mlx5_0,mlx5_1"},
        {FF_NCCL_CONF, FF_VALUE, "WARN # quiet"},
        {FF_NCCL_CONF, FF_ITEM, "mlx5_0"},
        {FF_NCCL_CONF, FF_ITEM, "ib0.8001"},
        {FF_NCCL_CONF, FF_ITEM, "enp230s0f1np1"},
        {FF_SYSCTL_D, FF_KEY, "vm.swappiness"},
        {FF_SYSCTL_D, FF_KEY, "net/ipv4/conf/*/rp_filter"},
        {FF_SYSCTL_D, FF_VALUE, "4096 87380 6291456"},
        {FF_SYSCTL_D, FF_FILENAME, "90-llmtune-vm-swappiness.conf"},
        {FF_TMPFILES_D, FF_PATH, "/sys/devices/system/cpu/cpufreq/policy*/scaling_governor"},
        {FF_TMPFILES_D, FF_VALUE, "madvise"},
        {FF_MODPROBE_D, FF_NAME, "nouveau"},
        {FF_MODPROBE_D, FF_VALUE, "modeset=0"},
        {FF_MODULES_LOAD_D, FF_NAME, "nvidia_peermem"},
        {FF_FSTAB, FF_OPTION, "noatime"},
        {FF_FSTAB, FF_FIELD, "/srv/data\\040set"},
        {FF_LIMITS_D, FF_LINE, "* soft memlock unlimited"},
        {FF_LIMITS_D, FF_LINE, "@hpc - nofile 65536"},
        {FF_SYSTEMD, FF_LINE, "[Manager]"},
        {FF_SYSTEMD, FF_LINE, "DefaultLimitMEMLOCK=infinity"},
        {FF_SYSTEMD, FF_NAME, "nvidia-persistenced.service"},
        {FF_SYSTEMD, FF_NAME, "getty@tty1.service"},
        {FF_SYSCTL_D, FF_LINE, "-kernel.numa_balancing = 0"},
        {FF_GPU_AFFINITY, FF_ADDRESS, "0000:07:00.0"},
        {FF_GPU_AFFINITY, FF_ADDRESS, "0001:c1:1f.7"},
        {FF_GPU_AFFINITY, FF_FIELD, "0-15,32-47"},
        {FF_CMDLINE, FF_ITEM, "iommu=pt"},
        {FF_CMDLINE, FF_ITEM, "transparent_hugepage=madvise"},
        {FF_CMDLINE, FF_ITEM, "bootlab.marker=1"},
        {FF_CMDLINE, FF_ITEM, "isolcpus=managed_irq,domain,2-7"},
        {FF_CMDLINE, FF_ITEM, "quiet"},
        {FF_NCCL_CONF, FF_COMMENT, "NCCL_DEBUG: profile a100-8x (it says = here)"},
};

/* And what each refuses: a newline first (it would start a line of its own), then each format's
 * own syntax. */
static const struct want bad[] = {
        {FF_NCCL_CONF, FF_ITEM, "mlx5_0\nNCCL_NET_PLUGIN=evil"},
        {FF_NCCL_CONF, FF_VALUE, "=mlx5_0\nNCCL_NET_PLUGIN=evil"},
        {FF_NCCL_CONF, FF_VALUE, "=mlx5_0\r"},
        {FF_NCCL_CONF, FF_ITEM, "mlx5_0,mlx5_9"},
        {FF_NCCL_CONF, FF_ITEM, "^mlx5"},
        {FF_NCCL_CONF, FF_ITEM, "mlx5_0:1"},
        {FF_NCCL_CONF, FF_ITEM, "=eth0"},
        {FF_NCCL_CONF, FF_ITEM, ""},
        {FF_NCCL_CONF, FF_KEY, "NCCL DEBUG"},
        {FF_NCCL_CONF, FF_KEY, "export NCCL_DEBUG"},
        {FF_NCCL_CONF, FF_VALUE, " WARN"},
        {FF_NCCL_CONF, FF_COMMENT, "a note\nNCCL_NET_PLUGIN=evil"},
        {FF_SYSCTL_D, FF_KEY, "-kernel.core_pattern"},
        {FF_SYSCTL_D, FF_KEY, "kernel.core_pattern = |/x"},
        {FF_SYSCTL_D, FF_VALUE, "1\nkernel.core_pattern=|/evil"},
        {FF_SYSCTL_D, FF_VALUE, "1 "},
        {FF_SYSCTL_D, FF_FILENAME, "x\nkernel.core_pattern=|.conf"},
        {FF_SYSCTL_D, FF_FILENAME, "50-vendor.conf.dpkg-old"},
        {FF_SYSCTL_D, FF_FILENAME, "../50-vendor.conf"},
        {FF_TMPFILES_D, FF_PATH, "/sys/kernel/%m"},
        {FF_TMPFILES_D, FF_PATH, "/sys/a b"},
        {FF_TMPFILES_D, FF_PATH, "sys/kernel/mm"},
        {FF_TMPFILES_D, FF_VALUE, "always\\n"},
        {FF_TMPFILES_D, FF_VALUE, "100%"},
        {FF_MODPROBE_D, FF_NAME, "nouveau\ninstall evil /bin/sh"},
        {FF_MODPROBE_D, FF_NAME, "-nouveau"},
        {FF_MODPROBE_D, FF_NAME, "nou veau"},
        {FF_MODPROBE_D, FF_VALUE, "modeset=0 \\"},
        {FF_MODULES_LOAD_D, FF_NAME, "nvidia peermem"},
        {FF_FSTAB, FF_OPTION, "noatime,suid"},
        {FF_FSTAB, FF_OPTION, "noatime suid"},
        {FF_FSTAB, FF_OPTION, "#x"},
        {FF_FSTAB, FF_FIELD, "/srv/a b"},
        {FF_LIMITS_D, FF_LINE, "* soft memlock"},
        {FF_LIMITS_D, FF_LINE, "* maybe memlock unlimited"},
        {FF_LIMITS_D, FF_LINE, "* soft memlock unlimited extra"},
        {FF_SYSTEMD, FF_LINE, "DefaultLimitMEMLOCK=infinity \\"},
        {FF_SYSTEMD, FF_LINE, "ExecStart=/bin/%n"},
        {FF_SYSTEMD, FF_LINE, "[Manager"},
        {FF_SYSTEMD, FF_LINE, "not a setting"},
        {FF_SYSTEMD, FF_NAME, "evil unit.service"},
        {FF_SYSTEMD, FF_NAME, "nounittype"},
        {FF_GPU_AFFINITY, FF_ADDRESS, "\n0000:07:00.0"},
        {FF_GPU_AFFINITY, FF_ADDRESS, " 0000:07:00.0"},
        {FF_GPU_AFFINITY, FF_ADDRESS, "0000:07:00.8"},
        {FF_GPU_AFFINITY, FF_ADDRESS, "0000:07:00.0 1"},
        {FF_GPU_AFFINITY, FF_ADDRESS, "0000:0G:00.0"},
        {FF_GPU_AFFINITY, FF_ADDRESS, "07:00.0"},
        {FF_GPU_AFFINITY, FF_FIELD, "0-3 4"},
        {FF_CMDLINE, FF_ITEM, "iommu=pt\ninit=/bin/sh"},
        {FF_CMDLINE, FF_ITEM, "iommu=pt quiet"},
        {FF_CMDLINE, FF_ITEM, "init=/bin/sh"},
        {FF_CMDLINE, FF_ITEM, "a=$(reboot)"},
        {FF_CMDLINE, FF_ITEM, "a=\"b\""},
        {FF_CMDLINE, FF_ITEM, "-k"},
        {FF_CMDLINE, FF_ITEM, "=pt"},
        {FF_CMDLINE, FF_VALUE, "iommu=pt"},
        /* a field a format does not have */
        {FF_FSTAB, FF_KEY, "x"},
        {FF_NCCL_CONF, FF_PATH, "/x"},
};

START_TEST(formats_take_their_values)
{
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                const char *why = ff_check(ok[i].fmt, ok[i].field, ok[i].value);
                ck_assert_msg(!why, "%s field %d refuses '%s': %s", ff_name(ok[i].fmt), (int)ok[i].field, ok[i].value,
                              why);
        }
}
END_TEST
DEFINE_TEST(formats_take_their_values, .description = "each format takes the values the shipped rules write", .root = "none");

START_TEST(formats_refuse_their_syntax)
{
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(ff_check(bad[i].fmt, bad[i].field, bad[i].value) != NULL, "%s field %d takes '%s'",
                              ff_name(bad[i].fmt), (int)bad[i].field, bad[i].value);
}
END_TEST
DEFINE_TEST(formats_refuse_their_syntax, .description = "each format refuses a newline and its own syntax", .root = "none");

START_TEST(refusal_and_comment)
{
        char *msg = ff_refusal(FF_NCCL_CONF, "the InfiniBand device name", "mlx5_0\nX=1",
                               "/sys/class/infiniband/mlx5_0\nX=1", "it holds a control character");
        ck_assert_str_eq(msg, "the InfiniBand device name 'mlx5_0\\nX=1' (from /sys/class/infiniband/mlx5_0\\nX=1) "
                              "cannot be written to nccl.conf: it holds a control character");
        ck_assert_ptr_null(strchr(msg, '\n'));
        free(msg);
        char *c = ff_comment(FF_NCCL_CONF, "port mlx5_0\nNCCL_NET_PLUGIN=evil:1 (DOWN)\r");
        ck_assert_str_eq(c, "port mlx5_0?NCCL_NET_PLUGIN=evil:1 (DOWN)?");
        free(c);
        ck_assert_int_eq(ff_of_path("/etc/nccl.conf"), FF_NCCL_CONF);
        ck_assert_int_eq(ff_of_path("/home/alice/.nccl.conf"), FF_NCCL_CONF);
        ck_assert_int_eq(ff_of_path("/etc/security/limits.d/90-llmtune-memlock.conf"), FF_LIMITS_D);
        ck_assert_int_eq(ff_of_path("/etc/systemd/system.conf.d/90-llmtune-memlock.conf"), FF_SYSTEMD);
        ck_assert_int_eq(ff_of_path("/etc/sysctl.d/90-llmtune-x.conf"), FF_SYSCTL_D);
        ck_assert_int_eq(ff_of_path("/etc/udev/rules.d/90-llmtune.rules"), FF__COUNT);
}
END_TEST
DEFINE_TEST(refusal_and_comment, .description = "a refusal and a comment are one line", .root = "none");

UNIT_MAIN(.name = "format")
