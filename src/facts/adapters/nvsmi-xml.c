/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The nvml.* facts from a capture of `nvidia-smi -q -x` (nvgpu.h), parsed with libxml2.
 *
 * The XML layout changed with the driver (the DTD named in the DOCTYPE, nvsmi_device_v10 ...
 * v13), so every value is looked up under each name it has had:
 *   clocks_throttle_reasons/clocks_throttle_reason_X (before 535) -> clocks_event_reasons/...
 *   power_readings (enforced_power_limit) -> gpu_power_readings (current_power_limit)
 *   ecc_errors single_bit/double_bit totals (Kepler..Volta) -> sram_/dram_ counters (Ampere on),
 *   sram_uncorrectable split into _parity and _secded (v13)
 *   retired_pages/pending_blacklist (K80-era captures) -> pending_retirement (both, later)
 * A value of "N/A", "[Not Supported]" or "Requested functionality has been deprecated" is a
 * fact that is absent (this GPU or mode does not have it), with those words; an element missing
 * from the capture is absent too ("no <X> in the capture"); anything else that does not parse is
 * unreadable. Values are trimmed: re-indented captures wrap them across lines.
 *
 * The document is parsed from memory read through the root handle, without the network, DTD
 * loading or entity substitution (a capture is data, not a program).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "base/lazy-xml.h"

#include "facts/adapters/nvgpu.h"
#include "facts/readers/nvlink-status.h"
#include "base/parse.h"

struct ctx {
        const char *path;
        char *driver; /* for reasons */
        struct nvlink_status nvl; /* the `nvidia-smi nvlink -s` capture beside it (none: n 0) */
        char *nvl_why;            /* why there is none */
};

static bool is_elem(const xmlNode *n, const char *name)
{
        return n->type == XML_ELEMENT_NODE && streq((const char *)n->name, name);
}

static xmlNode *child(xmlNode *n, const char *name)
{
        for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
                if (is_elem(c, name))
                        return c;
        return NULL;
}

/* Trimmed text content; caller frees. */
static char *text(xmlNode *n)
{
        xmlChar *c = xmlNodeGetContent(n);
        const char *s = c ? (const char *)c : "";
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
                s++;
        char *out = xstrdup(s);
        strip_trailing(out);
        xmlFree(c);
        return out;
}

/* Does N have element children (as opposed to a plain value such as "N/A")? */
static bool has_elements(xmlNode *n)
{
        for (xmlNode *c = n->children; c; c = c->next)
                if (c->type == XML_ELEMENT_NODE)
                        return true;
        return false;
}

enum vstat { V_OK, V_ABSENT, V_BAD };

struct val {
        enum vstat st;
        char *s;      /* V_OK: the value; otherwise the reason */
};

static void val_done(struct val *v) { free(v->s); }

/* Words nvidia-smi prints instead of a value. */
static enum vstat classify(const char *s)
{
        static const char *const absent[] = {"N/A", "[N/A]", "Not Supported", "[Not Supported]",
                                             "Requested functionality has been deprecated", "Not Found", "None"};
        for (size_t i = 0; i < ARRAY_SIZE(absent); i++)
                if (streq(s, absent[i]))
                        return V_ABSENT;
        if (!*s || s[0] == '[' || strcasestr(s, "error") || strcasestr(s, "unknown"))
                return V_BAD;
        return V_OK;
}

/*
 * PATH is "a/b/c"; a component may list alternative names "x|y" (the first that exists wins).
 * A missing element is V_ABSENT "no <c> in the capture"; an element on the way that holds a
 * value instead of children (<remapped_rows>N/A</remapped_rows>) gives that value's meaning.
 */
