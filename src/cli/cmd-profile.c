/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llmtune profile [set NAME | unset]: which profile is in use and where that comes from (the
 * command line, the pin in /etc/llmtune/llmtune.conf, detection), and pinning one: what
 * `tuned-adm active` / `tuned-adm profile NAME` give tuned users.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apply/actions.h"
#include "cli/cli-data.h"
#include "cli/commands.h"
#include "facts/json-out.h"
#include "base/site-config.h"

static int show_active(struct cli *cli, const char *wanted, bool json)
{
        _cleanup_(rule_env_done) struct rule_env env = {0};
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        int rc = f ? cli_load_profile(cli, &env, wanted, f) : EXIT_ERROR;
        if (rc == EXIT_OK) {
                const char *from = streq(env.source, "option") ? "command line" : streq(env.source, "config") ? "config"
                                                                                                               : "detection";
                if (json) {
                        json_object *o = json_object_new_object();
                        json_object_object_add(o, "format", json_object_new_int(1));
                        json_object_object_add(o, "profile", json_object_new_string(env.profile.name));
                        json_object_object_add(o, "hash", json_object_new_string(env.profile.hash));
                        json_object_object_add(o, "source", json_object_new_string(env.source));
                        json_object_object_add(o, "why", json_object_new_string(env.picked_why));
                        json_object_object_add(o, "config", json_object_new_string(SITE_CONFIG_PATH));
                        json_print(stdout, o);
                        json_object_put(o);
                } else {
                        printf("%s\n", env.profile.name);
                        printf("  from:  %s (%s)\n", from, env.picked_why);
                        printf("  hash:  sha256:%s\n", env.profile.hash);
                        if (!streq(env.source, "config"))
                                printf("  pin it with `llmtune profile set %s` (%s)\n", env.profile.name, SITE_CONFIG_PATH);
                }
        }
        return rc;
}

