/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nvml.*: GPU health (ECC, row remapping, retired pages, MIG, clock event reasons, power limits,
 * PCIe as the GPU sees it, NVLink) from NVML on the live machine or from an `nvidia-smi -q -x`
 * capture under a foreign root (see nvgpu.h). The probe is lazy like every other: nothing here
 * runs, no library is loaded and no XML is parsed, unless a nvml.* fact is asked for.
 *
 * nvml.unlisted ties the two worlds together: the NVIDIA GPUs that sysfs shows on PCI but the
 * driver does not list. Such a GPU failed to initialise or fell off the bus (Xid 79), and every
 * other nvml.* rule would silently skip it.
 */
#include <inttypes.h>
#include <stdio.h>

#include "facts/probes/counters.h"
#include "facts/adapters/nvgpu.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

const struct nvgpu_reason nvgpu_reasons[] = {
        /* nvml.h: nvmlClocksEventReasonGpuIdle ... nvmlClocksThrottleReasonDisplayClockSetting */
        {0x1, "gpu_idle", "idle"},
        {0x2, "applications_clocks_setting", "applications_clocks"},
        {0x4, "sw_power_cap", "sw_power_cap"},
        {0x8, "hw_slowdown", "hw_slowdown"},
        {0x10, "sync_boost", "sync_boost"},
        {0x20, "sw_thermal_slowdown", "sw_thermal_slowdown"},
        {0x40, "hw_thermal_slowdown", "hw_thermal_slowdown"},
        {0x80, "hw_power_brake_slowdown", "hw_power_brake_slowdown"},
        {0x100, "display_clocks_setting", "display_clocks"},
};
const unsigned nvgpu_nreasons = ARRAY_SIZE(nvgpu_reasons);

bool nvgpu_bus_id(const char *in, char out[32])
{
        struct pci_addr a;
        if (!pci_addr_parse(in, &a))
                return false;
        snprintf(out, 32, "%04x:%02x:%02x.%u", a.dom, a.bus, a.dev, a.fn);
        return true;
}

void nvgpu_str(const struct nvgpu_out *o, const char *field, const char *value)
{
        fact_str(o->f, o->source, value, "nvml.%u.%s", o->idx, field);
}

void nvgpu_uint(const struct nvgpu_out *o, const char *field, uint64_t value)
{
        fact_uint(o->f, o->source, value, "nvml.%u.%s", o->idx, field);
}

void nvgpu_bool(const struct nvgpu_out *o, const char *field, bool value)
{
        fact_bool(o->f, o->source, value, "nvml.%u.%s", o->idx, field);
}

void nvgpu_absent(const struct nvgpu_out *o, const char *field, const char *reason)
{
        fact_absent(o->f, o->source, reason, "nvml.%u.%s", o->idx, field);
}

void nvgpu_unreadable(const struct nvgpu_out *o, const char *field, const char *reason)
{
        fact_unreadable(o->f, o->source, 0, reason, "nvml.%u.%s", o->idx, field);
}

/* The NVIDIA GPUs on PCI (gpu.N.address of the NVIDIA gpu.N, sysfs spelling) into BUS. Returns 0, or
 * the gpu.nvidia_count fact that says why they are not known. */
static const struct fact *pci_gpus(struct facts *f, struct strv *bus)
{
        const struct fact *pci = facts_get(f, "gpu.nvidia_count");
        bool neg;
        uint64_t n;
        if (!pci || pci->status != FACT_OK || !fact_number(pci, &neg, &n) || neg)
                return pci ? pci : facts_get(f, "gpu.count");
        for (uint64_t i = 0; i < n; i++) {
                char name[64], addr[32];
                snprintf(name, sizeof(name), "gpu.%" PRIu64 ".address", i);
                const struct fact *a = facts_get(f, name);
                if (a && a->status == FACT_OK && nvgpu_bus_id(a->str, addr))
                        strv_add(bus, addr);
        }
        return NULL;
}

/* Record NAME and NAME_count from LIST (comma list, or "none"). */
static void list_facts(struct facts *f, const char *src, const char *name, const struct strv *list)
{
        _cleanup_free_ char *joined = list->n ? strv_join(list, ",") : xstrdup("none");
        fact_str(f, src, joined, "%s", name);
        fact_int(f, src, (int64_t)list->n, "%s_count", name);
}

