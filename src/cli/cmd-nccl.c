/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune nccl: lint NCCL configuration files; print the settings llmtune would give NCCL. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "cli/cli-data.h"
#include "cli/commands.h"
#include "nccl/nccl-gen.h"
#include "facts/probes/probes.h"

/* A file named on the command line is the user's own (like `llmtune lint FILE`), not the root's;
 * "-" is standard input. */
static int read_host_file(const char *path, char **ret, size_t *ret_len)
{
        if (!streq(path, "-"))
                return read_user_file(path, HOST_FILE_MAX, ret, ret_len);
        return read_fd_capped(STDIN_FILENO, HOST_FILE_MAX, ret, ret_len);
}

static size_t lint_print(const struct nccl_catalog *c, const char *label, const char *data, size_t len)
{
        struct nccl_lint l;
        nccl_lint_text(c, data, len, &l);
        for (size_t i = 0; i < l.n_findings; i++)
                printf("%s:%u: %s: %s: %s\n", label, l.findings[i].line,
                       nccl_problem_is_error(l.findings[i].problem) ? "error" : "warning",
                       nccl_problem_name(l.findings[i].problem), l.findings[i].message);
        size_t n = l.n_findings;
        nccl_lint_done(&l);
        return n;
}

static int nccl_lint_cmd(struct cli *cli, struct facts *f, const struct nccl_catalog *c, int argc, char **argv)
{
        size_t findings = 0;
        int rc = EXIT_OK;
        if (argc > 0) {
                for (int i = 0; i < argc; i++) {
                        char *data;
                        size_t len;
                        int r = read_host_file(argv[i], &data, &len);
                        if (r < 0) {
                                _cleanup_free_ char *why = read_user_file_why(r, HOST_FILE_MAX, "an NCCL configuration file");
                                rc = cli_error("%s: %s", argv[i], why);
                                continue;
                        }
                        findings += lint_print(c, streq(argv[i], "-") ? "<stdin>" : argv[i], data, len);
                        free(data);
                }
        } else {
                /* The files NCCL reads on the root: /etc/nccl.conf and the homes' ~/.nccl.conf. */
                struct strv paths = {0};
                int hrc = nccl_conf_paths(facts_root(f), &paths);
                if (hrc < 0)
                        rc = cli_error("/home: cannot list it (%s): a ~/.nccl.conf there is not linted",
                                       strerror(-hrc));
                size_t seen = 0;
                for (size_t i = 0; i < paths.n; i++) {
                        const char *data;
                        size_t len;
                        int r = root_read(facts_root(f), paths.v[i], &data, &len);
                        if (r == -ENOENT)
                                continue;
                        seen++;
                        if (r < 0)
                                rc = cli_error("%s: %s", paths.v[i], strerror(-r));
                        else
                                findings += lint_print(c, paths.v[i], data, len);
                }
                if (!seen && hrc == 0)
                        printf("no NCCL configuration file under %s (/etc/nccl.conf, ~/.nccl.conf)\n",
                               root_path(facts_root(f)));
                strv_done(&paths);
        }
        return rc != EXIT_OK ? rc : findings ? EXIT_FINDINGS : EXIT_OK;
}

/* env or conf: the settings for the profile the command line picks, as export lines or the file. */
static int nccl_render_cmd(struct cli *cli, struct facts *f, const struct nccl_catalog *cat, const char *sub,
                           const char *profile)
{
        _cleanup_(rule_env_done) struct rule_env env = {0};
        int rc = cli_load_profile(cli, &env, profile, f);
        if (rc != EXIT_OK)
                return rc;
        _cleanup_free_ char *out = NULL;
        if (streq(sub, "env")) {
                struct nccl_settings s;
                nccl_settings_build(f, &env.profile, cat, &s);
                out = nccl_env_render(&s);
                nccl_settings_done(&s);
        } else {
                const char *data = NULL;
                int r = root_read(facts_root(f), "/etc/nccl.conf", &data, NULL);
                if (r < 0 && r != -ENOENT)
                        return cli_error("/etc/nccl.conf: %s", strerror(-r));
                out = nccl_conf_render(f, &env.profile, cat, r < 0 ? NULL : data);
        }
        if (out)
                fputs(out, stdout);
        return EXIT_OK;
}

/* Options may also follow the subcommand: nccl env --profile a100-8x. Returns the index of the
 * first argument that is not one, or -1 (a usage error, said). */
static int profile_after(int argc, char **argv, int rest, const char **profile)
{
        for (; rest < argc; rest++) {
                if (streq(argv[rest], "--profile") || streq(argv[rest], "-p")) {
                        if (rest + 1 >= argc)
                                return cli_error("--profile needs a name or file"), -1;
                        *profile = argv[++rest];
                } else if (startswith(argv[rest], "--profile="))
                        *profile = argv[rest] + strlen("--profile=");
                else
                        break;
        }
        return rest;
}

