/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune explain RULE: what a rule checks, with the values of a profile, why, and the source. */
#include <getopt.h>

#include "cli/cli-data.h"
#include "cli/commands.h"
#include "facts/json-out.h"
#include "engine/remedy.h"
#include "base/site-config.h"

struct values {
        const struct rule *rule;
        const struct resolved *profile;
};

static const char *profile_param(void *userdata, const char *name)
{
        return resolved_param(userdata, name);
}

/* A remedy parameter with the profile's values filled in (what the audit and apply use). */
static char *remedy_value(const struct values *v, size_t i)
{
        char *s = expr_substitute(v->rule->remedy_vals.v[i], profile_param, (void *)v->profile, NULL);
        return s ? s : xstrdup(v->rule->remedy_vals.v[i]);
}

static const char *resolved_remedy_param(void *userdata, const char *name)
{
        /* expr_substitute wants a borrowed string: keep the last one until the next call */
        static char *last;
        const struct values *v = userdata;
        for (size_t i = 0; i < v->rule->remedy_keys.n; i++)
                if (streq(v->rule->remedy_keys.v[i], name)) {
                        free(last);
                        return last = remedy_value(v, i);
                }
        return NULL;
}

/* TEXT with the profile's values, or TEXT itself when a parameter is unknown. */
static char *resolve(const struct values *v, const char *text)
{
        char *s = expr_substitute(text, profile_param, (void *)v->profile, NULL);
        return s ? s : xstrdup(text);
}

static void print_exprs(const struct values *v, const char *label, const struct expr *e, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *s = resolve(v, e[i].text);
                printf("%-10s %s", i == 0 ? label : "", s);
                if (!streq(s, e[i].text))
                        printf("   (%s)", e[i].text);
                putchar('\n');
        }
}

static json_object *exprs_json(const struct values *v, const struct expr *e, size_t n)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_new_object();
                char *s = resolve(v, e[i].text);
                json_object_object_add(o, "condition", json_object_new_string(s));
                json_object_object_add(o, "text", json_object_new_string(e[i].text));
                free(s);
                json_object_array_add(a, o);
        }
        return a;
}

static json_object *str_or_null(const char *s) { return s ? json_object_new_string(s) : NULL; }

static void explain_json(const struct values *v, const char *profile_why)
{
        const struct rule *r = v->rule;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "format", json_object_new_int(1));
        json_object_object_add(o, "rule", json_object_new_string(r->id));
        json_object_object_add(o, "title", json_object_new_string(r->title));
        json_object_object_add(o, "area", json_object_new_string(r->area));
        json_object_object_add(o, "severity", json_object_new_string(severity_name(r->severity)));
        enum severity sev;
        bool on = resolved_rule_enabled(v->profile, r, &sev);
        json_object *p = json_object_new_object();
        json_object_object_add(p, "name", json_object_new_string(v->profile->name));
        json_object_object_add(p, "hash", json_object_new_string(v->profile->hash));
        json_object_object_add(p, "why", json_object_new_string(profile_why));
        json_object_object_add(p, "enabled", json_object_new_boolean(on));
        json_object_object_add(p, "severity", on ? json_object_new_string(severity_name(sev)) : NULL);
        json_object_object_add(o, "profile", p);
        json_object_object_add(o, "applies", exprs_json(v, r->when, r->n_when));
        json_object_object_add(o, "checks", exprs_json(v, r->checks, r->n_checks));
        json_object_object_add(o, "note_when", exprs_json(v, r->note_when, r->n_note_when));
        if (r->remedy) {
                const struct remedy_kind *k = remedy_kind_find(r->remedy);
                json_object *rem = json_object_new_object(), *params = json_object_new_object();
                json_object_object_add(rem, "kind", json_object_new_string(r->remedy));
                char *summary = k ? expr_substitute(k->summary, resolved_remedy_param, (void *)v, NULL) : NULL;
                json_object_object_add(rem, "summary", str_or_null(summary));
                free(summary);
                for (size_t i = 0; i < r->remedy_keys.n; i++) {
                        char *val = remedy_value(v, i);
                        json_object_object_add(params, r->remedy_keys.v[i], json_object_new_string(val));
                        free(val);
                }
                json_object_object_add(rem, "params", params);
                json_object_object_add(o, "remedy", rem);
        } else
                json_object_object_add(o, "remedy", NULL);
        json_object_object_add(o, "rationale", str_or_null(r->rationale));
        json_object_object_add(o, "source", str_or_null(r->source));
        json_object_object_add(o, "note", str_or_null(r->note));
        json_object_object_add(o, "file", json_object_new_string(r->file));
        json_object_object_add(o, "line", json_object_new_int64(r->line));
        json_print(stdout, o);
        json_object_put(o);
}

