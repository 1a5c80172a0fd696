/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A throwaway machine root for one unit test: a mkdtemp directory under /tmp, files, links and
 * directories written into it by path relative to it, and the whole tree removed afterwards.
 * Shared by the test-*.c files so that each test states only the tree it needs. Failures are
 * Check assertions: a tree that cannot be built fails the test that wanted it.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Creates /tmp/llmtune-TAG-XXXXXX; TAG names the test program so a leftover tree says whose it is. */
void tmptree_new(const char *tag);
/* Removes the tree (rm -rf, which must succeed) and forgets it. */
void tmptree_drop(void);
/* The tree's absolute path; valid between tmptree_new() and tmptree_drop(). */
const char *tmptree_path(void);

/* REL written with exactly LEN bytes of DATA (created 0644, truncated), parent directories made. */
void tmptree_write(const char *rel, const void *data, size_t len);
/* REL written with TEXT, then given MODE (chmod, so the umask does not decide it). */
void tmptree_put(const char *rel, const char *text, mode_t mode);
/* REL's first 4095 bytes as a string (free it), or NULL when REL cannot be opened. */
char *tmptree_get(const char *rel);
/* A symbolic link REL -> TARGET, parent directories made. */
void tmptree_link(const char *rel, const char *target);
/* The directory REL and its parents (0755; ones already there are fine). */
void tmptree_mkdir(const char *rel);
