/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "apply/diff.h"

#include <stdio.h>

#include "base/util.h"

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
        struct line_iter it = LINE_ITER(s);
        while (line_next(&it)) {
                if (l.n == cap) {
                        cap = cap ? cap * 2 : 64;
                        l.v = xrealloc(l.v, cap * sizeof(char *));
                }
                l.v[l.n++] = it.line; /* taken over: line_next would free it */
                it.line = NULL;
                if (!it.newline)
                        l.no_newline = true;
        }
        return l;
}

static void lines_done(struct lines *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
}

enum op { KEEP, DEL, ADD };

/* The edit script from A to B: per step its op and the line indexes in A and B it stands at. */
struct script {
        enum op *ops;
        size_t *ai, *bi;
        size_t k;
};

static void script_done(struct script *s)
{
        free(s->ops);
        free(s->ai);
        free(s->bi);
}

/* The shortest edit script from A to B by a longest-common-subsequence table over lines (the
 * files are small, O(n*m) is fine); deletions before additions, as diff -u. */
static void edit_script(const struct lines *a, const struct lines *b, struct script *s)
{
        size_t n = a->n, m = b->n;
        unsigned *t = xcalloc((n + 1) * (m + 1), sizeof(unsigned));
#define T(i, j) t[(i) * (m + 1) + (j)]
        for (size_t i = n; i-- > 0;)
                for (size_t j = m; j-- > 0;)
                        T(i, j) = streq(a->v[i], b->v[j]) ? T(i + 1, j + 1) + 1
                                  : T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
        s->ops = xcalloc(n + m + 1, sizeof(*s->ops));
        s->ai = xcalloc(n + m + 1, sizeof(size_t));
        s->bi = xcalloc(n + m + 1, sizeof(size_t));
        size_t k = 0, i = 0, j = 0;
        while (i < n || j < m) {
                if (i < n && j < m && streq(a->v[i], b->v[j])) {
                        s->ops[k] = KEEP, s->ai[k] = i++, s->bi[k++] = j++;
                } else if (i < n && (j == m || T(i + 1, j) >= T(i, j + 1))) {
                        s->ops[k] = DEL, s->ai[k] = i++, s->bi[k++] = j;
                } else {
                        s->ops[k] = ADD, s->ai[k] = i, s->bi[k++] = j++;
                }
        }
#undef T
        free(t);
        s->k = k;
}

/* The end of the run of changes starting at step S, runs fewer than 2 * CONTEXT + 1 unchanged
 * lines apart merged into one hunk. */
static size_t hunk_end(const struct script *sc, size_t s)
{
        size_t end = s;
        for (;;) {
                while (end < sc->k && sc->ops[end] != KEEP)
                        end++;
                size_t run = end;
                while (run < sc->k && sc->ops[run] == KEEP && run - end < 2 * CONTEXT + 1)
                        run++;
                if (run < sc->k && sc->ops[run] != KEEP && run - end <= 2 * CONTEXT)
                        end = run;
                else
                        return end;
        }
}

/* Steps START to STOP of the script as one hunk: its @@ header, its lines, and the "No newline"
 * marks for a last line without one. */
static void print_hunk(struct sbuf *out, const struct lines *a, const struct lines *b, const struct script *sc,
                       size_t start, size_t stop)
{
        size_t a0 = sc->ai[start], b0 = sc->bi[start], ac = 0, bc = 0;
        for (size_t x = start; x < stop; x++) {
                ac += sc->ops[x] != ADD;
                bc += sc->ops[x] != DEL;
        }
        sbuf_addf(out, "@@ -%zu,%zu +%zu,%zu @@\n", ac ? a0 + 1 : a0, ac, bc ? b0 + 1 : b0, bc);
        for (size_t x = start; x < stop; x++) {
                enum op op = sc->ops[x];
                const char *line = op == ADD ? b->v[sc->bi[x]] : a->v[sc->ai[x]];
                sbuf_addf(out, "%c%s\n", op == KEEP ? ' ' : op == DEL ? '-' : '+', line);
                bool last_a = op != ADD && sc->ai[x] == a->n - 1 && a->no_newline;
                bool last_b = op != DEL && sc->bi[x] == b->n - 1 && b->no_newline;
                if ((op == DEL && last_a) || (op == ADD && last_b) || (op == KEEP && (last_a || last_b)))
                        sbuf_add(out, "\\ No newline at end of file\n");
        }
}

char *unified_diff(const char *path, const char *old, const char *new)
{
        if ((old == NULL && new == NULL) || (old && new && streq(old, new)))
                return xstrdup("");
        _cleanup_(lines_done) struct lines a = split(old), b = split(new);
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
                return sbuf_steal(&out);
        }
        _cleanup_(script_done) struct script sc = {0};
        edit_script(&a, &b, &sc);
        /* Hunks: runs of changes with CONTEXT lines around, merged when close. */
        for (size_t s = 0; s < sc.k;) {
                while (s < sc.k && sc.ops[s] == KEEP)
                        s++;
                if (s == sc.k)
                        break;
                size_t start = s > CONTEXT ? s - CONTEXT : 0, end = hunk_end(&sc, s);
                size_t stop = end + CONTEXT < sc.k ? end + CONTEXT : sc.k;
                print_hunk(&out, &a, &b, &sc, start, stop);
                s = stop;
        }
        return sbuf_steal(&out);
}
