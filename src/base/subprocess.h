/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Run a program and capture what it writes: the one spawn-and-capture of llmtune (gather's
 * nvidia-smi and nv-fabricmanager captures, health-check's scontrol, report's audit of an archive).
 * No shell: ARGV as it stands. Standard input is /dev/null.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum spawn_stderr {
        SPAWN_STDERR_INHERIT, /* passed through to ours */
        SPAWN_STDERR_NULL,    /* thrown away */
        SPAWN_STDERR_CAPTURE, /* kept in spawn_result.err */
};

struct spawn_opts {
        const char *path;        /* the program; NULL: argv[0], searched in PATH */
        char *const *argv;
        unsigned timeout_ms;     /* 0: wait as long as it runs; else killed (SIGKILL) after it */
        size_t cap;              /* bytes kept of each captured stream; 0: no limit */
        bool cap_kills;          /* output past CAP kills it (-EFBIG); else the rest is read and dropped */
        enum spawn_stderr err;
};

struct spawn_result {
        int status;              /* as waitpid(2) gives it */
        char *out, *err;         /* NUL-terminated (err NULL unless captured) */
        size_t out_len, err_len;
};

/* Returns 0 (*ret filled: the program ran, whatever its status; spawn_result_done releases it),
 * or -errno when it could not be started, -ETIMEDOUT or -EFBIG (it was killed; *ret empty). */
int spawn_capture(const struct spawn_opts *o, struct spawn_result *ret) __attribute__((warn_unused_result));
void spawn_result_done(struct spawn_result *r);

