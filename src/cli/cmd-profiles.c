/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune profiles [show NAME]: the shipped and site profiles, and a profile after inheritance. */
#include <getopt.h>

#include "cli/cli-data.h"
#include "cli/commands.h"
#include "facts/json-out.h"
#include "engine/param-types.h"

static json_object *match_json(const struct expr *m, size_t n)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < n; i++)
                json_object_array_add(a, json_object_new_string(m[i].text));
        return a;
}

static int list_profiles(const struct rule_env *env, bool json)
{
        json_object *arr = json ? json_object_new_array() : NULL;
        for (size_t i = 0; i < env->lib.n; i++) {
                const struct profile *p = &env->lib.v[i];
                const struct profile *visible = profile_find(&env->lib, p->name, true);
                bool detectable = profile_detectable(&env->lib, p);
                if (!json) {
                        printf("%-16s %-8s %s%s%s\n", p->name, p->site ? "site" : "shipped",
                               p->description ? p->description : "", visible != p ? " (shadowed by the site profile)" : "",
                               visible == p && !detectable ? " (no [match]: never detected)" : "");
                        continue;
                }
                size_t n;
                const struct expr *m = profile_match(&env->lib, p, &n);
                json_object *o = json_object_new_object();
                json_object_object_add(o, "name", json_object_new_string(p->name));
                json_object_object_add(o, "kind", json_object_new_string(p->site ? "site" : "shipped"));
                json_object_object_add(o, "description", p->description ? json_object_new_string(p->description) : NULL);
                json_object_object_add(o, "inherits", p->inherits ? json_object_new_string(p->inherits) : NULL);
                json_object_object_add(o, "file", json_object_new_string(p->file));
                json_object_object_add(o, "shadowed", json_object_new_boolean(visible != p));
                json_object_object_add(o, "detectable", json_object_new_boolean(detectable));
                json_object_object_add(o, "match", match_json(m, n));
                json_object_array_add(arr, o);
        }
        if (json)
                json_print_list(stdout, "profiles", arr);
        return EXIT_OK;
}

/* A parameter's declared type as data: the declaration, in words, and the allowed values when
 * they are finitely many (what the Ansible module's argument spec is made from). */
static void add_type_json(json_object *v, const char *spec)
{
        struct param_type t;
        _cleanup_free_ char *err = NULL;
        if (!spec || param_type_parse(spec, &t, &err) < 0)
                return;
        _cleanup_free_ char *words = param_type_describe(&t);
        json_object *ty = json_object_new_object();
        json_object_object_add(ty, "declared", json_object_new_string(spec));
        json_object_object_add(ty, "allowed", json_object_new_string(words));
        struct strv choices = {0};
        if (param_type_choices(&t, &choices)) {
                json_object *a = json_object_new_array();
                for (size_t i = 0; i < choices.n; i++)
                        json_object_array_add(a, json_object_new_string(choices.v[i]));
                json_object_object_add(ty, "choices", a);
                strv_done(&choices);
        }
        json_object_object_add(v, "type", ty);
        param_type_done(&t);
}

/* TYPES (NULL: none) gives each setting's declared type. */
static json_object *settings_json(const struct settings *s, const struct resolved *types)
{
        json_object *o = json_object_new_object();
        for (size_t i = 0; i < s->n; i++) {
                json_object *v = json_object_new_object();
                json_object_object_add(v, "value", json_object_new_string(s->v[i].value));
                json_object_object_add(v, "origin", json_object_new_string(s->v[i].origin));
                if (types)
                        add_type_json(v, resolved_param_type(types, s->v[i].key));
                json_object_object_add(o, s->v[i].key, v);
        }
        return o;
}

