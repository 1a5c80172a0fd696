/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "base/parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

int parse_integer(const char *s, bool *neg, uint64_t *mag)
{
        if (!s)
                return -ENODATA;
        while (isspace((unsigned char)*s))
                s++;
        if (!*s)
                return -ENODATA;
        bool n = false;
        if (*s == '-' || *s == '+') {
                n = *s == '-';
                s++;
        }
        unsigned base = 10;
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                base = 16;
                s += 2;
        }
        if (!isxdigit((unsigned char)*s))
                return -EINVAL;
        uint64_t v = 0;
        for (; *s && !isspace((unsigned char)*s); s++) {
                unsigned d;
                if (isdigit((unsigned char)*s))
                        d = (unsigned)(*s - '0');
                else if (base == 16 && isxdigit((unsigned char)*s))
                        d = (unsigned)(tolower((unsigned char)*s) - 'a' + 10);
                else
                        return -EINVAL;
                if (v > (UINT64_MAX - d) / base)
                        return -ERANGE;
                v = v * base + d;
        }
        while (isspace((unsigned char)*s))
                s++;
        if (*s)
                return -EINVAL;
        if (n && v > (uint64_t)INT64_MAX + 1)
                return -ERANGE;
        *neg = n && v != 0;
        *mag = v;
        return 0;
}

int parse_u64(const char *s, uint64_t *ret)
{
        bool neg;
        uint64_t v;
        int rc = parse_integer(s, &neg, &v);
        if (rc < 0)
                return rc;
        if (neg)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_i64(const char *s, int64_t *ret)
{
        bool neg;
        uint64_t v;
        int rc = parse_integer(s, &neg, &v);
        if (rc < 0)
                return rc;
        if (!neg && v > (uint64_t)INT64_MAX)
                return -ERANGE;
        *ret = neg ? (int64_t)(0 - v) : (int64_t)v;
        return 0;
}

/* Bound on CPU (and NUMA node) numbers and on a list's length: CONFIG_NR_CPUS is at most 8192 on
 * any architecture's Kconfig (x86 with MAXSMP, powerpc; arm64 4096) and MAX_NUMNODES 1024, so
 * 65,536 leaves room and keeps a hostile "0-N" list from expanding to millions of entries. */
#define CPULIST_MAX (1u << 16)

static int cmp_unsigned(const void *a, const void *b)
{
        unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
        return x < y ? -1 : x > y;
}

static int read_uint(const char **p, unsigned *ret)
{
        if (!isdigit((unsigned char)**p))
                return -EINVAL;
        uint64_t v = 0;
        while (isdigit((unsigned char)**p)) {
                v = v * 10 + (uint64_t)(**p - '0');
                if (v >= CPULIST_MAX)
                        return -ERANGE;
                (*p)++;
        }
        *ret = (unsigned)v;
        return 0;
}

int parse_cpulist(const char *s, unsigned **ret)
{
        size_t n = 0, cap = 0;
        bool sorted = true; /* every range so far started above the last CPU listed */
        unsigned *v = NULL;
        const char *p = s;
        while (isspace((unsigned char)*p))
                p++;
        /* An empty list is valid (a memory-only NUMA node has no CPUs). */
        while (*p && !isspace((unsigned char)*p)) {
                unsigned a, b;
                int rc = read_uint(&p, &a);
                if (rc < 0)
                        goto fail_rc;
                b = a;
                if (*p == '-') {
                        p++;
                        rc = read_uint(&p, &b);
                        if (rc < 0)
                                goto fail_rc;
                        if (b < a) {
                                rc = -EINVAL;
                                goto fail_rc;
                        }
                }
                if (n > 0 && a <= v[n - 1])
                        sorted = false;
                if (n + (b - a + 1) > CPULIST_MAX) {
                        rc = -ERANGE;
                        goto fail_rc;
                }
                GREEDY_REALLOC(v, cap, n + (b - a + 1), 64);
                for (unsigned c = a; c <= b; c++)
                        v[n++] = c;
                if (*p == ',')
                        p++;
                else if (*p && !isspace((unsigned char)*p)) {
                        rc = -EINVAL;
                        goto fail_rc;
                }
                continue;
        fail_rc:
                free(v);
                return rc;
        }
        while (isspace((unsigned char)*p))
                p++;
        if (*p) {
                free(v);
                return -EINVAL;
        }
        /* The kernel prints lists in ascending order: sort only what is not (a sort of a
         * 384-CPU list per read was measurable; a fuzzed "0-1000000" spent most of its time there). */
        if (!sorted)
                qsort_safe(v, n, sizeof(*v), cmp_unsigned);
        if (ret)
                *ret = v;
        else
                free(v);
        return (int)n;
}

char *format_cpulist(const unsigned *cpus, size_t n)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        for (size_t i = 0; i < n;) {
                size_t j = i;
                while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
                        j++;
                if (b.len)
                        sbuf_add(&b, ",");
                if (j == i)
                        sbuf_addf(&b, "%u", cpus[i]);
                else
                        sbuf_addf(&b, "%u-%u", cpus[i], cpus[j]);
                i = j + 1;
        }
        return sbuf_steal(&b);
}

