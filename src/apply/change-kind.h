/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A kind of change (a file, a link, a runtime value, ...) is a module: src/apply/change-NAME.c
 * defines one struct change_kind with designated initialisers, and change-kinds.h lists it (the
 * way pciutils' access methods are one file each, listed in pci_methods[]). apply, rollback,
 * recovery, verify and every command that shows a change ask the kind; none of them names one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "apply/change-kinds.h"
#include "apply/plan.h"
#include "base/root.h"

struct json_object;

struct change_kind {
        const char *name; /* in the change log, the JSON records and messages: "file", "symlink", ... */

        /* What a change of the kind is. */
        bool content;       /* before/after are a file's contents: kept in the backup store by hash,
                             * shown as a diff, in a table by length and hash */
        bool grouped;       /* many changes alike (a value per CPU: same rule, before and after) are
                             * shown as one line with the first and last target and a count */
        bool reported_only; /* never carried out (a reboot or a manual step): no target changes */
        bool in_etc;        /* its target is a file or link in /etc: chattr flags on it or on its
                             * directory can forbid it, and it may make its parents (mkdirs) */

        /* Where it may write (ALLOWED; AREA in the refusal) and what else its record must satisfy
         * (CHECK; NULL: nothing). Asked for every change, from the plan or from the log. */
        bool (*allowed)(const char *target);
        const char *area;
        int (*check)(const struct change *c, char **why);
        /* What carrying it out would refuse, found without writing (action_foresee); NULL: only
         * CHECK. TARGET_PLANNED: an earlier change of the plan changes the target. */
        int (*foresee)(struct root *r, const struct change *c, bool target_planned, char **why);

        /* Made and reversed: 0, 1 (skipped: a command under a foreign root, nothing to undo), or
         * -errno with *err. */
        int (*apply)(struct root *r, const struct change *c, char **err);
        int (*undo)(struct root *r, const struct change *c, char **err);
        /* Can llmtune reverse C at all? NULL: always. */
        bool (*undoable)(const struct change *c);
        /* A runtime state a boot sets up from a source of its own (a swap area): is RC, the undo's
         * failure, that state not being set up in this boot? NULL: no such state. */
        bool (*not_set_up)(int rc);

        /* The target's state in the terms of before/after (CURRENT; NULL: it has none, a command or
         * a note), compared with one of them (EQUAL; NULL: as strings), and shown in a message
         * (DESCRIBE; NULL: as it is). */
        int (*current)(struct root *r, const struct change *c, char **ret);
        bool (*equal)(const struct change *c, const char *current, const char *want);
        char *(*describe)(const char *state);
        /* Remove what an interrupted change of it leaves beside its target (temporary files). */
        void (*leftovers)(struct root *r, const struct change *c);

        /* Shown. SECTIONS: plan's headings for the kind, in the order shown, and which one a change
         * goes under (SECTION; NULL: the first); none: shown otherwise (a file as its diff). LINE:
         * plan's line for a change (NULL: "target: before -> after"). LABEL: what a one-line report
         * names (NULL: the target; it may return NULL: nothing to name). SHORT_FORM: a state in a
         * table cell (NULL: one line of at most 40 characters, "-" when absent); SHA is the state's
         * hash when the log has one. STATUS: what apply and plan report for a change they do not
         * carry out (NULL: "planned"). JSON: the kind's own fields of a JSON record. */
        const char *sections[2];
        unsigned (*section)(const struct change *c);
        char *(*line)(const struct change *c);
        char *(*label)(const struct change *c);
        char *(*short_form)(const struct change *c, const char *state, const char *sha);
        const char *(*status)(struct root *r, const struct change *c);
        void (*json)(const struct change *c, struct json_object *o);
};

#define CHANGE_KIND_DECLARE(e, module) extern const struct change_kind change_kind_##module;
CHANGE_KINDS(CHANGE_KIND_DECLARE)
#undef CHANGE_KIND_DECLARE

/* The kinds in the table's order (NULL past the last), and the kind of C (NULL: a type no kind has). */
const struct change_kind *change_kind_at(size_t i);
const struct change_kind *change_kind_of(const struct change *c);

/* The heading of the plan section C goes under, and its index in its kind's SECTIONS; NULL when the
 * kind has none. */
const char *change_section(const struct change *c, unsigned *index);
/* Plan's line for C, without the rule. The caller frees. */
char *change_line(const struct change *c);
/* What a one-line report names C by: a path, a command line, a note's text; NULL: nothing. */
char *change_label(const struct change *c);
/* STATE (C's before or after) in a table cell; SHA its hash when the log has one. */
char *change_short_form(const struct change *c, const char *state, const char *sha);
/* The default of the above: one line, newlines and tabs as spaces, at most 40 characters then "...";
 * "-" when absent. */
char *change_short_line(const char *state);
/* What plan (and a dry run) reports for C: "planned", or a kind's word for a change not carried out
 * here ("reboot-required", "manual", "skipped"). */
const char *change_plan_status(struct root *r, const struct change *c);
/* Can llmtune reverse C (a command without an undo command cannot)? */
bool change_undoable(const struct change *c);
/* Has C states, a before and an after that its target shows (not a command or a note)? */
bool change_has_states(const struct change *c);
/* Add C's kind's own fields to the JSON record O (a command line, a note's text). */
void change_json_fields(const struct change *c, struct json_object *o);
