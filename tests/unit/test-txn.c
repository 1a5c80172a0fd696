/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The transaction of apply and rollback (src/apply/txn.c) on a throwaway tree: a plan carried out
 * and logged, a failed run undone, rollback by --last-run, --to SEQ and --all, refusal when a
 * target was changed by someone else, recovery of an interrupted run, and a rollback that stops
 * when the log cannot take its records. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "tmptree.h"
#include "apply/txn.h"
#include "unit-main.h"
#include "apply/verify.h"

#define SWAPPINESS "proc/sys/vm/swappiness"
#define DIRTY "proc/sys/vm/dirty_ratio"
#define DIRTY_BG "proc/sys/vm/dirty_background_ratio"

static struct root *root;
static const struct log_context ctx = {.profile = "test", .profile_hash = "abc"};

static void setup(void)
{
        tmptree_new("txn");
        tmptree_put(SWAPPINESS, "60\n", 0644);
        tmptree_put(DIRTY, "20\n", 0644);
        tmptree_put(DIRTY_BG, "10\n", 0644);
        ck_assert_int_eq(root_new(tmptree_path(), &root), 0);
}

static void teardown(void)
{
        root_free(root);
        tmptree_drop();
}

static void add_value(struct plan *p, const char *target, const char *before, const char *after)
{
        p->v = xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
        p->v[p->n++] = (struct change){.rule = xstrdup("test-rule"), .type = CHANGE_VALUE, .target = xstrdup(target),
                                       .before = xstrdup(before), .after = xstrdup(after)};
}

static void value_is(const char *rel, const char *want)
{
        char *s = tmptree_get(rel);
        ck_assert_ptr_nonnull(s);
        ck_assert_str_eq(s, want);
        free(s);
}

/* One apply run of P through the whole transaction as apply does it; returns txn_apply's result.
 * Each run gets an id of its own (changelog_run_id is per second and process: two runs of this
 * test in one second would share it). */
static int apply_plan(const struct plan *p, struct txn_apply_result *res)
{
        static int runs;
        char run[32];
        snprintf(run, sizeof(run), "test-run-%d", ++runs);
        struct txn t;
        ck_assert_int_eq(txn_begin(&t, root, false), 0);
        ck_assert_int_eq(txn_open_log(&t), 0);
        ck_assert_int_eq(txn_recover(&t), 0);
        int rc = txn_apply(&t, p, &ctx, run, res);
        txn_done(&t);
        return rc;
}

static void count_status(const struct log_record *rec, const char *status, void *userdata)
{
        (void)rec;
        if (streq(status, "restored"))
                ++*(size_t *)userdata;
}

/* A rollback of SCOPE (TO) as the command does it; returns txn_rollback_select's answer, and
 * when it says go, rolls back and checks that every record reported is restored. */
static int rollback(enum txn_scope scope, long to, bool force, size_t *ret_undone)
{
        struct txn t;
        struct txn_selection sel;
        ck_assert_int_eq(txn_begin(&t, root, false), 0);
        ck_assert_int_eq(txn_recover(&t), 0);
        int rc = txn_rollback_select(&t, scope, to, force, &sel);
        *ret_undone = 0;
        if (rc == 0) {
                char *run = NULL;
                size_t restored = 0;
                ck_assert_int_eq(txn_rollback(&t, &sel, count_status, &restored, &run, ret_undone), 0);
                ck_assert_uint_eq(restored, *ret_undone);
                ck_assert(sel.n == 0 || run != NULL);
                free(run);
        }
        txn_selection_done(&sel);
        txn_done(&t);
        return rc;
}

static long done_seq_of(const char *target)
{
        struct log_read lr;
        ck_assert_int_eq(changelog_read(root, &lr), 0);
        long seq = 0;
        for (size_t i = 0; i < lr.n; i++)
                if (lr.v[i].event == LOG_DONE && streq(lr.v[i].change.target, target))
                        seq = lr.v[i].seq;
        log_read_done(&lr);
        return seq;
}

