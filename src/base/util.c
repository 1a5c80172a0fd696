/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static void oom(void)
{
        fputs("llmtune: out of memory\n", stderr);
        abort();
}

void *xmalloc(size_t n)
{
        void *p = malloc(n ? n : 1);
        if (!p)
                oom();
        return p;
}

void *xcalloc(size_t n, size_t m)
{
        void *p = calloc(n ? n : 1, m ? m : 1);
        if (!p)
                oom();
        return p;
}

void *xrealloc(void *p, size_t n)
{
        p = realloc(p, n ? n : 1);
        if (!p)
                oom();
        return p;
}

void *greedy_realloc(void *p, size_t *cap, size_t need, size_t size, size_t min)
{
        if (need <= *cap)
                return p;
        size_t n = *cap ? *cap : min ? min : 1;
        while (n < need)
                n = n > SIZE_MAX / 2 ? need : n * 2;
        if (n > SIZE_MAX / size)
                oom();
        *cap = n;
        return xrealloc(p, n * size);
}

char *xstrdup(const char *s)
{
        char *r = strdup(s ? s : "");
        if (!r)
                oom();
        return r;
}

char *xstrndup(const char *s, size_t n)
{
        char *r = strndup(s, n);
        if (!r)
                oom();
        return r;
}

char *xvasprintf(const char *fmt, va_list ap)
{
        /* Most results (fact names, sysfs paths) fit in a line: formatted once on the stack and
         * copied, which costs less than vasprintf(3)'s growing buffer and final realloc. */
        char line[256];
        va_list again;
        va_copy(again, ap);
        int n = vsnprintf(line, sizeof(line), fmt, ap);
        if (n < 0)
                oom();
        char *r = xmalloc((size_t)n + 1);
        if ((size_t)n < sizeof(line))
                memcpy(r, line, (size_t)n + 1);
        else if (vsnprintf(r, (size_t)n + 1, fmt, again) != n)
                oom();
        va_end(again);
        return r;
}

char *xasprintf(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *r = xvasprintf(fmt, ap);
        va_end(ap);
        return r;
}

bool glob_match(const char *pattern, const char *name)
{
        if (strpbrk(pattern, "[\\"))
                return fnmatch(pattern, name, 0) == 0;
        /* What follows the last wildcard ends the name: checked first, it turns most names away
         * ("cpu.policy.*.governor" against the other attributes of 384 policies) in one compare. */
        size_t pl = strlen(pattern), nl = strlen(name), tl = 0;
        while (tl < pl && pattern[pl - tl - 1] != '*' && pattern[pl - tl - 1] != '?')
                tl++;
        if (tl > nl || memcmp(pattern + pl - tl, name + nl - tl, tl) != 0)
                return false;
        /* The classic single-backtrack match: on a mismatch after a '*', let that '*' take one
         * byte more and retry from there; an earlier '*' never needs to move. */
        const char *star = NULL, *resume = NULL;
        while (*name) {
                if (*pattern == '*') {
                        star = ++pattern;
                        resume = name;
                } else if (*pattern == '?' || *pattern == *name) {
                        pattern++;
                        name++;
                } else if (star) {
                        pattern = star;
                        name = ++resume;
                } else
                        return false;
        }
        while (*pattern == '*')
                pattern++;
        return *pattern == '\0';
}

bool endswith(const char *s, const char *suffix)
{
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

int string_table_lookup(const char *const *table, size_t n, const char *s)
{
        for (size_t i = 0; i < n; i++)
                if (streq(table[i], s))
                        return (int)i;
        return -EINVAL;
}

void strv_push(struct strv *l, char *owned)
{
        GREEDY_REALLOC(l->v, l->cap, l->n + 2, 8);
        l->v[l->n++] = owned;
        l->v[l->n] = NULL;
}

void strv_add(struct strv *l, const char *s) { strv_push(l, xstrdup(s)); }

bool strv_contains(const struct strv *l, const char *s)
{
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->v[i], s))
                        return true;
        return false;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(struct strv *l)
{
        if (l->n > 1)
                qsort_safe(l->v, l->n, sizeof(char *), cmp_str);
}

