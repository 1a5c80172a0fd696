/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nvml.* facts of the live machine from NVML (nvgpu.h), opened at run time:
 * dlopen("libnvidia-ml.so.1"), the soname the NVIDIA driver package installs, and dlsym of the
 * versioned entry points declared in nvml-api.h. No build dependency on the driver or CUDA.
 *
 * Outcomes: no library (no driver installed, a container without it) -> every fact absent with
 * dlerror()'s words; a library without one of the core symbols (a driver older than the _v2/_v3
 * entry points) -> absent, naming the symbol; nvmlInit_v2 or another call failing -> unreadable
 * with nvmlErrorString(); NVML_ERROR_NOT_SUPPORTED (no ECC on a GeForce, no row remapping before
 * Ampere, no NVLink on PCIe cards) -> that fact absent. A missing optional symbol makes only its
 * facts absent. Read-only: llmtune only asks; it never changes a GPU setting or resets a GPU.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "facts/adapters/nvgpu.h"
#include "base/parse.h"
#include "facts/adapters/nvml-api.h"

struct nvml {
        void *dl;
        const char *soname;
        nvmlErrorString_fn err_str;
};

static void *sym(const struct nvml *L, const char *name) { return dlsym(L->dl, name); }

static const char *err_text(const struct nvml *L, nvmlReturn_t rc)
{
        const char *s = L->err_str ? L->err_str(rc) : NULL;
        return s && *s ? s : "unknown NVML error";
}

/* A call's failure as the fact's status. */
static void fail(const struct nvml *L, const struct nvgpu_out *o, const char *field, const char *fn, nvmlReturn_t rc)
{
        _cleanup_free_ char *why = xasprintf("%s: %s (%d)", fn, err_text(L, rc), rc);
        if (rc == NVML_ERROR_NOT_SUPPORTED)
                nvgpu_absent(o, field, why);
        else
                nvgpu_unreadable(o, field, why);
}

static void no_symbol(const struct nvml *L, const struct nvgpu_out *o, const char *field, const char *fn)
{
        _cleanup_free_ char *why = xasprintf("%s has no %s (driver older than the entry point)", L->soname, fn);
        nvgpu_absent(o, field, why);
}

/*
 * How a call of entry point FN went, told in each of the N FIELDS it fills: absent when the driver
 * lacks FN (PRESENT false), else fail()'s reason when RC is not success. True when the call
 * succeeded and the caller records the values.
 */
static bool call_ok(const struct nvml *L, const struct nvgpu_out *o, const char *fn, bool present, nvmlReturn_t rc,
                    const char *const *fields, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!present)
                        no_symbol(L, o, fields[i], fn);
                else if (rc != NVML_SUCCESS)
                        fail(L, o, fields[i], fn, rc);
        return present && rc == NVML_SUCCESS;
}

static void get_string(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d, const char *field, const char *fn)
{
        nvmlDeviceGetString_fn call = (nvmlDeviceGetString_fn)sym(L, fn);
        char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
        nvmlReturn_t rc = call ? call(d, buf, sizeof(buf)) : NVML_SUCCESS;
        buf[sizeof(buf) - 1] = '\0';
        if (call_ok(L, o, fn, call != NULL, rc, &field, 1))
                nvgpu_str(o, field, buf);
}

static void get_uint(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d, const char *field, const char *fn)
{
        nvmlDeviceGetUint_fn call = (nvmlDeviceGetUint_fn)sym(L, fn);
        unsigned v = 0;
        nvmlReturn_t rc = call ? call(d, &v) : NVML_SUCCESS;
        if (call_ok(L, o, fn, call != NULL, rc, &field, 1))
                nvgpu_uint(o, field, v);
}

static void get_enable(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d, const char *field, const char *fn)
{
        nvmlDeviceGetEnable_fn call = (nvmlDeviceGetEnable_fn)sym(L, fn);
        nvmlEnableState_t v = 0;
        nvmlReturn_t rc = call ? call(d, &v) : NVML_SUCCESS;
        if (call_ok(L, o, fn, call != NULL, rc, &field, 1))
                nvgpu_bool(o, field, v != 0);
}

