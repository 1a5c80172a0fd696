/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/dropin-order.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/parse.h"

/* systemd's configuration search path (systemd.syntax(7), conf-files.c): earlier directories take
 * precedence for a file name. /lib is kept for systems without the merged /usr (it is a link to
 * /usr/lib on merged ones; the name then simply appears twice and the first wins). udev reads its
 * rules from the same places (udev(7)). */
static const char *const systemd_dirs[] = {"/etc", "/run", "/usr/local/lib", "/usr/lib", "/lib", NULL};
/* libkmod's modprobe.d search path, highest precedence first (default_config_paths in
 * libkmod/libkmod.c: SYSCONFDIR, /run, /usr/local/lib, DISTCONFDIR, /lib, each with /modprobe.d;
 * the distributions build it with /etc and /usr/lib). The one list: the modprobe.d family, the
 * libkmod context of modprobe-config.c and gather all take it from dropin_modprobe. */
static const char *const kmod_dirs[] = {"/etc", "/run", "/usr/local/lib", "/usr/lib", "/lib", NULL};
/* pam_limits reads limits.conf, then the glob limits.d/\*.conf in C collation (pam_limits(8)). */
static const char *const security_dirs[] = {"/etc/security", NULL};

void dropin_settings_of_line_done(struct dropin_settings_of_line *s)
{
        for (size_t i = 0; i < s->n; i++) {
                free(s->v[i].key);
                free(s->v[i].value);
                free(s->v[i].identity);
        }
        free(s->v);
        *s = (struct dropin_settings_of_line){0};
}

static void add_setting(struct dropin_settings_of_line *out, char *key, char *value, char *identity)
{
        out->v = xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
        out->v[out->n++] = (struct dropin_setting){key, value, identity};
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

/* --- sysctl.d(5): "key = value", the last line for a key wins ----------------------------------- */

/* "kernel/domainname" and "kernel.domainname" are the same key; when the first separator is '/',
 * slashes and dots swap. */
static char *normalize_key(const char *k)
{
        char *s = xstrdup(k);
        size_t slash = strcspn(s, "/"), dot = strcspn(s, ".");
        if (slash < dot)
                for (char *p = s; *p; p++)
                        *p = *p == '/' ? '.' : *p == '.' ? '/' : *p;
        return s;
}

static void sysctl_parse(const char *line, struct dropin_state *st, struct dropin_settings_of_line *out)
{
        _cleanup_free_ char *copy = xstrdup(line);
        char *s = trim(copy);
        char *eq = strchr(s, '=');
        if (!*s || *s == '#' || *s == ';' || !eq)
                return;
        *eq = '\0';
        char *k = trim(s);
        if (*k == '-') /* "-key = v": errors ignored, the setting is the same */
                k = trim(k + 1);
        add_setting(out, normalize_key(k), xstrdup(trim(eq + 1)), NULL);
}

/* A line's key may be a glob (sysctl.d(5): "net.ipv4.conf.*.rp_filter"). */
static bool sysctl_applies(const char *line_key, const char *key)
{
        _cleanup_free_ char *want = normalize_key(key);
        return streq(line_key, want) || fnmatch(line_key, want, 0) == 0;
}

static int plain_number(const char *value, bool *unlimited, uint64_t *n)
{
        bool neg;
        *unlimited = false;
        int rc = parse_integer(value, &neg, n);
        return rc < 0 ? rc : neg ? -ERANGE : 0;
}

bool sysctl_line_sets(const char *line, const char *key, char **value)
{
        struct dropin_settings_of_line s = {0};
        struct dropin_state st = {{0}};
        sysctl_parse(line, &st, &s);
        bool sets = s.n && sysctl_applies(s.v[0].key, key);
        if (sets && value)
                *value = xstrdup(s.v[0].value);
        dropin_settings_of_line_done(&s);
        return sets;
}

/* --- tmpfiles.d(5): "w PATH MODE USER GROUP AGE ARGUMENT"; for one path the first line wins ------ */

/* A field as tmpfiles takes it: a "quoted" one may hold blanks. */
static char *next_field(const char **p)
{
        *p += strspn(*p, " \t");
        if (!**p)
                return NULL;
        const char *s = *p;
        if (*s == '"' && strchr(s + 1, '"')) {
                const char *e = strchr(s + 1, '"');
                *p = e + 1;
                return xstrndup(s + 1, (size_t)(e - s - 1));
        }
        size_t n = strcspn(s, " \t");
        *p = s + n;
        return xstrndup(s, n);
}

/* "/sys//kernel/mm/" -> "/sys/kernel/mm" (tmpfiles simplifies the path it keys its lines by). */
static char *simplify_path(const char *p)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        for (; *p; p++)
                if (!(*p == '/' && (p[1] == '/' || (!p[1] && b.len))))
                        sbuf_addn(&b, p, 1);
        return sbuf_steal(&b);
}

