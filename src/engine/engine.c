/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "engine/engine.h"

#include <errno.h>

#include "base/deadline.h"
#include "engine/remedy.h"

const char *result_status_name(enum result_status s)
{
        static const char *const names[] = {"pass", "fail", "n/a", "error", "acked"};
        return names[s];
}

static const char *profile_param(void *userdata, const char *name)
{
        return resolved_param(userdata, name);
}

static const char *remedy_param(void *userdata, const char *name)
{
        const struct result *res = userdata;
        for (size_t i = 0; i < res->remedy_keys.n; i++)
                if (streq(res->remedy_keys.v[i], name))
                        return res->remedy_vals.v[i];
        return NULL;
}

static void fill_remedy(struct result *res, const struct resolved *profile)
{
        const struct rule *r = res->rule;
        if (!r->remedy)
                return;
        for (size_t i = 0; i < r->remedy_keys.n; i++) {
                char *v = expr_substitute(r->remedy_vals.v[i], profile_param, (void *)profile, NULL);
                strv_add(&res->remedy_keys, r->remedy_keys.v[i]);
                strv_push(&res->remedy_vals, v ? v : xstrdup(r->remedy_vals.v[i]));
        }
        const struct remedy_kind *k = remedy_kind_find(r->remedy);
        res->remedy_summary = k ? expr_substitute(k->summary, remedy_param, res, NULL) : NULL;
        if (!res->remedy_summary)
                res->remedy_summary = xstrdup(r->remedy);
}

static void take(struct result *res, struct eval_result *er)
{
        free(res->observed);
        free(res->expected);
        free(res->reason);
        res->observed = er->observed;
        res->expected = er->expected;
        res->reason = er->reason;
        strv_done(&er->failed); /* the evidence was taken before, by add_evidence */
        *er = (struct eval_result){0};
}

/* A failed check that the rule's note_when conditions (all of them) turn into a pass with a note:
 * "what was observed, against what". False when the rule has none or one does not hold. */
static bool noted(struct result *res, const struct resolved *profile, struct facts *f)
{
        const struct rule *r = res->rule;
        for (size_t i = 0; i < r->n_note_when; i++) {
                struct eval_result er;
                expr_eval(&r->note_when[i], f, profile_param, (void *)profile, &er);
                bool holds = er.status == EVAL_TRUE;
                eval_result_done(&er);
                if (!holds)
                        return false;
        }
        if (!r->n_note_when)
                return false;
        res->note = xasprintf("%s (expected %s)", res->observed ? res->observed : "?",
                              res->expected ? res->expected : "?");
        return true;
}

/* The items check E failed on (ER), each "NAME=VALUE", and the rule's evidence fields beside them. */
static void add_evidence(struct result *res, const struct expr *e, const struct eval_result *er, struct facts *f)
{
        const struct rule *r = res->rule;
        for (size_t i = 0; i < er->failed.n; i++) {
                const char *name = er->failed.v[i];
                const struct fact *fc = facts_get(f, name);
                strv_push(&res->evidence, xasprintf("%s=%s", name, fc && fc->status == FACT_OK ? fc->str : "?"));
                for (size_t k = 0; k < r->evidence.n; k++) {
                        _cleanup_free_ char *sib = expr_item_sibling(e, name, r->evidence.v[k]);
                        const struct fact *sf = facts_get(f, sib);
                        strv_push(&res->evidence,
                                  xasprintf("%s=%s", sib, sf && sf->status == FACT_OK ? sf->str : "?"));
                }
        }
}

static void evaluate(struct result *res, const struct resolved *profile, struct facts *f)
{
        const struct rule *r = res->rule;
        struct eval_result er;
        for (size_t i = 0; i < r->n_when; i++) {
                expr_eval(&r->when[i], f, profile_param, (void *)profile, &er);
                if (er.status == EVAL_TRUE) {
                        eval_result_done(&er);
                        continue;
                }
                if (er.status == EVAL_FALSE) {
                        if (!er.reason)
                                er.reason = xasprintf("applies when %s; here %s", r->when[i].text, er.observed);
                        res->status = RES_NA;
                } else
                        res->status = er.status == EVAL_NA ? RES_NA : RES_ERROR;
                take(res, &er);
                return;
        }
        res->status = RES_PASS;
        for (size_t i = 0; i < r->n_checks; i++) {
                expr_eval(&r->checks[i], f, profile_param, (void *)profile, &er);
                enum result_status st = er.status == EVAL_TRUE    ? RES_PASS
                                        : er.status == EVAL_FALSE ? RES_FAIL
                                        : er.status == EVAL_NA    ? RES_NA
                                                                  : RES_ERROR;
                if (st == RES_FAIL)
                        add_evidence(res, &r->checks[i], &er, f);
                /* The first check that does not pass decides; a passing rule shows its first check.
                 * The checks after a failing one still add what they fail on to the evidence. */
                if (res->status == RES_PASS && (st != RES_PASS || i == 0))
                        take(res, &er);
                else
                        eval_result_done(&er);
                if (res->status == RES_PASS && st == RES_FAIL && noted(res, profile, f)) {
                        strv_done(&res->evidence); /* a pass with a note: nothing to acknowledge */
                        return;
                }
                if (res->status == RES_PASS && st != RES_PASS)
                        res->status = st;
                if (res->status != RES_PASS && res->status != RES_FAIL)
                        return;
        }
}

