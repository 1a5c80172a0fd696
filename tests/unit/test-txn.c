/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The transaction of apply and rollback (src/apply/txn.c) on a throwaway tree: a plan carried out
 * and logged, a failed run undone, rollback by --last-run, --to SEQ and --all, refusal when a
 * target was changed by someone else, recovery of an interrupted run, and a rollback that stops
 * when the log cannot take its records. Every change kind of the registry (change-kind.h) made,
 * read back, compared and undone on a tree of its own. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/actions.h"
#include "apply/change-kind.h"
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
        ck_assert_int_eq(changelog_read(root, &lr, NULL), 0);
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
        ck_assert_int_eq(changelog_read(root, &lr, NULL), 0);
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
        ck_assert_int_eq(changelog_read(root, &lr, NULL), 0);
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

/* One change of each kind, on the tree the setup wrote plus what SAMPLE writes: a kind of the
 * registry without a sample here fails every_change_kind, so a new kind cannot go untested. */
struct kind_sample {
        const char *kind;
        void (*make)(struct change *c);
};

static void sample_file(struct change *c)
{
        tmptree_mkdir("etc");
        *c = (struct change){.target = xstrdup("/etc/sysctl.d/90-llmtune-test.conf"),
                             .after = xstrdup("vm.swappiness = 10\n"), .mode = 0644};
        strv_add(&c->mkdirs, "/etc/sysctl.d");
}

static void sample_link(struct change *c)
{
        tmptree_mkdir("etc");
        *c = (struct change){.target = xstrdup("/etc/systemd/system/zramswap.service"), .after = xstrdup("/dev/null")};
        strv_add(&c->mkdirs, "/etc/systemd");
        strv_add(&c->mkdirs, "/etc/systemd/system");
}

static void sample_value(struct change *c)
{
        *c = (struct change){.target = xstrdup("/" SWAPPINESS), .before = xstrdup("60"), .after = xstrdup("10")};
}

static void sample_swap(struct change *c)
{
        tmptree_put("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/dev/sdb2 partition 1024 0 -2\n", 0444);
        *c = (struct change){.target = xstrdup("/dev/sdb2"), .before = xstrdup("on"), .after = xstrdup("off"),
                             .aux = xstrdup("/dev/sdb2 partition 1024 0 -2")};
}

static void sample_mount(struct change *c)
{
        tmptree_put("proc/mounts", "/dev/md0 /data ext4 rw,relatime 0 0\n", 0444);
        *c = (struct change){.target = xstrdup("/data"), .before = xstrdup("rw,relatime"),
                             .after = xstrdup("rw,noatime")};
}

/* One of llmtune's own commands: under a foreign root it is skipped (1), never run here. */
static void sample_command(struct change *c)
{
        *c = (struct change){.target = xstrdup("systemctl daemon-reload")};
        strv_add(&c->argv, "systemctl");
        strv_add(&c->argv, "daemon-reload");
        strv_add(&c->undo, "systemctl");
        strv_add(&c->undo, "daemon-reload");
}

static void sample_note(struct change *c)
{
        *c = (struct change){.target = xstrdup("reboot"), .aux = xstrdup("reboot to load the new initramfs"),
                             .reboot = true};
}

static const struct kind_sample kind_samples[] = {
        {"file", sample_file},   {"symlink", sample_link},   {"value", sample_value}, {"swap", sample_swap},
        {"mountopt", sample_mount}, {"command", sample_command}, {"note", sample_note},
};

/* The target reads STATE (C's before or after), and not the other one. */
static void target_is(const struct change *c, const char *state, const char *other, const char *when)
{
        const char *name = change_type_name(c->type);
        _cleanup_free_ char *now = NULL;
        ck_assert_msg(action_current(root, c, &now) == 0, "%s: %s: current failed", name, when);
        ck_assert_msg(action_state_equal(c, now, state), "%s: %s: %s, not %s", name, when, now ? now : "(absent)",
                      state ? state : "(absent)");
        ck_assert_msg(!action_state_equal(c, now, other), "%s: %s: equal to both states", name, when);
}

