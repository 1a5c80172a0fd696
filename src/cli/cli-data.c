/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cli/cli-data.h"

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apply/ack.h"
#include "config.h"
#include "facts/probes/counters.h"
#include "base/deadline.h"
#include "base/site-config.h"

static bool has_rules(const char *dir)
{
        _cleanup_free_ char *p = xasprintf("%s/rules", dir);
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *cli_data_dir(void)
{
        static char *cached;
        if (cached)
                return cached;
        const char *env = getenv("LLMTUNE_DATADIR");
        if (env && *env)
                return cached = xstrdup(env);
        /* A binary run from its build tree uses the rules next to its sources. */
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n > 0) {
                exe[n] = '\0';
                if (startswith(exe, LLMTUNE_BUILDDIR "/") && has_rules(LLMTUNE_SRCDIR))
                        return cached = xstrdup(LLMTUNE_SRCDIR);
        }
        if (has_rules(LLMTUNE_DATADIR))
                return cached = xstrdup(LLMTUNE_DATADIR);
        return cached = xstrdup(LLMTUNE_SRCDIR);
}

struct facts *cli_facts_new(struct cli *cli)
{
        struct root *root = cli_root(cli);
        if (!root)
                return NULL;
        struct facts *f = facts_new(root);
        facts_set_handle(f, "datadir", (void *)cli_data_dir(), NULL);
        return f;
}

int cli_report_diags(struct diags *d)
{
        for (size_t i = 0; i < d->msgs.n; i++)
                fprintf(stderr, "llmtune: %s\n", d->msgs.v[i]);
        int rc = d->msgs.n ? EXIT_ERROR : EXIT_OK;
        strv_done(&d->msgs);
        return rc;
}

void cli_load_env_diags(struct cli *cli, struct rule_env *env, struct diags *d)
{
        const char *dir = cli_data_dir();
        _cleanup_free_ char *rdir = xasprintf("%s/rules", dir);
        _cleanup_free_ char *pdir = xasprintf("%s/profiles", dir);
        rules_load_dir(&env->rules, rdir, d);
        /* Site rules are part of the machine, as site profiles are: read through the root. */
        if (cli_root(cli))
                rules_load_site(&env->rules, cli_root(cli), d);
        profiles_load(&env->lib, pdir, cli_root(cli), d);
}

int cli_load_env(struct cli *cli, struct rule_env *env)
{
        struct diags d = {0};
        cli_load_env_diags(cli, env, &d);
        return cli_report_diags(&d);
}

int cli_detect_failed(const char *why)
{
        cli_error("cannot tell which profile fits this machine: a fact a profile's [match] needs is unreadable: %s", why);
        fputs("llmtune: name the profile with --profile NAME, or pin it (`llmtune profile set NAME`)\n", stderr);
        return EXIT_UNKNOWN;
}

int cli_pick_profile(struct cli *cli, struct rule_env *env, const char *wanted, struct facts *f)
{
        struct diags d = {0};
        const char *name = wanted;
        if (wanted && (strchr(wanted, '/') || endswith(wanted, ".ini"))) {
                size_t before = env->lib.n;
                if (profiles_load_file(&env->lib, wanted, &d) < 0)
                        return cli_report_diags(&d);
                name = env->lib.v[before].name;
        }
        const struct site_config *conf = NULL;
        if (!name) {
                conf = cli_config(cli);
                if (!conf)
                        return EXIT_ERROR;
        }
        if (name) {
                env->picked_why = xstrdup("selected with --profile");
                env->source = "option";
        } else if (conf->profile) {
                name = conf->profile;
                env->picked_why = xasprintf("pinned in %s:%u", SITE_CONFIG_PATH, conf->profile_line);
                env->source = "config";
        }
        else {
                const struct profile *p = NULL;
                int r = profile_detect(&env->lib, f, &p, &env->picked_why);
                if (r == -EIO)
                        return cli_detect_failed(env->picked_why);
                if (!p)
                        return cli_error("no profile matches this machine (is the 'base' profile missing?)");
                name = p->name;
                env->auto_picked = true;
                env->source = "detected";
        }
        if (profile_resolve(&env->lib, name, &env->rules, &env->profile, &d) < 0 && streq(env->source, "config"))
                diag_add(&d, SITE_CONFIG_PATH, conf->profile_line, "the pinned profile '%s' cannot be used (see above)", name);
        return cli_report_diags(&d);
}

int cli_load_profile(struct cli *cli, struct rule_env *env, const char *wanted, struct facts *f)
{
        int rc = cli_load_env(cli, env);
        return rc != EXIT_OK ? rc : cli_pick_profile(cli, env, wanted, f);
}

void rule_env_done(struct rule_env *env)
{
        rules_done(&env->rules);
        profiles_done(&env->lib);
        resolved_done(&env->profile);
        free(env->picked_why);
}

void cli_judge_acks(struct cli *cli, struct audit *a)
{
        if (!a->count[RES_FAIL])
                return;
        struct ack_list acks;
        _cleanup_free_ char *why = NULL;
        int rc = ack_list_read(cli->root, &acks, &why);
        if (rc == -EBADMSG)
                fprintf(stderr, "llmtune: the change log under %s does not verify (see `llmtune verify`): its "
                                "acknowledgements are not used; failures are reported as such\n",
                        root_path(cli->root));
        else if (rc < 0)
                fprintf(stderr, "llmtune: acknowledgements not read (%s under %s: %s); failures are reported as such\n",
                        CHANGELOG_PATH, root_path(cli->root), why ? why : changelog_strerror(rc));
        if (rc < 0)
                return;
        ack_judge(a, &acks, time(NULL));
        ack_list_done(&acks);
}


void cli_record_counters(struct cli *cli, struct facts *f)
{
        int rc = counters_save(f);
        if (rc < 0 && rc != -EROFS)
                fprintf(stderr, "llmtune: the error counters were not recorded in %s under %s (%s): the next run "
                                "judges their growth against the last record\n",
                        COUNTERS_STATE, root_path(cli->root), strerror(-rc));
}

int cli_parse_limit(int c, const char *arg, struct engine_limits *l)
{
        const char *opt = c == CLI_OPT_TIMEOUT ? "--timeout" : "--rule-timeout";
        if (cli_parse_seconds(arg, c == CLI_OPT_TIMEOUT ? &l->run_ms : &l->rule_ms) < 0)
                return cli_error("%s %s: not a number of seconds from 0.001 to %u", opt, arg, DEADLINE_MAX_MS / 1000);
        return 0;
}

void cli_limits_start(const struct engine_limits *l, uint64_t start_ns)
{
        deadline_budget_set(l->run_ms ? start_ns + l->run_ms * 1000000ull : 0);
}

void cli_limits_end(void)
{
        deadline_budget_set(0);
}
