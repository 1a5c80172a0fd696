/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llmtune ack RULE [--item ITEM] --reason TEXT [--until DATE|--for DURATION], ack --list, and
 * llmtune unack RULE [--item ITEM]: acknowledged findings (apply/ack.h). Both commands are one
 * concern, the records of apply/ack.c, so they share this file.
 *
 * An ack is appended to the change log under the apply lock, like a change: a hash-chained record
 * fsynced before the command says it was made, never rewritten, never deleted (an unack is a new
 * record that names it). The finding is judged again first, so the record holds what it was.
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apply/ack.h"
#include "cli/cli-data.h"
#include "cli/commands.h"
#include "facts/json-out.h"

#define REASON_MAX 1000

struct ack_opts {
        const char *rule, *item, *reason, *until, *dur, *profile;
        bool list, all, json;
};

/* --until DATE or --for DURATION into an RFC 3339 UTC time (*RET, caller frees; NULL: none). */
static int until_of(const struct ack_opts *o, char **ret)
{
        *ret = NULL;
        time_t t;
        if (o->until && o->dur)
                return cli_error("give --until or --for, not both");
        if (o->until && ack_parse_date(o->until, &t) < 0)
                return cli_error("--until takes a UTC date: 2026-12-01, 2026-12-01T08:00 or 2026-12-01T08:00:00Z, "
                                 "not '%s'",
                                 o->until);
        if (o->dur) {
                bool neg;
                uint64_t secs;
                if (parse_rule_number(o->dur, &neg, &secs) < 0 || neg || secs == 0 || secs > 100ull * 365 * 86400)
                        return cli_error("--for takes a duration: 30min, 12h, 7d, 2w, not '%s'", o->dur);
                t = time(NULL) + (time_t)secs;
        }
        if (!o->until && !o->dur)
                return EXIT_OK;
        if (t <= time(NULL))
                return cli_error("--until %s is in the past", o->until);
        char buf[32];
        struct tm tm;
        strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
        *ret = xstrdup(buf);
        return EXIT_OK;
}

static bool printable(const char *s)
{
        for (; *s; s++)
                if ((unsigned char)*s < 0x20 && *s != '\t')
                        return false;
        return true;
}

/* Judge RULE now (profile as audit picks it) into *RES's audit A. Returns EXIT_OK or the exit code. */
static int judge_rule(struct cli *cli, const struct ack_opts *o, struct rule_env *env, struct facts *f,
                      struct audit *a)
{
        int rc = cli_load_profile(cli, env, o->profile, f);
        if (rc != EXIT_OK)
                return rc;
        struct strv only = {0};
        strv_add(&only, o->rule);
        const char *bad = NULL;
        int erc = engine_run(&env->rules, &env->profile, f, &only, a, &bad);
        strv_done(&only);
        if (erc < 0)
                return cli_error("unknown rule '%s' (see `llmtune explain --list`)", o->rule);
        const struct result *r = &a->v[0];
        if (r->status == RES_PASS || r->status == RES_NA)
                return cli_error("%s %s here (%s): there is no finding to acknowledge", o->rule,
                                 r->status == RES_PASS ? "passes" : "does not apply",
                                 r->status == RES_PASS ? (r->observed ? r->observed : "?") : (r->reason ? r->reason : "?"));
        if (r->status == RES_ERROR)
                return cli_error("%s cannot be evaluated here (%s): only a failure can be acknowledged", o->rule,
                                 r->reason ? r->reason : "?");
        return EXIT_OK;
}