START_TEST(apply_then_rollback_by_scope)
{
        struct plan a = {0}, b = {0};
        add_value(&a, "/" SWAPPINESS, "60", "10");
        add_value(&a, "/" DIRTY, "20", "5");
        add_value(&b, "/" DIRTY_BG, "10", "3");
        struct txn_apply_result res;
        ck_assert_int_eq(apply_plan(&a, &res), 0);
        ck_assert_uint_eq(res.changed, 2);
        ck_assert_str_eq(res.status[1], "changed");
        ck_assert_int_gt(res.head_seq, 0);
        txn_apply_result_done(&res);
        ck_assert_int_eq(apply_plan(&b, &res), 0);
        txn_apply_result_done(&res);
        value_is(SWAPPINESS, "10\n");
        value_is(DIRTY_BG, "3\n");
        /* --last-run: the second run's one change */
        size_t undone;
        ck_assert_int_eq(rollback(TXN_LAST_RUN, 0, false, &undone), 0);
        ck_assert_uint_eq(undone, 1);
        value_is(DIRTY_BG, "10\n");
        value_is(DIRTY, "5\n");
        /* --to SEQ: what was logged after swappiness' done, i.e. dirty_ratio alone */
        ck_assert_int_eq(rollback(TXN_TO, done_seq_of("/" SWAPPINESS), false, &undone), 0);
        ck_assert_uint_eq(undone, 1);
        value_is(DIRTY, "20\n");
        value_is(SWAPPINESS, "10\n");
        /* --all: the rest; then nothing is left */
        ck_assert_int_eq(rollback(TXN_ALL, 0, false, &undone), 0);
        ck_assert_uint_eq(undone, 1);
        value_is(SWAPPINESS, "60\n");
        ck_assert_int_eq(rollback(TXN_ALL, 0, false, &undone), 0);
        ck_assert_uint_eq(undone, 0);
        plan_done(&a);
        plan_done(&b);
}
END_TEST
DEFINE_TEST(apply_then_rollback_by_scope, .description = "apply then rollback by scope", .root = "tmptree");

/* The second change may not be made (a runtime value outside /sys and /proc/sys): the first is
 * undone, with its undo-intent logged before. */
START_TEST(failed_run_is_undone)
{
        struct plan p = {0};
        add_value(&p, "/" SWAPPINESS, "60", "10");
        add_value(&p, "/etc/passwd", "x", "y");
        struct txn_apply_result res;
        ck_assert_int_eq(apply_plan(&p, &res), 1);
        ck_assert_ptr_nonnull(res.failure);
        ck_assert_ptr_nonnull(strstr(res.failure, "/etc/passwd"));
        ck_assert_str_eq(res.status[0], "undone");
        ck_assert_str_eq(res.status[1], "failed");
        ck_assert_uint_eq(res.changed, 0);
        txn_apply_result_done(&res);
        value_is(SWAPPINESS, "60\n");
        struct log_read lr;
        ck_assert_int_eq(changelog_read(root, &lr), 0);
        static const enum log_event want[] = {LOG_RUN_BEGIN, LOG_INTENT,      LOG_DONE,
                                              LOG_UNDO_INTENT, LOG_UNDONE, LOG_RUN_END};
        ck_assert_uint_eq(lr.n, ARRAY_SIZE(want));
        for (size_t i = 0; i < lr.n; i++)
                ck_assert_msg(lr.v[i].event == want[i], "record %zu is %s", i, log_event_name(lr.v[i].event));
        ck_assert_uint_eq(lr.n_problems, 0);
        log_read_done(&lr);
        plan_done(&p);
}
END_TEST
DEFINE_TEST(failed_run_is_undone, .description = "failed run is undone", .root = "tmptree");

/* A target changed by someone else refuses the whole rollback, touching nothing; forced, the
 * before state comes back. */
START_TEST(changed_target_is_refused)
{
        struct plan p = {0};
        add_value(&p, "/" SWAPPINESS, "60", "10");
        add_value(&p, "/" DIRTY, "20", "5");
        struct txn_apply_result res;
        ck_assert_int_eq(apply_plan(&p, &res), 0);
        txn_apply_result_done(&res);
        tmptree_put(DIRTY, "77\n", 0644);
        struct txn t;
        struct txn_selection sel;
        ck_assert_int_eq(txn_begin(&t, root, false), 0);
        ck_assert_int_eq(txn_recover(&t), 0);
        ck_assert_int_eq(txn_rollback_select(&t, TXN_ALL, 0, false, &sel), 1);
        ck_assert_uint_eq(sel.n_conflicts, 1);
        ck_assert_str_eq(sel.conflicts[0].rec->change.target, "/" DIRTY);
        ck_assert_str_eq(sel.conflicts[0].now, "77");
        ck_assert_str_eq(sel.conflicts[0].applied, "5");
        ck_assert_ptr_nonnull(strstr(t.error, "changed by someone else"));
        txn_selection_done(&sel);
        txn_done(&t);
        value_is(SWAPPINESS, "10\n");
        size_t undone;
        ck_assert_int_eq(rollback(TXN_ALL, 0, true, &undone), 0);
        ck_assert_uint_eq(undone, 2);
        value_is(SWAPPINESS, "60\n");
        value_is(DIRTY, "20\n");
        plan_done(&p);
}
END_TEST
DEFINE_TEST(changed_target_is_refused, .description = "changed target is refused", .root = "tmptree");

