/* SPDX-License-Identifier: MIT */
/*
 * cpu.*: online CPUs, sockets/cores/threads from sysfs topology, the CPU model, and cpufreq
 * policies (Documentation/admin-guide/pm/cpufreq.rst) with the intel_pstate/amd_pstate mode.
 */
#include <errno.h>
#include <stdio.h>

#include "facts.h"
#include "parse.h"
#include "probes.h"

#define CPU_DIR "/sys/devices/system/cpu"

/* CPUs that are online: the "online" list, else every cpuN directory whose own online is not 0. */
static int online_cpus(struct facts *f, unsigned **ret)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(r, CPU_DIR "/online", &line);
        if (rc == 0) {
                rc = parse_cpulist(line, ret);
                if (rc < 0)
                        fact_unreadable(f, CPU_DIR "/online", rc, line, "cpu.online");
                return rc;
        }
        struct strv names = {0};
        if (root_list(r, CPU_DIR, &names) < 0)
                return -ENOENT;
        unsigned *v = xcalloc(names.n + 1, sizeof(*v));
        int n = 0;
        for (size_t i = 0; i < names.n; i++) {
                unsigned c;
                char tail;
                if (sscanf(names.v[i], "cpu%u%c", &c, &tail) != 1)
                        continue;
                _cleanup_free_ char *p = xasprintf(CPU_DIR "/cpu%u/online", c);
                _cleanup_free_ char *on = NULL;
                if (root_read_line(r, p, &on) == 0 && streq(on, "0"))
                        continue;
                v[n++] = c;
        }
        strv_free(&names);
        /* cpuN directories list in name order; the facts want numeric order */
        for (int i = 1; i < n; i++)
                for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
                        unsigned t = v[j];
                        v[j] = v[j - 1];
                        v[j - 1] = t;
                }
        *ret = v;
        return n;
}

static void probe_topology(struct facts *f, const unsigned *cpus, int n)
{
        struct root *r = facts_root(f);
        int64_t *pkg = xcalloc((size_t)n + 1, sizeof(*pkg)), *core = xcalloc((size_t)n + 1, sizeof(*core));
        int known = 0;
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *pp = xasprintf(CPU_DIR "/cpu%u/topology/physical_package_id", cpus[i]);
                _cleanup_free_ char *cp = xasprintf(CPU_DIR "/cpu%u/topology/core_id", cpus[i]);
                _cleanup_free_ char *a = NULL, *b = NULL;
                if (root_read_line(r, pp, &a) < 0 || root_read_line(r, cp, &b) < 0 || parse_i64(a, &pkg[known]) < 0 ||
                    parse_i64(b, &core[known]) < 0)
                        continue; /* hwloc's trimmed tarballs keep CPUs without topology */
                known++;
        }
        if (known == 0) {
                const char *why = "no CPU topology in sysfs (cpuN/topology/physical_package_id)";
                fact_absent(f, CPU_DIR, why, "cpu.sockets");
                fact_absent(f, CPU_DIR, why, "cpu.cores");
                fact_absent(f, CPU_DIR, why, "cpu.threads_per_core");
        } else {
                int sockets = 0, cores = 0;
                for (int i = 0; i < known; i++) {
                        bool seen_pkg = false, seen_core = false;
                        for (int j = 0; j < i; j++) {
                                seen_pkg |= pkg[j] == pkg[i];
                                seen_core |= pkg[j] == pkg[i] && core[j] == core[i];
                        }
                        sockets += !seen_pkg;
                        cores += !seen_core;
                }
                fact_int(f, CPU_DIR "/cpu*/topology", sockets, "cpu.sockets");
                fact_int(f, CPU_DIR "/cpu*/topology", cores, "cpu.cores");
                fact_int(f, CPU_DIR "/cpu*/topology", cores ? known / cores : 0, "cpu.threads_per_core");
        }
        free(pkg);
        free(core);
}

static void probe_model(struct facts *f)
{
        const char *data;
        if (root_read(facts_root(f), "/proc/cpuinfo", &data, NULL) < 0) {
                fact_absent(f, "/proc/cpuinfo", "no /proc/cpuinfo", "cpu.model");
                return;
        }
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
        fact_absent(f, "/proc/cpuinfo", "no model line in /proc/cpuinfo", "cpu.model");
}

