/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/swaps.h"

#include <errno.h>

#include "base/parse.h"
#include "base/util.h"

/* The first field of LINE with its octal escapes decoded, or NULL for a blank line. */
static char *first_field(const char *line)
{
        const char *s = line + strspn(line, " \t");
        size_t n = strcspn(s, " \t");
        return n ? unescape_octal(xstrndup(s, n)) : NULL;
}

static void parse_area(struct swap_area *a)
{
        _cleanup_free_ char *copy = strip_trailing(xstrdup(a->line));
        char *fields[6] = {0}, *save = NULL;
        size_t k = 0;
        for (char *t = strtok_r(copy, " \t", &save); t && k < ARRAY_SIZE(fields); t = strtok_r(NULL, " \t", &save))
                fields[k++] = t;
        int rc = -EBADMSG;
        if (k == 5 && (rc = parse_u64(fields[2], &a->size)) == 0 && (rc = parse_u64(fields[3], &a->used)) == 0 &&
            (rc = parse_i64(fields[4], &a->priority)) == 0 && (a->size > UINT64_MAX / 1024 || a->used > UINT64_MAX / 1024))
                rc = -ERANGE;
        a->err = rc;
        if (rc == 0) {
                a->path = unescape_octal(xstrdup(fields[0]));
                a->type = xstrdup(fields[1]);
        }
}

int swaps_parse(const char *text, size_t len, struct swap_area **ret, size_t *ret_n)
{
        if (memchr(text, '\0', len) || !startswith(text, "Filename"))
                return -EBADMSG;
        struct swap_area *v = xcalloc(SWAPS_MAX, sizeof(*v));
        size_t n = 0;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(text);
        line_next(&it); /* the header */
        while (line_next(&it)) {
                if (!it.line[strspn(it.line, " \t\r\v\f")])
                        continue;
                if (n == SWAPS_MAX) {
                        swaps_free(v, n);
                        return -E2BIG;
                }
                v[n] = (struct swap_area){.line = xstrdup(it.line)};
                parse_area(&v[n++]);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

struct swap_area *swaps_free(struct swap_area *a, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(a[i].line);
                free(a[i].path);
                free(a[i].type);
        }
        free(a);
        return NULL;
}

char *swaps_rewrite(const char *text, const char *dev, const char *add)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(text);
        while (line_next(&it)) {
                _cleanup_free_ char *path = it.lineno > 1 ? first_field(it.line) : NULL;
                if (streq(path, dev))
                        continue; /* dropped; re-added below when turning on */
                sbuf_addf(&b, "%s\n", it.line);
        }
        if (add)
                sbuf_addf(&b, "%s\n", add);
        return sbuf_steal(&b);
}
