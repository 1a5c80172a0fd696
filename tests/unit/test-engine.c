/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Conditions, rule and profile files, and the engine: exact results and exact file:line errors. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/expr.h"
#include "nccl/nccl-lint.h"
#include "engine/param-types.h"
#include "engine/profiles.h"
#include "engine/rules.h"
#include "tmptree.h"
#include "base/ini-load.h"
#include "unit-main.h"

static void setup(void) { tmptree_new("engine"); }

/* NAME written under the tree; its absolute path (free it). */
static char *write_file(const char *name, const char *text)
{
        tmptree_write(name, text, strlen(text));
        return xasprintf("%s/%s", tmptree_path(), name);
}

/* An empty root: only the facts a test inserts exist (probes find nothing else). */
static struct facts *empty_facts(struct root **r)
{
        ck_assert_int_eq(root_new(tmptree_path(), r), 0);
        return facts_new(*r);
}

static const char *params(void *u, const char *name)
{
        if (streq(name, "governor"))
                return "performance";
        if (streq(name, "shm"))
                return "64G";
        return NULL;
}

static enum eval_status eval(struct facts *f, const char *text, char **observed)
{
        struct expr e;
        char *err = NULL;
        ck_assert_msg(expr_parse(text, &e, &err) == 0, "%s: %s", text, err);
        struct eval_result r;
        expr_eval(&e, f, params, NULL, &r);
        enum eval_status st = r.status;
        if (observed)
                *observed = xstrdup(r.observed ? r.observed : "");
        eval_result_done(&r);
        expr_done(&e);
        return st;
}

START_TEST(parse_errors)
{
        struct expr e;
        char *err = NULL;
        ck_assert_int_eq(expr_parse("cpu.count ~= 3", &e, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "unknown operator '~='"));
        free(err);
        ck_assert_int_eq(expr_parse("cpu.count >=", &e, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "needs a value"));
        free(err);
        ck_assert_int_eq(expr_parse("cpu.count present 3", &e, &err), -EINVAL);
        free(err);
        ck_assert_int_eq(expr_parse("all cpu.count == 3", &e, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "needs a fact pattern"));
        free(err);
        ck_assert_int_eq(expr_parse("", &e, &err), -EINVAL);
        free(err);
        ck_assert_int_eq(expr_parse("all a.*.b == 1 where c == 1 and d.* == 2", &e, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "takes a field"));
        free(err);
        ck_assert_int_eq(expr_parse("all a.*.b == 1 where c == 1 and d == 2 and e == 3 and f == 4 and g == 5", &e, &err),
                         -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "more than 4"));
        free(err);
        ck_assert_int_eq(expr_parse("all a.*.b == 1 where c == 1 and d == 2 and e == 3 and f == 4", &e, &err), 0);
        ck_assert_int_eq((int)e.nwhere, 4);
        expr_done(&e);
}
END_TEST
DEFINE_TEST(parse_errors, .description = "parse errors", .root = "tmptree");

START_TEST(modern_shmmax_passes_minimum)
{
        struct root *r;
        struct facts *f = empty_facts(&r);
        /* Linux >= 3.16 default: ULONG_MAX - 2^24, must pass a 64 GiB minimum and never be "lowered". */
        fact_uint(f, "test", 18446744073692774399ull, "sysctl.kernel.shmmax");
        fact_uint(f, "test", 4294967296ull, "sysctl.kernel.small");
        ck_assert_int_eq(eval(f, "sysctl.kernel.shmmax >= ${shm}", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "sysctl.kernel.shmmax >= 68719476736", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "sysctl.kernel.small >= 64GiB", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "sysctl.kernel.small == 4G", NULL), EVAL_TRUE);
        facts_free(f);
        root_free(r);
}
END_TEST
DEFINE_TEST(modern_shmmax_passes_minimum, .description = "modern shmmax passes minimum", .root = "tmptree");

START_TEST(quantifiers_and_where)
{
        struct root *r;
        struct facts *f = empty_facts(&r);
        fact_str(f, "t", "performance", "cpu.policy.0.governor");
        fact_str(f, "t", "ondemand", "cpu.policy.1.governor");
        fact_str(f, "t", "performance", "cpu.policy.2.governor");
        char *obs = NULL;
        ck_assert_int_eq(eval(f, "all cpu.policy.*.governor == ${governor}", &obs), EVAL_FALSE);
        ck_assert_str_eq(obs, "cpu.policy.1.governor = ondemand (1 of 3 items)");
        free(obs);
        ck_assert_int_eq(eval(f, "any cpu.policy.*.governor == ondemand", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "none cpu.policy.*.governor == powersave", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "all cpu.policy.*.governor in performance, ondemand", NULL), EVAL_TRUE);

        fact_str(f, "t", "10de", "gpu.0.vendor_id");
        fact_int(f, "t", 3, "gpu.0.numa_node");
        fact_str(f, "t", "1a03", "gpu.1.vendor_id"); /* an ASPEED BMC VGA: not a training GPU */
        fact_int(f, "t", -1, "gpu.1.numa_node");
        ck_assert_int_eq(eval(f, "all gpu.*.numa_node >= 0", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "all gpu.*.numa_node >= 0 where vendor_id == 10de", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "all gpu.*.numa_node >= 0 where vendor_id == 8086", NULL), EVAL_NA);

        /* "and" joins where clauses: an item counts only when every clause holds */
        fact_str(f, "t", "DOWN", "ib.mlx5_0.port.1.state");
        fact_str(f, "t", "InfiniBand", "ib.mlx5_0.port.1.link_layer");
        fact_str(f, "t", "storage", "ib.mlx5_0.port.1.role");
        fact_str(f, "t", "ACTIVE", "ib.mlx5_1.port.1.state");
        fact_str(f, "t", "InfiniBand", "ib.mlx5_1.port.1.link_layer");
        fact_str(f, "t", "compute", "ib.mlx5_1.port.1.role");
        fact_str(f, "t", "DOWN", "ib.mlx5_2.port.1.state");
        fact_str(f, "t", "Ethernet", "ib.mlx5_2.port.1.link_layer");
        fact_str(f, "t", "compute", "ib.mlx5_2.port.1.role");
        ck_assert_int_eq(eval(f, "all ib.*.port.*.state == ACTIVE where link_layer == InfiniBand", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "all ib.*.port.*.state == ACTIVE where link_layer == InfiniBand and role == compute",
                              NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "all ib.*.port.*.state == ACTIVE where role == compute and link_layer == Ethernet",
                              NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "all ib.*.port.*.state == ACTIVE where role == storage and link_layer == Ethernet",
                              NULL), EVAL_NA);

        fact_str(f, "t", "rw,relatime,nobarrier", "mount.0.options");
        fact_str(f, "t", "rw,noatime", "mount.1.options");
        ck_assert_int_eq(eval(f, "none mount.*.options contains nobarrier", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "any mount.*.options contains noatime", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "all mount.*.options !contains barrier=0", NULL), EVAL_TRUE);
        facts_free(f);
        root_free(r);
}
END_TEST
DEFINE_TEST(quantifiers_and_where, .description = "quantifiers and where", .root = "tmptree");

