/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune: audit and tune Linux hosts for LLM training. Entry point and command dispatch. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "base/deadline.h"
#include "facts/facts.h"
#include "base/sandbox.h"
#include "base/topology-root.h"
#include "base/site-config.h"
#include "base/util.h"

#ifndef LLMTUNE_VERSION
#define LLMTUNE_VERSION "unknown"
#endif

/* The one table of commands: dispatch and `llmtune --help` both read it. */
const struct command *const command_table[] = {
        &cmd_facts,
        &cmd_audit,
        &cmd_recommend,
        &cmd_profiles,
        &cmd_profile,
        &cmd_explain,
        &cmd_lint,
        &cmd_plan,
        &cmd_apply,
        &cmd_rollback,
        &cmd_log,
        &cmd_verify,
        &cmd_ack,
        &cmd_unack,
        &cmd_exec,
        &cmd_affinity,
        &cmd_baseline,
        &cmd_nccl,
        &cmd_report,
        &cmd_health_check,
        &cmd_gather,
        NULL,
};

int cli_error(const char *fmt, ...)
{
        va_list ap;
        fputs("llmtune: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_ERROR;
}

static bool is_dir_in(struct root *r, const char *path)
{
        struct stat st;
        return root_stat(r, path, &st, false) == 0 && S_ISDIR(st.st_mode);
}

/*
 * A --root is taken for a machine only when it has what llmtune cannot work without: the
 * kernel's view (proc/ with cpuinfo, meminfo or stat, or sys/ with devices/system/cpu). An empty
 * or mistyped directory otherwise audits as "n/a" across the board, and apply would write
 * /etc/nccl.conf into it. The live system is never checked.
 */
static const char *root_missing(struct root *r)
{
        static const char *const core[] = {"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/sys/devices/system/cpu"};
        for (size_t i = 0; i < ARRAY_SIZE(core); i++) {
                struct stat st;
                if (root_stat(r, core[i], &st, true) == 0)
                        return NULL;
        }
        return is_dir_in(r, "/proc") || is_dir_in(r, "/sys")
                       ? "its proc/ and sys/ hold none of proc/cpuinfo, proc/meminfo, proc/stat, sys/devices/system/cpu"
                       : "it has neither proc/ nor sys/";
}

int cli_usage_error(const char *command)
{
        /* getopt has said what was wrong (on stderr); say where the options are described */
        fprintf(stderr, "llmtune: see `llmtune %s --help`\n", command);
        return EXIT_ERROR;
}

int cli_json_only(int argc, char **argv, const char *command, bool *json)
{
        static const struct option opts[] = {
                {"json", no_argument, NULL, 'j'},
                {},
        };
        int c;
        *json = false;
        while ((c = getopt_long(argc, argv, "j", opts, NULL)) != -1)
                switch (c) {
                case 'j': *json = true; break;
                default: return cli_usage_error(command);
                }
        return 0;
}

struct root *cli_root(struct cli *cli)
{
        if (cli->root)
                return cli->root;
        char *why = NULL;
        int rc = root_new_why(cli->root_path, &cli->root, &why);
        if (rc < 0) {
                cli_error("cannot open root %s: %s", cli->root_path, why ? why : strerror(-rc));
                free(why);
                return NULL;
        }
        /* An archive made by `llmtune gather` is checked against its MANIFEST when it is opened, and
         * it is read-only (apply and rollback refuse it): what it holds is what that machine let
         * gather read, so it is taken as it is. */
        const char *missing = root_is_live(cli->root) || root_is_archive(cli->root) || cli->root_force
                                      ? NULL
                                      : root_missing(cli->root);
        if (missing) {
                cli_error("--root %s does not look like a Linux root: %s (--root-force to use it anyway)",
                          cli->root_path, missing);
                cli->root = root_free(cli->root);
                return NULL;
        }
        return cli->root;
}

bool cli_root_can_change(struct cli *cli, struct root *r)
{
        if (root_is_live(r) || cli->root_force || is_dir_in(r, "/etc"))
                return true;
        cli_error("--root %s does not look like a Linux root: it has no etc/, so there is nothing to tune "
                  "(--root-force to write into it anyway)",
                  cli->root_path);
        return false;
}

bool cli_wants_help(const struct command *cmd, int argc, char **argv)
{
        for (int i = 1; i < argc && !streq(argv[i], "--"); i++)
                if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
                        fputs(cmd->usage, stdout);
                        return true;
                }
        return false;
}