/* One cpufreq policy directory: cpufreq/policyN on current kernels, cpuN/cpufreq on old ones. */
static void probe_policy(struct facts *f, const char *dir, unsigned id)
{
        static const struct {
                const char *file, *fact;
        } attrs[] = {
                {"scaling_driver", "driver"},
                {"scaling_governor", "governor"},
                {"scaling_available_governors", "available_governors"},
                {"affected_cpus", "cpus"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(attrs); i++) {
                _cleanup_free_ char *p = xasprintf("%s/%s", dir, attrs[i].file);
                fact_file_str(f, p, NULL, "cpu.policy.%u.%s", id, attrs[i].fact);
        }
        _cleanup_free_ char *p = xasprintf("%s/energy_performance_preference", dir);
        fact_file_str(f, p, "no EPP (not HWP/amd-pstate-epp)", "cpu.policy.%u.epp", id);
}

static void probe_cpufreq(struct facts *f, const unsigned *cpus, int n)
{
        struct root *r = facts_root(f);
        struct strv names = {0};
        unsigned policies = 0;
        const char *driver_src = NULL;
        _cleanup_free_ char *driver = NULL;

        if (root_list(r, CPU_DIR "/cpufreq", &names) == 0)
                for (size_t i = 0; i < names.n; i++) {
                        unsigned id;
                        char tail;
                        if (sscanf(names.v[i], "policy%u%c", &id, &tail) != 1)
                                continue;
                        _cleanup_free_ char *dir = xasprintf(CPU_DIR "/cpufreq/%s", names.v[i]);
                        _cleanup_free_ char *drv = xasprintf("%s/scaling_driver", dir);
                        struct stat st;
                        if (root_stat(r, drv, &st, true) < 0)
                                continue;
                        probe_policy(f, dir, id);
                        if (!driver) {
                                root_read_line(r, drv, &driver);
                                driver_src = CPU_DIR "/cpufreq/policy*/scaling_driver";
                        }
                        policies++;
                }
        strv_free(&names);
        if (policies == 0)
                /* Old layout: a real cpufreq directory per CPU (CPUs sharing a policy repeat it). */
                for (int i = 0; i < n; i++) {
                        _cleanup_free_ char *dir = xasprintf(CPU_DIR "/cpu%u/cpufreq", cpus[i]);
                        _cleanup_free_ char *drv = xasprintf("%s/scaling_driver", dir);
                        struct stat st;
                        if (root_stat(r, drv, &st, true) < 0)
                                continue;
                        probe_policy(f, dir, cpus[i]);
                        if (!driver) {
                                root_read_line(r, drv, &driver);
                                driver_src = CPU_DIR "/cpu*/cpufreq/scaling_driver";
                        }
                        policies++;
                }
        fact_int(f, CPU_DIR "/cpufreq", policies, "cpu.cpufreq.policies");
        if (policies == 0)
                fact_absent(f, CPU_DIR "/cpu0/cpufreq", "no cpufreq driver (VM, container or disabled in firmware)",
                            "cpu.cpufreq.driver");
        else if (driver)
                fact_str(f, driver_src, driver, "cpu.cpufreq.driver");
        else
                fact_unreadable(f, driver_src, 0, "scaling_driver unreadable", "cpu.cpufreq.driver");

        /* Active intel_pstate / amd-pstate-epp offer only performance and powersave. */
        fact_file_str(f, CPU_DIR "/intel_pstate/status", "intel_pstate not in use", "cpu.intel_pstate.status");
        fact_file_str(f, CPU_DIR "/amd_pstate/status", "amd_pstate not in use", "cpu.amd_pstate.status");
}

/*
 * Three parts, each run once: online CPUs and topology, the model, cpufreq. A profile's match
 * block asks for cpu.sockets; that must not read five cpufreq files per CPU (1920 on a
 * 384-CPU host).
 */
struct cpu_state {
        bool topo, model, freq;
        unsigned *cpus;
        int n;
};

static void cpu_state_free(void *p)
{
        struct cpu_state *s = p;
        if (s)
                free(s->cpus);
        free(s);
}

static struct cpu_state *cpu_state(struct facts *f)
{
        struct cpu_state *s = facts_handle(f, "probe-cpu");
        if (!s) {
                s = xcalloc(1, sizeof(*s));
                facts_set_handle(f, "probe-cpu", s, cpu_state_free);
        }
        return s;
}

static void stage_topology(struct facts *f, struct cpu_state *s)
{
        s->topo = true;
        int n = online_cpus(f, &s->cpus);
        if (n < 0) {
                fact_absent(f, CPU_DIR, "no CPU information in sysfs", "cpu.online");
                n = 0;
        } else {
                _cleanup_free_ char *list = format_cpulist(s->cpus, (size_t)n);
                fact_str(f, CPU_DIR "/online", list, "cpu.online");
                fact_int(f, CPU_DIR "/online", n, "cpu.count");
        }
        s->n = n;
        probe_topology(f, s->cpus, n);
}

static int cpu_run(struct facts *f)
{
        struct cpu_state *s = cpu_state(f);
        if (!s->topo)
                stage_topology(f, s);
        if (!s->model) {
                s->model = true;
                probe_model(f);
        }
        if (!s->freq) {
                s->freq = true;
                probe_cpufreq(f, s->cpus, s->n);
        }
        return 0;
}

static int cpu_lookup(struct facts *f, const char *name)
{
        static const char *const topo[] = {"cpu.online", "cpu.count", "cpu.sockets", "cpu.cores",
                                           "cpu.threads_per_core"};
        struct cpu_state *s = cpu_state(f);
        for (size_t i = 0; i < ARRAY_SIZE(topo); i++)
                if (streq(name, topo[i]) && !s->topo)
                        stage_topology(f, s);
        if (streq(name, "cpu.model") && !s->model) {
                s->model = true;
                probe_model(f);
        }
        /* anything else: facts_get() falls through to cpu_run() */
        return 0;
}

const struct probe probe_cpu = {
        .name = "cpu",
        .prefixes = {"cpu."},
        .run = cpu_run,
        .lookup = cpu_lookup,
};
