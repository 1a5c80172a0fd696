/* SPDX-License-Identifier: GPL-2.0-or-later */
/* llmtune gather: this machine's evidence (exactly the files llmtune reads) in one archive. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gather/anonymize.h"
#include "cli/cli-data.h"
#include "cli/commands.h"
#include "gather/gather.h"
#include "facts/adapters/lib-hwloc.h"
#include "base/subprocess.h"
#include "facts/readers/dropin-order.h"
#include "facts/readers/kmsg.h"

extern char **environ;

#define CAPTURES "/var/lib/llmtune/captures"
#define CAPTURE_MAX (8u << 20) /* ROOT_READ_MAX: what a reader of the archive can read */

/*
 * Run every reader llmtune has, so that the root handle records what each reads: all facts, the
 * detection of a profile, and an audit under every profile (shipped and site), since rules ask for
 * facts (any sysctl by name) that the fact list does not hold.
 */
static void run_readers(struct cli *cli, struct facts *f)
{
        const struct fact **all = NULL;
        facts_under(f, "", &all);
        free(all);
        _cleanup_(rule_env_done) struct rule_env env = {0};
        struct diags d = {0};
        cli_load_env_diags(cli, &env, &d);
        char *why = NULL;
        const struct profile *picked = NULL;
        profile_detect(&env.lib, f, &picked, &why);
        free(why);
        struct strv none = {0};
        for (size_t i = 0; i < env.lib.n; i++) {
                struct resolved res = {0};
                if (profile_resolve(&env.lib, env.lib.v[i].name, &env.rules, &res, &d) == 0) {
                        struct audit a;
                        const char *bad = NULL;
                        if (engine_run(&env.rules, &res, f, &none, &a, &bad) == 0)
                                audit_done(&a);
                }
                resolved_done(&res);
        }
        /* A broken profile is audit's to report; gather packs the evidence either way. */
        strv_done(&d.msgs);

        /* Read by host path inside libkmod (modprobe-config.c), so recorded here: the directories
         * libkmod reads, from the one list of them (dropin-order.c). */
        _cleanup_strv_ struct strv modprobe_dirs = {0};
        dropin_family_dirs(&dropin_modprobe, &modprobe_dirs);
        for (size_t i = 0; i < modprobe_dirs.n; i++) {
                struct strv names = {0};
                if (root_list(cli->root, modprobe_dirs.v[i], &names) == 0)
                        for (size_t k = 0; k < names.n; k++) {
                                _cleanup_free_ char *p = xasprintf("%s/%s", modprobe_dirs.v[i], names.v[k]);
                                const char *data;
                                root_read(cli->root, p, &data, NULL);
                        }
                strv_done(&names);
        }
        /* The host name as the machine states it (root_hostname asks the kernel on the live system). */
        const char *data;
        root_read(cli->root, "/etc/hostname", &data, NULL);
}

/* Output of ARGV (searched in PATH), at most CAPTURE_MAX bytes, within TIMEOUT_S seconds. -EIO when
 * it does not exit 0. */
static int run_capture(char *const argv[], int timeout_s, char **ret, size_t *ret_len)
{
        struct spawn_opts o = {.argv = argv, .timeout_ms = (unsigned)timeout_s * 1000u, .cap = CAPTURE_MAX,
                               .cap_kills = true, .err = SPAWN_STDERR_NULL};
        _cleanup_(spawn_result_done) struct spawn_result r = {0};
        int rc = spawn_capture(&o, &r);
        if (rc < 0)
                return rc;
        if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
                return -EIO;
        *ret_len = r.out_len;
        *ret = TAKE_PTR(r.out);
        return 0;
}

static int kmsg_as_dmesg(char *line, size_t len, void *userdata)
{
        struct sbuf *b = userdata;
        unsigned long long usec;
        const char *text;
        (void)len;
        if (kmsg_record_parse(line, &usec, &text))
                sbuf_addf(b, "[%5llu.%06llu] %s\n", usec / 1000000, usec % 1000000, text);
        return b->len > CAPTURE_MAX;
}

/* /dev/kmsg's records (facts/readers/kmsg.h) as dmesg lines. */
static int read_kmsg(char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct sbuf b = {0};
        int rc = kmsg_read_records(fd, UINT_MAX, kmsg_as_dmesg, &b);
        if (rc < 0) {
                free(sbuf_steal(&b));
                return rc;
        }
        *ret_len = b.len;
        *ret = b.len ? sbuf_steal(&b) : xstrdup("");
        return 0;
}

static void note(const char *what, int rc)
{
        fprintf(stderr, "llmtune: gather: %s not captured: %s\n", what, strerror(-rc));
}

/* Whether only privileged users may read the kernel log here: kernel.dmesg_restrict
 * (Documentation/admin-guide/sysctl/kernel.rst) is 1, or cannot be read. */