START_TEST(absent_unreadable_and_types)
{
        struct root *r;
        struct facts *f = empty_facts(&r);
        fact_absent(f, "/sys/devices/system/cpu/cpu0/cpufreq", "no cpufreq driver", "cpu.cpufreq.driver");
        fact_unreadable(f, "/proc/sys/vm/swappiness", -EACCES, NULL, "sysctl.vm.swappiness");
        fact_bool(f, "t", false, "module.nouveau.loaded");
        fact_str(f, "t", "madvise", "thp.enabled");
        ck_assert_int_eq(eval(f, "cpu.cpufreq.driver present", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "cpu.cpufreq.driver absent", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "cpu.cpufreq.driver == acpi-cpufreq", NULL), EVAL_NA);
        ck_assert_int_eq(eval(f, "no.such.fact == 1", NULL), EVAL_NA);
        ck_assert_int_eq(eval(f, "sysctl.vm.swappiness <= 10", NULL), EVAL_ERROR);
        ck_assert_int_eq(eval(f, "module.nouveau.loaded == false", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "module.nouveau.loaded == no", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "thp.enabled >= 3", NULL), EVAL_ERROR); /* text is not a number */
        ck_assert_int_eq(eval(f, "thp.enabled == ${nope}", NULL), EVAL_ERROR);
        facts_free(f);
        root_free(r);
}
END_TEST
DEFINE_TEST(absent_unreadable_and_types, .description = "absent unreadable and types", .root = "tmptree");

/* A wildcard over a collection that could not be read is not "nothing there" (issue 13.2, 14.2). */
START_TEST(empty_versus_unknown_collection)
{
        struct root *r;
        char *obs = NULL;
        /* No mount table in the tree: the collection is unknown, not empty. */
        struct facts *f = empty_facts(&r);
        ck_assert_int_eq(eval(f, "none mount.*.options contains nobarrier", &obs), EVAL_NA);
        ck_assert_str_eq(obs, "mount.count absent");
        free(obs);
        facts_free(f);
        root_free(r);
        /* An empty mount table: nothing there, and "none" holds. */
        free(write_file("proc/mounts", ""));
        f = empty_facts(&r);
        ck_assert_int_eq(eval(f, "none mount.*.options contains nobarrier", NULL), EVAL_TRUE);
        facts_free(f);
        root_free(r);

        /* A collection read in part: only what the unseen items cannot change stands. */
        f = empty_facts(&r);
        fact_unreadable(f, "/sys/bus/pci/devices", -EIO, "listing failed", "gpu.count");
        fact_int(f, "t", 3, "gpu.0.numa_node");
        ck_assert_int_eq(eval(f, "all gpu.*.numa_node >= 0", NULL), EVAL_ERROR);
        ck_assert_int_eq(eval(f, "all gpu.*.numa_node >= 5", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "any gpu.*.numa_node == 3", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "none gpu.*.numa_node == 7", NULL), EVAL_ERROR);
        ck_assert_int_eq(eval(f, "all gpu.*.large_bar == true", NULL), EVAL_ERROR);

        /* where: an item whose field is unreadable may be one the rule is about. */
        fact_int(f, "t", 1, "md.count");
        fact_unreadable(f, "/dev/md0", -EACCES, NULL, "md.md0.fs.type");
        fact_bool(f, "t", false, "md.md0.fs.aligned");
        ck_assert_int_eq(eval(f, "all md.*.fs.aligned == true where fs.type == ext4", &obs), EVAL_ERROR);
        ck_assert_str_eq(obs, "md.md0.fs.type unreadable");
        free(obs);
        facts_free(f);
        root_free(r);
}
END_TEST
DEFINE_TEST(empty_versus_unknown_collection, .description = "empty versus unknown collection", .root = "tmptree");

/* Hardware health rules: driver versions, "unlimited" limits, products of parameters. */
START_TEST(versions_unlimited_products)
{
        struct root *r;
        struct facts *f = empty_facts(&r);
        fact_str(f, "t", "535.104.05", "nvidia.driver.version");
        ck_assert_int_eq(eval(f, "nvidia.driver.version version>= 535.104.05", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "nvidia.driver.version version>= 535.86.10", NULL), EVAL_TRUE);  /* 104 > 86 */
        ck_assert_int_eq(eval(f, "nvidia.driver.version version>= 535.104.5", NULL), EVAL_TRUE);  /* 05 == 5 */
        ck_assert_int_eq(eval(f, "nvidia.driver.version version>= 535.104", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "nvidia.driver.version version>= 535.104.06", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "nvidia.driver.version version>= 550", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "nvidia.driver.version version< 550.54.14", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "nvidia.driver.version >= 535.86.10", NULL), EVAL_ERROR); /* not a number */
        ck_assert_int_eq(eval(f, "nvidia.driver.version version>= any", NULL), EVAL_ERROR);
        fact_str(f, "t", "1.0", "x.v1");
        fact_str(f, "t", "1.0-rc1", "x.v2");
        ck_assert_int_eq(eval(f, "x.v2 version>= 1.0", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "x.v1 version< 1.0-rc1", NULL), EVAL_TRUE);

        fact_str(f, "t", "unlimited", "limits.memlock.login.soft");
        fact_uint(f, "t", 8ull << 20, "limits.memlock.login.hard");
        ck_assert_int_eq(eval(f, "limits.memlock.login.soft >= unlimited", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "limits.memlock.login.soft >= 16G", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "limits.memlock.login.hard >= unlimited", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "limits.memlock.login.hard >= 8M", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "limits.memlock.login.hard >= infinity", NULL), EVAL_FALSE);

        fact_uint(f, "t", 128ull << 30, "gpu.ram_per_gpu");
        ck_assert_int_eq(eval(f, "gpu.ram_per_gpu >= 40G*2", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "gpu.ram_per_gpu >= 80G*2", NULL), EVAL_FALSE);
        ck_assert_int_eq(eval(f, "gpu.ram_per_gpu >= 80G*x", NULL), EVAL_ERROR);
        ck_assert_int_eq(eval(f, "gpu.ram_per_gpu >= 16T*16T", NULL), EVAL_FALSE); /* saturates, no wrap */
        bool neg;
        uint64_t mag;
        ck_assert_int_eq(parse_rule_number("-1*2", &neg, &mag), -EINVAL);
        ck_assert_int_eq(parse_rule_number("*2", &neg, &mag), -EINVAL);
        ck_assert_int_eq(parse_rule_number("2*", &neg, &mag), -EINVAL);
        ck_assert_int_eq(parse_rule_number("3*4*5", &neg, &mag), 0);
        ck_assert_uint_eq(mag, 60);
        /* durations, in seconds (xid_window = 24h); "m" stays mebi, minutes are "min" */
        ck_assert_int_eq(parse_rule_number("24h", &neg, &mag), 0);
        ck_assert_uint_eq(mag, 86400);
        ck_assert_int_eq(parse_rule_number("10min", &neg, &mag), 0);
        ck_assert_uint_eq(mag, 600);
        ck_assert_int_eq(parse_rule_number("2w", &neg, &mag), 0);
        ck_assert_uint_eq(mag, 1209600);
        ck_assert_int_eq(parse_rule_number("1m", &neg, &mag), 0);
        ck_assert_uint_eq(mag, 1u << 20);
        ck_assert_int_eq(parse_rule_number("5hours", &neg, &mag), -EINVAL);
        fact_uint(f, "t", 3600, "xid.x.critical_age");
        ck_assert_int_eq(eval(f, "xid.x.critical_age <= 24h", NULL), EVAL_TRUE);
        ck_assert_int_eq(eval(f, "xid.x.critical_age <= 59min", NULL), EVAL_FALSE);
        facts_free(f);
        root_free(r);
}
END_TEST
DEFINE_TEST(versions_unlimited_products, .description = "versions unlimited products", .root = "tmptree");