/* A failing rule whose fix is a kernel command-line argument that the next boot already has: the
 * running kernel is not in force yet, and the result says so ("set for the next boot, reboot
 * required") apart from "not set at all". */
static void cmdline_pending(struct result *res, struct facts *f)
{
        if (res->status != RES_FAIL || !res->rule->remedy || !streq(res->rule->remedy, "cmdline"))
                return;
        const char *arg = NULL;
        for (size_t i = 0; i < res->remedy_keys.n; i++)
                if (streq(res->remedy_keys.v[i], "param"))
                        arg = res->remedy_vals.v[i];
        if (!arg)
                return;
        _cleanup_free_ char *name = xasprintf("cmdline.next.%.*s", (int)strcspn(arg, "="), arg);
        const struct fact *next = facts_get(f, name);
        const char *want = strchr(arg, '=') ? strchr(arg, '=') + 1 : "";
        if (next && next->status == FACT_OK && streq(next->str, want)) {
                free(res->reason);
                res->reason = xasprintf("%s is set for the next boot (%s): reboot required", arg, next->source);
        }
}

/* RES was cut short (deadline_cuts moved while it ran): an error that says which time ran out. */
static void timed_out(struct result *res, const struct engine_limits *lim, bool by_rule, bool late, uint64_t us)
{
        free(res->reason);
        res->reason = by_rule ? xasprintf("timed out: its time (--rule-timeout %u.%03u s) ran out after %.3f s",
                                          lim->rule_ms / 1000, lim->rule_ms % 1000, (double)us / 1e6)
                              : xasprintf("timed out: the run's time (--timeout %u.%03u s) ran out%s",
                                          lim->run_ms / 1000, lim->run_ms % 1000,
                                          late ? " before it could read its facts" : " while it read its facts");
        res->status = RES_ERROR;
        strv_done(&res->evidence); /* not a failure: nothing to acknowledge */
}

/* One rule under the limits: its own budget, the run's end or RULE_MS from now. */
static void evaluate_limited(struct result *res, const struct resolved *profile, struct facts *f,
                             const struct engine_limits *lim, uint64_t run_end)
{
        uint64_t t0 = deadline_now_ns(), end = run_end;
        bool by_rule = false;
        if (lim && lim->rule_ms && (!end || t0 + lim->rule_ms * 1000000ull < end)) {
                end = t0 + lim->rule_ms * 1000000ull;
                by_rule = true;
        }
        deadline_budget_set(end);
        deadline_set_label(res->rule->id);
        unsigned long cuts = deadline_cuts();
        evaluate(res, profile, f);
        res->us = (deadline_now_ns() - t0) / 1000u;
        if (lim && deadline_cuts() != cuts)
                timed_out(res, lim, by_rule, end && t0 >= end, res->us);
        deadline_set_label(NULL);
        deadline_budget_set(run_end);
}

int engine_run_limited(const struct ruleset *rules, const struct resolved *profile, struct facts *f,
                       const struct strv *only, const struct engine_limits *lim, struct audit *ret, const char **bad)
{
        for (size_t i = 0; only && i < only->n; i++)
                if (!rules_find(rules, only->v[i])) {
                        *bad = only->v[i];
                        return -ENOENT;
                }
        uint64_t run_end = deadline_budget();
        struct audit a = {0};
        a.v = xcalloc(rules->n + 1, sizeof(*a.v));
        for (size_t i = 0; i < rules->n; i++) {
                const struct rule *r = &rules->v[i];
                enum severity sev;
                if (only && only->n && !strv_contains(only, r->id))
                        continue;
                if (!resolved_rule_enabled(profile, r, &sev) && !(only && only->n))
                        continue;
                struct result *res = &a.v[a.n++];
                res->rule = r;
                res->severity = sev;
                evaluate_limited(res, profile, f, lim, run_end);
                fill_remedy(res, profile);
                cmdline_pending(res, f);
                a.count[res->status]++;
        }
        *ret = a;
        return 0;
}

int engine_run(const struct ruleset *rules, const struct resolved *profile, struct facts *f, const struct strv *only,
               struct audit *ret, const char **bad)
{
        return engine_run_limited(rules, profile, f, only, NULL, ret, bad);
}

void audit_done(struct audit *a)
{
        for (size_t i = 0; i < a->n; i++) {
                struct result *r = &a->v[i];
                free(r->observed);
                free(r->expected);
                free(r->reason);
                free(r->note);
                free(r->remedy_summary);
                strv_done(&r->remedy_keys);
                strv_done(&r->remedy_vals);
                strv_done(&r->evidence);
                free(r->ack_note);
        }
        free(a->v);
        *a = (struct audit){0};
}
