/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune report: merge the audit --json outputs of many hosts into one fleet report. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli-data.h"
#include "cli/commands.h"
#include "report/consistency.h"
#include "report/report-render.h"
#include "report/report.h"
#include "base/subprocess.h"

enum format { FMT_TABLE, FMT_CSV, FMT_JSON, FMT_HTML };

static const char *const format_table[] = {"table", "csv", "json", "html"};
DEFINE_STRING_TABLE_FROM_STRING(static, format, enum format)

/* The input files of a report or a fleet, read by one loop (read_inputs). */
struct inputs {
        char **files;
        int n;
        bool keep_going;  /* skip a file that cannot be read or is malformed, saying so */
        const char *what; /* what the files are: "facts", "audit" */
        int (*add)(void *ctx, const char *file, char **err); /* one file into CTX: 0, or <0 with *err */
        void *ctx;
};

/* Every file into IN->ctx; a bad one stops the report unless KEEP_GOING (then it is skipped, and
 * said so). EXIT_OK when at least one was read. */
static int read_inputs(const struct inputs *in)
{
        size_t skipped = 0;
        for (int i = 0; i < in->n; i++) {
                _cleanup_free_ char *err = NULL;
                if (in->add(in->ctx, in->files[i], &err) == 0)
                        continue;
                if (!in->keep_going)
                        return cli_error("%s", err);
                fprintf(stderr, "llmtune: skipped %s\n", err);
                skipped++;
        }
        if (skipped == (size_t)in->n)
                return cli_error("no %s file could be read (%zu skipped)", in->what, skipped);
        return EXIT_OK;
}

/* PRINT(out, CTX) into OUTPUT (standard output when NULL); a failed write is an error, not a short page. */
static int write_output(const char *output, void (*print)(FILE *out, const void *ctx), const void *ctx)
{
        FILE *out = stdout;
        if (output && !(out = fopen(output, "we")))
                return cli_error("cannot write %s: %s", output, strerror(errno));
        print(out, ctx);
        int rc = EXIT_OK;
        if (fflush(out) != 0 || ferror(out))
                rc = cli_error("cannot write %s: %s", output ? output : "standard output", strerror(errno));
        if (output && fclose(out) != 0 && rc == EXIT_OK)
                rc = cli_error("cannot write %s: %s", output, strerror(errno));
        return rc;
}

static int add_facts(void *fl, const char *file, char **err)
{
        return cons_add_file(fl, file, err);
}

/* The fleet's hosts from FILES, then the reference (after them, so that an input host of its name
 * is refused), grouped. */
static int consistency_read(struct cons_fleet *fl, char **files, int nfiles, bool keep_going, const char *reference)
{
        const struct inputs in = {files, nfiles, keep_going, "facts", add_facts, fl};
        int rc = read_inputs(&in);
        _cleanup_free_ char *err = NULL;
        if (rc == EXIT_OK && reference && cons_add_reference(fl, reference, &err) < 0)
                rc = cli_error("%s", err);
        if (rc == EXIT_OK && cons_finish(fl, &err) < 0)
                rc = cli_error("%s", err);
        return rc;
}

struct consistency_output {
        const struct cons_fleet *fl;
        enum format fmt;
};

static void print_consistency(FILE *out, const void *ctx)
{
        const struct consistency_output *o = ctx;
        if (o->fmt == FMT_JSON)
                cons_print_json(out, o->fl);
        else
                cons_print_table(out, o->fl);
}

/* --consistency: which hosts differ in facts that must agree (rules/consistency.conf). */
static int consistency_run(char **files, int nfiles, enum format fmt, const char *rules_path, const char *output,
                           bool keep_going, const char *reference)
{
        if (fmt != FMT_TABLE && fmt != FMT_JSON)
                return cli_error("--consistency prints a table or --json");
        _cleanup_free_ char *def = xasprintf("%s/rules/consistency.conf", cli_data_dir());
        struct cons_rules rules = {0};
        struct diags d = {0};
        if (cons_rules_load(rules_path ? rules_path : def, &rules, &d) < 0) {
                cli_report_diags(&d);
                cons_rules_done(&rules);
                return EXIT_ERROR;
        }
        struct cons_fleet fl = {.rules = &rules};
        int rc = consistency_read(&fl, files, nfiles, keep_going, reference);
        if (rc == EXIT_OK)
                rc = write_output(output, print_consistency, &(struct consistency_output){&fl, fmt});
        if (rc == EXIT_OK && cons_not_uniform(&fl))
                rc = EXIT_FINDINGS;
        cons_fleet_done(&fl);
        cons_rules_done(&rules);
        return rc;
}

