/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * INI files through inih, with what inih alone does not give: the line number of every key (for
 * "file:line: message" errors), continuation lines joined into one value, and overlong lines
 * reported instead of silently split (Debian builds inih with INI_MAX_LINE=200).
 */
#pragma once

#include <stddef.h>

#include "base/root.h"
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

/*
 * The rule, profile and configuration files llmtune takes as input (shipped, named on the command
 * line, or the site's under the root), each read one way: opened once, without blocking (a FIFO is
 * refused, not waited on), judged on that descriptor by the one trust policy (trust.h: only when
 * llmtune runs as root), and what is read is the file judged, never a second open of its path; a
 * regular file of HOST_FILE_MAX bytes at most. ROOT NULL: PATH is a host path; else a path under
 * ROOT. 0 and *ret (the caller's); else -errno (-EPERM: refused, -EINVAL: not a regular file,
 * -EFBIG: too large) and one diagnostic on PATH in D, WHAT naming the kind ("a profile").
 */
int ini_read_input(struct root *root, const char *path, const char *what, char **ret, size_t *ret_len,
                   struct diags *d);
/* The same for a file that may be absent (the site's configuration): -ENOENT, and nothing said
 * in D, when it is not there. */
int ini_read_optional(struct root *root, const char *path, const char *what, char **ret, size_t *ret_len,
                      struct diags *d);

/* One file of a directory, handed on by ini_dir_load: FILE as messages name it, its whole text.
 * Returns < 0 when it did not load (its diagnostics in D). */
typedef int (*ini_file_fn)(void *user, const char *file, const char *data, size_t len, struct diags *d);

/* PATH (ROOT as for ini_read_input) read by ini_read_input and handed to FN: a rule or profile file
 * given by itself, loaded as ini_dir_load loads each file of a directory. Returns ini_read_input's
 * error or FN's result. */
int ini_input_load(struct root *root, const char *path, const char *what, ini_file_fn fn, void *user,
                   struct diags *d);

/*
 * Each NAME.ini of DIR (hidden ones left out) in name order, read by ini_read_input and handed to
 * FN; SKIP (may be NULL) is a path not to read (a file being replaced). The one error convention of
 * the rule and profile directories: the files that load are loaded whatever the others do; -EINVAL
 * when any did not (each said in D); -errno when DIR cannot be listed, said in D unless it is
 * not there (root_gone: the caller decides whether that is an error). *ret_n (may be NULL): how
 * many *.ini files DIR has.
 */
int ini_dir_load(struct root *root, const char *dir, const char *what, const char *skip, ini_file_fn fn, void *user,
                 struct diags *d, size_t *ret_n);