int parse_bracketed(const char *s, char **ret_active, struct strv *ret_all)
{
        _cleanup_strv_ struct strv all = {0};
        _cleanup_free_ char *active = NULL;
        const char *p = s;
        for (;;) {
                while (isspace((unsigned char)*p))
                        p++;
                if (!*p)
                        break;
                bool br = *p == '[';
                if (br)
                        p++;
                size_t len = 0;
                while (p[len] && !isspace((unsigned char)p[len]) && p[len] != ']' && p[len] != '[')
                        len++;
                if (len == 0 || (br && p[len] != ']') || (!br && p[len] == ']') || p[len] == '[')
                        return -EINVAL;
                if (br && active)
                        return -EINVAL; /* two active values: garbage */
                char *w = xstrndup(p, len);
                if (br)
                        active = xstrdup(w);
                strv_push(&all, w);
                p += len + (br ? 1 : 0);
        }
        if (!active)
                return all.n ? -EINVAL : -ENODATA;
        *ret_active = TAKE_PTR(active);
        if (ret_all) {
                *ret_all = all;
                all = (struct strv){0};
        }
        return 0;
}

int parse_link_speed(const char *s, unsigned *ret_mts)
{
        while (isspace((unsigned char)*s))
                s++;
        if (!*s || startswith(s, "Unknown"))
                return -ENODATA;
        unsigned whole = 0, frac = 0, fdigits = 0;
        if (!isdigit((unsigned char)*s))
                return -EINVAL;
        while (isdigit((unsigned char)*s)) {
                whole = whole * 10 + (unsigned)(*s++ - '0');
                if (whole > 1000)
                        return -ERANGE;
        }
        if (*s == '.') {
                s++;
                while (isdigit((unsigned char)*s)) {
                        if (fdigits < 3) {
                                frac = frac * 10 + (unsigned)(*s - '0');
                                fdigits++;
                        }
                        s++;
                }
        }
        while (fdigits < 3) {
                frac *= 10;
                fdigits++;
        }
        while (*s == ' ')
                s++;
        if (!startswith(s, "GT/s"))
                return -EINVAL;
        s += 4;
        while (isspace((unsigned char)*s))
                s++;
        if (*s && !startswith(s, "PCIe"))
                return -EINVAL;
        *ret_mts = whole * 1000 + frac;
        return 0;
}

char *unescape_octal(char *s)
{
        char *w = s;
        for (char *r = s; *r;) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
                    r[3] <= '7') {
                        *w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
                        r += 4;
                } else
                        *w++ = *r++;
        }
        *w = '\0';
        return s;
}

int parse_size(const char *s, uint64_t base, uint64_t *ret)
{
        char *end;
        if (!s || !isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno)
                return -ERANGE;
        unsigned shift = 0;
        switch (*end) {
        case '\0': break;
        case 'k': case 'K': shift = 10; end++; break;
        case 'm': case 'M': shift = 20; end++; break;
        case 'g': case 'G': shift = 30; end++; break;
        case 't': case 'T': shift = 40; end++; break;
        case '%':
                if (v > 100)
                        return -ERANGE;
                *ret = base / 100 * v;
                return end[1] ? -EINVAL : 0;
        default: return -EINVAL;
        }
        if (*end)
                return -EINVAL;
        if (shift && v > (UINT64_MAX >> shift))
                return -ERANGE;
        *ret = (uint64_t)v << shift;
        return 0;
}