const struct site_config *cli_config(struct cli *cli)
{
        if (cli->config)
                return cli->config;
        struct root *r = cli_root(cli);
        if (!r)
                return NULL;
        struct site_config *c = xcalloc(1, sizeof(*c));
        struct diags d = {0};
        if (site_config_load(r, c, &d) < 0) {
                for (size_t i = 0; i < d.msgs.n; i++)
                        fprintf(stderr, "llmtune: %s\n", d.msgs.v[i]);
                strv_done(&d.msgs);
                site_config_done(c);
                free(c);
                return NULL;
        }
        return cli->config = c;
}

const char *cli_color(const struct cli *cli, const char *code) { return cli->color ? code : ""; }

static void usage(FILE *out)
{
        fputs("Usage: llmtune [--root DIR | --topology FILE.xml] COMMAND [OPTIONS]\n"
              "\n"
              "Audit and tune a Linux host for training large language models.\n"
              "\n"
              "Commands:\n",
              out);
        for (size_t i = 0; command_table[i]; i++)
                fprintf(out, "  %-12s %s\n", command_table[i]->name, command_table[i]->summary);
        fputs("\n"
              "Global options:\n"
              "  --root DIR   inspect (and change) the tree at DIR instead of this machine; under a\n"
              "               root other than / nothing acts on the live kernel. DIR may also be an\n"
              "               archive made by `llmtune gather` (read-only commands only)\n"
              "  --topology FILE.xml  inspect the machine an `lstopo --of xml` export describes: its\n"
              "               CPU, NUMA, PCI and GPU placement facts; every other fact is absent\n"
              "               (read-only commands only)\n"
              "  --root-force use a --root that does not look like a Linux root (no proc/ or sys/\n"
              "               with the kernel's basic files; for apply and rollback, no etc/)\n"
              "  --read-timeout SECONDS  how long one read of the tree may wait (default 5): a\n"
              "               library read that waits longer gives unreadable facts (\"timed out\"),\n"
              "               one of llmtune's own ends the run with exit status 1\n"
              "  -h, --help   show this help; `llmtune COMMAND --help` for a command\n"
              "  --version    print the version\n"
              "\n"
              "Exit status: 0 success, 1 error, 2 findings (audit), drift (verify) or pending changes\n"
              "(plan --exit-code), 3 could not evaluate (an unreadable fact).\n",
              out);
}

int cli_parse_seconds(const char *s, unsigned *ret_ms)
{
        uint64_t ms = 0;
        size_t whole = strspn(s, "0123456789");
        if (whole == 0 || whole > 7)
                return -EINVAL;
        for (size_t i = 0; i < whole; i++)
                ms = ms * 10 + (uint64_t)(s[i] - '0');
        ms *= 1000;
        const char *f = s + whole;
        if (*f == '.') {
                size_t frac = strspn(f + 1, "0123456789");
                if (frac == 0 || frac > 3 || f[1 + frac])
                        return -EINVAL;
                for (size_t i = 0, scale = 100; i < frac; i++, scale /= 10)
                        ms += (uint64_t)(f[1 + i] - '0') * scale;
        } else if (*f)
                return -EINVAL;
        if (ms == 0 || ms > DEADLINE_MAX_MS)
                return -EINVAL;
        *ret_ms = (unsigned)ms;
        return 0;
}

/* The global --read-timeout SECONDS at argv[*i] (or --read-timeout=SECONDS): 1 when it is one
 * (taken, and set), 0 when argv[*i] is something else, -1 on a bad value. */
static int take_read_timeout(int argc, char **argv, int *i)
{
        const char *val = NULL;
        if (streq(argv[*i], "--read-timeout")) {
                if (*i + 1 >= argc) {
                        cli_error("--read-timeout needs a number of seconds");
                        return -1;
                }
                val = argv[++*i];
        } else if (startswith(argv[*i], "--read-timeout="))
                val = argv[*i] + strlen("--read-timeout=");
        else
                return 0;
        unsigned ms;
        if (cli_parse_seconds(val, &ms) < 0) {
                cli_error("--read-timeout %s: not a number of seconds from 0.001 to %u", val, DEADLINE_MAX_MS / 1000);
                return -1;
        }
        deadline_set_ms(ms);
        return 1;
}

