/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * INI files through inih, with what inih alone does not give: the line number of every key (for
 * "file:line: message" errors), continuation lines joined into one value, and overlong lines
 * reported instead of silently split (Debian builds inih with INI_MAX_LINE=200).
 */
#pragma once

#include <stddef.h>

#include "base/util.h"

/* Diagnostics collected while loading: "file:line: message". */
struct diags {
        struct strv msgs;
};
void diag_add(struct diags *d, const char *file, unsigned line, const char *fmt, ...) _printf_(4, 5);

/* Called once per key with the whole (joined) value; section_line is where [section] stood. */
typedef void (*ini_key_fn)(void *user, const char *section, unsigned section_line, const char *key,
                           const char *value, unsigned line);

/* Parse DATA (named FILE in messages). Syntax errors go to D. Returns 0, or -EINVAL on errors. */
int ini_load_buffer(const char *file, const char *data, size_t len, ini_key_fn fn, void *user, struct diags *d);

/* Read a host file (rules, profiles given by path) and parse it. */
int ini_load_file(const char *path, ini_key_fn fn, void *user, struct diags *d);
