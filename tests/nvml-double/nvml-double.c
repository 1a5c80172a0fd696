/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A test double of NVIDIA's libnvidia-ml.so.1: the NVML entry points llmtune calls
 * (src/facts/adapters/nvml-api.h), answering from a description file named by LLMTUNE_NVML_DOUBLE, so
 * that the live NVML path (src/facts/adapters/nvml-live.c) is tested end to end on a machine without a
 * GPU. The test suite builds it twice: full/ with every entry point, old/ as a driver before row
 * remapping and the 535 renaming (-DNVML_DOUBLE_OLD: no nvmlDeviceGetRemappedRows, and the clock event
 * reasons only under their old name nvmlDeviceGetCurrentClocksThrottleReasons).
 *
 * The description, one "key = value" per line ('#' comments), read again at every nvmlInit_v2:
 *   init = CODE                 nvmlInit_v2's return (default 0)
 *   driver = 550.54.15
 *   count = N                   GPUs NVML lists
 *   gpu.I.bus = 00000000:3B:00.0
 *   gpu.I.name / gpu.I.uuid = text
 *   gpu.I.persistence = 0|1
 *   gpu.I.ecc = CUR,PENDING
 *   gpu.I.ecc_volatile = CORRECTED,UNCORRECTED     gpu.I.ecc_aggregate = CORRECTED,UNCORRECTED
 *   gpu.I.remap = CORR,UNC,PENDING,FAILURE         gpu.I.retired = SBE,DBE,PENDING
 *   gpu.I.mig = CUR,PENDING                        gpu.I.compute = MODE
 *   gpu.I.reasons = BITS                           (clock event reasons, e.g. 0x48)
 *   gpu.I.power = LIMIT,DEFAULT,MIN,MAX            (milliwatts)
 *   gpu.I.clocks = APPG,APPM,DEFG,DEFM,MAXG,MAXM   (MHz: application, default application and maximum
 *                                                  clocks, graphics and memory)
 *   gpu.I.pcie = GEN,MAXGEN,WIDTH,MAXWIDTH,REPLAY
 *   gpu.I.nvlinks = N                              links 0..N-1, up unless listed in nvlink_down
 *   gpu.I.nvlink_down = L,L,...
 *   gpu.I.nvlink_errors = L:REPLAY:RECOVERY:CRCFLIT:CRCDATA  (one link per line, repeatable)
 *   gpu.I.memory = TOTAL,USED                      (bytes)
 *   gpu.I.procs = PID:USED,...                     compute processes (USED in bytes; "none": no process)
 *   gpu.I.gprocs = PID:USED,...                    graphics processes
 *   gpu.I.fail = FUNCTION:CODE                     that entry point returns CODE for GPU I (repeatable)
 * A GPU without a value answers NVML_ERROR_NOT_SUPPORTED for it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entry points are the library's interface; their prototypes are NVIDIA's nvml.h, which the
 * test suite does not have (llmtune's own declarations are in
 * src/facts/adapters/nvml-api.h). */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#define MAXGPU 64
#define MAXFAIL 8

struct gpu {
        char bus[32], name[96], uuid[96];
        int has_persistence, persistence;
        int has_ecc, ecc_cur, ecc_pend;
        int has_ecc_counts;
        unsigned long long ecc[2][2]; /* [volatile/aggregate][corrected/uncorrected] */
        int has_remap;
        unsigned remap[4];
        int has_retired;
        unsigned retired[3];
        int has_mig;
        unsigned mig[2];
        int has_compute, compute;
        int has_reasons;
        unsigned long long reasons;
        int has_power;
        unsigned power[4];
        int has_clocks;
        unsigned clocks[6];
        int has_pcie;
        unsigned pcie[5];
        unsigned nvlinks;
        unsigned char down[32];
        unsigned long long nvl_err[32][4];
        int has_memory;
        unsigned long long memory[2];
        int has_procs[2], nprocs[2];
        unsigned procs[2][16];
        unsigned long long procs_used[2][16];
        struct {
                char fn[64];
                int code;
        } fail[MAXFAIL];
        int nfail;
};

