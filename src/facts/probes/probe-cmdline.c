/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cmdline.*: the kernel command line now and at the next boot, and the tool that changes it.
 *   cmdline.tool          how this root's boot loader configuration is changed, the distribution's
 *                         own way: kernelstub (Pop!_OS: /etc/kernelstub/configuration), grubby (Boot
 *                         Loader Specification entries in /boot/loader/entries: Fedora, RHEL 8+), or
 *                         update-grub (/etc/default/grub and /etc/default/grub.d/\*.cfg: Debian,
 *                         Ubuntu); absent when none is there (llmtune never edits grub.cfg)
 *   cmdline.next          the command line the configuration gives the next boot: kernelstub's
 *                         "user" kernel_options; the options line of the BLS entry that boots (the
 *                         saved_entry of grubenv, else the running kernel's, else the first), with
 *                         $kernelopts from grubenv; GRUB_CMDLINE_LINUX then GRUB_CMDLINE_LINUX_DEFAULT
 *                         (the order grub-mkconfig writes them) after /etc/default/grub and each
 *                         grub.d file in name order, as the shell would assign them
 *   cmdline.next.KEY      the value of KEY there ("" for a bare flag), the last occurrence winning as
 *                         the kernel parses them; absent when KEY is not there
 *   cmdline.running.KEY   the same for /proc/cmdline: what is in force now
 * A configuration that cannot be read makes the next-boot facts unreadable, never empty.
 */
#include <errno.h>
#include <sys/stat.h>

#include "facts/readers/cmdline.h"
#include "facts/facts.h"
#include "facts/probes/probes.h"

#define GRUB_DEFAULT "/etc/default/grub"
#define GRUB_D "/etc/default/grub.d"
#define BLS_DIR "/boot/loader/entries"
#define KERNELSTUB_CONF "/etc/kernelstub/configuration"

static bool installed(struct root *r, const char *const *paths)
{
        struct stat st;
        for (size_t i = 0; paths[i]; i++)
                if (root_stat(r, paths[i], &st, true) == 0)
                        return true;
        return false;
}

/* --- GRUB's shell defaults: only the two command-line variables, as sh assigns them ------------- */

struct grub_vars {
        char *linux_, *linux_default;
};

static const char *grub_var(const struct grub_vars *g, const char *name, size_t n)
{
        if (n == strlen("GRUB_CMDLINE_LINUX") && strncmp(name, "GRUB_CMDLINE_LINUX", n) == 0)
                return g->linux_ ? g->linux_ : "";
        if (n == strlen("GRUB_CMDLINE_LINUX_DEFAULT") && strncmp(name, "GRUB_CMDLINE_LINUX_DEFAULT", n) == 0)
                return g->linux_default ? g->linux_default : "";
        return "";
}

/* The value of an assignment's right-hand side: "..." with $VAR and ${VAR} expanded, '...'
 * literal, else one word. */
static char *grub_value(const struct grub_vars *g, const char *v)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        char q = (*v == '"' || *v == '\'') ? *v++ : 0;
        for (; *v && (q ? *v != q : !strchr(" \t#;", *v)); v++) {
                if (*v == '\\' && q != '\'' && v[1]) {
                        sbuf_addn(&b, ++v, 1);
                        continue;
                }
                if (*v == '$' && q != '\'') {
                        bool brace = v[1] == '{';
                        const char *name = v + 1 + brace;
                        size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
                        sbuf_add(&b, grub_var(g, name, n));
                        v = name + n - 1 + brace;
                        continue;
                }
                sbuf_addn(&b, v, 1);
        }
        return sbuf_steal(&b);
}

static void grub_parse(struct grub_vars *g, const char *data)
{
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                const char *l = it.line + strspn(it.line, " \t");
                if (startswith(l, "export "))
                        l += strlen("export ") + strspn(l + strlen("export "), " \t");
                char **slot = startswith(l, "GRUB_CMDLINE_LINUX_DEFAULT=") ? &g->linux_default
                              : startswith(l, "GRUB_CMDLINE_LINUX=")       ? &g->linux_
                                                                           : NULL;
                if (!slot)
                        continue;
                char *v = grub_value(g, strchr(l, '=') + 1);
                free(*slot);
                *slot = v;
        }
}

