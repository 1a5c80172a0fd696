/* SPDX-License-Identifier: MIT */
/* llmtune log: what llmtune changed on this machine, from the change log. */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "changelog.h"
#include "commands.h"
#include "json-out.h"

/* A value for the table: short, one line. Files show size and the start of their hash. */
static char *short_value(const struct log_record *rec, const char *v, const char *key)
{
        if (rec->change.type == CHANGE_FILE || rec->change.type == CHANGE_SYMLINK) {
                if (!v)
                        return xstrdup("(absent)");
                if (rec->change.type == CHANGE_FILE) {
                        json_object *h;
                        const char *sha = json_object_object_get_ex(rec->json, key, &h) ? json_object_get_string(h) : NULL;
                        return xasprintf("%zu bytes %.8s", strlen(v), sha ? sha : "");
                }
        }
        if (!v)
                return xstrdup("-");
        struct sbuf b = {0};
        for (const char *p = v; *p && b.len < 40; p++)
                sbuf_addn(&b, *p == '\n' || *p == '\t' ? " " : p, 1);
        if (strlen(v) > 40)
                sbuf_add(&b, "...");
        return b.s ? sbuf_steal(&b) : xstrdup("\"\"");
}

static void print_table(struct cli *cli, const struct log_read *lr, const char *run)
{
        const char *off = cli_color(cli, "\033[0m"), *bold = cli_color(cli, "\033[1m"), *dim = cli_color(cli, "\033[2m");
        const char *last_run = NULL;
        size_t shown = 0;
        for (size_t i = 0; i < lr->n; i++) {
                const struct log_record *rec = &lr->v[i];
                if (run && !streq(rec->run, run))
                        continue;
                if (shown++ == 0)
                        printf("%s%5s  %-20s  %-11s  %5s  %-28s  %-8s  %s%s\n", bold, "SEQ", "TIME (UTC)", "EVENT", "OF",
                               "RULE", "TYPE", "TARGET", off);
                if (!streq(rec->run, last_run)) {
                        printf("%s-- run %s (profile %s, host %s)%s\n", dim, rec->run ? rec->run : "?",
                               rec->profile ? rec->profile : "?", rec->host ? rec->host : "?", off);
                        last_run = rec->run;
                }
                const struct change *c = &rec->change;
                char of[24] = "";
                if (rec->ref)
                        snprintf(of, sizeof(of), "%ld", rec->ref);
                printf("%5ld  %-20s  %-11s  %5s  %-28s  %-8s  %s\n", rec->seq, rec->time, rec->event, of,
                       c->rule ? c->rule : "-", change_type_name(c->type), c->target ? c->target : "-");
                /* What the step does, once, on its intent; outcomes refer to it by OF. */
                if (streq(rec->event, "intent")) {
                        if (c->type == CHANGE_COMMAND) {
                                _cleanup_free_ char *cmd = strv_join(&c->argv, " ");
                                printf("%7s%s%s%s\n", "", dim, cmd, off);
                        } else if (c->type == CHANGE_NOTE) {
                                if (c->aux)
                                        printf("%7s%s%s%s\n", "", dim, c->aux, off);
                        } else {
                                _cleanup_free_ char *b = short_value(rec, c->before, "before_sha256"),
                                                    *a = short_value(rec, c->after, "after_sha256");
                                printf("%7s%s%s -> %s%s\n", "", dim, b, a, off);
                        }
                }
                if (rec->detail)
                        printf("%7s%s\n", "", rec->detail);
        }
        if (!shown)
                printf("no records of run %s\n", run);
}

static int log_cmd(struct cli *cli, int argc, char **argv)
{
        static const struct option opts[] = {
                {"json", no_argument, NULL, 'j'},
                {"run", required_argument, NULL, 'r'},
                {},
        };
        bool json = false;
        const char *run = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "jr:", opts, NULL)) != -1)
                switch (c) {
                case 'j': json = true; break;
                case 'r': run = optarg; break;
                default: return cli_usage_error("log");
                }
        if (optind < argc)
                return cli_error("unexpected argument '%s' (see llmtune log --help)", argv[optind]);
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;
        struct log_read lr;
        int rc = changelog_read(root, &lr);
        if (rc < 0)
                return cli_error("cannot read %s under %s: %s", CHANGELOG_PATH, root_path(root), changelog_strerror(rc));
        if (json) {
                json_object *a = json_object_new_array();
                for (size_t i = 0; i < lr.n; i++)
                        if (!run || streq(lr.v[i].run, run))
                                json_object_array_add(a, json_object_get(lr.v[i].json));
                json_print(stdout, a);
                json_object_put(a);
        } else if (lr.n == 0 && lr.n_problems == 0)
                printf("no changes recorded\n");
        else
                print_table(cli, &lr, run);
        /* The log is shown as it is; a broken chain is for verify to judge, but never silent. */
        for (size_t i = 0; i < lr.n_problems; i++)
                fprintf(stderr, "llmtune: warning: %s\n", lr.problems[i].message);
        if (lr.n_problems)
                fprintf(stderr, "llmtune: the change log is damaged or was altered; see `llmtune verify`\n");
        log_read_free(&lr);
        return EXIT_OK;
}

const struct command cmd_log = {
        .name = "log",
        .summary = "show the changes llmtune made (the change log)",
        .usage = "Usage: llmtune [--root DIR] log [--run ID] [--json]\n"
                 "\n"
                 "Print the change log (" CHANGELOG_PATH "): one record per step of every apply and\n"
                 "rollback, with its sequence number, time, event (intent, done, failed, undo-intent, undone,\n"
                 "undo-failed), the record it concludes or reverses (OF), rule, type, target, and under each\n"
                 "intent before -> after (files: size and the start of the content's SHA-256; the contents\n"
                 "are kept in " CHANGELOG_DIR "/backups).\n"
                 "\n"
                 "  -r, --run ID   only the records of this run (an apply or rollback)\n"
                 "  -j, --json     the records as a JSON array, exactly as logged\n"
                 "\n"
                 "Records whose hash chain is broken are shown and warned about; `llmtune verify` checks.\n"
                 "Exit status: 0 shown (also when nothing was recorded), 1 the log cannot be read.\n",
        .run = log_cmd,
};
