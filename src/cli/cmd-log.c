/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune log: what llmtune changed on this machine, from the change log. */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "apply/change-kind.h"
#include "apply/changelog.h"
#include "cli/commands.h"
#include "facts/json-out.h"

/* A value for the table, in its kind's short form (a file by its size and the start of its hash). */
static char *short_value(const struct log_record *rec, const char *v, const char *key)
{
        json_object *h;
        const char *sha = json_object_object_get_ex(rec->json, key, &h) ? json_object_get_string(h) : NULL;
        return change_short_form(&rec->change, v, sha);
}

/* How many (intent, outcome) pairs from I on are changes alike of a kind shown grouped: same kind,
 * run, rule, event pair, before and after, the outcome concluding its intent (a value per CPU). */
static size_t value_pairs(const struct log_read *lr, size_t i)
{
        const struct log_record *a = &lr->v[i];
        if (!change_kind_of(&a->change)->grouped || a->event != LOG_INTENT)
                return 0;
        size_t k = 0;
        for (size_t j = i; j + 1 < lr->n; j += 2, k++) {
                const struct log_record *x = &lr->v[j], *y = &lr->v[j + 1];
                if (x->change.type != a->change.type || x->event != LOG_INTENT || y->ref != x->seq ||
                    y->event != lr->v[i + 1].event || !streq(x->run, a->run) || !streq(x->change.rule, a->change.rule) ||
                    !streq(x->change.after, a->change.after) || x->detail || y->detail ||
                    !((!x->change.before && !a->change.before) ||
                      (x->change.before && a->change.before && streq(x->change.before, a->change.before))))
                        break;
        }
        return k;
}

/* The profiles RUN's records name, in order, each once, joined with ","; NULL when none does. A
 * rollback's run-begin and run-end name none: its undo records carry the profile of the changes
 * they undo (several, for a rollback --all over runs of different profiles). */
static char *run_profiles(const struct log_read *lr, const char *run)
{
        struct strv seen = {0};
        for (size_t i = 0; i < lr->n; i++)
                if (streq(lr->v[i].run, run) && lr->v[i].profile && !strv_contains(&seen, lr->v[i].profile))
                        strv_add(&seen, lr->v[i].profile);
        char *s = seen.n ? strv_join(&seen, ",") : NULL;
        strv_done(&seen);
        return s;
}

static void print_table(struct cli *cli, const struct log_read *lr, const char *run)
{
        const char *off = cli_color(cli, "\033[0m"), *bold = cli_color(cli, "\033[1m"), *dim = cli_color(cli, "\033[2m");
        const char *last_run = NULL;
        size_t shown = 0;
        for (size_t i = 0; i < lr->n; i++) {
                const struct log_record *rec = &lr->v[i];
                if (run && !streq(rec->run, run))
                        continue;
                if (shown++ == 0)
                        printf("%s%5s  %-20s  %-11s  %5s  %-28s  %-8s  %s%s\n", bold, "SEQ", "TIME (UTC)", "EVENT", "OF",
                               "RULE", "TYPE", "TARGET", off);
                if (!streq(rec->run, last_run)) {
                        _cleanup_free_ char *profiles = rec->run ? run_profiles(lr, rec->run) : NULL;
                        printf("%s-- run %s (profile %s, host %s)%s\n", dim, rec->run ? rec->run : "?",
                               profiles ? profiles : rec->profile ? rec->profile : "?", rec->host ? rec->host : "?", off);
                        last_run = rec->run;
                }
                const struct change *c = &rec->change;
                size_t pairs = value_pairs(lr, i);
                if (pairs > 3) {
                        /* as plan shows them: one line for many values alike */
                        const struct log_record *last = &lr->v[i + 2 * pairs - 1];
                        _cleanup_free_ char *b = short_value(rec, c->before, "before_sha256"),
                                            *a = short_value(rec, c->after, "after_sha256");
                        printf("%5ld  %-20s  %-11s  %5s  %-28s  %-8s  %s ... %s (%zu files)\n", rec->seq, rec->time,
                               "intent", "", c->rule ? c->rule : "-", change_type_name(c->type), c->target,
                               lr->v[i + 2 * pairs - 2].change.target, pairs);
                        printf("%7s%s%s -> %s%s\n", "", dim, b, a, off);
                        printf("%5s  %-20s  %-11s  %5s  (seq %ld..%ld, %zu of each)\n", "", last->time, log_event_name(last->event), "",
                               rec->seq, last->seq, pairs);
                        i += 2 * pairs - 1;
                        continue;
                }
                char of[24] = "";
                if (rec->ref)
                        snprintf(of, sizeof(of), "%ld", rec->ref);
                printf("%5ld  %-20s  %-11s  %5s  %-28s  %-8s  %s\n", rec->seq, rec->time, log_event_name(rec->event), of,
                       c->rule ? c->rule : "-", change_type_name(c->type), c->target ? c->target : "-");
                /* What the step does, once, on its intent; outcomes refer to it by OF. */
                if (rec->event == LOG_INTENT) {
                        if (!change_has_states(c)) {
                                _cleanup_free_ char *label = change_label(c); /* a command line, a note's text */
                                if (label)
                                        printf("%7s%s%s%s\n", "", dim, label, off);
                        } else {
                                _cleanup_free_ char *b = short_value(rec, c->before, "before_sha256"),
                                                    *a = short_value(rec, c->after, "after_sha256");
                                printf("%7s%s%s -> %s%s\n", "", dim, b, a, off);
                        }
                }
                if (rec->detail)
                        printf("%7s%s\n", "", rec->detail);
                if (!changelog_step_finished(lr, i))
                        printf("%7sunfinished: %s\n", "",
                               rec->event == LOG_RUN_BEGIN
                                       ? "no run-end: the run was interrupted (the next apply or rollback closes it)"
                                       : "no outcome: the run was interrupted here (the next apply or rollback "
                                         "closes it)");
        }
        if (!shown)
                printf("no records of run %s\n", run);
}