/* The ops every kind must have, and what it says of itself agrees with the registry. */
static void kind_is_whole(const struct change_kind *k, size_t i)
{
        ck_assert_msg(k->name && *k->name, "kind %zu has no name", i);
        ck_assert_msg(k->allowed && k->area, "%s: no confinement (allowed, area)", k->name);
        ck_assert_msg(k->apply && k->undo, "%s: no apply or undo", k->name);
        enum change_type t;
        ck_assert_int_eq(change_type_parse(k->name, &t), 0);
        ck_assert_uint_eq((size_t)t, i);
        ck_assert_msg(k->current || (!k->equal && !k->describe), "%s: compares states it cannot read", k->name);
        ck_assert_msg(k->sections[0] || k->content, "%s: shown nowhere in a plan (no section, no diff)", k->name);
}

/* Its target made, read back and compared, then undone: by apply's, verify's and rollback's ops. */
static void kind_round_trip(const struct change_kind *k, struct change *c)
{
        char *err = NULL;
        if (!k->current) {
                _cleanup_free_ char *now = NULL;
                ck_assert_int_eq(action_current(root, c, &now), -EOPNOTSUPP);
                int rc = action_apply(root, c, &err);
                ck_assert_msg(rc == 0 || rc == 1, "%s: apply: %d %s", k->name, rc, err ? err : "");
                rc = action_undo(root, c, &err);
                ck_assert_msg(rc == 0 || rc == 1, "%s: undo: %d %s", k->name, rc, err ? err : "");
                ck_assert(change_undoable(c));
                return;
        }
        target_is(c, c->before, c->after, "before apply");
        ck_assert_msg(action_apply(root, c, &err) == 0, "%s: apply: %s", k->name, err);
        target_is(c, c->after, c->before, "after apply");
        ck_assert_msg(action_undo(root, c, &err) == 0, "%s: undo: %s", k->name, err);
        target_is(c, c->before, c->after, "after undo");
        ck_assert(action_state_equal(c, NULL, NULL));
        ck_assert(!action_state_equal(c, c->after, NULL));
        ck_assert(action_state_equal(c, c->after, c->after));
        for (size_t d = 0; d < c->mkdirs.n; d++) { /* the directories it made went with the undo */
                _cleanup_free_ char *dir = xasprintf("%s%s", tmptree_path(), c->mkdirs.v[d]);
                ck_assert_msg(access(dir, F_OK) < 0, "%s: %s left", k->name, c->mkdirs.v[d]);
        }
}

START_TEST(every_change_kind)
{
        const struct change_kind *k;
        size_t i = 0;
        for (; (k = change_kind_at(i)); i++) {
                kind_is_whole(k, i);
                const struct kind_sample *sm = NULL;
                for (size_t j = 0; j < ARRAY_SIZE(kind_samples) && !sm; j++)
                        sm = streq(kind_samples[j].kind, k->name) ? &kind_samples[j] : NULL;
                ck_assert_msg(sm, "change kind %s has no sample in test-txn.c's kind_samples", k->name);
                struct change c;
                sm->make(&c);
                c.type = (enum change_type)i;
                c.rule = xstrdup("test-rule");
                char *why = NULL;
                ck_assert_msg(action_check(&c, &why) == 0, "%s: its sample is refused: %s", k->name, why);
                _cleanup_free_ char *line = change_line(&c), *label = change_label(&c);
                ck_assert(line && label);
                kind_round_trip(k, &c);
                change_done(&c);
        }
        ck_assert_uint_eq(i, ARRAY_SIZE(kind_samples));
        ck_assert_ptr_null(change_kind_at(i));
}
END_TEST
DEFINE_TEST(every_change_kind,
            .description = "every change kind of the registry: made, read back, compared and undone on a tree",
            .root = "tmptree");

UNIT_MAIN(.name = "txn", .setup = setup, .teardown = teardown)
