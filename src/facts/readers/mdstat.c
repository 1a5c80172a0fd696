/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/mdstat.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>

#include "base/parse.h"
#include "base/util.h"

/* Bound on arrays and tokens: a kernel has at most a few hundred arrays. */
#define MDSTAT_MAX_ARRAYS 4096
#define MDSTAT_MAX_TOKENS 1024

static void split(char *line, struct strv *out)
{
        char *save = NULL;
        for (char *t = strtok_r(line, " \t", &save); t && out->n < MDSTAT_MAX_TOKENS; t = strtok_r(NULL, " \t", &save))
                strv_add(out, t);
}

static bool is_level(const char *t)
{
        return startswith(t, "raid") || streq(t, "linear") || streq(t, "multipath") || streq(t, "faulty");
}

static void set_bad(struct mdstat_array *a, const char *why, const char *token)
{
        if (!a->bad)
                a->bad = token ? xasprintf("%s: \"%.40s\"", why, token) : xstrdup(why);
}

/* "md0 : active (auto-read-only) raid1 sdb2[0] sdc3[2](F) hda[4](S)" after the name. */
static void parse_header(struct mdstat_array *a, struct strv *t)
{
        size_t i = 0;
        if (t->n < 2 || !streq(t->v[0], ":")) {
                set_bad(a, "no ' : ' after the array name", NULL);
                return;
        }
        i = 1;
        if (streq(t->v[i], "active"))
                a->state = xstrdup("active");
        else if (streq(t->v[i], "inactive"))
                a->state = xstrdup("inactive");
        else {
                set_bad(a, "unknown array state", t->v[i]);
                return;
        }
        i++;
        /* md.c prints "(read-only)" for ro=1 and "(auto-read-only)" for ro=2, sysfs says
         * "readonly" and "read-auto" (Documentation/admin-guide/md.rst, array_state). */
        if (i < t->n && t->v[i][0] == '(') {
                free(a->state);
                a->state = xstrdup(streq(t->v[i], "(read-only)")        ? "readonly"
                                   : streq(t->v[i], "(auto-read-only)") ? "read-auto"
                                                                        : t->v[i]);
                i++;
        }
        if (i < t->n && !strchr(t->v[i], '[') && is_level(t->v[i]))
                a->level = xstrdup(t->v[i++]);
        struct strv names = {0};
        unsigned active = 0;
        for (; i < t->n; i++) {
                char *tok = t->v[i], *br = strchr(tok, '[');
                char *close = br ? strchr(br, ']') : NULL;
                if (!br || br == tok || !close) {
                        set_bad(a, "malformed member", tok);
                        break;
                }
                const char *flags = close + 1;
                bool spare = strstr(flags, "(S)") != NULL, faulty = strstr(flags, "(F)") != NULL;
                a->spares += spare;
                a->faulty += faulty;
                active += !spare && !faulty;
                strv_push(&names, xstrndup(tok, (size_t)(br - tok)));
        }
        a->members_n = (unsigned)names.n;
        a->members = strv_join(&names, " ");
        a->raid_disks = active;
        strv_done(&names);
}

/* "5853468288 blocks super 1.2 level 6, 64k chunk, algorithm 2 [8/8] [UUUUUUUU]",
 * "314159265 blocks 64k chunks", "2095104 blocks super 1.2 0k rounding". */
static void parse_status(struct mdstat_array *a, struct strv *t)
{
        for (size_t i = 0; i < t->n; i++) {
                char *tok = t->v[i];
                if (streq(tok, "super") && i + 1 < t->n && !a->metadata)
                        a->metadata = xstrdup(t->v[++i]);
                else if (i + 1 < t->n && (startswith(t->v[i + 1], "chunk")) && strlen(tok) >= 2 &&
                         (tok[strlen(tok) - 1] == 'k' || tok[strlen(tok) - 1] == 'K')) {
                        _cleanup_free_ char *num = xstrndup(tok, strlen(tok) - 1);
                        uint64_t kib;
                        if (parse_u64(num, &kib) < 0 || kib > UINT64_MAX / 1024)
                                set_bad(a, "malformed chunk size", tok);
                        else
                                a->chunk = kib * 1024;
                } else if (tok[0] == '[' && isdigit((unsigned char)tok[1])) {
                        unsigned n, m;
                        char tail;
                        if (sscanf(tok, "[%u/%u%c", &n, &m, &tail) != 3 || tail != ']' || m > n)
                                set_bad(a, "malformed [disks/working]", tok);
                        else {
                                a->raid_disks = n;
                                a->working = (int)m;
                        }
                }
        }
}

/* Progress: "[=>...]  recovery =  8.5% (...)", or "resync=DELAYED" / "resync=PENDING". */
static void parse_progress(struct mdstat_array *a, struct strv *t)
{
        static const char *const words[] = {"resync", "recovery", "check", "repair", "reshape"};
        for (size_t i = 0; i < t->n && !a->sync; i++)
                for (size_t w = 0; w < ARRAY_SIZE(words); w++) {
                        size_t l = strlen(words[w]);
                        if (streq(t->v[i], words[w]) && i + 1 < t->n && streq(t->v[i + 1], "="))
                                a->sync = xstrdup(words[w]);
                        else if (strncmp(t->v[i], words[w], l) == 0 && t->v[i][l] == '=')
                                a->sync = xstrdup(t->v[i]);
                        if (a->sync)
                                break;
                }
}

int mdstat_parse(const char *text, struct mdstat_array **ret, size_t *ret_n)
{
        if (!startswith(text, "Personalities"))
                return -EBADMSG;
        struct mdstat_array *v = NULL, *cur = NULL;
        size_t n = 0;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(text);
        while (line_next(&it)) {
                char *line = it.line;
                struct strv t = {0};
                bool indented = line[0] == ' ' || line[0] == '\t';
                split(line, &t);
                if (t.n == 0) {
                        cur = NULL; /* a blank line ends an array's block */
                } else if (!indented && startswith(t.v[0], "md") && t.n >= 2 && streq(t.v[1], ":")) {
                        if (n == MDSTAT_MAX_ARRAYS) {
                                strv_done(&t);
                                break;
                        }
                        v = xrealloc(v, (n + 1) * sizeof(*v));
                        cur = &v[n++];
                        *cur = (struct mdstat_array){.name = xstrdup(t.v[0]), .working = -1};
                        struct strv rest = {.v = t.v + 1, .n = t.n - 1};
                        parse_header(cur, &rest);
                } else if (cur && indented) {
                        if (strstr(t.v[0], "blocks") || (t.n > 1 && streq(t.v[1], "blocks")))
                                parse_status(cur, &t);
                        else if (!startswith(t.v[0], "bitmap:"))
                                parse_progress(cur, &t);
                } else
                        cur = NULL; /* "Personalities", "unused devices", "read_ahead" */
                strv_done(&t);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

struct mdstat_array *mdstat_free(struct mdstat_array *a, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(a[i].name);
                free(a[i].state);
                free(a[i].level);
                free(a[i].members);
                free(a[i].metadata);
                free(a[i].sync);
                free(a[i].bad);
        }
        free(a);
        return NULL;
}