static bool has_msg(const struct diags *d, const char *needle)
{
        for (size_t i = 0; i < d->msgs.n; i++)
                if (strstr(d->msgs.v[i], needle))
                        return true;
        return false;
}

static void dump(const struct diags *d)
{
        for (size_t i = 0; i < d->msgs.n; i++)
                fprintf(stderr, "  diag: %s\n", d->msgs.v[i]);
}

START_TEST(rule_file_errors)
{
        char *p = write_file("rules/bad.ini", "[good-rule]\n"
                                              "title = t\n"
                                              "area = cpu\n"
                                              "rationale = r\n"
                                              "source = s\n"
                                              "check = cpu.count >= 1\n"
                                              "\n"
                                              "[bad-rule]\n"
                                              "title = t\n"
                                              "area = GPU stuff\n"
                                              "severity = huge\n"
                                              "check = cpu.count ~ 1\n"
                                              "remedy = sysctl\n"
                                              "remedy.value = 1\n"
                                              "colour = red\n");
        struct ruleset rs = {0};
        struct diags d = {0};
        ck_assert_int_eq(rules_load_file(&rs, p, &d), -EINVAL);
        dump(&d);
        char *want;
        want = xasprintf("%s:10: area 'GPU stuff': use lowercase letters", p);
        ck_assert(has_msg(&d, want));
        free(want);
        want = xasprintf("%s:11: severity must be critical, warning, info or ${parameter}, not 'huge'", p);
        ck_assert(has_msg(&d, want));
        free(want);
        want = xasprintf("%s:12: unknown operator '~'", p);
        ck_assert(has_msg(&d, want));
        free(want);
        want = xasprintf("%s:15: unknown key 'colour'", p);
        ck_assert(has_msg(&d, want));
        free(want);
        want = xasprintf("%s:8: remedy 'sysctl' needs remedy.key", p);
        ck_assert(has_msg(&d, want));
        free(want);
        want = xasprintf("%s:8: rule 'bad-rule' has no rationale", p);
        ck_assert(has_msg(&d, want));
        free(want);
        ck_assert(!has_msg(&d, "good-rule"));
        strv_done(&d.msgs);
        rules_done(&rs);
        free(p);
}
END_TEST
DEFINE_TEST(rule_file_errors, .description = "rule file errors", .root = "tmptree");

static const char *rules_text = "[gov]\n"
                                "title = governor\n"
                                "area = cpu\n"
                                "rationale = r\n"
                                "source = s\n"
                                "when = cpu.cpufreq.driver present\n"
                                "check = all cpu.policy.*.governor == ${cpu_governor}\n"
                                "remedy = sysfs\n"
                                "remedy.path = /sys/x\n"
                                "remedy.value = ${cpu_governor}\n"
                                "[shm]\n"
                                "title = shm\n"
                                "area = memory\n"
                                "severity = info\n"
                                "rationale = r\n"
                                "source = s\n"
                                "check = sysctl.kernel.shmmax >= ${shmmax_min}\n";

/* Declared parameter types (issue 31 item 3): each kind accepts what its declaration says, and
 * nothing else; alternatives; ranges; the words used in messages and the finite choices. */
static bool accepts(const char *spec, const char *value)
{
        struct param_type t;
        char *err = NULL;
        ck_assert_msg(param_type_parse(spec, &t, &err) == 0, "%s: %s", spec, err ? err : "");
        bool ok = param_type_accepts(&t, value);
        param_type_done(&t);
        return ok;
}

