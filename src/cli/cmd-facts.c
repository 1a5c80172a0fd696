/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune facts: what llmtune knows about this machine or a --root tree. */
#include <getopt.h>
#include <string.h>

#include "cli/cli-data.h"
#include "cli/commands.h"
#include "facts/facts.h"
#include "facts/json-out.h"

static void print_human(struct cli *cli, const struct fact *const *v, size_t n)
{
        size_t w = 0;
        for (size_t i = 0; i < n; i++)
                if (strlen(v[i]->name) > w)
                        w = strlen(v[i]->name);
        const char *dim = cli_color(cli, "\033[2m"), *off = cli_color(cli, "\033[0m");
        for (size_t i = 0; i < n; i++) {
                const struct fact *fc = v[i];
                if (fc->status == FACT_OK)
                        printf("%-*s  %s\n", (int)w, fc->name, fc->str);
                else
                        printf("%-*s  %s(%s: %s%s%s)%s\n", (int)w, fc->name, dim,
                               fc->status == FACT_ABSENT ? "absent" : "unreadable", fc->reason,
                               fc->source ? " at " : "", fc->source ? fc->source : "", off);
        }
}

static int facts_cmd(struct cli *cli, int argc, char **argv)
{
        bool json;
        if (cli_json_only(argc, argv, "facts", &json) != 0)
                return EXIT_ERROR;
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);

        /* Collect the selection; a prefix may name one fact exactly (sysctl.vm.swappiness). */
        const struct fact **sel = NULL;
        size_t n = 0;
        int rc = EXIT_OK;
        if (optind >= argc)
                n = facts_under(f, "", &sel);
        else
                for (int i = optind; i < argc; i++) {
                        const struct fact **part;
                        size_t k = facts_under(f, argv[i], &part);
                        if (k == 0) {
                                const struct fact *one = facts_get(f, argv[i]);
                                if (one) {
                                        part[0] = one;
                                        k = 1;
                                }
                        }
                        if (k == 0)
                                rc = cli_error("no facts under '%s'", argv[i]);
                        sel = xrealloc(sel, (n + k + 1) * sizeof(*sel));
                        memcpy(sel + n, part, k * sizeof(*sel));
                        n += k;
                        free(part);
                }

        if (json) {
                json_object *top = json_object_new_object(), *all = json_object_new_object();
                json_object_object_add(top, "format", json_object_new_int(1));
                json_object_object_add(top, "root", json_object_new_string(root_path(root)));
                /* The host, as audit --json names it: `report --consistency` matches files by it. */
                char *host = root_hostname(root);
                json_object_object_add(top, "host", host ? json_object_new_string(host) : NULL);
                free(host);
                for (size_t i = 0; i < n; i++)
                        json_object_object_add(all, sel[i]->name, fact_to_json(sel[i]));
                json_object_object_add(top, "facts", all);
                json_print(stdout, top);
                json_object_put(top);
        } else
                print_human(cli, sel, n);
        free(sel);
        return rc;
}

const struct command cmd_facts = {
        .name = "facts",
        .summary = "show what llmtune knows about this machine",
        .usage = "Usage: llmtune [--root DIR] facts [--json] [PREFIX...]\n"
                 "\n"
                 "Print every fact, or those under each PREFIX (\"gpu\", \"cpu.policy\", or one name such\n"
                 "as \"sysctl.vm.swappiness\"; any sysctl can be asked for by name). A fact is a value, or\n"
                 "absent / unreadable with the reason and the path it came from.\n"
                 "\n"
                 "  --json   machine-readable output (shape documented in the README)\n"
                 "\n"
                 "Exit status: 0, or 1 when a PREFIX matches nothing or the root cannot be opened.\n",
        .run = facts_cmd,
};
