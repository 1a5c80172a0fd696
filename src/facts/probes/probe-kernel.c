/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kernel.*, module.*, modprobe.*, nvidia.*: the running kernel and its command line, loaded
 * modules (/proc/modules, proc(5); /sys/module, sysfs-module ABI), the modprobe.d configuration
 * as libkmod reads it (modprobe.d(5)), and the NVIDIA driver version.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <libkmod.h>
#include <stdio.h>

#include "facts/facts.h"
#include "facts/adapters/modprobe-config.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

#define MODULES "/proc/modules"
#define CMDLINE "/proc/cmdline"
#define KMOD_SRC "modprobe.d (libkmod)"
/* Without /proc/modules: on the live system the kernel has no loadable module support; a foreign
 * tree may simply not have copied it. */
#define NO_MODULES (root_runs_here(facts_root(f)) ? "no /proc/modules: kernel without loadable module support" \
                                                : "no /proc/modules in this tree")

/* Reported even when nobody asks: the modules an LLM training host cares about. */
static const char *const curated[] = {
        "nouveau",        "nvidia",      "nvidia_uvm", "nvidia_modeset", "nvidia_drm",
        "nvidia_peermem", "nv_peer_mem", "ib_core",    "mlx5_core",      "ib_uverbs",
};

struct kstate {
        bool base_done, kernel_done;
        char *release; /* NULL when unknown */
        const char *release_src; /* the file it was read from */
        const char *release_bad; /* a source of it that is there but could not be read, and its error */
        int release_rc;
        char *cmdline; /* ROOT's, NULL when unreadable */
        int cmdline_rc; /* of reading it: a command line that is there but unreadable may say anything */
        struct cmdline_modules cmd; /* what ROOT's command line says about modules */

        bool modules_done;
        int modules_err;
        char *modules_reason;
        struct strv loaded, states; /* /proc/modules names ('_' spelling) and states, parallel */

        bool config_done;
        int config_err;
        char *config_why; /* why libkmod gave nothing (config_err) */
        struct modprobe_config config;
};

static void kstate_free(void *p)
{
        struct kstate *ks = p;
        free(ks->release);
        free(ks->cmdline);
        cmdline_modules_done(&ks->cmd);
        free(ks->modules_reason);
        strv_done(&ks->loaded);
        strv_done(&ks->states);
        modprobe_config_done(&ks->config);
        free(ks->config_why);
        free(ks);
}

static struct kstate *kstate(struct facts *f)
{
        return facts_state(f, "kernel.state", sizeof(struct kstate), kstate_free);
}

/* --- kernel.* --------------------------------------------------------------------------------- */

static void ensure_base(struct facts *f, struct kstate *ks)
{
        if (ks->base_done)
                return;
        ks->base_done = true;
        struct root *r = facts_root(f);
        _cleanup_free_ char *rel = NULL;
        int rc = root_read_line(r, "/proc/sys/kernel/osrelease", &rel);
        ks->release_src = "/proc/sys/kernel/osrelease";
        if (rc == 0 && !strchr(rel, '/') && !strchr(rel, ' '))
                ks->release = xstrdup(rel);
        else {
                ks->release_src = "/proc/version";
                if (rc < 0 && !root_gone(rc) && rc != -ENODATA) {
                        ks->release_bad = "/proc/sys/kernel/osrelease";
                        ks->release_rc = rc;
                }
                /* "Linux version 6.8.0-45-generic (buildd@...) ..." (the same release: a second source) */
                _cleanup_free_ char *ver = NULL;
                char word[256];
                rc = root_read_line(r, "/proc/version", &ver);
                if (rc == 0 && sscanf(ver, "Linux version %255s", word) == 1 && !strchr(word, '/'))
                        ks->release = xstrdup(word);
                else if (rc < 0 && !root_gone(rc) && rc != -ENODATA && !ks->release_bad) {
                        ks->release_bad = "/proc/version";
                        ks->release_rc = rc;
                }
        }
        ks->cmdline_rc = root_read_line(r, CMDLINE, &ks->cmdline);
        if (ks->cmdline_rc == 0)
                cmdline_modules_parse(ks->cmdline, CMDLINE, &ks->cmd);
}

