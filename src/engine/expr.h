/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Conditions over facts, as written in rules and profile match blocks:
 *
 *     [all|any|none] FACT OP [VALUE] [where FIELD OP VALUE [and FIELD OP VALUE]...]
 *
 * FACT is a fact name, possibly with '*' ("cpu.policy.*.governor": every policy). OP is one of
 * == != >= <= > < in !in contains !contains present absent version>= version<, and for a profile
 * parameter "set" ("${nvidia_driver_min} set": its value is not "any", the not-checked sentinel;
 * the older spelling "${x} != any" means the same). Numbers may be
 * "unlimited" (the largest) or a product "40G*2". VALUE may hold ${param} references to
 * profile parameters. "where" restricts a wildcard to items whose sibling fact FIELD satisfies
 * the test ("all gpu.*.numa_node >= 0 where vendor_id == 10de": NVIDIA GPUs only).
 */
#pragma once

#include <stdbool.h>

#include "facts/facts.h"

enum expr_op {
        OP_EQ, OP_NE, OP_GE, OP_LE, OP_GT, OP_LT, OP_IN, OP_NOT_IN,
        OP_CONTAINS, OP_NOT_CONTAINS, OP_PRESENT, OP_ABSENT,
        OP_VERSION_GE, OP_VERSION_LT, /* dotted versions, component by component: 535.104.05 */
        OP_SET, /* "${param} set": the profile gives the parameter a value, not the sentinel "any" */
};

enum quantifier { Q_ALL, Q_ANY, Q_NONE };

#define EXPR_WHERE_MAX 4

struct expr {
        enum quantifier quant;
        char *fact;   /* name or pattern; "${param}" for a parameter tested directly */
        enum expr_op op;
        char *value;  /* raw, before parameter substitution; NULL for present/absent */
        /* "where A op x and B op y": every clause must hold for an item to count */
        struct expr_where {
                char *field;
                enum expr_op op;
                char *value;
        } where[EXPR_WHERE_MAX];
        size_t nwhere;
        char *text;   /* as written, for messages */
};

/* Parse TEXT; on error returns -EINVAL and *err says why. */
int expr_parse(const char *text, struct expr *ret, char **err);
void expr_done(struct expr *e);
const char *expr_op_name(enum expr_op op);

/* Parameter lookup for ${name}; returns NULL when unknown. */
typedef const char *(*param_fn)(void *userdata, const char *name);

/* Replace ${name} in S; NULL with *missing set to the first unknown name. */
char *expr_substitute(const char *s, param_fn params, void *userdata, char **missing);

/* The parameters an expression refers to (for validation). */
void expr_params(const struct expr *e, struct strv *ret);

enum eval_status {
        EVAL_TRUE,
        EVAL_FALSE,
        EVAL_NA,    /* the fact is absent: the question does not arise here */
        EVAL_ERROR, /* unreadable fact, unknown parameter, comparing text with >= ... */
};

struct eval_result {
        enum eval_status status;
        char *observed; /* "cpu.policy.3.governor = ondemand (8 of 16 items)" */
        char *expected; /* "== performance" */
        char *reason;   /* for NA/ERROR */
        unsigned items, failing;
        struct strv failed; /* EVAL_FALSE: the names of the items it fails on (the finding's evidence) */
};

void expr_eval(const struct expr *e, struct facts *f, param_fn params, void *userdata, struct eval_result *ret);
void eval_result_done(struct eval_result *r);
/* The sibling FIELD of item NAME of E ("gpu.3.numa_node" of "gpu.*.numa_node" -> "gpu.3.FIELD"; for a
 * single fact, FIELD beside it). Caller frees. */
char *expr_item_sibling(const struct expr *e, const char *name, const char *field);

/* Numbers in rules may carry binary size suffixes: 64G, 64GiB, 512K, or be durations in seconds:
 * 30s, 10min, 24h, 7d, 2w; "unlimited"/"infinity" is UINT64_MAX; "A*B" is a product (saturating). */
int parse_rule_number(const char *s, bool *neg, uint64_t *mag);
