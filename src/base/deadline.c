/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The read deadline and the guard of llmtune's own reads (deadline.h). */
#include "deadline.h"

#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

static unsigned timeout_ms = DEADLINE_DEFAULT_MS;
static void (*expiry)(const char *path, unsigned ms);

/* The operation in progress: SEQ is odd while one runs and moves on with every enter and leave,
 * so the guard tells "the same read, still" from "another read" without a lock. PATH is only for
 * the message: the guard copies it and then checks SEQ did not move meanwhile. */
static struct {
        atomic_ulong seq;
        unsigned depth; /* the reading thread's own: root_read opens through root_open */
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
unsigned deadline_ms(void) { return timeout_ms; }
void deadline_on_expiry(void (*fn)(const char *path, unsigned ms)) { expiry = fn; }

/* Wakes four times a deadline; an operation seen in progress at five wakings in a row has lasted
 * at least a deadline (at most a quarter more). Sleeping, it costs nothing; while the process is
 * stopped it is stopped too, so a run resumed after ^Z is not taken for a hung one. */
static void *guard(void *arg)
{
        (void)arg;
        unsigned long last = 0;
        unsigned seen = 0;
        for (;;) {
                unsigned q = timeout_ms / 4 ? timeout_ms / 4 : 1;
                struct timespec ts = {.tv_sec = q / 1000, .tv_nsec = (long)(q % 1000) * 1000000L};
                while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0)
                        ;
                unsigned long s = atomic_load_explicit(&op.seq, memory_order_acquire);
                if (!(s & 1) || s != last) {
                        last = s;
                        seen = 0;
                        continue;
                }
                if (++seen < 4)
                        continue;
                char path[sizeof(op.path)];
                memcpy(path, op.path, sizeof(path));
                path[sizeof(path) - 1] = '\0';
                if (atomic_load_explicit(&op.seq, memory_order_acquire) == s) {
                        release_held();
                        expiry(path, timeout_ms);
                }
        }
        return NULL;
}

static void start_guard(void)
{
        op.guarded = true;
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
