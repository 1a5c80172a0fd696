/* SPDX-License-Identifier: MIT */
/* llmtune profiles [show NAME]: the shipped and site profiles, and a profile after inheritance. */
#include "cli-data.h"
#include "commands.h"

static int list_profiles(const struct rule_env *env)
{
        for (size_t i = 0; i < env->lib.n; i++) {
                const struct profile *p = &env->lib.v[i];
                const struct profile *visible = profile_find(&env->lib, p->name, true);
                printf("%-16s %-8s %s%s\n", p->name, p->site ? "site" : "shipped", p->description ? p->description : "",
                       visible != p ? " (shadowed by the site profile)" : "");
        }
        return EXIT_OK;
}

static int show_profile(struct rule_env *env, const char *name)
{
        struct diags d = {0};
        const char *n = name;
        if (strchr(name, '/') || endswith(name, ".ini")) {
                size_t before = env->lib.n;
                if (profiles_load_file(&env->lib, name, &d) < 0)
                        return cli_report_diags(&d);
                n = env->lib.v[before].name;
        }
        struct resolved r;
        if (profile_resolve(&env->lib, n, &env->rules, &r, &d) < 0)
                return cli_report_diags(&d);
        printf("name: %s\n", r.name);
        if (r.description)
                printf("description: %s\n", r.description);
        printf("hash: sha256:%s\n", r.hash);
        printf("inherits (base first):\n");
        for (size_t i = 0; i < r.chain.n; i++)
                printf("  %s\n", r.chain.v[i]);
        printf("params:\n");
        for (size_t i = 0; i < r.params.n; i++)
                printf("  %s = %s    # %s\n", r.params.v[i].key, r.params.v[i].value, r.params.v[i].origin);
        printf("rules:\n");
        for (size_t i = 0; i < env->rules.n; i++) {
                enum severity sev;
                bool on = resolved_rule_enabled(&r, &env->rules.v[i], &sev);
                printf("  %-28s %s%s%s\n", env->rules.v[i].id, on ? "on" : "off", on ? ", " : "", on ? severity_name(sev) : "");
        }
        if (r.rules.n) {
                printf("rule switches:\n");
                for (size_t i = 0; i < r.rules.n; i++)
                        printf("  %s = %s    # %s\n", r.rules.v[i].key, r.rules.v[i].value, r.rules.v[i].origin);
        }
        if (r.nccl.n) {
                printf("nccl:\n");
                for (size_t i = 0; i < r.nccl.n; i++)
                        printf("  %s=%s    # %s\n", r.nccl.v[i].key, r.nccl.v[i].value, r.nccl.v[i].origin);
        }
        size_t n_match;
        const struct expr *match = profile_match(&env->lib, r.leaf, &n_match);
        if (n_match) {
                printf("match%s:\n", match != r.leaf->match ? " (of the shipped profile it shadows)" : "");
                for (size_t i = 0; i < n_match; i++)
                        printf("  require = %s\n", match[i].text);
        } else if (!profile_detectable(&env->lib, r.leaf))
                printf("match: none (never chosen by detection: select it with --profile or pin it)\n");
        resolved_free(&r);
        return EXIT_OK;
}

static int profiles_cmd(struct cli *cli, int argc, char **argv)
{
        if (!(argc == 1 || (argc == 3 && streq(argv[1], "show"))))
                return cli_error("usage: llmtune profiles [show NAME|FILE]");
        if (!cli_root(cli))
                return EXIT_ERROR;
        struct rule_env env = {0};
        int rc = cli_load_env(cli, &env);
        if (rc == EXIT_OK)
                rc = argc == 1 ? list_profiles(&env) : show_profile(&env, argv[2]);
        rule_env_free(&env);
        return rc;
}

const struct command cmd_profiles = {
        .name = "profiles",
        .summary = "list profiles, or show one after inheritance",
        .usage = "Usage: llmtune [--root DIR] profiles [show NAME|FILE]\n"
                 "\n"
                 "Without arguments, list the shipped profiles and the site profiles in\n"
                 "ROOT/etc/llmtune/profiles.d (a site profile shadows the shipped one of the same name).\n"
                 "`show` prints the profile after inheritance: every parameter with the file and line that\n"
                 "set it, which rules are on and at which severity, its NCCL keys and match block.\n",
        .run = profiles_cmd,
};