static void both_unknown(struct facts *f, const struct fact *why, const char *name)
{
        const char *src = why && why->source ? why->source : "/sys/bus/pci/devices";
        const char *reason = why && why->reason ? why->reason : "PCI GPUs unknown";
        if (why && why->status == FACT_ABSENT) {
                fact_absent(f, src, reason, "%s", name);
                fact_absent(f, src, reason, "%s_count", name);
        } else {
                fact_unreadable(f, src, 0, reason, "%s", name);
                fact_unreadable(f, src, 0, reason, "%s_count", name);
        }
}

/*
 * nvml.unlisted: NVIDIA GPUs on PCI without an nvml.M.address (failed to initialise, fell off the
 * bus). nvml.foreign: GPUs the driver (or the capture) lists that are not NVIDIA GPUs on this PCI
 * bus; nvml.duplicated: bus ids listed more than once. Either means the list does not describe this
 * machine (under --root: a capture taken on another host, or edited), so which GPUs are missing from
 * it cannot be told: nvml.unlisted is then unreadable, naming the mismatch, never "none". Both sides
 * must be known; otherwise the facts say which side is not.
 */
/* The addresses of the LISTED GPUs into ADDRS; those listed twice into DUP, those not among the PCI
 * bus's BUS into FOREIGN (only when the bus is known: WHY NULL). */
static void listed_addresses(struct facts *f, int listed, const struct strv *bus, bool bus_known, struct strv *addrs,
                             struct strv *foreign, struct strv *dup)
{
        for (int k = 0; k < listed; k++) {
                char name[64];
                snprintf(name, sizeof(name), "nvml.%d.address", k);
                const struct fact *b = facts_get(f, name);
                if (!b || b->status != FACT_OK)
                        continue;
                if (strv_contains(addrs, b->str) && !strv_contains(dup, b->str))
                        strv_add(dup, b->str);
                strv_add(addrs, b->str);
                if (bus_known && !strv_contains(bus, b->str) && !strv_contains(foreign, b->str))
                        strv_add(foreign, b->str);
        }
}

void nvgpu_unlisted(struct facts *f, int listed)
{
        const struct fact *count = facts_get(f, "nvml.count");
        static const char *const names[] = {"nvml.unlisted", "nvml.foreign", "nvml.duplicated"};
        if (listed < 0) {
                const struct fact *why = count && count->status != FACT_OK ? count : NULL;
                struct fact generic = {.status = FACT_UNREADABLE, .reason = "the GPU list could not be read",
                                       .source = "nvml"};
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        both_unknown(f, why ? why : &generic, names[i]);
                return;
        }
        _cleanup_(strv_done) struct strv bus = {0}, listed_addrs = {0}, unlisted = {0}, foreign = {0}, dup = {0};
        const struct fact *why = pci_gpus(f, &bus);
        listed_addresses(f, listed, &bus, !why, &listed_addrs, &foreign, &dup);
        _cleanup_free_ char *src = xasprintf("%s + /sys/bus/pci/devices", count && count->source ? count->source : "nvml");
        if (why) {
                both_unknown(f, why, "nvml.unlisted");
                both_unknown(f, why, "nvml.foreign");
        } else {
                for (size_t i = 0; i < bus.n; i++)
                        if (!strv_contains(&listed_addrs, bus.v[i]))
                                strv_add(&unlisted, bus.v[i]);
                list_facts(f, src, "nvml.foreign", &foreign);
        }
        list_facts(f, src, "nvml.duplicated", &dup);
        if (!why && (foreign.n || dup.n)) {
                _cleanup_free_ char *fl = strv_join(&foreign, ","), *dl = strv_join(&dup, ",");
                _cleanup_free_ char *reason = xasprintf(
                        "the driver's GPU list does not match this machine's PCI bus (%s%s%s%s%s; a capture from "
                        "another host, or edited?): which GPUs it lacks is unknown",
                        foreign.n ? "listed but not on the bus: " : "", foreign.n ? fl : "",
                        foreign.n && dup.n ? "; " : "", dup.n ? "listed twice: " : "", dup.n ? dl : "");
                fact_unreadable(f, src, 0, reason, "nvml.unlisted");
                fact_unreadable(f, src, 0, reason, "nvml.unlisted_count");
        } else if (!why)
                list_facts(f, src, "nvml.unlisted", &unlisted);
}

