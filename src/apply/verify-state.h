/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The change log's state in one struct, as `llmtune verify` judges it (implemented in
 * cmd-verify.c, beside the checks it reuses): for exporters that report it without printing
 * verify's output (audit --format prometheus).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "root.h"

struct verify_state {
        const char *status;    /* "clean", "drift", "unfinished", "tampered", "error" (verify --json's) */
        size_t records;        /* records in the log (0: never applied) */
        size_t chain_problems; /* hash chain breaks */
        size_t unfinished;     /* steps without an outcome */
        size_t in_force;       /* changes still in force */
        size_t drifted;        /* of those, no longer as applied */
        size_t uncheckable;    /* commands and notes */
        size_t check_errors;   /* targets that could not be read */
        time_t last_apply;     /* time of the newest "done" record; 0 when there is none */
};

/* Read and check the log under ROOT as verify does (shared lock, waiting for a running apply).
 * Returns 0, or -errno when the log or its lock cannot be read (*ret then says "error"). */
int verify_state_read(struct root *root, struct verify_state *ret);

/* The statuses in the order exporters list them (a stateset), NULL-terminated. */
extern const char *const verify_state_names[];