int kernel_release_at_least(struct facts *f, unsigned maj, unsigned min, const char **ret_release)
{
        const struct fact *rel = facts_get(f, "kernel.release");
        bool known = rel && rel->status == FACT_OK;
        unsigned a = 0, b = 0;
        if (ret_release)
                *ret_release = known ? rel->str : NULL;
        if (!known || sscanf(rel->str, "%u.%u", &a, &b) != 2)
                return -ENODATA;
        return a > maj || (a == maj && b >= min);
}

static void kernel_facts(struct facts *f, struct kstate *ks)
{
        if (ks->kernel_done)
                return;
        ks->kernel_done = true;
        const char *rsrc = ks->release_src;
        if (ks->release)
                fact_str(f, rsrc, ks->release, "kernel.release");
        else if (ks->release_bad)
                fact_unreadable(f, ks->release_bad, ks->release_rc, NULL, "kernel.release");
        else
                fact_absent(f, rsrc, "no /proc/sys/kernel/osrelease and no readable /proc/version", "kernel.release");

        /* read once, by ensure_base: the one reading of the command line (cmdline.h parses it) */
        int rc = ks->cmdline_rc;
        if (rc == 0)
                fact_str(f, CMDLINE, ks->cmdline, "kernel.cmdline");
        else if (rc == -ENODATA)
                fact_str(f, CMDLINE, "", "kernel.cmdline");
        else if (rc == -ENOENT)
                fact_absent(f, CMDLINE, "no /proc/cmdline", "kernel.cmdline");
        else
                fact_unreadable(f, CMDLINE, rc, NULL, "kernel.cmdline");
        if (root_gone(rc))
                fact_absent(f, CMDLINE, "no kernel command line", "kernel.cmdline.module_blacklist");
        else if (rc < 0 && rc != -ENODATA)
                fact_unreadable(f, CMDLINE, rc, NULL, "kernel.cmdline.module_blacklist");
        else if (ks->cmd.blacklist.n == 0)
                fact_absent(f, CMDLINE, "no module_blacklist= or modprobe.blacklist= on the kernel command line",
                            "kernel.cmdline.module_blacklist");
        else {
                _cleanup_free_ char *s = strv_join(&ks->cmd.blacklist, ",");
                fact_str(f, CMDLINE, s, "kernel.cmdline.module_blacklist");
        }
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..." (also "Open Kernel
 * Module for x86_64"): the first word that looks like a version. */
static void nvidia_facts(struct facts *f)
{
        const char *path = "/proc/driver/nvidia/version";
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(facts_root(f), path, &line);
        if (root_gone(rc)) {
                fact_absent(f, path, "no NVIDIA driver loaded (no /proc/driver/nvidia/version)", "nvidia.driver.version");
                fact_absent(f, path, "no NVIDIA driver loaded (no /proc/driver/nvidia/version)", "nvidia.driver.flavor");
                return;
        }
        if (rc < 0) {
                fact_unreadable(f, path, rc, NULL, "nvidia.driver.version");
                fact_unreadable(f, path, rc, NULL, "nvidia.driver.flavor");
                return;
        }
        char *nvrm = strstr(line, "NVRM version:");
        /* The open kernel modules say "Open Kernel Module for x86_64", the proprietary ones "Kernel
         * Module" alone. */
        if (nvrm)
                fact_str(f, path, strstr(nvrm, "Open Kernel Module") ? "open" : "proprietary", "nvidia.driver.flavor");
        else
                fact_unreadable(f, path, -EBADMSG, "no \"NVRM version:\" line", "nvidia.driver.flavor");
        char *save = NULL;
        if (nvrm) {
                char *eol = strchr(nvrm, '\n');
                if (eol)
                        *eol = '\0';
                for (char *t = strtok_r(nvrm + strlen("NVRM version:"), " \t", &save); t;
                     t = strtok_r(NULL, " \t", &save)) {
                        bool digits = isdigit((unsigned char)t[0]), dot = false;
                        for (const char *c = t; digits && *c; c++) {
                                dot |= *c == '.';
                                digits = isdigit((unsigned char)*c) || (*c == '.' && isdigit((unsigned char)c[1]));
                        }
                        if (digits && dot && strlen(t) < 32) {
                                fact_str(f, path, t, "nvidia.driver.version");
                                return;
                        }
                }
        }
        fact_unreadable(f, path, -EBADMSG, "no \"NVRM version: ... X.Y.Z\" line", "nvidia.driver.version");
}

/* --- module.* ----------------------------------------------------------------------------------- */

/* "name size refcount deps state address [taints]" (kernel/module/procfs.c m_show). */
static void ensure_modules(struct facts *f, struct kstate *ks)
{
        if (ks->modules_done)
                return;
        ks->modules_done = true;
        const char *data;
        int rc = root_read_text(facts_root(f), MODULES, &data, NULL);
        if (rc < 0) {
                ks->modules_err = rc;
                return;
        }
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                char *fields[5] = {0}, *save = NULL;
                size_t k = 0;
                for (char *t = strtok_r(it.line, " \t", &save); t && k < 5; t = strtok_r(NULL, " \t", &save))
                        fields[k++] = t;
                if (k == 0)
                        continue;
                uint64_t size;
                if (k < 5 || !modname_valid(fields[0]) || parse_u64(fields[1], &size) < 0 ||
                    (!streq(fields[4], "Live") && !streq(fields[4], "Loading") && !streq(fields[4], "Unloading"))) {
                        ks->modules_err = -EBADMSG;
                        ks->modules_reason = xasprintf("malformed line %u of " MODULES, it.lineno);
                        strv_done(&ks->loaded);
                        strv_done(&ks->states);
                        return;
                }
                strv_push(&ks->loaded, modname_normalize(fields[0]));
                char *state = xstrdup(fields[4]);
                for (char *c = state; *c; c++)
                        *c = (char)tolower((unsigned char)*c);
                strv_push(&ks->states, state);
        }
}