static struct val lookup(const struct ctx *c, xmlNode *n, const char *path)
{
        _cleanup_free_ char *copy = xstrdup(path);
        char *save = NULL;
        for (char *comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
                xmlNode *next = NULL;
                char *alt_save = NULL;
                _cleanup_free_ char *alts = xstrdup(comp);
                for (char *a = strtok_r(alts, "|", &alt_save); a && !next; a = strtok_r(NULL, "|", &alt_save))
                        next = child(n, a);
                if (!next) {
                        _cleanup_free_ char *t = n && !has_elements(n) ? text(n) : NULL;
                        if (t && *t && classify(t) == V_ABSENT)
                                return (struct val){V_ABSENT, xasprintf("%s in the capture (<%s>)", t, (const char *)n->name)};
                        return (struct val){V_ABSENT, xasprintf("no <%s> in the capture (driver %s)", comp,
                                                                c->driver ? c->driver : "unknown")};
                }
                n = next;
        }
        char *t = text(n);
        enum vstat st = classify(t);
        if (st == V_OK)
                return (struct val){V_OK, t};
        struct val v = {st, st == V_ABSENT ? xasprintf("%s in the capture", t)
                                           : xasprintf("nvidia-smi reported \"%.80s\"", t)};
        free(t);
        return v;
}

/* "350.00 W" -> 350000 (milliwatts); "16x" -> 16; "0" -> 0. Unit must be the given one or none. */
static int parse_num(const char *s, const char *unit, uint64_t scale, uint64_t *ret)
{
        char *end;
        errno = 0;
        if (!(*s >= '0' && *s <= '9'))
                return -EINVAL;
        double d = strtod(s, &end);
        if (errno || d < 0 || d > 1e15)
                return -ERANGE;
        while (*end == ' ')
                end++;
        if (*end && !(unit && streq(end, unit)))
                return -EINVAL;
        *ret = (uint64_t)(d * (double)scale + 0.5);
        return 0;
}

/* A value that is not there (V_ABSENT) or could not be read: the fact says which, and why. */
static void emit_missing(const struct nvgpu_out *o, const char *field, const struct val *v)
{
        if (v->st == V_ABSENT)
                nvgpu_absent(o, field, v->s);
        else
                nvgpu_unreadable(o, field, v->s);
}

static void emit_num(const struct ctx *c, const struct nvgpu_out *o, const char *field, xmlNode *g, const char *path,
                     const char *unit, uint64_t scale)
{
        struct val v = lookup(c, g, path);
        uint64_t n;
        if (v.st == V_OK && parse_num(v.s, unit, scale, &n) == 0)
                nvgpu_uint(o, field, n);
        else if (v.st == V_OK) {
                _cleanup_free_ char *why = xasprintf("not a number: \"%.60s\"", v.s);
                nvgpu_unreadable(o, field, why);
        } else
                emit_missing(o, field, &v);
        val_done(&v);
}

static void emit_str(const struct ctx *c, const struct nvgpu_out *o, const char *field, xmlNode *g, const char *path)
{
        struct val v = lookup(c, g, path);
        if (v.st == V_OK)
                nvgpu_str(o, field, v.s);
        else
                emit_missing(o, field, &v);
        val_done(&v);
}

/* "Enabled"/"Disabled", "Yes"/"No", "Active"/"Not Active". */
static int word_bool(const char *s, bool *ret)
{
        static const char *const yes[] = {"Enabled", "Yes", "Active"};
        static const char *const no[] = {"Disabled", "No", "Not Active"};
        for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0)
                        return *ret = true, 0;
                if (strcasecmp(s, no[i]) == 0)
                        return *ret = false, 0;
        }
        return -EINVAL;
}

/* *ret: -1 when the value was not a readable bool (the fact says why). */
static void emit_bool(const struct ctx *c, const struct nvgpu_out *o, const char *field, xmlNode *g, const char *path,
                      int *ret)
{
        struct val v = lookup(c, g, path);
        bool b;
        int r = -1;
        if (v.st == V_OK && word_bool(v.s, &b) == 0) {
                nvgpu_bool(o, field, b);
                r = b;
        } else if (v.st == V_OK) {
                _cleanup_free_ char *why = xasprintf("not Enabled/Disabled, Yes/No or Active/Not Active: \"%.60s\"", v.s);
                nvgpu_unreadable(o, field, why);
        } else
                emit_missing(o, field, &v);
        if (ret)
                *ret = r;
        val_done(&v);
}

/*
 * ECC counts: the sum of the counters of one kind. Kepler..Volta captures give single_bit/total and
 * double_bit/total; from Ampere sram_ and dram_ counters (sram_uncorrectable split into _parity and
 * _secded in v13). Counters that are N/A are left out of the sum; all N/A is absent.
 */