static void get_ecc(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        const char *fn = "nvmlDeviceGetEccMode";
        nvmlDeviceGetEccMode_fn mode = (nvmlDeviceGetEccMode_fn)sym(L, fn);
        nvmlEnableState_t cur = 0, pend = 0;
        nvmlReturn_t rc = mode ? mode(d, &cur, &pend) : NVML_SUCCESS;
        static const char *const mode_fields[] = {"ecc.current", "ecc.pending"};
        if (call_ok(L, o, fn, mode != NULL, rc, mode_fields, ARRAY_SIZE(mode_fields))) {
                nvgpu_bool(o, "ecc.current", cur != 0);
                nvgpu_bool(o, "ecc.pending", pend != 0);
        }
        fn = "nvmlDeviceGetTotalEccErrors";
        nvmlDeviceGetTotalEccErrors_fn total = (nvmlDeviceGetTotalEccErrors_fn)sym(L, fn);
        static const struct {
                const char *field;
                int type, counter;
        } kinds[] = {
                {"ecc.volatile.corrected", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC},
                {"ecc.volatile.uncorrected", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC},
                {"ecc.aggregate.corrected", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC},
                {"ecc.aggregate.uncorrected", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC},
        };
        for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
                unsigned long long n = 0;
                rc = total ? total(d, kinds[i].type, kinds[i].counter, &n) : NVML_SUCCESS;
                if (call_ok(L, o, fn, total != NULL, rc, &kinds[i].field, 1))
                        nvgpu_uint(o, kinds[i].field, n);
        }
}

static void get_remap(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        static const char *const fields[] = {"remap.correctable", "remap.uncorrectable", "remap.pending",
                                             "remap.failure"};
        const char *fn = "nvmlDeviceGetRemappedRows";
        nvmlDeviceGetRemappedRows_fn call = (nvmlDeviceGetRemappedRows_fn)sym(L, fn);
        unsigned corr = 0, unc = 0, pending = 0, failure = 0;
        nvmlReturn_t rc = call ? call(d, &corr, &unc, &pending, &failure) : NVML_SUCCESS;
        if (!call_ok(L, o, fn, call != NULL, rc, fields, ARRAY_SIZE(fields)))
                return;
        nvgpu_uint(o, "remap.correctable", corr);
        nvgpu_uint(o, "remap.uncorrectable", unc);
        nvgpu_bool(o, "remap.pending", pending != 0);
        nvgpu_bool(o, "remap.failure", failure != 0);
}

static void get_retired(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        const char *fn = "nvmlDeviceGetRetiredPages";
        nvmlDeviceGetRetiredPages_fn call = (nvmlDeviceGetRetiredPages_fn)sym(L, fn);
        static const struct {
                const char *field;
                int cause;
        } causes[] = {{"retired.sbe", NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS},
                      {"retired.dbe", NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR}};
        for (size_t i = 0; i < ARRAY_SIZE(causes); i++) {
                unsigned count = 0; /* count 0 and no buffer: NVML returns the number of pages */
                nvmlReturn_t rc = call ? call(d, causes[i].cause, &count, NULL) : NVML_SUCCESS;
                if (rc == NVML_ERROR_INSUFFICIENT_SIZE) /* the count, with no buffer to fill */
                        rc = NVML_SUCCESS;
                if (call_ok(L, o, fn, call != NULL, rc, &causes[i].field, 1))
                        nvgpu_uint(o, causes[i].field, count);
        }
        get_enable(L, o, d, "retired.pending", "nvmlDeviceGetRetiredPagesPendingStatus");
}

static void get_mig(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        const char *fn = "nvmlDeviceGetMigMode";
        nvmlDeviceGetMigMode_fn call = (nvmlDeviceGetMigMode_fn)sym(L, fn);
        unsigned cur = 0, pend = 0;
        nvmlReturn_t rc = call ? call(d, &cur, &pend) : NVML_SUCCESS;
        static const char *const fields[] = {"mig.current", "mig.pending"};
        if (call_ok(L, o, fn, call != NULL, rc, fields, ARRAY_SIZE(fields))) {
                nvgpu_bool(o, "mig.current", cur != 0);
                nvgpu_bool(o, "mig.pending", pend != 0);
        }
        nvgpu_absent(o, "mig.instances", "MIG instances are counted from nvidia-smi captures only");
}

