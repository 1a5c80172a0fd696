/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * xid.*: NVIDIA Xid events since boot, from the kernel log. The driver reports GPU faults as
 *   NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s ...
 * (older drivers: "Xid (0000:01:00): 31, ..."; on a MIG GPU "Xid (PCI:0000:01:00 GPU-I:05): 94, ..."
 * and "... GPU-I:05 GPU-CI:00): ..."), one line per event, naming the GPU by PCI domain, bus and
 * device. What a code means and what the operator does about it is data:
 * rules/xid-catalog.tsv, from NVIDIA's Xid documentation.
 *
 * Sources: on the live machine /dev/kmsg, read without blocking (O_NONBLOCK: read() returns one
 * record at a time and EAGAIN at the end; EPIPE when the ring overwrote a record, which is skipped).
 * Under --root the first of var/lib/llmtune/captures/kmsg.txt (what `gather` writes),
 * var/log/kern.log, var/log/dmesg; a file that spans several boots counts only the lines after the
 * last "Linux version" banner, so "since boot" means the last boot in the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/parse.h"
#include "facts/probes/probes.h"
#include "facts/readers/kmsg.h"
#include "facts/readers/xid-log.h"

#define XID_KMSG "/dev/kmsg"

static const char *const root_logs[] = {"/var/lib/llmtune/captures/kmsg.txt", "/var/log/kern.log", "/var/log/dmesg"};

struct xid_entry {
        unsigned code;
        char severity[12]; /* critical | warning | info */
        char action[24];
};

struct xid_catalog {
        struct xid_entry *v;
        size_t n;
        char *error; /* why it could not be loaded */
        char *path;
};

static void catalog_free(void *p)
{
        struct xid_catalog *c = p;
        if (!c)
                return;
        free(c->v);
        free(c->error);
        free(c->path);
        free(c);
}

/* "code<TAB>severity<TAB>action<TAB>meaning"; '#' comments. -EBADMSG with the line on garbage. */
static int catalog_parse(struct xid_catalog *c, const char *data)
{
        size_t cap = 0;
        unsigned lineno = 0;
        for (const char *line = data; *line; line += strcspn(line, "\n"), line += *line == '\n') {
                lineno++;
                size_t len = strcspn(line, "\n");
                if (len == 0 || line[0] == '#')
                        continue;
                _cleanup_free_ char *l = xstrndup(line, len);
                char *f[4] = {0}, *save = NULL;
                int nf = 0;
                for (char *t = strtok_r(l, "\t", &save); t && nf < 4; t = strtok_r(NULL, "\t", &save))
                        f[nf++] = t;
                uint64_t code;
                if (nf < 4 || parse_u64(f[0], &code) < 0 || code > 100000 || strlen(f[1]) >= 12 || strlen(f[2]) >= 24 ||
                    !(streq(f[1], "critical") || streq(f[1], "warning") || streq(f[1], "info"))) {
                        c->error = xasprintf("line %u is not \"code<TAB>critical|warning|info<TAB>ACTION<TAB>meaning\"", lineno);
                        return -EBADMSG;
                }
                GREEDY_REALLOC(c->v, cap, c->n + 1, 64);
                struct xid_entry *e = &c->v[c->n++];
                e->code = (unsigned)code;
                snprintf(e->severity, sizeof(e->severity), "%s", f[1]);
                snprintf(e->action, sizeof(e->action), "%s", f[2]);
        }
        return c->n ? 0 : -ENODATA;
}

static const struct xid_catalog *catalog(struct facts *f)
{
        struct xid_catalog *c = facts_handle(f, "xid-catalog");
        if (c)
                return c;
        c = xcalloc(1, sizeof(*c));
        const char *dir = facts_handle(f, "datadir");
        if (!dir)
                c->error = xstrdup("data directory unknown: rules/xid-catalog.tsv not found");
        else {
                c->path = xasprintf("%s/rules/xid-catalog.tsv", dir);
                struct root *host;
                /* the catalogue is llmtune's own data, read from the host, never from --root */
                if (root_new("/", &host) == 0) {
                        const char *data;
                        int rc = root_read(host, c->path, &data, NULL);
                        if (rc < 0)
                                c->error = xasprintf("%s: %s", c->path, errno_name(rc));
                        else if (catalog_parse(c, data) < 0 && !c->error)
                                c->error = xasprintf("%s: no entries", c->path);
                        root_free(host);
                } else
                        c->error = xstrdup("cannot open / to read the catalogue");
        }
        facts_set_handle(f, "xid-catalog", c, catalog_free);
        return c;
}

static const struct xid_entry *lookup_code(const struct xid_catalog *c, unsigned code)
{
        for (size_t i = 0; i < c->n; i++)
                if (c->v[i].code == code)
                        return &c->v[i];
        return NULL;
}

