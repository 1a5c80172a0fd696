/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fleet report output: terminal table, CSV, JSON and a self-contained HTML page (cmd-report.c). */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "report/report.h"

/* Summary, failing rules (most hosts first) with their hosts, host groups with their findings. */
void report_print_table(FILE *out, const struct report *rp);

/* RFC 4180 CSV: one row per rule (by_host false) or one row per host (by_host true). */
void report_print_csv(FILE *out, const struct report *rp, bool by_host);

/* Everything: rules with counts and hosts, groups with findings, hosts with per-rule status. */
void report_print_json(FILE *out, const struct report *rp);

/* One HTML page, no external assets (inline CSS, no scripts): the summary, the failing rules,
 * the groups and <table id="grid">: a row per host, a column per rule, a cell of class
 * "cell pass|fail|na|error|missing". */
void report_print_html(FILE *out, const struct report *rp);