static void get_compute_mode(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        const char *fn = "nvmlDeviceGetComputeMode";
        nvmlDeviceGetComputeMode_fn call = (nvmlDeviceGetComputeMode_fn)sym(L, fn);
        int mode = 0;
        if (!call)
                return no_symbol(L, o, "compute_mode", fn);
        nvmlReturn_t rc = call(d, &mode);
        if (rc != NVML_SUCCESS)
                return fail(L, o, "compute_mode", fn, rc);
        /* nvidia-smi's words, so captures and NVML give the same value */
        static const char *const words[] = {"Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process"};
        if (mode >= 0 && (size_t)mode < ARRAY_SIZE(words))
                nvgpu_str(o, "compute_mode", words[mode]);
        else {
                _cleanup_free_ char *why = xasprintf("%s: unknown mode %d", fn, mode);
                nvgpu_unreadable(o, "compute_mode", why);
        }
}

static void get_reasons(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        /* renamed in the 535 driver; the old name stays exported for old callers */
        const char *fn = "nvmlDeviceGetCurrentClocksEventReasons";
        nvmlDeviceGetU64_fn call = (nvmlDeviceGetU64_fn)sym(L, fn);
        if (!call) {
                fn = "nvmlDeviceGetCurrentClocksThrottleReasons";
                call = (nvmlDeviceGetU64_fn)sym(L, fn);
        }
        unsigned long long bits = 0;
        nvmlReturn_t rc = call ? call(d, &bits) : NVML_SUCCESS;
        struct sbuf s = {0};
        for (unsigned i = 0; i < nvgpu_nreasons; i++) {
                _cleanup_free_ char *field = xasprintf("clock_event.%s", nvgpu_reasons[i].word);
                if (call_ok(L, o, fn, call != NULL, rc, (const char *const *)&field, 1)) {
                        bool on = (bits & nvgpu_reasons[i].bit) != 0;
                        nvgpu_bool(o, field, on);
                        if (on)
                                sbuf_addf(&s, "%s%s", s.len ? "," : "", nvgpu_reasons[i].word);
                }
        }
        static const char *const active[] = {"clock_events.active"};
        if (call_ok(L, o, fn, call != NULL, rc, active, 1))
                nvgpu_str(o, "clock_events.active", s.len ? s.s : "none");
        free(sbuf_steal(&s));
}

static void get_power(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        get_uint(L, o, d, "power.limit_mw", "nvmlDeviceGetEnforcedPowerLimit");
        get_uint(L, o, d, "power.default_limit_mw", "nvmlDeviceGetPowerManagementDefaultLimit");
        const char *fn = "nvmlDeviceGetPowerManagementLimitConstraints";
        nvmlDeviceGetPowerManagementLimitConstraints_fn call = (nvmlDeviceGetPowerManagementLimitConstraints_fn)sym(L, fn);
        unsigned lo = 0, hi = 0;
        nvmlReturn_t rc = call ? call(d, &lo, &hi) : NVML_SUCCESS;
        static const char *const fields[] = {"power.min_limit_mw", "power.max_limit_mw"};
        if (call_ok(L, o, fn, call != NULL, rc, fields, ARRAY_SIZE(fields))) {
                nvgpu_uint(o, "power.min_limit_mw", lo);
                nvgpu_uint(o, "power.max_limit_mw", hi);
        }
}

/* Application clocks (nvidia-smi -ac), the board's default ones and the maximum, for graphics and
 * memory: nvml.N.clocks.{app,default_app,max}_{graphics,memory}_mhz. */