/* mkdir ROOT/etc/llmtune when it is missing (through the root handle, like every write). */
static int make_config_dir(struct root *r)
{
        _cleanup_close_ int dfd = root_open(r, "/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (dfd < 0)
                return dfd;
        return mkdirat(dfd, "llmtune", 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* A pin is the operator's word, so it is kept; but a profile whose [match] does not hold here (an
 * 80 GB profile on a 40 GB board) would be applied by every boot, health check and audit, so
 * pinning it says so: the requirements that fail, NULL when all hold. */
static char *misfit_of(struct cli *cli, const struct rule_env *env, const char *name)
{
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        const struct profile *p = profile_find(&env->lib, name, true);
        return f && p ? profile_misfit(&env->lib, p, f) : NULL;
}

/* NAME resolves with the rules it names (errors reported), and *MISFIT says where it does not fit. */
static int pin_resolves(struct cli *cli, const char *name, char **misfit)
{
        _cleanup_(rule_env_done) struct rule_env env = {0};
        int rc = cli_load_env(cli, &env);
        if (rc != EXIT_OK)
                return rc;
        struct diags d = {0};
        struct resolved res;
        if (profile_resolve(&env.lib, name, &env.rules, &res, &d) == 0) {
                resolved_done(&res);
                *misfit = misfit_of(cli, &env, name);
        }
        return cli_report_diags(&d);
}

static int set_pin(struct cli *cli, const char *name)
{
        struct root *r = cli_root(cli);
        if (!r)
                return EXIT_ERROR;
        if (name && (strchr(name, '/') || endswith(name, ".ini")))
                return cli_error("pin a profile by name; put a profile file in /etc/llmtune/profiles.d first");
        if (root_is_live(r) && geteuid() != 0)
                return cli_error("changing %s needs root (or --root DIR for a tree)", SITE_CONFIG_PATH);
        /* The configuration must be valid before it is changed, and the profile must resolve. */
        if (!cli_config(cli))
                return EXIT_ERROR;
        _cleanup_free_ char *misfit = NULL;
        if (name && pin_resolves(cli, name, &misfit) != EXIT_OK)
                return cli_error("not pinning '%s'", name);
        const char *data = NULL;
        size_t len = 0;
        int rc = root_read(r, SITE_CONFIG_PATH, &data, &len);
        if (rc < 0 && rc != -ENOENT)
                return cli_error("cannot read %s: %s", SITE_CONFIG_PATH, strerror(-rc));
        _cleanup_free_ char *old = rc == 0 ? strndup(data, len) : NULL;
        if (!name && !old) {
                printf("no profile pinned; detection chooses\n");
                return EXIT_OK;
        }
        if (misfit)
                fprintf(stderr, "llmtune: warning: profile %s does not fit this machine: %s (`llmtune recommend` says "
                                "which does); pinning it all the same\n",
                        name, misfit);
        _cleanup_free_ char *text = site_config_with_profile(old, name);
        if (old && streq(old, text)) {
                printf(name ? "profile %s already pinned\n" : "no profile pinned; detection chooses%s\n", name ? name : "");
                return EXIT_OK;
        }
        rc = make_config_dir(r);
        if (rc == 0)
                rc = root_write_file(r, SITE_CONFIG_PATH, text, strlen(text), 0644);
        if (rc < 0)
                return cli_error("cannot write %s: %s", SITE_CONFIG_PATH, strerror(-rc));
        if (name)
                printf("pinned profile %s in %s\n", name, SITE_CONFIG_PATH);
        else
                printf("unpinned: detection chooses the profile (%s)\n", SITE_CONFIG_PATH);
        return EXIT_OK;
}

static int profile_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"profile", required_argument, NULL, 'p'},
                {"json", no_argument, NULL, 'j'},
                {},
        };
        const char *wanted = NULL;
        bool json = false;
        int c;
        while ((c = getopt_long(argc, argv, "p:j", opts, NULL)) != -1)
                switch (c) {
                case 'p': wanted = optarg; break;
                case 'j': json = true; break;
                default: return cli_usage_error("profile");
                }
        int n = argc - optind;
        if (n == 0)
                return show_active(cli, wanted, json);
        if (wanted || json)
                return cli_error("--profile and --json go with `llmtune profile` alone (see llmtune profile --help)");
        if (n == 2 && streq(argv[optind], "set"))
                return set_pin(cli, argv[optind + 1]);
        if (n == 1 && streq(argv[optind], "unset"))
                return set_pin(cli, NULL);
        return cli_error("usage: llmtune profile [--json] | profile set NAME | profile unset (see llmtune profile --help)");
}

const struct command cmd_profile = {
        .name = "profile",
        .summary = "show the profile in use and why, or pin one",
        .usage = "Usage: llmtune [--root DIR] profile [--profile NAME|FILE] [--json]\n"
                 "       llmtune [--root DIR] profile set NAME\n"
                 "       llmtune [--root DIR] profile unset\n"
                 "\n"
                 "Without arguments, print the profile audit, plan and apply use here and where it comes\n"
                 "from: the command line (--profile), the pin in " SITE_CONFIG_PATH ", or detection\n"
                 "(see `llmtune recommend`), with its content hash.\n"
                 "`set NAME` pins the profile NAME (it must resolve) in " SITE_CONFIG_PATH ", keeping\n"
                 "every other line of the file; a profile whose [match] does not hold here (its own, or\n"
                 "that of the profile it inherits) is pinned with a warning naming what fails. `unset`\n"
                 "removes the pin so that detection chooses again.\n"
                 "The boot re-apply unit (llmtune-apply.service) uses the pinned profile.\n"
                 "\n"
                 "  -p, --profile NAME|FILE  show what this selection resolves to\n"
                 "  -j, --json               {profile, hash, source (option|config|detected), why, config}\n"
                 "\n"
                 "Exit status: 0 shown or pinned, 1 error, 3 detection could not decide (an unreadable fact).\n",
        .run = profile_cmd,
};
