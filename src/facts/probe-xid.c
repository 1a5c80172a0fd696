/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * xid.*: NVIDIA Xid events since boot, from the kernel log. The driver reports GPU faults as
 *   NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s ...
 * (older drivers: "Xid (0000:01:00): 31, ..."), one line per event, naming the GPU by PCI domain,
 * bus and device. What a code means and what the operator does about it is data:
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
#include <unistd.h>

#include "parse.h"
#include "probes.h"

#define XID_KMSG "/dev/kmsg"
#define XID_MAX_EVENTS 100000 /* a storm of one code is still one fact; bound the work */

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
                if (c->n == cap)
                        c->v = xrealloc(c->v, (cap = cap ? cap * 2 : 64) * sizeof(*c->v));
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

/* --- parsing ------------------------------------------------------------------------------------ */

struct dev {
        char addr[32];
        unsigned *codes; /* distinct, in order of first appearance */
        size_t ncodes;
        uint64_t events;
        char *last;
};

struct scan {
        struct dev *devs;
        size_t ndevs;
        uint64_t events;
        bool truncated;
};

static void scan_reset(struct scan *s)
{
        for (size_t i = 0; i < s->ndevs; i++) {
                free(s->devs[i].codes);
                free(s->devs[i].last);
        }
        free(s->devs);
        *s = (struct scan){0};
}

/* One line of kernel log text (a /dev/kmsg record, dmesg or syslog line). */
static void scan_line(struct scan *s, const char *line, size_t len)
{
        _cleanup_free_ char *l = xstrndup(line, len);
        if (strstr(l, "Linux version ") && !strstr(l, "NVRM")) {
                scan_reset(s); /* a new boot: "since boot" starts here */
                return;
        }
        const char *p = strstr(l, "NVRM: Xid (");
        if (!p)
                return;
        p += strlen("NVRM: Xid (");
        if (startswith(p, "PCI:"))
                p += 4;
        const char *close = strchr(p, ')');
        if (!close || close == p || (size_t)(close - p) >= 32 || close[1] != ':')
                return;
        char addr[32];
        memcpy(addr, p, (size_t)(close - p));
        addr[close - p] = '\0';
        for (char *a = addr; *a; a++) {
                if (!((*a >= '0' && *a <= '9') || (*a >= 'a' && *a <= 'f') || (*a >= 'A' && *a <= 'F') || *a == ':' ||
                      *a == '.'))
                        return;
                if (*a >= 'A' && *a <= 'F')
                        *a = (char)(*a - 'A' + 'a');
        }
        const char *q = close + 2;
        while (*q == ' ')
                q++;
        char *end;
        errno = 0;
        unsigned long code = strtoul(q, &end, 10);
        if (end == q || errno || code > 100000)
                return;
        if (s->events >= XID_MAX_EVENTS) {
                s->truncated = true;
                return;
        }
        const char *msg = end;
        while (*msg == ',' || *msg == ' ')
                msg++;
        struct dev *d = NULL;
        for (size_t i = 0; i < s->ndevs && !d; i++)
                if (streq(s->devs[i].addr, addr))
                        d = &s->devs[i];
        if (!d) {
                s->devs = xrealloc(s->devs, (s->ndevs + 1) * sizeof(*s->devs));
                d = &s->devs[s->ndevs++];
                *d = (struct dev){0};
                snprintf(d->addr, sizeof(d->addr), "%s", addr);
        }
        bool seen = false;
        for (size_t i = 0; i < d->ncodes; i++)
                seen |= d->codes[i] == code;
        if (!seen) {
                d->codes = xrealloc(d->codes, (d->ncodes + 1) * sizeof(*d->codes));
                d->codes[d->ncodes++] = (unsigned)code;
        }
        d->events++;
        s->events++;
        free(d->last);
        d->last = xasprintf("%lu, %.200s", code, msg);
}

static void scan_text(struct scan *s, const char *data)
{
        for (const char *line = data; *line;) {
                size_t len = strcspn(line, "\n");
                scan_line(s, line, len);
                line += len;
                line += *line == '\n';
        }
}

/* /dev/kmsg: one record per read(); "PRI,SEQ,TS,FLAGS;text\n" plus " KEY=value" continuation lines. */
static int scan_kmsg(struct facts *f, struct scan *s)
{
        int fd = root_open(facts_root(f), XID_KMSG, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
        if (fd < 0)
                return fd;
        char buf[8192 + 1];
        for (unsigned records = 0; records < 10u * XID_MAX_EVENTS; records++) {
                ssize_t n = read(fd, buf, sizeof(buf) - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EPIPE)
                        continue; /* overwritten while we read: the next read resumes */
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0) {
                        int err = -errno;
                        close(fd);
                        return err;
                }
                if (n == 0)
                        break;
                buf[n] = '\0';
                const char *text = strchr(buf, ';');
                text = text ? text + 1 : buf;
                scan_line(s, text, strcspn(text, "\n"));
        }
        close(fd);
        return 0;
}

