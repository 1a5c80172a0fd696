/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Acknowledged findings in the change log (ack.h). */
#include "apply/ack.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json-doc.h"
#include "facts/json-out.h"

#define ACK_EVIDENCE_MAX 4096u /* entries kept in one record: beyond that the log would bloat */
#define ACK_VALUE_MAX 256u

/* --- reading --------------------------------------------------------------------------------------- */

static json_object *jobj(json_object *o, const char *key)
{
        json_object *v;
        return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_object) ? v : NULL;
}

int ack_parse_date(const char *s, time_t *ret)
{
        static const char *const formats[] = {"%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%MZ",
                                              "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
        for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
                struct tm tm = {0};
                const char *e = strptime(s, formats[i], &tm);
                if (e && !*e) {
                        *ret = timegm(&tm);
                        return 0;
                }
        }
        return -EINVAL;
}

char *ack_record_invalid(const struct log_record *rec)
{
        json_object *a = jobj(rec->json, "ack"), *ev;
        if (!a || !json_doc_str(a, "user"))
                return xstrdup("an ack record without its \"ack\" object or user");
        if (!rec->change.rule || !*rec->change.rule)
                return xstrdup("an ack record without its rule");
        if (rec->event == LOG_UNACK)
                return rec->ref > 0 ? NULL : xstrdup("an unack record that names no ack");
        if (!rec->detail || !*rec->detail)
                return xstrdup("an ack record without a reason");
        time_t t;
        const char *until = json_doc_str(a, "until");
        if (until && ack_parse_date(until, &t) < 0)
                return xasprintf("an ack record whose \"until\" is not a date: '%s'", until);
        if (!json_object_object_get_ex(a, "evidence", &ev) || !json_object_is_type(ev, json_type_array))
                return xstrdup("an ack record without its evidence");
        for (size_t i = 0; i < json_object_array_length(ev); i++) {
                json_object *e = json_object_array_get_idx(ev, i);
                if (!json_object_is_type(e, json_type_string) || !strchr(json_object_get_string(e), '='))
                        return xstrdup("an ack record whose evidence is not a list of NAME=VALUE");
        }
        return NULL;
}

static void ack_from_record(const struct log_record *rec, struct ack *k)
{
        json_object *a = jobj(rec->json, "ack"), *ev;
        *k = (struct ack){
                .seq = rec->seq,
                .time = xstrdup(rec->time ? rec->time : "?"),
                .user = json_doc_strdup(a, "user"),
                .rule = xstrdup(rec->change.rule),
                .item = rec->change.target ? xstrdup(rec->change.target) : NULL,
                .reason = xstrdup(rec->detail ? rec->detail : ""),
                .until = json_doc_strdup(a, "until"),
                .observed = json_doc_strdup(a, "observed"),
        };
        if (k->until && ack_parse_date(k->until, &k->until_t) < 0)
                k->until_t = 0;
        if (json_object_object_get_ex(a, "evidence", &ev) && json_object_is_type(ev, json_type_array))
                for (size_t i = 0; i < json_object_array_length(ev); i++)
                        strv_add(&k->evidence, json_object_get_string(json_object_array_get_idx(ev, i)));
}

void ack_list_from_log(const struct log_read *lr, struct ack_list *ret)
{
        *ret = (struct ack_list){0};
        for (size_t i = 0; i < lr->n; i++) {
                const struct log_record *rec = &lr->v[i];
                _cleanup_free_ char *why = rec->event == LOG_ACK || rec->event == LOG_UNACK ? ack_record_invalid(rec)
                                                                                            : NULL;
                if (why || (rec->event != LOG_ACK && rec->event != LOG_UNACK))
                        continue; /* verify reports a record that is not one llmtune writes */
                if (rec->event == LOG_ACK) {
                        ret->v = xrealloc(ret->v, (ret->n + 1) * sizeof(*ret->v));
                        ack_from_record(rec, &ret->v[ret->n++]);
                        continue;
                }
                for (size_t k = 0; k < ret->n; k++) {
                        struct ack *a = &ret->v[k];
                        if (a->seq != rec->ref || a->withdrawn || !streq(a->rule, rec->change.rule))
                                continue;
                        a->withdrawn = rec->seq;
                        a->withdrawn_by = json_doc_strdup(jobj(rec->json, "ack"), "user");
                        a->withdrawn_time = xstrdup(rec->time ? rec->time : "?");
                        a->withdrawn_why = rec->detail ? xstrdup(rec->detail) : NULL;
                }
        }
}