START_TEST(param_types)
{
        ck_assert(accepts("enum always madvise never", "madvise"));
        ck_assert(!accepts("enum always madvise never", "sometimes"));
        ck_assert(!accepts("enum always madvise never", "Madvise"));
        ck_assert(accepts("bool", "true") && accepts("bool", "false") && !accepts("bool", "yes"));
        ck_assert(accepts("integer", "0") && accepts("integer", "16777216") && !accepts("integer", "-1"));
        ck_assert(!accepts("integer", "4G") && !accepts("integer", "") && !accepts("integer", "1.5"));
        ck_assert(accepts("integer 1..32", "16") && !accepts("integer 1..32", "0") && !accepts("integer 1..32", "33"));
        ck_assert(accepts("integer 1..", "99999") && !accepts("integer ..3", "4"));
        ck_assert(accepts("size", "64G") && accepts("size", "512KiB") && accepts("size", "1024") && accepts("size", "4gB"));
        ck_assert(!accepts("size", "24h") && !accepts("size", "lots") && !accepts("size", "G") && !accepts("size", "1GG"));
        ck_assert(accepts("size 1G..", "2G") && !accepts("size 1G..", "512M"));
        ck_assert(accepts("duration", "24h") && accepts("duration", "10min") && !accepts("duration", "24"));
        ck_assert(accepts("version", "535.104.05") && accepts("version", "470") && !accepts("version", "535..1"));
        ck_assert(!accepts("version", "r535") && !accepts("version", "535."));
        ck_assert(accepts("integers", "4,4") && !accepts("integers", "4,,4") && !accepts("integers", "4,x"));
        ck_assert(accepts("names", "mlx5_0,mlx5_1") && !accepts("names", "mlx5 0") && !accepts("names", ""));
        ck_assert(accepts("list off passthrough translated", "off,passthrough"));
        ck_assert(!accepts("list off passthrough translated", "off,off") && !accepts("list off passthrough", "on"));
        ck_assert(accepts("integer | any", "any") && accepts("integer | any", "8") && !accepts("integer | any", "all"));
        ck_assert(accepts("size | unlimited", "unlimited") && accepts("duration | unlimited", "7d"));

        struct param_type t;
        char *err = NULL;
        ck_assert_int_eq(param_type_parse("integer 1.. | any", &t, &err), 0);
        char *words = param_type_describe(&t);
        ck_assert_str_eq(words, "an integer of at least 1 or any");
        free(words);
        struct strv ch = {0};
        ck_assert(!param_type_choices(&t, &ch));
        param_type_done(&t);
        ck_assert_int_eq(param_type_parse("bool | any", &t, &err), 0);
        ck_assert(param_type_choices(&t, &ch));
        words = strv_join(&ch, " ");
        ck_assert_str_eq(words, "true false any");
        free(words);
        strv_done(&ch);
        param_type_done(&t);
        /* declarations that are not types */
        static const char *const bad[] = {"", "enum", "integer 5..1", "integer 1..2 3..4", "bool true", "two words",
                                          "integer | ", "size lots..", "list"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_msg(param_type_parse(bad[i], &t, &err) == -EINVAL, "'%s' parsed", bad[i]);
                ck_assert_ptr_nonnull(err);
                free(err);
                err = NULL;
        }
}
END_TEST
DEFINE_TEST(param_types, .description = "param types", .root = "tmptree");

/* Profile and rule files are read as every file llmtune is handed (read_user_file): a FIFO or a
 * directory is refused at once (fopen of a FIFO without a writer waited for ever), and one cap,
 * HOST_FILE_MAX, for the shipped profiles too (they had none). */
static void no_keys(void *user, const char *section, unsigned section_line, const char *key, const char *value,
                    unsigned line)
{
}

START_TEST(host_files_read_one_way)
{
        _cleanup_free_ char *fifo = xasprintf("%s/p.ini", tmptree_path()), *dir = xasprintf("%s/d.ini", tmptree_path());
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        ck_assert_int_eq(mkdir(dir, 0700), 0);
        struct diags d = {0};
        struct profile_lib lib = {0};
        ck_assert_int_eq(profiles_load_file(&lib, fifo, &d), -EINVAL);
        ck_assert_int_eq(profiles_load_file(&lib, dir, &d), -EINVAL);
        ck_assert_int_eq(ini_load_file(fifo, no_keys, NULL, &d), -EINVAL);
        _cleanup_free_ char *want = xasprintf("%s: cannot read: not a regular file", fifo);
        ck_assert_msg(has_msg(&d, want), "missing: %s", want);
        strv_done(&d.msgs);

        /* a shipped profile over the cap: refused by name, the others still load */
        size_t n = HOST_FILE_MAX + 16;
        _cleanup_free_ char *big = xmalloc(n + 1);
        for (size_t i = 0; i < n; i++)
                big[i] = i % 64 == 63 ? '\n' : '#'; /* comment lines of 63 characters */
        const char *head = "[profile]\nname = big\n";
        memcpy(big, head, strlen(head));
        big[n] = '\0';
        _cleanup_free_ char *pdir = xasprintf("%s/shipped", tmptree_path());
        tmptree_write("shipped/big.ini", big, n);
        free(write_file("shipped/small.ini", "[profile]\nname = small\n"));
        ck_assert_int_eq(profiles_load(&lib, pdir, NULL, &d), -EINVAL);
        ck_assert_msg(has_msg(&d, "big.ini: cannot read: larger than 1 MiB: not a profile"), "the big one is named");
        ck_assert_uint_eq(lib.n, 1);
        ck_assert_str_eq(lib.v[0].name, "small");
        strv_done(&d.msgs);
        profiles_done(&lib);
}
END_TEST
DEFINE_TEST(host_files_read_one_way, .description = "profile and rule files: a FIFO or a directory refused at once, one size cap",
            .root = "tmptree", .timeout = 60);

/* Types are declared once, where parameters are defined: an inheriting profile may not declare
 * one, a defining profile must declare every parameter and nothing else. */
START_TEST(param_types_declared_once)
{
        char *a = write_file("pt/a.ini", "[profile]\nname = a\n[params]\nx = 1\ny = 2\n[types]\nx = integer\nz = bool\n");
        char *b = write_file("pt/b.ini", "[profile]\nname = b\ninherits = base\n[types]\nx = integer\n");
        char *c = write_file("pt/c.ini", "[profile]\nname = c\n[params]\nx = 1\n[types]\nx = integer 1..x\n");
        struct diags d = {0};
        struct profile_lib lib = {0};
        ck_assert_int_eq(profiles_load_file(&lib, a, &d), -EINVAL);
        ck_assert_int_eq(profiles_load_file(&lib, b, &d), -EINVAL);
        ck_assert_int_eq(profiles_load_file(&lib, c, &d), -EINVAL);
        dump(&d);
        char *want[] = {xasprintf("%s:5: parameter 'y' has no type", a), xasprintf("%s:8: type of 'z', which [params]", a),
                        xasprintf("%s:5: [types] declares parameters, which only a profile that inherits nothing", b),
                        xasprintf("%s:6: type of 'x': integer takes one range", c)};
        for (size_t i = 0; i < 4; i++) {
                ck_assert_msg(has_msg(&d, want[i]), "missing: %s", want[i]);
                free(want[i]);
        }
        strv_done(&d.msgs);
        profiles_done(&lib);
        free(a);
        free(b);
        free(c);
}
END_TEST
DEFINE_TEST(param_types_declared_once, .description = "param types declared once", .root = "tmptree");

