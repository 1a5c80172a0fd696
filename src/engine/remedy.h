/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Remedies: the typed actions a rule names as its fix ("remedy = sysctl" with "remedy.key = ...").
 * This table says which kinds exist and which parameters each takes, so rule files are validated
 * when loaded; the apply layer carries them out. This table is the one place a kind is named: the
 * layer that carries remedies out (apply/plan.c) registers a plan under each name before main runs,
 * and the unit test remedy_kinds_agree holds the two sides together (every kind planned, no plan for
 * a kind this table lacks).
 */
#pragma once

#include <stdbool.h>

#include "base/util.h"

struct remedy_kind {
        const char *name;
        const char *required[4]; /* parameter names that must be given */
        const char *optional[4];
        const char *summary;     /* one line for the audit; ${param} are the remedy's parameters */
        bool reboot;             /* the change takes effect only after a reboot */
};

const struct remedy_kind *remedy_kind_find(const char *name);
bool remedy_kind_has_param(const struct remedy_kind *k, const char *param);
/* The I-th kind of the table, NULL past the last. */
const struct remedy_kind *remedy_kind_at(size_t i);

/* How a kind is carried out: defined by the layer above that plans it (apply/plan.c). */
struct remedy_plan;
/* Registers PLAN as the way to carry out the kind NAME (from a constructor). A NAME the table lacks,
 * or one registered twice, is kept for remedy_plan_stray rather than dropped silently. */
void remedy_kind_set_plan(const char *name, const struct remedy_plan *plan);
/* The plan registered for the kind NAME, NULL when none is. */
const struct remedy_plan *remedy_kind_plan(const char *name);
/* The I-th name registered that the table lacks or that was registered twice, NULL past the last. */
const char *remedy_plan_stray(size_t i);

/* All kind names, space-separated, for error messages. */
char *remedy_kind_names(void);