/* A run killed after its intent and its write: the next transaction closes the step as done (the
 * target shows the after state), ends the run, names it for apply to complete, and rollback
 * then undoes it. */
START_TEST(interrupted_run_is_recovered)
{
        struct plan p = {0};
        add_value(&p, "/" SWAPPINESS, "60", "10");
        struct txn t;
        ck_assert_int_eq(txn_begin(&t, root, false), 0);
        ck_assert_int_eq(txn_open_log(&t), 0);
        struct log_context killed = ctx;
        killed.run = "killed-run";
        ck_assert_int_gt(changelog_run_begin(t.log, &killed, "apply"), 0);
        ck_assert_int_gt(changelog_append(t.log, &killed, LOG_INTENT, &p.v[0], 0, NULL), 0);
        txn_done(&t);
        tmptree_put(SWAPPINESS, "10\n", 0644);

        ck_assert_int_eq(txn_begin(&t, root, false), 0);
        ck_assert_int_eq(txn_recover(&t), 0);
        ck_assert_str_eq(t.resume_run, "killed-run");
        ck_assert_uint_eq(t.notes.n, 2); /* the step, then the run */
        ck_assert_ptr_nonnull(strstr(t.notes.v[0], "recovered: apply of run killed-run"));
        ck_assert_ptr_nonnull(strstr(t.notes.v[0], "-> done"));
        size_t *idx;
        ck_assert_uint_eq(changelog_unfinished(&t.lr, &idx), 0);
        free(idx);
        txn_done(&t);
        size_t undone;
        ck_assert_int_eq(rollback(TXN_LAST_RUN, 0, false, &undone), 0);
        ck_assert_uint_eq(undone, 1);
        value_is(SWAPPINESS, "60\n");
        plan_done(&p);
}
END_TEST
DEFINE_TEST(interrupted_run_is_recovered, .description = "interrupted run is recovered", .root = "tmptree");

/* The log cannot take more than a run-begin (RLIMIT_FSIZE, as a full disk): rollback writes no
 * undo without its undo-intent, so nothing is undone, and the error says why. */
START_TEST(rollback_stops_when_the_log_fails)
{
        struct plan p = {0};
        add_value(&p, "/" SWAPPINESS, "60", "10");
        struct txn_apply_result res;
        struct log_context no_profile = {0};
        struct txn t;
        ck_assert_int_eq(txn_begin(&t, root, false), 0);
        ck_assert_int_eq(txn_open_log(&t), 0);
        ck_assert_int_eq(txn_apply(&t, &p, &no_profile, NULL, &res), 0);
        txn_apply_result_done(&res);
        txn_done(&t);
        char *path = xasprintf("%s%s", tmptree_path(), CHANGELOG_PATH), *log = tmptree_get(CHANGELOG_PATH + 1);
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        /* apply's run-begin line, and room for rollback's (3 bytes longer) and not an undo-intent */
        size_t first = (size_t)(strchr(log, '\n') - log) + 1;
        struct rlimit old, lim;
        ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
        lim = old;
        lim.rlim_cur = (rlim_t)st.st_size + first + 40;
        signal(SIGXFSZ, SIG_IGN);

        struct txn_selection sel;
        ck_assert_int_eq(txn_begin(&t, root, false), 0);
        ck_assert_int_eq(txn_recover(&t), 0);
        ck_assert_int_eq(txn_rollback_select(&t, TXN_ALL, 0, false, &sel), 0);
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
        char *run = NULL;
        size_t undone = 9;
        int rc = txn_rollback(&t, &sel, count_status, &undone, &run, &undone);
        ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
        ck_assert_int_lt(rc, 0);
        ck_assert_uint_eq(undone, 0);
        ck_assert_ptr_nonnull(strstr(t.error, "cannot write the change log"));
        txn_selection_done(&sel);
        txn_done(&t);
        free(run);
        value_is(SWAPPINESS, "10\n");
        /* the log ends in rollback's run-begin: no undo-intent, no undo */
        struct log_read lr;
        ck_assert_int_eq(changelog_read(root, &lr), 0);
        ck_assert_int_eq(lr.v[lr.n - 1].event, LOG_RUN_BEGIN);
        ck_assert_str_eq(lr.v[lr.n - 1].change.target, "rollback");
        log_read_done(&lr);
        /* with room again the next rollback closes that run and undoes the change */
        ck_assert_int_eq(rollback(TXN_ALL, 0, false, &undone), 0);
        ck_assert_uint_eq(undone, 1);
        value_is(SWAPPINESS, "60\n");
        free(log);
        free(path);
        plan_done(&p);
}
END_TEST
DEFINE_TEST(rollback_stops_when_the_log_fails, .description = "rollback stops when the log fails", .root = "tmptree");