START_TEST(profiles_inheritance_and_errors)
{
        char *rp = write_file("rules/r.ini", rules_text);
        free(write_file("profiles/base.ini", "[profile]\nname = base\n[params]\ncpu_governor = performance\nshmmax_min = 64G\n"
                                             "[types]\ncpu_governor = enum performance schedutil\nshmmax_min = size\n"));
        free(write_file("profiles/big.ini", "[profile]\nname = big\ninherits = base\n[match]\nrequire = cpu.count >= 100\n"
                                            "[params]\ncpu_governor = schedutil\n[rules]\nshm = critical\n"));
        free(write_file("profiles/loop-a.ini", "[profile]\nname = loop-a\ninherits = loop-b\n"));
        free(write_file("profiles/loop-b.ini", "[profile]\nname = loop-b\ninherits = loop-a\n"));
        free(write_file("profiles/typo.ini", "[profile]\nname = typo\ninherits = base\n[params]\ncpu_govenor = performance\n"
                                        "shmmax_min = lots\n[rules]\nno-such-rule = off\n[colours]\nx = 1\n"));
        /* The site shadows "big" and changes one parameter of the shipped profile of the same name. */
        free(write_file("root/etc/llmtune/profiles.d/big.ini", "[profile]\nname = big\ninherits = big\n[params]\nshmmax_min = 128G\n"));
        struct ruleset rs = {0};
        struct diags d = {0};
        ck_assert_int_eq(rules_load_file(&rs, rp, &d), 0);

        char *pdir = xasprintf("%s/profiles", tmptree_path()), *rootdir = xasprintf("%s/root", tmptree_path());
        struct root *root;
        ck_assert_int_eq(root_new(rootdir, &root), 0);
        struct profile_lib lib = {0};
        /* typo.ini has an unknown section: loading reports it with file:line */
        profiles_load(&lib, pdir, root, &d);
        dump(&d);
        ck_assert(has_msg(&d, "typo.ini:10: unknown section [colours]"));
        strv_done(&d.msgs);

        struct resolved r;
        ck_assert_int_eq(profile_resolve(&lib, "big", &rs, &r, &d), 0);
        ck_assert_str_eq(resolved_param(&r, "cpu_governor"), "schedutil");
        ck_assert_str_eq(resolved_param(&r, "shmmax_min"), "128G");
        ck_assert_uint_eq(r.chain.n, 3);
        ck_assert_ptr_nonnull(strstr(r.chain.v[2], "profiles.d/big.ini"));
        enum severity sev;
        ck_assert(resolved_rule_enabled(&r, &rs.v[1], &sev));
        ck_assert_int_eq(sev, SEV_CRITICAL);
        ck_assert_uint_eq(strlen(r.hash), 64);
        resolved_done(&r);

        ck_assert_int_eq(profile_resolve(&lib, "loop-a", &rs, &r, &d), -ELOOP);
        ck_assert(has_msg(&d, "inheritance cycle"));
        strv_done(&d.msgs);
        ck_assert_int_eq(profile_resolve(&lib, "nope", &rs, &r, &d), -ENOENT);
        strv_done(&d.msgs);
        profiles_done(&lib);
        rules_done(&rs);
        root_free(root);
        free(pdir);
        free(rootdir);
        free(rp);
}
END_TEST
DEFINE_TEST(profiles_inheritance_and_errors, .description = "profiles inheritance and errors", .root = "tmptree");

START_TEST(profile_param_errors)
{
        char *rp = write_file("rules/r.ini", rules_text);
        char *bp = write_file("p/base.ini", "[profile]\nname = base\n[params]\ncpu_governor = performance\nshmmax_min = 64G\n"
                                            "[types]\ncpu_governor = enum performance schedutil\nshmmax_min = size\n");
        char *tp = write_file("p/typo.ini", "[profile]\nname = typo\ninherits = base\n[params]\ncpu_govenor = performance\n"
                                            "shmmax_min = lots\n[rules]\nno-such-rule = off\n");
        struct ruleset rs = {0};
        struct diags d = {0};
        ck_assert_int_eq(rules_load_file(&rs, rp, &d), 0);
        struct profile_lib lib = {0};
        ck_assert_int_eq(profiles_load_file(&lib, bp, &d), 0);
        ck_assert_int_eq(profiles_load_file(&lib, tp, &d), 0);
        struct resolved r;
        ck_assert_int_eq(profile_resolve(&lib, "typo", &rs, &r, &d), -EINVAL);
        dump(&d);
        char *want = xasprintf("%s:5: unknown parameter 'cpu_govenor'", tp);
        ck_assert(has_msg(&d, want));
        free(want);
        want = xasprintf("%s:6: parameter 'shmmax_min' must be a size (bytes, or with K, M, G or T: 64G) (its type at %s:8)"
                         ", not 'lots'", tp, bp);
        ck_assert(has_msg(&d, want));
        free(want);
        want = xasprintf("%s:8: unknown rule id 'no-such-rule'", tp);
        ck_assert(has_msg(&d, want));
        free(want);
        strv_done(&d.msgs);
        profiles_done(&lib);
        rules_done(&rs);
        free(rp);
        free(bp);
        free(tp);
}
END_TEST
DEFINE_TEST(profile_param_errors, .description = "profile param errors", .root = "tmptree");

START_TEST(engine_results)
{
        char *rp = write_file("rules/r.ini", rules_text);
        char *bp = write_file("p/base.ini", "[profile]\nname = base\n[params]\ncpu_governor = performance\nshmmax_min = 64G\n"
                                            "[types]\ncpu_governor = enum performance schedutil\nshmmax_min = size\n");
        struct ruleset rs = {0};
        struct diags d = {0};
        ck_assert_int_eq(rules_load_file(&rs, rp, &d), 0);
        struct profile_lib lib = {0};
        ck_assert_int_eq(profiles_load_file(&lib, bp, &d), 0);
        struct resolved prof;
        ck_assert_int_eq(profile_resolve(&lib, "base", &rs, &prof, &d), 0);

        struct root *r;
        struct facts *f = empty_facts(&r);
        fact_str(f, "t", "acpi-cpufreq", "cpu.cpufreq.driver");
        fact_str(f, "t", "ondemand", "cpu.policy.0.governor");
        fact_uint(f, "t", 18446744073692774399ull, "sysctl.kernel.shmmax");
        struct audit a;
        const char *bad = NULL;
        ck_assert_int_eq(engine_run(&rs, &prof, f, NULL, &a, &bad), 0);
        ck_assert_uint_eq(a.n, 2);
        ck_assert_int_eq(a.v[0].status, RES_FAIL);
        ck_assert_str_eq(a.v[0].observed, "cpu.policy.0.governor = ondemand (1 of 1 item)");
        ck_assert_str_eq(a.v[0].expected, "== performance");
        ck_assert_str_eq(a.v[0].remedy_summary, "write performance to /sys/x now, and at boot through tmpfiles.d (disabling a tmpfiles.d line that would win over it)");
        ck_assert_int_eq(a.v[1].status, RES_PASS);
        ck_assert_uint_eq(a.count[RES_FAIL], 1);
        audit_done(&a);

        struct strv only = {0};
        strv_add(&only, "nope");
        ck_assert_int_eq(engine_run(&rs, &prof, f, &only, &a, &bad), -ENOENT);
        ck_assert_str_eq(bad, "nope");
        strv_done(&only);
        facts_free(f);
        root_free(r);
        resolved_done(&prof);
        profiles_done(&lib);
        rules_done(&rs);
        free(rp);
        free(bp);
}
END_TEST
DEFINE_TEST(engine_results, .description = "engine results", .root = "tmptree");

