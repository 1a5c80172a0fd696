/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune recommend: which profile fits this machine, and why. */
#include <errno.h>
#include <getopt.h>

#include "cli/cli-data.h"
#include "cli/commands.h"
#include "facts/json-out.h"

static int recommend_cmd(struct cli *cli, int argc, char **argv)
{
        bool json;
        if (cli_json_only(argc, argv, "recommend", &json) != 0)
                return EXIT_ERROR;
        if (optind < argc)
                return cli_error("recommend takes no arguments (see llmtune recommend --help)");
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;
        _cleanup_(rule_env_done) struct rule_env env = {0};
        int rc = cli_load_env(cli, &env);
        if (rc != EXIT_OK)
                return rc;
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        _cleanup_free_ char *why = NULL;
        const struct profile *p = NULL;
        if (profile_detect(&env.lib, f, &p, &why) == -EIO)
                return cli_detect_failed(why);
        if (!p)
                return cli_error("no profile matches this machine");
        if (json) {
                size_t n;
                const struct expr *m = profile_match(&env.lib, p, &n);
                json_object *o = json_object_new_object(), *req = json_object_new_array();
                json_object_object_add(o, "format", json_object_new_int(1));
                json_object_object_add(o, "profile", json_object_new_string(p->name));
                json_object_object_add(o, "kind", json_object_new_string(p->site ? "site" : "shipped"));
                json_object_object_add(o, "file", json_object_new_string(p->file));
                for (size_t i = 0; i < n; i++)
                        json_object_array_add(req, json_object_new_string(m[i].text));
                json_object_object_add(o, "requirements", req);
                json_object_object_add(o, "why", json_object_new_string(why));
                json_print(stdout, o);
                json_object_put(o);
        } else
                printf("%s\t%s\n", p->name, why);
        return EXIT_OK;
}

const struct command cmd_recommend = {
        .name = "recommend",
        .summary = "print the profile that fits this machine and why",
        .usage = "Usage: llmtune [--root DIR] recommend [--json]\n"
                 "\n"
                 "Print the name of the profile whose [match] requirements all hold on this machine (the\n"
                 "most specific one wins), a tab, and the requirements with what was observed. `base`\n"
                 "matches any machine. A site profile takes part only through a [match] (its own, or that\n"
                 "of the shipped profile it shadows). This is detection alone: a pinned profile\n"
                 "(`llmtune profile`) does not change the answer.\n"
                 "\n"
                 "  -j, --json   {profile, kind (shipped|site), file, requirements, why}\n"
                 "\n"
                 "Exit status: 0 a profile fits, 1 error, 3 a fact a [match] needs is unreadable.\n",
        .run = recommend_cmd,
};