static void get_clocks(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        static const struct {
                const char *fn, *what;
        } kinds[] = {{"nvmlDeviceGetApplicationsClock", "app"},
                     {"nvmlDeviceGetDefaultApplicationsClock", "default_app"},
                     {"nvmlDeviceGetMaxClockInfo", "max"}};
        static const struct {
                int type;
                const char *what;
        } clocks[] = {{NVML_CLOCK_GRAPHICS, "graphics"}, {NVML_CLOCK_MEM, "memory"}};
        for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
                nvmlDeviceGetClockOfType_fn call = (nvmlDeviceGetClockOfType_fn)sym(L, kinds[k].fn);
                for (size_t c = 0; c < ARRAY_SIZE(clocks); c++) {
                        _cleanup_free_ char *field = xasprintf("clocks.%s_%s_mhz", kinds[k].what, clocks[c].what);
                        unsigned mhz = 0;
                        nvmlReturn_t rc = call ? call(d, clocks[c].type, &mhz) : NVML_SUCCESS;
                        if (call_ok(L, o, kinds[k].fn, call != NULL, rc, (const char *const *)&field, 1))
                                nvgpu_uint(o, field, mhz);
                }
        }
}

/* NVLink: links 0..NVML_NVLINK_MAX_LINKS-1; a link NVML says is not supported does not exist on
 * this GPU (PCIe cards have none, A100 SXM 12, H100 SXM 18). */
static void get_nvlink(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        const char *fn = "nvmlDeviceGetNvLinkState";
        nvmlDeviceGetNvLinkState_fn state = (nvmlDeviceGetNvLinkState_fn)sym(L, fn);
        nvmlDeviceGetNvLinkErrorCounter_fn counter =
                (nvmlDeviceGetNvLinkErrorCounter_fn)sym(L, "nvmlDeviceGetNvLinkErrorCounter");
        static const char *const totals[] = {"nvlink.count", "nvlink.up", "nvlink.down", "nvlink.errors"};
        if (!call_ok(L, o, fn, state != NULL, NVML_SUCCESS, totals, ARRAY_SIZE(totals)))
                return;
        unsigned links = 0, up = 0;
        uint64_t errors = 0;
        bool errors_known = true;
        char *bad = NULL;
        for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
                nvmlEnableState_t on = 0;
                nvmlReturn_t rc = state(d, l, &on);
                if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT)
                        continue;
                links++;
                char field[64];
                snprintf(field, sizeof(field), "nvlink.%u.state", l);
                if (rc != NVML_SUCCESS) {
                        fail(L, o, field, fn, rc);
                        if (!bad)
                                bad = xasprintf("link %u: %s: %s", l, fn, err_text(L, rc));
                        continue;
                }
                nvgpu_str(o, field, on ? "up" : "down");
                up += on != 0;
                static const struct {
                        const char *name;
                        int c1, c2; /* c2 < 0: none */
                } ctrs[] = {{"replay", NVML_NVLINK_ERROR_DL_REPLAY, -1},
                            {"recovery", NVML_NVLINK_ERROR_DL_RECOVERY, -1},
                            {"crc", NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_CRC_DATA}};
                for (size_t k = 0; k < ARRAY_SIZE(ctrs); k++) {
                        snprintf(field, sizeof(field), "nvlink.%u.%s", l, ctrs[k].name);
                        if (!counter) {
                                no_symbol(L, o, field, "nvmlDeviceGetNvLinkErrorCounter");
                                errors_known = false;
                                continue;
                        }
                        unsigned long long a = 0, b = 0;
                        rc = counter(d, l, ctrs[k].c1, &a);
                        if (rc == NVML_SUCCESS && ctrs[k].c2 >= 0)
                                rc = counter(d, l, ctrs[k].c2, &b);
                        if (rc != NVML_SUCCESS) {
                                fail(L, o, field, "nvmlDeviceGetNvLinkErrorCounter", rc);
                                errors_known = false;
                                continue;
                        }
                        nvgpu_uint(o, field, a + b);
                        errors += a + b;
                }
        }
        if (bad) {
                nvgpu_unreadable(o, "nvlink.count", bad);
                nvgpu_unreadable(o, "nvlink.up", bad);
                nvgpu_unreadable(o, "nvlink.down", bad);
                nvgpu_unreadable(o, "nvlink.errors", bad);
                free(bad);
                return;
        }
        nvgpu_uint(o, "nvlink.count", links);
        nvgpu_uint(o, "nvlink.up", up);
        nvgpu_uint(o, "nvlink.down", links - up); /* of the links this GPU has: the count is the hardware's */
        if (errors_known)
                nvgpu_uint(o, "nvlink.errors", errors);
        else
                nvgpu_unreadable(o, "nvlink.errors", "an NVLink error counter could not be read");
}

