/* SPDX-License-Identifier: MIT */
/*
 * The root handle: every file llmtune reads or writes is reached through one directory fd opened
 * on --root. Paths are resolved as if that directory were "/" (symlinks included), so nothing a
 * fixture tree or a hostile link contains can lead outside it. Reads are cached, so no file is read
 * twice in one run, and counted, so benchmarks can report how many files a command touched.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "util.h"

/* Largest file read in one piece; bigger ones give -EFBIG ("bounded input"). */
#define ROOT_READ_MAX (8u << 20)

struct root;

int root_new(const char *path, struct root **ret);
struct root *root_free(struct root *r);

/* The root as given ("/" for the live system), and whether it is the live system. */
const char *root_path(const struct root *r);
bool root_is_live(const struct root *r);

/* Host path of a path under the root, for the libraries that take a directory (libpci, hwloc,
 * libkmod). Caller frees. */
char *root_host_path(const struct root *r, const char *path);

/* openat-style open of PATH (absolute or relative, both taken from the root); returns fd or -errno. */
int root_open(struct root *r, const char *path, int flags, mode_t mode);

/* Like root_open, but no symbolic link may appear anywhere in PATH (-ELOOP): openat2's
 * RESOLVE_NO_SYMLINKS inside the root. Every write to a managed path goes through this, so a link
 * planted at the path or in a directory above it (/etc/sysctl.d -> /etc/shadow's directory) is
 * refused rather than followed. Reads (sysfs is all links) keep using root_open. */
int root_open_nolinks(struct root *r, const char *path, int flags, mode_t mode);

/* Whole file, cached for the life of the handle (negative results too). *ret stays owned by the
 * handle and is NUL-terminated; embedded NULs are kept in *ret_len. Returns 0 or -errno. */
int root_read(struct root *r, const char *path, const char **ret, size_t *ret_len);

/* Drop the cached content of PATH (after llmtune itself wrote it). */
void root_forget(struct root *r, const char *path);

/* Link target of PATH (the last component is not followed). Caller frees. */
int root_readlink(struct root *r, const char *path, char **ret);

/* Sorted entry names of a directory, without "." and "..". */
int root_list(struct root *r, const char *dir, struct strv *ret);

/* stat/lstat of PATH inside the root. */
int root_stat(struct root *r, const char *path, struct stat *st, bool follow);

/* Paths under the root matching a glob pattern (fnmatch per component, "*" never crosses "/"),
 * sorted. Hidden entries match only a pattern component that starts with '.'. */
int root_glob(struct root *r, const char *pattern, struct strv *ret);

/* How many files were opened for reading through the handle (benchmarks, tests). */
unsigned root_files_opened(const struct root *r);