static void show_json(const struct rule_env *env, const struct resolved *r, const struct expr *match, size_t n_match)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "format", json_object_new_int(1));
        json_object_object_add(o, "name", json_object_new_string(r->name));
        json_object_object_add(o, "description", r->description ? json_object_new_string(r->description) : NULL);
        json_object_object_add(o, "hash", json_object_new_string(r->hash));
        json_object *chain = json_object_new_array();
        for (size_t i = 0; i < r->chain.n; i++)
                json_object_array_add(chain, json_object_new_string(r->chain.v[i]));
        json_object_object_add(o, "inherits", chain);
        json_object_object_add(o, "params", settings_json(&r->params, r));
        json_object *rules = json_object_new_object();
        for (size_t i = 0; i < env->rules.n; i++) {
                enum severity sev;
                bool on = resolved_rule_enabled(r, &env->rules.v[i], &sev);
                json_object_object_add(rules, env->rules.v[i].id, on ? json_object_new_string(severity_name(sev))
                                                                     : json_object_new_string("off"));
        }
        json_object_object_add(o, "rules", rules);
        json_object *sw = json_object_new_array();
        for (size_t i = 0; i < r->rules.n; i++) {
                json_object *s = json_object_new_object();
                json_object_object_add(s, "pattern", json_object_new_string(r->rules.v[i].key));
                json_object_object_add(s, "value", json_object_new_string(r->rules.v[i].value));
                json_object_object_add(s, "origin", json_object_new_string(r->rules.v[i].origin));
                json_object_array_add(sw, s);
        }
        json_object_object_add(o, "rule_switches", sw);
        json_object_object_add(o, "nccl", settings_json(&r->nccl, NULL));
        json_object_object_add(o, "match", match_json(match, n_match));
        json_object_object_add(o, "detectable", json_object_new_boolean(profile_detectable(&env->lib, r->leaf)));
        json_print(stdout, o);
        json_object_put(o);
}

static int show_profile(struct rule_env *env, const char *name, bool json)
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
        size_t n_match;
        const struct expr *match = profile_match(&env->lib, r.leaf, &n_match);
        if (json) {
                show_json(env, &r, match, n_match);
                resolved_done(&r);
                return EXIT_OK;
        }
        printf("name: %s\n", r.name);
        if (r.description)
                printf("description: %s\n", r.description);
        printf("hash: sha256:%s\n", r.hash);
        printf("inherits (base first):\n");
        for (size_t i = 0; i < r.chain.n; i++)
                printf("  %s\n", r.chain.v[i]);
        printf("params:\n");
        for (size_t i = 0; i < r.params.n; i++) {
                struct param_type t;
                _cleanup_free_ char *err = NULL, *words = NULL;
                const char *spec = resolved_param_type(&r, r.params.v[i].key);
                if (spec && param_type_parse(spec, &t, &err) == 0) {
                        words = param_type_describe(&t);
                        param_type_done(&t);
                }
                printf("  %s = %s    # %s%s%s\n", r.params.v[i].key, r.params.v[i].value, r.params.v[i].origin,
                       words ? "; " : "", words ? words : "");
        }
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
        if (n_match) {
                printf("match%s:\n", match != r.leaf->match ? " (of the shipped profile it shadows)" : "");
                for (size_t i = 0; i < n_match; i++)
                        printf("  require = %s\n", match[i].text);
        } else if (!profile_detectable(&env->lib, r.leaf))
                printf("match: none (never chosen by detection: select it with --profile or pin it)\n");
        resolved_done(&r);
        return EXIT_OK;
}

static int profiles_cmd(struct cli *cli, int argc, char **argv)
{
        bool json;
        if (cli_json_only(argc, argv, "profiles", &json) != 0)
                return EXIT_ERROR;
        int n = argc - optind;
        if (!(n == 0 || (n == 2 && streq(argv[optind], "show"))))
                return cli_error("usage: llmtune profiles [--json] [show NAME|FILE] (see llmtune profiles --help)");
        if (!cli_root(cli))
                return EXIT_ERROR;
        _cleanup_(rule_env_done) struct rule_env env = {0};
        int rc = cli_load_env(cli, &env);
        if (rc != EXIT_OK)
                return rc;
        return n == 0 ? list_profiles(&env, json) : show_profile(&env, argv[optind + 1], json);
}

const struct command cmd_profiles = {
        .name = "profiles",
        .summary = "list profiles, or show one after inheritance",
        .usage = "Usage: llmtune [--root DIR] profiles [--json] [show NAME|FILE]\n"
                 "\n"
                 "Without arguments, list the shipped profiles and the site profiles in\n"
                 "ROOT/etc/llmtune/profiles.d (a site profile shadows the shipped one of the same name;\n"
                 "one without a [match] of its own or of the profile it shadows is never detected).\n"
                 "`show` prints the profile after inheritance: every parameter with the file and line that\n"
                 "set it and the values its type allows, which rules are on and at which severity, its NCCL\n"
                 "keys and match block.\n"
                 "\n"
                 "  -j, --json   the list ({format, profiles: [{name, kind, description, inherits, file,\n"
                 "               shadowed, detectable, match}]}), or the shown profile (params and nccl with value and origin, params\n"
                 "               with their type: declared, allowed, choices when finitely many;\n"
                 "               rules: severity or \"off\", rule_switches, match, hash)\n",
        .run = profiles_cmd,
};