static struct {
        int init;
        char driver[80];
        unsigned count;
        struct gpu g[MAXGPU];
} D;

static char *trim(char *s)
{
        while (*s == ' ' || *s == '\t')
                s++;
        char *e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
                *--e = '\0';
        return s;
}

static unsigned long long num(const char *s) { return strtoull(s, NULL, 0); }

/* "a,b,c" into up to N numbers */
static void nums(const char *s, unsigned long long *out, int n)
{
        char *copy = strdup(s), *save = NULL;
        int i = 0;
        for (char *t = strtok_r(copy, ",", &save); t && i < n; t = strtok_r(NULL, ",", &save))
                out[i++] = num(t);
        free(copy);
}

/* "PID:USED,PID:USED" or "none" into kind K's process list of G */
static void procs(struct gpu *g, int k, const char *s)
{
        g->has_procs[k] = 1;
        char *copy = strdup(s), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t && g->nprocs[k] < 16; t = strtok_r(NULL, ",", &save)) {
                char *colon = strchr(t, ':');
                if (!colon)
                        continue;
                g->procs[k][g->nprocs[k]] = (unsigned)num(t);
                g->procs_used[k][g->nprocs[k]++] = num(colon + 1);
        }
        free(copy);
}

static void load(void)
{
        memset(&D, 0, sizeof(D));
        const char *path = getenv("LLMTUNE_NVML_DOUBLE");
        FILE *in = path ? fopen(path, "re") : NULL;
        if (!in) {
                D.init = 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
                return;
        }
        char line[512];
        while (fgets(line, sizeof(line), in)) {
                char *l = trim(line);
                if (!*l || *l == '#')
                        continue;
                char *eq = strchr(l, '=');
                if (!eq)
                        continue;
                *eq = '\0';
                char *key = trim(l), *val = trim(eq + 1);
                unsigned long long v[5] = {0};
                if (!strcmp(key, "init"))
                        D.init = (int)num(val);
                else if (!strcmp(key, "driver"))
                        snprintf(D.driver, sizeof(D.driver), "%s", val);
                else if (!strcmp(key, "count"))
                        D.count = (unsigned)num(val);
                else if (!strncmp(key, "gpu.", 4)) {
                        char *dot;
                        unsigned i = (unsigned)strtoul(key + 4, &dot, 10);
                        if (i >= MAXGPU || *dot != '.')
                                continue;
                        struct gpu *g = &D.g[i];
                        const char *k = dot + 1;
                        if (!strcmp(k, "bus"))
                                snprintf(g->bus, sizeof(g->bus), "%s", val);
                        else if (!strcmp(k, "memory"))
                                g->has_memory = 1, nums(val, g->memory, 2);
                        else if (!strcmp(k, "procs"))
                                procs(g, 0, val);
                        else if (!strcmp(k, "gprocs"))
                                procs(g, 1, val);
                        else if (!strcmp(k, "name"))
                                snprintf(g->name, sizeof(g->name), "%s", val);
                        else if (!strcmp(k, "uuid"))
                                snprintf(g->uuid, sizeof(g->uuid), "%s", val);
                        else if (!strcmp(k, "persistence"))
                                g->has_persistence = 1, g->persistence = (int)num(val);
                        else if (!strcmp(k, "ecc"))
                                nums(val, v, 2), g->has_ecc = 1, g->ecc_cur = (int)v[0], g->ecc_pend = (int)v[1];
                        else if (!strcmp(k, "ecc_volatile"))
                                nums(val, v, 2), g->has_ecc_counts = 1, g->ecc[0][0] = v[0], g->ecc[0][1] = v[1];
                        else if (!strcmp(k, "ecc_aggregate"))
                                nums(val, v, 2), g->has_ecc_counts = 1, g->ecc[1][0] = v[0], g->ecc[1][1] = v[1];
                        else if (!strcmp(k, "remap")) {
                                nums(val, v, 4), g->has_remap = 1;
                                for (int j = 0; j < 4; j++)
                                        g->remap[j] = (unsigned)v[j];
                        } else if (!strcmp(k, "retired")) {
                                nums(val, v, 3), g->has_retired = 1;
                                for (int j = 0; j < 3; j++)
                                        g->retired[j] = (unsigned)v[j];
                        } else if (!strcmp(k, "mig"))
                                nums(val, v, 2), g->has_mig = 1, g->mig[0] = (unsigned)v[0], g->mig[1] = (unsigned)v[1];
                        else if (!strcmp(k, "compute"))
                                g->has_compute = 1, g->compute = (int)num(val);
                        else if (!strcmp(k, "reasons"))
                                g->has_reasons = 1, g->reasons = num(val);
                        else if (!strcmp(k, "power")) {
                                nums(val, v, 4), g->has_power = 1;
                                for (int j = 0; j < 4; j++)
                                        g->power[j] = (unsigned)v[j];
                        } else if (!strcmp(k, "clocks")) {
                                unsigned long long c[6] = {0};
                                nums(val, c, 6), g->has_clocks = 1;
                                for (int j = 0; j < 6; j++)
                                        g->clocks[j] = (unsigned)c[j];
                        } else if (!strcmp(k, "pcie")) {
                                nums(val, v, 5), g->has_pcie = 1;
                                for (int j = 0; j < 5; j++)
                                        g->pcie[j] = (unsigned)v[j];
                        } else if (!strcmp(k, "nvlinks"))
                                g->nvlinks = (unsigned)num(val);
                        else if (!strcmp(k, "nvlink_down")) {
                                char *copy = strdup(val), *save = NULL;
                                for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
                                        if (num(t) < 32)
                                                g->down[num(t)] = 1;
                                free(copy);
                        } else if (!strcmp(k, "nvlink_errors")) {
                                unsigned long long e[5] = {0};
                                char *copy = strdup(val), *save = NULL;
                                int j = 0;
                                for (char *t = strtok_r(copy, ":", &save); t && j < 5; t = strtok_r(NULL, ":", &save))
                                        e[j++] = num(t);
                                free(copy);
                                if (e[0] < 32)
                                        for (j = 0; j < 4; j++)
                                                g->nvl_err[e[0]][j] = e[j + 1];
                        } else if (!strcmp(k, "fail") && g->nfail < MAXFAIL) {
                                char *colon = strrchr(val, ':');
                                if (colon) {
                                        *colon = '\0';
                                        snprintf(g->fail[g->nfail].fn, sizeof(g->fail[0].fn), "%s", val);
                                        g->fail[g->nfail++].code = (int)num(colon + 1);
                                }
                        }
                }
        }
        fclose(in);
}

