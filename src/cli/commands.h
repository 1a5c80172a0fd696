/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One command per cmd-*.c file; main.c lists them in command_table. */
#pragma once

#include "cli/cli.h"

extern const struct command cmd_facts;
extern const struct command cmd_audit;
extern const struct command cmd_recommend;
extern const struct command cmd_profiles;
extern const struct command cmd_profile;
extern const struct command cmd_explain;
extern const struct command cmd_lint;
extern const struct command cmd_apply;
extern const struct command cmd_plan;
extern const struct command cmd_rollback;
extern const struct command cmd_log;
extern const struct command cmd_verify;
extern const struct command cmd_ack;   /* and cmd_unack: cmd-ack.c */
extern const struct command cmd_unack;
extern const struct command cmd_exec;
extern const struct command cmd_affinity;
extern const struct command cmd_baseline;
extern const struct command cmd_nccl;
extern const struct command cmd_report;
extern const struct command cmd_health_check;
extern const struct command cmd_gather;