/* verify as a library (apply/verify.c): clean after apply, drift when a value moved, the expected
 * head judged, and the exporters' summary (verify_state_read) the same judgement as verify_run. */
START_TEST(verify_judges_the_log_once)
{
        struct plan a = {0};
        add_value(&a, "/" SWAPPINESS, "60", "10");
        add_value(&a, "/" DIRTY, "20", "5");
        struct txn_apply_result res;
        ck_assert_int_eq(apply_plan(&a, &res), 0);
        txn_apply_result_done(&res);
        plan_done(&a);

        struct verify_result v = {0};
        const char *what;
        ck_assert_int_eq(verify_run(root, &v, &what), 0);
        ck_assert_str_eq(v.status, "clean");
        ck_assert_uint_eq(v.n_ck, 2);
        ck_assert_uint_eq(v.count[CHECK_OK], 2);
        verify_result_done(&v);

        tmptree_put(DIRTY, "30\n", 0644);
        ck_assert_int_eq(verify_run(root, &v, &what), 0);
        ck_assert_str_eq(v.status, "drift");
        ck_assert_uint_eq(v.count[CHECK_DRIFT], 1);
        bool named = false;
        for (size_t i = 0; i < v.n_ck; i++)
                named |= v.ck[i].status == CHECK_DRIFT && strstr(v.ck[i].message, "expected '5'") &&
                         strstr(v.ck[i].message, "found '30'");
        ck_assert_msg(named, "the drifted value is named with what was expected and found");
        char anchor[128];
        snprintf(anchor, sizeof(anchor), "%ld:%s", v.lr.end_seq + 5, v.lr.end_hash);
        verify_result_done(&v);

        struct verify_state st;
        ck_assert_int_eq(verify_state_read(root, &st), 0);
        ck_assert_str_eq(st.status, "drift");
        ck_assert_uint_eq(st.in_force, 2);
        ck_assert_uint_eq(st.drifted, 1);

        /* An anchor past the log's end: records were cut, which outranks drift. */
        ck_assert(expect_head_parse(anchor, &v.eh));
        ck_assert_int_eq(verify_run(root, &v, &what), 0);
        ck_assert_str_eq(v.status, "tampered");
        ck_assert(v.cut);
        ck_assert_ptr_nonnull(strstr(v.eh.message, "were cut off"));
        verify_result_done(&v);
        ck_assert(!expect_head_parse("12:abc", &v.eh));
}
END_TEST
DEFINE_TEST(verify_judges_the_log_once,
            .description = "verify_run judges the log and verify_state_read gives the exporters the same status",
            .root = "tmptree");

/* The one precedence: a broken or cut chain, then unfinished steps, then drift, then errors. */
START_TEST(verify_status_precedence)
{
        ck_assert_str_eq(verify_status(true, 1, 1, 1), "tampered");
        ck_assert_str_eq(verify_status(false, 1, 1, 1), "unfinished");
        ck_assert_str_eq(verify_status(false, 0, 1, 1), "drift");
        ck_assert_str_eq(verify_status(false, 0, 0, 1), "error");
        ck_assert_str_eq(verify_status(false, 0, 0, 0), "clean");
        size_t n = 0;
        for (; verify_state_names[n]; n++)
                ;
        ck_assert_uint_eq(n, 5);
}
END_TEST
DEFINE_TEST(verify_status_precedence, .description = "verify's statuses in their one order", .root = "none");

UNIT_MAIN(.name = "txn", .setup = setup, .teardown = teardown)