/* The DSL of issue 17 item 7: "${x} set", severity from a profile parameter (checked where the
 * profile sets it), areas as data, site rules in ROOT/etc/llmtune/rules.d with profiles.d's trust
 * checks, and values longer than inih's line: continuation lines, or a file:line error. */
static const char *dsl_params(void *u, const char *name)
{
        return streq(name, "ram_per_gpu") ? u : NULL;
}

START_TEST(dsl_set_sentinel)
{
        struct root *r;
        struct facts *f = empty_facts(&r);
        static const char *const forms[] = {"${ram_per_gpu} set", "${ram_per_gpu} != any"}; /* new and old spelling */
        for (size_t i = 0; i < 2; i++) {
                struct expr e;
                char *err = NULL;
                ck_assert_msg(expr_parse(forms[i], &e, &err) == 0, "%s: %s", forms[i], err);
                struct eval_result er;
                expr_eval(&e, f, dsl_params, "any", &er);
                ck_assert_int_eq(er.status, EVAL_FALSE);
                ck_assert_str_eq(er.observed, "${ram_per_gpu} = any");
                eval_result_done(&er);
                expr_eval(&e, f, dsl_params, "80G", &er);
                ck_assert_int_eq(er.status, EVAL_TRUE);
                eval_result_done(&er);
                expr_eval(&e, f, NULL, NULL, &er);
                ck_assert_int_eq(er.status, EVAL_ERROR);
                ck_assert_str_eq(er.reason, "unknown parameter ${ram_per_gpu}");
                eval_result_done(&er);
                expr_done(&e);
        }
        struct expr e;
        char *err = NULL;
        ck_assert_int_eq(expr_parse("cpu.count set", &e, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "'set' tests a profile parameter"));
        free(err);
        ck_assert_int_eq(expr_parse("${ram_per_gpu} set 3", &e, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "takes no value"));
        free(err);
        ck_assert_int_eq(expr_parse("all gpu.*.x == 1 where vendor_id set", &e, &err), -EINVAL);
        free(err);
        facts_free(f);
        root_free(r);
}
END_TEST
DEFINE_TEST(dsl_set_sentinel, .description = "dsl set sentinel", .root = "tmptree");

static const char *sev_rules = "[link]\n"
                               "title = t\n"
                               "area = site-checks\n" /* not one of the shipped areas */
                               "severity = ${link_severity}\n"
                               "rationale = r\n"
                               "source = s\n"
                               "check = cpu.count >= 1\n";

START_TEST(dsl_severity_parameter)
{
        char *rp = write_file("rules/r.ini", sev_rules);
        /* a type broader than the severities: the severity check still holds for the rule */
        char *bp = write_file("p/base.ini", "[profile]\nname = base\n[params]\nlink_severity = info\n[types]\n"
                                            "link_severity = names\n");
        char *lp = write_file("p/loaded.ini", "[profile]\nname = loaded\ninherits = base\n[params]\n"
                                              "link_severity = critical\n");
        char *xp = write_file("p/bad.ini", "[profile]\nname = bad\ninherits = base\n[params]\n\nlink_severity = huge\n");
        char *op = write_file("p/old.ini", "[profile]\nname = old\ninherits = base\n[params]\npcie_check_under_load = true\n");
        struct ruleset rs = {0};
        struct diags d = {0};
        ck_assert_int_eq(rules_load_file(&rs, rp, &d), 0);
        ck_assert_str_eq(rs.v[0].area, "site-checks");
        ck_assert_str_eq(rs.v[0].severity_param, "link_severity");
        struct profile_lib lib = {0};
        ck_assert_int_eq(profiles_load_file(&lib, bp, &d), 0);
        ck_assert_int_eq(profiles_load_file(&lib, lp, &d), 0);
        ck_assert_int_eq(profiles_load_file(&lib, xp, &d), 0);
        ck_assert_int_eq(profiles_load_file(&lib, op, &d), 0);
        struct resolved r;
        enum severity sev;
        ck_assert_int_eq(profile_resolve(&lib, "base", &rs, &r, &d), 0);
        ck_assert(resolved_rule_enabled(&r, &rs.v[0], &sev));
        ck_assert_int_eq(sev, SEV_INFO);
        resolved_done(&r);
        ck_assert_int_eq(profile_resolve(&lib, "loaded", &rs, &r, &d), 0);
        ck_assert(resolved_rule_enabled(&r, &rs.v[0], &sev));
        ck_assert_int_eq(sev, SEV_CRITICAL);
        resolved_done(&r);
        /* a bad value: the profile's line, and the rule it is the severity of */
        ck_assert_int_eq(profile_resolve(&lib, "bad", &rs, &r, &d), -EINVAL);
        dump(&d);
        char *want = xasprintf("%s:6: parameter 'link_severity' is the severity of rule 'link' (%s:1): critical, "
                               "warning or info, not 'huge'", xp, rp);
        ck_assert(has_msg(&d, want));
        free(want);
        strv_done(&d.msgs);
        /* the parameter the folded *-loaded rules replaced is named with what to set instead */
        ck_assert_int_eq(profile_resolve(&lib, "old", &rs, &r, &d), -EINVAL);
        ck_assert(has_msg(&d, "it became pcie_link_severity"));
        strv_done(&d.msgs);
        /* a rule whose parameter the profile lacks cannot resolve */
        free(write_file("p2/base.ini", "[profile]\nname = base\n"));
        char *b2 = xasprintf("%s/p2/base.ini", tmptree_path());
        struct profile_lib lib2 = {0};
        ck_assert_int_eq(profiles_load_file(&lib2, b2, &d), 0);
        ck_assert_int_eq(profile_resolve(&lib2, "base", &rs, &r, &d), -EINVAL);
        ck_assert(has_msg(&d, "rule 'link' needs parameter 'link_severity'"));
        strv_done(&d.msgs);
        /* "severity = ${...}" must be a whole parameter reference */
        char *bad = write_file("rules/bad.ini", "[x]\ntitle = t\narea = cpu\nseverity = ${a b}\nrationale = r\n"
                                                "source = s\ncheck = cpu.count >= 1\n");
        struct ruleset rs2 = {0};
        ck_assert_int_eq(rules_load_file(&rs2, bad, &d), -EINVAL);
        want = xasprintf("%s:4: severity must be critical, warning, info or ${parameter}, not '${a b}'", bad);
        ck_assert(has_msg(&d, want));
        free(want);
        strv_done(&d.msgs);
        rules_done(&rs2);
        profiles_done(&lib2);
        profiles_done(&lib);
        rules_done(&rs);
        free(b2);
        free(bad);
        free(rp);
        free(bp);
        free(lp);
        free(xp);
        free(op);
}
END_TEST
DEFINE_TEST(dsl_severity_parameter, .description = "dsl severity parameter", .root = "tmptree");

