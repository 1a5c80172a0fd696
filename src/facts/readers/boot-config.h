/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What decides a kernel setting at boot when neither a configuration file nor the command line
 * (cmdline.h) does: the kernel's build configuration (/boot/config-RELEASE, which the
 * distributions install beside the kernel).
 */
#pragma once

#include "base/root.h"

/* The value of CONFIG_SYM in ROOT's /boot/config-RELEASE ("y", "m", a number or string): 0 and
 * *value, -ENODATA when the file does not set it ("# CONFIG_SYM is not set"), -ENOENT when there is
 * no such file, another -errno when it cannot be read. *path names the file. */
int kernel_config(struct root *r, const char *release, const char *sym, char **value, char **path);
