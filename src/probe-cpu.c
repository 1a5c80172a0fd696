/* SPDX-License-Identifier: MIT */
/*
 * cpu.*: online CPUs, sockets/cores/threads from sysfs topology, the CPU model, and cpufreq
 * policies (Documentation/admin-guide/pm/cpufreq.rst) with the intel_pstate/amd_pstate mode.
 */
#include <errno.h>
#include <stdio.h>

#include "cpu-topo.h"
#include "facts.h"
#include "parse.h"
#include "probes.h"

#define CPU_DIR "/sys/devices/system/cpu"

static void probe_topology(struct facts *f, const struct cpu_topo *t)
{
        if (t->nsockets == 0) {
                const char *why = "no CPU topology in sysfs (cpuN/topology/physical_package_id)";
                fact_absent(f, CPU_DIR "/cpu0/topology/physical_package_id", why, "cpu.sockets");
                fact_absent(f, CPU_DIR "/cpu0/topology/physical_package_id", why, "cpu.cores");
                fact_absent(f, CPU_DIR "/cpu0/topology/physical_package_id", why, "cpu.threads_per_core");
                return;
        }
        const char *src = CPU_DIR "/cpu*/topology";
        fact_int(f, src, t->nsockets, "cpu.sockets");
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
        memcpy(s->cpus, t->cpus, t->n * sizeof(*s->cpus));
        s->n = (int)t->n;
        probe_topology(f, t);
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
