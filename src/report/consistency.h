/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fleet consistency: the nodes of one job must agree on what NCCL and the drivers depend on.
 * Which facts must agree is data (rules/consistency.conf, ini syntax):
 *
 *   [nvidia-driver]
 *   title = NVIDIA driver version
 *   facts = nvidia.driver.version          (glob patterns over fact names, comma separated)
 *   ignore = ...                           (patterns of names left out; optional)
 *   why = ...                              (one paragraph: what breaks when it differs)
 *   source = ...                           (where that is documented)
 *
 * Input: the `llmtune facts --json` of each host, and optionally its `llmtune audit --json`, which
 * adds the pseudo-fact "profile" (the profile the audit used). For each check, every host's
 * matching facts (names and values, or absent/unreadable) form its signature; hosts are grouped
 * by signature, the largest group is the norm and every other host is named with the facts in
 * which it differs. No norm when the two largest groups are the same size. With a reference (the
 * facts a baseline recorded, cons_write_reference), its group is the norm whatever its size.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "base/ini-load.h"
#include "base/util.h"
#include "report/report.h"

struct cons_check {
        char *id, *title, *why, *source;
        struct strv facts, ignore; /* fnmatch patterns, no flags ('*' spans dots) */
        char *file;
        unsigned line;
};

struct cons_rules {
        struct cons_check *v;
        size_t n;
};

/* Load the checks of PATH; errors go to D (file:line). Returns 0 or -EINVAL/-errno. */
int cons_rules_load(const char *path, struct cons_rules *rs, struct diags *d);
void cons_rules_done(struct cons_rules *rs);

enum cons_state { CONS_OK, CONS_ABSENT, CONS_UNREADABLE };

struct cons_entry {
        char *name;
        enum cons_state state;
        char *value; /* CONS_OK: the value as text; otherwise the reason (may be NULL) */
};

struct cons_host {
        char *name;
        char *facts_file, *audit_file; /* where its facts and its profile came from (audit: may be NULL) */
        struct cons_entry *v;          /* facts some check needs, sorted by name */
        size_t n;
};

struct cons_result {
        const struct cons_check *check;
        struct host_group *groups; /* hosts of fleet.hosts with the same signature, largest first */
        size_t ngroups;
        bool norm;                 /* groups[0] is larger than groups[1] (or the only group) */
        size_t unreadable_hosts;   /* hosts whose facts for this check hold an unreadable one */
};

struct cons_fleet {
        const struct cons_rules *rules;
        struct cons_host *hosts;
        size_t nhosts;
        struct cons_result *results; /* one per check, after cons_finish */
        bool reference;              /* the host CONS_REFERENCE is a baseline (cons_add_reference), the
                                      * norm of every check it recorded; else the largest group is */
};

/* Add one facts --json or audit --json document from FILE (TEXT of LEN bytes). A host's facts and
 * audit are matched by the documents' "host" (else the file name without .json). Errors: -EINVAL
 * with *err set (caller frees), the fleet unchanged; -EEXIST for two facts (or audit) files of one
 * host. */
int cons_add_json(struct cons_fleet *fl, const char *file, const char *text, size_t len, char **err);
int cons_add_file(struct cons_fleet *fl, const char *file, char **err);

#define CONS_REFERENCE "reference"

/* A baseline (`llmtune baseline -o FILE`) as the host CONS_REFERENCE: its [facts] (values),
 * [facts-absent] and [facts-unreadable] (reasons) sections. cons_finish then makes the group holding
 * it the norm of every check it holds a fact of, whatever its size. -EINVAL with *err for a file
 * that cannot be read, holds none of them, or when a host of the input has its name. */
int cons_add_reference(struct cons_fleet *fl, const char *file, char **err);

/* The facts of V (a node's, N of them) as a reference: [facts] with the values, exact (a byte that
 * an ini value would not hold as itself, '%' included, is written %XX), [facts-absent] and
 * [facts-unreadable] with the reasons; a value longer than a line holds goes to [facts-unreadable]
 * saying so. What cons_add_reference reads back. */
void cons_write_reference(FILE *out, const struct cons_entry *v, size_t n);

/* Whether some check of RS compares the fact NAME (what a baseline records for the reference). */
bool cons_rules_want(const struct cons_rules *rs, const char *name);

/* Sort hosts, group them per check. -EINVAL with *err when a host has an audit but no facts. */
int cons_finish(struct cons_fleet *fl, char **err);

/* Checks that are not uniform (more than one group). */
size_t cons_not_uniform(const struct cons_fleet *fl);

void cons_print_table(FILE *out, const struct cons_fleet *fl);
void cons_print_json(FILE *out, const struct cons_fleet *fl);

void cons_fleet_done(struct cons_fleet *fl);