START_TEST(dsl_site_rules)
{
        tmptree_put("root/etc/llmtune/rules.d/10-site.ini", sev_rules, 0644);
        tmptree_put("root/etc/llmtune/rules.d/20-dup.ini",
                    "[link]\ntitle = t\narea = cpu\nrationale = r\nsource = s\ncheck = cpu.count >= 1\n", 0644);
        tmptree_put("root/etc/llmtune/rules.d/notes.txt", "not a rule file\n", 0644);
        char *rootdir = xasprintf("%s/root", tmptree_path());
        struct root *root;
        ck_assert_int_eq(root_new(rootdir, &root), 0);
        struct ruleset rs = {0};
        struct diags d = {0};
        ck_assert_int_eq(rules_load_site(&rs, root, &d), -EINVAL);
        dump(&d);
        ck_assert_uint_eq(rs.n, 2);
        ck_assert_str_eq(rs.v[0].file, "/etc/llmtune/rules.d/10-site.ini");
        ck_assert(has_msg(&d, "/etc/llmtune/rules.d/20-dup.ini:1: rule 'link' already defined at "
                              "/etc/llmtune/rules.d/10-site.ini:1"));
        ck_assert_uint_eq(d.msgs.n, 1);
        strv_done(&d.msgs);
        rules_done(&rs);
        /* As root, a rule file another user could change is refused, as a profiles.d file is. */
        root_free(root);
        tmptree_put("root/etc/llmtune/rules.d/20-dup.ini", "", 0644);
        tmptree_put("root/etc/llmtune/rules.d/30-open.ini", sev_rules, 0666);
        ck_assert_int_eq(root_new(rootdir, &root), 0);
        int rc = rules_load_site(&rs, root, &d);
        dump(&d);
        if (geteuid() == 0) {
                ck_assert_int_eq(rc, -EINVAL); /* a file that did not load, whatever the reason (ini_dir_load) */
                ck_assert(has_msg(&d, "30-open.ini: refused: the file itself is writable by every user"));
                ck_assert_uint_eq(rs.n, 1);
        } else
                ck_assert_uint_eq(rs.n, 1); /* 30-open.ini loaded: a duplicate id */
        strv_done(&d.msgs);
        rules_done(&rs);
        root_free(root);
        /* no rules.d: nothing to load, no error */
        ck_assert_int_eq(root_new(tmptree_path(), &root), 0);
        ck_assert_int_eq(rules_load_site(&rs, root, &d), 0);
        ck_assert_uint_eq(rs.n + d.msgs.n, 0);
        root_free(root);
        free(rootdir);
}
END_TEST
DEFINE_TEST(dsl_site_rules, .description = "dsl site rules", .root = "tmptree");

/*
 * A site rule or profile is judged on the file that is read, and read with the one cap: (1) a link
 * in rules.d to an absolute path is followed inside the root by the read, so the trust check must
 * follow it there too (it judged the host path the link names, which here does not exist, and
 * passed a world-writable file in the tree); (2) a site file over HOST_FILE_MAX is refused by name
 * as a shipped one is (the root's 8 MiB read cap let it through).
 */
START_TEST(site_files_judged_as_read)
{
        if (geteuid() != 0)
                return; /* not root: rule and profile files are not checked (trust.h) */
        _cleanup_free_ char *target = xasprintf("/llmtune-site-%d/open.ini", (int)getpid());
        _cleanup_free_ char *in_tree = xasprintf("root%s", target);
        tmptree_put(in_tree, sev_rules, 0666);
        tmptree_link("root/etc/llmtune/rules.d/10-link.ini", target);
        ck_assert_int_ne(access(target, F_OK), 0); /* no such file on the host */
        char *rootdir = xasprintf("%s/root", tmptree_path());
        struct root *root;
        ck_assert_int_eq(root_new(rootdir, &root), 0);
        struct ruleset rs = {0};
        struct diags d = {0};
        ck_assert_int_eq(rules_load_site(&rs, root, &d), -EINVAL);
        dump(&d);
        ck_assert_uint_eq(rs.n, 0);
        ck_assert_msg(has_msg(&d, "10-link.ini: refused: the file ") && has_msg(&d, "open.ini is writable by every user"),
                      "the linked world-writable rule file is refused");
        strv_done(&d.msgs);
        root_free(root);

        ck_assert_int_eq(chmod(rootdir, 0755), 0);
        size_t n = HOST_FILE_MAX + 16;
        _cleanup_free_ char *big = xmalloc(n);
        memset(big, '#', n);
        memcpy(big, "[profile]\nname = big\n", strlen("[profile]\nname = big\n"));
        for (size_t i = 64; i < n; i += 64)
                big[i] = '\n';
        tmptree_write("root/etc/llmtune/profiles.d/big.ini", big, n);
        tmptree_put("shipped/base.ini", "[profile]\nname = base\n", 0644);
        _cleanup_free_ char *pdir = xasprintf("%s/shipped", tmptree_path());
        ck_assert_int_eq(root_new(rootdir, &root), 0);
        struct profile_lib lib = {0};
        ck_assert_int_eq(profiles_load(&lib, pdir, root, &d), -EINVAL);
        dump(&d);
        ck_assert_msg(has_msg(&d, "/etc/llmtune/profiles.d/big.ini: cannot read: larger than 1 MiB: not a profile"),
                      "the big site profile is refused by name");
        ck_assert_uint_eq(lib.n, 1);
        ck_assert_str_eq(lib.v[0].name, "base");
        strv_done(&d.msgs);
        profiles_done(&lib);
        rules_done(&rs);
        root_free(root);
        free(rootdir);
}
END_TEST
DEFINE_TEST(site_files_judged_as_read,
            .description = "a site rule or profile is judged on the file read (a link followed inside the root) and capped as a shipped one",
            .root = "tmptree", .timeout = 60);

