/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune lint FILE...: validate profile and rule files (for CI of a site's own profiles). */
#include <stdio.h>
#include <sys/stat.h>

#include "cli/cli-data.h"
#include "cli/commands.h"
#include "nccl/nccl-lint.h"

/* A rule file has [rule-id] sections; a profile has [profile]. Decide by content, read as every
 * file llmtune is handed (a FIFO is not waited on); one that cannot be read is left to the rules
 * loader, which says why. */
static bool is_profile(const char *path)
{
        _cleanup_free_ char *data = NULL;
        size_t len;
        if (read_user_file(path, HOST_FILE_MAX, &data, &len) < 0)
                return false;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it))
                if (startswith(it.line + strspn(it.line, " \t"), "[profile]"))
                        return true;
        return false;
}

/* Are A and B the same file (however named: relative, absolute, through a link)? */
static bool same_file(const char *a, const char *b)
{
        struct stat sa, sb;
        if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
                return streq(a, b);
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The [nccl] keys a profile file sets itself, read as NCCL 2.30 reads them: a value NCCL rejects,
 * ignores or misreads (NCCL_ALGO=Rnig fails every init, NCCL_P2P_LEVEL=pxb is ignored) is an error
 * of the file; apply would refuse to write it. */
static void lint_profile_nccl(const struct resolved *r, const char *file, const struct nccl_catalog *cat, struct diags *d)
{
        size_t fl = strlen(file);
        for (size_t i = 0; i < r->nccl.n; i++) {
                const struct setting *st = &r->nccl.v[i];
                if (strchr(st->key, '.') || strncmp(st->origin, file, fl) != 0 || st->origin[fl] != ':')
                        continue; /* KEY.reason, or inherited from another file */
                unsigned line = (unsigned)strtoul(st->origin + fl + 1, NULL, 10);
                _cleanup_free_ char *text = xasprintf("%s=%s\n", st->key, st->value);
                struct nccl_lint l;
                nccl_lint_text(cat, text, strlen(text), &l);
                for (size_t k = 0; k < l.n_findings; k++)
                        if (nccl_problem_is_error(l.findings[k].problem))
                                diag_add(d, file, line, "[nccl] %s", l.findings[k].message);
                nccl_lint_done(&l);
        }
}

/* The site files of the root (profiles.d, rules.d) that are among the files to lint, by their path
 * in the root: lint reports their problems under the name it was given, so the context's own
 * messages about them are dropped, and a site profile is not taken for a second definition of
 * itself. */
static void site_twins(struct root *r, int argc, char **argv, struct strv *ret)
{
        static const char *const dirs[] = {PROFILES_SITE_DIR, RULES_SITE_DIR};
        for (size_t k = 0; k < ARRAY_SIZE(dirs); k++) {
                struct strv names = {0};
                if (root_list(r, dirs[k], &names) < 0)
                        continue;
                for (size_t i = 0; i < names.n; i++) {
                        _cleanup_free_ char *p = xasprintf("%s/%s", dirs[k], names.v[i]);
                        _cleanup_free_ char *host = root_host_path(r, p);
                        for (int a = 1; a < argc; a++)
                                if (same_file(host, argv[a]) && !strv_contains(ret, p))
                                        strv_add(ret, p);
                }
                strv_done(&names);
        }
}

/* The shipped and site rules and profiles a file is checked against, loaded past their problems:
 * those go into D (they are errors of the run), except the ones about a file being linted. */
static void load_context(struct cli *cli, struct rule_env *env, const struct strv *twins, struct diags *d)
{
        struct diags all = {0};
        cli_load_env_diags(cli, env, &all);
        for (size_t i = 0; i < all.msgs.n; i++) {
                bool about_twin = false;
                for (size_t k = 0; k < twins->n && !about_twin; k++)
                        about_twin = startswith(all.msgs.v[i], twins->v[k]) && all.msgs.v[i][strlen(twins->v[k])] == ':';
                if (!about_twin)
                        strv_add(&d->msgs, all.msgs.v[i]);
        }
        strv_done(&all.msgs);
        for (size_t k = 0; k < twins->n; k++)
                profiles_forget_file(&env->lib, twins->v[k]);
}

/* CAT: the NCCL catalog, NULL when it could not be read (CAT_PATH). */
static void lint_profile(struct rule_env *env, const char *file, const struct nccl_catalog *cat, const char *cat_path,
                         struct diags *d)
{
        size_t n = env->lib.n;
        if (profiles_load_file(&env->lib, file, d) != 0)
                return;
        struct resolved r;
        if (profile_resolve(&env->lib, env->lib.v[n].name, &env->rules, &r, d) != 0)
                return;
        if (cat)
                lint_profile_nccl(&r, file, cat, d);
        else
                diag_add(d, file, 0, "[nccl] not checked: %s cannot be read", cat_path);
        resolved_done(&r);
}

static void lint_rules(struct cli *cli, const struct rule_env *env, const char *file, struct diags *d)
{
        struct ruleset extra = {0};
        rules_load_file(&extra, file, d);
        for (size_t k = 0; k < extra.n; k++) {
                const struct rule *dup = rules_find(&env->rules, extra.v[k].id);
                /* the shipped file itself (a rules file of the source tree) is linted once; another
                 * file that defines a shipped id again is an error; a site rule is named by its
                 * path inside the root */
                _cleanup_free_ char *dup_host = dup && startswith(dup->file, RULES_SITE_DIR "/")
                                                        ? root_host_path(cli_root(cli), dup->file)
                                                : dup ? xstrdup(dup->file)
                                                      : NULL;
                if (dup && !same_file(dup_host, extra.v[k].file))
                        diag_add(d, extra.v[k].file, extra.v[k].line, "rule '%s' already defined at %s:%u", extra.v[k].id,
                                 dup->file, dup->line);
        }
        rules_done(&extra);
}

static int lint_cmd(struct cli *cli, int argc, char **argv)
{
        if (argc < 2)
                return cli_error("usage: llmtune lint FILE...");
        if (!cli_root(cli))
                return EXIT_ERROR;
        struct rule_env env = {0};
        struct diags d = {0};
        struct strv twins = {0};
        site_twins(cli_root(cli), argc, argv, &twins);
        load_context(cli, &env, &twins, &d);
        strv_done(&twins);
        /* problems of the context fail the run, but every file is still linted against what loaded */
        bool context_bad = d.msgs.n > 0;
        struct nccl_catalog cat = {0};
        _cleanup_free_ char *cat_path = xasprintf("%s/rules/nccl-catalog.tsv", cli_data_dir());
        bool have_cat = nccl_catalog_load(cat_path, &cat) == 0 && cat.n > 0;
        int bad = 0;
        for (int i = 1; i < argc; i++) {
                size_t before = d.msgs.n;
                if (is_profile(argv[i]))
                        lint_profile(&env, argv[i], have_cat ? &cat : NULL, cat_path, &d);
                else
                        lint_rules(cli, &env, argv[i], &d);
                if (d.msgs.n > before)
                        bad++;
                else
                        printf("%s: ok\n", argv[i]);
        }
        int rc = cli_report_diags(&d);
        rule_env_done(&env);
        nccl_catalog_done(&cat);
        return bad || context_bad ? EXIT_ERROR : rc;
}

const struct command cmd_lint = {
        .name = "lint",
        .summary = "validate profile and rule files",
        .usage = "Usage: llmtune lint FILE...\n"
                 "\n"
                 "Check profile and rule files against the shipped rules and profiles: unknown sections\n"
                 "and keys, unknown rule ids, unknown or badly typed parameters, cyclic inheritance,\n"
                 "malformed conditions, [nccl] values NCCL 2.30 rejects, ignores or misreads (as\n"
                 "`llmtune nccl lint` reads them). Each problem is printed as FILE:LINE: message.\n"
                 "Exit status: 0 all files valid, 1 otherwise.\n",
        .run = lint_cmd,
};