static void explain_human(const struct values *v, const char *profile_why)
{
        const struct rule *r = v->rule;
        enum severity sev;
        bool on = resolved_rule_enabled(v->profile, r, &sev);
        printf("%s: %s\n\n", r->id, r->title);
        printf("area:      %s\nseverity:  %s\n", r->area, severity_name(r->severity));
        printf("profile:   %s (%s): %s%s\n", v->profile->name, profile_why, on ? "on, " : "off",
               on ? severity_name(sev) : "");
        print_exprs(v, "applies:", r->when, r->n_when);
        print_exprs(v, "checks:", r->checks, r->n_checks);
        print_exprs(v, "note when:", r->note_when, r->n_note_when);
        if (r->remedy) {
                const struct remedy_kind *k = remedy_kind_find(r->remedy);
                _cleanup_free_ char *summary =
                        k ? expr_substitute(k->summary, resolved_remedy_param, (void *)v, NULL) : NULL;
                printf("remedy:    %s — %s\n", r->remedy, summary ? summary : k ? k->summary : "");
                for (size_t i = 0; i < r->remedy_keys.n; i++) {
                        _cleanup_free_ char *val = remedy_value(v, i);
                        printf("           %s = %s", r->remedy_keys.v[i], val);
                        if (!streq(val, r->remedy_vals.v[i]))
                                printf("   (%s)", r->remedy_vals.v[i]);
                        putchar('\n');
                }
        }
        printf("\nWhy: %s\n\nSource: %s\n", r->rationale, r->source);
        if (r->note)
                printf("\nNote: %s\n", r->note);
        printf("\nDefined at %s:%u\n", r->file, r->line);
}

static int list_rules(const struct rule_env *env, bool json)
{
        if (!json) {
                for (size_t i = 0; i < env->rules.n; i++)
                        printf("%-28s %-8s %s\n", env->rules.v[i].id, env->rules.v[i].area, env->rules.v[i].title);
                return EXIT_OK;
        }
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < env->rules.n; i++) {
                const struct rule *r = &env->rules.v[i];
                json_object *o = json_object_new_object();
                json_object_object_add(o, "rule", json_object_new_string(r->id));
                json_object_object_add(o, "area", json_object_new_string(r->area));
                json_object_object_add(o, "severity", json_object_new_string(severity_name(r->severity)));
                json_object_object_add(o, "title", json_object_new_string(r->title));
                json_object_array_add(a, o);
        }
        json_print_list(stdout, "rules", a);
        return EXIT_OK;
}

static int explain_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"list", no_argument, NULL, 'l'},
                {"profile", required_argument, NULL, 'p'},
                {"json", no_argument, NULL, 'j'},
                {},
        };
        bool list = false, json = false;
        const char *wanted = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "lp:j", opts, NULL)) != -1)
                switch (c) {
                case 'l': list = true; break;
                case 'p': wanted = optarg; break;
                case 'j': json = true; break;
                default: return cli_usage_error("explain");
                }
        if (list ? optind != argc : optind + 1 != argc)
                return cli_error("usage: llmtune explain [--profile NAME|FILE] [--json] RULE | --list [--json]");
        _cleanup_(rule_env_done) struct rule_env env = {0};
        if (!cli_root(cli))
                return EXIT_ERROR;
        int rc = cli_load_env(cli, &env);
        if (rc != EXIT_OK)
                return rc;
        if (list)
                return list_rules(&env, json);
        const struct rule *r = rules_find(&env.rules, argv[optind]);
        if (!r)
                return cli_error("unknown rule '%s' (see `llmtune explain --list`)", argv[optind]);
        /* The values shown are a profile's: --profile, else the pinned one, else base. No
         * detection: explaining a rule must not depend on reading the machine. */
        const struct site_config *conf = wanted ? NULL : cli_config(cli);
        if (!wanted && !conf)
                return EXIT_ERROR;
        _cleanup_free_ char *why = NULL;
        if (!wanted && conf->profile) {
                wanted = conf->profile;
                why = xasprintf("pinned in %s:%u", SITE_CONFIG_PATH, conf->profile_line);
        } else if (!wanted) {
                wanted = "base";
                why = xstrdup("base: no --profile and no pinned profile");
        }
        rc = cli_pick_profile(cli, &env, wanted, NULL);
        if (rc == EXIT_OK) {
                struct values v = {r, &env.profile};
                const char *w = why ? why : env.picked_why;
                if (json)
                        explain_json(&v, w);
                else
                        explain_human(&v, w);
        }
        return rc;
}

const struct command cmd_explain = {
        .name = "explain",
        .summary = "print what a rule checks, why, and its source",
        .usage = "Usage: llmtune explain [--profile NAME|FILE] [--json] RULE\n"
                 "       llmtune explain --list [--json]\n"
                 "\n"
                 "Print a rule's conditions and remedy with a profile's values filled in (the parameter\n"
                 "form in parentheses), whether the profile enables it and at which severity, its\n"
                 "rationale and source; or list every rule with --list.\n"
                 "\n"
                 "  -p, --profile NAME|FILE  the profile whose values are shown (default: the pinned one,\n"
                 "                           else base)\n"
                 "  -l, --list               list every rule: id, area, title\n"
                 "  -j, --json               machine-readable output (--list: {format, rules: [{rule,\n"
                 "                           area, severity, title}]})\n",
        .run = explain_cmd,
};
