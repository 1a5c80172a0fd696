/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Xid events with their times out of kernel log text (xid-log.h). */
#include "facts/readers/xid-log.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "facts/readers/kmsg.h"

static void dev_reset(struct xid_dev *d)
{
        for (size_t i = 0; i < d->n; i++)
                free(d->v[i].msg);
        free(d->v);
}

void xid_log_done(struct xid_log *l)
{
        for (size_t i = 0; i < l->ndevs; i++)
                dev_reset(&l->devs[i]);
        free(l->devs);
        *l = (struct xid_log){0};
}

long xid_dev_last_reset(const struct xid_dev *dev)
{
        for (size_t i = dev->n; i > 0; i--)
                if (dev->v[i - 1].reset)
                        return (long)(i - 1);
        return -1;
}

char *xid_time_text(enum xid_clock clock, double t)
{
        if (clock == XID_CLOCK_BOOT)
                return xasprintf("boot+%.1fs", t);
        if (clock != XID_CLOCK_WALL)
                return xstrdup("unknown");
        time_t s = (time_t)t;
        struct tm tm;
        char buf[32];
        if (!gmtime_r(&s, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
                return xstrdup("unknown");
        return xstrdup(buf);
}

/* --- the time a line carries ------------------------------------------------------------------- */

/* "1234.567" (digits, optional fraction) filling [P, END): seconds. */
static bool boot_seconds(const char *p, const char *end, double *ret)
{
        while (p < end && *p == ' ')
                p++;
        if (p == end || !isdigit((unsigned char)*p))
                return false;
        char *e;
        errno = 0;
        double v = strtod(p, &e);
        if (errno || e != end || v < 0)
                return false;
        *ret = v;
        return true;
}

/* "Sun Feb 23 16:24:18 2025" (dmesg -T) filling [P, END). */
static bool ctime_seconds(const char *p, const char *end, double *ret)
{
        char buf[64];
        if ((size_t)(end - p) >= sizeof(buf))
                return false;
        memcpy(buf, p, (size_t)(end - p));
        buf[end - p] = '\0';
        struct tm tm = {0};
        char *e = strptime(buf, "%a %b %d %H:%M:%S %Y", &tm);
        if (!e || *e)
                return false;
        *ret = (double)timegm(&tm);
        return true;
}

/* An RFC 3339 stamp at the start of a syslog line, "2025-02-23T16:24:18.123456+00:00 host ...". */
static bool iso_seconds(const char *line, double *ret)
{
        struct tm tm = {0};
        const char *e = strptime(line, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!e)
                return false;
        double frac = 0;
        if (*e == '.') {
                char *f;
                frac = strtod(e, &f);
                e = f;
        }
        long off = 0;
        if (*e == '+' || *e == '-') {
                int h, m;
                if (sscanf(e + 1, "%2d:%2d", &h, &m) != 2)
                        return false;
                off = (*e == '-' ? -1 : 1) * (h * 3600L + m * 60L);
        } else if (*e != 'Z' && *e != ' ')
                return false;
        *ret = (double)timegm(&tm) + frac - (double)off;
        return true;
}

/* The time of LINE: a kmsg record's microseconds, an RFC 3339 prefix, else the first "[...]"
 * holding seconds since boot or a dmesg -T date. *TEXT is where the message starts (after a
 * record's ';'). */
static enum xid_clock line_time(const char *line, double *t, const char **text)
{
        unsigned long long usec;
        *text = line;
        if (kmsg_record_parse(line, &usec, text)) {
                *t = (double)usec / 1e6;
                return XID_CLOCK_BOOT;
        }
        if (iso_seconds(line, t))
                return XID_CLOCK_WALL;
        const char *open = strchr(line, '['), *close = open ? strchr(open, ']') : NULL;
        if (!close)
                return XID_CLOCK_NONE;
        if (boot_seconds(open + 1, close, t))
                return XID_CLOCK_BOOT;
        if (ctime_seconds(open + 1, close, t))
                return XID_CLOCK_WALL;
        return XID_CLOCK_NONE;
}

/* --- the Xid a line reports ---------------------------------------------------------------------- */

/*
 * The attribution in "NVRM: Xid (ATTR): CODE, ...", as the driver writes it (open-gpu-kernel-modules,
 * src/nvidia/src/kernel/gpu/rc/kernel_rc.c, krcReportXid): "PCI:%04x:%02x:%02x" for the device, with
 * " GPU-I:%02u" when the error belongs to a MIG GPU instance and " GPU-CI:%02u" for its compute
 * instance as well; drivers before the "PCI:" prefix wrote the address alone. P points after
 * "Xid ("; the device address (lower case) goes into ADDR, the MIG words, if any, into MIG ("" when
 * none). Returns what follows "):", or NULL when the text is not one of those forms.
 */
static const char *parse_attribution(const char *p, char addr[32], char mig[32])
{
        if (startswith(p, "PCI:"))
                p += 4;
        size_t alen = strcspn(p, " )");
        if (alen == 0 || alen >= 32)
                return NULL;
        for (size_t i = 0; i < alen; i++) {
                if (!(isxdigit((unsigned char)p[i]) || p[i] == ':' || p[i] == '.'))
                        return NULL;
                addr[i] = (char)tolower((unsigned char)p[i]);
        }
        addr[alen] = '\0';
        p += alen;
        mig[0] = '\0';
        static const char *const words[] = {" GPU-I:", " GPU-CI:"};
        for (size_t w = 0; w < ARRAY_SIZE(words); w++) {
                if (!startswith(p, words[w]))
                        continue;
                const char *num = p + strlen(words[w]);
                size_t nlen = strspn(num, "0123456789");
                if (nlen == 0 || nlen > 5)
                        return NULL;
                size_t used = strlen(mig);
                snprintf(mig + used, 32 - used, "%s%.*s", used ? " " : "", (int)(num + nlen - (p + 1)), p + 1);
                p = num + nlen;
        }
        if (p[0] != ')' || p[1] != ':')
                return NULL;
        return p + 2;
}

/* "NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., text", in any attribution form (above): the
 * device, the MIG instance, the code and where the text starts. False for any other line. */
static bool parse_xid(const char *text, char addr[32], char mig[32], unsigned *code, const char **msg)
{
        const char *p = strstr(text, "NVRM: Xid (");
        if (!p)
                return false;
        const char *q = parse_attribution(p + strlen("NVRM: Xid ("), addr, mig);
        if (!q)
                return false;
        while (*q == ' ')
                q++;
        char *end;
        errno = 0;
        unsigned long c = strtoul(q, &end, 10);
        if (end == q || errno || c > 100000)
                return false;
        *code = (unsigned)c;
        while (*end == ',' || *end == ' ')
                end++;
        *msg = end;
        return true;
}

/* Xid 154 "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)". */
static bool is_reset_marker(unsigned code, const char *msg)
{
        const char *to = code == 154 ? strstr(msg, "recovery action changed from ") : NULL;
        to = to ? strstr(to, " to 0x") : NULL;
        return to && strtoul(to + strlen(" to 0x"), NULL, 16) == 0;
}

static struct xid_dev *dev_of(struct xid_log *l, const char *addr)
{
        for (size_t i = 0; i < l->ndevs; i++)
                if (streq(l->devs[i].addr, addr))
                        return &l->devs[i];
        l->devs = xrealloc(l->devs, (l->ndevs + 1) * sizeof(*l->devs));
        struct xid_dev *d = &l->devs[l->ndevs++];
        *d = (struct xid_dev){0};
        snprintf(d->addr, sizeof(d->addr), "%s", addr);
        return d;
}

void xid_log_line(struct xid_log *l, const char *line, size_t len)
{
        while (len && line[len - 1] == '\r')
                len--; /* a log copied through Windows tools ends its lines in CR LF */
        _cleanup_free_ char *s = xstrndup(line, len);
        const char *text;
        double t = 0;
        enum xid_clock clock = line_time(s, &t, &text);
        if (strstr(text, "Linux version ") && !strstr(text, "NVRM")) {
                xid_log_done(l); /* a new boot: "since boot" starts here */
                return;
        }
        if (clock != XID_CLOCK_NONE && (!l->have_newest[clock] || t > l->newest[clock])) {
                l->newest[clock] = t;
                l->have_newest[clock] = true;
        }
        char addr[32], mig[32];
        unsigned code;
        const char *msg;
        if (!parse_xid(text, addr, mig, &code, &msg))
                return;
        if (l->events >= XID_LOG_MAX) {
                l->truncated = true;
                return;
        }
        struct xid_dev *d = dev_of(l, addr);
        if (d->n == d->cap)
                d->v = xrealloc(d->v, (d->cap = d->cap ? 2 * d->cap : 8) * sizeof(*d->v));
        d->v[d->n++] = (struct xid_event){
                .code = code,
                .clock = clock,
                .t = t,
                .reset = is_reset_marker(code, msg),
                .msg = xstrndup(msg, 200),
        };
        snprintf(d->v[d->n - 1].mig, sizeof(d->v[d->n - 1].mig), "%s", mig);
        l->events++;
}

void xid_log_text(struct xid_log *l, const char *data)
{
        for (const char *line = data; *line;) {
                size_t len = strcspn(line, "\n");
                xid_log_line(l, line, len);
                line += len;
                line += *line == '\n';
        }
}