static void emit_ecc(const struct ctx *c, const struct nvgpu_out *o, xmlNode *g, const char *kind, bool corrected)
{
        _cleanup_free_ char *field = xasprintf("ecc.%s.%s", kind, corrected ? "corrected" : "uncorrected");
        _cleanup_free_ char *base = xasprintf("ecc_errors/%s", kind);
        const char *const cor[] = {"single_bit/total", "sram_correctable", "dram_correctable"};
        const char *const unc[] = {"double_bit/total", "sram_uncorrectable", "sram_uncorrectable_parity",
                                   "sram_uncorrectable_secded", "dram_uncorrectable"};
        const char *const *parts = corrected ? cor : unc;
        size_t nparts = corrected ? ARRAY_SIZE(cor) : ARRAY_SIZE(unc);
        uint64_t sum = 0;
        bool any = false;
        char *absent_why = NULL;
        for (size_t i = 0; i < nparts; i++) {
                _cleanup_free_ char *p = xasprintf("%s/%s", base, parts[i]);
                struct val v = lookup(c, g, p);
                uint64_t n;
                if (v.st == V_OK && parse_num(v.s, NULL, 1, &n) == 0) {
                        sum += n;
                        any = true;
                } else if (v.st == V_ABSENT) {
                        if (!absent_why || strstr(absent_why, "no <"))
                                free(absent_why), absent_why = xstrdup(v.s);
                } else {
                        _cleanup_free_ char *why = v.st == V_OK ? xasprintf("%s: not a number: \"%.60s\"", parts[i], v.s)
                                                                : xasprintf("%s: %s", parts[i], v.s);
                        nvgpu_unreadable(o, field, why);
                        val_done(&v);
                        free(absent_why);
                        return;
                }
                val_done(&v);
        }
        if (any)
                nvgpu_uint(o, field, sum);
        else
                nvgpu_absent(o, field, absent_why ? absent_why : "no ECC counters in the capture");
        free(absent_why);
}

static void emit_reasons(const struct ctx *c, const struct nvgpu_out *o, xmlNode *g)
{
        xmlNode *sec = child(g, "clocks_event_reasons");
        const char *prefix = "clocks_event_reason_";
        if (!sec) {
                sec = child(g, "clocks_throttle_reasons");
                prefix = "clocks_throttle_reason_";
        }
        if (!sec) {
                for (unsigned i = 0; i < nvgpu_nreasons; i++) {
                        _cleanup_free_ char *field = xasprintf("clock_event.%s", nvgpu_reasons[i].word);
                        nvgpu_absent(o, field, "no <clocks_event_reasons> in the capture");
                }
                nvgpu_absent(o, "clock_events.active", "no <clocks_event_reasons> in the capture");
                return;
        }
        struct sbuf s = {0};
        bool known = false;
        for (unsigned i = 0; i < nvgpu_nreasons; i++) {
                _cleanup_free_ char *field = xasprintf("clock_event.%s", nvgpu_reasons[i].word);
                _cleanup_free_ char *name = xasprintf("%s%s", prefix, nvgpu_reasons[i].xml);
                int b;
                emit_bool(c, o, field, sec, name, &b);
                known |= b >= 0;
                if (b == 1)
                        sbuf_addf(&s, "%s%s", s.len ? "," : "", nvgpu_reasons[i].word);
        }
        if (known)
                nvgpu_str(o, "clock_events.active", s.len ? s.s : "none");
        else
                nvgpu_absent(o, "clock_events.active", "no clock event reason readable in the capture");
        free(sbuf_steal(&s));
}

static void emit_mig(const struct ctx *c, const struct nvgpu_out *o, xmlNode *g)
{
        int cur;
        emit_bool(c, o, "mig.current", g, "mig_mode/current_mig", &cur);
        emit_bool(c, o, "mig.pending", g, "mig_mode/pending_mig", NULL);
        xmlNode *devs = child(g, "mig_devices");
        if (!devs) {
                nvgpu_absent(o, "mig.instances", "no <mig_devices> in the capture");
                return;
        }
        unsigned n = 0;
        for (xmlNode *d = devs->children; d; d = d->next)
                n += is_elem(d, "mig_device");
        _cleanup_free_ char *t = n ? NULL : text(devs);
        if (n || streq(t, "None") || !*t)
                nvgpu_uint(o, "mig.instances", n);
        else
                nvgpu_absent(o, "mig.instances", "MIG devices not listed in the capture");
}

