/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parsers of untrusted sysfs/procfs text: values, and the exact errors for bad input. */
#include <check.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "facts/readers/cmdline.h"
#include "base/parse.h"
#include "base/subprocess.h"
#include "base/util.h"
#include "unit-main.h"

START_TEST(integers)
{
        bool neg;
        uint64_t v;
        ck_assert_int_eq(parse_integer("42\n", &neg, &v), 0);
        ck_assert_uint_eq(v, 42);
        ck_assert(!neg);
        ck_assert_int_eq(parse_integer("18446744073692774399", &neg, &v), 0);
        ck_assert_uint_eq(v, 18446744073692774399ull);
        ck_assert_int_eq(parse_integer("-1", &neg, &v), 0);
        ck_assert(neg);
        ck_assert_uint_eq(v, 1);
        ck_assert_int_eq(parse_integer("", &neg, &v), -ENODATA);
        ck_assert_int_eq(parse_integer("  \n", &neg, &v), -ENODATA);
        ck_assert_int_eq(parse_integer("12abc", &neg, &v), -EINVAL);
        ck_assert_int_eq(parse_integer("abc", &neg, &v), -EINVAL);
        ck_assert_int_eq(parse_integer("1 2", &neg, &v), -EINVAL);
        ck_assert_int_eq(parse_integer("99999999999999999999999", &neg, &v), -ERANGE);
        int64_t s;
        ck_assert_int_eq(parse_i64("9223372036854775808", &s), -ERANGE);
        ck_assert_int_eq(parse_i64("-9223372036854775808", &s), 0);
        uint64_t u;
        ck_assert_int_eq(parse_u64("-3", &u), -ERANGE);
}
END_TEST
DEFINE_TEST(integers, .description = "integers", .root = "none");

START_TEST(cpulists)
{
        unsigned *v = NULL;
        ck_assert_int_eq(parse_cpulist("0-3,8,10-11\n", &v), 7);
        ck_assert_uint_eq(v[4], 8);
        ck_assert_uint_eq(v[6], 11);
        char *s = format_cpulist(v, 7);
        ck_assert_str_eq(s, "0-3,8,10-11");
        free(s);
        free(v);
        ck_assert_int_eq(parse_cpulist("\n", NULL), 0);
        ck_assert_int_eq(parse_cpulist("3-1", NULL), -EINVAL);
        ck_assert_int_eq(parse_cpulist("0-", NULL), -EINVAL);
        ck_assert_int_eq(parse_cpulist("0,,1", NULL), -EINVAL);
        ck_assert_int_eq(parse_cpulist("0-4294967295", NULL), -ERANGE);
        /* The bound (parse.c CPULIST_MAX): numbers below 65,536, lists of at most 65,536 entries. */
        ck_assert_int_eq(parse_cpulist("0-8191", NULL), 8192);
        ck_assert_int_eq(parse_cpulist("65535", NULL), 1);
        ck_assert_int_eq(parse_cpulist("65536", NULL), -ERANGE);
        ck_assert_int_eq(parse_cpulist("0-65535,0", NULL), -ERANGE);
        /* Out of order (never printed by the kernel, but valid): still ascending afterwards, and
         * a range that starts on the last CPU listed counts as out of order. */
        ck_assert_int_eq(parse_cpulist("8,0-3,3-4", &v), 7);
        const unsigned want[] = {0, 1, 2, 3, 3, 4, 8};
        for (size_t i = 0; i < ARRAY_SIZE(want); i++)
                ck_assert_uint_eq(v[i], want[i]);
        free(v);
}
END_TEST
DEFINE_TEST(cpulists, .description = "cpulists", .root = "none");

START_TEST(brackets)
{
        char *active = NULL;
        struct strv all = {0};
        ck_assert_int_eq(parse_bracketed("always [madvise] never\n", &active, &all), 0);
        ck_assert_str_eq(active, "madvise");
        ck_assert_uint_eq(all.n, 3);
        free(active);
        strv_done(&all);
        ck_assert_int_eq(parse_bracketed("always madvise never", &active, NULL), -EINVAL);
        ck_assert_int_eq(parse_bracketed("[always] [never]", &active, NULL), -EINVAL);
        ck_assert_int_eq(parse_bracketed("[always", &active, NULL), -EINVAL);
        ck_assert_int_eq(parse_bracketed("", &active, NULL), -ENODATA);
}
END_TEST
DEFINE_TEST(brackets, .description = "brackets", .root = "none");

