/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "diff.h"

#include <stdio.h>

#include "util.h"

#define CONTEXT 3
#define MAX_LINES 20000 /* configuration files; beyond this the diff is summarised */

struct lines {
        char **v;
        size_t n;
        bool no_newline; /* last line lacks "\n" */
};

static struct lines split(const char *s)
{
        struct lines l = {0};
        if (!s)
                return l;
        size_t cap = 0;
        for (const char *p = s; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                if (l.n == cap) {
                        cap = cap ? cap * 2 : 64;
                        l.v = xrealloc(l.v, cap * sizeof(char *));
                }
                l.v[l.n++] = xstrndup(p, len);
                if (!nl)
                        l.no_newline = true;
                p = nl ? nl + 1 : p + len;
        }
        return l;
}

static void free_lines(struct lines *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
}

enum op { KEEP, DEL, ADD };

char *unified_diff(const char *path, const char *old, const char *new)
{
        if ((old == NULL && new == NULL) || (old && new && streq(old, new)))
                return xstrdup("");
        struct lines a = split(old), b = split(new);
        struct sbuf out = {0};
        const char *rel = path[0] == '/' ? path + 1 : path;
        if (old)
                sbuf_addf(&out, "--- a/%s\n", rel);
        else
                sbuf_add(&out, "--- /dev/null\n");
        if (new)
                sbuf_addf(&out, "+++ b/%s\n", rel);
        else
                sbuf_add(&out, "+++ /dev/null\n");
        if (a.n > MAX_LINES || b.n > MAX_LINES) {
                sbuf_addf(&out, "(%zu lines -> %zu lines: too large to show)\n", a.n, b.n);
                goto done;
        }
        /* LCS table over lines: the files are small, O(n*m) is fine. */
        size_t n = a.n, m = b.n;
        unsigned *t = xcalloc((n + 1) * (m + 1), sizeof(unsigned));
#define T(i, j) t[(i) * (m + 1) + (j)]
        for (size_t i = n; i-- > 0;)
                for (size_t j = m; j-- > 0;)
                        T(i, j) = streq(a.v[i], b.v[j]) ? T(i + 1, j + 1) + 1
                                  : T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
        enum op *ops = xcalloc(n + m + 1, sizeof(*ops));
        size_t *ai = xcalloc(n + m + 1, sizeof(size_t)), *bi = xcalloc(n + m + 1, sizeof(size_t));
        size_t k = 0, i = 0, j = 0;
        while (i < n || j < m) {
                if (i < n && j < m && streq(a.v[i], b.v[j])) {
                        ops[k] = KEEP, ai[k] = i++, bi[k++] = j++;
                } else if (i < n && (j == m || T(i + 1, j) >= T(i, j + 1))) {
                        ops[k] = DEL, ai[k] = i++, bi[k++] = j; /* deletions before additions, as diff -u */
                } else {
                        ops[k] = ADD, ai[k] = i, bi[k++] = j++;
                }
        }
#undef T
        free(t);
        /* Hunks: runs of changes with CONTEXT lines around, merged when close. */
        for (size_t s = 0; s < k;) {
                while (s < k && ops[s] == KEEP)
                        s++;
                if (s == k)
                        break;
                size_t start = s > CONTEXT ? s - CONTEXT : 0, end = s;
                for (;;) {
                        while (end < k && ops[end] != KEEP)
                                end++;
                        size_t run = end;
                        while (run < k && ops[run] == KEEP && run - end < 2 * CONTEXT + 1)
                                run++;
                        if (run < k && ops[run] != KEEP && run - end <= 2 * CONTEXT)
                                end = run;
                        else
                                break;
                }
                size_t stop = end + CONTEXT < k ? end + CONTEXT : k;
                size_t a0 = ai[start], b0 = bi[start], ac = 0, bc = 0;
                for (size_t x = start; x < stop; x++) {
                        ac += ops[x] != ADD;
                        bc += ops[x] != DEL;
                }
                sbuf_addf(&out, "@@ -%zu,%zu +%zu,%zu @@\n", ac ? a0 + 1 : a0, ac, bc ? b0 + 1 : b0, bc);
                for (size_t x = start; x < stop; x++) {
                        const char *line = ops[x] == ADD ? b.v[bi[x]] : a.v[ai[x]];
                        sbuf_addf(&out, "%c%s\n", ops[x] == KEEP ? ' ' : ops[x] == DEL ? '-' : '+', line);
                        bool last_a = ops[x] != ADD && ai[x] == n - 1 && a.no_newline;
                        bool last_b = ops[x] != DEL && bi[x] == m - 1 && b.no_newline;
                        if ((ops[x] == DEL && last_a) || (ops[x] == ADD && last_b) || (ops[x] == KEEP && (last_a || last_b)))
                                sbuf_add(&out, "\\ No newline at end of file\n");
                }
                s = stop;
        }
        free(ops);
        free(ai);
        free(bi);
done:
        free_lines(&a);
        free_lines(&b);
        return sbuf_steal(&out);
}