/* Is argv[*i] --root DIR, --root=DIR, --topology FILE or --topology=FILE? 1 (*opt, *val; *i past a
 * separate value), 0 (another argument) or -1 (no value). */
static int root_option(int argc, char **argv, int *i, const char **opt, const char **val)
{
        static const char *const names[] = {"--root", "--topology"};
        for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
                size_t n = strlen(names[k]);
                *opt = names[k];
                if (streq(argv[*i], names[k])) {
                        if (*i + 1 >= argc)
                                return -1;
                        *val = argv[++*i];
                        return 1;
                }
                if (strncmp(argv[*i], names[k], n) == 0 && argv[*i][n] == '=') {
                        *val = argv[*i] + n + 1;
                        return 1;
                }
        }
        return 0;
}

static int root_needs(const char *opt)
{
        return cli_error("%s needs %s", opt, streq(opt, "--root") ? "a directory" : "a file");
}

/* Take the global --root DIR, --topology FILE.xml, --root-force and --read-timeout SECONDS out of
 * argv wherever they stand (before a "--"). --topology is --root for an lstopo XML export, said
 * explicitly: the file must be XML. */
static int take_root(int *argc, char **argv, const char **ret, bool *force)
{
        int w = 1;
        bool rest = false;
        const char *root = NULL, *topology = NULL;
        for (int i = 1; i < *argc; i++) {
                rest |= streq(argv[i], "--");
                if (rest) {
                        argv[w++] = argv[i];
                        continue;
                }
                if (streq(argv[i], "--root-force")) {
                        *force = true;
                        continue;
                }
                int t = take_read_timeout(*argc, argv, &i);
                if (t < 0)
                        return -1;
                if (t > 0)
                        continue;
                const char *opt = NULL, *val = NULL;
                t = root_option(*argc, argv, &i, &opt, &val);
                if (t == 0) {
                        argv[w++] = argv[i];
                        continue;
                }
                if (t < 0 || !*val)
                        return root_needs(opt);
                *(streq(opt, "--root") ? &root : &topology) = val;
        }
        *argc = w;
        argv[w] = NULL;
        if (root && topology)
                return cli_error("--root and --topology both name the machine to inspect: give one");
        if (topology && !topology_file_is_xml(topology))
                return cli_error("--topology %s: not an XML file (an `lstopo --of xml` export)", topology);
        if (root || topology)
                *ret = root ? root : topology;
        return 0;
}

/*
 * llmtune is a command that lives under a second and frees everything it read at the end. glibc's
 * malloc by default gives the top of the heap back to the kernel (brk) whenever 128 KiB of it is
 * free, and serves blocks of 128 KiB or more with mmap/munmap: the host-read vet, which takes a
 * 32 KiB buffer per directory level and frees it on the way up, made ~380 brk calls of a full audit
 * on a 384-CPU tree, each shrinking the heap and growing it again (page faults, TLB flushes).
 * Memory handed back between the phases of a process this short is pure cost, so the heap keeps
 * what it grew to (mallopt(3)). Not inherited: `llmtune exec` starts its command with execve(2).
 */
static void malloc_keep_heap(void)
{
#ifdef M_TRIM_THRESHOLD
        /* Setting any of these ends glibc's own raising of the mmap threshold after the first large
         * free, so the threshold is set too, to glibc's largest (HEAP_MAX_SIZE / 2: 32 MiB on 64-bit;
         * a larger value is refused and would leave every 128 KiB block to mmap/munmap). A refusal
         * only costs time: nothing to report. */
        mallopt(M_MMAP_THRESHOLD, (int)(4 * 1024 * 1024 * sizeof(long)));
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
        mallopt(M_TOP_PAD, 16 << 20);
#endif
}

static int give_up_status = EXIT_ERROR;

void cli_set_give_up_status(int status) { give_up_status = status; }

/* LLMTUNE_STATS (docs/PERFORMANCE.md): files read through the root handle, the library handles set up
 * (libpci, hwloc, kmod, ...), and the CPU time of this process and of the library children it
 * reaped (bench/run.py compares the audit's CPU time with lstopo's; this says where it went). */