/* Only "w" lines (write a file) are settings; the modifiers +!-=~^ may follow the letter. Lines
 * for one path are keyed by the path as written: a later one is dropped ("Duplicate line for
 * path"), whatever its argument (systemd 252; newer systemd keeps repeated "w+" lines, which
 * llmtune never writes). */
static void tmpfiles_parse(const char *line, struct dropin_state *st, struct dropin_settings_of_line *out)
{
        const char *p = line;
        _cleanup_free_ char *type = next_field(&p);
        if (!type || type[0] != 'w' || strspn(type + 1, "+!-=~^") != strlen(type + 1))
                return;
        _cleanup_free_ char *path = next_field(&p);
        if (!path || path[0] != '/')
                return;
        for (int i = 0; i < 4; i++) /* mode, user, group, age */
                free(next_field(&p));
        _cleanup_free_ char *arg = xstrdup(p);
        char *path_key = simplify_path(path);
        add_setting(out, path_key, xstrdup(trim(arg)), xstrdup(path_key));
}

/* A line's path may be a glob (tmpfiles.d(5)); one that reaches the file through a link
 * (/sys/devices/system/cpu/cpu0/cpufreq is policy0) is matched by its expansion (dropin_entry_sets). */
static bool tmpfiles_applies(const char *line_key, const char *key)
{
        return streq(line_key, key) || fnmatch(line_key, key, FNM_PATHNAME) == 0;
}

/* --- limits.conf(5): "DOMAIN TYPE ITEM VALUE"; the last line for a domain and item wins ----------- */

static void limits_parse(const char *line, struct dropin_state *st, struct dropin_settings_of_line *out)
{
        _cleanup_free_ char *copy = xstrdup(line);
        char *hash = strchr(copy, '#');
        if (hash)
                *hash = '\0';
        char dom[64], type[16], item[32], value[64], extra;
        if (sscanf(copy, "%63s %15s %31s %63s %c", dom, type, item, value, &extra) != 4)
                return;
        /* "-" sets both (limits.conf(5)) */
        if (streq(type, "soft") || streq(type, "-"))
                add_setting(out, xasprintf("%s soft %s", dom, item), xstrdup(value), NULL);
        if (streq(type, "hard") || streq(type, "-"))
                add_setting(out, xasprintf("%s hard %s", dom, item), xstrdup(value), NULL);
}

/* A KiB item (memlock): "unlimited", "infinity" or -1, else KiB (pam_limits multiplies by 1024). */
static int limits_number(const char *value, bool *unlimited, uint64_t *n)
{
        *unlimited = streq(value, "unlimited") || streq(value, "infinity") || streq(value, "-1");
        *n = 0;
        if (*unlimited)
                return 0;
        uint64_t kib;
        int rc = parse_u64(value, &kib);
        if (rc < 0)
                return rc;
        *unlimited = kib > UINT64_MAX / 1024;
        *n = *unlimited ? 0 : kib * 1024;
        return 0;
}

/* --- systemd-system.conf(5): [Section] Key=Value; the last assignment wins ---------------------- */

