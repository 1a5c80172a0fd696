/* SPDX-License-Identifier: MIT */
/* llmtune report: merge the audit --json outputs of many hosts into one fleet report. */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "commands.h"
#include "report-render.h"
#include "report.h"

enum format { FMT_TABLE, FMT_CSV, FMT_JSON, FMT_HTML };

static int parse_format(const char *s, enum format *f)
{
        static const char *const names[] = {"table", "csv", "json", "html"};
        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (streq(s, names[i])) {
                        *f = (enum format)i;
                        return 0;
                }
        return -EINVAL;
}

static int report_cmd(struct cli *cli, int argc, char **argv)
{
        (void)cli; /* the report reads files, not a machine: --root does not apply */
        static const struct option opts[] = {
                {"format", required_argument, NULL, 'f'},
                {"csv", no_argument, NULL, 'c'},
                {"json", no_argument, NULL, 'j'},
                {"html", no_argument, NULL, 'H'},
                {"by-host", no_argument, NULL, 'b'},
                {"output", required_argument, NULL, 'o'},
                {"keep-going", no_argument, NULL, 'k'},
                {},
        };
        enum format fmt = FMT_TABLE;
        bool by_host = false, keep_going = false;
        const char *output = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "f:cjHbo:k", opts, NULL)) != -1)
                switch (c) {
                case 'f':
                        if (parse_format(optarg, &fmt) < 0)
                                return cli_error("--format takes table, csv, json or html, not '%s'", optarg);
                        break;
                case 'c': fmt = FMT_CSV; break;
                case 'j': fmt = FMT_JSON; break;
                case 'H': fmt = FMT_HTML; break;
                case 'b': by_host = true; break;
                case 'o': output = optarg; break;
                case 'k': keep_going = true; break;
                default: return EXIT_ERROR;
                }
        if (optind >= argc)
                return cli_error("name the audit files: llmtune report FILE... (the output of `llmtune audit --json`)");
        if (by_host && fmt != FMT_CSV)
                return cli_error("--by-host applies to --csv only");

        struct report rp = {0};
        size_t skipped = 0;
        for (int i = optind; i < argc; i++) {
                char *err = NULL;
                if (report_add_file(&rp, argv[i], &err) < 0) {
                        if (!keep_going) {
                                cli_error("%s", err);
                                free(err);
                                report_free(&rp);
                                return EXIT_ERROR;
                        }
                        fprintf(stderr, "llmtune: skipped %s\n", err);
                        skipped++;
                }
                free(err);
        }
        char *err = NULL;
        if (rp.nhosts == 0) {
                report_free(&rp);
                return cli_error("no audit file could be read (%zu skipped)", skipped);
        }
        if (report_finish(&rp, &err) < 0) {
                cli_error("%s", err);
                free(err);
                report_free(&rp);
                return EXIT_ERROR;
        }
        FILE *out = stdout;
        if (output && !(out = fopen(output, "we"))) {
                int e = errno;
                report_free(&rp);
                return cli_error("cannot write %s: %s", output, strerror(e));
        }
        switch (fmt) {
        case FMT_TABLE: report_print_table(out, &rp); break;
        case FMT_CSV: report_print_csv(out, &rp, by_host); break;
        case FMT_JSON: report_print_json(out, &rp); break;
        case FMT_HTML: report_print_html(out, &rp); break;
        }
        int rc = EXIT_OK;
        if (fflush(out) != 0 || ferror(out))
                rc = cli_error("cannot write %s: %s", output ? output : "standard output", strerror(errno));
        if (output && fclose(out) != 0 && rc == EXIT_OK)
                rc = cli_error("cannot write %s: %s", output, strerror(errno));
        report_free(&rp);
        return rc;
}

const struct command cmd_report = {
        .name = "report",
        .summary = "merge the audits of many hosts into one fleet report",
        .usage = "Usage: llmtune report [--format table|csv|json|html] [--by-host] [-o FILE] [--keep-going] FILE...\n"
                 "\n"
                 "Read the output of `llmtune audit --json` of many hosts (one file per host, as Ansible's\n"
                 "fetch collects them) and show which rules fail on how many hosts and on which, and the\n"
                 "hosts grouped by identical findings (the same rules failing or not evaluable). A host is\n"
                 "named by the audit's \"host\" key, else by the file name without .json; two files of the\n"
                 "same host are an error.\n"
                 "\n"
                 "  -f, --format FMT   table (default, for a terminal), csv, json or html\n"
                 "  -c, --csv          same as --format csv: one row per rule with its failing hosts\n"
                 "  -b, --by-host      with --csv: one row per host with its group and findings\n"
                 "  -j, --json         same as --format json: rules, groups and every host's results\n"
                 "  -H, --html         same as --format html: one self-contained page (no external assets)\n"
                 "                     with the failing rules, the groups and a hosts x rules grid\n"
                 "  -o, --output FILE  write to FILE instead of standard output\n"
                 "  -k, --keep-going   skip unreadable or malformed files (named on stderr) instead of failing\n"
                 "\n"
                 "Exit status: 0 report written, 1 a file could not be read or is not an audit (without\n"
                 "--keep-going), two files name the same host, or the output could not be written.\n",
        .run = report_cmd,
};