/* An archive made by `llmtune gather` (by name: what gather writes). */
static bool is_archive(const char *file)
{
        return endswith(file, ".tar.gz") || endswith(file, ".tgz") || endswith(file, ".tar.zst") ||
               endswith(file, ".tzst");
}

/*
 * `llmtune --root ARCHIVE audit --json [--profile P]`, run as a child of this very binary: each
 * archive is audited in its own process, as it would be on its node, so one archive's state
 * (its unpacked copy, libraries pointed at it) never meets the next one's. Its stdout is the audit.
 */
static int audit_archive(const char *file, const char *profile, char **ret, size_t *ret_len, char **err)
{
        char *argv[] = {(char *)"llmtune", (char *)"--root", (char *)file, (char *)"audit", (char *)"--json",
                        profile ? (char *)"--profile" : NULL, (char *)profile, NULL};
        struct spawn_opts o = {.path = "/proc/self/exe", .argv = argv, .cap = REPORT_FILE_MAX,
                               .err = SPAWN_STDERR_CAPTURE};
        _cleanup_(spawn_result_done) struct spawn_result r = {0};
        int rc = spawn_capture(&o, &r);
        if (rc < 0) {
                *err = xasprintf("%s: cannot run the audit: %s", file, strerror(-rc));
                return rc;
        }
        /* audit: 0 all passed, 2 findings; anything else is a failure to audit */
        int st = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
        if ((st != 0 && st != 2) || !*r.out) {
                strip_trailing(r.err);
                *err = xasprintf("%s: audit of the archive failed: %s", file, *r.err ? r.err : "no output");
                return -EINVAL;
        }
        *ret_len = strlen(r.out);
        *ret = TAKE_PTR(r.out);
        return 0;
}

/* One audit file, or archive (audited with --profile), into a report. */
struct report_input {
        struct report *rp;
        const char *profile;
};

static int add_audit(void *ctx, const char *file, char **err)
{
        struct report_input *ri = ctx;
        if (!is_archive(file))
                return report_add_file(ri->rp, file, err);
        char *text = NULL;
        size_t len = 0;
        *err = NULL;
        int rc = audit_archive(file, ri->profile, &text, &len, err);
        if (rc < 0)
                return rc;
        rc = report_add_json(ri->rp, file, text, len, err);
        free(text);
        return rc;
}

struct report_output {
        const struct report *rp;
        enum format fmt;
        bool by_host;
};

static void print_report(FILE *out, const void *ctx)
{
        const struct report_output *o = ctx;
        switch (o->fmt) {
        case FMT_TABLE: report_print_table(out, o->rp); break;
        case FMT_CSV: report_print_csv(out, o->rp, o->by_host); break;
        case FMT_JSON: report_print_json(out, o->rp); break;
        case FMT_HTML: report_print_html(out, o->rp); break;
        }
}

/* The audits of FILES merged (the names checked by report_finish), written as FMT to OUTPUT. */
static int audit_report(char **files, int nfiles, const char *profile, bool keep_going, enum format fmt, bool by_host,
                        const char *output)
{
        _cleanup_(report_done) struct report rp = {0};
        const struct inputs in = {files, nfiles, keep_going, "audit", add_audit, &(struct report_input){&rp, profile}};
        int rc = read_inputs(&in);
        _cleanup_free_ char *err = NULL;
        if (rc == EXIT_OK && report_finish(&rp, &err) < 0)
                rc = cli_error("%s", err);
        if (rc == EXIT_OK)
                rc = write_output(output, print_report, &(struct report_output){&rp, fmt, by_host});
        return rc;
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
                {"consistency", no_argument, NULL, 'C'},
                {"consistency-rules", required_argument, NULL, 'R'},
                {"reference", required_argument, NULL, 'r'},
                {"profile", required_argument, NULL, 'p'},
                {},
        };
        const char *profile = NULL;
        bool consistency = false;
        const char *cons_rules = NULL, *reference = NULL;
        enum format fmt = FMT_TABLE;
        bool by_host = false, keep_going = false;
        const char *output = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "f:cjHbo:kCR:r:p:", opts, NULL)) != -1)
                switch (c) {
                case 'f':
                        if (format_from_string(optarg, &fmt) < 0)
                                return cli_error("--format takes table, csv, json or html, not '%s'", optarg);
                        break;
                case 'c': fmt = FMT_CSV; break;
                case 'j': fmt = FMT_JSON; break;
                case 'H': fmt = FMT_HTML; break;
                case 'b': by_host = true; break;
                case 'o': output = optarg; break;
                case 'k': keep_going = true; break;
                case 'C': consistency = true; break;
                case 'R': cons_rules = optarg; break;
                case 'r': reference = optarg; break;
                case 'p': profile = optarg; break;
                default: return cli_usage_error("report");
                }
        if (consistency) {
                if (optind >= argc)
                        return cli_error("name the facts files: llmtune report --consistency FILE... (the output of "
                                         "`llmtune facts --json`, optionally with `llmtune audit --json`)");
                if (by_host)
                        return cli_error("--by-host applies to --csv only");
                return consistency_run(argv + optind, argc - optind, fmt, cons_rules, output, keep_going,
                                       reference);
        }
        if (cons_rules || reference)
                return cli_error("--consistency-rules and --reference apply to --consistency only");
        if (optind >= argc)
                return cli_error("name the audit files: llmtune report FILE... (the output of `llmtune audit --json`)");
        if (by_host && fmt != FMT_CSV)
                return cli_error("--by-host applies to --csv only");
        return audit_report(argv + optind, argc - optind, profile, keep_going, fmt, by_host, output);
}