/* GRUB_CMDLINE_LINUX GRUB_CMDLINE_LINUX_DEFAULT after /etc/default/grub and grub.d/\*.cfg. */
static int grub_next(struct root *r, char **ret, char **src, char **bad)
{
        struct grub_vars g = {0};
        const char *data;
        int rc = root_read(r, GRUB_DEFAULT, &data, NULL);
        if (rc < 0) {
                *bad = xstrdup(GRUB_DEFAULT);
                return rc;
        }
        grub_parse(&g, data);
        _cleanup_(strv_done) struct strv names = {0};
        rc = root_list(r, GRUB_D, &names);
        if (rc < 0 && !root_gone(rc)) {
                *bad = xstrdup(GRUB_D);
                goto out;
        }
        strv_sort(&names);
        for (size_t i = 0; i < names.n; i++) {
                if (!endswith(names.v[i], ".cfg"))
                        continue;
                _cleanup_free_ char *p = xasprintf(GRUB_D "/%s", names.v[i]);
                rc = root_read(r, p, &data, NULL);
                if (rc < 0 && !root_gone(rc)) {
                        *bad = xstrdup(p);
                        goto out;
                }
                if (rc == 0)
                        grub_parse(&g, data);
        }
        rc = 0;
        *ret = xasprintf("%s %s", g.linux_ ? g.linux_ : "", g.linux_default ? g.linux_default : "");
        *src = xstrdup(GRUB_DEFAULT ", " GRUB_D "/*.cfg");
out:
        free(g.linux_);
        free(g.linux_default);
        return rc;
}

/* --- Boot Loader Specification entries ------------------------------------------------------------ */

/* "key value" of a grubenv or BLS file, or NULL. */
static char *field(const char *data, const char *key, char sep)
{
        char *v = NULL;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (!v && line_next(&it))
                if (startswith(it.line, key) && it.line[strlen(key)] == sep)
                        v = xstrdup(it.line + strlen(key) + 1 + strspn(it.line + strlen(key) + 1, " \t"));
        return v;
}

/* The entry that boots: grubenv's saved_entry, else the running kernel's, else the first by name. */
static int bls_next(struct facts *f, char **ret, char **src, char **bad)
{
        struct root *r = facts_root(f);
        _cleanup_(strv_done) struct strv names = {0};
        int rc = root_list(r, BLS_DIR, &names);
        if (rc < 0) {
                *bad = xstrdup(BLS_DIR);
                return rc;
        }
        strv_sort(&names);
        const char *env = NULL;
        if (root_read(r, "/boot/grub2/grubenv", &env, NULL) < 0)
                env = NULL;
        _cleanup_free_ char *saved = env ? field(env, "saved_entry", '=') : NULL;
        _cleanup_free_ char *kernelopts = env ? field(env, "kernelopts", '=') : NULL;
        const struct fact *rel = facts_get(f, "kernel.release");
        _cleanup_free_ char *pick = NULL;
        for (int pass = 0; pass < 3 && !pick; pass++)
                for (size_t i = 0; i < names.n && !pick; i++) {
                        if (!endswith(names.v[i], ".conf"))
                                continue;
                        _cleanup_free_ char *id = xstrndup(names.v[i], strlen(names.v[i]) - strlen(".conf"));
                        bool take = pass == 0   ? saved && streq(id, saved)
                                    : pass == 1 ? rel && rel->status == FACT_OK && strstr(id, rel->str)
                                                : true;
                        if (take)
                                pick = xasprintf(BLS_DIR "/%s", names.v[i]);
                }
        if (!pick) {
                *bad = xstrdup(BLS_DIR);
                return -ENOENT;
        }
        const char *data;
        rc = root_read(r, pick, &data, NULL);
        if (rc < 0) {
                *bad = xstrdup(pick);
                return rc;
        }
        _cleanup_free_ char *opts = field(data, "options", ' ');
        /* RHEL 8 entries say "options $kernelopts", the value kept in grubenv */
        if (opts && strstr(opts, "$kernelopts") && kernelopts) {
                char *at = strstr(opts, "$kernelopts");
                char *x = xasprintf("%.*s%s%s", (int)(at - opts), opts, kernelopts, at + strlen("$kernelopts"));
                free(opts);
                opts = x;
        }
        *ret = opts ? xstrdup(opts) : xstrdup("");
        *src = xstrdup(pick);
        return 0;
}

/* --- kernelstub: {"user": {"kernel_options": ["quiet", "splash"], ...}} ---------------------------- */