/* What a job would find on the GPU: framebuffer memory in use (bytes) and the processes holding it.
 * processes.compute counts the <process_info> whose <type> has a C (C, C+G: CUDA), processes.list
 * names them ("PID NAME USED", or none); graphics-only ones (an X server) are processes.graphics. */
static void emit_usage(const struct ctx *c, const struct nvgpu_out *o, xmlNode *g)
{
        emit_num(c, o, "memory.used", g, "fb_memory_usage/used", "MiB", 1u << 20);
        emit_num(c, o, "memory.total", g, "fb_memory_usage/total", "MiB", 1u << 20);
        xmlNode *procs = child(g, "processes");
        if (!procs) {
                static const char *const fields[] = {"processes.compute", "processes.graphics", "processes.list"};
                for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
                        nvgpu_absent(o, fields[i], "no <processes> in the capture");
                return;
        }
        uint64_t compute = 0, graphics = 0;
        struct sbuf list = {0};
        for (xmlNode *p = procs->children; p; p = p->next) {
                if (!is_elem(p, "process_info"))
                        continue;
                _cleanup_free_ char *type = text(child(p, "type")), *pid = text(child(p, "pid")),
                                    *name = text(child(p, "process_name")), *used = text(child(p, "used_memory"));
                if (!type || !strchr(type, 'C')) {
                        graphics++;
                        continue;
                }
                compute++;
                sbuf_addf(&list, "%s%s %s %s", list.len ? ", " : "", pid ? pid : "?", name ? name : "?",
                          used ? used : "?");
        }
        nvgpu_uint(o, "processes.compute", compute);
        nvgpu_uint(o, "processes.graphics", graphics);
        nvgpu_str(o, "processes.list", compute ? list.s : "none");
        free(sbuf_steal(&list));
}

/* NVLink from the `nvidia-smi nvlink -s` capture, matched by the GPU's UUID: -q -x carries none. */
static void emit_nvlink(const struct ctx *c, const struct nvgpu_out *o, xmlNode *g)
{
        _cleanup_free_ char *uuid = text(child(g, "uuid"));
        const struct nvlink_gpu *n = nvlink_status_find(&c->nvl, uuid);
        static const char *const all[] = {"nvlink.count", "nvlink.up", "nvlink.down", "nvlink.errors"};
        _cleanup_free_ char *why = n ? NULL
                                     : c->nvl_why ? xstrdup(c->nvl_why)
                                                  : xasprintf("GPU %s is not in " NVLINK_STATUS_CAPTURE, uuid);
        for (size_t i = 0; !n && i < ARRAY_SIZE(all); i++)
                nvgpu_absent(o, all[i], why);
        if (!n)
                return;
        nvgpu_absent(o, "nvlink.errors", "nvidia-smi nvlink -s has no error counters (that is nvlink -e)");
        if (n->all_inactive) {
                static const char *const msg = "nvidia-smi lists no link: \"all links are inActive\"";
                nvgpu_absent(o, "nvlink.count", msg);
                nvgpu_absent(o, "nvlink.down", msg);
                nvgpu_uint(o, "nvlink.up", 0);
                return;
        }
        nvgpu_uint(o, "nvlink.count", n->links);
        nvgpu_uint(o, "nvlink.up", n->up);
        nvgpu_uint(o, "nvlink.down", n->links - n->up);
        for (unsigned l = 0; l < NVLINK_STATUS_MAX_LINKS; l++)
                if (n->state[l] >= 0) {
                        char field[32];
                        snprintf(field, sizeof(field), "nvlink.%u.state", l);
                        nvgpu_str(o, field, n->state[l] ? "up" : "down");
                }
}

