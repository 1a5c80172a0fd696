/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plan: what apply would change, as data. Failing audit results become an ordered list of
 * changes, each with its rule, target, before and after. A remedy yields the persistent change in
 * the standard place for it (sysctl.d, tmpfiles.d, modprobe.d, fstab behind a marker, masked
 * generators, /etc/nccl.conf) and the runtime change beside it; what cannot be done safely at
 * runtime is a note ("reboot required", "manual step") with the exact command.
 */
#pragma once

#include <sys/types.h>

#include "apply/change-kinds.h"
#include "engine/engine.h"
#include "facts/facts.h"
#include "base/ini-load.h"
#include "engine/profiles.h"

/* The kinds of change, in change-kinds.h's order: what each is, and how it is made, undone, read
 * back and shown, is its module's (change-kind.h, src/apply/change-*.c). */
#define CHANGE_KIND_ENUM(e, module) CHANGE_##e,
enum change_type { CHANGE_KINDS(CHANGE_KIND_ENUM) };
#undef CHANGE_KIND_ENUM

struct change {
        char *rule;
        enum change_type type;
        char *target;         /* path under the root; swap device; mount point; command label */
        char *before, *after; /* what they are is the kind's (change-NAME.c); NULL: absent (files, links) */
        char *aux;            /* SWAP: /proc/swaps line; NOTE: the text */
        mode_t mode;          /* FILE: mode of a new file (existing files keep theirs) */
        struct strv mkdirs;   /* FILE/SYMLINK: parent directories that do not exist yet, outermost first */
        struct strv argv;     /* COMMAND */
        struct strv undo;     /* COMMAND: how to reverse it (empty: cannot be undone by llmtune) */
        bool reboot;          /* NOTE: a reboot is required */
};

struct plan {
        struct change *v;
        size_t n;
};

/* A file apply writes before the remedies' changes, in the same run (logged, undone with it):
 * the site profile of `apply --param` and the pin of `--pin`. RULE labels its records; it is one
 * of the PLAN_RULE_* names, which no rule can have (rule ids have no '.'). */
struct plan_setup_file {
        const char *rule, *path, *content;
};
#define PLAN_RULE_PARAMS "profile.params"
#define PLAN_RULE_PIN "profile.pin"
/* Is RULE one of the labels above (a record of the run's setup, not of a rule)? */
bool plan_rule_is_setup(const char *rule);

/* Build the plan: the N_SETUP setup files first, then the failing results of A. Unplannable
 * remedies become notes. */
int plan_build(struct plan *p, const struct audit *a, struct facts *f, const struct resolved *profile,
               const struct plan_setup_file *setup, size_t n_setup);
void plan_done(struct plan *p);
void change_done(struct change *c);
const char *change_type_name(enum change_type t);
int change_type_parse(const char *s, enum change_type *ret);

/* Would this command run here? On the live system when it is one of llmtune's commands
 * (command.h); under a foreign root only tune2fs on an image file inside the tree that is a regular
 * file with one link reached without links. The planner turns the others into steps for the live
 * system; actions run only what this allows. */
bool plan_command_runs(struct root *r, const struct strv *argv);


/* Number of changes that would alter the machine (notes excluded). */
size_t plan_changes(const struct plan *p);
