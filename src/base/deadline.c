/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The read deadline and the guard of llmtune's own reads (deadline.h). */
#include "base/deadline.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

static unsigned timeout_ms = DEADLINE_DEFAULT_MS;
static void (*expiry)(const char *path, unsigned ms, const char *label);
static atomic_uint_least64_t budget_end; /* ns, CLOCK_MONOTONIC; 0: no budget */
static atomic_ulong cuts;
static _Atomic(const char *) label;

/* The operation in progress: SEQ is odd while one runs and moves on with every enter and leave,
 * so the guard tells "the same read, still" from "another read" without a lock. PATH is only for
 * the message: the guard copies it and then checks SEQ did not move meanwhile. */
static struct {
        atomic_ulong seq;
        unsigned depth; /* the reading thread's own: root_read opens through root_open */
        atomic_uint bound_ms; /* of the operation in progress: the deadline, or the budget's rest */
        char path[512];
        bool guarded;
} op;

/* The locks to let go when the run gives up (deadline_release_on_expiry). */
#define HELD_MAX 8
static atomic_int held[HELD_MAX];
static atomic_uint nheld;

void deadline_release_on_expiry(int fd)
{
        unsigned i = atomic_fetch_add(&nheld, 1);
        atomic_store(&held[i % HELD_MAX], fd); /* the last HELD_MAX: a run takes one or two */
}

static void release_held(void)
{
        unsigned n = atomic_load(&nheld);
        for (unsigned i = 0; i < n && i < HELD_MAX; i++)
                flock(atomic_load(&held[i]), LOCK_UN);
}

void deadline_set_ms(unsigned ms) { timeout_ms = ms; }
unsigned deadline_read_timeout_ms(void) { return timeout_ms; }
void deadline_on_expiry(void (*fn)(const char *path, unsigned ms, const char *label)) { expiry = fn; }
void deadline_budget_set(uint64_t end_ns) { atomic_store(&budget_end, end_ns); }
uint64_t deadline_budget(void) { return atomic_load(&budget_end); }
unsigned long deadline_cuts(void) { return atomic_load(&cuts); }
void deadline_set_label(const char *l) { atomic_store(&label, l); }

uint64_t deadline_now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What is left of the budget in ms (UINT_MAX without one, 0 once it has ended). */
static unsigned budget_left_ms(void)
{
        uint64_t end = atomic_load(&budget_end);
        if (!end)
                return UINT_MAX;
        uint64_t now = deadline_now_ns();
        return now >= end ? 0 : (end - now) / 1000000u > UINT_MAX ? UINT_MAX : (unsigned)((end - now) / 1000000u);
}

unsigned deadline_ms(void)
{
        unsigned left = budget_left_ms();
        return left < timeout_ms ? (left ? left : 1) : timeout_ms;
}

void deadline_note_cut(void) { atomic_fetch_add(&cuts, 1); }

bool deadline_spent(void)
{
        if (budget_left_ms() > 0)
                return false;
        deadline_note_cut();
        return true;
}

/* Wakes four times an operation's bound, and at least every GUARD_QUANTUM_MS (a budget may shorten
 * the bound of the next operation); an operation seen in progress for wakings that add up to its
 * bound has lasted at least that (at most a quantum more). Sleeping, it costs nothing; while the
 * process is stopped it is stopped too, so a run resumed after ^Z is not taken for a hung one. */
#define GUARD_QUANTUM_MS (DEADLINE_FLOOR_MS / 4)
static void *guard(void *arg)
{
        (void)arg;
        unsigned long last = 0;
        unsigned waited = 0; /* ms slept while the same operation was in progress */
        for (;;) {
                unsigned bound = atomic_load(&op.bound_ms);
                unsigned q = bound / 4 < GUARD_QUANTUM_MS ? bound / 4 : GUARD_QUANTUM_MS;
                q = q ? q : 1;
                struct timespec ts = {.tv_sec = q / 1000, .tv_nsec = (long)(q % 1000) * 1000000L};
                while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0)
                        ;
                unsigned long s = atomic_load_explicit(&op.seq, memory_order_acquire);
                if (!(s & 1) || s != last) {
                        last = s;
                        waited = 0;
                        continue;
                }
                waited += q;
                if (waited < bound)
                        continue;
                char path[sizeof(op.path)];
                memcpy(path, op.path, sizeof(path));
                path[sizeof(path) - 1] = '\0';
                if (atomic_load_explicit(&op.seq, memory_order_acquire) == s) {
                        if (bound < timeout_ms)
                                deadline_note_cut();
                        release_held();
                        expiry(path, bound, atomic_load(&label));
                }
        }
        return NULL;
}

static void start_guard(void)
{
        op.guarded = true;
        atomic_store(&op.bound_ms, timeout_ms);
        pthread_attr_t attr;
        pthread_t t;
        sigset_t all, old;
        /* Signals stay the main thread's business. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, guard, NULL) != 0)
                op.guarded = false; /* no thread: reads go unguarded, as before there was a guard */
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void deadline_enter(const char *path)
{
        if (!expiry || op.depth++ > 0)
                return;
        if (!op.guarded)
                start_guard();
        size_t n = strnlen(path, sizeof(op.path) - 1);
        memcpy(op.path, path, n);
        op.path[n] = '\0';
        unsigned left = budget_left_ms();
        if (left < DEADLINE_FLOOR_MS)
                left = DEADLINE_FLOOR_MS;
        atomic_store(&op.bound_ms, left < timeout_ms ? left : timeout_ms);
        atomic_fetch_add_explicit(&op.seq, 1, memory_order_release);
}

void deadline_leave(void)
{
        if (!expiry || --op.depth > 0)
                return;
        atomic_fetch_add_explicit(&op.seq, 1, memory_order_release);
}

void deadline_pause(void)
{
        if (expiry && op.depth > 0)
                atomic_fetch_add_explicit(&op.seq, 1, memory_order_release); /* even: nothing in progress */
}

void deadline_resume(void)
{
        if (expiry && op.depth > 0)
                atomic_fetch_add_explicit(&op.seq, 1, memory_order_release); /* odd again: a new operation */
}