static void module_facts(struct facts *f, struct kstate *ks, const char *asked)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *name = modname_normalize(asked);
        ensure_modules(f, ks);
        if (ks->modules_err == 0)
                for (size_t i = 0; i < ks->loaded.n; i++)
                        if (streq(ks->loaded.v[i], name)) {
                                fact_bool(f, MODULES, true, "module.%s.loaded", asked);
                                fact_str(f, MODULES, ks->states.v[i], "module.%s.state", asked);
                                return;
                        }
        if (ks->modules_err < 0 && ks->modules_err != -ENOENT) {
                fact_unreadable(f, MODULES, ks->modules_err, ks->modules_reason, "module.%s.loaded", asked);
                fact_unreadable(f, MODULES, ks->modules_err, ks->modules_reason, "module.%s.state", asked);
                return;
        }
        /* /sys/module/NAME: initstate for a loadable module ("live", "coming", "going"); a directory
         * without it is a built-in with parameters (Documentation/ABI/stable/sysfs-module). */
        _cleanup_free_ char *dir = xasprintf("/sys/module/%s", name);
        _cleanup_free_ char *init = xasprintf("%s/initstate", dir);
        _cleanup_free_ char *state = NULL;
        struct stat st;
        int rc = root_read_line(r, init, &state);
        if (rc == 0) {
                fact_bool(f, init, true, "module.%s.loaded", asked);
                fact_str(f, init, state, "module.%s.state", asked);
        } else if (rc == -ENOENT && root_stat(r, dir, &st, true) == 0 && S_ISDIR(st.st_mode)) {
                fact_bool(f, dir, true, "module.%s.loaded", asked);
                fact_str(f, dir, "builtin", "module.%s.state", asked);
        } else if (rc != -ENOENT) {
                fact_unreadable(f, init, rc, NULL, "module.%s.loaded", asked);
                fact_unreadable(f, init, rc, NULL, "module.%s.state", asked);
        } else if (ks->modules_err == 0) {
                fact_bool(f, MODULES, false, "module.%s.loaded", asked);
                fact_absent(f, MODULES, "not loaded", "module.%s.state", asked);
        } else {
                fact_absent(f, MODULES, NO_MODULES, "module.%s.loaded", asked);
                fact_absent(f, MODULES, NO_MODULES, "module.%s.state", asked);
        }
}

