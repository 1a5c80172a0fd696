/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the rule commands share: finding the data directory, loading rules and profiles, and
 * choosing a profile (by --profile NAME|FILE or by auto-detection). */
#pragma once

#include "cli/cli.h"
#include "engine/engine.h"
#include "engine/profiles.h"
#include "engine/rules.h"

struct rule_env {
        struct ruleset rules;
        struct profile_lib lib;
        struct resolved profile; /* after cli_pick_profile */
        char *picked_why;        /* "selected with --profile", "pinned in ...", or the match reasons */
        bool auto_picked;
        const char *source;      /* how it was chosen: "option", "config" or "detected" */
};

/* Directory holding rules/ and profiles/: $LLMTUNE_DATADIR, the source tree for an uninstalled
 * build, or the installed share directory. */
const char *cli_data_dir(void);

/* A fact store on the --root handle, told where llmtune's data (the NCCL catalog) lives. */
struct facts *cli_facts_new(struct cli *cli);
/* For _cleanup_(facts_freep). */
static inline void facts_freep(struct facts **f) { *f = facts_free(*f); }

/* Load rules and profiles; prints diagnostics and returns EXIT_ERROR on any problem. */
int cli_load_env(struct cli *cli, struct rule_env *env);
/* The same, keeping going past problems: what loaded is in ENV, the problems in D (lint). */
void cli_load_env_diags(struct cli *cli, struct rule_env *env, struct diags *d);
/* Resolve --profile (NAME or path to a .ini), else the profile pinned in the site configuration
 * (SITE_CONFIG_PATH), else detect one from FACTS. */
int cli_pick_profile(struct cli *cli, struct rule_env *env, const char *wanted, struct facts *f);
/* What every command that judges a machine by a profile begins with: load the rules and profiles
 * (cli_load_env), then choose the profile (cli_pick_profile). EXIT_OK, or the status of the step
 * that failed, said on stderr. */
int cli_load_profile(struct cli *cli, struct rule_env *env, const char *wanted, struct facts *f);
/* Detection could not decide (profile_detect returned -EIO, WHY says what was unreadable): says
 * so and returns EXIT_UNKNOWN. */
int cli_detect_failed(const char *why);
void rule_env_done(struct rule_env *env);
/* The acknowledgements in the change log under the root applied to A (apply/ack.h): acked failures
 * become RES_ACKED. A log that cannot be read is said on stderr, and A's failures stay failures. */
void cli_judge_acks(struct cli *cli, struct audit *a);
/* This run's counter readings saved as the next run's baseline (facts/probes/counters.h); a
 * failure is said on stderr (a gathered archive or topology export is read-only: nothing to say). */
void cli_record_counters(struct cli *cli, struct facts *f);
/* The getopt values of --timeout and --rule-timeout, and their entries for a long option table. */
enum { CLI_OPT_TIMEOUT = 0x1000, CLI_OPT_RULE_TIMEOUT };
#define CLI_LIMIT_OPTIONS                                                                                            \
        {"timeout", required_argument, NULL, CLI_OPT_TIMEOUT}, {"rule-timeout", required_argument, NULL, CLI_OPT_RULE_TIMEOUT}
/* --timeout or --rule-timeout (getopt's C) SECONDS into L: 0, or EXIT_ERROR after saying why. */
int cli_parse_limit(int c, const char *arg, struct engine_limits *l);
/* The run's time (--timeout) counts from START_NS (deadline_now_ns at the command's start): the
 * reads of the machine, profile detection included, and the rules (engine_run_limited). The
 * verdict is reported whatever is left: cli_limits_end lifts the bound before the acks are read,
 * the counters recorded and the result printed. */
void cli_limits_start(const struct engine_limits *l, uint64_t start_ns);
void cli_limits_end(void);
/* Print and clear diagnostics; returns EXIT_ERROR when there were any. */
int cli_report_diags(struct diags *d);