static void print_stats(const struct cli *cli)
{
        struct rusage self = {0};
        getrusage(RUSAGE_SELF, &self);
        unsigned children = 0;
        uint64_t children_us = 0;
        sandbox_children_used(&children, &children_us);
        uint64_t self_us = (uint64_t)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1000000u +
                           (uint64_t)(self.ru_utime.tv_usec + self.ru_stime.tv_usec);
        fprintf(stderr, "llmtune-stats: files_opened=%u handles=%s self_cpu_ms=%.1f children=%u children_cpu_ms=%.1f\n",
                cli->root ? root_files_opened(cli->root) : 0u, facts_handles_loaded(), self_us / 1000.0, children,
                children_us / 1000.0);
}

/* A read of the tree that outlasted the deadline (deadline.h), from the guard's thread: the main
 * thread is in a wait only a fatal signal ends, so the run ends here, and the apply lock, a
 * descriptor of this process, goes with it. Nothing half-written is left: a change is replaced
 * atomically and its log records come before and after it (docs/RELIABILITY.md). LABEL is the rule
 * being evaluated, if any: the one a health check names. */
static noreturn void read_expired(const char *path, unsigned ms, const char *label)
{
        dprintf(STDERR_FILENO,
                "llmtune: %s%s%sreading %s did not answer within %u.%03u s (%s): " DEADLINE_REASON "; giving up\n",
                label ? "rule " : "", label ? label : "", label ? ": " : "", path, ms / 1000, ms % 1000,
                ms < deadline_read_timeout_ms() ? "what was left of --timeout or --rule-timeout" : "--read-timeout");
        _exit(give_up_status);
}

/* Colour on a terminal that shows it: not with NO_COLOR set (no-color.org), and not where TERM is
 * unset or "dumb" (terminfo's dumb has no colours; Emacs shells, CI logs). */
static bool want_color(int fd)
{
        const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
        return isatty(fd) && !(nc && *nc) && term && *term && !streq(term, "dumb");
}

int main(int argc, char **argv)
{
        struct cli cli = {.root_path = "/"};
        malloc_keep_heap();
        deadline_on_expiry(read_expired);
        if (take_root(&argc, argv, &cli.root_path, &cli.root_force) != 0)
                return EXIT_ERROR;
        cli.color = want_color(STDOUT_FILENO);

        if (argc < 2) {
                usage(stderr);
                return EXIT_ERROR;
        }
        if (streq(argv[1], "help") && argc > 2) {
                for (size_t i = 0; command_table[i]; i++)
                        if (streq(command_table[i]->name, argv[2])) {
                                fputs(command_table[i]->usage, stdout);
                                return EXIT_OK;
                        }
                return cli_error("unknown command '%s'", argv[2]);
        }
        if (streq(argv[1], "-h") || streq(argv[1], "--help") || streq(argv[1], "help")) {
                usage(stdout);
                return EXIT_OK;
        }
        if (streq(argv[1], "--version") || streq(argv[1], "-V")) {
                printf("llmtune %s\n", LLMTUNE_VERSION);
                return EXIT_OK;
        }
        if (argv[1][0] == '-')
                return cli_error("unknown option '%s' (see llmtune --help)", argv[1]);
        for (size_t i = 0; command_table[i]; i++) {
                const struct command *cmd = command_table[i];
                if (!streq(cmd->name, argv[1]))
                        continue;
                if (cli_wants_help(cmd, argc - 1, argv + 1))
                        return EXIT_OK;
                /* getopt names argv[0] in its messages: "llmtune audit: unrecognized option" */
                _cleanup_free_ char *name = xasprintf("llmtune %s", cmd->name);
                argv[1] = name;
                int rc = cmd->run(&cli, argc - 1, argv + 1);
                /* For the benchmark (docs/PERFORMANCE.md): files read through the root handle and the
                 * library handles set up (libpci, hwloc, kmod, ...), one line on stderr. */
                const char *st = getenv("LLMTUNE_STATS");
                if (st && *st)
                        print_stats(&cli);
                if (cli.config)
                        site_config_done(cli.config);
                free(cli.config);
                root_free(cli.root);
                return rc;
        }
        return cli_error("unknown command '%s' (see llmtune --help)", argv[1]);
}