static void module_list_fact(struct facts *f, struct kstate *ks)
{
        ensure_modules(f, ks);
        if (ks->modules_err == 0) {
                struct strv sorted = {0};
                for (size_t i = 0; i < ks->loaded.n; i++)
                        strv_add(&sorted, ks->loaded.v[i]);
                strv_sort(&sorted);
                _cleanup_free_ char *s = strv_join(&sorted, " ");
                fact_str(f, MODULES, s, "module.loaded");
                strv_done(&sorted);
                return;
        }
        if (ks->modules_err != -ENOENT) {
                fact_unreadable(f, MODULES, ks->modules_err, ks->modules_reason, "module.loaded");
                return;
        }
        /* No /proc/modules (a container's masked /proc): loadable modules still show initstate. */
        struct root *r = facts_root(f);
        _cleanup_(strv_done) struct strv ents = {0};
        _cleanup_(strv_done) struct strv live = {0};
        int rc = root_list(r, "/sys/module", &ents);
        if (rc < 0 && !root_gone(rc)) {
                fact_unreadable(f, "/sys/module", rc, "no /proc/modules, and its second source cannot be listed",
                                "module.loaded");
                return;
        }
        for (size_t i = 0; i < ents.n; i++) {
                _cleanup_free_ char *p = xasprintf("/sys/module/%s/initstate", ents.v[i]);
                struct stat st;
                rc = root_stat(r, p, &st, true);
                if (rc == 0)
                        strv_add(&live, ents.v[i]);
                else if (!root_gone(rc)) {
                        fact_unreadable(f, p, rc, "whether that module is loaded is unknown", "module.loaded");
                        return;
                }
        }
        if (live.n) {
                _cleanup_free_ char *s = strv_join(&live, " ");
                fact_str(f, "/sys/module/*/initstate", s, "module.loaded");
        } else
                fact_absent(f, MODULES, NO_MODULES, "module.loaded");
}

/* --- modprobe.* --------------------------------------------------------------------------------- */

static void ensure_config(struct facts *f, struct kstate *ks)
{
        if (ks->config_done)
                return;
        ks->config_done = true;
        ensure_base(f, ks);
        ks->config_err = modprobe_config_load(facts_root(f), ks->release, &ks->cmd, &ks->config, &ks->config_why);
        /* libkmod ran (in the sandbox under a foreign root): for LLMTUNE_STATS and the tests. */
        if (ks->config_err == 0)
                facts_set_handle(f, "kmod", xstrdup("kmod"), free);
}

static void modprobe_facts(struct facts *f, struct kstate *ks, const char *asked)
{
        ensure_config(f, ks);
        if (ks->config_err) {
                const char *names[] = {"blacklisted", "options", "install"};
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        fact_unreadable(f, KMOD_SRC, 0, ks->config_why, "modprobe.%s.%s", asked,
                                        names[i]);
                return;
        }
        _cleanup_free_ char *name = modname_normalize(asked);
        const char *bsrc = NULL;
        for (size_t i = 0; i < ks->config.blacklist.key.n && !bsrc; i++)
                if (streq(ks->config.blacklist.key.v[i], name))
                        bsrc = ks->config.blacklist.src.v[i];
        /* modprobe.blacklist= and MODULE.PARAM= of a command line that cannot be read may be there */
        bool cmd_bad = ks->cmdline_rc < 0 && !root_gone(ks->cmdline_rc) && ks->cmdline_rc != -ENODATA;
        if (!bsrc && cmd_bad)
                fact_unreadable(f, CMDLINE, ks->cmdline_rc, NULL, "modprobe.%s.blacklisted", asked);
        else
                fact_bool(f, bsrc ? bsrc : KMOD_SRC, bsrc != NULL, "modprobe.%s.blacklisted", asked);

        /* options and install take shell patterns as the module name (kmod_module_get_options). */
        struct strv opts = {0};
        const char *osrc = NULL;
        for (size_t i = 0; i < ks->config.options.key.n; i++)
                if (fnmatch(ks->config.options.key.v[i], name, 0) == 0) {
                        strv_add(&opts, ks->config.options.val.v[i]);
                        if (!osrc)
                                osrc = ks->config.options.src.v[i];
                }
        if (opts.n) {
                _cleanup_free_ char *s = strv_join(&opts, " ");
                fact_str(f, osrc, s, "modprobe.%s.options", asked);
        } else if (cmd_bad)
                fact_unreadable(f, CMDLINE, ks->cmdline_rc, NULL, "modprobe.%s.options", asked);
        else
                fact_absent(f, KMOD_SRC, "no options for this module", "modprobe.%s.options", asked);
        strv_done(&opts);
        /* modprobe runs only the first matching install command. */
        for (size_t i = 0; i < ks->config.install.key.n; i++)
                if (fnmatch(ks->config.install.key.v[i], name, 0) == 0) {
                        fact_str(f, ks->config.install.src.v[i], ks->config.install.val.v[i], "modprobe.%s.install", asked);
                        return;
                }
        fact_absent(f, KMOD_SRC, "no install command for this module", "modprobe.%s.install", asked);
}

