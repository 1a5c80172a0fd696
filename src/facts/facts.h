/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Facts: typed, named observations of one machine (or fixture root), each either a value or
 * "absent"/"unreadable" with a reason and the path it came from. Names are dotted
 * ("cpu.sockets", "gpu.0.numa_node", "sysctl.kernel.shmmax"). Probes fill them lazily: asking for
 * a name runs only the probes whose prefix covers it, each at most once.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/root.h"
#include "base/util.h"

enum fact_status {
        FACT_OK,
        FACT_ABSENT,     /* the thing does not exist here (no cpufreq driver, no GPU, ...) */
        FACT_UNREADABLE, /* it should be readable but is not: EACCES, empty, garbage, truncated */
};

enum fact_type {
        FACT_STR,
        FACT_INT, /* signed 64-bit, or unsigned 64-bit when !neg and above INT64_MAX */
        FACT_BOOL,
};

struct fact {
        char *name;
        enum fact_status status;
        enum fact_type type;
        char *str;     /* the value as text, for every type (what the human output prints) */
        bool neg;      /* FACT_INT: sign ... */
        uint64_t mag;  /* ... and magnitude, so ULONG_MAX-sized sysctls compare exactly */
        bool b;        /* FACT_BOOL */
        char *reason;  /* FACT_ABSENT / FACT_UNREADABLE */
        char *source;  /* file under the root, or the library that said it */
};

struct facts;

/* A probe provides every fact under its prefixes. run() enumerates them all; lookup(), when set,
 * produces one fact by name on demand (sysctl.* cannot be enumerated up front); match(), when
 * set, produces at least every fact whose name matches a glob pattern (fnmatch, no flags), so
 * that "gpu.*.numa_node" need not run the stages that load libpci and hwloc. */
struct probe {
        const char *name;
        const char *prefixes[6];
        int (*run)(struct facts *f);
        int (*lookup)(struct facts *f, const char *name);
        int (*match)(struct facts *f, const char *pattern);
};

struct facts *facts_new(struct root *root);
struct facts *facts_free(struct facts *f);
/* From now on no probe runs: F holds the facts set so far and no others (a fuzz target's store of
 * made-up facts, which must not be mixed with what the root's files say). */
void facts_seal(struct facts *f);
struct root *facts_root(struct facts *f);

/* One fact, probing as needed; NULL when no probe knows the name. */
const struct fact *facts_get(struct facts *f, const char *name);

/* Every fact whose name matches a glob pattern (fnmatch: '*' may span dots), in natural order
 * (gpu.2 before gpu.10). Returns the count; *ret is allocated, entries owned by the store. */
size_t facts_match(struct facts *f, const char *pattern, const struct fact ***ret);

/* Every fact under PREFIX ("" for all), natural order. */
size_t facts_under(struct facts *f, const char *prefix, const struct fact ***ret);

/* Numeric view of a fact: true and *ret when it is an integer (or an integer-looking string). */
bool fact_number(const struct fact *fc, bool *neg, uint64_t *mag);
int num_cmp(bool an, uint64_t am, bool bn, uint64_t bm);

/* --- for probes --------------------------------------------------------------------------- */

void fact_str(struct facts *f, const char *source, const char *value, const char *namefmt, ...) _printf_(4, 5);
void fact_int(struct facts *f, const char *source, int64_t v, const char *namefmt, ...) _printf_(4, 5);
void fact_uint(struct facts *f, const char *source, uint64_t v, const char *namefmt, ...) _printf_(4, 5);
void fact_bool(struct facts *f, const char *source, bool v, const char *namefmt, ...) _printf_(4, 5);
void fact_absent(struct facts *f, const char *source, const char *reason, const char *namefmt, ...) _printf_(4, 5);
/* err: negative errno, or 0 with a reason of the parser's. */
void fact_unreadable(struct facts *f, const char *source, int err, const char *reason, const char *namefmt, ...)
        _printf_(5, 6);

/* Read PATH under the root and record it as NAME. Missing file: absent with ABSENT_REASON (or
 * "no such file"); empty, garbage, unreadable: unreadable. Return 0 when a value was recorded. */
int fact_file_str(struct facts *f, const char *path, const char *absent_reason, const char *namefmt, ...) _printf_(4, 5);
int fact_file_int(struct facts *f, const char *path, const char *absent_reason, const char *namefmt, ...) _printf_(4, 5);

/* Read a configuration file PATH under the root whole and record NAME (a ".present" fact) for it:
 * false when there is no such file, true when it was read, unreadable with the error otherwise (a
 * file that could not be read is not a file that is not there). Returns root_read's result. */
int fact_read_present(struct facts *f, const char *path, const char **data, size_t *len, const char *name);

/* Can glob PATTERN match some name that ends in ENDING (".governor", ".numa_node")? False only
 * when it surely cannot: a matching name ends in the pattern's literal end (after its last
 * wildcard) and in ENDING, so the shorter of the two must end the longer. Probes ask it before
 * formatting and matching a name per item (384 cpufreq policies, 16 GPUs times each stage's
 * fields). */
bool fact_pattern_may_end(const char *pattern, const char *ending);

/* Library handles shared by several probes (libpci, hwloc, libkmod), opened once per run. */
void *facts_handle(struct facts *f, const char *key);
void facts_set_handle(struct facts *f, const char *key, void *h, void (*destroy)(void *));
/* A probe's state kept for the run: KEY's handle, made (SIZE bytes, zeroed) and set with DESTROY
 * on the first call. */
void *facts_state(struct facts *f, const char *key, size_t size, void (*destroy)(void *));
/* Put H in the place of KEY's handle (the caller released the old one; the destroy function stays). */
void facts_replace_handle(struct facts *f, const char *key, void *h);

/* Every handle key set in this process so far, in order ("libpci,hwloc"; "" for none): what the
 * LLMTUNE_STATS report calls the libraries loaded. Static storage. */
const char *facts_handles_loaded(void);

/* Text of an errno for reasons: "EACCES (Permission denied)". */
const char *errno_name(int err);