static void systemd_parse(const char *line, struct dropin_state *st, struct dropin_settings_of_line *out)
{
        _cleanup_free_ char *copy = xstrdup(line);
        char *s = trim(copy);
        if (!*s || *s == '#' || *s == ';')
                return;
        if (*s == '[') {
                char *end = strchr(s, ']');
                size_t n = end ? (size_t)(end - s - 1) : 0;
                st->section[0] = '\0';
                if (end && n < sizeof(st->section))
                        memcpy(st->section, s + 1, n), st->section[n] = '\0';
                return;
        }
        char *eq = strchr(s, '=');
        if (!eq || !st->section[0])
                return;
        *eq = '\0';
        add_setting(out, xasprintf("%s.%s", st->section, trim(s)), xstrdup(trim(eq + 1)), NULL);
}

/* "SOFT:HARD" or one value for both (systemd.exec(5) LimitCPU=): the smaller of the two. */
static int systemd_number(const char *value, bool *unlimited, uint64_t *n)
{
        struct rlimit_pair p;
        if (rlimit_pair_parse(value, &p) < 0)
                return -EINVAL;
        bool su = p.soft_unlimited, hu = p.hard_unlimited;
        uint64_t sv = p.soft, hv = p.hard;
        *unlimited = su && hu;
        *n = su ? hv : hu ? sv : (sv < hv ? sv : hv);
        return 0;
}

/* --- modprobe.d(5): options accumulate (the kernel applies a parameter given twice in order, so
 * the last value wins); the first matching install line is the one modprobe runs (kmod
 * libkmod-module.c, "as modprobe from module-init-tools does"); blacklists add up --------------- */

static char *modname(const char *s)
{
        char *m = xstrdup(s);
        for (char *p = m; *p; p++)
                if (*p == '-')
                        *p = '_';
        return m;
}

