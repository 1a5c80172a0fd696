/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * verify's judgement: see verify.h. Like tuned's verify (re-read and compare each tunable), but
 * against the log on disk rather than a daemon's memory, and per target.
 */
#include "apply/verify.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apply/actions.h"
#include "apply/change-kind.h"
#include "apply/diff.h"
#include "base/digest.h"
#include "facts/readers/dropin-order.h"
#include "facts/facts.h"

static const char *const check_names[CHECK_STATUS_MAX] = {"ok", "drift", "not-checkable", "error"};

const char *verify_check_name(enum verify_check_status s) { return s < CHECK_STATUS_MAX ? check_names[s] : "?"; }

const char *const verify_state_names[] = {"clean", "drift", "unfinished", "tampered", "error", NULL};

const char *verify_status(bool tampered, size_t unfinished, size_t drifted, size_t errors)
{
        return tampered ? "tampered" : unfinished ? "unfinished" : drifted ? "drift" : errors ? "error" : "clean";
}

static char *describe_file(const char *content)
{
        if (!content)
                return xstrdup("absent");
        char h[65];
        sha256_hex(content, strlen(content), h);
        return xasprintf("%zu bytes, sha256 %.12s", strlen(content), h);
}

static char *quote(const char *v) { return v ? xasprintf("'%s'", v) : xstrdup("absent"); }

/* llmtune's own drop-in, as written, must still decide its keys at boot: a file added since (a
 * vendor drop-in, a site's 99-*.conf) may win over it by its family's rule (dropin-order.h). True,
 * with CK's status drift or error, when it does not or when a file of its family cannot be read. */
static bool overridden_at_boot(struct root *root, const struct log_record *rec, struct verify_check *ck)
{
        const struct change *c = &rec->change;
        const char *base = change_kind_of(c)->content ? strrchr(c->target, '/') : NULL;
        _cleanup_free_ char *over = NULL;
        int rc = base && strstr(base, "llmtune") ? dropin_overridden(root, c->target, c->after, &over) : 0;
        if (rc < 0) {
                ck->status = CHECK_ERROR;
                ck->message = xasprintf("unreadable: whether %s (change %ld) still decides at boot is not known: %s",
                                        c->target, rec->seq, over);
        } else if (rc > 0) {
                ck->status = CHECK_DRIFT;
                ck->message = xasprintf("drift: %s (written by change %ld) no longer decides at boot: %s", c->target,
                                        rec->seq, over);
        }
        return rc != 0;
}

/* A file change that finds a symbolic link where its file was (a file-to-link replacement killed
 * half way, a site's own link): what is there is the link, never "a file holding the link's
 * description", which is how the file change's reader spells it for the comparison. NULL otherwise. */
static char *link_in_file_place(struct root *root, const struct change *c)
{
        struct stat st;
        char *t = NULL;
        if (change_kind_of(c)->content && root_stat(root, c->target, &st, false) == 0 && S_ISLNK(st.st_mode) &&
            root_readlink(root, c->target, &t) < 0)
                t = xstrdup("?");
        return t;
}

void verify_check_one(struct root *root, const struct log_record *rec, struct verify_check *ck)
{
        const struct change *c = &rec->change;
        ck->rec = rec;
        int rc = action_current(root, c, &ck->found);
        if (rc == -EOPNOTSUPP) {
                ck->status = CHECK_UNCHECKABLE;
                ck->message = xasprintf("not checkable (%s): %s", change_type_name(c->type), c->target);
                return;
        }
        if (rc < 0) {
                /* Something is there that cannot be read: not "absent", not "removed". */
                ck->status = CHECK_ERROR;
                ck->message = xasprintf("unreadable: %s is there but cannot be read (%s), so whether it is "
                                        "still as change %ld left it is not known",
                                        c->target, errno_name(-rc), rec->seq);
                return;
        }
        /* apply's own test (a mount's options compare as sets: the kernel orders them) */
        bool same = action_state_equal(c, ck->found, c->after);
        if (same && overridden_at_boot(root, rec, ck))
                return;
        if (same) {
                ck->status = CHECK_OK;
                ck->message = xasprintf("ok: %s", c->target);
                return;
        }
        ck->status = CHECK_DRIFT;
        ck->found_link = link_in_file_place(root, c);
        if (ck->found_link) {
                _cleanup_free_ char *e = describe_file(c->after);
                ck->message = xasprintf("drift: %s: expected %s (written by change %ld), found a symbolic link to %s",
                                        c->target, e, rec->seq, ck->found_link);
        } else if (change_kind_of(c)->content) {
                _cleanup_free_ char *e = describe_file(c->after), *f = describe_file(ck->found);
                ck->message = xasprintf("drift: %s: expected %s (written by change %ld), found %s", c->target, e,
                                        rec->seq, f);
                ck->diff = unified_diff(c->target, c->after, ck->found);
        } else {
                _cleanup_free_ char *e = quote(c->after), *f = quote(ck->found);
                ck->message = xasprintf("drift: %s: expected %s (set by change %ld), found %s", c->target, e, rec->seq, f);
        }
}