static int cmp_uint(const void *x, const void *y)
{
        unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;
        return a < b ? -1 : a > b;
}

/* Codes of all devices (distinct, sorted) whose catalogue severity is SEV ("" = all, "?" = not in
 * the catalogue), as a comma list, or "none". */
static char *codes_where(const struct scan *s, const struct xid_catalog *c, const char *sev)
{
        unsigned *all = NULL;
        size_t n = 0;
        for (size_t i = 0; i < s->ndevs; i++)
                for (size_t k = 0; k < s->devs[i].ncodes; k++) {
                        unsigned code = s->devs[i].codes[k];
                        const struct xid_entry *e = c ? lookup_code(c, code) : NULL;
                        bool want = !*sev || (streq(sev, "?") ? !e : e && streq(e->severity, sev));
                        bool dup = false;
                        for (size_t j = 0; j < n; j++)
                                dup |= all[j] == code;
                        if (want && !dup) {
                                all = xrealloc(all, (n + 1) * sizeof(*all));
                                all[n++] = code;
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

static void emit(struct facts *f, const char *src, const struct scan *s)
{
        const struct xid_catalog *c = catalog(f);
        fact_str(f, src, src, "xid.source");
        fact_uint(f, src, s->events, "xid.events");
        _cleanup_free_ char *codes = codes_where(s, NULL, "");
        fact_str(f, src, codes, "xid.codes");
        static const char *const sev[] = {"critical", "warning", "?"};
        static const char *const names[] = {"xid.critical", "xid.warning", "xid.unknown"};
        for (size_t i = 0; i < ARRAY_SIZE(sev); i++) {
                if (c->error) {
                        fact_unreadable(f, c->path ? c->path : "rules/xid-catalog.tsv", 0, c->error, "%s", names[i]);
                        continue;
                }
                _cleanup_free_ char *v = codes_where(s, c, sev[i]);
                fact_str(f, src, v, "%s", names[i]);
        }
        struct sbuf devs = {0};
        for (size_t i = 0; i < s->ndevs; i++) {
                const struct dev *d = &s->devs[i];
                sbuf_addf(&devs, "%s%s", i ? "," : "", d->addr);
                unsigned *sorted = xmalloc((d->ncodes + 1) * sizeof(*sorted));
                memcpy(sorted, d->codes, d->ncodes * sizeof(*sorted));
                qsort(sorted, d->ncodes, sizeof(*sorted), cmp_uint);
                struct sbuf cs = {0}, acts = {0};
                for (size_t k = 0; k < d->ncodes; k++) {
                        sbuf_addf(&cs, "%s%u", k ? "," : "", sorted[k]);
                        const struct xid_entry *e = c->error ? NULL : lookup_code(c, sorted[k]);
                        sbuf_addf(&acts, "%s%u:%s", k ? "," : "", sorted[k], e ? e->action : "UNKNOWN");
                }
                fact_str(f, src, cs.s, "xid.%s.codes", d->addr);
                fact_uint(f, src, d->events, "xid.%s.events", d->addr);
                if (c->error)
                        fact_unreadable(f, c->path ? c->path : "rules/xid-catalog.tsv", 0, c->error, "xid.%s.actions", d->addr);
                else
                        fact_str(f, src, acts.s, "xid.%s.actions", d->addr);
                fact_str(f, src, d->last, "xid.%s.last", d->addr);
                free(sbuf_steal(&cs));
                free(sbuf_steal(&acts));
                free(sorted);
        }
        fact_str(f, src, s->ndevs ? devs.s : "none", "xid.devices");
        free(sbuf_steal(&devs));
}

static void all_facts(struct facts *f, const char *src, bool absent, int err, const char *why)
{
        static const char *const names[] = {"xid.source", "xid.events", "xid.codes", "xid.critical", "xid.warning",
                                            "xid.unknown", "xid.devices"};
        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (absent)
                        fact_absent(f, src, why, "%s", names[i]);
                else
                        fact_unreadable(f, src, err, why, "%s", names[i]);
}

static int xid_run(struct facts *f)
{
        struct root *r = facts_root(f);
        struct scan s = {0};
        if (root_is_live(r)) {
                int rc = scan_kmsg(f, &s);
                if (rc < 0) {
                        all_facts(f, XID_KMSG, false, rc,
                                  rc == -EPERM || rc == -EACCES ? "reading the kernel log needs root or CAP_SYSLOG "
                                                                  "(kernel.dmesg_restrict)"
                                                                : NULL);
                        scan_reset(&s);
                        return 0;
                }
                emit(f, XID_KMSG, &s);
                scan_reset(&s);
                return 0;
        }
        for (size_t i = 0; i < ARRAY_SIZE(root_logs); i++) {
                const char *data;
                int rc = root_read(r, root_logs[i], &data, NULL);
                if (root_gone(rc))
                        continue;
                if (rc < 0) {
                        all_facts(f, root_logs[i], false, rc, NULL);
                        return 0;
                }
                scan_text(&s, data);
                emit(f, root_logs[i], &s);
                scan_reset(&s);
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
