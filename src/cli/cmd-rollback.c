/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune rollback: put back the before state of logged changes, newest first, logging each. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "apply/actions.h"
#include "apply/change-kind.h"
#include "apply/changelog.h"
#include "cli/cli-data.h"
#include "cli/commands.h"
#include "facts/json-out.h"
#include "base/parse.h"
#include "base/site-config.h"
#include "apply/txn.h"

/* A value for a line of the report: a long one (kept in the backup store, up to 8 MiB) by its
 * length, not spelled out (--json has it whole). */
static const char *show(const char *s)
{
        static char buf[2][48];
        static int k;
        if (!s)
                return "(absent)";
        size_t n = strlen(s);
        if (n <= 80)
                return s;
        k ^= 1;
        snprintf(buf[k], sizeof(buf[k]), "(%zu bytes)", n);
        return buf[k];
}

/* The state a change goes back to, in a line: a file's content not spelled out. */
static const char *restored_state(const struct change *ch)
{
        if (change_kind_of(ch)->content)
                return ch->before ? "previous content" : "(removed)";
        return show(ch->before);
}

/* One line of the report (a JSON record with --json, where a failed one is also kept). */
static void print_one(const struct log_record *rec, const char *status)
{
        const struct change *ch = &rec->change;
        if (streq(status, "would-restore"))
                printf("would restore %-10s %s -> %s   (seq %ld)\n", change_type_name(ch->type), ch->target,
                       restored_state(ch), rec->seq);
        else if (streq(status, "already"))
                printf("already  %-10s %s   (seq %ld)\n", change_type_name(ch->type), ch->target, rec->seq);
        else if (streq(status, "next-boot"))
                printf("next boot %-9s %s -> %s: not set up in this boot   (seq %ld)\n", change_type_name(ch->type),
                       ch->target, show(ch->before), rec->seq);
        else if (streq(status, "manual")) {
                _cleanup_free_ char *what = change_label(ch);
                printf("manual   %-10s %s: reverse by hand   (seq %ld)\n", change_type_name(ch->type), what, rec->seq);
        } else
                printf("restored %-10s %s -> %s   (seq %ld)\n", change_type_name(ch->type), ch->target,
                       restored_state(ch), rec->seq);
}

/* Consecutive changes alike of a kind shown grouped (a value per CPU: same kind, rule, status and
 * before value) are one line with the first and last target and a count, as `plan` shows them. */
struct pending {
        const struct log_record *v[8192];
        size_t n;
        const char *status;
};

static void flush(struct pending *p)
{
        if (p->n > 3) {
                const struct log_record *a = p->v[0], *b = p->v[p->n - 1];
                printf("%s %-10s %s ... %s (%zu files) -> %s   (seq %ld..%ld)\n",
                       streq(p->status, "would-restore") ? "would restore" : streq(p->status, "already") ? "already "
                                                                                                         : "restored",
                       change_type_name(a->change.type), a->change.target, b->change.target, p->n, show(a->change.before),
                       a->seq, b->seq);
        } else
                for (size_t i = 0; i < p->n; i++)
                        print_one(p->v[i], p->status);
        p->n = 0;
}

static bool alike(const struct log_record *a, const struct log_record *b)
{
        const struct change *x = &a->change, *y = &b->change;
        return change_kind_of(x)->grouped && x->type == y->type && streq(x->rule, y->rule) &&
               ((!x->before && !y->before) || (x->before && y->before && streq(x->before, y->before)));
}

/* One record of the report: JSON always (a failed one is kept there), a line (maybe grouped)
 * unless --json. REC NULL flushes what is pending. */
static void report(json_object *arr, const struct log_record *rec, const char *status, bool json)
{
        static struct pending p;
        if (!rec) {
                flush(&p);
                return;
        }
        const struct change *ch = &rec->change;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "seq", json_object_new_int64(rec->seq));
        json_object_object_add(o, "rule", ch->rule ? json_object_new_string(ch->rule) : NULL);
        json_object_object_add(o, "type", json_object_new_string(change_type_name(ch->type)));
        json_object_object_add(o, "target", json_object_new_string(ch->target));
        json_object_object_add(o, "status", json_object_new_string(status));
        if (!change_kind_of(ch)->content)
                json_object_object_add(o, "before", ch->before ? json_object_new_string(ch->before) : NULL);
        json_object_array_add(arr, o);
        if (json || streq(status, "failed"))
                return;
        if (p.n && (!streq(p.status, status) || !alike(p.v[0], rec) || p.n == ARRAY_SIZE(p.v)))
                flush(&p);
        p.status = status;
        p.v[p.n++] = rec;
}

