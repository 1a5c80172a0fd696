/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a value may be in each file format llmtune writes. Every value that goes into a line of a
 * written file (a key, a value, a list item, a path, a module or unit name, a field, a comment)
 * passes the check of its format and field first, whoever made it: a rule or profile parameter,
 * a name read from the tree (an InfiniBand device, a network interface, a PCI address, a drop-in's
 * file name), or llmtune's own text. A value that does not fit is refused by its writer with the
 * path it came from; a comment, which is llmtune's own prose around such names, is made to fit.
 *
 * A newline in a value is the case that matters most: `mlx5_0\nNCCL_NET_PLUGIN=evil` as an IB
 * device name would otherwise write a second, well-formed line that the reader obeys, and the
 * verify of the written file would find it as written. Each format's other syntax is refused too
 * (its separators, escapes, specifiers, continuation lines), per its documented reader:
 *
 *   nccl.conf       NCCL src/misc/param.cc: KEY=VALUE per line, both literal (no trimming, no
 *                   quotes), each at most 1023 bytes; list values split on ',' with ^ = : prefixes
 *   sysctl.d        sysctl.d(5): "key = value", surrounding whitespace trimmed, '-' key prefix
 *   tmpfiles.d      tmpfiles.d(5): whitespace-separated fields, % specifiers, C-style escapes and
 *                   quoting in the path and the argument
 *   modprobe.d      modprobe.d(5): whitespace-separated words, '\' at the end continues a line
 *   modules-load.d  modules-load.d(5): one module name per line, '#' and ';' comments
 *   fstab           fstab(5): whitespace-separated fields (a space is \040), options split on ','
 *   limits.d        limits.conf(5): domain type item value, whitespace-separated
 *   systemd         systemd.syntax(7): [Section] and Key=Value lines, '\' continues a line, %
 *                   specifiers; unit names as systemd.unit(5) allows them
 *   gpu-affinity    llmtune's gpu-affinity.conf: GPU ADDRESS NUMA_NODE and three CPU sets
 *   cmdline         the kernel command line (Documentation/admin-guide/kernel-parameters.rst):
 *                   blank-separated KEY or KEY=VALUE words, '"' quoting a value; llmtune hands an
 *                   argument to a boot loader's tool (grubby, kernelstub, the shell-quoted
 *                   GRUB_CMDLINE_LINUX_DEFAULT of /etc/default/grub.d), so only a safe alphabet
 */
#pragma once

enum file_format {
        FF_NCCL_CONF,
        FF_SYSCTL_D,
        FF_TMPFILES_D,
        FF_MODPROBE_D,
        FF_MODULES_LOAD_D,
        FF_FSTAB,
        FF_LIMITS_D,
        FF_SYSTEMD,
        FF_GPU_AFFINITY,
        FF_CMDLINE,
        FF__COUNT
};

enum ff_field {
        FF_KEY,     /* nccl.conf and sysctl.d keys, a systemd setting's name */
        FF_VALUE,   /* what follows a key; tmpfiles.d's argument; modprobe.d's options */
        FF_ITEM,    /* one name in a comma list value (NCCL_IB_HCA, NCCL_SOCKET_IFNAME); one kernel argument */
        FF_PATH,    /* tmpfiles.d's path */
        FF_NAME,    /* a module (modprobe.d, modules-load.d), a unit (systemd) */
        FF_FIELD,   /* one whitespace-separated field (fstab, limits.d, gpu-affinity.conf) */
        FF_OPTION,  /* one mount option in fstab's options field */
        FF_ADDRESS, /* gpu-affinity.conf's PCI address */
        FF_LINE,    /* a whole line written as it is (a drop-in's content, limits.d and systemd) */
        FF_COMMENT, /* the text of a comment line */
        FF_FILENAME /* the name of a file in a drop-in directory */
};

/* NULL when VALUE fits as FIELD in a line of FORMAT, else why not (a static string). A field the
 * format does not have is never accepted. */
const char *ff_check(enum file_format fmt, enum ff_field field, const char *value);

/* The format's name for messages ("nccl.conf", "sysctl.d", ...). */
const char *ff_name(enum file_format fmt);

/* The format of the file llmtune writes at PATH (by its place: /etc/nccl.conf, /etc/sysctl.d/...,
 * /etc/security/limits.d/..., /etc/systemd/...), or FF__COUNT when it writes none there. */
enum file_format ff_of_path(const char *path);

/* The refusal of VALUE as WHAT in FORMAT: "WHAT 'VALUE' (from FROM) cannot be written to FORMAT:
 * WHY", the value shown with its control characters escaped. Caller frees. */
char *ff_refusal(enum file_format fmt, const char *what, const char *value, const char *from, const char *why);

/* VALUE with control characters and bytes that are not printable ASCII as \n, \t, \xNN, and a
 * backslash as \\ (for messages). Caller frees. */
char *ff_escape(const char *value);

/* TEXT made to fit as a comment of FORMAT (caller frees): a control character, a newline included,
 * becomes '?', so a name inside llmtune's own comment cannot start a line of its own. */
char *ff_comment(enum file_format fmt, const char *text);
