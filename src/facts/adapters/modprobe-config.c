/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/adapters/modprobe-config.h"

#include <ctype.h>
#include <errno.h>
#include <libkmod.h>

#include "base/sandbox.h"
#include "facts/readers/dropin-order.h"

#define CONFIG_SRC "modprobe.d (libkmod)"

char *modname_normalize(const char *s)
{
        char *n = xstrdup(s);
        for (char *p = n; *p; p++)
                if (*p == '-')
                        *p = '_';
        return n;
}

/* MODULE_NAME_LEN is 64 with the NUL. */
bool modname_valid(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 63)
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
                        return false;
        return true;
}

void modprobe_entries_add(struct modprobe_entries *e, const char *key, const char *val, const char *src)
{
        strv_add(&e->key, key);
        strv_add(&e->val, val ? val : "");
        strv_add(&e->src, src);
}

void modprobe_entries_done(struct modprobe_entries *e)
{
        strv_done(&e->key);
        strv_done(&e->val);
        strv_done(&e->src);
}

/* Remove the last entry equal to KEY/VAL; returns whether one was there. */
static bool entries_remove(struct modprobe_entries *e, const char *key, const char *val)
{
        for (size_t i = e->key.n; i-- > 0;) {
                if (!streq(e->key.v[i], key) || !streq(e->val.v[i], val ? val : ""))
                        continue;
                struct strv *lists[] = {&e->key, &e->val, &e->src};
                for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
                        free(lists[l]->v[i]);
                        memmove(lists[l]->v + i, lists[l]->v + i + 1, (lists[l]->n - i) * sizeof(char *));
                        lists[l]->n--;
                }
                return true;
        }
        return false;
}

static void add_blacklist_list(struct strv *bl, const char *list)
{
        _cleanup_free_ char *copy = xstrdup(list);
        char *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                _cleanup_free_ char *n = modname_normalize(t);
                if (modname_valid(n) && !strv_contains(bl, n))
                        strv_add(bl, n);
        }
}

/*
 * Kernel parameters (Documentation/admin-guide/kernel-parameters.rst): words split on blanks,
 * double quotes protect blanks, "--" ends the kernel's part. "MOD.param=value" sets a module
 * parameter, and modprobe applies it to loadable modules too (modprobe.d(5)).
 */
void cmdline_modules_parse(const char *cmdline, const char *src, struct cmdline_modules *ret)
{
        const char *p = cmdline;
        for (;;) {
                while (*p == ' ' || *p == '\t' || *p == '\n')
                        p++;
                if (!*p)
                        break;
                struct sbuf w = {0};
                bool quoted = false;
                for (; *p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
                        if (*p == '"')
                                quoted = !quoted;
                        sbuf_addn(&w, p, 1);
                }
                _cleanup_free_ char *word = sbuf_steal(&w);
                if (streq(word, "--"))
                        break;
                char *eq = strchr(word, '='), *dot = strchr(word, '.');
                if (!eq)
                        continue;
                /* the kernel strips the quotes around a value */
                char *val = eq + 1;
                size_t vl = strlen(val);
                if (vl >= 2 && val[0] == '"' && val[vl - 1] == '"') {
                        val[vl - 1] = '\0';
                        val++;
                }
                if (startswith(word, "module_blacklist=") || startswith(word, "modprobe.blacklist="))
                        add_blacklist_list(&ret->blacklist, val);
                else if (dot && dot < eq && dot > word) {
                        _cleanup_free_ char *raw = xstrndup(word, (size_t)(dot - word));
                        _cleanup_free_ char *mod = modname_normalize(raw);
                        if (modname_valid(mod))
                                modprobe_entries_add(&ret->options, mod, dot + 1, src);
                }
        }
}

void cmdline_modules_done(struct cmdline_modules *c)
{
        strv_done(&c->blacklist);
        modprobe_entries_done(&c->options);
}

static void kmod_quiet(void *data, int priority, const char *file, int line, const char *fn, const char *format,
                       va_list args)
{
}

/*
 * kmod_new() parses the configuration before kmod_set_log_fn() can be called, and logs bad lines
 * to stderr at its default priority; library code must not print, so KMOD_LOG=0 (emergencies
 * only; libkmod.c kmod_new) is set just around the call, unless the user set KMOD_LOG to debug.
 */
static struct kmod_ctx *kmod_new_quiet(const char *dirname, const char *const *paths)
{
        const char *old = getenv("KMOD_LOG");
        if (!old)
                setenv("KMOD_LOG", "0", 1);
        struct kmod_ctx *ctx = kmod_new(dirname, paths);
        if (!old)
                unsetenv("KMOD_LOG");
        if (ctx)
                kmod_set_log_fn(ctx, kmod_quiet, NULL);
        return ctx;
}

static void collect(struct kmod_config_iter *it, struct modprobe_entries *e, const char *src)
{
        while (it && kmod_config_iter_next(it))
                modprobe_entries_add(e, kmod_config_iter_get_key(it), kmod_config_iter_get_value(it), src);
        kmod_config_iter_free_iter(it);
}

static void collect_all(struct kmod_ctx *ctx, struct modprobe_config *c, const char *src)
{
        collect(kmod_config_get_blacklists(ctx), &c->blacklist, src);
        collect(kmod_config_get_options(ctx), &c->options, src);
        collect(kmod_config_get_install_commands(ctx), &c->install, src);
}