typedef struct gpu *nvmlDevice_t;

/* The injected failure of FN for G, or 0. */
static int failing(const struct gpu *g, const char *fn)
{
        for (int i = 0; i < g->nfail; i++)
                if (!strcmp(g->fail[i].fn, fn))
                        return g->fail[i].code;
        return 0;
}

#define NS 3 /* NVML_ERROR_NOT_SUPPORTED */
#define CHECK(fn)                      \
        do {                           \
                int _f = failing(d, fn); \
                if (_f)                \
                        return _f;     \
        } while (0)

int nvmlInit_v2(void)
{
        load();
        return D.init;
}

int nvmlShutdown(void) { return 0; }

const char *nvmlErrorString(int rc)
{
        switch (rc) {
        case 0: return "Success";
        case 1: return "Uninitialized";
        case 2: return "Invalid Argument";
        case 3: return "Not Supported";
        case 4: return "Insufficient Permissions";
        case 6: return "Not Found";
        case 9: return "Driver Not Loaded";
        case 15: return "GPU is lost";
        case 18: return "RM has detected an NVML/RM version mismatch.";
        default: return "Unknown Error";
        }
}

int nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
        snprintf(buf, len, "%s", D.driver);
        return 0;
}

int nvmlDeviceGetCount_v2(unsigned *n)
{
        *n = D.count;
        return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
        if (i >= D.count || i >= MAXGPU)
                return 2;
        int f = failing(&D.g[i], "nvmlDeviceGetHandleByIndex_v2");
        if (f)
                return f;
        *d = &D.g[i];
        return 0;
}

typedef struct {
        char busIdLegacy[16];
        unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
        char busId[32];
} pci_info;

