/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The command-line layer: the command table, global options, and what every command shares. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "base/root.h"

struct site_config;

/* Exit statuses, documented in the README and in --help. */
enum {
        EXIT_OK = 0,
        EXIT_ERROR = 1,    /* usage, unreadable input, failed action */
        EXIT_FINDINGS = 2, /* audit found deviations; verify found drift; plan --exit-code: changes */
        EXIT_UNKNOWN = 3,  /* could not evaluate: a fact a rule or a profile's [match] needs is unreadable */
};

struct cli {
        const char *root_path; /* --root, default "/" */
        struct root *root;     /* opened on first use by cli_root() */
        bool root_force;       /* --root-force: take a --root that does not look like a machine */
        bool color;            /* stdout is a terminal, NO_COLOR unset, TERM set and not dumb */
        struct site_config *config; /* ROOT/etc/llmtune/llmtune.conf, read on first use by cli_config() */
};

struct command {
        const char *name;
        const char *summary; /* one line, for the command list */
        const char *usage;   /* full help text of `llmtune NAME --help` */
        int (*run)(struct cli *cli, int argc, char **argv);
};

/* The root handle for --root; prints the error and returns NULL when it cannot be opened, or when
 * a --root other than "/" does not look like a Linux root (see cli_root_is_machine) and
 * --root-force was not given. */
struct root *cli_root(struct cli *cli);

/* For commands that change a tree (apply, rollback): the root must also have etc/ (unless
 * --root-force). Prints the error; false when refused. */
bool cli_root_can_change(struct cli *cli, struct root *r);

/* The site configuration (pinned profile, option defaults) of the --root; prints the problems
 * and returns NULL when it cannot be read or is invalid. */
const struct site_config *cli_config(struct cli *cli);

/* "llmtune: " + message on stderr; returns EXIT_ERROR for `return cli_error(...)`. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* SECONDS ("5", "0.25": at most millisecond precision, no locale) as milliseconds in
 * 1..DEADLINE_MAX_MS; -EINVAL otherwise. */
int cli_parse_seconds(const char *s, unsigned *ret_ms);

/* The exit status of a run that gives up on a read that never answered (default EXIT_ERROR; a
 * health check's is its own "could not check"). */
void cli_set_give_up_status(int status);

/* After getopt reported a bad option: point to `llmtune COMMAND --help`; returns EXIT_ERROR. */
int cli_usage_error(const char *command);

/* The options of a command whose only option is --json (-j): *json set, 0, or EXIT_ERROR after a
 * bad option (getopt said what, and where --help is). optind is left at the first operand. */
int cli_json_only(int argc, char **argv, const char *command, bool *json);

/* True when argv[i] is -h/--help; prints the command's usage. */
bool cli_wants_help(const struct command *cmd, int argc, char **argv);

/* Colour escape when enabled, "" otherwise. */
const char *cli_color(const struct cli *cli, const char *code);

extern const struct command *const command_table[];