/* --- reading ------------------------------------------------------------------------------------- */

static int kmsg_line(char *line, size_t len, void *userdata)
{
        xid_log_line(userdata, line, len);
        return 0;
}

/* /dev/kmsg (facts/readers/kmsg.h), at most ten times the events kept. */
static int read_kmsg(struct facts *f, struct xid_log *l)
{
        _cleanup_close_ int fd = root_open(facts_root(f), XID_KMSG, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
        if (fd < 0)
                return fd;
        return kmsg_read_records(fd, 10u * XID_LOG_MAX, kmsg_line, l);
}

/* --- what the events say ----------------------------------------------------------------------- */

static int cmp_uint(const void *x, const void *y)
{
        unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;
        return a < b ? -1 : a > b;
}

static const char *severity_of(const struct xid_catalog *c, unsigned code)
{
        const struct xid_entry *e = lookup_code(c, code);
        return e ? e->severity : "?";
}

/* Is event I of D one that still holds: after the GPU's last reset, and not the reset itself? */
static bool in_effect(const struct xid_dev *d, size_t i)
{
        return !d->v[i].reset && (long)i > xid_dev_last_reset(d);
}

/* The distinct codes (sorted, comma list, or "none") of the events of DEVS (all when DEV is NULL,
 * else that one) that pass: all since boot (EFFECT false), or in effect whose catalogue severity is
 * SEV ("?" = not in the catalogue). */
static char *codes_of(const struct xid_log *l, const struct xid_dev *dev, const struct xid_catalog *c, bool effect,
                      const char *sev)
{
        unsigned *all = NULL;
        size_t n = 0;
        for (size_t k = 0; k < l->ndevs; k++) {
                const struct xid_dev *d = &l->devs[k];
                for (size_t i = 0; (!dev || d == dev) && i < d->n; i++) {
                        unsigned code = d->v[i].code;
                        if (effect && (!in_effect(d, i) || !streq(severity_of(c, code), sev)))
                                continue;
                        bool dup = false;
                        for (size_t j = 0; j < n && !dup; j++)
                                dup = all[j] == code;
                        if (!dup) {
                                all = xrealloc(all, (n + 1) * sizeof(*all));
                                all[n++] = code;
                        }
                }
        }
        if (!n)
                return xstrdup("none");
        qsort(all, n, sizeof(*all), cmp_uint);
        struct sbuf b = {0};
        for (size_t j = 0; j < n; j++)
                sbuf_addf(&b, "%s%u", j ? "," : "", all[j]);
        free(all);
        return sbuf_steal(&b);
}

/* --- the time now, against which ages are counted ------------------------------------------------ */

struct xid_now {
        double t[XID_CLOCK_MAX];
        bool have[XID_CLOCK_MAX];
        char *what; /* for xid.clock */
};

/* Seconds since boot from the root's /proc/uptime (the live machine's, or the one a capture holds);
 * without it, the last line of the log. Wall-clock times: the live clock, or under --root the
 * log's last wall-clock line. */
static void clock_now(struct facts *f, const struct xid_log *l, struct xid_now *now)
{
        struct root *r = facts_root(f);
        const char *up;
        double v;
        char *end;
        *now = (struct xid_now){0};
        struct sbuf what = {0};
        if (root_read(r, "/proc/uptime", &up, NULL) == 0 && (v = strtod(up, &end)) >= 0 && end != up) {
                now->t[XID_CLOCK_BOOT] = v;
                now->have[XID_CLOCK_BOOT] = true;
                sbuf_addf(&what, "uptime %.1f s (/proc/uptime)", v);
        } else if (l->have_newest[XID_CLOCK_BOOT]) {
                now->t[XID_CLOCK_BOOT] = l->newest[XID_CLOCK_BOOT];
                now->have[XID_CLOCK_BOOT] = true;
                sbuf_addf(&what, "the log's last line, boot+%.1fs (no /proc/uptime)", l->newest[XID_CLOCK_BOOT]);
        }
        if (root_runs_here(r)) {
                now->t[XID_CLOCK_WALL] = (double)time(NULL);
                now->have[XID_CLOCK_WALL] = true;
        } else if (l->have_newest[XID_CLOCK_WALL]) {
                now->t[XID_CLOCK_WALL] = l->newest[XID_CLOCK_WALL];
                now->have[XID_CLOCK_WALL] = true;
                _cleanup_free_ char *w = xid_time_text(XID_CLOCK_WALL, l->newest[XID_CLOCK_WALL]);
                sbuf_addf(&what, "%sthe log's last dated line, %s", what.len ? "; " : "", w);
        }
        now->what = what.len ? sbuf_steal(&what) : xstrdup("no time: the log has no timestamps");
}

/* Seconds between event E and now, or -1 when the log gives E no time. */
static double age_of(const struct xid_event *e, const struct xid_now *now)
{
        if (e->clock == XID_CLOCK_NONE || !now->have[e->clock])
                return -1;
        double a = now->t[e->clock] - e->t;
        return a < 0 ? 0 : a;
}

/* --- facts ----------------------------------------------------------------------------------------- */

static const char *const classes[] = {"critical", "warning", "?"};
static const char *const class_names[] = {"critical", "warning", "unknown"};

/* The events of D in effect of catalogue severity SEV: how many, the youngest's age; *UNTIMED is the
 * code of one the log gives no time (0: none). */
static uint64_t class_events(const struct xid_dev *d, const struct xid_catalog *c, const char *sev,
                             const struct xid_now *now, double *age, unsigned *untimed)
{
        uint64_t n = 0;
        *age = -1;
        *untimed = 0;
        for (size_t i = 0; i < d->n; i++) {
                if (!in_effect(d, i) || !streq(severity_of(c, d->v[i].code), sev))
                        continue;
                n++;
                double a = age_of(&d->v[i], now);
                if (a < 0)
                        *untimed = d->v[i].code;
                else if (*age < 0 || a < *age)
                        *age = a;
        }
        return n;
}

/* xid.ADDR.{critical,warning,unknown}{,_events,_age}: what holds on D since its last reset. */
static void emit_classes(struct facts *f, const char *src, const struct xid_log *l, const struct xid_dev *d,
                         const struct xid_catalog *c, const struct xid_now *now)
{
        for (size_t k = 0; k < ARRAY_SIZE(classes); k++) {
                const char *name = class_names[k];
                if (c->error) {
                        const char *cp = c->path ? c->path : "rules/xid-catalog.tsv";
                        fact_unreadable(f, cp, 0, c->error, "xid.%s.%s", d->addr, name);
                        fact_unreadable(f, cp, 0, c->error, "xid.%s.%s_events", d->addr, name);
                        fact_unreadable(f, cp, 0, c->error, "xid.%s.%s_age", d->addr, name);
                        continue;
                }
                _cleanup_free_ char *codes = codes_of(l, d, c, true, classes[k]);
                fact_str(f, src, codes, "xid.%s.%s", d->addr, name);
                double age;
                unsigned untimed;
                uint64_t n = class_events(d, c, classes[k], now, &age, &untimed);
                fact_uint(f, src, n, "xid.%s.%s_events", d->addr, name);
                if (!n)
                        fact_absent(f, src, "no such Xid since the GPU's last reset or boot", "xid.%s.%s_age", d->addr,
                                    name);
                else if (untimed) {
                        _cleanup_free_ char *why = xasprintf("the log gives Xid %u of %s no time", untimed, d->addr);
                        fact_unreadable(f, src, 0, why, "xid.%s.%s_age", d->addr, name);
                } else
                        fact_uint(f, src, (uint64_t)(age + 0.5), "xid.%s.%s_age", d->addr, name);
        }
}

/* xid.ADDR.code.C.{count,first,last,age,cleared}: the events of one code, collapsed. */
static void emit_code(struct facts *f, const char *src, const struct xid_dev *d, unsigned code,
                      const struct xid_now *now)
{
        uint64_t n = 0;
        const struct xid_event *first = NULL, *last = NULL;
        size_t last_i = 0;
        for (size_t i = 0; i < d->n; i++)
                if (d->v[i].code == code) {
                        n++;
                        first = first ? first : &d->v[i];
                        last = &d->v[i];
                        last_i = i;
                }
        _cleanup_free_ char *t0 = xid_time_text(first->clock, first->t), *t1 = xid_time_text(last->clock, last->t);
        fact_uint(f, src, n, "xid.%s.code.%u.count", d->addr, code);
        fact_str(f, src, t0, "xid.%s.code.%u.first", d->addr, code);
        fact_str(f, src, t1, "xid.%s.code.%u.last", d->addr, code);
        double age = age_of(last, now);
        if (age < 0)
                fact_unreadable(f, src, 0, "the log gives this event no time", "xid.%s.code.%u.age", d->addr, code);
        else
                fact_uint(f, src, (uint64_t)(age + 0.5), "xid.%s.code.%u.age", d->addr, code);
        fact_bool(f, src, (long)last_i < xid_dev_last_reset(d), "xid.%s.code.%u.cleared", d->addr, code);
}

/* Every fact of device D. */
static void emit_dev(struct facts *f, const char *src, const struct xid_log *l, const struct xid_dev *d,
                     const struct xid_catalog *c, const struct xid_now *now)
{
        _cleanup_free_ char *codes = codes_of(l, d, c, false, "");
        fact_str(f, src, codes, "xid.%s.codes", d->addr);
        fact_uint(f, src, d->n, "xid.%s.events", d->addr);
        struct sbuf acts = {0};
        for (const char *p = codes; *p && !streq(codes, "none");) {
                unsigned code = (unsigned)strtoul(p, (char **)&p, 10);
                p += *p == ',';
                const struct xid_entry *e = c->error ? NULL : lookup_code(c, code);
                sbuf_addf(&acts, "%s%u:%s", acts.len ? "," : "", code, e ? e->action : "UNKNOWN");
                emit_code(f, src, d, code, now);
        }
        if (c->error)
                fact_unreadable(f, c->path ? c->path : "rules/xid-catalog.tsv", 0, c->error, "xid.%s.actions", d->addr);
        else
                fact_str(f, src, acts.s, "xid.%s.actions", d->addr);
        free(sbuf_steal(&acts));
        const struct xid_event *e = &d->v[d->n - 1];
        _cleanup_free_ char *last = *e->mig ? xasprintf("%u (%s), %s", e->code, e->mig, e->msg)
                                             : xasprintf("%u, %s", e->code, e->msg);
        fact_str(f, src, last, "xid.%s.last", d->addr);
        long r = xid_dev_last_reset(d);
        _cleanup_free_ char *reset = r < 0 ? xstrdup("none") : xid_time_text(d->v[r].clock, d->v[r].t);
        fact_str(f, src, reset, "xid.%s.reset", d->addr);
        emit_classes(f, src, l, d, c, now);
}

static void emit(struct facts *f, const char *src, const struct xid_log *l)
{
        const struct xid_catalog *c = catalog(f);
        struct xid_now now;
        clock_now(f, l, &now);
        fact_str(f, src, src, "xid.source");
        fact_str(f, src, now.what, "xid.clock");
        fact_uint(f, src, l->events, "xid.events");
        _cleanup_free_ char *codes = codes_of(l, NULL, c, false, "");
        fact_str(f, src, codes, "xid.codes");
        for (size_t i = 0; i < ARRAY_SIZE(classes); i++) {
                if (c->error) {
                        fact_unreadable(f, c->path ? c->path : "rules/xid-catalog.tsv", 0, c->error, "xid.%s",
                                        class_names[i]);
                        continue;
                }
                _cleanup_free_ char *v = codes_of(l, NULL, c, true, classes[i]);
                fact_str(f, src, v, "xid.%s", class_names[i]);
        }
        struct sbuf devs = {0};
        for (size_t i = 0; i < l->ndevs; i++) {
                sbuf_addf(&devs, "%s%s", i ? "," : "", l->devs[i].addr);
                emit_dev(f, src, l, &l->devs[i], c, &now);
        }
        fact_str(f, src, l->ndevs ? devs.s : "none", "xid.devices");
        fact_uint(f, src, l->ndevs, "xid.count");
        free(sbuf_steal(&devs));
        free(now.what);
}

static void all_facts(struct facts *f, const char *src, bool absent, int err, const char *why)
{
        static const char *const names[] = {"xid.source", "xid.events", "xid.codes", "xid.critical", "xid.warning",
                                            "xid.unknown", "xid.devices", "xid.count", "xid.clock"};
        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (absent)
                        fact_absent(f, src, why, "%s", names[i]);
                else
                        fact_unreadable(f, src, err, why, "%s", names[i]);
}

static int xid_run(struct facts *f)
{
        struct root *r = facts_root(f);
        _cleanup_(xid_log_done) struct xid_log l = {0};
        if (root_runs_here(r)) { /* the kernel's own log: the tree's /dev/kmsg is this kernel's */
                int rc = read_kmsg(f, &l);
                if (rc < 0) {
                        all_facts(f, XID_KMSG, false, rc,
                                  rc == -EPERM || rc == -EACCES ? "reading the kernel log needs root or CAP_SYSLOG "
                                                                  "(kernel.dmesg_restrict)"
                                                                : NULL);
                        return 0;
                }
                emit(f, XID_KMSG, &l);
                return 0;
        }
        const char *data;
        size_t i;
        int rc = root_read_first(r, root_logs, ARRAY_SIZE(root_logs), &i, &data);
        if (rc == 0) {
                xid_log_text(&l, data);
                emit(f, root_logs[i], &l);
                return 0;
        }
        if (rc != -ENOENT) {
                all_facts(f, root_logs[i], false, rc, NULL);
                return 0;
        }
        all_facts(f, root_logs[1], true, 0,
                  "no kernel log under the root (var/lib/llmtune/captures/kmsg.txt, var/log/kern.log, var/log/dmesg)");
        return 0;
}

const struct probe probe_xid = {
        .name = "xid",
        .prefixes = {"xid."},
        .run = xid_run,
};
