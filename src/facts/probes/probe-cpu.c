/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cpu.*: online CPUs, sockets/cores/threads from sysfs topology, the CPU model, and cpufreq
 * policies (Documentation/admin-guide/pm/cpufreq.rst) with the intel_pstate/amd_pstate mode.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>

#include "facts/readers/cpu-topo.h"
#include "facts/readers/dropin-order.h"
#include "facts/facts.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

#define CPU_DIR "/sys/devices/system/cpu"

#define NO_TOPOLOGY "no CPU topology in sysfs (cpuN/topology/physical_package_id)"

static void probe_sockets(struct facts *f, const struct cpu_topo *t)
{
        if (t->nsockets == 0)
                fact_absent(f, CPU_DIR "/cpu0/topology/physical_package_id", NO_TOPOLOGY, "cpu.sockets");
        else
                fact_int(f, CPU_DIR "/cpu*/topology", t->nsockets, "cpu.sockets");
}

/*
 * Arm: /proc/cpuinfo has no model name, only "CPU implementer" and "CPU part" per CPU (the MIDR
 * fields, arch/arm64/kernel/cpuinfo.c). Named as lscpu names them; the parts of the Arm and NVIDIA
 * cores found in GPU hosts, others as "IMPLEMENTER part 0xNNN".
 */
static const struct {
        unsigned impl;
        const char *vendor;
} arm_vendors[] = {
        {0x41, "ARM"},     {0x42, "Broadcom"}, {0x43, "Cavium"},  {0x46, "Fujitsu"}, {0x48, "HiSilicon"},
        {0x4e, "NVIDIA"},  {0x50, "APM"},      {0x51, "Qualcomm"}, {0x61, "Apple"},  {0x6d, "Microsoft"},
        {0xc0, "Ampere"},
};

static const struct {
        unsigned impl, part;
        const char *name;
} arm_parts[] = {
        {0x41, 0xd03, "Cortex-A53"},   {0x41, 0xd05, "Cortex-A55"},   {0x41, 0xd07, "Cortex-A57"},
        {0x41, 0xd08, "Cortex-A72"},   {0x41, 0xd09, "Cortex-A73"},   {0x41, 0xd0a, "Cortex-A75"},
        {0x41, 0xd0b, "Cortex-A76"},   {0x41, 0xd0c, "Neoverse-N1"},  {0x41, 0xd0d, "Cortex-A77"},
        {0x41, 0xd40, "Neoverse-V1"},  {0x41, 0xd41, "Cortex-A78"},   {0x41, 0xd42, "Cortex-A78AE"},
        {0x41, 0xd44, "Cortex-X1"},    {0x41, 0xd46, "Cortex-A510"},  {0x41, 0xd47, "Cortex-A710"},
        {0x41, 0xd48, "Cortex-X2"},    {0x41, 0xd49, "Neoverse-N2"},  {0x41, 0xd4a, "Neoverse-E1"},
        {0x41, 0xd4b, "Cortex-A78C"},  {0x41, 0xd4c, "Cortex-X1C"},   {0x41, 0xd4d, "Cortex-A715"},
        {0x41, 0xd4e, "Cortex-X3"},    {0x41, 0xd4f, "Neoverse-V2"},  {0x41, 0xd80, "Cortex-A520"},
        {0x41, 0xd81, "Cortex-A720"},  {0x41, 0xd82, "Cortex-X4"},    {0x41, 0xd84, "Neoverse-V3"},
        {0x41, 0xd85, "Cortex-X925"},  {0x41, 0xd87, "Cortex-A725"},  {0x41, 0xd8e, "Neoverse-N3"},
        {0x4e, 0x003, "Denver 2"},     {0x4e, 0x004, "Carmel"},       {0x46, 0x001, "A64FX"},
        {0x48, 0xd01, "TaiShan-v110"}, {0xc0, 0xac3, "Ampere-1"},     {0xc0, 0xac4, "Ampere-1a"},
};

/* The value of "KEY<spaces>: VALUE" on the line at P, or NULL. */
static char *line_value(const char *p, const char *key)
{
        size_t kl = strlen(key);
        if (strncmp(p, key, kl) != 0 || (p[kl] != '\t' && p[kl] != ' ' && p[kl] != ':'))
                return NULL;
        const char *colon = strchr(p, ':'), *nl = strchr(p, '\n');
        if (!colon || (nl && colon > nl))
                return NULL;
        colon++;
        while (*colon == ' ' || *colon == '\t')
                colon++;
        char *v = xstrndup(colon, nl ? (size_t)(nl - colon) : strlen(colon));
        return strip_trailing(v);
}