/* What the report callback of txn_rollback and the dry run fill: the JSON records and the lines. */
struct out {
        json_object *changes;
        bool json;
};

static void report_cb(const struct log_record *rec, const char *status, void *userdata)
{
        struct out *o = userdata;
        report(o->changes, rec, status, o->json);
}

struct rollback_opts {
        enum txn_scope scope;
        long to;
        bool scoped, force, json, dry_run;
        int wait;
        char scope_opt[40]; /* the scope option as given ("--to 12"), for a conflict's message */
};

/* --to's sequence number: decimal digits only (no sign, space or base prefix), within a long. */
static int parse_seq(const char *s, long *ret)
{
        int64_t v;
        if (!*s || strspn(s, "0123456789") != strlen(s))
                return cli_error("--to takes a sequence number (decimal digits), not '%s'", s);
        if (parse_i64(s, &v) < 0 || v > LONG_MAX)
                return cli_error("--to %s: out of range (a sequence number is at most %ld)", s, LONG_MAX);
        *ret = (long)v;
        return EXIT_OK;
}

/* One scope per rollback: a second that differs (--to 200 --all, --last-run --to 3) is an error,
 * not a choice by the order of the options. WHAT is the option as given, for the message. */
static int set_scope(struct rollback_opts *o, enum txn_scope scope, long to, const char *what)
{
        if (o->scoped && (o->scope != scope || o->to != to))
                return cli_error("%s and %s: give one of --last-run, --to SEQ and --all", o->scope_opt, what);
        o->scope = scope;
        o->to = to;
        o->scoped = true;
        snprintf(o->scope_opt, sizeof(o->scope_opt), "%s", what);
        return EXIT_OK;
}

static int parse_opts(int argc, char **argv, struct rollback_opts *o)
{
        static const struct option opts[] = {
                {"to", required_argument, NULL, 't'},
                {"last-run", no_argument, NULL, 'l'},
                {"all", no_argument, NULL, 'a'},
                {"force", no_argument, NULL, 'f'},
                {"wait", no_argument, NULL, 'w'},
                {"no-wait", no_argument, NULL, 'W'},
                {"json", no_argument, NULL, 'j'},
                {"dry-run", no_argument, NULL, 'n'},
                {},
        };
        *o = (struct rollback_opts){.wait = -1};
        int c, rc = EXIT_OK;
        long to = 0;
        while (rc == EXIT_OK && (c = getopt_long(argc, argv, "t:lafwjn", opts, NULL)) != -1)
                switch (c) {
                case 't':
                        if ((rc = parse_seq(optarg, &to)) == EXIT_OK) {
                                char what[40];
                                snprintf(what, sizeof(what), "--to %ld", to);
                                rc = set_scope(o, TXN_TO, to, what);
                        }
                        break;
                case 'l': rc = set_scope(o, TXN_LAST_RUN, 0, "--last-run"); break;
                case 'a': rc = set_scope(o, TXN_ALL, 0, "--all"); break;
                case 'f': o->force = true; break;
                case 'w': o->wait = 1; break;
                case 'W': o->wait = 0; break;
                case 'j': o->json = true; break;
                case 'n': o->dry_run = true; break;
                default: return cli_usage_error("rollback");
                }
        if (rc != EXIT_OK)
                return rc;
        if (optind < argc)
                return cli_error("unexpected argument '%s'", argv[optind]);
        if (!o->scoped)
                return cli_error("say what to roll back: --last-run, --to SEQ or --all");
        return EXIT_OK;
}

static void print_notes(struct txn *t)
{
        for (size_t i = 0; i < t->notes.n; i++)
                fprintf(stderr, "llmtune: %s\n", t->notes.v[i]);
        strv_done(&t->notes);
}