static void blacklist_fact(struct facts *f, struct kstate *ks)
{
        ensure_config(f, ks);
        if (ks->config_err) {
                fact_unreadable(f, KMOD_SRC, 0, ks->config_why, "modprobe.blacklist");
                return;
        }
        struct strv names = {0};
        for (size_t i = 0; i < ks->config.blacklist.key.n; i++)
                if (!strv_contains(&names, ks->config.blacklist.key.v[i]))
                        strv_add(&names, ks->config.blacklist.key.v[i]);
        strv_sort(&names);
        _cleanup_free_ char *s = strv_join(&names, " ");
        fact_str(f, KMOD_SRC ", " CMDLINE, s, "modprobe.blacklist");
        strv_done(&names);
}

/* --- the probe ---------------------------------------------------------------------------------- */

/* "module.NAME.loaded" -> NAME, or NULL when NAME is not a module name. */
static char *middle(const char *name, const char *prefix, const char *const *attrs, size_t n)
{
        const char *rest = name + strlen(prefix), *dot = strrchr(rest, '.');
        if (!dot || dot == rest)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (streq(dot + 1, attrs[i])) {
                        char *mid = xstrndup(rest, (size_t)(dot - rest));
                        if (modname_valid(mid))
                                return mid;
                        free(mid);
                        return NULL;
                }
        return NULL;
}

static int kernel_lookup(struct facts *f, const char *name)
{
        static const char *const mattrs[] = {"loaded", "state"};
        static const char *const pattrs[] = {"blacklisted", "options", "install"};
        struct kstate *ks = kstate(f);
        ensure_base(f, ks);
        _cleanup_free_ char *mod = NULL;
        if (startswith(name, "module.") && (mod = middle(name, "module.", mattrs, ARRAY_SIZE(mattrs)))) {
                module_facts(f, ks, mod);
                return 0;
        }
        if (startswith(name, "modprobe.") && (mod = middle(name, "modprobe.", pattrs, ARRAY_SIZE(pattrs)))) {
                modprobe_facts(f, ks, mod);
                return 0;
        }
        /* the release and command line alone (probe-mem asks for the release): no module stage */
        if (startswith(name, "kernel.")) {
                kernel_facts(f, ks);
                return 0;
        }
        return -ENOENT;
}

static int kernel_run(struct facts *f)
{
        struct kstate *ks = kstate(f);
        ensure_base(f, ks);
        kernel_facts(f, ks);
        nvidia_facts(f);
        module_list_fact(f, ks);
        blacklist_fact(f, ks);
        for (size_t i = 0; i < ARRAY_SIZE(curated); i++) {
                module_facts(f, ks, curated[i]);
                modprobe_facts(f, ks, curated[i]);
        }
        return 0;
}

const struct probe probe_kernel = {
        .name = "kernel",
        .prefixes = {"kernel.", "module.", "modprobe.", "nvidia."},
        .run = kernel_run,
        .lookup = kernel_lookup,
};