static bool arm_model(struct facts *f, const char *data)
{
        struct strv names = {0};
        uint64_t impl = UINT64_MAX;
        for (const char *p = data; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                _cleanup_free_ char *iv = line_value(p, "CPU implementer");
                _cleanup_free_ char *pv = line_value(p, "CPU part");
                uint64_t v;
                if (iv && parse_u64(iv, &v) == 0)
                        impl = v;
                if (!pv || impl == UINT64_MAX || parse_u64(pv, &v) < 0)
                        continue;
                const char *vendor = NULL, *part = NULL;
                for (size_t i = 0; i < ARRAY_SIZE(arm_vendors); i++)
                        if (arm_vendors[i].impl == impl)
                                vendor = arm_vendors[i].vendor;
                for (size_t i = 0; i < ARRAY_SIZE(arm_parts); i++)
                        if (arm_parts[i].impl == impl && arm_parts[i].part == v)
                                part = arm_parts[i].name;
                _cleanup_free_ char *vbuf = vendor ? NULL : xasprintf("implementer 0x%02" PRIx64, impl);
                char *name = part ? xasprintf("%s %s", vendor ? vendor : vbuf, part)
                                  : xasprintf("%s part 0x%03" PRIx64, vendor ? vendor : vbuf, v);
                if (!strv_contains(&names, name))
                        strv_add(&names, name);
                free(name);
        }
        if (names.n) {
                /* big.LITTLE and DynamIQ systems have several core types: name each once */
                _cleanup_free_ char *joined = strv_join(&names, " + ");
                fact_str(f, "/proc/cpuinfo (CPU implementer, CPU part)", joined, "cpu.model");
                strv_done(&names);
                return true;
        }
        /* No MIDR fields: the board's own name (device tree, then DMI) */
        static const char *const boards[] = {"/proc/device-tree/model", "/sys/firmware/devicetree/base/model",
                                             "/sys/class/dmi/id/product_name"};
        for (size_t i = 0; i < ARRAY_SIZE(boards); i++) {
                const char *d;
                size_t len;
                if (root_read(facts_root(f), boards[i], &d, &len) < 0 || len == 0)
                        continue;
                /* the device-tree property is NUL-terminated */
                _cleanup_free_ char *v = xstrndup(d, strnlen(d, len));
                if (!*strip_trailing(v))
                        continue;
                fact_str(f, boards[i], v, "cpu.model");
                return true;
        }
        return false;
}

static void probe_model(struct facts *f)
{
        const char *data;
        int rc = root_read(facts_root(f), "/proc/cpuinfo", &data, NULL);
        if (root_gone(rc)) {
                fact_absent(f, "/proc/cpuinfo", "no /proc/cpuinfo", "cpu.model");
                return;
        }
        if (rc < 0) { /* there but not readable (EFBIG: a 20 GiB file is no kernel's) */
                fact_unreadable(f, "/proc/cpuinfo", rc, NULL, "cpu.model");
                return;
        }
        /* Arm: the implementer/part names, not the "Processor : AArch64 Processor rev 4" of old kernels */
        if (strstr(data, "CPU implementer") && arm_model(f, data))
                return;
        /* x86 says "model name", POWER says "cpu", Arm often only "CPU implementer". */
        static const char *const keys[] = {"model name", "cpu", "Processor"};
        for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
                for (const char *p = data; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                        size_t kl = strlen(keys[k]);
                        if (strncmp(p, keys[k], kl) != 0 || (p[kl] != '\t' && p[kl] != ' ' && p[kl] != ':'))
                                continue;
                        const char *colon = strchr(p, ':'), *nl = strchr(p, '\n');
                        if (!colon || (nl && colon > nl))
                                continue;
                        colon++;
                        while (*colon == ' ' || *colon == '\t')
                                colon++;
                        _cleanup_free_ char *v = xstrndup(colon, nl ? (size_t)(nl - colon) : strlen(colon));
                        fact_str(f, "/proc/cpuinfo", strip_trailing(v), "cpu.model");
                        return;
                }
        if (arm_model(f, data))
                return;
        fact_absent(f, "/proc/cpuinfo", "no model line in /proc/cpuinfo, no device-tree model, no DMI product name",
                    "cpu.model");
}

/*
 * cpufreq policies: cpufreq/policyN on current kernels, cpuN/cpufreq on old ones. Listing them
 * (and the driver, for "when = cpu.cpufreq.driver present") is one stage; each per-policy
 * attribute is a stage of its own, read for every policy only when a fact under it is asked for:
 * an audit reads the governor and the offered governors of each policy, not five files per policy
 * (1920 on a 384-CPU host).
 */
