/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel command line read as the kernel and systemd read it: words split at white space
 * outside double quotes, the quotes removed, '-' and '_' the same in a key (the kernel's parameq,
 * systemd's proc_cmdline_key_streq). A key given more than once means its last occurrence: the
 * kernel calls a parameter's handler once per occurrence, in order, so the last setting stands, and
 * systemd's generators do the same (proc_cmdline_get_key returns the last). An occurrence whose
 * value the handler refuses changes nothing, so it is skipped.
 *
 * The text itself is the kernel.cmdline fact (probe-kernel.c reads /proc/cmdline, once).
 */
#pragma once

#include <stdbool.h>

/* The value of the last occurrence of KEY in CMDLINE that ACCEPT takes (NULL: every one; ACCEPT
 * is handed NULL for a bare KEY without '='). Returns true with *RET_VALUE a copy of the value
 * (NULL for a bare KEY; RET_VALUE may be NULL), false when there is none. */
bool cmdline_get_key(const char *cmdline, const char *key, bool (*accept)(const char *value), char **ret_value);

/* KEY as a boolean, systemd's way: 1 yes y true t on, 0 no n false f off (any case), a bare KEY
 * true; other values are skipped. True with *RET, false when no occurrence says. */
bool cmdline_get_bool(const char *cmdline, const char *key, bool *ret);
