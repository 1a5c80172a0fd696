/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune audit: what on this machine deviates from a profile, why it matters, and the fix. */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "report/audit-export.h"
#include "cli/cli-data.h"
#include "cli/commands.h"
#include "base/deadline.h"
#include "facts/json-out.h"
#include "base/site-config.h"

static const char *status_label(enum result_status s)
{
        static const char *const l[] = {"PASS", "FAIL", "N/A", "ERROR", "ACKED"};
        return l[s];
}

static const char *status_color(enum result_status s)
{
        static const char *const c[] = {"\033[32m", "\033[31m", "\033[2m", "\033[35m", "\033[33m"};
        return c[s];
}

/* What --only-failed keeps: the failures and the rules that could not be evaluated. */
static bool shown(const struct result *r, bool only_failed)
{
        return !only_failed || r->status == RES_FAIL || r->status == RES_ERROR;
}

static void print_human(struct cli *cli, const struct rule_env *env, const struct audit *a, bool only_failed)
{
        const char *off = cli_color(cli, "\033[0m"), *bold = cli_color(cli, "\033[1m");
        printf("Profile: %s%s%s (%s)\n", bold, env->profile.name, off, env->picked_why);
        printf("Root:    %s\n", root_path(cli->root));
        size_t idw = 0;
        for (size_t i = 0; i < a->n; i++)
                if (strlen(a->v[i].rule->id) > idw)
                        idw = strlen(a->v[i].rule->id);
        /* Group by area, in the order areas first appear in the rules. */
        struct strv areas = {0};
        for (size_t i = 0; i < a->n; i++)
                if (shown(&a->v[i], only_failed) && !strv_contains(&areas, a->v[i].rule->area))
                        strv_add(&areas, a->v[i].rule->area);
        for (size_t k = 0; k < areas.n; k++) {
                printf("\n%s%s%s\n", bold, areas.v[k], off);
                for (size_t i = 0; i < a->n; i++) {
                        const struct result *r = &a->v[i];
                        if (!streq(r->rule->area, areas.v[k]) || !shown(r, only_failed))
                                continue;
                        printf("  %s%-5s%s %-*s  %s", cli_color(cli, status_color(r->status)), status_label(r->status), off,
                               (int)idw, r->rule->id, r->rule->title);
                        if (r->status == RES_FAIL)
                                printf(" [%s]", severity_name(r->severity));
                        putchar('\n');
                        int pad = 8 + (int)idw;
                        if (r->status == RES_FAIL) {
                                printf("%*s observed: %s\n", pad, "", r->observed ? r->observed : "?");
                                printf("%*s expected: %s\n", pad, "", r->expected ? r->expected : "?");
                                if (r->remedy_summary)
                                        printf("%*s fix:      %s\n", pad, "", r->remedy_summary);
                                if (r->reason) /* a fix already made, waiting for a reboot */
                                        printf("%*s note:     %s\n", pad, "", r->reason);
                                if (r->ack_note)
                                        printf("%*s ack:      %s\n", pad, "", r->ack_note);
                        } else if (r->status == RES_ACKED) {
                                printf("%*s observed: %s\n", pad, "", r->observed ? r->observed : "?");
                                printf("%*s %s\n", pad, "", r->ack_note);
                        } else if (r->status != RES_PASS)
                                printf("%*s %s\n", pad, "", r->reason ? r->reason : "");
                        else if (r->note)
                                printf("%*s note:     %s\n", pad, "", r->note);
                }
        }
        strv_done(&areas);
        printf("\n%zu rule%s: %zu passed, %zu failed, %zu not applicable, %zu error%s", a->n, a->n == 1 ? "" : "s",
               a->count[RES_PASS], a->count[RES_FAIL], a->count[RES_NA], a->count[RES_ERROR],
               a->count[RES_ERROR] == 1 ? "" : "s");
        if (a->count[RES_ACKED])
                printf(", %zu acknowledged", a->count[RES_ACKED]);
        putchar('\n');
}

static json_object *str_or_null(const char *s) { return s ? json_object_new_string(s) : NULL; }

