/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unified diffs of small text files (the configuration files apply writes), for dry runs. */
#pragma once

/* "--- a/PATH\n+++ b/PATH\n@@ ... @@" with 3 lines of context; OLD or NEW NULL means the file is
 * absent (/dev/null). Returns "" when equal. Caller frees. */
char *unified_diff(const char *path, const char *old, const char *new);