void verify_check_done(struct verify_check *ck)
{
        free(ck->found);
        free(ck->found_link);
        free(ck->message);
        free(ck->diff);
        *ck = (struct verify_check){0};
}

static char *unfinished_message(const struct log_record *rec)
{
        if (rec->event == LOG_RUN_BEGIN)
                return xasprintf("%s of run %s did not finish: it began at record %ld and has no run-end (killed "
                                 "or stopped, possibly between two changes)",
                                 rec->change.target ? rec->change.target : "run", rec->run ? rec->run : "?", rec->seq);
        bool undo = rec->event == LOG_UNDO_INTENT;
        return xasprintf("%s of run %s did not finish: change %ld (%s) is in an unknown state",
                         undo ? "rollback" : "apply", rec->run ? rec->run : "?", undo && rec->ref ? rec->ref : rec->seq,
                         rec->change.target ? rec->change.target : "?");
}

bool expect_head_parse(const char *s, struct expect_head *eh)
{
        const char *colon = strchr(s, ':');
        if (!colon || colon == s || strspn(s, "0123456789") != (size_t)(colon - s) || strlen(colon + 1) != 64)
                return false;
        errno = 0;
        eh->seq = strtol(s, NULL, 10);
        if (errno || eh->seq <= 0)
                return false;
        for (const char *p = colon + 1; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        memcpy(eh->hash, colon + 1, 65);
        eh->set = true;
        return true;
}

/* Does the log hold record SEQ with hash HASH? Its chain (checked apart) links every later record
 * to it, so a log that does was not cut before SEQ, whatever the files on the machine say. */
static void check_expected_head(const struct log_read *lr, struct expect_head *eh)
{
        const struct log_record *rec = NULL;
        for (size_t i = lr->n; i-- > 0 && !rec;)
                if (lr->v[i].seq == eh->seq)
                        rec = &lr->v[i];
        if (rec && streq(rec->hash, eh->hash)) {
                eh->found = true;
                return;
        }
        if (rec)
                eh->message = xasprintf("record %ld of the log has hash %.16s..., not the expected %.16s...: the "
                                        "log was rewritten from there on",
                                        eh->seq, rec->hash, eh->hash);
        else if (lr->n == 0)
                eh->message = xasprintf("the log holds no records, but record %ld (hash %.16s...) was expected: the "
                                        "log was deleted or emptied",
                                        eh->seq, eh->hash);
        else if (eh->seq > lr->end_seq)
                eh->message = xasprintf("the log ends at record %ld, but record %ld (hash %.16s...) was expected: "
                                        "records %ld to %ld were cut off",
                                        lr->end_seq, eh->seq, eh->hash, lr->end_seq + 1, eh->seq);
        else
                eh->message = xasprintf("the log holds no record %ld (hash %.16s...): it was cut or rewritten",
                                        eh->seq, eh->hash);
}

void verify_result_done(struct verify_result *v)
{
        for (size_t i = 0; i < v->n_ck; i++)
                verify_check_done(&v->ck[i]);
        free(v->ck);
        free(v->idx);
        free(v->unf_idx);
        free(v->eh.message);
        free(v->why);
        strv_done(&v->unfinished);
        log_read_done(&v->lr);
        *v = (struct verify_result){0};
}

/* The log into LR under a shared lock. */
static int read_log_shared(struct root *root, struct log_read *lr, const char **what, char **why)
{
        _cleanup_close_ int lock_fd = -1;
        int rc = changelog_lock_shared(root, true, &lock_fd);
        if (rc < 0) {
                *what = "lock";
                return rc;
        }
        rc = changelog_read(root, lr, why);
        *what = "log";
        return rc;
}

/* A drift on a target that an unfinished step of a later run was changing (a file replaced by a
 * link, killed between the two) is most likely that step's doing: say so with the drift. */
static void note_unfinished_on_target(struct verify_result *v, struct verify_check *ck)
{
        const char *target = ck->rec->change.target;
        for (size_t u = 0; u < v->unfinished.n; u++) {
                const struct log_record *rec = &v->lr.v[v->unf_idx[u]];
                if (rec->seq > ck->rec->seq && rec->event != LOG_RUN_BEGIN && rec->change.target &&
                    streq(rec->change.target, target)) {
                        char *m = xasprintf("%s (change %ld on the same target did not finish and may have made it)",
                                            ck->message, rec->seq);
                        free(ck->message);
                        ck->message = m;
                        return;
                }
        }
}

/* The unfinished steps, the check of every change in force against ROOT, and the status. */
static void verify_judge(struct root *root, struct verify_result *v)
{
        const struct log_read *lr = &v->lr;
        v->unf_idx = xcalloc(lr->n + 1, sizeof(size_t));
        for (size_t i = 0; i < lr->n; i++)
                if (!changelog_step_finished(lr, i)) {
                        v->unf_idx[v->unfinished.n] = i;
                        strv_push(&v->unfinished, unfinished_message(&lr->v[i]));
                }
        v->n_ck = changelog_in_force(lr, &v->idx);
        v->ck = xcalloc(v->n_ck + 1, sizeof(*v->ck));
        for (size_t i = 0; i < v->n_ck; i++) {
                verify_check_one(root, &lr->v[v->idx[i]], &v->ck[i]);
                if (v->ck[i].status == CHECK_DRIFT)
                        note_unfinished_on_target(v, &v->ck[i]);
                v->count[v->ck[i].status]++;
        }
        if (v->eh.set)
                check_expected_head(lr, &v->eh);
        v->cut = v->eh.set && !v->eh.found;
        v->status = verify_status(lr->n_problems || v->cut, v->unfinished.n, v->count[CHECK_DRIFT],
                                  v->count[CHECK_ERROR]);
}

int verify_run(struct root *root, struct verify_result *v, const char **what)
{
        int rc = read_log_shared(root, &v->lr, what, &v->why);
        if (rc < 0)
                return rc;
        verify_judge(root, v);
        return 0;
}

/* "2026-11-30T07:47:32Z" (the log's time format) as seconds since the epoch; 0 when malformed. */
static time_t log_time(const char *s)
{
        struct tm tm = {0};
        const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
        if (!end || *end)
                return 0;
        time_t t = timegm(&tm);
        return t < 0 ? 0 : t;
}

int verify_state_read(struct root *root, struct verify_state *ret)
{
        *ret = (struct verify_state){.status = "error"};
        _cleanup_(verify_result_done) struct verify_result v = {0};
        const char *what;
        int rc = verify_run(root, &v, &what);
        if (rc < 0)
                return rc;
        for (size_t i = 0; i < v.lr.n; i++)
                if (v.lr.v[i].event == LOG_DONE) {
                        time_t t = log_time(v.lr.v[i].time);
                        if (t > ret->last_apply)
                                ret->last_apply = t;
                }
        ret->records = v.lr.n;
        ret->chain_problems = v.lr.n_problems;
        ret->unfinished = v.unfinished.n;
        ret->in_force = v.n_ck;
        ret->drifted = v.count[CHECK_DRIFT];
        ret->uncheckable = v.count[CHECK_UNCHECKABLE];
        ret->check_errors = v.count[CHECK_ERROR];
        ret->status = v.status;
        return 0;
}