static void modprobe_parse(const char *line, struct dropin_state *st, struct dropin_settings_of_line *out)
{
        _cleanup_free_ char *copy = xstrdup(line);
        char *save = NULL;
        char *cmd = strtok_r(copy, " \t\r", &save), *mod = cmd ? strtok_r(NULL, " \t\r", &save) : NULL;
        if (!mod || cmd[0] == '#')
                return;
        _cleanup_free_ char *m = modname(mod);
        if (streq(cmd, "blacklist"))
                add_setting(out, xasprintf("blacklist %s", m), xstrdup("yes"), NULL);
        else if (streq(cmd, "install")) {
                char *rest = save ? trim(save) : "";
                add_setting(out, xasprintf("install %s", m), xstrdup(rest), xasprintf("install %s", m));
        } else if (streq(cmd, "options"))
                for (char *t = strtok_r(NULL, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
                        char *eq = strchr(t, '=');
                        _cleanup_free_ char *param = eq ? xstrndup(t, (size_t)(eq - t)) : xstrdup(t);
                        add_setting(out, xasprintf("options %s %s", m, param), xstrdup(eq ? eq + 1 : ""), NULL);
                }
}

/* --- modules-load.d(5): one module per line, every listed module is loaded ---------------------- */

static void modules_load_parse(const char *line, struct dropin_state *st, struct dropin_settings_of_line *out)
{
        _cleanup_free_ char *copy = xstrdup(line);
        char *s = trim(copy);
        if (*s && *s != '#' && *s != ';')
                add_setting(out, modname(s), xstrdup("load"), NULL);
}

const struct dropin_family dropin_sysctl = {
        .name = "sysctl.d", .manual = "sysctl.d(5)", .subdir = "sysctl.d", .dirs = systemd_dirs, .suffix = ".conf",
        .last = "/etc/sysctl.conf", .winner = "the last line that sets a key",
        .parse = sysctl_parse, .applies = sysctl_applies, .number = plain_number,
};
const struct dropin_family dropin_tmpfiles = {
        .name = "tmpfiles.d", .manual = "tmpfiles.d(5)", .subdir = "tmpfiles.d", .dirs = systemd_dirs,
        .suffix = ".conf",
        .winner = "for one path, the first line (later lines for that path are dropped); lines with other "
                  "paths that reach the same file are applied in the order their paths first appear, so the "
                  "last of those writes last",
        .parse = tmpfiles_parse, .applies = tmpfiles_applies, .paths = true,
};
const struct dropin_family dropin_limits = {
        .name = "limits.d", .manual = "limits.conf(5), pam_limits(8)", .subdir = "limits.d", .dirs = security_dirs,
        .suffix = ".conf", .first = "/etc/security/limits.conf",
        .winner = "the last line for a domain, type and item (a user's own line beats a group's, which beats \"*\")",
        .parse = limits_parse, .number = limits_number, .skip_invalid = true,
};
const struct dropin_family dropin_system_conf = {
        .name = "system.conf.d", .manual = "systemd-system.conf(5)", .subdir = "systemd/system.conf.d",
        .dirs = systemd_dirs, .suffix = ".conf", .first = "/etc/systemd/system.conf",
        .winner = "the last assignment of a key", .parse = systemd_parse, .number = systemd_number,
        .skip_invalid = true,
};
const struct dropin_family dropin_modprobe = {
        .name = "modprobe.d", .manual = "modprobe.d(5)", .subdir = "modprobe.d", .dirs = kmod_dirs,
        .suffix = ".conf",
        .winner = "options add up, the last value of a parameter wins; the first install line for a module is "
                  "the one modprobe runs; blacklists add up",
        .parse = modprobe_parse,
};
const struct dropin_family dropin_modules_load = {
        .name = "modules-load.d", .manual = "modules-load.d(5)", .subdir = "modules-load.d", .dirs = systemd_dirs,
        .suffix = ".conf",
        .winner = "every listed module is loaded (systemd-modules-load skips one modprobe.d blacklists)",
        .parse = modules_load_parse,
};
const struct dropin_family dropin_udev = {
        .name = "udev rules.d", .manual = "udev(7)", .subdir = "udev/rules.d", .dirs = systemd_dirs, .suffix = ".rules",
        .winner = "rules run in name order; for a device, a later assignment replaces an earlier one",
};

const struct dropin_family *const dropin_families[] = {
        &dropin_sysctl,   &dropin_tmpfiles,     &dropin_limits, &dropin_system_conf,
        &dropin_modprobe, &dropin_modules_load, &dropin_udev,   NULL,
};

void dropin_family_dirs(const struct dropin_family *f, struct strv *ret)
{
        for (size_t d = 0; f->dirs[d]; d++)
                strv_push(ret, xasprintf("%s/%s", f->dirs[d], f->subdir));
}

const struct dropin_family *dropin_family_of(const char *path)
{
        for (size_t i = 0; dropin_families[i]; i++) {
                const struct dropin_family *f = dropin_families[i];
                _cleanup_free_ char *dir = xasprintf("%s/%s/", f->dirs[0], f->subdir);
                const char *base = strrchr(path, '/') + 1;
                if ((startswith(path, dir) && base == path + strlen(dir) && endswith(base, f->suffix)) ||
                    streq(path, f->first) || streq(path, f->last))
                        return f;
        }
        return NULL;
}

/* --- the files of a family, in reading order ------------------------------------------------------ */

/* "/etc/sysctl.d" + "../sysctl.conf" -> "/etc/sysctl.conf": enough normalisation for a link
 * inside /etc; anything else is left as the path read. */
static char *resolve_link(const char *dir, const char *target)
{
        _cleanup_free_ char *joined = target[0] == '/' ? xstrdup(target) : xasprintf("%s/%s", dir, target);
        struct strv parts = {0};
        char *save = NULL;
        for (char *t = strtok_r(joined, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
                if (streq(t, ".."))
                        strv_pop(&parts);
                else if (!streq(t, "."))
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

static const char *view_find(const struct dropin_view *view, const char *path, bool *found)
{
        *found = false;
        for (size_t i = view ? view->n : 0; i-- > 0;)
                if (streq(view->paths[i], path)) {
                        *found = true;
                        return view->contents[i];
                }
        return NULL;
}

static void list_add(struct root *r, const struct dropin_family *f, struct dropin_list *l, const char *dir,
                     const char *n)
{
        for (size_t k = 0; k < l->n; k++)
                if (streq(l->v[k].name, n))
                        return; /* an earlier directory's file of that name hides it */
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, n);
        _cleanup_free_ char *target = NULL;
        char *real = NULL;
        if (root_readlink(r, path, &target) == 0)
                real = resolve_link(dir, target);
        struct dropin_file df = {.name = xstrdup(n), .path = xstrdup(path)};
        df.real = real && startswith(real, "/etc/") ? real : (free(real), xstrdup(path));
        df.edit = startswith(df.real, "/etc/") ? xstrdup(df.real) : xasprintf("%s/%s/%s", f->dirs[0], f->subdir, n);
        l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
        l->v[l->n++] = df;
}

static struct dropin_file main_file(const char *path, const char *name)
{
        return (struct dropin_file){.name = xstrdup(name), .path = xstrdup(path), .real = xstrdup(path),
                                    .edit = xstrdup(path)};
}

/* The names of DIR, with what VIEW creates or removes there. */
static int list_dir(struct root *r, const struct dropin_view *view, const char *dir, struct strv *names)
{
        int rc = root_list(r, dir, names);
        if (rc < 0 && !root_gone(rc))
                return rc;
        for (size_t i = 0; view && i < view->n; i++) {
                const char *p = view->paths[i];
                size_t dl = strlen(dir);
                if (strncmp(p, dir, dl) != 0 || p[dl] != '/' || strchr(p + dl + 1, '/'))
                        continue;
                bool found;
                const char *content = view_find(view, p, &found);
                if (content && !strv_contains(names, p + dl + 1))
                        strv_add(names, p + dl + 1);
        }
        return 0;
}

int dropin_list_load(struct root *r, const struct dropin_family *f, const struct dropin_view *view,
                     struct dropin_list *ret, char **bad)
{
        struct dropin_list l = {0};
        *ret = (struct dropin_list){0};
        for (size_t d = 0; f->dirs[d]; d++) {
                _cleanup_free_ char *dir = xasprintf("%s/%s", f->dirs[d], f->subdir);
                _cleanup_(strv_done) struct strv names = {0};
                int rc = list_dir(r, view, dir, &names);
                if (rc < 0) {
                        dropin_list_done(&l);
                        *bad = xstrdup(dir);
                        return rc;
                }
                strv_sort(&names);
                for (size_t i = 0; i < names.n; i++)
                        if (endswith(names.v[i], f->suffix) && names.v[i][0] != '.')
                                list_add(r, f, &l, dir, names.v[i]);
        }
        qsort_safe(l.v, l.n, sizeof(*l.v), cmp_file);
        l.v = xrealloc(l.v, (l.n + 2) * sizeof(*l.v));
        if (f->first) { /* read before every drop-in */
                memmove(l.v + 1, l.v, l.n * sizeof(*l.v));
                l.v[0] = main_file(f->first, "");
                l.n++;
        }
        bool placed = false;
        for (size_t k = 0; f->last && k < l.n; k++)
                placed |= streq(l.v[k].real, f->last);
        if (f->last && !placed) /* read last, unless a drop-in links it in (99-sysctl.conf) */
                l.v[l.n++] = main_file(f->last, strrchr(f->last, '/') + 1);
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

/* --- the settings of a family, in reading order ---------------------------------------------------- */

static bool key_applies(const struct dropin_family *f, const char *line_key, const char *key)
{
        return f->applies ? f->applies(line_key, key) : streq(line_key, key);
}

/* The content of a listed file: what the view holds for it, else the tree's (a link resolved
 * inside /etc is read at its target: same file, no ".." to walk). */
static int read_file(struct root *r, const struct dropin_view *view, const struct dropin_file *df, char **ret)
{
        bool found;
        const char *content = view_find(view, df->real, &found);
        if (found) {
                *ret = content ? xstrdup(content) : NULL;
                return content ? 0 : -ENOENT;
        }
        const char *data;
        size_t len;
        int rc = root_read(r, df->real, &data, &len);
        *ret = rc == 0 ? xstrndup(data, len) : NULL;
        return rc;
}

/* The files a glob path reaches, once per entry (tmpfiles.d: a "cpu*" line and a "policy*" one
 * write the same scaling_governor). */
static void expand_ids(struct root *r, struct dropin_entry *e)
{
        if (!strpbrk(e->key, "*?["))
                return;
        struct strv paths = {0};
        root_glob(r, e->key, &paths);
        for (size_t i = 0; i < paths.n; i++) {
                struct stat st;
                if (root_stat(r, paths.v[i], &st, true) < 0)
                        continue;
                e->ids = xrealloc(e->ids, (e->n_ids + 1) * sizeof(*e->ids));
                e->ids[e->n_ids++] = (struct dropin_file_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
        }
        strv_done(&paths);
}

static void entries_of_file(struct root *r, const char *data, const struct dropin_file *df, struct dropin_entries *e,
                            struct strv *identities)
{
        struct dropin_state st = {{0}};
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                struct dropin_settings_of_line s = {0};
                e->f->parse(it.line, &st, &s);
                for (size_t i = 0; i < s.n; i++) {
                        bool dup = s.v[i].identity && strv_contains(identities, s.v[i].identity);
                        if (s.v[i].identity && !dup)
                                strv_add(identities, s.v[i].identity);
                        e->v = xrealloc(e->v, (e->n + 1) * sizeof(*e->v));
                        struct dropin_entry *n = &e->v[e->n++];
                        *n = (struct dropin_entry){.file = df, .line = it.lineno, .key = s.v[i].key,
                                                   .value = s.v[i].value, .dropped = dup};
                        s.v[i].key = s.v[i].value = NULL;
                        if (e->f->paths)
                                expand_ids(r, n);
                }
                dropin_settings_of_line_done(&s);
        }
}

int dropin_entries_load(struct root *r, const struct dropin_family *f, const struct dropin_view *view,
                        struct dropin_entries *ret, char **bad)
{
        struct dropin_entries e = {.f = f};
        *ret = e;
        int rc = dropin_list_load(r, f, view, &e.files, bad);
        if (rc < 0)
                return rc;
        struct strv identities = {0};
        for (size_t i = 0; f->parse && i < e.files.n; i++) {
                _cleanup_free_ char *data = NULL;
                rc = read_file(r, view, &e.files.v[i], &data);
                if (root_gone(rc) || rc == -ELOOP)
                        continue; /* a dangling or /dev/null link, no main file: nothing set there */
                if (rc < 0) {
                        *bad = xstrdup(e.files.v[i].real);
                        strv_done(&identities);
                        dropin_entries_done(&e);
                        return rc;
                }
                entries_of_file(r, data, &e.files.v[i], &e, &identities);
        }
        strv_done(&identities);
        *ret = e;
        return 0;
}

void dropin_entries_done(struct dropin_entries *e)
{
        for (size_t i = 0; i < e->n; i++) {
                free(e->v[i].key);
                free(e->v[i].value);
                free(e->v[i].ids);
        }
        free(e->v);
        dropin_list_done(&e->files);
        *e = (struct dropin_entries){0};
}

bool dropin_entry_sets(struct root *r, const struct dropin_entries *all, const struct dropin_entry *e, const char *key)
{
        if (key_applies(all->f, e->key, key))
                return true;
        struct stat st;
        if (!e->n_ids || root_stat(r, key, &st, true) < 0)
                return false;
        for (size_t i = 0; i < e->n_ids; i++)
                if (e->ids[i].dev == (uint64_t)st.st_dev && e->ids[i].ino == (uint64_t)st.st_ino)
                        return true;
        return false;
}

static bool value_ignored(const struct dropin_family *f, const char *value)
{
        bool un;
        uint64_t n;
        return f->skip_invalid && f->number(value, &un, &n) < 0;
}

const struct dropin_entry *dropin_effective(struct root *r, const struct dropin_entries *all, const char *key)
{
        for (size_t i = all->n; i-- > 0;)
                if (!all->v[i].dropped && !value_ignored(all->f, all->v[i].value) &&
                    dropin_entry_sets(r, all, &all->v[i], key))
                        return &all->v[i];
        return NULL;
}

/* Does a setting of LINE_KEY set KEY, its glob expansion included? */
static bool setting_reaches(struct root *r, const struct dropin_family *f, const char *line_key, const char *key)
{
        struct dropin_file df = {0};
        struct dropin_entry e = {.file = &df, .key = (char *)line_key};
        struct dropin_entries one = {.f = f};
        if (f->paths)
                expand_ids(r, &e);
        bool sets = dropin_entry_sets(r, &one, &e, key);
        free(e.ids);
        return sets;
}

char *dropin_neutralise(struct root *r, const struct dropin_family *f, const char *content, const char *key,
                        const char *mark, bool (*keep)(const char *value, void *data), void *data)
{
        struct sbuf out = {0};
        sbuf_add(&out, "");
        bool changed = false;
        struct dropin_state st = {{0}};
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(content);
        while (line_next(&it)) {
                struct dropin_settings_of_line s = {0};
                f->parse(it.line, &st, &s);
                bool off = false;
                for (size_t i = 0; i < s.n; i++)
                        off |= setting_reaches(r, f, s.v[i].key, key) && !(keep && keep(s.v[i].value, data));
                dropin_settings_of_line_done(&s);
                changed |= off;
                sbuf_addf(&out, "%s%s%s", off ? mark : "", it.line, it.newline ? "\n" : "");
        }
        if (!changed) {
                free(sbuf_steal(&out));
                return NULL;
        }
        return sbuf_steal(&out);
}

void dropin_keys_of(const struct dropin_family *f, const char *content, struct strv *ret)
{
        struct dropin_state st = {{0}};
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(content);
        while (f->parse && line_next(&it)) {
                struct dropin_settings_of_line s = {0};
                f->parse(it.line, &st, &s);
                for (size_t i = 0; i < s.n; i++)
                        if (!strv_contains(ret, s.v[i].key))
                                strv_add(ret, s.v[i].key);
                dropin_settings_of_line_done(&s);
        }
}

/* Does VALUE give at least what OURS does (the same word, or a number no smaller)? */
static bool value_holds(const struct dropin_family *f, const char *value, const char *ours)
{
        if (streq(value, ours))
                return true;
        bool vu, ou;
        uint64_t vn, on;
        if (!f->number || f->number(value, &vu, &vn) < 0 || f->number(ours, &ou, &on) < 0)
                return false;
        return vu || (!ou && vn >= on);
}

static char *key_overridden(struct root *r, const struct dropin_entries *e, const char *path, const char *key,
                            const char *ours)
{
        const struct dropin_entry *w = dropin_effective(r, e, key);
        if (!w || streq(w->file->path, path) || streq(w->file->real, path) || value_holds(e->f, w->value, ours))
                return NULL;
        return xasprintf("%s is set at boot by %s:%u (%s), not by %s (%s): %s's rule, %s", key, w->file->path,
                         w->line, w->value, path, ours, e->f->manual, e->f->winner);
}

int dropin_overridden(struct root *r, const char *path, const char *content, char **why)
{
        *why = NULL;
        const struct dropin_family *f = dropin_family_of(path);
        if (!f || !f->parse || !content)
                return 0;
        struct dropin_entries e;
        _cleanup_free_ char *bad = NULL;
        int rc = dropin_entries_load(r, f, NULL, &e, &bad);
        if (rc < 0) {
                *why = xasprintf("%s cannot be read (%s), so which %s line wins at boot is unknown", bad, strerror(-rc),
                                 f->name);
                return rc;
        }
        struct dropin_state st = {{0}};
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(content);
        while (!*why && line_next(&it)) {
                struct dropin_settings_of_line s = {0};
                f->parse(it.line, &st, &s);
                for (size_t i = 0; i < s.n && !*why; i++)
                        *why = key_overridden(r, &e, path, s.v[i].key, s.v[i].value);
                dropin_settings_of_line_done(&s);
        }
        dropin_entries_done(&e);
        return *why != NULL;
}