char *strv_join(const struct strv *l, const char *sep)
{
        struct sbuf b = {0};
        for (size_t i = 0; i < l->n; i++) {
                if (i)
                        sbuf_add(&b, sep);
                sbuf_add(&b, l->v[i]);
        }
        return sbuf_steal(&b);
}

void strv_done(struct strv *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
        *l = (struct strv){0};
}

void strv_pop(struct strv *l)
{
        if (l->n) {
                free(l->v[--l->n]);
                l->v[l->n] = NULL;
        }
}

static void sbuf_grow(struct sbuf *b, size_t extra)
{
        if (b->len + extra + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 64;
                while (cap < b->len + extra + 1)
                        cap *= 2;
                b->s = xrealloc(b->s, cap);
                b->cap = cap;
        }
}

void sbuf_addn(struct sbuf *b, const char *s, size_t n)
{
        sbuf_grow(b, n);
        memcpy(b->s + b->len, s, n);
        b->len += n;
        b->s[b->len] = '\0';
}

void sbuf_add(struct sbuf *b, const char *s) { sbuf_addn(b, s, strlen(s)); }

void sbuf_addf(struct sbuf *b, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *s = xvasprintf(fmt, ap);
        va_end(ap);
        sbuf_add(b, s);
        free(s);
}

char *sbuf_steal(struct sbuf *b)
{
        char *s = b->s ? b->s : xstrdup("");
        *b = (struct sbuf){0};
        return s;
}

char *strip_trailing(char *s)
{
        size_t n = strlen(s);
        while (n && isspace((unsigned char)s[n - 1]))
                s[--n] = '\0';
        return s;
}

int natcmp(const char *a, const char *b)
{
        while (*a && *b) {
                if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
                        const char *as = a, *bs = b;
                        while (*as == '0' && isdigit((unsigned char)as[1]))
                                as++;
                        while (*bs == '0' && isdigit((unsigned char)bs[1]))
                                bs++;
                        const char *ae = as, *be = bs;
                        while (isdigit((unsigned char)*ae))
                                ae++;
                        while (isdigit((unsigned char)*be))
                                be++;
                        if (ae - as != be - bs)
                                return ae - as < be - bs ? -1 : 1;
                        int c = strncmp(as, bs, (size_t)(ae - as));
                        if (c)
                                return c;
                        a = ae;
                        b = be;
                        continue;
                }
                if (*a != *b)
                        return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
                a++;
                b++;
        }
        return *a ? 1 : *b ? -1 : 0;
}

bool line_next(struct line_iter *it)
{
        free(it->line);
        it->line = NULL;
        if (!it->p || !*it->p)
                return false;
        size_t len = strcspn(it->p, "\n");
        it->line = xstrndup(it->p, len);
        it->newline = it->p[len] == '\n';
        it->p += len + it->newline;
        it->lineno++;
        return true;
}

void line_iter_done(struct line_iter *it)
{
        free(it->line);
        it->line = NULL;
}

char *read_user_file_why(int rc, size_t max, const char *what)
{
        if (rc == -EINVAL)
                return xstrdup("not a regular file");
        if (rc == -EFBIG)
                return xasprintf("larger than %zu MiB: not %s", max >> 20, what);
        return xstrdup(strerror(-rc));
}

char *read_user_file_error(const char *path, int rc, size_t max, const char *what)
{
        _cleanup_free_ char *why = read_user_file_why(rc, max, what);
        return xasprintf("%s: %s", path, why);
}

int read_fd_capped(int fd, size_t max, char **ret, size_t *ret_len)
{
        size_t cap = 65536, len = 0;
        _cleanup_free_ char *buf = xmalloc(cap + 1);
        for (;;) {
                if (len == cap) {
                        if (cap > max)
                                break;
                        cap *= 2;
                        buf = xrealloc(buf, cap + 1);
                }
                ssize_t k = read(fd, buf + len, cap - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                len += (size_t)k;
        }
        if (len > max)
                return -EFBIG;
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int read_user_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return -EINVAL;
        return read_fd_capped(fd, max, ret, ret_len);
}