int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, pci_info *p)
{
        CHECK("nvmlDeviceGetPciInfo_v3");
        memset(p, 0, sizeof(*p));
        snprintf(p->busId, sizeof(p->busId), "%s", d->bus);
        return 0;
}

#ifndef NVML_DOUBLE_OLD

int nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *c, unsigned *u, unsigned *p, unsigned *f)
{
        CHECK("nvmlDeviceGetRemappedRows");
        if (!d->has_remap)
                return NS;
        *c = d->remap[0], *u = d->remap[1], *p = d->remap[2], *f = d->remap[3];
        return 0;
}
#endif

static int str(nvmlDevice_t d, const char *fn, const char *v, char *buf, unsigned len)
{
        CHECK(fn);
        if (!*v)
                return NS;
        snprintf(buf, len, "%s", v);
        return 0;
}

int nvmlDeviceGetName(nvmlDevice_t d, char *b, unsigned l) { return str(d, "nvmlDeviceGetName", d->name, b, l); }
int nvmlDeviceGetUUID(nvmlDevice_t d, char *b, unsigned l) { return str(d, "nvmlDeviceGetUUID", d->uuid, b, l); }

int nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *v)
{
        CHECK("nvmlDeviceGetPersistenceMode");
        if (!d->has_persistence)
                return NS;
        *v = d->persistence;
        return 0;
}

int nvmlDeviceGetEccMode(nvmlDevice_t d, int *c, int *p)
{
        CHECK("nvmlDeviceGetEccMode");
        if (!d->has_ecc)
                return NS;
        *c = d->ecc_cur, *p = d->ecc_pend;
        return 0;
}

int nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *n)
{
        CHECK("nvmlDeviceGetTotalEccErrors");
        if (!d->has_ecc_counts || type < 0 || type > 1 || counter < 0 || counter > 1)
                return NS;
        *n = d->ecc[counter][type];
        return 0;
}

int nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned *count, unsigned long long *addrs)
{
        CHECK("nvmlDeviceGetRetiredPages");
        if (!d->has_retired || cause < 0 || cause > 1)
                return NS;
        unsigned n = d->retired[cause];
        if (*count < n) {
                *count = n;
                return n ? 7 : 0; /* NVML_ERROR_INSUFFICIENT_SIZE, as NVML does with a short buffer */
        }
        for (unsigned i = 0; i < n && addrs; i++)
                addrs[i] = 0x1000ull * (i + 1);
        *count = n;
        return 0;
}

int nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *p)
{
        CHECK("nvmlDeviceGetRetiredPagesPendingStatus");
        if (!d->has_retired)
                return NS;
        *p = (int)d->retired[2];
        return 0;
}

int nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *c, unsigned *p)
{
        CHECK("nvmlDeviceGetMigMode");
        if (!d->has_mig)
                return NS;
        *c = d->mig[0], *p = d->mig[1];
        return 0;
}

int nvmlDeviceGetComputeMode(nvmlDevice_t d, int *m)
{
        CHECK("nvmlDeviceGetComputeMode");
        if (!d->has_compute)
                return NS;
        *m = d->compute;
        return 0;
}

#ifdef NVML_DOUBLE_OLD
#define REASONS_FN nvmlDeviceGetCurrentClocksThrottleReasons
#else
#define REASONS_FN nvmlDeviceGetCurrentClocksEventReasons
#endif
int REASONS_FN(nvmlDevice_t d, unsigned long long *r)
{
        CHECK("nvmlDeviceGetCurrentClocksEventReasons");
        if (!d->has_reasons)
                return NS;
        *r = d->reasons;
        return 0;
}

static int power(nvmlDevice_t d, const char *fn, int i, unsigned *v)
{
        CHECK(fn);
        if (!d->has_power)
                return NS;
        *v = d->power[i];
        return 0;
}

int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned *v) { return power(d, "nvmlDeviceGetEnforcedPowerLimit", 0, v); }
int nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned *v)
{
        return power(d, "nvmlDeviceGetPowerManagementDefaultLimit", 1, v);
}

int nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d, unsigned *lo, unsigned *hi)
{
        CHECK("nvmlDeviceGetPowerManagementLimitConstraints");
        if (!d->has_power)
                return NS;
        *lo = d->power[2], *hi = d->power[3];
        return 0;
}

/* nvmlClockType_t: 0 graphics, 2 memory; KIND 0 application, 1 default application, 2 maximum. */
static int clock(nvmlDevice_t d, const char *fn, int kind, int type, unsigned *v)
{
        CHECK(fn);
        if (!d->has_clocks || (type != 0 && type != 2))
                return NS;
        *v = d->clocks[kind * 2 + (type == 2)];
        return 0;
}

int nvmlDeviceGetApplicationsClock(nvmlDevice_t d, int type, unsigned *v)
{
        return clock(d, "nvmlDeviceGetApplicationsClock", 0, type, v);
}
int nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t d, int type, unsigned *v)
{
        return clock(d, "nvmlDeviceGetDefaultApplicationsClock", 1, type, v);
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned *v)
{
        return clock(d, "nvmlDeviceGetMaxClockInfo", 2, type, v);
}

static int pcie(nvmlDevice_t d, const char *fn, int i, unsigned *v)
{
        CHECK(fn);
        if (!d->has_pcie)
                return NS;
        *v = d->pcie[i];
        return 0;
}

int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned *v) { return pcie(d, "nvmlDeviceGetCurrPcieLinkGeneration", 0, v); }
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned *v) { return pcie(d, "nvmlDeviceGetMaxPcieLinkGeneration", 1, v); }
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned *v) { return pcie(d, "nvmlDeviceGetCurrPcieLinkWidth", 2, v); }
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned *v) { return pcie(d, "nvmlDeviceGetMaxPcieLinkWidth", 3, v); }
int nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned *v) { return pcie(d, "nvmlDeviceGetPcieReplayCounter", 4, v); }

int nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int *on)
{
        CHECK("nvmlDeviceGetNvLinkState");
        if (link >= d->nvlinks || link >= 32)
                return NS;
        *on = !d->down[link];
        return 0;
}

int nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned link, int counter, unsigned long long *v)
{
        CHECK("nvmlDeviceGetNvLinkErrorCounter");
        if (link >= d->nvlinks || link >= 32 || counter < 0 || counter > 3)
                return NS;
        *v = d->nvl_err[link][counter];
        return 0;
}

typedef struct {
        unsigned long long total, free, used;
} memory_t;

int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, memory_t *m)
{
        CHECK("nvmlDeviceGetMemoryInfo");
        if (!d->has_memory)
                return NS;
        m->total = d->memory[0], m->used = d->memory[1], m->free = d->memory[0] - d->memory[1];
        return 0;
}

typedef struct {
        unsigned pid;
        unsigned long long used;
        unsigned gi, ci;
} proc_t;

/* NVML's convention: with too small a buffer, INSUFFICIENT_SIZE (7) and the count needed. */
static int processes(nvmlDevice_t d, const char *fn, int k, unsigned *n, proc_t *v)
{
        CHECK(fn);
        if (!d->has_procs[k])
                return NS;
        if (*n < (unsigned)d->nprocs[k]) {
                *n = (unsigned)d->nprocs[k];
                return d->nprocs[k] ? 7 : 0;
        }
        for (int i = 0; i < d->nprocs[k]; i++)
                v[i] = (proc_t){d->procs[k][i], d->procs_used[k][i], 0xffffffff, 0xffffffff};
        *n = (unsigned)d->nprocs[k];
        return 0;
}

#ifndef NVML_DOUBLE_OLD
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *n, proc_t *v)
{
        return processes(d, "nvmlDeviceGetComputeRunningProcesses_v3", 0, n, v);
}

int nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned *n, proc_t *v)
{
        return processes(d, "nvmlDeviceGetGraphicsRunningProcesses_v3", 1, n, v);
}
#else
int nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned *n, proc_t *v)
{
        return processes(d, "nvmlDeviceGetComputeRunningProcesses_v2", 0, n, v);
}

int nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned *n, proc_t *v)
{
        return processes(d, "nvmlDeviceGetGraphicsRunningProcesses_v2", 1, n, v);
}
#endif