static void print_json(struct cli *cli, const struct rule_env *env, struct facts *f, const struct audit *a,
                       bool only_failed)
{
        json_object *top = json_object_new_object();
        json_object_object_add(top, "format", json_object_new_int(1));
        /* When, by what and of which kernel: a fleet report compares audits of different days and
         * llmtune versions, and a finding may hold for one kernel only. */
        char when[32];
        time_t now = time(NULL);
        struct tm tm;
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
        json_object_object_add(top, "time", json_object_new_string(when));
        json_object_object_add(top, "llmtune_version", json_object_new_string(LLMTUNE_VERSION));
        json_object_object_add(top, "root", json_object_new_string(root_path(cli->root)));
        char *host = root_hostname(cli->root);
        json_object_object_add(top, "host", str_or_null(host));
        free(host);
        const struct fact *kr = facts_get(f, "kernel.release");
        json_object_object_add(top, "kernel_release", kr && kr->status == FACT_OK ? json_object_new_string(kr->str) : NULL);
        json_object *p = json_object_new_object();
        json_object_object_add(p, "name", json_object_new_string(env->profile.name));
        json_object_object_add(p, "hash", json_object_new_string(env->profile.hash));
        json_object_object_add(p, "selected", json_object_new_string(env->source));
        json_object_object_add(p, "why", json_object_new_string(env->picked_why));
        json_object_object_add(top, "profile", p);
        json_object *results = json_object_new_array();
        for (size_t i = 0; i < a->n; i++) {
                const struct result *r = &a->v[i];
                if (!shown(r, only_failed))
                        continue;
                json_object *o = json_object_new_object();
                json_object_object_add(o, "rule", json_object_new_string(r->rule->id));
                json_object_object_add(o, "title", json_object_new_string(r->rule->title));
                json_object_object_add(o, "area", json_object_new_string(r->rule->area));
                json_object_object_add(o, "severity", json_object_new_string(severity_name(r->severity)));
                json_object_object_add(o, "status", json_object_new_string(result_status_name(r->status)));
                json_object_object_add(o, "observed", str_or_null(r->observed));
                json_object_object_add(o, "expected", str_or_null(r->expected));
                json_object_object_add(o, "reason", str_or_null(r->reason));
                json_object_object_add(o, "note", str_or_null(r->note));
                if (r->rule->remedy) {
                        json_object *rem = json_object_new_object(), *params = json_object_new_object();
                        json_object_object_add(rem, "kind", json_object_new_string(r->rule->remedy));
                        for (size_t k = 0; k < r->remedy_keys.n; k++)
                                json_object_object_add(params, r->remedy_keys.v[k],
                                                       json_object_new_string(r->remedy_vals.v[k]));
                        json_object_object_add(rem, "params", params);
                        json_object_object_add(rem, "summary", str_or_null(r->remedy_summary));
                        json_object_object_add(o, "remedy", rem);
                } else
                        json_object_object_add(o, "remedy", NULL);
                json_object *ack = NULL;
                if (r->ack_note) {
                        ack = json_object_new_object();
                        json_object_object_add(ack, "seq", r->ack_seq ? json_object_new_int64(r->ack_seq) : NULL);
                        json_object_object_add(ack, "note", json_object_new_string(r->ack_note));
                }
                json_object_object_add(o, "ack", ack);
                char ms[32];
                snprintf(ms, sizeof(ms), "%.3f", (double)r->us / 1000.0);
                json_object_object_add(o, "ms", json_object_new_double_s((double)r->us / 1000.0, ms));
                json_object_array_add(results, o);
        }
        json_object_object_add(top, "results", results);
        json_object *sum = json_object_new_object();
        static const char *const keys[] = {"pass", "fail", "na", "error", "acked"};
        for (size_t k = 0; k < RES_STATUS_MAX; k++)
                json_object_object_add(sum, keys[k], json_object_new_int64((int64_t)a->count[k]));
        json_object_object_add(top, "summary", sum);
        json_print(stdout, top);
        json_object_put(top);
}

enum audit_format { FMT_HUMAN, FMT_JSON, FMT_PROMETHEUS, FMT_NFD };

struct render_ctx {
        enum audit_format fmt;
        struct audit_export *x;
        struct facts *f;
};

static void render_export(FILE *out, void *ud)
{
        const struct render_ctx *c = ud;
        if (c->fmt == FMT_PROMETHEUS)
                audit_print_prometheus(out, c->x);
        else
                audit_print_nfd(out, c->x, c->f);
}