/* N (1..8) hex digits at *P into *RET, *P moved past them; false when there are not exactly N
 * (MIN..N for the domain) before SEP. */
static bool hex_field(const char **p, size_t min, size_t max, char sep, unsigned *ret)
{
        size_t n = 0;
        unsigned v = 0;
        for (; n < max && isxdigit((unsigned char)(*p)[n]); n++)
                v = v << 4 | (unsigned)(isdigit((unsigned char)(*p)[n]) ? (*p)[n] - '0' : (tolower((unsigned char)(*p)[n]) - 'a' + 10));
        if (n < min || (*p)[n] != sep)
                return false;
        *p += n + (sep ? 1 : 0);
        *ret = v;
        return true;
}

bool parse_name_index(const char *name, const char *prefix, unsigned *ret)
{
        if (!startswith(name, prefix))
                return false;
        const char *d = name + strlen(prefix);
        size_t n = strspn(d, "0123456789");
        if (n == 0 || d[n] || (d[0] == '0' && n > 1) || n > 10)
                return false;
        uint64_t v = 0;
        for (size_t k = 0; k < n; k++)
                v = v * 10 + (uint64_t)(d[k] - '0');
        if (v > UINT_MAX)
                return false;
        *ret = (unsigned)v;
        return true;
}

bool pci_addr_parse(const char *s, struct pci_addr *ret)
{
        struct pci_addr a;
        if (!s || !hex_field(&s, 4, 8, ':', &a.dom) || !hex_field(&s, 2, 2, ':', &a.bus) ||
            !hex_field(&s, 2, 2, '.', &a.dev) || !hex_field(&s, 1, 1, '\0', &a.fn) || a.dev > 31 || a.fn > 7)
                return false;
        *ret = a;
        return true;
}

int pci_addr_cmp(const struct pci_addr *a, const struct pci_addr *b)
{
        const unsigned ka[] = {a->dom, a->bus, a->dev, a->fn}, kb[] = {b->dom, b->bus, b->dev, b->fn};
        for (size_t i = 0; i < ARRAY_SIZE(ka); i++)
                if (ka[i] != kb[i])
                        return ka[i] < kb[i] ? -1 : 1;
        return 0;
}

/* One resource limit of limits.conf(5) or systemd.exec(5): "infinity" or a size with K M G T P E
 * (1024-based); a size too big for 64 bits is unlimited. */
int rlimit_value_parse(const char *s, bool *unlimited, uint64_t *ret)
{
        *unlimited = streq(s, "infinity");
        *ret = 0;
        if (*unlimited)
                return 0;
        char *end;
        if (!isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno)
                return -ERANGE;
        static const char units[] = "KMGTPE";
        unsigned shift = 0;
        if (*end) {
                const char *u = strchr(units, toupper((unsigned char)*end));
                if (!u || end[1])
                        return -EINVAL;
                shift = 10 * (unsigned)(u - units + 1);
        }
        *unlimited = shift && v > (UINT64_MAX >> shift);
        *ret = *unlimited ? 0 : (uint64_t)v << shift;
        return 0;
}

/* systemd.exec(5) LimitCPU= and friends: "SOFT:HARD", or one value for both. */
int rlimit_pair_parse(const char *value, struct rlimit_pair *ret)
{
        _cleanup_free_ char *soft = xstrdup(value);
        char *colon = strchr(soft, ':');
        const char *hard = colon ? colon + 1 : soft;
        if (colon)
                *colon = '\0';
        if (rlimit_value_parse(soft, &ret->soft_unlimited, &ret->soft) < 0 ||
            rlimit_value_parse(hard, &ret->hard_unlimited, &ret->hard) < 0)
                return -EINVAL;
        return 0;
}