/* What one run did: its first and last record, the outcomes counted. */
struct run_summary {
        const struct log_record *first, *last;
        size_t done, undone, failed;
        bool undo, unfinished;
        const char *kind;
};

static bool undo_event(enum log_event e) { return e == LOG_UNDO_INTENT || e == LOG_UNDONE || e == LOG_UNDO_FAILED; }

static struct run_summary summarise_run(const struct log_read *lr, const char *run)
{
        struct run_summary s = {0};
        for (size_t i = 0; i < lr->n; i++) {
                const struct log_record *r = &lr->v[i];
                if (!streq(r->run, run))
                        continue;
                s.first = s.first ? s.first : r;
                s.last = r;
                s.unfinished |= !changelog_step_finished(lr, i);
                s.done += r->event == LOG_DONE;
                s.undone += r->event == LOG_UNDONE;
                s.failed += r->event == LOG_FAILED || r->event == LOG_UNDO_FAILED;
                s.undo |= undo_event(r->event) && (!r->detail || !strstr(r->detail, "failed run"));
        }
        s.kind = s.done ? "apply" : s.undo ? "rollback" : "other";
        return s;
}

static json_object *run_json(const char *run, const struct run_summary *s, const char *profiles)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "run", json_object_new_string(run));
        json_object_object_add(o, "first", json_object_new_string(s->first->time ? s->first->time : ""));
        json_object_object_add(o, "last", json_object_new_string(s->last->time ? s->last->time : ""));
        json_object_object_add(o, "kind", json_object_new_string(s->kind));
        json_object_object_add(o, "profile", profiles ? json_object_new_string(profiles) : NULL);
        json_object_object_add(o, "host", s->first->host ? json_object_new_string(s->first->host) : NULL);
        json_object_object_add(o, "done", json_object_new_int64((int64_t)s->done));
        json_object_object_add(o, "undone", json_object_new_int64((int64_t)s->undone));
        json_object_object_add(o, "failed", json_object_new_int64((int64_t)s->failed));
        json_object_object_add(o, "finished", json_object_new_boolean(!s->unfinished));
        return o;
}