/* Append the ack of R under the apply lock. */
static int record_ack(struct cli *cli, const struct ack_opts *o, const struct rule_env *env, const struct result *r,
                      const char *until)
{
        _cleanup_close_ int lock = -1;
        int rc = changelog_lock(cli->root, true, &lock);
        if (rc < 0)
                return cli_error("cannot take the lock %s: %s", CHANGELOG_LOCK, changelog_strerror(rc));
        struct changelog *l = NULL;
        _cleanup_free_ char *why = NULL;
        rc = changelog_open(cli->root, &l, &why);
        if (rc < 0)
                return cli_error("cannot open the change log %s: %s", CHANGELOG_PATH, why ? why : changelog_strerror(rc));
        _cleanup_free_ char *run = changelog_run_id();
        struct log_context ctx = {.run = run, .profile = env->profile.name, .profile_hash = env->profile.hash};
        long seq = ack_append(l, &ctx, r, o->item, o->reason, until);
        _cleanup_free_ char *werr = seq < 0 ? xstrdup(changelog_error(l, seq)) : NULL;
        changelog_close(l);
        if (seq == -ENOENT)
                return cli_error("no failing item of %s matches '%s' (%s)", o->rule, o->item,
                                 r->observed ? r->observed : "?");
        if (seq < 0)
                return cli_error("cannot write the change log %s: %s", CHANGELOG_PATH, werr);
        printf("acknowledged %s%s%s (change log record %ld): %s%s%s\n", o->rule, o->item ? " item " : "",
               o->item ? o->item : "", seq, o->reason, until ? "; until " : "", until ? until : "");
        printf("  finding: %s\n", r->observed ? r->observed : "?");
        printf("  it is raised again when its evidence grows, when it expires, or with `llmtune unack %s`\n",
               o->rule);
        return EXIT_OK;
}

static int do_ack(struct cli *cli, const struct ack_opts *o)
{
        if (!o->reason || !*o->reason)
                return cli_error("an acknowledgement needs --reason TEXT (why the finding may stand)");
        if (strlen(o->reason) > REASON_MAX || !printable(o->reason))
                return cli_error("--reason: at most %d characters, no control characters", REASON_MAX);
        _cleanup_free_ char *until = NULL;
        int rc = until_of(o, &until);
        if (rc != EXIT_OK)
                return rc;
        if (!cli_root(cli) || !cli_root_can_change(cli, cli->root))
                return EXIT_ERROR;
        if (root_is_live(cli->root) && geteuid() != 0)
                return cli_error("acknowledging needs root: the change log is root's (or --root DIR for a tree)");
        _cleanup_(rule_env_done) struct rule_env env = {0};
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        _cleanup_(audit_done) struct audit a = {0};
        rc = judge_rule(cli, o, &env, f, &a);
        return rc != EXIT_OK ? rc : record_ack(cli, o, &env, &a.v[0], until);
}

static void list_json(const struct ack_list *acks, bool all, time_t now)
{
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < acks->n; i++) {
                const struct ack *k = &acks->v[i];
                const char *state = ack_state(k, now);
                if (!all && !streq(state, "active"))
                        continue;
                json_object *o = json_object_new_object();
                json_object_object_add(o, "seq", json_object_new_int64(k->seq));
                json_object_object_add(o, "rule", json_object_new_string(k->rule));
                json_object_object_add(o, "item", k->item ? json_object_new_string(k->item) : NULL);
                json_object_object_add(o, "state", json_object_new_string(state));
                json_object_object_add(o, "time", json_object_new_string(k->time));
                json_object_object_add(o, "user", k->user ? json_object_new_string(k->user) : NULL);
                json_object_object_add(o, "reason", json_object_new_string(k->reason));
                json_object_object_add(o, "until", k->until ? json_object_new_string(k->until) : NULL);
                json_object_object_add(o, "observed", k->observed ? json_object_new_string(k->observed) : NULL);
                json_object_object_add(o, "withdrawn_by_record", k->withdrawn ? json_object_new_int64(k->withdrawn) : NULL);
                json_object_array_add(arr, o);
        }
        json_print(stdout, arr);
        json_object_put(arr);
}

