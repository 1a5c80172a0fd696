/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NCCL configuration files: the catalog of NCCL's variables (rules/nccl-catalog.tsv) and a linter
 * for nccl.conf text that knows NCCL's exact reading rules (NCCL 2.30.7 src/misc/param.cc): literal
 * KEY=VALUE, no trimming, no quotes, no export, '#' comments only in column 1, first definition wins.
 */
#pragma once

#include <stddef.h>

#include "base/util.h"

enum nccl_status { NCCL_DOCUMENTED, NCCL_UNDOCUMENTED, NCCL_DEPRECATED, NCCL_REMOVED, NCCL_NOT_NCCL };

struct nccl_var {
        char *name, *type, *replacement, *allowed; /* replacement/allowed NULL when none */
        enum nccl_status status;
};

struct nccl_catalog {
        struct nccl_var *v;
        size_t n;
};

int nccl_catalog_load(const char *path, struct nccl_catalog *ret);
void nccl_catalog_done(struct nccl_catalog *c);
const struct nccl_var *nccl_catalog_find(const struct nccl_catalog *c, const char *name);
/* The closest known name within a small edit distance, or NULL. */
const char *nccl_catalog_suggest(const struct nccl_catalog *c, const char *name);

enum nccl_problem {
        NP_SYNTAX,     /* spaces, quotes, export, inline '#', CRLF, no '=', overlong */
        NP_DUPLICATE,  /* a later definition of a key: ignored by NCCL */
        NP_UNKNOWN,    /* NCCL_* not in the catalog */
        NP_REMOVED,
        NP_DEPRECATED,
        NP_FOREIGN,    /* not read by NCCL: PyTorch's, CUDA's, or read by nothing */
        NP_BAD_VALUE,  /* wrong type or outside the allowed set: NCCL ignores or misreads it */
        NP_DEBUG,      /* NCCL_P2P_DISABLE / NCCL_IB_DISABLE / NCCL_SHM_DISABLE */
        NP_INIT_FAIL,  /* a value that makes communicator init fail (NCCL_ALGO/NCCL_PROTO tokens) */
        NP_DEBUG_KEY,  /* a key of env.rst's Debugging section left in a persistent file */
        NP_ADVICE,     /* works, but NCCL's documentation advises against it (GID index, HCA prefixes) */
};

/* Errors: NCCL fails, or ignores or misreads the line (it does not do what it says). Warnings:
 * the line acts as written but should not be there, or not in that form. */
bool nccl_problem_is_error(enum nccl_problem p);
/* Problems of a line that still acts as written and may be a site's deliberate choice: reported,
 * but a generated file keeps such a line of the site's. */
bool nccl_problem_is_advisory(enum nccl_problem p);

/* NCCL_P2P_DISABLE, NCCL_IB_DISABLE, NCCL_SHM_DISABLE: NCCL env.rst lists them under Debugging. */
bool nccl_is_transport_switch(const char *key);
/* Whether KEY=VALUE of such a switch turns its transport off as NCCL reads it: NCCL_P2P_DISABLE and
 * NCCL_SHM_DISABLE only when strtol(VALUE, 0) is exactly 1 (src/graph/paths.cc ncclGetLevel,
 * src/transport/shm.cc), NCCL_IB_DISABLE for any non-zero integer (src/transport/net_ib/init.cc).
 * "0", "yes" and "true" (which parse as 0) do nothing. */
bool nccl_switch_acts(const char *key, const char *value);

struct nccl_finding {
        unsigned line;
        enum nccl_problem problem;
        char *key;     /* as written (may hold spaces) */
        char *message; /* one line, for humans */
};

struct nccl_entry {
        unsigned line;
        char *key, *value;
};

struct nccl_lint {
        struct nccl_entry *entries; /* the effective definitions, first one of each key */
        size_t n_entries;
        struct nccl_finding *findings;
        size_t n_findings;
};

void nccl_lint_text(const struct nccl_catalog *c, const char *text, size_t len, struct nccl_lint *ret);
void nccl_lint_done(struct nccl_lint *l);
const char *nccl_problem_name(enum nccl_problem p);
