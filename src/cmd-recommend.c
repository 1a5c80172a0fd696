/* SPDX-License-Identifier: MIT */
/* llmtune recommend: which profile fits this machine, and why. */
#include <errno.h>

#include "cli-data.h"
#include "commands.h"

static int recommend_cmd(struct cli *cli, int argc, char **argv)
{
        if (argc > 1)
                return cli_error("recommend takes no arguments (see llmtune recommend --help)");
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;
        struct rule_env env = {0};
        int rc = cli_load_env(cli, &env);
        if (rc == EXIT_OK) {
                struct facts *f = cli_facts_new(cli);
                char *why = NULL;
                const struct profile *p = NULL;
                int r = profile_detect(&env.lib, f, &p, &why);
                if (r == -EIO)
                        rc = cli_detect_failed(why);
                else if (p)
                        printf("%s\t%s\n", p->name, why);
                else
                        rc = cli_error("no profile matches this machine");
                free(why);
                facts_free(f);
        }
        rule_env_free(&env);
        return rc;
}

const struct command cmd_recommend = {
        .name = "recommend",
        .summary = "print the profile that fits this machine and why",
        .usage = "Usage: llmtune [--root DIR] recommend\n"
                 "\n"
                 "Print the name of the profile whose [match] requirements all hold on this machine (the\n"
                 "most specific one wins), a tab, and the requirements with what was observed. `base`\n"
                 "matches any machine.\n",
        .run = recommend_cmd,
};