static const struct {
        const char *file, *fact, *absent; /* absent: the reason when the file is missing */
} policy_attrs[] = {
        {"scaling_driver", "driver", NULL},
        {"scaling_governor", "governor", NULL},
        {"scaling_available_governors", "available_governors", NULL},
        {"affected_cpus", "cpus", NULL},
        {"energy_performance_preference", "epp", "no EPP (not HWP/amd-pstate-epp)"},
};

struct cpu_state {
        bool topo, cores, model, policies, persistent;
        bool attr_read[ARRAY_SIZE(policy_attrs)];
        unsigned *cpus;
        int n;
        struct strv policy_dirs; /* the policies found, with their ids */
        unsigned *policy_ids;
};

static void cpu_state_free(void *p)
{
        struct cpu_state *s = p;
        if (s) {
                free(s->cpus);
                strv_done(&s->policy_dirs);
                free(s->policy_ids);
        }
        free(s);
}

static struct cpu_state *cpu_state(struct facts *f)
{
        return facts_state(f, "probe-cpu", sizeof(struct cpu_state), cpu_state_free);
}

static void stage_topology(struct facts *f, struct cpu_state *s);

/* A policy counts when its scaling_driver exists (a stat, not a read: the driver of the first is
 * read once for cpu.cpufreq.driver, and by the "driver" attribute from the root's cache). */
static bool add_policy(struct facts *f, struct cpu_state *s, const char *dir, unsigned id, char **driver)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *drv = xasprintf("%s/scaling_driver", dir);
        struct stat st;
        if (root_stat(r, drv, &st, true) < 0)
                return false;
        s->policy_ids = xrealloc(s->policy_ids, (s->policy_dirs.n + 1) * sizeof(*s->policy_ids));
        s->policy_ids[s->policy_dirs.n] = id;
        strv_add(&s->policy_dirs, dir);
        if (!*driver)
                root_read_line(r, drv, driver);
        return true;
}

static void stage_policies(struct facts *f, struct cpu_state *s)
{
        struct root *r = facts_root(f);
        struct strv names = {0};
        const char *driver_src = NULL;
        _cleanup_free_ char *driver = NULL;

        s->policies = true;
        int lrc = root_list(r, CPU_DIR "/cpufreq", &names);
        if (lrc == 0)
                for (size_t i = 0; i < names.n; i++) {
                        unsigned id;
                        if (!parse_name_index(names.v[i], "policy", &id))
                                continue;
                        _cleanup_free_ char *dir = xasprintf(CPU_DIR "/cpufreq/%s", names.v[i]);
                        if (add_policy(f, s, dir, id, &driver))
                                driver_src = CPU_DIR "/cpufreq/policy*/scaling_driver";
                }
        strv_done(&names);
        if (s->policy_dirs.n == 0) {
                /* Old layout: a real cpufreq directory per CPU (CPUs sharing a policy repeat it). */
                if (!s->topo)
                        stage_topology(f, s);
                for (int i = 0; i < s->n; i++) {
                        _cleanup_free_ char *dir = xasprintf(CPU_DIR "/cpu%u/cpufreq", s->cpus[i]);
                        if (add_policy(f, s, dir, s->cpus[i], &driver))
                                driver_src = CPU_DIR "/cpu*/cpufreq/scaling_driver";
                }
        }
        size_t policies = s->policy_dirs.n;
        if (policies == 0 && lrc < 0 && !root_gone(lrc)) {
                /* the policies may be there, in the directory that cannot be listed */
                fact_unreadable(f, CPU_DIR "/cpufreq", lrc, NULL, "cpu.cpufreq.policies");
                fact_unreadable(f, CPU_DIR "/cpufreq", lrc, NULL, "cpu.cpufreq.driver");
        } else {
                fact_int(f, CPU_DIR "/cpufreq", (int64_t)policies, "cpu.cpufreq.policies");
                if (policies == 0)
                        /* Live, the kernel's answer may be explained; in a tree only what is missing is known. */
                        fact_absent(f, CPU_DIR "/cpu0/cpufreq",
                                    root_runs_here(r) ? "no cpufreq driver (VM, container or disabled in firmware)"
                                    : root_is_topology(r)
                                            ? "an lstopo export holds no cpufreq data"
                                            : "no " CPU_DIR "/cpufreq/policy* nor cpu*/cpufreq in this tree",
                                    "cpu.cpufreq.driver");
                else if (driver)
                        fact_str(f, driver_src, driver, "cpu.cpufreq.driver");
                else
                        fact_unreadable(f, driver_src, 0, "scaling_driver unreadable", "cpu.cpufreq.driver");
        }

        /* Active intel_pstate / amd-pstate-epp offer only performance and powersave. */
        fact_file_str(f, CPU_DIR "/intel_pstate/status", "intel_pstate not in use", "cpu.intel_pstate.status");
        fact_file_str(f, CPU_DIR "/amd_pstate/status", "amd_pstate not in use", "cpu.amd_pstate.status");
}

