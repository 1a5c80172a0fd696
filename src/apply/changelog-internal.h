/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the change log's files share and nothing else uses: changelog.c (opening, appending,
 * locking), changelog-head.c (the head file), changelog-read.c (reading back and checking the
 * chain) and backup-store.c (file contents and long values kept by hash). The format itself is
 * described at the top of changelog.c.
 */
#pragma once

#include <json-c/json.h>
#include <sys/types.h>

#include "apply/changelog.h"
#include "base/digest.h"
#include "base/json-doc.h"
#include "base/util.h"

#define BACKUP_DIR CHANGELOG_DIR "/backups"

/* The "prev" of the first record. */
#define LOG_ZERO_HASH "0000000000000000000000000000000000000000000000000000000000000000"

/* How a run-begin record's event field reads in the log's bytes: a log that has one was written by
 * an llmtune that keeps the head file. */
#define RUN_BEGIN_KEY "\"event\":\"run-begin\""

/* Why a file of the log was refused, into *WHY (WHY may be NULL; what it held is replaced: the
 * caller frees it); returns CODE. The reason travels with the error, never through a buffer that
 * a later error could be told with. */
int log_refuse(char **why, int code, const char *fmt, ...) _printf_(3, 4);

/* Open PATH under R as a file of the log: with STRICT, refused (log_refuse into *WHY) unless the
 * trust checks pass; without (the lock), only the kind of file is checked. Returns the fd or -errno. */
int log_open_trusted(struct root *r, const char *path, int flags, mode_t mode, bool strict, char **why);
/* The log's directory and its backups directory pass the trust checks (missing ones do). 0 or -errno
 * (a refusal's reason into *WHY). */
int log_check_dirs(struct root *r, char **why);

/* All of FD (a log file, at most CHANGELOG_READ_MAX bytes, else -EFBIG) into *RET (NUL-terminated,
 * caller frees) and *RET_LEN. 0 or -errno. */
int log_read_whole(int fd, char **ret, size_t *ret_len);
/* One line (LEN bytes, no newline) strictly as a JSON object and nothing after it; NULL when not. */
json_object *log_parse_line(const char *s, size_t len);
/* Whether LINE (N bytes, no newline) hashes to the hash it stores, which goes into STORED ("" when
 * the line does not end in a hash field as changelog_append writes it). */
bool log_line_hash_ok(const char *line, size_t n, char stored[65]);
/* A record's number field ("seq", "ref": 0 when missing or out of range); its string fields are
 * json_doc_str's. */
long log_field_seq(json_object *o, const char *key);

/* ---- the head file (changelog-head.c) ---- */

struct head_view {
        const char *state; /* see struct log_read */
        char *problem;     /* the log was cut (or the head is damaged): what is missing */
        char *note;        /* not a problem: what it means */
};

/* Read the head file: 0 with SEQ and HASH, -ENOENT when there is none, -EBADMSG when it is not
 * exactly "SEQ:HASH\n", or the trust checks' refusal. */
int log_head_read(struct root *r, long *ret_seq, char ret_hash[65], char **why);
/* Replace the head file with SEQ:HASH, atomically. 0 or -errno. */
int log_head_write(struct root *r, long seq, const char *hash);
/* Judge the log's end against the head file into *V (see changelog-head.c). */
void log_head_judge(int head_rc, long head_seq, const char *head_hash, bool log_exists, long end_seq,
                    const char *end_hash, const char *at_head, bool has_runs, struct head_view *v);
/* The stored hash of record SEQ in the log DATA (LEN bytes) into OUT, looked for from the end;
 * false when the log holds no such record. */
bool log_head_find(const char *data, size_t len, long seq, char out[65]);