/* The processes of one kind (compute or graphics) on D: how many, and for compute "PID NAME USED"
 * (the name from the root's /proc/PID/comm). Returns -1 (an NVML error) or -2 (no entry point) after
 * saying why in the count's fact. */
static long get_processes(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d, const char *kind,
                          struct sbuf *list)
{
        _cleanup_free_ char *v3 = xasprintf("nvmlDeviceGet%sRunningProcesses_v3", kind),
                            *v2 = xasprintf("nvmlDeviceGet%sRunningProcesses_v2", kind);
        nvmlDeviceGetProcesses_fn call = (nvmlDeviceGetProcesses_fn)sym(L, v3);
        const char *fn = call ? v3 : v2;
        call = call ? call : (nvmlDeviceGetProcesses_fn)sym(L, v2);
        const char *field = streq(kind, "Compute") ? "processes.compute" : "processes.graphics";
        if (!call)
                return no_symbol(L, o, field, fn), -2;
        unsigned n = 0;
        nvmlReturn_t rc = call(d, &n, NULL);
        nvmlProcessInfo_t *v = NULL;
        for (int tries = 0; rc == NVML_ERROR_INSUFFICIENT_SIZE && tries < 3; tries++) {
                n += 8; /* processes may start between the two calls */
                v = xrealloc(v, n * sizeof(*v));
                rc = call(d, &n, v);
        }
        if (rc != NVML_SUCCESS) {
                free(v);
                return fail(L, o, field, fn, rc), -1;
        }
        for (unsigned i = 0; list && i < n; i++) {
                _cleanup_free_ char *comm = NULL;
                if (root_readf_line(facts_root(o->f), &comm, "/proc/%u/comm", v[i].pid) < 0)
                        comm = xstrdup("?");
                sbuf_addf(list, "%s%u %s %llu MiB", list->len ? ", " : "", v[i].pid, comm,
                          v[i].usedGpuMemory >> 20);
        }
        free(v);
        return n;
}

/* Memory in use and the processes holding it: what a job would find on the GPU (nvsmi-xml.c
 * emit_usage gives the same facts from a capture). */
static void get_usage(const struct nvml *L, const struct nvgpu_out *o, nvmlDevice_t d)
{
        const char *fn = "nvmlDeviceGetMemoryInfo";
        nvmlDeviceGetMemoryInfo_fn mem = (nvmlDeviceGetMemoryInfo_fn)sym(L, fn);
        nvmlMemory_t m = {0};
        nvmlReturn_t rc = mem ? mem(d, &m) : NVML_SUCCESS;
        if (!mem) {
                no_symbol(L, o, "memory.used", fn);
                no_symbol(L, o, "memory.total", fn);
        } else if (rc != NVML_SUCCESS) {
                fail(L, o, "memory.used", fn, rc);
                fail(L, o, "memory.total", fn, rc);
        } else {
                nvgpu_uint(o, "memory.used", m.used);
                nvgpu_uint(o, "memory.total", m.total);
        }
        struct sbuf list = {0};
        long compute = get_processes(L, o, d, "Compute", &list), graphics = get_processes(L, o, d, "Graphics", NULL);
        if (compute >= 0) {
                nvgpu_uint(o, "processes.compute", (uint64_t)compute);
                nvgpu_str(o, "processes.list", compute ? list.s : "none");
        } else if (compute == -2)
                nvgpu_absent(o, "processes.list", "no entry point to list the compute processes (driver too old)");
        else
                nvgpu_unreadable(o, "processes.list", "the compute processes could not be listed");
        if (graphics >= 0)
                nvgpu_uint(o, "processes.graphics", (uint64_t)graphics);
        free(sbuf_steal(&list));
}