/* Why the selection refuses, on stderr and in the JSON conflicts. */
static void print_refusal(const struct txn_selection *s, json_object *conflicts)
{
        for (size_t i = 0; i < s->n_conflicts; i++) {
                const struct txn_conflict *x = &s->conflicts[i];
                const struct change *ch = &x->rec->change;
                json_object *o = json_object_new_object();
                json_object_object_add(o, "seq", json_object_new_int64(x->rec->seq));
                json_object_object_add(o, "rule", ch->rule ? json_object_new_string(ch->rule) : NULL);
                json_object_object_add(o, "target", json_object_new_string(ch->target));
                json_object_object_add(o, "now", json_object_new_string(x->now));
                json_object_object_add(o, "applied", json_object_new_string(x->applied));
                json_object_object_add(o, "before", json_object_new_string(x->before));
                json_object_array_add(conflicts, o);
                fprintf(stderr, "llmtune: %s changed since llmtune set it (seq %ld): now %s, llmtune wrote %s, before was %s\n",
                        ch->target, x->rec->seq, x->now, x->applied, x->before);
        }
        if (s->lost)
                fprintf(stderr, "llmtune: %s (seq %ld): its before content cannot be loaded from its backup "
                                "(missing, unreadable or altered; see `llmtune verify`)\n",
                        s->lost->change.target, s->lost->seq);
}

/* What a real rollback would do, in its order; nothing is written or logged. */
static size_t dry_run(const struct txn_selection *s, struct out *o)
{
        size_t n = 0;
        for (size_t i = s->n; i-- > 0;) {
                const struct change *ch = &s->v[i]->change;
                report(o->changes, s->v[i], s->skip[i] ? "already"
                                            : !change_undoable(ch) ? "manual"
                                                                   : "would-restore",
                       o->json);
                n += !s->skip[i];
        }
        report(NULL, NULL, NULL, o->json);
        if (!o->json)
                printf("%zu would be rolled back (dry run)\n", n);
        return n;
}

struct summary {
        const char *run, *error;
        size_t undone;
        bool refused;
        long head_seq;
        const char *head_hash;
};

static void print_json(struct root *r, const struct rollback_opts *o, const struct summary *sm, json_object *conflicts,
                       json_object *changes)
{
        json_object *top = json_object_new_object();
        json_object_object_add(top, "format", json_object_new_int(1));
        json_object_object_add(top, "root", json_object_new_string(root_path(r)));
        json_object_object_add(top, "run", sm->run ? json_object_new_string(sm->run) : NULL);
        json_object_object_add(top, "dry_run", json_object_new_boolean(o->dry_run));
        json_object_object_add(top, "rolled_back", json_object_new_int64((int64_t)sm->undone));
        json_object_object_add(top, "refused", json_object_new_boolean(sm->refused));
        json_object_object_add(top, "error", sm->error ? json_object_new_string(sm->error) : NULL);
        json_object_object_add(top, "conflicts", json_object_get(conflicts));
        json_object_object_add(top, "changes", json_object_get(changes));
        json_object_object_add(top, "head", changelog_head_json(sm->head_seq, sm->head_hash));
        json_print(stdout, top);
        json_object_put(top);
}

/* The checks before the lock: the root can be changed, by this user. */
static int check_root(struct cli *cli, struct rollback_opts *o, struct root **ret)
{
        struct root *r = cli_root(cli);
        if (!r || !cli_root_can_change(cli, r))
                return EXIT_ERROR;
        const struct site_config *conf = cli_config(cli);
        if (!conf)
                return EXIT_ERROR;
        if (root_is_archive(r))
                return cli_error("%s is a gathered archive, which is read-only: rollback changes a machine or a "
                                 "directory tree", root_path(r));
        if (o->wait < 0) /* [rollback] wait in the site configuration */
                o->wait = conf->rollback_wait == 1;
        if (root_is_live(r) && geteuid() != 0 && !o->dry_run)
                return cli_error("rollback changes the live system and needs root (or --root DIR for a tree)");
        *ret = r;
        return EXIT_OK;
}

