/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Rules are data: rules/NAME.ini, one [rule-id] section per rule (format in llmtune.rule(5) / README):
 *
 *   [thp-enabled]
 *   title = Transparent hugepages "enabled" is the profile's choice
 *   area = memory                       (any lowercase name: areas are data, grouped as they appear)
 *   severity = warning                  (or ${param}: the profile's value, checked when it resolves)
 *   rationale = ...
 *   source = Documentation/admin-guide/mm/transhuge.rst
 *   when = thp.enabled present          (any number; all must hold, else "not applicable")
 *   check = thp.enabled == ${thp_enabled}   (any number; all must hold)
 *   note_when = ${pcie_link_severity} == info   (any number; when all hold, a failing check is
 *                                        reported as a pass with a note: information, not a finding)
 *   remedy = sysfs
 *   remedy.path = /sys/kernel/mm/transparent_hugepage/enabled
 *   remedy.value = ${thp_enabled}
 *   evidence = critical_events          (facts beside each failing item that an ack records: when
 *                                        one grows, the acknowledged finding is raised again)
 */
#pragma once

#include "engine/expr.h"
#include "base/ini-load.h"

enum severity { SEV_INFO, SEV_WARNING, SEV_CRITICAL };

struct rule {
        char *id, *title, *area, *rationale, *source, *note;
        enum severity severity;
        char *severity_param;     /* "severity = ${name}": the profile's parameter decides (resolved_rule_enabled) */
        struct expr *when;
        size_t n_when;
        struct expr *checks;
        size_t n_checks;
        struct expr *note_when;   /* all hold: a failing check is a pass with a note, not a failure */
        size_t n_note_when;
        char *remedy;             /* kind name */
        struct strv remedy_keys;  /* parameter names ... */
        struct strv remedy_vals;  /* ... and raw values (may hold ${param}) */
        struct strv evidence;     /* "evidence = FIELD...": sibling facts of a failing item an ack records */
        char *file;
        unsigned line;
};

struct ruleset {
        struct rule *v;
        size_t n;
        size_t cap; /* allocated entries of v (grown geometrically by the loader) */
};

/* Load every *.ini of DIR (sorted) or one FILE into RS; errors go to D (file:line). */
int rules_load_dir(struct ruleset *rs, const char *dir, struct diags *d);
int rules_load_file(struct ruleset *rs, const char *path, struct diags *d);
/* Site rules: every *.ini of ROOT's /etc/llmtune/rules.d (sorted), read through the root handle with
 * the trust checks profiles.d gets (trust.h). A missing directory is no error. */
int rules_load_site(struct ruleset *rs, struct root *root, struct diags *d);
#define RULES_SITE_DIR "/etc/llmtune/rules.d"
/* The same for rules already in memory, NAME standing for the file (the fuzz target's way in). */
int rules_load_buffer(struct ruleset *rs, const char *name, const char *data, size_t len, struct diags *d);
void rules_done(struct ruleset *rs);

const struct rule *rules_find(const struct ruleset *rs, const char *id);
const char *severity_name(enum severity s);
int severity_parse(const char *s, enum severity *ret);
/* The parameters a rule needs from its profile. */
void rule_params(const struct rule *r, struct strv *ret);
/* Raw value of remedy parameter KEY, or NULL. */
const char *rule_remedy_param(const struct rule *r, const char *key);

/* The grammar of a rule id (a rule's section name, and what a profile, an ack or a consistency rule
 * names it by): one or more lowercase letters, digits and '-'. */
bool rule_id_valid(const char *s);