static void read_gpu(const struct nvml *L, struct facts *f, unsigned idx, nvmlDevice_t d, const char *addr)
{
        struct nvgpu_out o = {f, idx, L->soname};
        nvgpu_str(&o, "address", addr);
        get_string(L, &o, d, "name", "nvmlDeviceGetName");
        get_string(L, &o, d, "uuid", "nvmlDeviceGetUUID");
        get_enable(L, &o, d, "persistence_mode", "nvmlDeviceGetPersistenceMode");
        get_ecc(L, &o, d);
        get_remap(L, &o, d);
        get_retired(L, &o, d);
        get_mig(L, &o, d);
        get_compute_mode(L, &o, d);
        get_reasons(L, &o, d);
        get_power(L, &o, d);
        get_clocks(L, &o, d);
        get_uint(L, &o, d, "pcie.gen", "nvmlDeviceGetCurrPcieLinkGeneration");
        get_uint(L, &o, d, "pcie.max_gen", "nvmlDeviceGetMaxPcieLinkGeneration");
        get_uint(L, &o, d, "pcie.width", "nvmlDeviceGetCurrPcieLinkWidth");
        get_uint(L, &o, d, "pcie.max_width", "nvmlDeviceGetMaxPcieLinkWidth");
        get_uint(L, &o, d, "pcie.replay", "nvmlDeviceGetPcieReplayCounter");
        get_nvlink(L, &o, d);
        get_usage(L, &o, d);
}

struct dev {
        nvmlDevice_t h;
        char addr[32];
        struct pci_addr pa; /* ADDR parsed once, when listed: the sort compares these */
};

static int cmp_dev(const void *x, const void *y)
{
        const struct dev *a = x, *b = y;
        return pci_addr_cmp(&a->pa, &b->pa);
}

static void whole(struct facts *f, const char *src, bool absent, const char *why)
{
        static const char *const names[] = {"nvml.count", "nvml.driver_version", "nvml.attached", "nvml.lost"};
        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (absent)
                        fact_absent(f, src, why, "%s", names[i]);
                else
                        fact_unreadable(f, src, 0, why, "%s", names[i]);
}

/* NVML loaded from L->soname, initialised, and its device count into *N. Returns 0, or -1 with
 * the summary facts said absent or unreadable (nothing left loaded). */
static int nvml_start(struct facts *f, struct nvml *L, unsigned *n)
{
        const char *soname = L->soname;
        dlerror();
        L->dl = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (!L->dl) {
                const char *e = dlerror();
                _cleanup_free_ char *why = xasprintf("NVML not available (no NVIDIA driver here?): %s",
                                                     e ? e : "dlopen failed");
                whole(f, soname, true, why);
                return -1;
        }
        facts_set_handle(f, "nvml", NULL, NULL);
        static const char *const core[] = {"nvmlInit_v2", "nvmlShutdown", "nvmlErrorString", "nvmlDeviceGetCount_v2",
                                           "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetPciInfo_v3"};
        for (size_t i = 0; i < ARRAY_SIZE(core); i++)
                if (!sym(L, core[i])) {
                        _cleanup_free_ char *why = xasprintf("%s has no %s (driver too old for llmtune)", soname, core[i]);
                        whole(f, soname, true, why);
                        dlclose(L->dl);
                        return -1;
                }
        L->err_str = (nvmlErrorString_fn)sym(L, "nvmlErrorString");
        nvmlReturn_t rc = ((nvmlInit_v2_fn)sym(L, "nvmlInit_v2"))();
        if (rc != NVML_SUCCESS) {
                _cleanup_free_ char *why = xasprintf("nvmlInit_v2: %s (%d)", err_text(L, rc), rc);
                whole(f, soname, false, why);
                dlclose(L->dl);
                return -1;
        }
        rc = ((nvmlDeviceGetCount_v2_fn)sym(L, "nvmlDeviceGetCount_v2"))(n);
        if (rc != NVML_SUCCESS || *n > 4096) {
                _cleanup_free_ char *why = rc != NVML_SUCCESS
                        ? xasprintf("nvmlDeviceGetCount_v2: %s (%d)", err_text(L, rc), rc)
                        : xasprintf("nvmlDeviceGetCount_v2: implausible count %u", *n);
                whole(f, soname, false, why);
                ((nvmlShutdown_fn)sym(L, "nvmlShutdown"))();
                dlclose(L->dl);
                return -1;
        }
        return 0;
}