START_TEST(dsl_long_values)
{
        /* 600 characters on one line: more than inih's line (Debian: 200): a file:line error */
        struct sbuf b = {0};
        sbuf_add(&b, "[long]\ntitle = t\narea = cpu\nrationale = ");
        for (int i = 0; i < 60; i++)
                sbuf_add(&b, "0123456789");
        sbuf_add(&b, "\nsource = s\ncheck = cpu.count >= 1\n");
        struct ruleset rs = {0};
        struct diags d = {0};
        ck_assert_int_eq(rules_load_buffer(&rs, "long.ini", b.s, b.len, &d), -EINVAL);
        dump(&d);
        ck_assert(has_msg(&d, "long.ini:4: line longer than"));
        ck_assert(has_msg(&d, "continue it on an indented line"));
        strv_done(&d.msgs);
        rules_done(&rs);
        free(sbuf_steal(&b));
        /* the same 600 characters over 6 continuation lines: one value, nothing cut */
        sbuf_add(&b, "[long]\ntitle = t\narea = cpu\nrationale = ");
        for (int i = 0; i < 6; i++) {
                sbuf_add(&b, i ? "\n  " : "");
                for (int k = 0; k < 10; k++)
                        sbuf_add(&b, "0123456789");
        }
        sbuf_add(&b, "\nsource = s\ncheck = cpu.count >= 1\n");
        ck_assert_int_eq(rules_load_buffer(&rs, "long.ini", b.s, b.len, &d), 0);
        ck_assert_uint_eq(strlen(rs.v[0].rationale), 600 + 5);
        ck_assert_ptr_nonnull(strstr(rs.v[0].rationale, "0123456789 0123456789"));
        ck_assert_str_eq(rs.v[0].source, "s");
        rules_done(&rs);
        free(sbuf_steal(&b));
}
END_TEST
DEFINE_TEST(dsl_long_values, .description = "dsl long values", .root = "tmptree");

START_TEST(nccl_seed_file)
{
        struct nccl_catalog c = {0};
        const char *cat = getenv("LLMTUNE_NCCL_CATALOG");
        ck_assert_ptr_nonnull(cat);
        ck_assert_int_eq(nccl_catalog_load(cat, &c), 0);
        const char *text = "NCCL_SOCKET_TIMEOUT=1800\n"
                           "NCCL_MIN_NRINGS=4\n"
                           "NCCL_ASYNC_ERROR_HANDLING=1\n"
                           "NCCL_P2P_DISABLE=0\n"
                           "NCCL_DEBUG = INFO\n"
                           "NCCL_IB_HCAA=mlx5\n"
                           "NCCL_DEBUG=WARN # quiet\r\n";
        struct nccl_lint l;
        nccl_lint_text(&c, text, strlen(text), &l);
        int seen[NP_ADVICE + 1] = {0};
        for (size_t i = 0; i < l.n_findings; i++) {
                ck_assert_uint_le(l.findings[i].problem, NP_ADVICE);
                seen[l.findings[i].problem] |= 1 << (l.findings[i].line - 1);
        }
        ck_assert_int_eq(seen[NP_FOREIGN], (1 << 0) | (1 << 2));  /* SOCKET_TIMEOUT, ASYNC_ERROR_HANDLING */
        ck_assert_int_eq(seen[NP_DEPRECATED], 1 << 1);            /* MIN_NRINGS */
        ck_assert_int_eq(seen[NP_DEBUG], 1 << 3);                 /* P2P_DISABLE=0 */
        ck_assert_int_eq(seen[NP_UNKNOWN], 1 << 5);               /* IB_HCAA */
        ck_assert_int_eq(seen[NP_SYNTAX], (1 << 4) | (1 << 6));   /* spaces; CRLF + inline # */
        ck_assert_int_eq(seen[NP_DUPLICATE], 1 << 6);             /* NCCL_DEBUG twice: first wins */
        ck_assert_str_eq(nccl_catalog_suggest(&c, "NCCL_IB_HCAA"), "NCCL_IB_HCA");
        nccl_lint_done(&l);
        nccl_catalog_done(&c);
}
END_TEST
DEFINE_TEST(nccl_seed_file, .description = "nccl seed file", .root = "tmptree");

/* The full Levenshtein table, as a reference for the banded one in nccl-lint.c. */
static size_t full_edit_distance(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b), d[80][80];
        for (size_t i = 0; i <= la; i++)
                for (size_t j = 0; j <= lb; j++)
                        if (i == 0 || j == 0) {
                                d[i][j] = i + j;
                        } else {
                                size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
                                v = v < d[i - 1][j] + 1 ? v : d[i - 1][j] + 1;
                                d[i][j] = v < d[i][j - 1] + 1 ? v : d[i][j - 1] + 1;
                        }
        return d[la][lb];
}

/* Thousands of names 1-5 random edits away from catalog names: the suggestion is the first catalog
 * name (of those it may suggest) at the least distance below 4, exactly as the full table says. */
START_TEST(nccl_suggest_matches_full_table)
{
        struct nccl_catalog c = {0};
        ck_assert_int_eq(nccl_catalog_load(getenv("LLMTUNE_NCCL_CATALOG"), &c), 0);
        unsigned seed = 17;
        const char alphabet[] = "ABCHINPS_";
        for (int round = 0; round < 3000; round++) {
                char name[80];
                snprintf(name, sizeof(name), "%s", c.v[rand_r(&seed) % c.n].name);
                for (int e = 1 + rand_r(&seed) % 5; e > 0; e--) {
                        size_t len = strlen(name), at = rand_r(&seed) % (len + 1);
                        char ch = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
                        int op = rand_r(&seed) % 3;
                        if (op == 0 && len + 1 < sizeof(name)) { /* insert */
                                memmove(name + at + 1, name + at, len - at + 1);
                                name[at] = ch;
                        } else if (op == 1 && at < len) { /* delete */
                                memmove(name + at, name + at + 1, len - at);
                        } else if (at < len) { /* substitute */
                                name[at] = ch;
                        }
                }
                const char *want = NULL;
                size_t best = 4;
                for (size_t i = 0; i < c.n; i++) {
                        if (c.v[i].status == NCCL_REMOVED || c.v[i].status == NCCL_NOT_NCCL)
                                continue;
                        size_t d = full_edit_distance(name, c.v[i].name);
                        if (d < best) {
                                best = d;
                                want = c.v[i].name;
                        }
                }
                const char *got = nccl_catalog_suggest(&c, name);
                ck_assert_msg(got == want, "%s: suggested %s, the full table says %s", name, got ? got : "nothing",
                              want ? want : "nothing");
        }
        nccl_catalog_done(&c);
}
END_TEST
DEFINE_TEST(nccl_suggest_matches_full_table, .description = "nccl suggest matches full table", .root = "tmptree");

UNIT_MAIN(.name = "engine", .setup = setup, .teardown = tmptree_drop)
