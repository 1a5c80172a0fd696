/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Audit results for the systems that watch a fleet: Prometheus' text exposition format (for
 * node_exporter's textfile collector) and a node-feature-discovery local feature file (Kubernetes
 * node labels). Rendering only; cmd-audit.c runs the audit and chooses.
 */
#pragma once

#include <stdio.h>
#include <time.h>

#include "engine/engine.h"
#include "facts/facts.h"
#include "apply/verify.h"

struct audit_export {
        const char *profile;          /* resolved profile name */
        const char *selected;         /* "detected" or "option" */
        const struct audit *audit;
        struct timespec started;      /* wall clock when the audit began */
        double duration;              /* seconds: facts read and rules evaluated */
        const struct verify_state *log; /* NULL: the change log could not be read */
        int log_err;                  /* -errno when log is NULL */
};

/* Prometheus text exposition format 0.0.4: one series per rule, counts per status and per
 * severity, the audit's time and duration, the change log's verify state and last apply. */
void audit_print_prometheus(FILE *out, const struct audit_export *x);

/* node-feature-discovery feature file: name=value lines (labels under
 * feature.node.kubernetes.io/): profile, audit result, GPU model and count, IB rate. Facts that
 * cannot be read give no label (and a comment saying why), never a made-up value. */
void audit_print_nfd(FILE *out, const struct audit_export *x, struct facts *f);

/* Escape a Prometheus label value: backslash, double quote and newline escaped; other control
 * characters and bytes that are not UTF-8 become '?'. Caller frees. */
char *prom_label_escape(const char *s);

/* A Kubernetes label value: at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric;
 * runs of other characters become one '-'. "" when nothing is left. Caller frees. */
char *nfd_label_value(const char *s);

/* Write what RENDER prints to PATH atomically: a temporary file in the same directory, synced,
 * mode 0644, renamed over PATH (readers such as node_exporter never see half a file).
 * Returns 0 or -errno; RENDER's write errors are -EIO. */
int write_file_atomic(const char *path, void (*render)(FILE *out, void *ud), void *ud);
