/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune lint FILE...: validate profile and rule files (for CI of a site's own profiles). */
#include <stdio.h>
#include <sys/stat.h>

#include "cli-data.h"
#include "commands.h"
#include "nccl-lint.h"

/* A rule file has [rule-id] sections; a profile has [profile]. Decide by content. */
static bool is_profile(const char *path)
{
        FILE *fp = fopen(path, "re");
        if (!fp)
                return false;
        char line[256];
        bool found = false;
        while (!found && fgets(line, sizeof(line), fp)) {
                const char *s = line;
                while (*s == ' ' || *s == '\t')
                        s++;
                found = startswith(s, "[profile]");
        }
        fclose(fp);
        return found;
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

static int lint_cmd(struct cli *cli, int argc, char **argv)
{
        if (argc < 2)
                return cli_error("usage: llmtune lint FILE...");
        struct rule_env env = {0};
        if (!cli_root(cli))
                return EXIT_ERROR;
        /* The shipped rules and profiles are the context a site file is checked against. */
        int rc = cli_load_env(cli, &env);
        if (rc != EXIT_OK) {
                rule_env_done(&env);
                return rc;
        }
        struct nccl_catalog cat = {0};
        _cleanup_free_ char *cat_path = xasprintf("%s/rules/nccl-catalog.tsv", cli_data_dir());
        bool have_cat = nccl_catalog_load(cat_path, &cat) == 0 && cat.n > 0;
        struct diags d = {0};
        int bad = 0;
        for (int i = 1; i < argc; i++) {
                size_t before = d.msgs.n;
                if (is_profile(argv[i])) {
                        size_t n = env.lib.n;
                        if (profiles_load_file(&env.lib, argv[i], &d) == 0) {
                                struct resolved r;
                                if (profile_resolve(&env.lib, env.lib.v[n].name, &env.rules, &r, &d) == 0) {
                                        if (have_cat)
                                                lint_profile_nccl(&r, argv[i], &cat, &d);
                                        else
                                                diag_add(&d, argv[i], 0, "[nccl] not checked: %s cannot be read", cat_path);
                                        resolved_done(&r);
                                }
                        }
                } else {
                        struct ruleset extra = {0};
                        rules_load_file(&extra, argv[i], &d);
                        for (size_t k = 0; k < extra.n; k++) {
                                const struct rule *dup = rules_find(&env.rules, extra.v[k].id);
                                /* the shipped file itself (a rules file of the source tree) is linted
                                 * once; another file that defines a shipped id again is an error */
                                /* a site rule is named by its path inside the root */
                                _cleanup_free_ char *dup_host =
                                        dup && startswith(dup->file, RULES_SITE_DIR "/")
                                                ? root_host_path(cli_root(cli), dup->file)
                                                : dup ? xstrdup(dup->file) : NULL;
                                if (dup && !same_file(dup_host, extra.v[k].file))
                                        diag_add(&d, extra.v[k].file, extra.v[k].line, "rule '%s' already defined at %s:%u",
                                                 extra.v[k].id, dup->file, dup->line);
                        }
                        rules_done(&extra);
                }
                if (d.msgs.n > before)
                        bad++;
                else
                        printf("%s: ok\n", argv[i]);
        }
        rc = cli_report_diags(&d);
        rule_env_done(&env);
        nccl_catalog_done(&cat);
        return bad ? EXIT_ERROR : rc;
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
