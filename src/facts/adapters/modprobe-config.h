/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The modprobe configuration of a machine root: modprobe.d(5) read by libkmod from the root's
 * directories, plus the module options and blacklists on the root's kernel command line
 * (kernel-parameters.rst), never those of the machine llmtune runs on.
 */
#pragma once

#include <stdbool.h>

#include "base/root.h"
#include "base/util.h"

/* Parallel lists: module name (a shell pattern for options/install), value, and where it came from. */
struct modprobe_entries {
        struct strv key, val, src;
};

struct modprobe_config {
        struct modprobe_entries blacklist, options, install;
};

/* What a kernel command line says about modules. */
struct cmdline_modules {
        struct strv blacklist;           /* module_blacklist= and modprobe.blacklist= names, '_' spelling */
        struct modprobe_entries options; /* MOD.param=value */
};

/* Module names: the kernel treats '-' and '_' alike and shows '_' (kmod's underscores()). */
char *modname_normalize(const char *s);
bool modname_valid(const char *s);

void modprobe_entries_add(struct modprobe_entries *e, const char *key, const char *val, const char *src);
void modprobe_entries_done(struct modprobe_entries *e);

void cmdline_modules_parse(const char *cmdline, const char *src, struct cmdline_modules *ret);
void cmdline_modules_done(struct cmdline_modules *c);

/*
 * Read ROOT's modprobe.d through libkmod (module directory ROOT/lib/modules/RELEASE, which need
 * not exist) and add CMD, the root's command line. libkmod reads the configuration by host path,
 * so under a foreign root it runs in the sandbox (sandbox.h: confined to the tree, under the read
 * deadline). Returns 0, or -errno with *ret_why (caller frees): -ETIMEDOUT (a FIFO or a file that
 * never answers), -ENOMEM when libkmod cannot start, the sandbox's other errors.
 */
int modprobe_config_load(struct root *r, const char *release, const struct cmdline_modules *cmd,
                         struct modprobe_config *ret, char **ret_why);
void modprobe_config_done(struct modprobe_config *c);