static int kernelstub_next(struct root *r, char **ret, char **src, char **bad)
{
        const char *data;
        int rc = root_read(r, KERNELSTUB_CONF, &data, NULL);
        if (rc < 0) {
                *bad = xstrdup(KERNELSTUB_CONF);
                return rc;
        }
        const char *user = strstr(data, "\"user\"");
        const char *opts = user ? strstr(user, "\"kernel_options\"") : NULL;
        const char *arr = opts ? strchr(opts, '[') : NULL, *end = arr ? strchr(arr, ']') : NULL;
        if (!end) {
                *bad = xstrdup(KERNELSTUB_CONF);
                return -EBADMSG;
        }
        struct strv words = {0};
        for (const char *p = strchr(arr, '"'); p && p < end; p = strchr(p + 1, '"')) {
                const char *q = strchr(p + 1, '"');
                if (!q || q > end)
                        break;
                strv_push(&words, xstrndup(p + 1, (size_t)(q - p - 1)));
                p = q;
        }
        *ret = strv_join(&words, " ");
        strv_done(&words);
        *src = xstrdup(KERNELSTUB_CONF);
        return 0;
}

/* --- the facts ------------------------------------------------------------------------------------ */

static const char *tool_of(struct root *r)
{
        static const char *const kernelstub[] = {"/usr/bin/kernelstub", "/usr/sbin/kernelstub", NULL};
        static const char *const grubby[] = {"/usr/sbin/grubby", "/sbin/grubby", "/usr/bin/grubby", NULL};
        static const char *const update_grub[] = {"/usr/sbin/update-grub", "/sbin/update-grub", NULL};
        static const char *const kconf[] = {KERNELSTUB_CONF, NULL}, *const bls[] = {BLS_DIR, NULL},
                                 *const grub[] = {GRUB_DEFAULT, NULL};
        if (installed(r, kernelstub) && installed(r, kconf))
                return "kernelstub";
        if (installed(r, grubby) && installed(r, bls))
                return "grubby";
        if (installed(r, update_grub) && installed(r, grub))
                return "update-grub";
        return NULL;
}

static int cmdline_run(struct facts *f)
{
        struct root *r = facts_root(f);
        const char *tool = tool_of(r);
        if (!tool) {
                const char *why = "no boot loader configuration llmtune changes: kernelstub, Boot Loader Specification "
                                  "entries with grubby, or /etc/default/grub with update-grub";
                fact_absent(f, GRUB_DEFAULT, why, "cmdline.tool");
                fact_absent(f, GRUB_DEFAULT, why, "cmdline.next");
                return 0;
        }
        fact_str(f, streq(tool, "kernelstub") ? KERNELSTUB_CONF : streq(tool, "grubby") ? BLS_DIR : GRUB_DEFAULT, tool,
                 "cmdline.tool");
        _cleanup_free_ char *next = NULL, *src = NULL, *bad = NULL;
        int rc = streq(tool, "kernelstub") ? kernelstub_next(r, &next, &src, &bad)
                 : streq(tool, "grubby")   ? bls_next(f, &next, &src, &bad)
                                           : grub_next(r, &next, &src, &bad);
        if (rc < 0)
                fact_unreadable(f, bad, rc, "the next boot's command line is unknown", "cmdline.next");
        else
                fact_str(f, src, next, "cmdline.next");
        return 0;
}

/* cmdline.next.KEY and cmdline.running.KEY on demand. */
static int cmdline_lookup(struct facts *f, const char *name)
{
        bool next = startswith(name, "cmdline.next.");
        if (!next && !startswith(name, "cmdline.running."))
                return -ENOENT;
        const char *key = name + (next ? strlen("cmdline.next.") : strlen("cmdline.running."));
        if (!*key || strchr(key, ' '))
                return -EINVAL;
        const struct fact *line = facts_get(f, next ? "cmdline.next" : "kernel.cmdline");
        if (!line && next) { /* asked first: this probe is running, so facts_get does not run it */
                cmdline_run(f);
                line = facts_get(f, "cmdline.next");
        }
        if (!line || line->status != FACT_OK) {
                if (line && line->status == FACT_UNREADABLE)
                        fact_unreadable(f, line->source, 0, line->reason, "%s", name);
                else
                        fact_absent(f, line ? line->source : "/proc/cmdline",
                                    line && line->reason ? line->reason : "no command line", "%s", name);
                return 0;
        }
        _cleanup_free_ char *value = NULL;
        if (cmdline_get_key(line->str, key, NULL, &value))
                fact_str(f, line->source, value ? value : "", "%s", name);
        else
                fact_absent(f, line->source, next ? "not on the next boot's command line" : "not on the command line",
                            "%s", name);
        return 0;
}

const struct probe probe_cmdline = {
        .name = "cmdline",
        .prefixes = {"cmdline."},
        .run = cmdline_run,
        .lookup = cmdline_lookup,
};