/* One line per run (an apply or rollback): id, when, profile, host, what it did. */
static void print_runs(const struct log_read *lr, bool json)
{
        _cleanup_(strv_done) struct strv runs = {0};
        for (size_t i = 0; i < lr->n; i++)
                if (lr->v[i].run && !strv_contains(&runs, lr->v[i].run))
                        strv_add(&runs, lr->v[i].run);
        json_object *arr = json ? json_object_new_array() : NULL;
        if (!json && runs.n)
                printf("%-36s  %-20s  %-20s  %-8s  %5s  %6s  %6s  %s\n", "RUN", "FIRST (UTC)", "LAST (UTC)", "KIND", "DONE",
                       "UNDONE", "FAILED", "PROFILE (HOST)");
        for (size_t k = 0; k < runs.n; k++) {
                struct run_summary s = summarise_run(lr, runs.v[k]);
                _cleanup_free_ char *profiles = run_profiles(lr, runs.v[k]);
                if (json)
                        json_object_array_add(arr, run_json(runs.v[k], &s, profiles));
                else
                        printf("%-36s  %-20s  %-20s  %-8s  %5zu  %6zu  %6zu  %s (%s)%s\n", runs.v[k],
                               s.first->time ? s.first->time : "?", s.last->time ? s.last->time : "?", s.kind, s.done,
                               s.undone, s.failed, profiles ? profiles : "?", s.first->host ? s.first->host : "?",
                               s.unfinished ? "  UNFINISHED" : "");
        }
        if (json)
                json_print_list(stdout, "runs", arr);
        else if (!runs.n)
                printf("no changes recorded\n");
}

static int log_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"json", no_argument, NULL, 'j'},
                {"run", required_argument, NULL, 'r'},
                {"runs", no_argument, NULL, 'R'},
                {},
        };
        bool json = false, runs = false;
        const char *run = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "jr:", opts, NULL)) != -1)
                switch (c) {
                case 'j': json = true; break;
                case 'r': run = optarg; break;
                case 'R': runs = true; break;
                default: return cli_usage_error("log");
                }
        if (optind < argc)
                return cli_error("unexpected argument '%s' (see llmtune log --help)", argv[optind]);
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;
        _cleanup_(log_read_done) struct log_read lr = {0};
        _cleanup_free_ char *why = NULL;
        int rc = changelog_read(root, &lr, &why);
        if (rc < 0)
                return cli_error("cannot read %s under %s: %s", CHANGELOG_PATH, root_path(root),
                                 why ? why : changelog_strerror(rc));
        if (runs)
                print_runs(&lr, json);
        else if (json) {
                json_object *a = json_object_new_array();
                for (size_t i = 0; i < lr.n; i++)
                        if (!run || streq(lr.v[i].run, run))
                                json_object_array_add(a, json_object_get(lr.v[i].json));
                json_print_list(stdout, "records", a);
        } else if (lr.n == 0 && lr.n_problems == 0)
                printf("no changes recorded\n");
        else
                print_table(cli, &lr, run);
        /* The log is shown as it is; a broken chain is for verify to judge, but never silent. */
        for (size_t i = 0; i < lr.n_problems; i++)
                fprintf(stderr, "llmtune: warning: %s\n", lr.problems[i].message);
        if (lr.head_note)
                fprintf(stderr, "llmtune: note: %s\n", lr.head_note);
        if (lr.n_problems)
                fprintf(stderr, "llmtune: the change log is damaged or was altered; see `llmtune verify`\n");
        return EXIT_OK;
}

const struct command cmd_log = {
        .name = "log",
        .summary = "show the changes llmtune made (the change log)",
        .usage = "Usage: llmtune [--root DIR] log [--run ID | --runs] [--json]\n"
                 "\n"
                 "Print the change log (" CHANGELOG_PATH "): one record per step of every apply and\n"
                 "rollback, with its sequence number, time, event (run-begin, intent, done, failed, undo-intent,\n"
                 "undone, undo-failed, run-end), the record it concludes or reverses (OF), rule, type, target\n"
                 "(for run-begin and run-end: apply or rollback), and under each\n"
                 "intent before -> after (files: size and the start of the content's SHA-256; the contents\n"
                 "are kept in " CHANGELOG_DIR "/backups).\n"
                 "\n"
                 "Many runtime values alike in a row (a governor per CPU) are one line with a count.\n"
                 "\n"
                 "  -r, --run ID   only the records of this run (an apply or rollback)\n"
                 "      --runs     one line per run: id, first and last time, kind (apply, rollback),\n"
                 "                 done, undone and failed steps, profile and host, UNFINISHED when it did not\n"
                 "                 end (with --json: {format, runs: [...]}, \"finished\")\n"
                 "  -j, --json     {format, records: [...]}: the records exactly as logged\n"
                 "\n"
                 "Records whose hash chain is broken are shown and warned about; `llmtune verify` checks.\n"
                 "Exit status: 0 shown (also when nothing was recorded), 1 the log cannot be read.\n",
        .run = log_cmd,
};
