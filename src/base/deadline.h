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

#include <stdbool.h>
#include <stdint.h>

#define DEADLINE_DEFAULT_MS 5000u
#define DEADLINE_MAX_MS 3600000u
#define DEADLINE_REASON "timed out (a FIFO or a file that never answers?)"

#define BUDGET_REASON "timed out: the time given to the run or the rule ran out (--timeout, --rule-timeout)"
/* An operation already under way when a budget ends gets at least this long before the guard ends
 * the run: the budget cuts waits, never a read that is merely slow on a busy machine. */
#define DEADLINE_FLOOR_MS 1000u

void deadline_set_ms(unsigned ms);
/* --read-timeout itself, whatever the budget. */
unsigned deadline_read_timeout_ms(void);
/* The bound of an operation starting now: the read deadline, or what is left of the budget when
 * that is less (at least 1 ms). */
unsigned deadline_ms(void);

/*
 * A budget over many operations (audit --timeout for the run, --rule-timeout for each rule): END, a
 * CLOCK_MONOTONIC time in ns (deadline_now_ns), bounds every operation with the read deadline
 * (deadline_ms), and an operation that would begin after it is refused (deadline_spent). 0: none.
 */
void deadline_budget_set(uint64_t end_ns);
uint64_t deadline_budget(void);
uint64_t deadline_now_ns(void);
/* True when a budget is set and has ended: the caller refuses the operation (-ETIME, BUDGET_REASON)
 * rather than begin it. Each true answer counts as a cut. */
bool deadline_spent(void);
/* Operations refused or cut short by a budget so far (a rule that has any ran out of time); a wait
 * that ended at a bound the budget set, not the read deadline, is noted as one. */
unsigned long deadline_cuts(void);
void deadline_note_cut(void);
/* What the run is doing (a rule's id: a string that outlives the run), for the message of a give-up;
 * NULL: nothing named. */
void deadline_set_label(const char *label);

/* The end of a run whose read outlasted the deadline: called from the guard's own thread with the
 * path that was being read, the bound it had and the label set; must not return. Without one (unit
 * tests, fuzzers) nothing is guarded. */
void deadline_on_expiry(void (*fn)(const char *path, unsigned ms, const char *label));

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