static int rollback_cmd(struct cli *cli, int argc, char **argv)
{
        struct rollback_opts o;
        struct root *r = NULL;
        int rc = parse_opts(argc, argv, &o);
        if (rc == EXIT_OK)
                rc = check_root(cli, &o, &r);
        if (rc != EXIT_OK)
                return rc;
        _cleanup_txn_ struct txn t;
        /* A dry run writes nothing: no lock directory created, no recovery records, no debris swept. */
        if (o.dry_run)
                rc = txn_begin_read(&t, r, o.wait == 1);
        else if ((rc = txn_begin(&t, r, o.wait == 1)) == 0)
                rc = txn_recover(&t);
        print_notes(&t);
        if (rc < 0)
                return cli_error("%s", t.error);
        _cleanup_(json_object_putp) json_object *conflicts = json_object_new_array(), *changes = json_object_new_array();
        struct out out = {.changes = changes, .json = o.json};
        char head_hash[65];
        memcpy(head_hash, t.lr.end_hash, sizeof(head_hash));
        struct summary sm = {.head_seq = t.lr.end_seq, .head_hash = head_hash};
        _cleanup_free_ char *run = NULL;
        _cleanup_(txn_selection_done) struct txn_selection sel = {0};
        rc = txn_rollback_select(&t, o.scope, o.to, o.force, &sel);
        if (rc == -EBADMSG)
                for (size_t i = 0; i < t.lr.n_problems; i++)
                        fprintf(stderr, "llmtune: change log: seq %ld: %s\n", t.lr.problems[i].seq, t.lr.problems[i].message);
        print_refusal(&sel, conflicts);
        if (rc == 1 && !sel.lost)
                cli_error("%s: %s", o.dry_run ? "rollback would refuse" : "refusing to roll back", t.error);
        else if (rc != 0)
                cli_error("%s", t.error);
        else if (o.dry_run)
                sm.undone = dry_run(&sel, &out);
        else if (sel.n == 0 && !o.json)
                printf("nothing to roll back\n");
        else if (sel.n > 0) {
                rc = txn_rollback(&t, &sel, report_cb, &out, &run, &sm.undone);
                print_notes(&t);
                if (rc < 0)
                        cli_error("%s", t.error);
                if (t.log)
                        changelog_head(t.log, &sm.head_seq, head_hash);
                report(NULL, NULL, NULL, o.json);
                if (!o.json)
                        printf("%zu rolled back\n", sm.undone);
        }
        if (o.json) {
                sm.run = run;
                sm.error = rc != 0 ? t.error : NULL;
                sm.refused = json_object_array_length(conflicts) > 0;
                print_json(r, &o, &sm, conflicts, changes);
        }
        return rc == 0 ? EXIT_OK : EXIT_ERROR;
}

const struct command cmd_rollback = {
        .name = "rollback",
        .summary = "restore the state before logged changes",
        .usage = "Usage: llmtune [--root DIR] rollback (--last-run | --to SEQ | --all) [--force] [--wait|--no-wait]\n"
                 "                                   [--dry-run] [--json]\n"
                 "\n"
                 "Restore the before state of the changes still in force, newest first: those of the last\n"
                 "apply run, those logged after sequence number SEQ, or all. Each restore is logged as\n"
                 "records of its own. If a target is neither in the state llmtune left it in nor in its\n"
                 "before state (someone changed it since), nothing is rolled back unless --force.\n"
                 "A broken change log chain (see `llmtune verify`) is refused unless --force; an immutable or\n"
                 "append-only target (chattr +i, +a) always, before anything is written. Give one scope.\n"
                 "\n"
                 "  -l, --last-run   the changes of the last apply run\n"
                 "  -t, --to SEQ     the changes logged after sequence number SEQ (decimal digits)\n"
                 "  -a, --all        every change still in force\n"
                 "  -f, --force      restore over later changes, or from a broken chain\n"
                 "  -w, --wait       wait for another apply or rollback instead of failing\n"
                 "      --no-wait    fail at once ([rollback] wait in " SITE_CONFIG_PATH " sets the default)\n"
                 "  -n, --dry-run    say what would be restored (or refused); write nothing at all\n"
                 "  -j, --json       {run, dry_run, rolled_back, refused, error, conflicts: [{seq, rule, target, now,\n"
                 "                   applied, before}], changes: [{seq, rule, type, target, status, before}], head}\n"
                 "                   where status is restored, already, manual, failed or (--dry-run)\n"
                 "                   would-restore, and error (null on success) says why it was refused or stopped\n"
                 "\n"
                 "Exit status: 0 rolled back (or nothing to do), 1 refused or failed.\n",
        .run = rollback_cmd,
};