static double seconds_since(const struct timespec *t0)
{
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* --format prometheus|nfd: to standard output, or atomically to --output. */
static int print_export(struct cli *cli, const struct rule_env *env, const struct audit *a, struct facts *f,
                        enum audit_format fmt, const char *output, const struct timespec *started,
                        const struct timespec *mono0)
{
        struct verify_state vs;
        struct audit_export x = {
                .profile = env->profile.name,
                .selected = env->source,
                .audit = a,
                .started = *started,
                .duration = seconds_since(mono0),
        };
        if (fmt == FMT_PROMETHEUS) {
                x.log_err = verify_state_read(cli->root, &vs);
                x.log = x.log_err < 0 ? NULL : &vs;
                if (x.log_err < 0)
                        fprintf(stderr, "llmtune: cannot read the change log under %s: %s\n", root_path(cli->root),
                                strerror(-x.log_err));
        }
        struct render_ctx ctx = {.fmt = fmt, .x = &x, .f = f};
        if (!output) {
                render_export(stdout, &ctx);
                if (fflush(stdout) != 0 || ferror(stdout))
                        return cli_error("cannot write standard output: %s", strerror(errno));
                return EXIT_OK;
        }
        int rc = write_file_atomic(output, render_export, &ctx);
        if (rc < 0)
                return cli_error("cannot write %s: %s", output, strerror(-rc));
        return EXIT_OK;
}

static const char *const audit_format_table[] = {"human", "json", "prometheus", "nfd"};
DEFINE_STRING_TABLE_FROM_STRING(static, audit_format, enum audit_format)

/* The exit status for gating: 2 when a rule at or above FAIL_ON failed, else 3 when one at or
 * above it could not be evaluated (an unreadable fact: neither pass nor fail), else 0. */
static int gate(const struct audit *a, enum severity fail_on)
{
        bool failed = false, unknown = false;
        for (size_t i = 0; i < a->n; i++) {
                if (a->v[i].severity < fail_on)
                        continue;
                failed |= a->v[i].status == RES_FAIL;
                unknown |= a->v[i].status == RES_ERROR;
        }
        return failed ? EXIT_FINDINGS : unknown ? EXIT_UNKNOWN : EXIT_OK;
}

struct audit_opts {
        const char *profile, *output, *fail_on_arg;
        struct strv only; /* --rule */
        struct engine_limits limits; /* --timeout, --rule-timeout */
        enum audit_format fmt;
        bool quiet, only_failed, record_counters;
        enum severity fail_on;
};

static void audit_opts_done(struct audit_opts *o)
{
        strv_done(&o->only);
}

/* The options into O, the --rule ids given as operands too (--rule a b c). Returns -1 to go on,
 * else the exit code. */
static int parse_audit_opts(int argc, char **argv, struct audit_opts *o)
{
        static const struct option opts[] = {
                {"profile", required_argument, NULL, 'p'},
                {"rule", required_argument, NULL, 'r'},
                {"json", no_argument, NULL, 'j'},
                {"format", required_argument, NULL, 'f'},
                {"output", required_argument, NULL, 'o'},
                {"fail-on", required_argument, NULL, 'F'},
                {"quiet", no_argument, NULL, 'q'},
                {"only-failed", no_argument, NULL, 'O'},
                {"record-counters", no_argument, NULL, 'R'},
                CLI_LIMIT_OPTIONS,
                {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "p:r:jf:o:q", opts, NULL)) != -1)
                switch (c) {
                case 'p': o->profile = optarg; break;
                case 'r': strv_add(&o->only, optarg); break;
                case 'j': o->fmt = FMT_JSON; break;
                case 'f':
                        if (audit_format_from_string(optarg, &o->fmt) < 0)
                                return cli_error("--format takes human, json, prometheus or nfd, not '%s'", optarg);
                        break;
                case 'o': o->output = optarg; break;
                case 'F': o->fail_on_arg = optarg; break;
                case 'q': o->quiet = true; break;
                case 'O': o->only_failed = true; break;
                case 'R': o->record_counters = true; break;
                case CLI_OPT_TIMEOUT:
                case CLI_OPT_RULE_TIMEOUT:
                        if (cli_parse_limit(c, optarg, &o->limits) != 0)
                                return EXIT_ERROR;
                        break;
                default: return cli_usage_error("audit");
                }
        if (o->output && o->fmt != FMT_PROMETHEUS && o->fmt != FMT_NFD)
                return cli_error("--output applies to --format prometheus and nfd");
        if (o->fail_on_arg && severity_parse(o->fail_on_arg, &o->fail_on) < 0)
                return cli_error("--fail-on takes critical, warning or info, not '%s'", o->fail_on_arg);
        for (int i = optind; i < argc; i++)
                if (o->only.n)
                        strv_add(&o->only, argv[i]);
                else
                        return cli_error("unexpected argument '%s' (see llmtune audit --help)", argv[i]);
        return -1;
}

/* The rules run on F and the result printed as O asks. Returns the exit code (gate()). */
static int audit_run(struct cli *cli, struct rule_env *env, struct facts *f, const struct audit_opts *o,
                     const struct timespec *started, const struct timespec *mono0)
{
        struct audit a;
        const char *bad = NULL;
        int erc = engine_run_limited(&env->rules, &env->profile, f, &o->only, &o->limits, &a, &bad);
        cli_limits_end();
        if (erc < 0)
                return cli_error("unknown rule '%s' (see `llmtune explain --list`)", bad);
        cli_judge_acks(cli, &a);
        if (o->record_counters)
                cli_record_counters(cli, f);
        int wrc = EXIT_OK;
        if (o->quiet)
                ;
        else if (o->fmt == FMT_JSON)
                print_json(cli, env, f, &a, o->only_failed);
        else if (o->fmt == FMT_HUMAN)
                print_human(cli, env, &a, o->only_failed);
        else
                wrc = print_export(cli, env, &a, f, o->fmt, o->output, started, mono0);
        int rc = wrc != EXIT_OK ? wrc : gate(&a, o->fail_on);
        audit_done(&a);
        return rc;
}