/* Application, default application and maximum clocks, graphics and memory (MHz). */
static void emit_clocks(const struct ctx *c, const struct nvgpu_out *o, xmlNode *g)
{
        /* <applications_clocks>, <default_applications_clocks> and <max_clocks> hold graphics_clock and
         * mem_clock in every DTD from v10 to v13 ("1275 MHz"; "Requested functionality has been
         * deprecated" on Blackwell, which has no application clocks). Locked clocks (nvidia-smi -lgc)
         * have no element of their own: they show as the applications_clocks_setting clock event. */
        static const char *const ck[][2] = {{"clocks.app_graphics_mhz", "applications_clocks/graphics_clock"},
                                            {"clocks.app_memory_mhz", "applications_clocks/mem_clock"},
                                            {"clocks.default_app_graphics_mhz", "default_applications_clocks/graphics_clock"},
                                            {"clocks.default_app_memory_mhz", "default_applications_clocks/mem_clock"},
                                            {"clocks.max_graphics_mhz", "max_clocks/graphics_clock"},
                                            {"clocks.max_memory_mhz", "max_clocks/mem_clock"}};
        for (size_t i = 0; i < ARRAY_SIZE(ck); i++)
                emit_num(c, o, ck[i][0], g, ck[i][1], "MHz", 1);
}