/* Can PATTERN name attribute K of some policy? Every such name ends in "." + the attribute's fact
 * name: "cpu.policy.*.governor" and the other four attributes are told apart without formatting
 * and matching 384 names for each. */
static bool pattern_may_name_attr(const char *pattern, size_t k)
{
        char end[64];
        snprintf(end, sizeof(end), ".%s", policy_attrs[k].fact);
        return fact_pattern_may_end(pattern, end);
}

/* Attribute K of every policy whose fact name PATTERN matches (NULL: of every policy). */
static void stage_policy_attr(struct facts *f, struct cpu_state *s, size_t k, const char *pattern)
{
        if (!s->policies)
                stage_policies(f, s);
        if (s->attr_read[k] || (pattern && !pattern_may_name_attr(pattern, k)))
                return;
        bool all = true;
        for (size_t i = 0; i < s->policy_dirs.n; i++) {
                _cleanup_free_ char *name = xasprintf("cpu.policy.%u.%s", s->policy_ids[i], policy_attrs[k].fact);
                if (pattern && !glob_match(pattern, name)) {
                        all = false;
                        continue;
                }
                _cleanup_free_ char *p = xasprintf("%s/%s", s->policy_dirs.v[i], policy_attrs[k].file);
                fact_file_str(f, p, policy_attrs[k].absent, "%s", name);
        }
        s->attr_read[k] = all;
}

/*
 * cpu.policy.N.persistent_governor: what a tmpfiles.d "w" line writes to the policy's
 * scaling_governor at boot, by tmpfiles.d(5)'s rule (dropin-order.h): a line whose path reaches the
 * file through cpuK/cpufreq counts, and of two different paths reaching it the one that first
 * appears later writes last. Without such a line the driver's default governor applies (absent).
 */
static void stage_persistent(struct facts *f, struct cpu_state *s)
{
        if (!s->policies)
                stage_policies(f, s);
        s->persistent = true;
        struct root *r = facts_root(f);
        struct dropin_entries e;
        _cleanup_free_ char *bad = NULL;
        int rc = dropin_entries_load(r, &dropin_tmpfiles, NULL, &e, &bad);
        for (size_t i = 0; i < s->policy_dirs.n; i++) {
                _cleanup_free_ char *name = xasprintf("cpu.policy.%u.persistent_governor", s->policy_ids[i]);
                _cleanup_free_ char *p = xasprintf("%s/scaling_governor", s->policy_dirs.v[i]);
                const struct dropin_entry *w = rc == 0 ? dropin_effective(r, &e, p) : NULL;
                _cleanup_free_ char *src = w ? xasprintf("%s:%u", w->file->path, w->line) : NULL;
                if (rc < 0)
                        fact_unreadable(f, bad, rc, "systemd-tmpfiles reads it at boot (tmpfiles.d(5))", "%s", name);
                else if (w)
                        fact_str(f, src, w->value, "%s", name);
                else
                        fact_absent(f, "/etc/tmpfiles.d",
                                    "no tmpfiles.d line writes it: the cpufreq driver's default governor applies at boot",
                                    "%s", name);
        }
        if (rc == 0)
                dropin_entries_done(&e);
}

/* cpu.cores and cpu.threads_per_core: a stage of their own, since the sibling lists are a second
 * file per CPU that cpu.sockets (a profile's match block) does not need. */
