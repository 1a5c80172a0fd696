/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The read deadline (--read-timeout): how long one read of a tree may wait. A tree can hold a
 * FIFO, or sit on a network or FUSE file system whose server never answers; no read of it may
 * hold a run (and the apply lock with it) for longer than this.
 *
 *  - A library that reads the tree by host path (hwloc, libkmod) does so in a sandbox child
 *    (sandbox.h). The parent kills the child when it has waited a deadline without using any CPU,
 *    or used a deadline of CPU; the facts it owed are unreadable with DEADLINE_REASON.
 *  - llmtune's own reads (root.h) never wait on a FIFO, socket or device: they open without
 *    blocking and look at the type before reading. What is left is a regular file whose read never
 *    returns, a wait that only a fatal signal ends; so a guard thread watches each operation on the
 *    tree, and when one has lasted a deadline it calls the handler the command line installed,
 *    which says so and ends the run (a lock goes with the process).
 */
#pragma once

#define DEADLINE_DEFAULT_MS 5000u
#define DEADLINE_MAX_MS 3600000u
#define DEADLINE_REASON "timed out (a FIFO or a file that never answers?)"

void deadline_set_ms(unsigned ms);
unsigned deadline_ms(void);

/* The end of a run whose read outlasted the deadline: called from the guard's own thread with the
 * path that was being read; must not return. Without one (unit tests, fuzzers) nothing is guarded. */
void deadline_on_expiry(void (*fn)(const char *path, unsigned ms));

/* Around one operation on the tree: PATH is copied for the message. Nested calls count as one;
 * cheap (no system call: the guard thread polls a sequence number). */
void deadline_enter(const char *path);
void deadline_leave(void);
/* Within an operation: the guard looks away while the sandbox waits for a child, which it bounds
 * by itself (and then says what timed out). */
void deadline_pause(void);
void deadline_resume(void);

/* FD holds a lock (flock(2): the apply lock) that must not outlive a run that gives up: the guard
 * unlocks it before the handler ends the run. Without this, a thread the kernel keeps waiting
 * (a FUSE read the server has taken: not even SIGKILL ends that wait) would keep the descriptor,
 * and the lock, for as long as it waits. An FD closed since is unlocked harmlessly. */
void deadline_release_on_expiry(int fd);