START_TEST(link_speeds)
{
        unsigned mts;
        ck_assert_int_eq(parse_link_speed("16.0 GT/s PCIe\n", &mts), 0);
        ck_assert_uint_eq(mts, 16000);
        ck_assert_int_eq(parse_link_speed("2.5 GT/s", &mts), 0);
        ck_assert_uint_eq(mts, 2500);
        ck_assert_int_eq(parse_link_speed("8 GT/s", &mts), 0);
        ck_assert_uint_eq(mts, 8000);
        ck_assert_int_eq(parse_link_speed("Unknown", &mts), -ENODATA);
        ck_assert_int_eq(parse_link_speed("fast", &mts), -EINVAL);
}
END_TEST
DEFINE_TEST(link_speeds, .description = "link speeds", .root = "none");

START_TEST(sizes_and_escapes)
{
        uint64_t v;
        ck_assert_int_eq(parse_size("64m", 0, &v), 0);
        ck_assert_uint_eq(v, 64ull << 20);
        ck_assert_int_eq(parse_size("50%", 1000, &v), 0);
        ck_assert_uint_eq(v, 500);
        ck_assert_int_eq(parse_size("12q", 0, &v), -EINVAL);
        char s[] = "/swap\\040file\\011x";
        ck_assert_str_eq(unescape_octal(s), "/swap file\tx");
}
END_TEST
DEFINE_TEST(sizes_and_escapes, .description = "sizes and escapes", .root = "none");

/* A report input named on the command line: read whole up to the bound; a FIFO is refused at
 * once (opened without blocking: before, `llmtune report` waited forever on one); one byte over
 * the bound is -EFBIG, not a silent cut. */
START_TEST(user_file_bounded)
{
        char dir[] = "/tmp/llmtune-test-parse-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char reg[256], fifo[256];
        snprintf(reg, sizeof reg, "%s/input.json", dir);
        snprintf(fifo, sizeof fifo, "%s/fifo", dir);
        FILE *f = fopen(reg, "w");
        ck_assert_ptr_nonnull(f);
        fputs("{\"a\": 1}\n", f);
        fclose(f);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);

        char *buf = NULL;
        size_t len = 0;
        ck_assert_int_eq(read_user_file(reg, 64, &buf, &len), 0);
        ck_assert_uint_eq(len, 9);
        ck_assert_str_eq(buf, "{\"a\": 1}\n");
        free(buf);
        buf = NULL;
        ck_assert_int_eq(read_user_file(reg, 9, &buf, &len), 0);
        free(buf);
        buf = NULL;
        ck_assert_int_eq(read_user_file(reg, 8, &buf, &len), -EFBIG);
        ck_assert_ptr_null(buf);
        ck_assert_int_eq(read_user_file(fifo, 64, &buf, &len), -EINVAL);
        char *msg = read_user_file_error("x.json", -EFBIG, 64u << 20, "an audit file");
        ck_assert_str_eq(msg, "x.json: larger than 64 MiB: not an audit file");
        free(msg);
        msg = read_user_file_error("fifo", -EINVAL, 64, "an audit file");
        ck_assert_str_eq(msg, "fifo: not a regular file");
        free(msg);
        ck_assert_int_eq(read_user_file(dir, 64, &buf, &len), -EINVAL);
        ck_assert_ptr_null(buf);

        unlink(reg);
        unlink(fifo);
        rmdir(dir);
}
END_TEST
DEFINE_TEST(user_file_bounded, .description = "user file bounded", .root = "none");

/* glob_match is fnmatch(3) without flags: every pattern against every name, both ways of saying it
 * agree, wildcards at either end, '*' across dots and slashes, backtracking, '?' at the end, and
 * the bracket and escape forms fnmatch answers itself. A glob_match that missed the backtrack or
 * the literal ending would disagree on one of these. */