/* ROOT_PATH (sandbox_fn: "/", "/." or the tree's host path) joined with the absolute PATH. */
static char *under(const char *root_path, const char *path)
{
        size_t n = strlen(root_path);
        while (n > 0 && root_path[n - 1] == '/')
                n--;
        return xasprintf("%.*s%s", (int)n, root_path, path);
}

/* The entries of C as records "KIND\0KEY\0VALUE\0" (KIND b, o, i): text libkmod read from
 * configuration lines, which hold no NUL. */
static void put_entries(struct sbuf *out, char kind, const struct modprobe_entries *e)
{
        for (size_t i = 0; i < e->key.n; i++) {
                sbuf_addn(out, &kind, 1);
                sbuf_addn(out, e->key.v[i], strlen(e->key.v[i]) + 1);
                sbuf_addn(out, e->val.v[i], strlen(e->val.v[i]) + 1);
        }
}

/*
 * The work (sandbox_fn): ROOT's modprobe.d read by libkmod. libkmod appends what it finds on the
 * /proc/cmdline it can read (modprobe.blacklist=, MOD.param=) to every context, whatever root
 * the configuration came from (libkmod-config.c kmod_config_parse_kcmdline): inside Landlock it
 * can read none, in a chroot it reads the tree's, in the live system the live one. A second
 * context with no configuration directories holds exactly those entries, parsed by the same
 * libkmod, so they are subtracted here, and the caller adds ROOT's own command line back. One
 * code path everywhere, with the same result.
 */
static int kmod_work(void *arg, const char *root_path, struct sbuf *out)
{
        const char *release = arg;
        /* modprobe.d(5) search path, highest priority first, as libkmod has it (dropin-order.c) */
        _cleanup_strv_ struct strv dirs = {0};
        dropin_family_dirs(&dropin_modprobe, &dirs);
        char **paths = xcalloc(dirs.n + 1, sizeof(*paths));
        for (size_t i = 0; i < dirs.n; i++)
                paths[i] = under(root_path, dirs.v[i]);
        /* Only the configuration is used: the module directory need not exist. */
        _cleanup_free_ char *moddir = xasprintf("/lib/modules/%s", release ? release : "unknown");
        _cleanup_free_ char *dirname = under(root_path, moddir);
        struct kmod_ctx *ctx = kmod_new_quiet(dirname, (const char *const *)paths);
        for (size_t i = 0; i < dirs.n; i++)
                free(paths[i]);
        free(paths);
        if (!ctx) {
                sbuf_add(out, "kmod_new failed");
                return -ENOMEM;
        }
        struct modprobe_config c = {0};
        collect_all(ctx, &c, CONFIG_SRC);
        kmod_unref(ctx);
        const char *const none[] = {NULL};
        struct kmod_ctx *cmdline = kmod_new_quiet(dirname, none);
        if (cmdline) {
                struct modprobe_config l = {0};
                collect_all(cmdline, &l, "");
                for (size_t i = 0; i < l.blacklist.key.n; i++)
                        entries_remove(&c.blacklist, l.blacklist.key.v[i], NULL);
                for (size_t i = 0; i < l.options.key.n; i++)
                        entries_remove(&c.options, l.options.key.v[i], l.options.val.v[i]);
                for (size_t i = 0; i < l.install.key.n; i++)
                        entries_remove(&c.install, l.install.key.v[i], l.install.val.v[i]);
                modprobe_config_done(&l);
                kmod_unref(cmdline);
        }
        put_entries(out, 'b', &c.blacklist);
        put_entries(out, 'o', &c.options);
        put_entries(out, 'i', &c.install);
        modprobe_config_done(&c);
        return 0;
}

static void parse_entries(const char *data, size_t len, struct modprobe_config *c)
{
        const char *p = data, *end = data + len;
        while (p < end) {
                char kind = *p++;
                const char *key = p, *val = p + strnlen(p, (size_t)(end - p)) + 1;
                if (val >= end)
                        break;
                const char *next = val + strnlen(val, (size_t)(end - val)) + 1;
                if (next > end)
                        break;
                struct modprobe_entries *e = kind == 'b' ? &c->blacklist : kind == 'o' ? &c->options : &c->install;
                modprobe_entries_add(e, key, kind == 'b' ? NULL : val, CONFIG_SRC);
                p = next;
        }
}

int modprobe_config_load(struct root *r, const char *release, const struct cmdline_modules *cmd,
                         struct modprobe_config *ret, char **ret_why)
{
        char *data = NULL;
        size_t len = 0;
        int rc = sandbox_run(r, kmod_work, (void *)release, &data, &len, ret_why);
        if (rc < 0)
                return rc;
        struct modprobe_config c = {0};
        parse_entries(data, len, &c);
        free(data);
        if (cmd) {
                for (size_t i = 0; i < cmd->blacklist.n; i++)
                        modprobe_entries_add(&c.blacklist, cmd->blacklist.v[i], NULL, "/proc/cmdline");
                for (size_t i = 0; i < cmd->options.key.n; i++)
                        modprobe_entries_add(&c.options, cmd->options.key.v[i], cmd->options.val.v[i],
                                             cmd->options.src.v[i]);
        }
        *ret = c;
        return 0;
}

void modprobe_config_done(struct modprobe_config *c)
{
        modprobe_entries_done(&c->blacklist);
        modprobe_entries_done(&c->options);
        modprobe_entries_done(&c->install);
}