static int do_list(struct cli *cli, const struct ack_opts *o)
{
        if (!cli_root(cli))
                return EXIT_ERROR;
        struct ack_list acks;
        _cleanup_free_ char *why = NULL;
        int rc = ack_list_read(cli->root, &acks, &why);
        if (rc == -EBADMSG)
                return cli_error("the change log under %s does not verify (see `llmtune verify`): its "
                                 "acknowledgements are not trusted", root_path(cli->root));
        if (rc < 0)
                return cli_error("cannot read %s under %s: %s", CHANGELOG_PATH, root_path(cli->root),
                                 why ? why : changelog_strerror(rc));
        time_t now = time(NULL);
        size_t shown = 0;
        if (o->json)
                list_json(&acks, o->all, now);
        for (size_t i = 0; !o->json && i < acks.n; i++) {
                const struct ack *k = &acks.v[i];
                const char *state = ack_state(k, now);
                if (!o->all && !streq(state, "active"))
                        continue;
                printf("%s%5ld  %-9s  %s%s%s  by %s at %s%s%s\n", shown++ ? "" : "  SEQ  STATE\n", k->seq, state,
                       k->rule, k->item ? " item " : "", k->item ? k->item : "", k->user ? k->user : "?", k->time,
                       k->until ? ", until " : "", k->until ? k->until : "");
                printf("%18s%s\n", "reason: ", k->reason);
                printf("%18s%s\n", "finding: ", k->observed ? k->observed : "?");
                if (k->withdrawn)
                        printf("%18swithdrawn by %s at %s (record %ld)%s%s\n", "", k->withdrawn_by ? k->withdrawn_by : "?",
                               k->withdrawn_time, k->withdrawn, k->withdrawn_why ? ": " : "",
                               k->withdrawn_why ? k->withdrawn_why : "");
        }
        if (!o->json && !shown)
                printf("no %sacknowledgements\n", o->all ? "" : "active ");
        ack_list_done(&acks);
        return EXIT_OK;
}

static int ack_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"item", required_argument, NULL, 'i'},   {"reason", required_argument, NULL, 'r'},
                {"until", required_argument, NULL, 'u'},  {"for", required_argument, NULL, 'f'},
                {"list", no_argument, NULL, 'l'},         {"all", no_argument, NULL, 'a'},
                {"json", no_argument, NULL, 'j'},         {"profile", required_argument, NULL, 'p'},
                {},
        };
        struct ack_opts o = {0};
        int c;
        while ((c = getopt_long(argc, argv, "i:r:u:f:lajp:", opts, NULL)) != -1)
                switch (c) {
                case 'i': o.item = optarg; break;
                case 'r': o.reason = optarg; break;
                case 'u': o.until = optarg; break;
                case 'f': o.dur = optarg; break;
                case 'l': o.list = true; break;
                case 'a': o.all = true; break;
                case 'j': o.json = true; break;
                case 'p': o.profile = optarg; break;
                default: return cli_usage_error("ack");
                }
        if (o.list)
                return optind < argc ? cli_error("--list takes no rule") : do_list(cli, &o);
        if (optind + 1 != argc)
                return cli_error("give one rule to acknowledge (see llmtune ack --help)");
        o.rule = argv[optind];
        return do_ack(cli, &o);
}

/* Withdraw the standing acks of RULE (of ITEM only, when given) under the apply lock. */
static int do_unack(struct cli *cli, const char *rule, const char *item, const char *reason)
{
        _cleanup_close_ int lock = -1;
        int rc = changelog_lock(cli->root, true, &lock);
        if (rc < 0)
                return cli_error("cannot take the lock %s: %s", CHANGELOG_LOCK, changelog_strerror(rc));
        struct ack_list acks;
        struct changelog *l = NULL;
        _cleanup_free_ char *why = NULL;
        rc = ack_list_read(cli->root, &acks, &why);
        if (rc == 0 && (rc = changelog_open(cli->root, &l, &why)) < 0)
                ack_list_done(&acks);
        if (rc < 0)
                return cli_error("cannot use the change log %s: %s", CHANGELOG_PATH, why ? why : changelog_strerror(rc));
        _cleanup_free_ char *run = changelog_run_id();
        struct log_context ctx = {.run = run};
        size_t n = 0;
        long seq = 0;
        for (size_t i = 0; i < acks.n && seq >= 0; i++) {
                const struct ack *k = &acks.v[i];
                if (!streq(k->rule, rule) || k->withdrawn || (item && !streq(k->item, item)))
                        continue;
                seq = ack_withdraw(l, &ctx, k, reason);
                if (seq > 0)
                        printf("withdrew the acknowledgement %ld of %s%s%s (record %ld)\n", k->seq, rule,
                               k->item ? " item " : "", k->item ? k->item : "", seq);
                n += seq > 0;
        }
        _cleanup_free_ char *werr = seq < 0 ? xstrdup(changelog_error(l, seq)) : NULL;
        changelog_close(l);
        ack_list_done(&acks);
        if (seq < 0)
                return cli_error("cannot write the change log %s: %s", CHANGELOG_PATH, werr);
        if (!n)
                return cli_error("no standing acknowledgement of %s%s%s (see llmtune ack --list)", rule,
                                 item ? " item " : "", item ? item : "");
        return EXIT_OK;
}

