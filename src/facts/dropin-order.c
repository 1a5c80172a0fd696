/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "dropin-order.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>

/* sysctl.d(5), tmpfiles.d(5), modprobe.d(5), modules-load.d(5): earlier directories take precedence
 * for a file name. /lib is kept for systems without the merged /usr (it is a link to /usr/lib on
 * merged ones; the name then simply appears twice and the first wins). */
static const char *const dirs[] = {"/etc", "/run", "/usr/local/lib", "/usr/lib", "/lib"};

/* "/etc/sysctl.d" + "../sysctl.conf" -> "/etc/sysctl.conf": enough normalisation for a link
 * inside /etc; anything else is left as the path read. */
static char *resolve_link(const char *dir, const char *target)
{
        _cleanup_free_ char *joined = target[0] == '/' ? xstrdup(target) : xasprintf("%s/%s", dir, target);
        struct strv parts = {0};
        char *save = NULL;
        for (char *t = strtok_r(joined, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
                if (streq(t, "."))
                        continue;
                if (streq(t, "..")) {
                        if (parts.n) {
                                free(parts.v[--parts.n]);
                                parts.v[parts.n] = NULL;
                        }
                        continue;
                }
                strv_add(&parts, t);
        }
        _cleanup_free_ char *j = strv_join(&parts, "/");
        strv_done(&parts);
        return xasprintf("/%s", j);
}

static int cmp_file(const void *a, const void *b)
{
        return strcmp(((const struct dropin_file *)a)->name, ((const struct dropin_file *)b)->name);
}

int dropin_list_load(struct root *r, const char *family, struct dropin_list *ret, char **bad)
{
        struct dropin_list l = {0};
        *ret = (struct dropin_list){0};
        for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
                _cleanup_free_ char *dir = xasprintf("%s/%s", dirs[d], family);
                struct strv names = {0};
                int rc = root_list(r, dir, &names);
                if (root_gone(rc))
                        continue;
                if (rc < 0) {
                        dropin_list_done(&l);
                        *bad = xstrdup(dir);
                        return rc;
                }
                for (size_t i = 0; i < names.n; i++) {
                        const char *n = names.v[i];
                        if (!endswith(n, ".conf"))
                                continue;
                        bool seen = false;
                        for (size_t k = 0; k < l.n && !seen; k++)
                                seen = streq(l.v[k].name, n);
                        if (seen)
                                continue;
                        /* a masked name (link to /dev/null) hides later ones and is read as empty */
                        _cleanup_free_ char *path = xasprintf("%s/%s", dir, n);
                        _cleanup_free_ char *target = NULL;
                        char *real = NULL;
                        if (root_readlink(r, path, &target) == 0)
                                real = resolve_link(dir, target);
                        struct dropin_file f = {.name = xstrdup(n), .path = xstrdup(path)};
                        f.real = real && startswith(real, "/etc/") ? real : (free(real), xstrdup(path));
                        f.edit = startswith(f.real, "/etc/") ? xstrdup(f.real) : xasprintf("/etc/%s/%s", family, n);
                        l.v = xrealloc(l.v, (l.n + 1) * sizeof(*l.v));
                        l.v[l.n++] = f;
                }
                strv_done(&names);
        }
        qsort_safe(l.v, l.n, sizeof(*l.v), cmp_file);
        if (streq(family, "sysctl.d")) {
                bool placed = false;
                for (size_t k = 0; k < l.n; k++)
                        placed |= streq(l.v[k].real, "/etc/sysctl.conf");
                if (!placed) {
                        l.v = xrealloc(l.v, (l.n + 1) * sizeof(*l.v));
                        l.v[l.n++] = (struct dropin_file){.name = xstrdup("sysctl.conf"), .path = xstrdup("/etc/sysctl.conf"),
                                                          .real = xstrdup("/etc/sysctl.conf"),
                                                          .edit = xstrdup("/etc/sysctl.conf")};
                }
        }
        *ret = l;
        return 0;
}

void dropin_list_done(struct dropin_list *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->v[i].name);
                free(l->v[i].path);
                free(l->v[i].real);
                free(l->v[i].edit);
        }
        free(l->v);
        *l = (struct dropin_list){0};
}

/* sysctl.d(5): "kernel/domainname" and "kernel.domainname" are the same key; when the first
 * separator is '/', slashes and dots swap. */
static char *normalize_key(const char *k)
{
        char *s = xstrdup(k);
        size_t slash = strcspn(s, "/"), dot = strcspn(s, ".");
        if (slash < dot)
                for (char *p = s; *p; p++)
                        *p = *p == '/' ? '.' : *p == '.' ? '/' : *p;
        return s;
}

static char *trim(char *s)
{
        while (*s == ' ' || *s == '\t')
                s++;
        size_t n = strlen(s);
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
                s[--n] = '\0';
        return s;
}

bool sysctl_line_sets(const char *line, const char *key, char **value)
{
        _cleanup_free_ char *copy = xstrdup(line);
        char *s = trim(copy);
        if (!*s || *s == '#' || *s == ';')
                return false;
        char *eq = strchr(s, '=');
        if (!eq)
                return false;
        *eq = '\0';
        char *k = trim(s);
        if (*k == '-') /* "-key = v": errors ignored, the setting is the same */
                k = trim(k + 1);
        _cleanup_free_ char *nk = normalize_key(k), *want = normalize_key(key);
        if (!streq(nk, want) && fnmatch(nk, want, 0) != 0)
                return false;
        if (value)
                *value = xstrdup(trim(eq + 1));
        return true;
}

int sysctl_settings_load(struct root *r, const char *key, struct sysctl_settings *ret, char **bad)
{
        struct sysctl_settings s = {0};
        *ret = s;
        int rc = dropin_list_load(r, "sysctl.d", &s.files, bad);
        if (rc < 0)
                return rc;
        for (size_t i = 0; i < s.files.n; i++) {
                const char *data;
                size_t len;
                /* a link resolved inside /etc is read at its target: same file, no ".." to walk */
                rc = root_read(r, s.files.v[i].real, &data, &len);
                if (root_gone(rc) || rc == -ELOOP)
                        continue; /* a dangling link or no /etc/sysctl.conf: nothing set there */
                if (rc < 0) {
                        *bad = xstrdup(s.files.v[i].real);
                        sysctl_settings_done(&s);
                        return rc;
                }
                _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
                while (line_next(&it)) {
                        char *v = NULL;
                        if (!sysctl_line_sets(it.line, key, &v))
                                continue;
                        s.v = xrealloc(s.v, (s.n + 1) * sizeof(*s.v));
                        s.v[s.n++] = (struct sysctl_setting){.file = &s.files.v[i], .line = it.lineno, .value = v};
                }
        }
        *ret = s;
        return 0;
}

void sysctl_settings_done(struct sysctl_settings *s)
{
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i].value);
        free(s->v);
        dropin_list_done(&s->files);
        *s = (struct sysctl_settings){0};
}

char *sysctl_neutralise(const char *content, const char *key, const char *mark,
                        bool (*keep)(const char *value, void *data), void *data)
{
        struct sbuf out = {0};
        sbuf_add(&out, "");
        bool changed = false;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(content);
        while (line_next(&it)) {
                char *v = NULL;
                bool off = sysctl_line_sets(it.line, key, &v) && !(keep && keep(v, data));
                free(v);
                changed |= off;
                sbuf_addf(&out, "%s%s%s", off ? mark : "", it.line, it.newline ? "\n" : "");
        }
        if (!changed) {
                free(sbuf_steal(&out));
                return NULL;
        }
        return sbuf_steal(&out);
}
