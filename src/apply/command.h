/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The commands llmtune runs, as typed data. A command change is never run as the argv it carries:
 * its argv is parsed against the fixed forms the planner produces (a tool from an allow-list,
 * numeric parameters, a device path, a module or unit name of a safe alphabet) and the argv that
 * runs is built again from those fields. An undo must be the inverse llmtune itself would plan for
 * that command (tune2fs back to numeric values on the same device, systemctl stop of the unit it
 * started, the same regeneration); anything else in a change log record is refused, so a forged
 * record cannot make rollback run what it likes (docs/RELIABILITY.md, "Threat model").
 *
 * Under a foreign --root only a command on an image file inside the tree runs (tune2fs on a
 * fixture's dev/md0), and it is handed the image as /proc/self/fd/N of a file opened through the
 * root handle (no symbolic link on the way, a regular file, one link): the host kernel never
 * resolves a path of the tree, so no link, hard link or /proc/self/root trick leads outside it.
 */
#pragma once

#include <stdbool.h>

#include "base/root.h"
#include "base/util.h"

enum cmd_tool {
        CMD_DAEMON_RELOAD,    /* systemctl daemon-reload */
        CMD_UPDATE_INITRAMFS, /* update-initramfs -u -k all */
        CMD_DRACUT,           /* dracut -f --regenerate-all */
        CMD_MKINITCPIO,       /* mkinitcpio -P (every preset) */
        CMD_TUNE2FS,          /* tune2fs -E stride=N,stripe_width=M DEVICE */
        CMD_MODPROBE,         /* modprobe MODULE */
        CMD_UNIT_START,       /* systemctl start UNIT */
        CMD_UNIT_STOP,        /* systemctl stop UNIT */
        CMD_UPDATE_GRUB,      /* update-grub (Debian, Ubuntu: grub.cfg from /etc/default/grub and grub.d) */
        CMD_GRUBBY_ARGS,      /* grubby --update-kernel=ALL --args=ARG (every BLS entry) */
        CMD_GRUBBY_REMOVE,    /* grubby --update-kernel=ALL --remove-args=ARG */
        CMD_KERNELSTUB_ADD,   /* kernelstub -a ARG */
        CMD_KERNELSTUB_DEL,   /* kernelstub -d ARG */
};

struct cmd {
        enum cmd_tool tool;
        unsigned long stride, stripe_width; /* TUNE2FS */
        char *device;                       /* TUNE2FS: absolute path under /dev */
        char *name;                         /* MODPROBE: module; UNIT_*: unit; GRUBBY_*, KERNELSTUB_*: the
                                             * kernel argument KEY[=VALUE] */
};

/* Is ARG a kernel command-line argument llmtune may hand a boot loader tool (file-format.h's
 * FF_CMDLINE check: KEY or KEY=VALUE of a safe alphabet, never starting with '-')? */
bool cmd_kernel_arg(const char *arg);

/* Parse ARGV into C; -EINVAL with *why (caller frees) when it is not one of llmtune's commands. */
int cmd_parse(const struct strv *argv, struct cmd *c, char **why);
void cmd_done(struct cmd *c);

/* The argv of C, built from its fields; DEVICE_ARG replaces the device (NULL: the device path). */
void cmd_argv(const struct cmd *c, const char *device_arg, struct strv *ret);

/* Is UNDO the inverse llmtune plans for FORWARD? (An empty undo is always acceptable.) */
int cmd_check_undo(const struct strv *forward, const struct strv *undo, char **why);

/* Open the image file DEVICE inside a foreign root for a command: no link on the way, a regular
 * file with one link. Returns an fd (O_CLOEXEC) or -errno with *why. */
int cmd_open_image(struct root *r, const char *device, char **why);

/* Would ARGV run on ROOT? Live: when it is one of llmtune's commands. Foreign root: only tune2fs on
 * an image file inside the tree that cmd_open_image accepts. */
bool cmd_runs_here(struct root *r, const struct strv *argv);