static int unack_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"item", required_argument, NULL, 'i'},
                {"reason", required_argument, NULL, 'r'},
                {},
        };
        const char *item = NULL, *reason = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "i:r:", opts, NULL)) != -1)
                switch (c) {
                case 'i': item = optarg; break;
                case 'r': reason = optarg; break;
                default: return cli_usage_error("unack");
                }
        if (optind + 1 != argc)
                return cli_error("give one rule (see llmtune unack --help)");
        if (reason && (strlen(reason) > REASON_MAX || !printable(reason)))
                return cli_error("--reason: at most %d characters, no control characters", REASON_MAX);
        if (!cli_root(cli) || !cli_root_can_change(cli, cli->root))
                return EXIT_ERROR;
        if (root_is_live(cli->root) && geteuid() != 0)
                return cli_error("withdrawing an acknowledgement needs root (or --root DIR for a tree)");
        return do_unack(cli, argv[optind], item, reason);
}

const struct command cmd_ack = {
        .name = "ack",
        .summary = "acknowledge a finding, recorded in the change log, until its evidence changes",
        .usage = "Usage: llmtune [--root DIR] ack RULE [--item ITEM] --reason TEXT [--until DATE | --for DURATION]\n"
                 "           [--profile NAME|FILE]\n"
                 "       llmtune [--root DIR] ack --list [--all] [--json]\n"
                 "\n"
                 "Acknowledge the failure of RULE on this machine: audit, health-check, the Prometheus metrics\n"
                 "and report then show it as \"acked\" (not pass, not fail; health-check does not drain for it).\n"
                 "The rule is judged first and the ack records who, when, why, the item and what the finding\n"
                 "was (its failing facts and the rule's evidence facts, e.g. the GPU's Xid count) in the\n"
                 "hash-chained change log (`llmtune verify` checks it like any record; nothing is deleted).\n"
                 "The finding is raised again when that evidence changes: a counter that grew, a new Xid of\n"
                 "the GPU, a new failing item; when the ack expires; or when it is withdrawn (llmtune unack).\n"
                 "\n"
                 "  -i, --item ITEM       only this item: a device or port as the facts name it (0000:86:00,\n"
                 "                        mlx5_0, mlx5_0.port.1); other items of the rule still fail\n"
                 "  -r, --reason TEXT     why the finding may stand (required)\n"
                 "  -u, --until DATE      until this UTC date: 2026-12-01, 2026-12-01T08:00[:00][Z]\n"
                 "  -f, --for DURATION    for this long: 30min, 12h, 7d, 2w\n"
                 "  -p, --profile NAME|FILE  judge the rule with this profile (default: as audit)\n"
                 "  -l, --list            the acknowledgements standing now (--all: also expired and\n"
                 "                        withdrawn ones), with their reason and finding; --json as data\n"
                 "\n"
                 "Needs root on the live machine (the change log is root's). Exit status: 0 recorded; 1 the\n"
                 "rule does not fail here, no failing item matches --item, or the log could not be written.\n",
        .run = ack_cmd,
};

const struct command cmd_unack = {
        .name = "unack",
        .summary = "withdraw the acknowledgements of a rule (recorded, the ack record stays)",
        .usage = "Usage: llmtune [--root DIR] unack RULE [--item ITEM] [--reason TEXT]\n"
                 "\n"
                 "Withdraw every standing acknowledgement of RULE (of ITEM only, with --item): an \"unack\"\n"
                 "record naming each one is appended to the change log; the ack records stay. The finding is\n"
                 "reported as a failure again from the next audit on.\n"
                 "\n"
                 "  -i, --item ITEM       only the acknowledgement of this item\n"
                 "  -r, --reason TEXT     why (recorded)\n"
                 "\n"
                 "Exit status: 0 withdrawn; 1 nothing to withdraw or the log could not be written.\n",
        .run = unack_cmd,
};