static bool kmsg_restricted(struct root *r)
{
        _cleanup_free_ char *v = NULL;
        return root_read_line(r, "/proc/sys/kernel/dmesg_restrict", &v) < 0 || !v || v[0] != '0';
}

/* The programs whose output a live gather keeps, and where in the archive (not found: nothing to
 * say, the machine has no such program). */
static const struct tool_capture {
        char *const argv[4];
        int timeout_s;
        const char *file;
} tool_captures[] = {
        {{"nvidia-smi", "-q", "-x"}, 60, CAPTURES "/nvidia-smi.xml"},
        /* -q -x carries no NVLink state: the link list the nvlink probe reads under --root */
        {{"nvidia-smi", "nvlink", "-s"}, 60, CAPTURES "/nvidia-smi-nvlink.txt"},
        /* The fabric manager's version where no dpkg or SQLite rpm database holds it (a .run install,
         * RHEL 8's Berkeley DB), and an archive, which carries no package database, needs it too. */
        {{"nv-fabricmanager", "--version"}, 30, CAPTURES "/nv-fabricmanager-version.txt"},
};

static void capture_tool(struct cli *cli, const struct tool_capture *t)
{
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int rc = run_capture(t->argv, t->timeout_s, &data, &len);
        if (rc == 0)
                root_record_data(cli->root, t->file, data, len);
        else if (rc != -ENOENT) {
                struct sbuf what = {0};
                for (size_t i = 0; t->argv[i]; i++)
                        sbuf_addf(&what, "%s%s", i ? " " : "", t->argv[i]);
                note(what.s, rc);
                free(sbuf_steal(&what));
        }
}

/* The evidence that is not a file: stored under /var/lib/llmtune/captures in the archive; what not
 * every user may read goes into PRIVATE. */
static void captures(struct cli *cli, struct facts *f, bool live, struct strv *private)
{
        char *data = NULL;
        size_t len = 0;
        const char *err = NULL;
        if (hwloc_export_xml(f, &data, &len, &err) == 0) {
                root_record_data(cli->root, HWLOC_CAPTURE_XML, data, len);
                free(data);
        } else
                fprintf(stderr, "llmtune: gather: hwloc topology not captured: %s\n", err ? err : "unknown");
        if (!live)
                return; /* under --root the tree's own captures (if any) were read like any file */
        for (size_t i = 0; i < ARRAY_SIZE(tool_captures); i++)
                capture_tool(cli, &tool_captures[i]);
        int rc = read_kmsg(&data, &len);
        if (rc == 0) {
                root_record_data(cli->root, CAPTURES "/kmsg.txt", data, len);
                free(data);
                if (kmsg_restricted(cli->root))
                        strv_add(private, CAPTURES "/kmsg.txt");
        } else
                note("the kernel log (/dev/kmsg)", rc);
}

/* The command line as typed, for the MANIFEST (main took --root out of argv). */
static void command_line(const struct cli *cli, int argc, char **argv, struct strv *cmdline)
{
        strv_add(cmdline, "llmtune");
        if (!streq(cli->root_path, "/")) {
                strv_add(cmdline, "--root");
                strv_add(cmdline, cli->root_path);
        }
        /* argv[0] is "llmtune gather" (main names the command for getopt's messages) */
        strv_add(cmdline, "gather");
        for (int i = 1; i < argc; i++)
                strv_add(cmdline, argv[i]);
}

/* What gather_opts owns here: the --exclude and private lists (the rest points into argv and the
 * command). */
static void gather_opts_done(struct gather_opts *o)
{
        strv_done(&o->exclude);
        strv_done(&o->private);
}

/* The options into O. Returns -1 to go on, else the exit code. */
static int parse_gather_opts(int argc, char **argv, struct gather_opts *o)
{
        static const struct option opts[] = {
                {"output", required_argument, NULL, 'o'},
                {"exclude", required_argument, NULL, 'x'},
                {"anonymize", no_argument, NULL, 'a'},
                {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "o:x:a", opts, NULL)) != -1)
                switch (c) {
                case 'o': o->output = optarg; break;
                case 'x': strv_add(&o->exclude, optarg); break;
                case 'a': o->anonymize = true; break;
                default: return EXIT_ERROR;
                }
        if (optind < argc)
                return cli_error("unexpected argument '%s' (see llmtune gather --help)", argv[optind]);
        return -1;
}

/* The archive's name: -o checked (a tar name this libarchive can write), else
 * llmtune-HOST-TIME.tar.zst (.gz without zstd) into *DEFLT, the host anonymized when asked.
 * Returns -1 to go on, else the exit code. */