int ack_list_read(struct root *root, struct ack_list *ret, char **why)
{
        struct log_read lr;
        int rc = changelog_read(root, &lr, why);
        if (rc < 0) {
                *ret = (struct ack_list){0};
                return rc;
        }
        /* An edited, removed or forged record may be an ack: none of them is trusted then. */
        if (lr.n_problems) {
                log_read_done(&lr);
                *ret = (struct ack_list){0};
                return -EBADMSG;
        }
        ack_list_from_log(&lr, ret);
        log_read_done(&lr);
        return 0;
}

void ack_list_done(struct ack_list *l)
{
        for (size_t i = 0; i < l->n; i++) {
                struct ack *a = &l->v[i];
                free(a->time);
                free(a->user);
                free(a->rule);
                free(a->item);
                free(a->reason);
                free(a->until);
                free(a->observed);
                strv_done(&a->evidence);
                free(a->withdrawn_by);
                free(a->withdrawn_time);
                free(a->withdrawn_why);
        }
        free(l->v);
        *l = (struct ack_list){0};
}

const char *ack_state(const struct ack *a, time_t now)
{
        return a->withdrawn ? "withdrawn" : a->until_t && now >= a->until_t ? "expired" : "active";
}

bool ack_item_matches(const char *name, const char *item)
{
        size_t n = strlen(item);
        if (!n)
                return false;
        for (const char *p = strstr(name, item); p; p = strstr(p + 1, item))
                if ((p == name || p[-1] == '.') && (p[n] == '\0' || p[n] == '.'))
                        return true;
        return false;
}

/* --- judging --------------------------------------------------------------------------------------- */

/* The value an ack recorded for NAME, or NULL. */
static const char *recorded(const struct ack *a, const char *name, size_t len)
{
        for (size_t i = 0; i < a->evidence.n; i++)
                if (strncmp(a->evidence.v[i], name, len) == 0 && a->evidence.v[i][len] == '=')
                        return a->evidence.v[i] + len + 1;
        return NULL;
}

/* Has the evidence grown from THEN to NOW: a larger number, or any other change of text? */
static bool grew(const char *then, const char *now)
{
        bool tn, nn;
        uint64_t tm, nm;
        if (parse_rule_number(then, &tn, &tm) == 0 && parse_rule_number(now, &nn, &nm) == 0)
                return num_cmp(nn, nm, tn, tm) > 0;
        return !streq(then, now);
}

/* Does an active ack of ACKS (for RULE) cover evidence entry E ("NAME=VALUE")? *BEST: the newest that
 * does; else *WHY says why the ones that apply to it do not (first reason kept). */
static bool covered(const struct ack_list *acks, const char *rule, const char *e, time_t now, const struct ack **best,
                    char **why)
{
        size_t len = strcspn(e, "=");
        _cleanup_free_ char *name = xstrndup(e, len);
        for (size_t k = acks->n; k > 0; k--) {
                const struct ack *a = &acks->v[k - 1];
                if (!streq(a->rule, rule) || (a->item && !ack_item_matches(name, a->item)) || a->withdrawn)
                        continue;
                const char *then = recorded(a, e, len);
                char *w = NULL;
                if (streq(ack_state(a, now), "expired"))
                        w = xasprintf("ack %ld expired at %s", a->seq, a->until);
                else if (!then)
                        w = xasprintf("%s is new since ack %ld", name, a->seq);
                else if (grew(then, e + len + 1))
                        w = xasprintf("%s was %s at ack %ld, now %s", name, then, a->seq, e + len + 1);
                if (!w) {
                        if (!*best || a->seq > (*best)->seq)
                                *best = a;
                        return true;
                }
                if (*why)
                        free(w);
                else
                        *why = w;
        }
        return false;
}

