/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fleet report: merge the `llmtune audit --json` outputs of many hosts (as Ansible's fetch
 * collects them) into one hosts x rules view: which rules fail on how many hosts and which,
 * and which hosts share the same findings. Parsing and aggregation only; cmd-report.c and
 * report-render.c print.
 */
#pragma once

#include <stddef.h>

#include "base/util.h"

/* A host's result for one rule. CELL_MISSING: the rule was not in that host's audit
 * (another profile, or --rule). The first four follow the audit's status names. */
enum cell { CELL_PASS, CELL_FAIL, CELL_NA, CELL_ERROR, CELL_ACKED, CELL_MISSING, CELL__COUNT };

/* "pass", "fail", "n/a", "error", "acked", "missing" */
const char *cell_name(enum cell c);
/* CSS class / CSV word: "pass", "fail", "na", "error", "acked", "missing" */
const char *cell_key(enum cell c);

struct report_rule {
        char *id, *title, *area, *severity; /* title/area/severity: from the first host that has them */
        size_t count[CELL__COUNT];           /* hosts per cell state */
};

struct report_cell {
        enum cell state;
        char *observed, *expected, *reason; /* may be NULL */
        char *severity;                      /* this host's severity for the rule (profiles may change it) */
};

struct report_host {
        char *name;      /* "host" of the audit JSON, else the file name without directory and .json */
        char *file;      /* the file it came from */
        char *profile;   /* may be NULL; "NAME (sha256:PREFIX)" when hosts on NAME differ in content */
        char *profile_hash; /* the resolved profile's SHA-256 from the audit, may be NULL */
        size_t group;    /* index into report.groups */
        size_t count[CELL__COUNT];
        struct report_cell *cells; /* one per report.rules, grown with them */
        size_t ncells;
};

/* Hosts alike: those with the same KEY (a report's: the findings, "rule=fail\n..." sorted, "" for
 * hosts without findings; a consistency check's: the signature of the facts it compares). */
struct host_group {
        size_t *hosts; /* indexes into the hosts grouped, in host order */
        size_t n;
        char *key;
};

/* Host I, whose key is KEY (taken), into its group of *GROUPS (*N of them), a new one at the end
 * when no group has KEY. */
void host_groups_add(struct host_group **groups, size_t *n, char *key, size_t i);
/* Largest first; of the same size, the one with the first host first. */
void host_groups_sort(struct host_group *groups, size_t n);
struct host_group *host_groups_free(struct host_group *groups, size_t n);

/* S with its control characters as '?': names end up on a terminal, and a crafted host name
 * must not move the cursor or change colours. Caller frees. */
char *report_clean(const char *s);
/* The host of an input FILE that names none: its name without directory and ".json", cleaned. */
char *report_name_from_file(const char *file);

struct report {
        struct report_host *hosts;
        size_t nhosts;
        struct report_rule *rules; /* in the order they first appear */
        size_t nrules;
        struct host_group *groups; /* findings alike, by size, largest first */
        size_t ngroups;
        size_t *by_failing; /* rule indexes: most failing hosts first (fail + error), then id */
};

/* Largest audit file read, so a stray binary cannot exhaust memory. */
#define REPORT_FILE_MAX (64u << 20)

/* Add one audit JSON document (text of length len) that came from `file`. Returns 0 (one host
 * more in the report); on bad input returns -EINVAL with *err set to a message (caller frees) and
 * the report is unchanged. */
int report_add_json(struct report *rp, const char *file, const char *text, size_t len, char **err)
        __attribute__((warn_unused_result));

/* Read `file` (at most REPORT_FILE_MAX bytes) and add it. Errors as above (-errno for I/O). */
int report_add_file(struct report *rp, const char *file, char **err);

/* After the last add: sort hosts by name, count, group, order rules by failures. Returns
 * -EEXIST with *err naming both files when two files carry the same host name. */
int report_finish(struct report *rp, char **err);

/* Number of hosts with at least one failing or unevaluable rule. */
size_t report_hosts_with_findings(const struct report *rp);

void report_done(struct report *rp);