static int nccl_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"profile", required_argument, NULL, 'p'},
                {},
        };
        const char *profile = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "+p:", opts, NULL)) != -1)
                switch (c) {
                case 'p': profile = optarg; break;
                default: return cli_usage_error("nccl");
                }
        if (optind >= argc)
                return cli_error("nccl needs a subcommand: lint, env or conf (see llmtune nccl --help)");
        const char *sub = argv[optind++];
        int rest = profile_after(argc, argv, optind, &profile);
        if (rest < 0)
                return EXIT_ERROR;
        bool lint = streq(sub, "lint");
        if (!lint && !streq(sub, "env") && !streq(sub, "conf"))
                return cli_error("unknown nccl subcommand '%s' (lint, env, conf)", sub);
        if (!lint && rest < argc)
                return cli_error("unexpected argument '%s'", argv[rest]);
        if (lint && profile)
                return cli_error("lint takes no --profile");
        if (!cli_root(cli))
                return EXIT_ERROR;
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        const struct nccl_catalog *cat = facts_nccl_catalog(f);
        if (!cat)
                return cli_error("the NCCL catalog (rules/nccl-catalog.tsv under %s) cannot be read", cli_data_dir());
        if (lint)
                return nccl_lint_cmd(cli, f, cat, argc - rest, argv + rest);
        return nccl_render_cmd(cli, f, cat, sub, profile);
}

const struct command cmd_nccl = {
        .name = "nccl",
        .summary = "lint NCCL configuration files; print the NCCL settings for this machine",
        .usage = "Usage: llmtune [--root DIR] nccl lint [FILE...]\n"
                 "       llmtune [--root DIR] nccl env [--profile NAME|FILE]\n"
                 "       llmtune [--root DIR] nccl conf [--profile NAME|FILE]\n"
                 "\n"
                 "lint   check NCCL configuration files against NCCL's reading rules and its variables\n"
                 "       (rules/nccl-catalog.tsv, NCCL 2.30.7): unknown keys (with a \"did you mean\"),\n"
                 "       deprecated keys and their replacement, removed keys, keys that are not NCCL's\n"
                 "       (PyTorch's TORCH_NCCL_* belong to the job's environment), values of the wrong type\n"
                 "       or outside the allowed set (level names are case-sensitive: pxb is ignored),\n"
                 "       NCCL_ALGO/NCCL_PROTO tokens NCCL rejects (init fails), spaces around '=', quotes,\n"
                 "       'export', inline '#', duplicates (the first one wins in NCCL), CRLF, debugging\n"
                 "       switches and settings (NCCL_DEBUG=INFO, NCCL_ALGO, NCCL_BUFFSIZE, NCCL_GRAPH_FILE...),\n"
                 "       NCCL_IB_GID_INDEX (NCCL 2.21+ chooses it), NCCL_IB_HCA without '=' (prefixes).\n"
                 "       One line per problem: FILE:LINE: SEVERITY: KIND: MESSAGE, SEVERITY error (NCCL fails,\n"
                 "       ignores or misreads the line) or warning (it acts, but should not be kept so).\n"
                 "       Without FILE: ROOT/etc/nccl.conf, ROOT/root/.nccl.conf and ROOT/home/*/.nccl.conf.\n"
                 "       FILE - reads stdin.\n"
                 "env    the settings llmtune writes to /etc/nccl.conf (the profile's [nccl] keys, then\n"
                 "       NCCL_IB_HCA from the ACTIVE InfiniBand/RoCE ports and NCCL_SOCKET_IFNAME from the\n"
                 "       interfaces that are up with an address) as export lines for a job script\n"
                 "conf   the /etc/nccl.conf that `llmtune apply` would write: a managed block first (NCCL:\n"
                 "       the first definition wins), then the site's lines, those NCCL would misread or\n"
                 "       that are unknown, removed, not NCCL's, debugging switches or duplicates commented\n"
                 "       out behind \"#llmtune-disabled# \"\n"
                 "\n"
                 "  -p, --profile NAME|FILE  profile (default: the pinned one, else detected: `llmtune profile`)\n"
                 "\n"
                 "A profile may keep a debugging switch (NCCL_P2P_DISABLE, NCCL_IB_DISABLE,\n"
                 "NCCL_SHM_DISABLE) only with a reason: NCCL_IB_DISABLE.reason = ... in its [nccl] section.\n"
                 "\n"
                 "Exit status: 0; lint: 2 when a problem was found; 1 unreadable file or usage error.\n",
        .run = nccl_cmd,
};
