/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llmtune health-check: the audit as a node health check, for Slurm's HealthCheckProgram (the role
 * NHC, LBNL's Node Health Check, usually plays; slurm.conf(5) HealthCheckProgram,
 * HealthCheckInterval, HealthCheckNodeState).
 *
 * A failing rule at or above the configured severity makes the node unhealthy. With --slurm the
 * node is drained with `scontrol update NodeName=N State=DRAIN Reason="llmtune: RULE OBSERVED"`;
 * once healthy again it is resumed, but only when the drain reason starts with "llmtune:" (as NHC
 * resumes only nodes whose note starts with its "NHC:" leader), so a node an operator drained for
 * another reason stays drained. Rules that cannot be evaluated (a fact unreadable) never drain
 * unless drain-on-error is set; rules that do not apply never do.
 *
 * HealthCheckProgram takes no arguments, so the settings also come from a file,
 * /etc/llmtune/health-check.conf (under --root: the root's), which the options override:
 *   [health-check]
 *   severity = critical        (info, warning or critical)
 *   drain-on-error = false
 *   node = NAME                (the Slurm node name; default: this host's short name)
 *   profile = NAME             (default: detected, as audit does)
 *   timeout = SECONDS          (the whole check; default none, 40 with --slurm)
 *   rule-timeout = SECONDS     (each rule; default: what is left of timeout)
 *
 * A check that hangs is the worst answer a health check can give: slurmd kills its
 * HealthCheckProgram after 60 s and the node is then marked with a reason that names nothing. So
 * with --slurm the check has a time of its own by default (HC_SLURM_TIMEOUT_MS, below Slurm's 60 s
 * with room for scontrol), and a rule that runs out of it is an error naming that rule: like any
 * error, it drains only with drain-on-error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli-data.h"
#include "cli/commands.h"
#include "base/deadline.h"
#include "base/subprocess.h"

#define HC_CONFIG "/etc/llmtune/health-check.conf"
#define REASON_LEADER "llmtune:"
/* Slurm shows reasons in sinfo columns; keep them short. */
#define REASON_MAX 120
/* scontrol talks to slurmctld; never wait longer than this for it. */
#define SCONTROL_TIMEOUT_MS 20000
/* --slurm's default --timeout: slurmd kills a HealthCheckProgram after 60 s. */
#define HC_SLURM_TIMEOUT_MS 40000

/* NHC's convention: 0 healthy, non-zero not; 2 is ours for "could not check". */
enum { HC_HEALTHY = 0, HC_UNHEALTHY = 1, HC_ERROR = 2 };

struct hc_conf {
        enum severity severity;
        bool drain_on_error;
        char *node, *profile;
        struct engine_limits limits;
};

static int parse_bool(const char *v, bool *ret)
{
        if (streq(v, "true") || streq(v, "yes") || streq(v, "1"))
                *ret = true;
        else if (streq(v, "false") || streq(v, "no") || streq(v, "0"))
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

struct conf_loader {
        struct hc_conf *c;
        struct diags *d;
        const char *file;
};

static void on_conf_key(void *user, const char *section, unsigned section_line, const char *key, const char *value,
                        unsigned line)
{
        (void)section_line;
        struct conf_loader *l = user;
        if (!streq(section, "health-check")) {
                diag_add(l->d, l->file, line, "key '%s' outside [health-check]", key);
                return;
        }
        if (streq(key, "severity")) {
                if (severity_parse(value, &l->c->severity) < 0)
                        diag_add(l->d, l->file, line, "severity: info, warning or critical, not '%s'", value);
        } else if (streq(key, "drain-on-error")) {
                if (parse_bool(value, &l->c->drain_on_error) < 0)
                        diag_add(l->d, l->file, line, "drain-on-error: true or false, not '%s'", value);
        } else if (streq(key, "node")) {
                free(l->c->node);
                l->c->node = xstrdup(value);
        } else if (streq(key, "profile")) {
                free(l->c->profile);
                l->c->profile = xstrdup(value);
        } else if (streq(key, "timeout") || streq(key, "rule-timeout")) {
                unsigned *ms = streq(key, "timeout") ? &l->c->limits.run_ms : &l->c->limits.rule_ms;
                if (cli_parse_seconds(value, ms) < 0)
                        diag_add(l->d, l->file, line, "%s: a number of seconds from 0.001 to %u, not '%s'", key,
                                 DEADLINE_MAX_MS / 1000, value);
        } else
                diag_add(l->d, l->file, line,
                         "unknown key '%s' (severity, drain-on-error, node, profile, timeout, rule-timeout)", key);
}

/* The config file: PATH given on the command line (a host path), else HC_CONFIG in the root, each
 * read as every configuration file is (ini_read_input: judged by the trust policy on what is read).
 * A missing default file is no error; an unreadable, refused or invalid one is (the check must not
 * run with settings other than the operator's). */
static int load_conf(struct root *root, const char *path, struct hc_conf *c)
{
        struct diags d = {0};
        struct conf_loader l = {.c = c, .d = &d, .file = path ? path : HC_CONFIG};
        _cleanup_free_ char *text = NULL;
        size_t len;
        int rc = path ? ini_read_input(NULL, path, "a health-check configuration", &text, &len, &d)
                      : ini_read_optional(root, HC_CONFIG, "a health-check configuration", &text, &len, &d);
        if (rc == 0)
                ini_load_buffer(l.file, text, len, on_conf_key, &l, &d);
        return cli_report_diags(&d) == EXIT_OK ? 0 : -EINVAL;
}

/* A Slurm node name as llmtune acts on it: one host name, an RFC 1123 label (1 to 63 letters,
 * digits and '-', neither first nor last a '-'). Never a hostlist expression ("gpu[001-512]",
 * "a,b"), which scontrol expands to many nodes: a health check speaks for its own node only. NULL
 * when NAME is one, else why not. */
static const char *node_name_problem(const char *name)
{
        size_t n = strlen(name);
        if (n == 0 || n > 63)
                return "a host name has 1 to 63 characters";
        if (strpbrk(name, "[],"))
                return "a hostlist expression names many nodes; a health check acts on its own node only";
        if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != n)
                return "a host name holds only letters, digits and '-' (RFC 1123)";
        if (name[0] == '-' || name[n - 1] == '-')
                return "a host name neither starts nor ends with '-' (RFC 1123)";
        return NULL;
}

/* Run ARGV (no shell), capture stdout (stderr is passed through), at most SCONTROL_TIMEOUT_MS.
 * Returns the exit status, or -errno / -ETIMEDOUT. */
static int run_capture(char *const argv[], char **out)
{
        struct spawn_opts o = {.argv = argv, .timeout_ms = SCONTROL_TIMEOUT_MS, .err = SPAWN_STDERR_INHERIT};
        _cleanup_(spawn_result_done) struct spawn_result r = {0};
        *out = NULL;
        int rc = spawn_capture(&o, &r);
        if (rc < 0)
                return rc;
        *out = TAKE_PTR(r.out);
        return WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 128 + (WIFSIGNALED(r.status) ? WTERMSIG(r.status) : 0);
}

struct node_state {
        char *state;  /* "IDLE+DRAIN", "MIXED", "DOWN*+DRAIN"... */
        char *reason; /* without scontrol's " [user@time]" suffix; NULL when none */
};

static bool is_drained(const struct node_state *ns) { return ns->state && strstr(ns->state, "DRAIN"); }
static bool ours(const struct node_state *ns) { return ns->reason && startswith(ns->reason, REASON_LEADER); }

/* `scontrol show node NAME`: "   State=IDLE+DRAIN ThreadsPerCore=1 ..." and
 * "   Reason=text [user@2026-11-30T08:00:00]" lines (slurm 22.05). */
static int node_query(const char *node, struct node_state *ns)
{
        *ns = (struct node_state){0};
        char *argv[] = {"scontrol", "show", "node", (char *)node, NULL};
        _cleanup_free_ char *out = NULL;
        int rc = run_capture(argv, &out);
        if (rc != 0) {
                if (rc == -ETIMEDOUT)
                        cli_error("scontrol show node %s: no answer within %d s", node, SCONTROL_TIMEOUT_MS / 1000);
                else if (rc > 0)
                        cli_error("scontrol show node %s failed (exit status %d)", node, rc);
                else
                        cli_error("cannot run scontrol: %s", strerror(-rc));
                return -EIO;
        }
        char *save = NULL;
        size_t records = 0;
        bool named = false;
        for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                while (*line == ' ')
                        line++;
                if (startswith(line, "NodeName=")) {
                        /* One record per node: more than one, or another name, is not the node asked
                         * about, and its state and reason must not decide for it. */
                        const char *v = line + strlen("NodeName=");
                        records++;
                        named = strlen(node) == strcspn(v, " ") && strncmp(v, node, strlen(node)) == 0;
                        continue;
                }
                if (startswith(line, "Reason=")) {
                        char *v = line + strlen("Reason=");
                        char *br = strrchr(v, '[');
                        if (br && br > v && br[-1] == ' ' && strchr(br, '@') && endswith(br, "]"))
                                br[-1] = '\0';
                        free(ns->reason);
                        ns->reason = streq(v, "(null)") || !*v ? NULL : xstrdup(v);
                        continue;
                }
                for (char *t = line; t && *t; t = strchr(t, ' ') ? strchr(t, ' ') + 1 : NULL)
                        if (startswith(t, "State=")) {
                                const char *v = t + strlen("State=");
                                free(ns->state);
                                ns->state = xstrndup(v, strcspn(v, " "));
                        }
        }
        if (records != 1 || !named) {
                cli_error("scontrol show node %s answered with %zu node record%s%s, not that node's alone; nothing "
                          "changed", node, records, records == 1 ? "" : "s", records == 1 ? " of another name" : "");
                free(ns->state);
                free(ns->reason);
                *ns = (struct node_state){0};
                return -EIO;
        }
        if (!ns->state) {
                cli_error("scontrol show node %s: no State= in its output", node);
                free(ns->reason);
                ns->reason = NULL;
                return -EIO;
        }
        return 0;
}

static int scontrol_update(const char *node, const char *state, const char *reason)
{
        _cleanup_free_ char *n = xasprintf("NodeName=%s", node), *s = xasprintf("State=%s", state),
                            *r = reason ? xasprintf("Reason=%s", reason) : NULL;
        char *argv[] = {"scontrol", "update", n, s, r, NULL};
        _cleanup_free_ char *out = NULL;
        int rc = run_capture(argv, &out);
        if (rc != 0) {
                cli_error("scontrol update %s %s failed (%s)", n, s,
                          rc == -ETIMEDOUT ? "no answer" : rc > 0 ? "non-zero exit status" : strerror(-rc));
                return -EIO;
        }
        return 0;
}

/* "llmtune: RULE OBSERVED (+N more)", printable ASCII, at most REASON_MAX bytes. */
static char *drain_reason(const struct result *first, size_t more)
{
        _cleanup_free_ char *obs = first->status == RES_FAIL ? xstrdup(first->observed ? first->observed : "?")
                                                              : xasprintf("cannot be evaluated: %s",
                                                                          first->reason ? first->reason : "?");
        _cleanup_free_ char *tail = more ? xasprintf(" (+%zu more)", more) : xstrdup("");
        char *r = xasprintf("%s %s %s", REASON_LEADER, first->rule->id, obs);
        /* scontrol takes quotes in a reason as quoting (they vanish): use apostrophes. */
        for (char *p = r; *p; p++)
                if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                        *p = '?';
                else if (*p == '"')
                        *p = '\'';
        size_t max = REASON_MAX - strlen(tail);
        if (strlen(r) > max)
                strcpy(r + max - 3, "...");
        char *full = xasprintf("%s%s", r, tail);
        free(r);
        return full;
}

static char *short_hostname(void)
{
        char h[256] = "";
        if (gethostname(h, sizeof(h) - 1) < 0 || !*h)
                return NULL;
        h[strcspn(h, ".")] = '\0';
        return xstrdup(h);
}

static double since(const struct timespec *t0)
{
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void hc_conf_done(struct hc_conf *c)
{
        free(c->node);
        free(c->profile);
        c->node = c->profile = NULL;
}

/* The findings that count: failures at or above the severity; with drain-on-error also rules that
 * could not be evaluated. N/A never counts. Each is printed the NHC way; *ret_first is the first. */
static size_t hc_count_findings(const struct audit *a, const struct hc_conf *conf, const struct result **ret_first)
{
        size_t n_bad = 0, n_error_ignored = 0;
        *ret_first = NULL;
        for (size_t i = 0; i < a->n; i++) {
                const struct result *r = &a->v[i];
                if (r->severity < conf->severity)
                        continue;
                if (r->status == RES_ACKED)
                        fprintf(stderr, "NOTE:  llmtune:  %s %s: not counted, %s\n", r->rule->id,
                                r->observed ? r->observed : "?", r->ack_note);
                bool counts = r->status == RES_FAIL || (r->status == RES_ERROR && conf->drain_on_error);
                if (r->status == RES_ERROR && !conf->drain_on_error)
                        n_error_ignored++;
                if (!counts)
                        continue;
                if (!*ret_first)
                        *ret_first = r;
                n_bad++;
                fprintf(stderr, "ERROR:  llmtune:  Health check failed:  %s %s (%s%s%s)\n", r->rule->id,
                        r->status == RES_FAIL ? (r->observed ? r->observed : "?") : "cannot be evaluated",
                        severity_name(r->severity), r->ack_note ? "; " : "", r->ack_note ? r->ack_note : "");
        }
        for (size_t i = 0; i < a->n && n_error_ignored; i++)
                if (a->v[i].status == RES_ERROR && a->v[i].severity >= conf->severity && !conf->drain_on_error)
                        fprintf(stderr, "WARNING:  llmtune:  %s cannot be evaluated (%s); not counted (drain-on-error is off)\n",
                                a->v[i].rule->id, a->v[i].reason ? a->v[i].reason : "?");
        return n_bad;
}

/* Drain an unhealthy node (unless someone else drained it), resume a healthy one only when the
 * drain was ours. Returns RET, or HC_ERROR when Slurm could not be asked or told. */
static int hc_slurm_act(const char *node, size_t n_bad, const struct result *first, bool verbose, int ret)
{
        struct node_state ns;
        if (node_query(node, &ns) < 0)
                return HC_ERROR;
        if (n_bad) {
                _cleanup_free_ char *reason = drain_reason(first, n_bad - 1);
                if (is_drained(&ns) && !ours(&ns))
                        fprintf(stderr, "llmtune: node %s is already drained by someone else (%s); left as it is\n",
                                node, ns.reason ? ns.reason : "no reason");
                else if (is_drained(&ns) && streq(ns.reason, reason))
                        fprintf(stderr, "llmtune: node %s stays drained: %s\n", node, reason);
                else if (scontrol_update(node, "DRAIN", reason) < 0)
                        ret = HC_ERROR;
                else
                        fprintf(stderr, "llmtune: drained node %s: %s\n", node, reason);
        } else if (is_drained(&ns) && ours(&ns)) {
                if (scontrol_update(node, "RESUME", NULL) < 0)
                        ret = HC_ERROR;
                else
                        fprintf(stderr, "llmtune: resumed node %s (was: %s)\n", node, ns.reason);
        } else if (is_drained(&ns) && verbose)
                fprintf(stderr, "llmtune: node %s is healthy but drained by someone else (%s); left drained\n",
                        node, ns.reason ? ns.reason : "no reason");
        free(ns.state);
        free(ns.reason);
        return ret;
}

/* The node --slurm acts on, into *NODE (*HOST owns it when it is the host name, *FROM says where
 * it came from). On the live system: --node, else node= of the settings, else $SLURMD_NODENAME
 * (slurmd sets it for the programs it runs; it may differ from the host's name, as with slurmd -N),
 * else the short host name. Under --root (a tree, an archive, an export) only --node: the tree's
 * settings and the name of the host auditing it do not say which node of this cluster it is, so
 * without it --slurm acts on nothing. Whatever its source, it must be one host name. 0, or -1
 * after saying why. */
static int resolve_node(struct root *root, const char *config, const struct hc_conf *conf, bool slurm,
                        const char **node, char **host, char **from)
{
        const char *env_node = getenv("SLURMD_NODENAME");
        if (*node)
                *from = xstrdup("--node");
        else if (slurm && !root_is_live(root)) {
                cli_error("--slurm under --root %s acts on no node unless --node NAME is given: the tree's "
                          "node= and this host's name do not name a node of this cluster",
                          root_path(root));
                return -1;
        } else if (conf->node) {
                *node = conf->node;
                *from = config ? xasprintf("node= in %s", config) : xstrdup("node= in " HC_CONFIG);
        } else if (env_node && *env_node) {
                *node = env_node;
                *from = xstrdup("$SLURMD_NODENAME");
        } else if ((*node = *host = short_hostname()))
                *from = xstrdup("the host name");
        if (slurm && !*node) {
                cli_error("cannot tell the Slurm node name: give --node or node= in " HC_CONFIG);
                return -1;
        }
        /* Checked whenever scontrol is to hear it, and whenever an operator wrote it down. */
        bool written = *from && (streq(*from, "--node") || startswith(*from, "node="));
        const char *why = *node ? node_name_problem(*node) : NULL;
        if (why && (slurm || written)) {
                cli_error("Slurm node name '%s' (%s) is not one host name: %s; nothing changed", *node, *from, why);
                return -1;
        }
        return 0;
}

/* --prolog: the rules the profile enables, and the prolog-* rules it leaves off for other audits
 * (the GPUs free before a job: rules/prolog.ini). */
static void prolog_rules(const struct rule_env *env, struct strv *only)
{
        for (size_t i = 0; i < env->rules.n; i++) {
                const struct rule *r = &env->rules.v[i];
                enum severity sev;
                if (resolved_rule_enabled(&env->profile, r, &sev) || startswith(r->id, "prolog-"))
                        strv_add(only, r->id);
        }
}

struct hc_opts {
        bool slurm, verbose, drain_on_error, have_sev, record_counters, prolog;
        enum severity sev;
        const char *node, *profile, *config;
        struct engine_limits limits; /* given on the command line: 0 when not */
};

/* The options into O. Returns -1 to go on, else the exit status. */
static int hc_parse_opts(int argc, char **argv, struct hc_opts *o)
{
        static const struct option opts[] = {
                {"slurm", no_argument, NULL, 's'},
                {"severity", required_argument, NULL, 'S'},
                {"drain-on-error", no_argument, NULL, 'E'},
                {"node", required_argument, NULL, 'n'},
                {"profile", required_argument, NULL, 'p'},
                {"config", required_argument, NULL, 'c'},
                {"verbose", no_argument, NULL, 'v'},
                {"record-counters", no_argument, NULL, 'R'},
                {"prolog", no_argument, NULL, 'P'},
                CLI_LIMIT_OPTIONS,
                {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "sS:En:p:c:v", opts, NULL)) != -1)
                switch (c) {
                case 's': o->slurm = true; break;
                case 'S':
                        if (severity_parse(optarg, &o->sev) < 0)
                                return cli_error("--severity takes info, warning or critical, not '%s'", optarg), HC_ERROR;
                        o->have_sev = true;
                        break;
                case 'E': o->drain_on_error = true; break;
                case 'n': o->node = optarg; break;
                case 'p': o->profile = optarg; break;
                case 'c': o->config = optarg; break;
                case 'v': o->verbose = true; break;
                case 'R': o->record_counters = true; break;
                case 'P': o->prolog = true; break;
                case CLI_OPT_TIMEOUT:
                case CLI_OPT_RULE_TIMEOUT:
                        if (cli_parse_limit(c, optarg, &o->limits) != 0)
                                return HC_ERROR;
                        break;
                default: return HC_ERROR;
                }
        if (optind < argc)
                return cli_error("unexpected argument '%s' (see llmtune health-check --help)", argv[optind]), HC_ERROR;
        return -1;
}

/* The settings: the file's, then the options over them; --slurm's time when none is given. */
static void hc_merge(struct hc_conf *conf, const struct hc_opts *o)
{
        if (o->have_sev)
                conf->severity = o->sev;
        conf->drain_on_error = conf->drain_on_error || o->drain_on_error;
        if (o->limits.run_ms)
                conf->limits.run_ms = o->limits.run_ms;
        if (o->limits.rule_ms)
                conf->limits.rule_ms = o->limits.rule_ms;
        if (o->slurm && !conf->limits.run_ms)
                conf->limits.run_ms = HC_SLURM_TIMEOUT_MS;
}

/* The rules judged within the check's time, the acks applied and the counters recorded. *A is
 * filled; returns EXIT_OK or the status of what stopped it (said on stderr). */
static int hc_audit(struct cli *cli, const struct hc_opts *o, const struct hc_conf *conf, struct rule_env *env,
                    struct facts *f, struct audit *a)
{
        int rc = cli_load_profile(cli, env, o->profile ? o->profile : conf->profile, f);
        const char *bad = NULL;
        _cleanup_(strv_done) struct strv only = {0};
        if (rc == EXIT_OK && o->prolog)
                prolog_rules(env, &only);
        if (rc == EXIT_OK && engine_run_limited(&env->rules, &env->profile, f, &only, &conf->limits, a, &bad) < 0)
                rc = cli_error("unknown rule '%s'", bad);
        cli_limits_end();
        if (rc == EXIT_OK) {
                cli_judge_acks(cli, a); /* an acknowledged finding does not drain; a raised one does */
                /* the baseline of the next check's counter growth: this machine's, or a tree's when asked */
                if (root_is_live(cli->root) || o->record_counters)
                        cli_record_counters(cli, f);
        }
        return rc;
}

static int health_check_cmd(struct cli *cli, int argc, char **argv)
{
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t start_ns = deadline_now_ns();
        struct hc_opts o = {.sev = SEV_CRITICAL};
        int prc = hc_parse_opts(argc, argv, &o);
        if (prc >= 0)
                return prc;
        cli_set_give_up_status(HC_ERROR); /* a read that never answers: the check could not run */
        struct root *root = cli_root(cli);
        if (!root)
                return HC_ERROR;
        _cleanup_(hc_conf_done) struct hc_conf conf = {.severity = SEV_CRITICAL};
        if (load_conf(root, o.config, &conf) < 0)
                return HC_ERROR;
        hc_merge(&conf, &o);
        cli_limits_start(&conf.limits, start_ns);
        const char *node = o.node;
        _cleanup_free_ char *host = NULL, *from = NULL;
        if (resolve_node(root, o.config, &conf, o.slurm, &node, &host, &from) < 0)
                return HC_ERROR;

        _cleanup_(rule_env_done) struct rule_env env = {0};
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        _cleanup_(audit_done) struct audit a = {0};
        if (hc_audit(cli, &o, &conf, &env, f, &a) != EXIT_OK) {
                /* Could not check: say so the NHC way, change nothing in Slurm. */
                fprintf(stderr, "ERROR:  llmtune:  Health check could not run (see above); node state left as it is\n");
                return HC_ERROR;
        }
        const struct result *first;
        size_t n_bad = hc_count_findings(&a, &conf, &first);
        int ret = n_bad ? HC_UNHEALTHY : HC_HEALTHY;
        if (o.slurm)
                ret = hc_slurm_act(node, n_bad, first, o.verbose, ret);
        if (o.verbose)
                fprintf(stderr, "llmtune: health check of %s with profile %s, severity %s and above: %zu rules, %zu counted; %.3f s\n",
                        node ? node : "this host", env.profile.name, severity_name(conf.severity), a.n, n_bad, since(&t0));
        return ret;
}

const struct command cmd_health_check = {
        .name = "health-check",
        .summary = "the audit as a node health check (Slurm HealthCheckProgram: drain and resume)",
        .usage = "Usage: llmtune [--root DIR] health-check [--slurm] [--severity LEVEL] [--drain-on-error]\n"
                 "           [--node NAME] [--profile NAME|FILE] [--config FILE] [--verbose] [--record-counters]\n"
                 "           [--prolog] [--timeout SECONDS] [--rule-timeout SECONDS]\n"
                 "\n"
                 "Run the audit and judge the node: unhealthy when a rule fails at or above the severity\n"
                 "(default critical). Rules that do not apply never count; rules that cannot be evaluated\n"
                 "(a fact unreadable) count only with --drain-on-error. Each counted finding is printed on\n"
                 "stderr as \"ERROR:  llmtune:  Health check failed:  RULE OBSERVED (SEVERITY)\", as NHC does.\n"
                 "A finding acknowledged with `llmtune ack` does not count (a NOTE line says who and why)\n"
                 "until its evidence changes (a new Xid, a counter that grew), it expires or is withdrawn.\n"
                 "The error counters read (InfiniBand ports, AER, ECC, NVLink) are recorded in\n"
                 "/var/lib/llmtune/counters.state: the next check judges what rose since. Under --root the\n"
                 "tree is only read, unless --record-counters is given.\n"
                 "\n"
                 "With --slurm (for slurm.conf's HealthCheckProgram, through\n"
                 "/usr/libexec/llmtune/slurm-health-check, which takes no arguments): an unhealthy node is\n"
                 "drained with `scontrol update NodeName=NAME State=DRAIN Reason=\"llmtune: RULE OBSERVED\"`;\n"
                 "a healthy node is resumed only when its drain reason starts with \"llmtune:\", so a node\n"
                 "drained by an operator for another reason is left alone (and never re-labelled). The node\n"
                 "is one host name (RFC 1123), never a hostlist (gpu[001-512], a,b). Under --root the audit\n"
                 "reads DIR, scontrol still acts on the Slurm cluster of SLURM_CONF, and only on a node\n"
                 "given with --node.\n"
                 "\n"
                 "  -s, --slurm           drain and resume the node through scontrol\n"
                 "  -S, --severity LEVEL  info, warning or critical: the least severe failure that counts\n"
                 "  -E, --drain-on-error  also count rules that cannot be evaluated\n"
                 "  -n, --node NAME       the Slurm node name (default: node= of the config, else\n"
                 "                        $SLURMD_NODENAME, else this host's short name; under --root\n"
                 "                        --slurm needs it)\n"
                 "  -p, --profile NAME|FILE  the profile (default: profile= of the config, else detected)\n"
                 "  -c, --config FILE     settings file instead of " HC_CONFIG " (under the root):\n"
                 "                        [health-check] severity, drain-on-error, node, profile,\n"
                 "                        timeout, rule-timeout\n"
                 "  -v, --verbose         also say what was decided and how long the check took\n"
                 "      --record-counters under --root: record the counters in DIR's state file too\n"
                 "      --prolog          before a job (Slurm Prolog): also the prolog-* rules, off in\n"
                 "                        other audits: no compute process and no memory in use on any GPU\n"
                 "      --timeout SECONDS the most the check may take to read the machine and judge it\n"
                 "                        (default none; with --slurm 40, as slurmd kills its\n"
                 "                        HealthCheckProgram after 60 s): at its end reads and library\n"
                 "                        calls are cut and every rule that needed one is an error,\n"
                 "                        \"timed out\", named on stderr\n"
                 "      --rule-timeout SECONDS  the most one rule may take, reading the facts it is the\n"
                 "                        first to ask for included (default: what is left of --timeout)\n"
                 "\n"
                 "A rule that times out is an error like any other: it never drains unless\n"
                 "--drain-on-error. A read that outlasts even that (a file whose open never returns) ends\n"
                 "the check with status 2, naming the rule and the file.\n"
                 "\n"
                 "Exit status (NHC's convention: 0 healthy): 0 healthy, 1 unhealthy (drained, or left\n"
                 "drained by someone else), 2 the check could not run or scontrol failed (nothing changed).\n",
        .run = health_check_cmd,
};