static int audit_cmd(struct cli *cli, int argc, char **argv)
{
        _cleanup_(audit_opts_done) struct audit_opts o = {.fmt = FMT_HUMAN, .fail_on = SEV_WARNING};
        /* The audit's time and duration (--format prometheus): from before the facts are read. */
        struct timespec started, mono0;
        clock_gettime(CLOCK_REALTIME, &started);
        clock_gettime(CLOCK_MONOTONIC, &mono0);
        uint64_t start_ns = deadline_now_ns();
        int rc = parse_audit_opts(argc, argv, &o);
        if (rc >= 0)
                return rc;
        cli_limits_start(&o.limits, start_ns);
        struct root *root = cli_root(cli);
        const struct site_config *conf = root ? cli_config(cli) : NULL;
        if (!conf)
                return EXIT_ERROR;
        if (!o.fail_on_arg && conf->fail_on)
                severity_parse(conf->fail_on, &o.fail_on); /* validated when the file was read */
        _cleanup_(rule_env_done) struct rule_env env = {0};
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        rc = cli_load_profile(cli, &env, o.profile, f);
        if (rc == EXIT_OK)
                rc = audit_run(cli, &env, f, &o, &started, &mono0);
        cli_limits_end();
        return rc;
}

const struct command cmd_audit = {
        .name = "audit",
        .summary = "check this machine against a profile and explain every deviation",
        .usage = "Usage: llmtune [--root DIR] audit [--profile NAME|FILE] [--rule ID...]\n"
                 "           [--json | --format human|json|prometheus|nfd [--output FILE]]\n"
                 "           [--quiet] [--only-failed] [--record-counters] [--fail-on critical|warning|info]\n"
                 "           [--timeout SECONDS] [--rule-timeout SECONDS]\n"
                 "\n"
                 "Evaluate every rule the profile enables and print, per rule: PASS, FAIL (with the observed\n"
                 "and expected values and the fix), N/A (with the reason: no cpufreq driver, no GPU...) or\n"
                 "ERROR (a fact could not be read), or ACKED (a failure acknowledged with `llmtune ack`\n"
                 "whose evidence has not changed since: not a failure). Without --profile, the profile whose\n"
                 "match block fits\n"
                 "this machine best is used, and the output says which and why (see `llmtune recommend`).\n"
                 "\n"
                 "  -p, --profile NAME|FILE  profile name (see `llmtune profiles`) or path to a .ini file\n"
                 "  -r, --rule ID...         only these rules (repeat, or list ids after it)\n"
                 "  -j, --json               machine-readable output (shape documented in the README)\n"
                 "  -f, --format FMT         human (default), json (as --json), prometheus (text exposition\n"
                 "                           format for node_exporter's textfile collector: one series per\n"
                 "                           rule, counts per severity, audit time and duration, the change\n"
                 "                           log's verify state and last apply) or nfd (node-feature-discovery\n"
                 "                           feature file: profile, audit result, GPU model and count, IB rate)\n"
                 "  -o, --output FILE        with prometheus or nfd: write FILE atomically (a temporary file\n"
                 "                           in its directory renamed over it) instead of standard output\n"
                 "  -q, --quiet              print nothing: the exit status is the answer\n"
                 "      --only-failed        show only the rules that failed or could not be evaluated\n"
                 "                           (the summary still counts every rule)\n"
                 "      --record-counters    record the error counters read as the baseline of the next\n"
                 "                           run's growth (health-check does so; an audit only with this)\n"
                 "      --fail-on SEVERITY   the lowest severity that fails the audit: critical, warning\n"
                 "                           (default, or [audit] fail_on in " SITE_CONFIG_PATH ") or info\n"
                 "      --timeout SECONDS    the most the audit may take to read the machine and judge it\n"
                 "                           (default: no bound); at its end reads and library calls in\n"
                 "                           progress are cut, none is begun, and each rule that needed one\n"
                 "                           is ERROR \"timed out\" with its name; the rest are reported\n"
                 "      --rule-timeout SECONDS  the most one rule may take, the facts it is the first to\n"
                 "                           ask for included (default: what is left of --timeout)\n"
                 "\n"
                 "Colour is used only on a terminal (TERM set, not dumb) and never when NO_COLOR is set.\n"
                 "Exit status: 0 no rule at or above the --fail-on severity failed or was left unevaluated;\n"
                 "2 at least one such rule failed; 3 none failed but at least one could not be evaluated\n"
                 "(an unreadable fact, a rule that timed out), or, without --profile, which profile fits\n"
                 "could not be told;\n"
                 "1 usage error or unreadable profile/rules/configuration.\n",
        .run = audit_cmd,
};
