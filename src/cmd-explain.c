/* SPDX-License-Identifier: MIT */
/* llmtune explain RULE: what a rule checks, why, and the source for it. */
#include "cli-data.h"
#include "commands.h"
#include "remedy.h"

static const char *remedy_param(void *userdata, const char *name)
{
        return rule_remedy_param(userdata, name);
}

static void print_exprs(const char *label, const struct expr *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                printf("%-10s %s\n", i == 0 ? label : "", v[i].text);
}

static int explain_cmd(struct cli *cli, int argc, char **argv)
{
        if (argc != 2)
                return cli_error("usage: llmtune explain RULE | --list");
        struct rule_env env = {0};
        if (!cli_root(cli))
                return EXIT_ERROR;
        int rc = cli_load_env(cli, &env);
        if (rc != EXIT_OK) {
                rule_env_free(&env);
                return rc;
        }
        if (streq(argv[1], "--list") || streq(argv[1], "-l")) {
                for (size_t i = 0; i < env.rules.n; i++)
                        printf("%-28s %-8s %s\n", env.rules.v[i].id, env.rules.v[i].area, env.rules.v[i].title);
                rule_env_free(&env);
                return EXIT_OK;
        }
        const struct rule *r = rules_find(&env.rules, argv[1]);
        if (!r) {
                rule_env_free(&env);
                return cli_error("unknown rule '%s' (see `llmtune explain --list`)", argv[1]);
        }
        printf("%s: %s\n\n", r->id, r->title);
        printf("area:      %s\nseverity:  %s\n", r->area, severity_name(r->severity));
        print_exprs("applies:", r->when, r->n_when);
        print_exprs("checks:", r->checks, r->n_checks);
        if (r->remedy) {
                const struct remedy_kind *k = remedy_kind_find(r->remedy);
                _cleanup_free_ char *summary = k ? expr_substitute(k->summary, remedy_param, (void *)r, NULL) : NULL;
                printf("remedy:    %s — %s\n", r->remedy, summary ? summary : k ? k->summary : "");
                for (size_t i = 0; i < r->remedy_keys.n; i++)
                        printf("           %s = %s\n", r->remedy_keys.v[i], r->remedy_vals.v[i]);
        }
        printf("\nWhy: %s\n\nSource: %s\n", r->rationale, r->source);
        if (r->note)
                printf("\nNote: %s\n", r->note);
        printf("\nDefined at %s:%u\n", r->file, r->line);
        rule_env_free(&env);
        return EXIT_OK;
}

const struct command cmd_explain = {
        .name = "explain",
        .summary = "print what a rule checks, why, and its source",
        .usage = "Usage: llmtune explain RULE\n"
                 "       llmtune explain --list\n"
                 "\n"
                 "Print a rule's conditions, remedy, rationale and source (KNOBS.md or better), or list\n"
                 "every rule with --list.\n",
        .run = explain_cmd,
};