/* nvml.I.OUT: whether any of the N values nvml.I.LO[k] is below nvml.I.HI[k]; absent or unreadable as
 * the first of them that is not a number is. */
static void derive_below(struct facts *f, int i, const char *const *lo, const char *const *hi, size_t n,
                         const char *out)
{
        bool below = false;
        const struct fact *src = NULL;
        for (size_t k = 0; k < n; k++) {
                char ln[96], hn[96];
                snprintf(ln, sizeof(ln), "nvml.%d.%s", i, lo[k]);
                snprintf(hn, sizeof(hn), "nvml.%d.%s", i, hi[k]);
                const struct fact *l = facts_get(f, ln), *h = facts_get(f, hn);
                const struct fact *bad = !l || l->status != FACT_OK ? l : !h || h->status != FACT_OK ? h : NULL;
                bool ln_neg, hn_neg;
                uint64_t lv, hv;
                if (bad && bad->status == FACT_ABSENT)
                        return fact_absent(f, bad->source, bad->reason, "nvml.%d.%s", i, out);
                if (bad || !l || !h || !fact_number(l, &ln_neg, &lv) || !fact_number(h, &hn_neg, &hv)) {
                        _cleanup_free_ char *why = xasprintf("%s or %s unreadable", ln, hn);
                        return fact_unreadable(f, l ? l->source : "nvml", 0, why, "nvml.%d.%s", i, out);
                }
                below |= lv < hv;
                src = src ? src : l;
        }
        fact_bool(f, src->source, below, "nvml.%d.%s", i, out);
}

/* nvml.N.power.below_default (enforced limit < default: nvidia-smi -pl) and
 * nvml.N.clocks.app_below_default (application clocks below the board's default: nvidia-smi -ac). */
void nvgpu_derived(struct facts *f, int listed)
{
        static const char *const pl[] = {"power.limit_mw"}, *const ph[] = {"power.default_limit_mw"};
        static const char *const cl[] = {"clocks.app_graphics_mhz", "clocks.app_memory_mhz"};
        static const char *const ch[] = {"clocks.default_app_graphics_mhz", "clocks.default_app_memory_mhz"};
        for (int i = 0; i < listed; i++) {
                derive_below(f, i, pl, ph, ARRAY_SIZE(pl), "power.below_default");
                derive_below(f, i, cl, ch, ARRAY_SIZE(cl), "clocks.app_below_default");
        }
}

/* nvml.N.COUNTER_growth for the error counters judged between runs, keyed by the GPU's PCI address
 * (its index changes when a GPU before it falls off the bus). */
static void nvgpu_growth(struct facts *f, int listed)
{
        static const char *const counters[] = {"ecc.volatile.corrected", "ecc.volatile.uncorrected", "nvlink.errors"};
        for (int i = 0; i < listed; i++) {
                char an[64];
                snprintf(an, sizeof(an), "nvml.%d.address", i);
                const struct fact *a = facts_get(f, an);
                for (size_t k = 0; a && a->status == FACT_OK && k < ARRAY_SIZE(counters); k++) {
                        _cleanup_free_ char *name = xasprintf("nvml.%d.%s", i, counters[k]),
                                            *key = xasprintf("nvml@%s.%s", a->str, counters[k]);
                        counter_growth(f, name, key);
                }
        }
}

static int nvml_run(struct facts *f)
{
        int n = root_runs_here(facts_root(f)) ? nvml_live_facts(f, NVGPU_SONAME) : nvsmi_xml_facts(f, NVGPU_CAPTURE);
        nvgpu_unlisted(f, n);
        nvgpu_derived(f, n);
        nvgpu_growth(f, n);
        return 0;
}

const struct probe probe_nvml = {
        .name = "nvml",
        .prefixes = {"nvml."},
        .run = nvml_run,
};