START_TEST(globs)
{
        static const char *const patterns[] = {
                "", "*", "?", "**", "cpu.policy.*.governor", "cpu.policy.*.available_governors",
                "cpu.policy.1*.governor", "cpu.policy.?.governor", "gpu.*", "gpu.*.device_id", "*.numa_node",
                "a*b*c", "a*a*a", "*ab", "ab*", "a?c", "*.?", "gpu.[0-3].name", "sysctl.net\\.core", "*/x",
                ".hidden*", "cpu.policy.*",
        };
        static const char *const names[] = {
                "", "a", "ab", "abc", "aXbYc", "aaa", "aab", "xab", "abab", "cpu.policy.0.governor",
                "cpu.policy.17.governor", "cpu.policy.17.available_governors", "cpu.policy.1.governor",
                "cpu.policy.10.driver", "gpu.0.device_id", "gpu.2.name", "gpu.7.name", "gpu", "gpu.",
                "pci.0000:00:01.0.numa_node", "sysctl.net.core", "sysctl.net\\.core", "a/b/x", ".hidden.x",
                "x.y", "a.b.c.7",
        };
        for (size_t i = 0; i < ARRAY_SIZE(patterns); i++)
                for (size_t j = 0; j < ARRAY_SIZE(names); j++)
                        ck_assert_msg(glob_match(patterns[i], names[j]) == (fnmatch(patterns[i], names[j], 0) == 0),
                                      "glob_match(\"%s\", \"%s\") disagrees with fnmatch", patterns[i], names[j]);
        ck_assert(glob_match("cpu.policy.*.governor", "cpu.policy.383.governor"));
        ck_assert(!glob_match("cpu.policy.*.governor", "cpu.policy.383.available_governors"));
        ck_assert(glob_match("a*a*a", "aaa"));
        ck_assert(!glob_match("a*a*a", "aab"));
}
END_TEST
DEFINE_TEST(globs, .description = "glob_match agrees with fnmatch(3) on every pattern and name", .root = "none");

/* The one spawn-and-capture (base/subprocess.c): both streams kept apart, the exit status as it was,
 * a program that is not there said as such (not "exit status 127"), a deadline and a cap that kill,
 * and a cap that only drops what is past it. */
START_TEST(spawn_capture_streams_and_limits)
{
        char *both[] = {"sh", "-c", "printf out; printf err >&2; exit 3", NULL};
        struct spawn_result r;
        struct spawn_opts o = {.argv = both, .err = SPAWN_STDERR_CAPTURE};
        ck_assert_int_eq(spawn_capture(&o, &r), 0);
        ck_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3);
        ck_assert_str_eq(r.out, "out");
        ck_assert_uint_eq(r.out_len, 3);
        ck_assert_str_eq(r.err, "err");
        spawn_result_done(&r);

        o.err = SPAWN_STDERR_NULL;
        ck_assert_int_eq(spawn_capture(&o, &r), 0);
        ck_assert_ptr_null(r.err);
        spawn_result_done(&r);

        char *silent[] = {"true", NULL};
        o = (struct spawn_opts){.argv = silent, .err = SPAWN_STDERR_NULL};
        ck_assert_int_eq(spawn_capture(&o, &r), 0);
        ck_assert_str_eq(r.out, ""); /* no output is an empty string, never NULL */
        spawn_result_done(&r);

        char *missing[] = {"llmtune-no-such-program", NULL};
        o.argv = missing;
        ck_assert_int_eq(spawn_capture(&o, &r), -ENOENT);

        char *slow[] = {"sleep", "30", NULL};
        o = (struct spawn_opts){.argv = slow, .timeout_ms = 200, .err = SPAWN_STDERR_NULL};
        ck_assert_int_eq(spawn_capture(&o, &r), -ETIMEDOUT);
        ck_assert_ptr_null(r.out);

        char *big[] = {"sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x", NULL};
        o = (struct spawn_opts){.argv = big, .cap = 1000, .cap_kills = true, .err = SPAWN_STDERR_NULL};
        ck_assert_int_eq(spawn_capture(&o, &r), -EFBIG);
        o.cap_kills = false;
        ck_assert_int_eq(spawn_capture(&o, &r), 0);
        ck_assert_uint_eq(r.out_len, 1000);
        ck_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0); /* read to its end, not killed */
        spawn_result_done(&r);
}
END_TEST
DEFINE_TEST(spawn_capture_streams_and_limits, .description = "spawn_capture keeps both streams, reports a missing program, kills at its deadline and cap",
            .root = "none");

