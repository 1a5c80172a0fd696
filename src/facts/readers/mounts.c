/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/mounts.h"

#include <errno.h>
#include <sys/stat.h>

#include "base/parse.h"
#include "base/root.h"
#include "base/util.h"

static int parse_table(struct root *r, const char *path, struct mount_entry **ret, size_t *ret_n)
{
        const char *data;
        int rc = root_read_text(r, path, &data, NULL);
        if (rc < 0)
                return rc;
        struct mount_entry *m = NULL;
        size_t n = 0, cap = 0;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                _cleanup_free_ char *raw = xstrdup(it.line);
                char *s = it.line;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (!*s || *s == '#')
                        continue;
                char *fields[4] = {0};
                char *save = NULL;
                size_t k = 0;
                for (char *t = strtok_r(s, " \t", &save); t && k < 4; t = strtok_r(NULL, " \t", &save))
                        fields[k++] = t;
                if (k < 3)
                        continue; /* not a mount line; fstab(5) needs at least spec, file, type */
                GREEDY_REALLOC(m, cap, n + 1, 32);
                m[n].source = unescape_octal(xstrdup(fields[0]));
                m[n].target = unescape_octal(xstrdup(fields[1]));
                m[n].fstype = xstrdup(fields[2]);
                m[n].options = xstrdup(fields[3] ? fields[3] : "defaults");
                m[n].line = it.lineno;
                m[n].raw = raw;
                raw = NULL;
                n++;
        }
        *ret = m;
        *ret_n = n;
        return 0;
}

const char *mounts_source(struct root *r)
{
        struct stat st;
        /* /proc/mounts is a link to self/mounts; a snapshot tool that copies files may keep only
         * the target (proc(5): /proc/self/mounts, /proc/PID/mounts). */
        if (!root_is_live(r) && root_stat(r, "/proc/mounts", &st, false) == -ENOENT &&
            root_stat(r, "/proc/self/mounts", &st, true) == 0)
                return "/proc/self/mounts";
        return "/proc/mounts";
}

int mounts_read(struct root *r, struct mount_entry **ret, size_t *ret_n)
{
        return parse_table(r, mounts_source(r), ret, ret_n);
}

int fstab_read(struct root *r, struct mount_entry **ret, size_t *ret_n)
{
        return parse_table(r, "/etc/fstab", ret, ret_n);
}

struct mount_entry *mounts_free(struct mount_entry *m, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(m[i].source);
                free(m[i].target);
                free(m[i].fstype);
                free(m[i].options);
                free(m[i].raw);
        }
        free(m);
        return NULL;
}

char *mount_option(const char *options, const char *name)
{
        size_t nl = strlen(name);
        for (const char *p = options; p && *p;) {
                const char *comma = strchr(p, ',');
                size_t l = comma ? (size_t)(comma - p) : strlen(p);
                if (l >= nl && strncmp(p, name, nl) == 0 && (l == nl || p[nl] == '='))
                        return l == nl ? xstrdup("") : xstrndup(p + nl + 1, l - nl - 1);
                p = comma ? comma + 1 : NULL;
        }
        return NULL;
}

char *mount_options_without(const char *options, const char *name)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        size_t nl = strlen(name);
        for (const char *p = options; p && *p;) {
                const char *comma = strchr(p, ',');
                size_t l = comma ? (size_t)(comma - p) : strlen(p);
                if (!(l >= nl && strncmp(p, name, nl) == 0 && (l == nl || p[nl] == '=')))
                        sbuf_addf(&b, "%s%.*s", b.len ? "," : "", (int)l, p);
                p = comma ? comma + 1 : NULL;
        }
        return sbuf_steal(&b);
}

char *fstab_rewrite(const char *text, char *(*edit)(const struct fstab_line *l, void *data), void *data,
                    bool *ret_changed)
{
        struct sbuf out = {0};
        sbuf_add(&out, "");
        bool changed = false;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(text);
        while (line_next(&it)) {
                struct fstab_line l = {.text = it.line};
                _cleanup_free_ char *copy = xstrdup(it.line);
                char *save = NULL;
                if (copy[strspn(copy, " \t")] != '#')
                        for (char *t = strtok_r(copy, " \t", &save); t && l.n < ARRAY_SIZE(l.field);
                             t = strtok_r(NULL, " \t", &save))
                                l.field[l.n++] = t;
                _cleanup_free_ char *repl = edit(&l, data);
                changed |= repl != NULL;
                sbuf_addf(&out, "%s%s", repl ? repl : it.line, it.newline ? "\n" : "");
        }
        if (ret_changed)
                *ret_changed = changed;
        return sbuf_steal(&out);
}

char *mounts_with_options(const char *text, const char *mp, const char *options)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(text);
        while (line_next(&it)) {
                char *f[6] = {0}, *save = NULL;
                size_t k = 0;
                _cleanup_free_ char *copy = xstrdup(it.line);
                for (char *t = strtok_r(copy, " \t", &save); t && k < ARRAY_SIZE(f); t = strtok_r(NULL, " \t", &save))
                        f[k++] = t;
                _cleanup_free_ char *target = k >= 2 ? unescape_octal(xstrdup(f[1])) : NULL;
                if (k >= 4 && streq(target, mp))
                        sbuf_addf(&b, "%s %s %s %s %s %s\n", f[0], f[1], f[2], options, k > 4 ? f[4] : "0",
                                  k > 5 ? f[5] : "0");
                else
                        sbuf_addf(&b, "%s\n", it.line);
        }
        return sbuf_steal(&b);
}