static void stage_cores(struct facts *f, struct cpu_state *s)
{
        s->cores = true;
        const struct cpu_topo *t = cpu_topo_cores(f);
        if (t->nsockets == 0) {
                fact_absent(f, CPU_DIR "/cpu0/topology/physical_package_id", NO_TOPOLOGY, "cpu.cores");
                fact_absent(f, CPU_DIR "/cpu0/topology/physical_package_id", NO_TOPOLOGY, "cpu.threads_per_core");
                return;
        }
        const char *src = CPU_DIR "/cpu*/topology";
        size_t with_core = 0;
        for (size_t i = 0; i < t->n; i++)
                with_core += t->core[i] >= 0;
        if (t->ncores == 0) {
                fact_absent(f, src, "no core_cpus_list, thread_siblings_list or core_id in cpuN/topology",
                            "cpu.cores");
                fact_absent(f, src, "no core_cpus_list, thread_siblings_list or core_id in cpuN/topology",
                            "cpu.threads_per_core");
                return;
        }
        fact_int(f, src, t->ncores, "cpu.cores");
        fact_int(f, src, (int64_t)with_core / t->ncores, "cpu.threads_per_core");
}

static void stage_topology(struct facts *f, struct cpu_state *s)
{
        s->topo = true;
        const struct cpu_topo *t = cpu_topo_get(f);
        if (t->err == -ENOENT)
                fact_absent(f, CPU_DIR, "no " CPU_DIR "/online and no cpuN directories", "cpu.online");
        else if (t->err < 0)
                fact_unreadable(f, t->online_src ? t->online_src : CPU_DIR, t->err, NULL, "cpu.online");
        else {
                _cleanup_free_ char *list = format_cpulist(t->cpus, t->n);
                fact_str(f, t->online_src, list, "cpu.online");
                fact_int(f, t->online_src, (int64_t)t->n, "cpu.count");
        }
        if (t->err < 0) {
                const struct fact *on = facts_get(f, "cpu.online");
                if (t->err == -ENOENT)
                        fact_absent(f, on->source, on->reason, "cpu.count");
                else
                        fact_unreadable(f, on->source, 0, on->reason, "cpu.count");
        }
        s->cpus = xcalloc(t->n + 1, sizeof(*s->cpus));
        if (t->n)
                memcpy(s->cpus, t->cpus, t->n * sizeof(*s->cpus));
        s->n = (int)t->n;
        probe_sockets(f, t);
}

static int cpu_run(struct facts *f)
{
        struct cpu_state *s = cpu_state(f);
        if (!s->topo)
                stage_topology(f, s);
        if (!s->cores)
                stage_cores(f, s);
        if (!s->model) {
                s->model = true;
                probe_model(f);
        }
        for (size_t k = 0; k < ARRAY_SIZE(policy_attrs); k++)
                stage_policy_attr(f, s, k, NULL);
        if (!s->persistent)
                stage_persistent(f, s);
        return 0;
}

/* A pattern under cpu.policy. reads only the attributes it can name; any other runs it all. */
static int cpu_match(struct facts *f, const char *pattern)
{
        struct cpu_state *s = cpu_state(f);
        if (!startswith(pattern, "cpu.policy."))
                return cpu_run(f);
        for (size_t k = 0; k < ARRAY_SIZE(policy_attrs); k++)
                stage_policy_attr(f, s, k, pattern);
        if (!s->persistent && (fnmatch(pattern, "cpu.policy.0.persistent_governor", 0) == 0 ||
                               strstr(pattern, "persistent_governor")))
                stage_persistent(f, s);
        return 0;
}

/*
 * Stages, each run once: online CPUs and packages, cores (the sibling lists), the model, the cpufreq
 * policies, and each per-policy attribute. A profile's match block asks for cpu.sockets, a rule for
 * cpu.policy.*.governor: neither reads what the other needs.
 */
static int cpu_lookup(struct facts *f, const char *name)
{
        static const char *const topo[] = {"cpu.online", "cpu.count", "cpu.sockets"};
        struct cpu_state *s = cpu_state(f);
        for (size_t i = 0; i < ARRAY_SIZE(topo); i++)
                if (streq(name, topo[i]) && !s->topo)
                        stage_topology(f, s);
        if ((streq(name, "cpu.cores") || streq(name, "cpu.threads_per_core")) && !s->cores)
                stage_cores(f, s);
        if (streq(name, "cpu.model") && !s->model) {
                s->model = true;
                probe_model(f);
        }
        if ((startswith(name, "cpu.cpufreq.") || streq(name, "cpu.intel_pstate.status") ||
             streq(name, "cpu.amd_pstate.status")) &&
            !s->policies)
                stage_policies(f, s);
        if (startswith(name, "cpu.policy."))
                return cpu_match(f, name);
        /* anything else: facts_get() falls through to cpu_run() */
        return 0;
}

const struct probe probe_cpu = {
        .name = "cpu",
        .prefixes = {"cpu."},
        .run = cpu_run,
        .lookup = cpu_lookup,
        .match = cpu_match,
};