const struct command cmd_report = {
        .name = "report",
        .summary = "merge the audits of many hosts into one fleet report",
        .usage = "Usage: llmtune report [--format table|csv|json|html] [--by-host] [-o FILE] [--keep-going]\n"
                 "                      [--profile NAME|FILE] FILE...\n"
                 "       llmtune report --consistency [--json] [--consistency-rules FILE] [--reference BASELINE]\n"
                 "                      [-o FILE] [-k] FILE...\n"
                 "\n"
                 "Read the output of `llmtune audit --json` of many hosts (one file per host, as Ansible's\n"
                 "fetch collects them) and show which rules fail on how many hosts and on which, and the\n"
                 "hosts grouped by identical findings (the same rules failing or not evaluable). A host is\n"
                 "named by the audit's \"host\" key, else by the file name without .json; two files of the\n"
                 "same host are an error. A FILE ending in .tar.gz, .tgz, .tar.zst or .tzst is an archive made\n"
                 "by `llmtune gather`: it is audited (`llmtune --root FILE audit --json`, with --profile when\n"
                 "given, else the profile detected from the archive) and its audit is reported like the others.\n"
                 "\n"
                 "  -f, --format FMT   table (default, for a terminal), csv, json or html\n"
                 "  -c, --csv          same as --format csv: one row per rule with its failing hosts\n"
                 "  -b, --by-host      with --csv: one row per host with its group and findings\n"
                 "  -j, --json         same as --format json: rules, groups and every host's results\n"
                 "  -H, --html         same as --format html: one self-contained page (no external assets)\n"
                 "                     with the failing rules, the groups and a hosts x rules grid\n"
                 "  -o, --output FILE  write to FILE instead of standard output\n"
                 "  -k, --keep-going   skip unreadable or malformed files (named on stderr) instead of failing\n"
                 "  -p, --profile NAME|FILE  the profile to audit archives with (default: detected per archive)\n"
                 "  -C, --consistency  fleet consistency instead: FILEs are `llmtune facts --json` outputs (and\n"
                 "                     optionally `llmtune audit --json`, for the profile), one per host; for\n"
                 "                     each group of facts that must agree across the nodes of a job (NVIDIA\n"
                 "                     driver, GPUs, NCCL config keys, RDMA adapters and rates, NCCL socket\n"
                 "                     interfaces, kernel, THP, OS, profile), the hosts that differ from the\n"
                 "                     rest and in which facts. Table or --json. Exit 2 when a group differs\n"
                 "  -R, --consistency-rules FILE  which facts must agree (default: rules/consistency.conf\n"
                 "                     of the data directory)\n"
                 "  -r, --reference BASELINE  with --consistency: the facts a baseline recorded (`llmtune\n"
                 "                     baseline -o BASELINE`) are the host \"reference\", and its values are\n"
                 "                     the norm of every check instead of the largest group's (a check of\n"
                 "                     which it recorded nothing, the profile, keeps the majority)\n"
                 "\n"
                 "Exit status: 0 report written, 1 a file could not be read or is not an audit (without\n"
                 "--keep-going), two files name the same host, or the output could not be written; with\n"
                 "--consistency also 2 when some group of facts is not uniform; 1 when the --reference file\n"
                 "cannot be read or holds no [facts].\n",
        .run = report_cmd,
};
