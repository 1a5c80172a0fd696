/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The change log's head file, CHANGELOG_HEAD: "SEQ:HASH\n" of the last record, replaced after each
 * append. The chain proves nothing about the log's end (cutting the last records leaves a valid
 * chain); the head file does: a log that ends before the record it names, or holds that record with
 * another hash, was cut. Read and judged here for both changelog_open and changelog_read.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "apply/changelog-internal.h"

/* Read the head file: 0 with SEQ and HASH, -ENOENT when there is none, -EBADMSG when it is not
 * exactly "SEQ:HASH\n", or the trust checks' refusal. */
int log_head_read(struct root *r, long *ret_seq, char ret_hash[65], char **why)
{
        *ret_seq = 0;
        ret_hash[0] = '\0';
        _cleanup_close_ int fd = log_open_trusted(r, CHANGELOG_HEAD, O_RDONLY, 0, true, why);
        if (fd < 0)
                return fd;
        char buf[128];
        ssize_t n;
        do
                n = read(fd, buf, sizeof(buf) - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        char *colon = strchr(buf, ':'), *end;
        if (!colon || n != (colon - buf) + 1 + 64 + 1 || buf[n - 1] != '\n' || !isdigit((unsigned char)buf[0]))
                return -EBADMSG;
        errno = 0;
        long seq = strtol(buf, &end, 10);
        buf[n - 1] = '\0';
        if (errno || end != colon || seq <= 0 || !sha256_hex_valid(colon + 1))
                return -EBADMSG;
        *ret_seq = seq;
        memcpy(ret_hash, colon + 1, 65);
        return 0;
}

/* Replace the head file with SEQ:HASH: a temporary file, fsync, rename, fsync of the directory. */
int log_head_write(struct root *r, long seq, const char *hash)
{
        _cleanup_free_ char *line = xasprintf("%ld:%s\n", seq, hash);
        return root_write_file(r, CHANGELOG_HEAD, line, strlen(line), 0644);
}

/*
 * Judge the log's end against the head file. HEAD_RC: read_head's result; LOG_EXISTS: the log file
 * is there; END_SEQ/END_HASH: its last record; AT_HEAD: the stored hash of the log's record
 * HEAD_SEQ (NULL: the log holds no such record); HAS_RUNS: the log has "run-begin" records, which
 * only an llmtune that keeps the head file writes.
 */
void log_head_judge(int head_rc, long head_seq, const char *head_hash, bool log_exists, long end_seq,
                       const char *end_hash, const char *at_head, bool has_runs, struct head_view *v)
{
        *v = (struct head_view){.state = "ok"};
        if (head_rc == -ENOENT) {
                if (end_seq == 0 && !log_exists)
                        v->state = "none";
                else if (has_runs && end_seq == 1) {
                        /* The head file is first written after record 1: a run killed between the two. */
                        v->state = "behind";
                        v->note = xasprintf("the log holds one record and no head file %s yet: a run stopped "
                                            "between its first record and the head file; the next apply or "
                                            "rollback writes it",
                                            CHANGELOG_HEAD);
                } else if (has_runs) {
                        v->state = "missing";
                        v->problem = xasprintf("the head file %s is missing, but the log was written by an llmtune "
                                               "that keeps it (it has run-begin records): it was deleted, and "
                                               "records after record %ld may have been cut off",
                                               CHANGELOG_HEAD, end_seq);
                } else if (end_seq == 0) {
                        v->state = "none";
                } else {
                        v->state = "absent";
                        v->note = xasprintf("the log has no head file %s (it was written by an older llmtune): "
                                            "the next apply or rollback creates it; until then a cut at the "
                                            "log's end cannot be seen (verify --expect-head can)",
                                            CHANGELOG_HEAD);
                }
                return;
        }
        if (head_rc < 0) {
                v->state = "damaged";
                v->problem = xasprintf("the head file %s is damaged (not SEQ:HASH): the log's end cannot be checked",
                                       CHANGELOG_HEAD);
                return;
        }
        if (!log_exists) {
                v->state = "cut";
                v->problem = xasprintf("the change log %s is missing, but its head file names record %ld (hash "
                                       "%.16s...): the log was deleted",
                                       CHANGELOG_PATH, head_seq, head_hash);
        } else if (head_seq > end_seq) {
                v->state = "cut";
                v->problem = end_seq ? xasprintf("the log ends at record %ld, but its head file names record %ld: "
                                                 "records %ld to %ld were cut off (the log was truncated)",
                                                 end_seq, head_seq, end_seq + 1, head_seq)
                                     : xasprintf("the log is empty, but its head file names record %ld: records 1 "
                                                 "to %ld were cut off (the log was truncated)",
                                                 head_seq, head_seq);
        } else if (!at_head) {
                v->state = "cut";
                v->problem = xasprintf("the log holds no record %ld, the one its head file names: it was cut or "
                                       "rewritten",
                                       head_seq);
        } else if (!streq(at_head, head_hash)) {
                v->state = "replaced";
                v->problem = xasprintf("record %ld has hash %.16s..., but the head file names it with hash "
                                       "%.16s...: the log's end was rewritten",
                                       head_seq, at_head, head_hash);
        } else if (head_seq == end_seq - 1) {
                v->state = "behind";
                v->note = xasprintf("the head file names record %ld, one before the log's last (%.16s...): a run "
                                    "stopped between appending a record and updating the head; the next apply "
                                    "or rollback brings it up to date",
                                    head_seq, end_hash);
        } else if (head_seq < end_seq) {
                v->state = "appended";
                v->problem = xasprintf("records %ld to %ld follow the head file's record %ld: they were appended "
                                       "by something other than llmtune (which updates the head with each record)",
                                       head_seq + 1, end_seq, head_seq);
        }
}

/* The stored hash of record SEQ in the log DATA, looked for from the end. */
bool log_head_find(const char *data, size_t len, long seq, char out[65])
{
        size_t end = len;
        while (end > 0) {
                size_t stop = end - 1; /* the newline ending the line */
                size_t start = stop;
                while (start > 0 && data[start - 1] != '\n')
                        start--;
                json_object *o = log_parse_line(data + start, stop - start);
                long s = o ? log_field_seq(o, "seq") : 0;
                json_object_put(o);
                if (s == seq)
                        return log_line_hash_ok(data + start, stop - start, out), out[0] != '\0';
                if (s > 0 && s < seq)
                        return false;
                end = start;
        }
        return false;
}

