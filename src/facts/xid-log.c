/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Xid events with their times out of kernel log text (xid-log.h). */
#include "xid-log.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

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
        unsigned prio, seq;
        int n = 0;
        const char *semi = strchr(line, ';');
        *text = line;
        if (semi && sscanf(line, "%u,%u,%llu,%n", &prio, &seq, &usec, &n) == 3 && n > 0 && line + n <= semi) {
                *text = semi + 1;
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

/* "NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., text" (older drivers: "Xid (0000:01:00): 31,
 * ..."): the device (lower case), the code and where the text starts. False for any other line. */
static bool parse_xid(const char *text, char addr[32], unsigned *code, const char **msg)
{
        const char *p = strstr(text, "NVRM: Xid (");
        if (!p)
                return false;
        p += strlen("NVRM: Xid (");
        if (startswith(p, "PCI:"))
                p += 4;
        const char *close = strchr(p, ')');
        if (!close || close == p || (size_t)(close - p) >= 32 || close[1] != ':')
                return false;
        memcpy(addr, p, (size_t)(close - p));
        addr[close - p] = '\0';
        for (char *a = addr; *a; a++) {
                if (!(isxdigit((unsigned char)*a) || *a == ':' || *a == '.'))
                        return false;
                *a = (char)tolower((unsigned char)*a);
        }
        const char *q = close + 2;
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
        char addr[32];
        unsigned code;
        const char *msg;
        if (!parse_xid(text, addr, &code, &msg))
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