static void emit_gpu(const struct ctx *c, struct facts *f, unsigned idx, xmlNode *g, const char *addr)
{
        struct nvgpu_out o = {f, idx, c->path};
        if (addr)
                nvgpu_str(&o, "address", addr);
        else
                nvgpu_unreadable(&o, "address", "no PCI bus id in <gpu id=...>");
        emit_str(c, &o, "name", g, "product_name");
        emit_str(c, &o, "uuid", g, "uuid");
        emit_bool(c, &o, "persistence_mode", g, "persistence_mode", NULL);
        emit_bool(c, &o, "ecc.current", g, "ecc_mode/current_ecc", NULL);
        emit_bool(c, &o, "ecc.pending", g, "ecc_mode/pending_ecc", NULL);
        emit_ecc(c, &o, g, "volatile", true);
        emit_ecc(c, &o, g, "volatile", false);
        emit_ecc(c, &o, g, "aggregate", true);
        emit_ecc(c, &o, g, "aggregate", false);
        emit_num(c, &o, "remap.correctable", g, "remapped_rows/remapped_row_corr", NULL, 1);
        emit_num(c, &o, "remap.uncorrectable", g, "remapped_rows/remapped_row_unc", NULL, 1);
        emit_bool(c, &o, "remap.pending", g, "remapped_rows/remapped_row_pending", NULL);
        emit_bool(c, &o, "remap.failure", g, "remapped_rows/remapped_row_failure", NULL);
        emit_num(c, &o, "retired.sbe", g, "retired_pages/multiple_single_bit_retirement/retired_count", NULL, 1);
        emit_num(c, &o, "retired.dbe", g, "retired_pages/double_bit_retirement/retired_count", NULL, 1);
        /* pending_blacklist is the pre-450 name; later captures carry both, the old one N/A */
        emit_bool(c, &o, "retired.pending", g,
                  child(child(g, "retired_pages"), "pending_retirement") ? "retired_pages/pending_retirement"
                                                                         : "retired_pages/pending_blacklist",
                  NULL);
        emit_mig(c, &o, g);
        emit_str(c, &o, "compute_mode", g, "compute_mode");
        emit_reasons(c, &o, g);
        const char *pw = child(g, "gpu_power_readings") ? "gpu_power_readings" : "power_readings";
        _cleanup_free_ char *lim = xasprintf("%s/current_power_limit|enforced_power_limit", pw);
        _cleanup_free_ char *def = xasprintf("%s/default_power_limit", pw);
        _cleanup_free_ char *max = xasprintf("%s/max_power_limit", pw);
        _cleanup_free_ char *min = xasprintf("%s/min_power_limit", pw);
        emit_num(c, &o, "power.limit_mw", g, lim, "W", 1000);
        emit_num(c, &o, "power.default_limit_mw", g, def, "W", 1000);
        emit_num(c, &o, "power.max_limit_mw", g, max, "W", 1000);
        emit_num(c, &o, "power.min_limit_mw", g, min, "W", 1000);
        emit_clocks(c, &o, g);
        emit_num(c, &o, "pcie.gen", g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen", NULL, 1);
        emit_num(c, &o, "pcie.max_gen", g, "pci/pci_gpu_link_info/pcie_gen/max_link_gen", NULL, 1);
        emit_num(c, &o, "pcie.width", g, "pci/pci_gpu_link_info/link_widths/current_link_width", "x", 1);
        emit_num(c, &o, "pcie.max_width", g, "pci/pci_gpu_link_info/link_widths/max_link_width", "x", 1);
        emit_num(c, &o, "pcie.replay", g, "pci/replay_counter", NULL, 1);
        emit_usage(c, &o, g);
        emit_nvlink(c, &o, g);
}

struct gpu_node {
        xmlNode *n;
        char addr[32];
        bool has_addr;
        unsigned dom, bus, dev, fn;
};

static int cmp_gpu_node(const void *x, const void *y)
{
        const struct gpu_node *a = x, *b = y;
        if (a->has_addr != b->has_addr)
                return a->has_addr ? -1 : 1;
        unsigned ka[4] = {a->dom, a->bus, a->dev, a->fn}, kb[4] = {b->dom, b->bus, b->dev, b->fn};
        for (int i = 0; i < 4; i++)
                if (ka[i] != kb[i])
                        return ka[i] < kb[i] ? -1 : 1;
        return 0;
}

/* When the capture is text rather than XML (nvidia-smi prints its failure, "NVIDIA-SMI has failed
 * because it couldn't communicate with the NVIDIA driver. ...", and a redirect keeps it), that text:
 * its first lines joined, printable characters only, at most 240 bytes. NULL when it starts like XML. */
static char *said_instead(const char *data, size_t len)
{
        size_t i = 0;
        while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
                i++;
        if (i == len || data[i] == '<')
                return NULL;
        struct sbuf b = {0};
        bool space = false;
        for (; i < len && b.len < 240; i++) {
                unsigned char ch = (unsigned char)data[i];
                if (ch == '\n' || ch == '\r' || ch == '\t' || ch == ' ') {
                        space = b.len > 0;
                        continue;
                }
                if (ch < 0x20 || ch >= 0x7f)
                        ch = '?'; /* a fact is text: no control characters, no broken UTF-8 */
                if (space)
                        sbuf_add(&b, " ");
                space = false;
                sbuf_addf(&b, "%c", ch);
        }
        return sbuf_steal(&b);
}

/* The capture at PATH parsed into *DOC; its <nvidia_smi_log> element, or NULL with the summary
 * facts said absent or unreadable (and *DOC NULL). */
static xmlNode *open_capture(struct facts *f, const char *path, xmlDoc **doc)
{
        static const char *const summary[] = {"nvml.count", "nvml.driver_version", "nvml.attached"};
        const char *data;
        size_t len;
        *doc = NULL;
        int rc = root_read(facts_root(f), path, &data, &len);
        if (rc < 0) {
                if (root_gone(rc)) {
                        fact_absent(f, path, "no nvidia-smi capture under the root (nvidia-smi -q -x > " NVGPU_CAPTURE ")",
                                    "nvml.count");
                        fact_absent(f, path, "no nvidia-smi capture under the root", "nvml.driver_version");
                        fact_absent(f, path, "no nvidia-smi capture under the root", "nvml.attached");
                } else
                        for (size_t i = 0; i < ARRAY_SIZE(summary); i++)
                                fact_unreadable(f, path, rc, NULL, "%s", summary[i]);
                return NULL;
        }
        xmlResetLastError();
        *doc = xmlReadMemory(data, (int)len, NULL, NULL,
                             XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA);
        xmlNode *top = *doc ? xmlDocGetRootElement(*doc) : NULL;
        if (top && is_elem(top, "nvidia_smi_log"))
                return top;
        const xmlError *e = xmlGetLastError();
        _cleanup_free_ char *said = said_instead(data, len);
        _cleanup_free_ char *why = said ? xasprintf("nvidia-smi wrote no XML but: \"%s\"", said)
                                   : !*doc && e && e->message
                                           ? xasprintf("not XML: line %d: %s", e->line, e->message)
                                           : xstrdup("not an nvidia-smi -q -x capture (no <nvidia_smi_log>)");
        strip_trailing(why);
        for (size_t i = 0; i < ARRAY_SIZE(summary); i++)
                fact_unreadable(f, path, -EBADMSG, why, "%s", summary[i]);
        xmlFreeDoc(*doc);
        *doc = NULL;
        return NULL;
}

/* nvml.driver_version (kept in C for the GPUs' facts) and nvml.attached from the log element TOP. */
static void driver_facts(struct ctx *c, struct facts *f, xmlNode *top)
{
        const char *path = c->path;
        struct val dv = lookup(c, top, "driver_version");
        if (dv.st == V_OK) {
                fact_str(f, path, dv.s, "nvml.driver_version");
                c->driver = xstrdup(dv.s);
        } else if (dv.st == V_ABSENT)
                fact_absent(f, path, dv.s, "nvml.driver_version");
        else
                fact_unreadable(f, path, 0, dv.s, "nvml.driver_version");
        val_done(&dv);
        struct val av = lookup(c, top, "attached_gpus");
        uint64_t attached;
        if (av.st == V_OK && parse_num(av.s, NULL, 1, &attached) == 0)
                fact_uint(f, path, attached, "nvml.attached");
        else
                fact_unreadable(f, path, 0, av.st == V_OK ? "not a number" : av.s, "nvml.attached");
        val_done(&av);
}

/* The <gpu> elements of TOP with their PCI addresses (the id attribute, else pci/pci_bus_id),
 * sorted by address as NVML numbers them. Returns how many into *RET (caller frees). */
static size_t collect_gpus(struct ctx *c, xmlNode *top, struct gpu_node **ret)
{
        size_t n = 0, cap = 8;
        struct gpu_node *gpus = xcalloc(cap, sizeof(*gpus));
        for (xmlNode *g = top->children; g; g = g->next) {
                if (!is_elem(g, "gpu"))
                        continue;
                if (n == cap)
                        gpus = xrealloc(gpus, (cap *= 2) * sizeof(*gpus));
                struct gpu_node *gn = &gpus[n++];
                *gn = (struct gpu_node){.n = g};
                xmlChar *id = xmlGetProp(g, (const xmlChar *)"id");
                _cleanup_free_ char *alt = NULL;
                const char *bus = (const char *)id;
                if (!bus) {
                        struct val bv = lookup(c, g, "pci/pci_bus_id");
                        if (bv.st == V_OK)
                                alt = xstrdup(bv.s);
                        val_done(&bv);
                        bus = alt;
                }
                struct pci_addr pa;
                if (nvgpu_bus_id(bus, gn->addr) && pci_addr_parse(gn->addr, &pa)) {
                        gn->has_addr = true;
                        gn->dom = pa.dom;
                        gn->bus = pa.bus;
                        gn->dev = pa.dev;
                        gn->fn = pa.fn;
                }
                xmlFree(id);
        }
        qsort(gpus, n, sizeof(*gpus), cmp_gpu_node);
        *ret = gpus;
        return n;
}

int nvsmi_xml_facts(struct facts *f, const char *path)
{
        /* Live, nvml.lost lists the GPUs NVML reports lost; a capture has no such field, so the
         * same fact set is there with the reason (gather-live compares the two). */
        fact_absent(f, path, "an nvidia-smi -q -x capture does not say which GPUs NVML lost (only live NVML does)",
                    "nvml.lost");
        xmlDoc *doc;
        xmlNode *top = open_capture(f, path, &doc);
        if (!top)
                return -1;
        facts_set_handle(f, "nvidia-smi-xml", NULL, NULL);
        struct ctx c = {.path = path};
        const char *nvl;
        int rc = root_read_text(facts_root(f), NVLINK_STATUS_CAPTURE, &nvl, NULL);
        if (rc == 0)
                nvlink_status_parse(&c.nvl, nvl);
        else
                c.nvl_why = root_gone(rc) ? xstrdup("nvidia-smi -q -x does not report NVLink, and there is no "
                                                   "`nvidia-smi nvlink -s` capture under the root ("
                                                   NVLINK_STATUS_CAPTURE ")")
                                          : xasprintf(NVLINK_STATUS_CAPTURE ": %s", errno_name(rc));
        driver_facts(&c, f, top);
        struct gpu_node *gpus;
        size_t n = collect_gpus(&c, top, &gpus);
        for (size_t i = 0; i < n; i++)
                emit_gpu(&c, f, (unsigned)i, gpus[i].n, gpus[i].has_addr ? gpus[i].addr : NULL);
        fact_uint(f, path, n, "nvml.count");
        free(gpus);
        free(c.driver);
        free(c.nvl_why);
        nvlink_status_done(&c.nvl);
        xmlFreeDoc(doc);
        return (int)n;
}