/* The kernel command line's keys (facts/readers/cmdline.c): the last occurrence the handler
 * takes, quotes as the kernel's next_arg reads them, '-' and '_' alike, a bare key, systemd's
 * booleans. */
START_TEST(cmdline_keys)
{
        char *v = NULL;
        ck_assert(cmdline_get_key("a=1 b=2 a=3\n", "a", NULL, &v));
        ck_assert_str_eq(v, "3");
        free(v);
        ck_assert(cmdline_get_key("x \"dyndbg=file a.c +p\" y", "dyndbg", NULL, &v));
        ck_assert_str_eq(v, "file a.c +p");
        free(v);
        ck_assert(cmdline_get_key("systemd.gpt-auto=0", "systemd.gpt_auto", NULL, &v));
        ck_assert_str_eq(v, "0");
        free(v);
        ck_assert(cmdline_get_key("quiet splash", "quiet", NULL, &v));
        ck_assert_ptr_null(v);
        ck_assert(!cmdline_get_key("quietly root=/dev/sda", "quiet", NULL, NULL));
        ck_assert(!cmdline_get_key("", "quiet", NULL, NULL));
        bool b = true;
        ck_assert(cmdline_get_bool("systemd.swap=0 systemd.swap=1", "systemd.swap", &b) && b);
        ck_assert(cmdline_get_bool("systemd.swap=on systemd.swap=N", "systemd.swap", &b) && !b);
        ck_assert(cmdline_get_bool("systemd.swap=off systemd.swap=maybe", "systemd.swap", &b) && !b); /* skipped */
        ck_assert(cmdline_get_bool("systemd.swap", "systemd.swap", &b) && b);
        ck_assert(!cmdline_get_bool("systemd.swap=maybe", "systemd.swap", &b));
}
END_TEST
DEFINE_TEST(cmdline_keys, .description = "kernel command line keys: the last occurrence wins, quotes, '-' as '_', booleans",
            .root = "none");

/* The one PCI address parser: the kernel's form only, NVML's 8-digit domain and VMD's 5 included. */
START_TEST(pci_addresses)
{
        struct pci_addr a, b;
        ck_assert(pci_addr_parse("0000:18:00.0", &a));
        ck_assert_uint_eq(a.bus, 0x18);
        ck_assert(pci_addr_parse("00000000:DB:1f.7", &b));
        ck_assert(b.dom == 0 && b.bus == 0xdb && b.dev == 0x1f && b.fn == 7);
        ck_assert(pci_addr_parse("10000:e1:00.0", &b) && b.dom == 0x10000);
        ck_assert_int_lt(pci_addr_cmp(&a, &b), 0);
        ck_assert_int_eq(pci_addr_cmp(&a, &a), 0);
        static const char *const bad[] = {"0000:+1:00.0", " 0000:18:00.0", "0000:18:00.0 ", "0000:18:20.0",
                                          "0000:18:00.8", "000:18:00.0", "0000:18:0.0", "0000:0x:00.0",
                                          "0000:18:00", "000000000:18:00.0", "", "pci0000:00"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                ck_assert_msg(!pci_addr_parse(bad[i], &a), "'%s' is not a PCI address", bad[i]);
        ck_assert(!pci_addr_parse(NULL, &a));
}
END_TEST
DEFINE_TEST(pci_addresses, .description = "PCI addresses: the kernel's form only, compared in enumeration order", .root = "none");

START_TEST(name_indexes)
{
        unsigned n = 99;
        ck_assert(parse_name_index("cpu0", "cpu", &n) && n == 0);
        ck_assert(parse_name_index("node12", "node", &n) && n == 12);
        ck_assert(parse_name_index("policy4294967295", "policy", &n) && n == 4294967295u);
        static const char *const bad[] = {"cpu",     "cpu-1",  "cpu+1",  "cpu 1",        "cpu01",
                                          "cpu1 ",   "cpu1x",  "cpufreq", "cpu4294967296", "node1", "cpu99999999999"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                ck_assert_msg(!parse_name_index(bad[i], "cpu", &n), "'%s' is not a cpu", bad[i]);
}
END_TEST
DEFINE_TEST(name_indexes, .description = "object names as the kernel prints them: PREFIX and digits only", .root = "none");

UNIT_MAIN(.name = "parse")
