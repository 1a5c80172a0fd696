/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "engine/remedy.h"

/* Where each change is persisted (sysctl.d(5), tmpfiles.d(5), modprobe.d(5), fstab(5)): sysctl.d,
 * tmpfiles.d, modprobe.d + initramfs, fstab lines commented behind a marker, generators masked;
 * never forced at runtime when unsafe. */
static const struct remedy_kind kinds[] = {
        {"sysfs", {"path", "value"}, {},
         "write ${value} to ${path} now, and at boot through tmpfiles.d (disabling a tmpfiles.d line that would win over "
         "it)",
         false},
        {"sysctl", {"key", "value"}, {"mode"},
         "set ${key} = ${value} now and in /etc/sysctl.d/, disabling the lines of files read after it that set it back",
         false},
        {"sysctl-default", {"key", "value", "min"}, {},
         "disable every sysctl.d/sysctl.conf line that sets ${key} below ${min} and restore the kernel default ${value}",
         false},
        {"swapoff", {}, {"min_free"},
         "swapoff every active swap area when the memory available afterwards stays at least the margin", false},
        {"fstab-swap", {}, {}, "comment out the swap lines of /etc/fstab behind a #llmtune-disabled# marker", false},
        {"zram-off", {}, {}, "mask the zram generator / zramswap service", false},
        {"modprobe-blacklist", {"module"}, {"options"},
         "blacklist ${module} in /etc/modprobe.d/ and regenerate the initramfs for all kernels", false},
        {"initramfs", {}, {}, "regenerate the initramfs for all kernels with the tool installed (update-initramfs -u -k all / dracut -f --regenerate-all / mkinitcpio -P)", false},
        {"reboot", {"reason"}, {}, "reboot required: ${reason}", true},
        {"tune2fs", {}, {}, "tune2fs -E stride=N,stripe_width=M on the array (values computed from the array)", false},
        {"xfs-align", {}, {},
         "stripe unit and width computed from the array: mount options only where the kernel accepts them (a full "
         "unmount, never a remount), otherwise backup and mkfs.xfs -d su=,sw=",
         false},
        {"fstab-stripe", {}, {},
         "remove the wrong stripe= from the array's /etc/fstab line (the line kept behind a #llmtune-disabled# marker): "
         "the superblock's stripe width applies from the next mount",
         false},
        {"mount-option", {"option"}, {}, "add ${option} to the array's /etc/fstab entry (takes effect at the next mount)", false},
        {"nccl-conf", {}, {}, "write /etc/nccl.conf from the profile's NCCL keys (NCCL's exact file format)", false},
        {"dropin", {"path", "content"}, {"then", "min"},
         "write the drop-in ${path}: ${content} (disabling a line of another file that would win over it at boot)",
         false},
        {"modules-load", {"module"}, {}, "load ${module} now and at every boot (/etc/modules-load.d/)", false},
        {"service-enable", {"unit"}, {}, "enable and start ${unit}", false},
        {"affinity-conf", {}, {}, "write /etc/llmtune/gpu-affinity.conf (GPU -> NUMA node -> CPUs) for launchers", false},
        {"boot-tuner", {"knob", "value"}, {},
         "the services enabled at boot that set ${knob} to another value than ${value} must be configured or "
         "disabled: apply names each, with its setting or the unit to disable (it changes none of them)",
         false},
        {"cmdline", {"param"}, {},
         "add ${param} to the kernel command line of the next boot with the system's own tool (update-grub and "
         "/etc/default/grub.d, grubby, kernelstub); reboot required",
         true},
        {"manual", {"step"}, {}, "manual step: ${step}", false},
};

/* Filled before main by the layer that plans remedies (remedy_kind_set_plan), one per kind. */
static const struct remedy_plan *plans[ARRAY_SIZE(kinds)];
static const char *strays[8];
static size_t n_strays;

const struct remedy_kind *remedy_kind_at(size_t i) { return i < ARRAY_SIZE(kinds) ? &kinds[i] : NULL; }

void remedy_kind_set_plan(const char *name, const struct remedy_plan *plan)
{
        const struct remedy_kind *k = remedy_kind_find(name);
        if (k && !plans[k - kinds])
                plans[k - kinds] = plan;
        else if (n_strays < ARRAY_SIZE(strays))
                strays[n_strays++] = name;
}

const struct remedy_plan *remedy_kind_plan(const char *name)
{
        const struct remedy_kind *k = name ? remedy_kind_find(name) : NULL;
        return k ? plans[k - kinds] : NULL;
}

const char *remedy_plan_stray(size_t i) { return i < n_strays ? strays[i] : NULL; }

const struct remedy_kind *remedy_kind_find(const char *name)
{
        for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
                if (streq(kinds[i].name, name))
                        return &kinds[i];
        return NULL;
}

bool remedy_kind_has_param(const struct remedy_kind *k, const char *param)
{
        for (size_t i = 0; i < ARRAY_SIZE(k->required) && k->required[i]; i++)
                if (streq(k->required[i], param))
                        return true;
        for (size_t i = 0; i < ARRAY_SIZE(k->optional) && k->optional[i]; i++)
                if (streq(k->optional[i], param))
                        return true;
        return false;
}

char *remedy_kind_names(void)
{
        _cleanup_strv_ struct strv l = {0};
        for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
                strv_add(&l, kinds[i].name);
        char *s = strv_join(&l, " ");
        return s;
}