static int output_name(struct gather_opts *o, const char *host, char **deflt)
{
        if (!o->output) {
                struct anonymizer *an = o->anonymize && host ? anonymizer_new(host) : NULL;
                _cleanup_free_ char *shown = an ? anonymize_host(an, host) : xstrdup(host ? host : "unknown");
                anonymizer_free(an);
                for (char *p = shown; *p; p++)
                        if (*p == '/')
                                *p = '_';
                char ts[32];
                time_t now = time(NULL);
                struct tm tm;
                strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", gmtime_r(&now, &tm));
                o->output = *deflt = xasprintf("llmtune-%s-%s.tar.%s", shown, ts, gather_have_zstd() ? "zst" : "gz");
        } else if (!endswith(o->output, ".tar.gz") && !endswith(o->output, ".tgz") &&
                   !endswith(o->output, ".tar.zst") && !endswith(o->output, ".tzst"))
                return cli_error("%s: the name must end in .tar.gz, .tgz, .tar.zst or .tzst", o->output);
        else if ((endswith(o->output, ".zst") || endswith(o->output, ".tzst")) && !gather_have_zstd())
                return cli_error("this libarchive cannot write zstd; use a .tar.gz name");
        return -1;
}

static int gather_cmd(struct cli *cli, int argc, char **argv)
{
        _cleanup_(strv_done) struct strv cmdline = {0};
        command_line(cli, argc, argv, &cmdline);
        _cleanup_(gather_opts_done) struct gather_opts o = {.argc = (int)cmdline.n, .argv = cmdline.v};
        int rc = parse_gather_opts(argc, argv, &o);
        if (rc >= 0)
                return rc;
        struct root *root = cli_root(cli);
        if (!root)
                return EXIT_ERROR;
        if (root_is_archive(root))
                return cli_error("%s is already a gathered archive", root_path(root));
        /* On the live system the probes would use syscalls (getifaddrs, statvfs, gethostname) where
         * under a root they read files; the archive is a root, so gather takes the root's paths. */
        bool live = root_is_live(root);
        root_view_as_tree(root);
        root_record_start(root);
        _cleanup_(facts_freep) struct facts *f = cli_facts_new(cli);
        run_readers(cli, f);
        captures(cli, f, live, &o.private);

        _cleanup_free_ char *host = root_hostname(root);
        _cleanup_free_ char *kernel = NULL;
        root_read_line(root, "/proc/sys/kernel/osrelease", &kernel);
        if (kernel)
                kernel[strcspn(kernel, "\n")] = '\0';
        o.host = host;
        o.kernel = kernel;
        _cleanup_free_ char *deflt = NULL;
        rc = output_name(&o, host, &deflt);
        if (rc >= 0)
                return rc;
        _cleanup_(gather_stats_done) struct gather_stats st = {0};
        _cleanup_free_ char *why = NULL;
        rc = gather_write(root, &o, &st, &why);
        if (rc < 0) {
                cli_error("gather: %s", why ? why : strerror(-rc));
                return EXIT_ERROR;
        }
        printf("%s: %zu files (%llu bytes), %zu links, %zu directories, %zu names only, %zu left out (see MANIFEST)\n",
               o.output, st.files, st.bytes, st.links, st.dirs, st.unread, st.left_out);
        printf("%s: mode %04o%s%s%s\n", o.output, (unsigned)st.mode, st.private ? " (it holds " : " (the umask's)",
               st.private ? st.private : "", st.private ? ", which not every user could read)" : "");
        return EXIT_OK;
}

const struct command cmd_gather = {
        .name = "gather",
        .summary = "pack the files llmtune reads here into one archive, to audit elsewhere",
        .usage = "Usage: llmtune [--root DIR] gather [-o FILE] [--exclude GLOB]... [--anonymize]\n"
                 "\n"
                 "Run every probe and an audit under every profile with the root handle recording each path\n"
                 "read, then write exactly those files (symbolic links as links, listed directories with\n"
                 "their entries) into a tar archive with a MANIFEST (host, time, version, kernel, command\n"
                 "line, size and SHA-256 per file, what was left out and why). On the live system it adds\n"
                 "`nvidia-smi -q -x`, `nvidia-smi nvlink -s` and `nv-fabricmanager --version` (when present),\n"
                 "the kernel log from\n"
                 "/dev/kmsg and hwloc's topology XML under /var/lib/llmtune/captures. Audit the archive\n"
                 "anywhere with\n"
                 "`llmtune --root FILE audit`. A built-in deny list (shadow files, private keys, /root,\n"
                 "/home except .nccl.conf, process environments) always applies.\n"
                 "\n"
                 "  -o, --output FILE   archive to write (.tar.zst or .tar.gz); default\n"
                 "                      llmtune-HOST-DATE.tar.zst (.tar.gz where zstd is unavailable)\n"
                 "  -x, --exclude GLOB  leave out paths matching GLOB (fnmatch, '*' crosses '/'); repeatable\n"
                 "  -a, --anonymize     replace MAC addresses (also inside IPv6 addresses), GUIDs, serial\n"
                 "                      numbers, UUIDs, IP addresses and routes, and the host name,\n"
                 "                      consistently (the audit of the archive finds the same; README)\n"
                 "\n"
                 "Exit status: 0 written, 1 error.\n",
        .run = gather_cmd,
};