static void judge_one(struct result *r, const struct ack_list *acks, time_t now)
{
        const struct ack *best = NULL;
        _cleanup_free_ char *why = NULL;
        size_t uncovered = 0;
        for (size_t i = 0; i < r->evidence.n; i++)
                uncovered += !covered(acks, r->rule->id, r->evidence.v[i], now, &best, &why);
        if (r->evidence.n && !uncovered) {
                r->status = RES_ACKED;
                r->ack_seq = best->seq;
                r->ack_note = xasprintf("acknowledged by %s at %s (change log record %ld): %s%s%s%s%s", best->user,
                                        best->time, best->seq, best->reason, best->until ? "; until " : "",
                                        best->until ? best->until : "", best->item ? "; item " : "",
                                        best->item ? best->item : "");
        } else if (why) {
                r->ack_note = xasprintf("raised again: %s", why);
                for (size_t k = acks->n; k > 0 && !r->ack_seq; k--)
                        if (streq(acks->v[k - 1].rule, r->rule->id))
                                r->ack_seq = acks->v[k - 1].seq;
        }
}

void ack_judge(struct audit *a, const struct ack_list *acks, time_t now)
{
        for (size_t i = 0; acks->n && i < a->n; i++) {
                struct result *r = &a->v[i];
                if (r->status != RES_FAIL)
                        continue;
                judge_one(r, acks, now);
                if (r->status == RES_ACKED) {
                        a->count[RES_FAIL]--;
                        a->count[RES_ACKED]++;
                }
        }
}

/* --- writing --------------------------------------------------------------------------------------- */

char *ack_who(void)
{
        struct passwd *pw = getpwuid(geteuid());
        const char *sudo = getenv("SUDO_USER");
        _cleanup_free_ char *me = pw ? xstrdup(pw->pw_name) : xasprintf("uid %u", (unsigned)geteuid());
        if (sudo && *sudo && !streq(sudo, me))
                return xasprintf("%s (sudo: %.64s)", me, sudo);
        return xstrdup(me);
}

static json_object *str_or_null(const char *s) { return s ? json_object_new_string(s) : NULL; }

long ack_append(struct changelog *l, const struct log_context *ctx, const struct result *res, const char *item,
                const char *reason, const char *until)
{
        json_object *ev = json_object_new_array();
        for (size_t i = 0; i < res->evidence.n && json_object_array_length(ev) < ACK_EVIDENCE_MAX; i++) {
                const char *e = res->evidence.v[i];
                _cleanup_free_ char *name = xstrndup(e, strcspn(e, "="));
                if (item && !ack_item_matches(name, item))
                        continue;
                _cleanup_free_ char *v = xstrndup(e, strlen(name) + 1 + ACK_VALUE_MAX);
                json_object_array_add(ev, json_object_new_string(v));
        }
        if (!json_object_array_length(ev)) {
                json_object_put(ev);
                return -ENOENT;
        }
        _cleanup_free_ char *who = ack_who();
        _cleanup_(json_object_putp) json_object *fields = json_object_new_object(), *a = json_object_new_object();
        json_object_object_add(a, "user", json_object_new_string(who));
        json_object_object_add(a, "uid", json_object_new_int64((int64_t)geteuid()));
        json_object_object_add(a, "until", str_or_null(until));
        json_object_object_add(a, "severity", json_object_new_string(severity_name(res->severity)));
        json_object_object_add(a, "observed", str_or_null(res->observed));
        json_object_object_add(a, "expected", str_or_null(res->expected));
        json_object_object_add(a, "evidence", ev);
        json_object_object_add(fields, "ack", json_object_get(a));
        struct change c = {.type = CHANGE_NOTE, .rule = (char *)res->rule->id, .target = (char *)item};
        return changelog_append_fields(l, ctx, LOG_ACK, &c, 0, reason, fields);
}

long ack_withdraw(struct changelog *l, const struct log_context *ctx, const struct ack *a, const char *reason)
{
        _cleanup_free_ char *who = ack_who();
        _cleanup_(json_object_putp) json_object *fields = json_object_new_object(), *o = json_object_new_object();
        json_object_object_add(o, "user", json_object_new_string(who));
        json_object_object_add(o, "uid", json_object_new_int64((int64_t)geteuid()));
        json_object_object_add(fields, "ack", json_object_get(o));
        struct change c = {.type = CHANGE_NOTE, .rule = a->rule, .target = a->item};
        return changelog_append_fields(l, ctx, LOG_UNACK, &c, a->seq, reason, fields);
}