/* nvml.driver_version. */
static void driver_version_fact(struct nvml *L, struct facts *f)
{
        nvmlSystemGetDriverVersion_fn ver = (nvmlSystemGetDriverVersion_fn)sym(L, "nvmlSystemGetDriverVersion");
        char vbuf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
        nvmlReturn_t rc = ver ? ver(vbuf, sizeof(vbuf)) : NVML_ERROR_FUNCTION_NOT_FOUND;
        vbuf[sizeof(vbuf) - 1] = '\0';
        if (rc == NVML_SUCCESS)
                fact_str(f, L->soname, vbuf, "nvml.driver_version");
        else {
                _cleanup_free_ char *why = xasprintf("nvmlSystemGetDriverVersion: %s", ver ? err_text(L, rc) : "no such symbol");
                fact_unreadable(f, L->soname, 0, why, "nvml.driver_version");
        }
}

/* The handles and PCI addresses of NVML's N devices into DEVS, sorted by address. A GPU whose
 * handle or PCI info cannot be read (NVML_ERROR_GPU_IS_LOST) has no address: it is described in
 * LOST (its PCI device shows up in nvml.unlisted). Returns how many were listed. */
static unsigned list_devices(struct nvml *L, unsigned n, struct dev *devs, struct sbuf *lost)
{
        unsigned listed = 0;
        nvmlDeviceGetHandleByIndex_v2_fn by_index = (nvmlDeviceGetHandleByIndex_v2_fn)sym(L, "nvmlDeviceGetHandleByIndex_v2");
        nvmlDeviceGetPciInfo_v3_fn pci_info = (nvmlDeviceGetPciInfo_v3_fn)sym(L, "nvmlDeviceGetPciInfo_v3");
        for (unsigned i = 0; i < n; i++) {
                nvmlDevice_t h = NULL;
                nvmlPciInfo_t pi = {0};
                const char *fn = "nvmlDeviceGetHandleByIndex_v2";
                nvmlReturn_t rc = by_index(i, &h);
                if (rc == NVML_SUCCESS) {
                        fn = "nvmlDeviceGetPciInfo_v3";
                        rc = pci_info(h, &pi);
                }
                pi.busId[sizeof(pi.busId) - 1] = '\0';
                if (rc == NVML_SUCCESS &&
                    (!nvgpu_bus_id(pi.busId, devs[listed].addr) || !pci_addr_parse(devs[listed].addr, &devs[listed].pa))) {
                        sbuf_addf(lost, "%sindex %u: bus id \"%.32s\" not understood", lost->len ? "; " : "", i, pi.busId);
                        continue;
                }
                if (rc != NVML_SUCCESS) {
                        sbuf_addf(lost, "%sindex %u: %s: %s", lost->len ? "; " : "", i, fn, err_text(L, rc));
                        continue;
                }
                devs[listed++].h = h;
        }
        qsort(devs, listed, sizeof(*devs), cmp_dev);
        return listed;
}

int nvml_live_facts(struct facts *f, const char *soname)
{
        struct nvml L = {.soname = soname};
        unsigned n = 0;
        if (nvml_start(f, &L, &n) < 0)
                return -1;
        driver_version_fact(&L, f);
        fact_uint(f, soname, n, "nvml.attached");

        struct dev *devs = xcalloc(n + 1, sizeof(*devs));
        struct sbuf lost = {0};
        unsigned listed = list_devices(&L, n, devs, &lost);
        for (unsigned i = 0; i < listed; i++)
                read_gpu(&L, f, i, devs[i].h, devs[i].addr);
        fact_uint(f, soname, listed, "nvml.count");
        fact_str(f, soname, lost.len ? lost.s : "none", "nvml.lost");
        free(sbuf_steal(&lost));
        free(devs);
        ((nvmlShutdown_fn)sym(&L, "nvmlShutdown"))();
        dlclose(L.dl);
        return (int)listed;
}
