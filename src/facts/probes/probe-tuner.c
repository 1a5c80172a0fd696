/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tuner.*: services enabled at boot that set the CPU governor or transparent hugepages themselves,
 * after systemd-tmpfiles has written llmtune's values (tmpfiles.d(5) runs early; these services start
 * later and win). Each is read from the root's unit links and configuration files, never from a
 * running daemon:
 *   tuned                  tuned.service enabled (service.tuned.enabled); its profile names from
 *                          /etc/tuned/active_profile; the profile's tuned.conf (tuned.conf(5)) from
 *                          /etc/tuned[/profiles]/NAME or /usr/lib/tuned[/profiles]/NAME, include=
 *                          followed: [cpu] governor= (the cpu plugin), [vm] transparent_hugepages=
 *                          and transparent_hugepage.defrag= (the vm plugin)
 *   power-profiles-daemon  power-profiles-daemon.service enabled; its intel_pstate and amd_pstate
 *                          drivers write scaling_governor "powersave" before they set the energy
 *                          preference (power-profiles-daemon's ppd-driver-intel-pstate.c,
 *                          ppd-driver-amd-pstate.c); with another cpufreq driver it sets no governor
 *   ondemand               Ubuntu's ondemand.service (/etc/init.d/ondemand): a minute after boot the
 *                          first of interactive, ondemand, powersave the driver offers
 *   cpupower               cpupower.service: "-g GOVERNOR" in CPUPOWER_START_OPTS of
 *                          /etc/sysconfig/cpupower (Fedora, RHEL), governor= of /etc/default/cpupower
 *                          or GOVERNOR= of /etc/cpupower-service.conf (Arch)
 *   cpufrequtils           Debian's /etc/init.d/cpufrequtils, enabled by an S link in /etc/rc[2-5].d
 *                          (run by systemd-sysv-generator(8)) or a cpufrequtils.service link, not
 *                          masked; GOVERNOR= of the script, overridden by /etc/default/cpufrequtils;
 *                          ENABLE="false" there turns it off
 * Facts: tuner.count and tuner.enabled (names) over the enabled ones; per enabled tuner T:
 * tuner.T.unit (what enables it), tuner.T.governor, and for tuned tuner.tuned.profile,
 * tuner.tuned.thp, tuner.tuned.thp_defrag. A tuner that sets no such value has the fact absent with
 * the reason; one whose configuration cannot be read has it unreadable (it may set anything).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "facts/facts.h"
#include "facts/probes/probes.h"

#define MAX_INCLUDE_DEPTH 8

/* "a|b|c" (tuned's list, ondemand's order): the first the cpufreq driver offers; the list itself
 * when the offered governors are unknown. */
static char *first_offered(struct facts *f, const char *choices)
{
        if (!strchr(choices, '|'))
                return xstrdup(choices);
        const struct fact **v = NULL;
        size_t n = facts_match(f, "cpu.policy.*.available_governors", &v);
        const char *offered = NULL;
        for (size_t i = 0; i < n && !offered; i++)
                if (v[i]->status == FACT_OK)
                        offered = v[i]->str;
        free(v);
        if (!offered)
                return xstrdup(choices);
        _cleanup_free_ char *copy = xstrdup(choices);
        char *save = NULL;
        for (char *t = strtok_r(copy, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
                size_t tl = strlen(t);
                for (const char *p = strstr(offered, t); p; p = strstr(p + 1, t))
                        if ((p == offered || p[-1] == ' ') && (p[tl] == '\0' || p[tl] == ' ' || p[tl] == '\n'))
                                return xstrdup(t);
        }
        return xstrdup(choices);
}

/* --- shell-style KEY=value files (/etc/default, /etc/sysconfig, init scripts) ---------------- */

/* The value of the last "KEY=value" line (quotes removed, a trailing comment dropped); NULL when no
 * line sets it. FIRST: the first line instead (an init script's default before it sources the
 * configuration). */
static char *shell_var(const char *data, const char *key, bool first)
{
        char *found = NULL;
        size_t kl = strlen(key);
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                char *l = it.line;
                while (*l == ' ' || *l == '\t')
                        l++;
                if (startswith(l, "export "))
                        l += strlen("export ");
                if (strncmp(l, key, kl) != 0 || l[kl] != '=')
                        continue;
                char *v = l + kl + 1;
                char q = *v == '"' || *v == '\'' ? *v : 0;
                if (q) {
                        char *end = strchr(v + 1, q);
                        if (!end)
                                continue;
                        *end = '\0';
                        v++;
                } else {
                        v[strcspn(v, " \t#;")] = '\0';
                }
                free(found);
                found = xstrdup(v);
                if (first)
                        break;
        }
        return found;
}

/* --- tuned ------------------------------------------------------------------------------------ */

struct tuned_vals {
        char *governor, *thp, *defrag; /* NULL: not set */
        char *governor_src, *thp_src, *defrag_src;
        char *missing;                 /* a profile (or include) that could not be found */
        char *unreadable;              /* a profile file that is there but could not be read */
        int unreadable_rc;
};

static void tv_set(char **val, char **src, const char *v, const char *path)
{
        free(*val);
        free(*src);
        *val = xstrdup(v);
        *src = xstrdup(path);
}

static void tv_done(struct tuned_vals *t)
{
        free(t->governor);
        free(t->thp);
        free(t->defrag);
        free(t->governor_src);
        free(t->thp_src);
        free(t->defrag_src);
        free(t->missing);
        free(t->unreadable);
}

/* tuned 2.23 moved profiles into a profiles/ subdirectory; /etc takes precedence over /usr/lib. */
static const char *const tuned_dirs[] = {"/etc/tuned/profiles", "/etc/tuned", "/usr/lib/tuned/profiles", "/usr/lib/tuned"};

static void tuned_load(struct root *r, const char *name, unsigned depth, struct tuned_vals *t);

/* One line of tuned.conf (modified in place): 1 a section header (*k its name), 2 a key (*k = *v),
 * 0 a comment, a blank or anything else. */
static int conf_line(char *l, char **k, char **v)
{
        while (isspace((unsigned char)*l))
                l++;
        strip_trailing(l);
        if (*l == '#' || *l == ';' || !*l)
                return 0;
        if (*l == '[') {
                char *end = strchr(l, ']');
                if (!end)
                        return 0;
                *end = '\0';
                *k = l + 1;
                return 1;
        }
        char *eq = strchr(l, '=');
        if (!eq)
                return 0;
        *eq = '\0';
        *k = l;
        *v = eq + 1;
        strip_trailing(*k);
        while (isspace((unsigned char)**v))
                (*v)++;
        return 2;
}

/* K = V in section NAME of plugin PLUGIN. */
static void tuned_value(struct root *r, const char *path, unsigned depth, struct tuned_vals *t, const char *name,
                        const char *plugin, const char *k, const char *v)
{
        if (streq(name, "main") && streq(k, "include")) {
                /* included profiles first, this one's values override them */
                _cleanup_free_ char *list = xstrdup(v);
                char *save = NULL;
                for (char *n = strtok_r(list, ", \t", &save); n; n = strtok_r(NULL, ", \t", &save))
                        tuned_load(r, n, depth + 1, t);
        } else if (streq(plugin, "cpu") && streq(k, "governor"))
                tv_set(&t->governor, &t->governor_src, v, path);
        else if (streq(plugin, "vm") && (streq(k, "transparent_hugepages") || streq(k, "transparent_hugepage")))
                tv_set(&t->thp, &t->thp_src, v, path);
        else if (streq(plugin, "vm") && streq(k, "transparent_hugepage.defrag"))
                tv_set(&t->defrag, &t->defrag_src, v, path);
}

static void tuned_apply(struct root *r, const char *path, const char *data, unsigned depth, struct tuned_vals *t)
{
        /* The section's plugin is its name unless a type= line says otherwise (tuned.conf(5)): find
         * the types first, then take the values. */
        _cleanup_(strv_done) struct strv sect = {0}, type = {0};
        for (int pass = 0; pass < 2; pass++) {
                size_t idx = 0;
                bool in = false;
                _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
                while (line_next(&it)) {
                        char *k = NULL, *v = NULL;
                        int kind = conf_line(it.line, &k, &v);
                        if (kind == 1) {
                                if (pass == 0) {
                                        strv_add(&sect, k);
                                        strv_add(&type, k);
                                }
                                idx = in ? idx + 1 : 0;
                                in = true;
                        } else if (kind == 2 && in && pass == 0 && streq(k, "type")) {
                                free(type.v[idx]);
                                type.v[idx] = xstrdup(v);
                        } else if (kind == 2 && in && pass == 1)
                                tuned_value(r, path, depth, t, sect.v[idx], type.v[idx], k, v);
                }
        }
}

static void tuned_load(struct root *r, const char *name, unsigned depth, struct tuned_vals *t)
{
        if (depth > MAX_INCLUDE_DEPTH || strchr(name, '/') || name[0] == '.' || strchr(name, '$'))
                return; /* a loop, a path, or a ${f:...} function tuned evaluates at run time */
        for (size_t i = 0; i < ARRAY_SIZE(tuned_dirs); i++) {
                _cleanup_free_ char *path = xasprintf("%s/%s/tuned.conf", tuned_dirs[i], name);
                const char *data;
                int rc = root_read(r, path, &data, NULL);
                if (rc == 0) {
                        tuned_apply(r, path, data, depth, t);
                        return;
                }
                if (!root_gone(rc)) {
                        /* tuned would read this one, not a later directory's: what it sets is unknown */
                        if (!t->unreadable) {
                                t->unreadable = xstrdup(path);
                                t->unreadable_rc = rc;
                        }
                        return;
                }
        }
        if (!t->missing)
                t->missing = xstrdup(name);
}

static void tuned_facts(struct facts *f, const char *unit_src)
{
        struct root *r = facts_root(f);
        const char *ap = "/etc/tuned/active_profile";
        fact_str(f, unit_src, "tuned.service", "tuner.tuned.unit");
        const char *data;
        int rc = root_read(r, ap, &data, NULL);
        const char *names[] = {"tuner.tuned.governor", "tuner.tuned.thp", "tuner.tuned.thp_defrag"};
        if (rc < 0) {
                /* without the file tuned applies the profile "tuned-adm recommend" picks: unknown here */
                const char *why = rc == -ENOENT ? "no /etc/tuned/active_profile: tuned starts the profile tuned-adm "
                                                  "recommend picks, which this tree does not say"
                                                : NULL;
                fact_unreadable(f, ap, rc, why, "tuner.tuned.profile");
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        fact_unreadable(f, ap, rc, why, "%s", names[i]);
                return;
        }
        _cleanup_free_ char *prof = xstrdup(data);
        strip_trailing(prof);
        for (char *c = prof; *c; c++)
                if (*c == '\n' || *c == '\t')
                        *c = ' ';
        if (!*prof) {
                fact_unreadable(f, ap, -ENODATA, "empty: tuned starts its recommended profile", "tuner.tuned.profile");
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        fact_unreadable(f, ap, -ENODATA, "no active profile", "%s", names[i]);
                return;
        }
        fact_str(f, ap, prof, "tuner.tuned.profile");
        /* several names: merged left to right, the later one wins (tuned-adm(8) profile A B) */
        struct tuned_vals t = {0};
        _cleanup_free_ char *list = xstrdup(prof);
        char *save = NULL;
        for (char *n = strtok_r(list, " ", &save); n; n = strtok_r(NULL, " ", &save))
                tuned_load(r, n, 0, &t);
        if (t.unreadable) {
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        fact_unreadable(f, t.unreadable, t.unreadable_rc, "a tuned profile file (it may set anything)",
                                        "%s", names[i]);
                tv_done(&t);
                return;
        }
        if (t.missing) {
                _cleanup_free_ char *why = xasprintf("tuned profile '%s' not found in /etc/tuned or /usr/lib/tuned "
                                                     "(it may set anything)",
                                                     t.missing);
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        fact_unreadable(f, ap, -ENOENT, why, "%s", names[i]);
                tv_done(&t);
                return;
        }
        _cleanup_free_ char *none = xasprintf("tuned profile '%s' sets no ", prof);
        if (t.governor) {
                _cleanup_free_ char *g = first_offered(f, t.governor);
                fact_str(f, t.governor_src, g, "tuner.tuned.governor");
        } else {
                _cleanup_free_ char *why = xasprintf("%s[cpu] governor", none);
                fact_absent(f, ap, why, "tuner.tuned.governor");
        }
        if (t.thp)
                fact_str(f, t.thp_src, t.thp, "tuner.tuned.thp");
        else {
                _cleanup_free_ char *why = xasprintf("%s[vm] transparent_hugepages", none);
                fact_absent(f, ap, why, "tuner.tuned.thp");
        }
        if (t.defrag)
                fact_str(f, t.defrag_src, t.defrag, "tuner.tuned.thp_defrag");
        else {
                _cleanup_free_ char *why = xasprintf("%s[vm] transparent_hugepage.defrag", none);
                fact_absent(f, ap, why, "tuner.tuned.thp_defrag");
        }
        tv_done(&t);
}

/* --- the others ------------------------------------------------------------------------------- */

static void ppd_facts(struct facts *f, const char *unit_src)
{
        fact_str(f, unit_src, "power-profiles-daemon.service", "tuner.power-profiles-daemon.unit");
        const struct fact *drv = facts_get(f, "cpu.cpufreq.driver");
        if (drv && drv->status == FACT_OK &&
            (startswith(drv->str, "intel_pstate") || startswith(drv->str, "amd-pstate") ||
             startswith(drv->str, "amd_pstate")))
                fact_str(f, unit_src, "powersave", "tuner.power-profiles-daemon.governor");
        else if (drv && drv->status == FACT_UNREADABLE)
                fact_unreadable(f, drv->source, -EIO, "cpufreq driver unknown", "tuner.power-profiles-daemon.governor");
        else {
                _cleanup_free_ char *why = xasprintf("power-profiles-daemon writes no governor with the cpufreq driver %s",
                                                     drv && drv->status == FACT_OK ? drv->str : "absent here");
                fact_absent(f, unit_src, why, "tuner.power-profiles-daemon.governor");
        }
}

static void ondemand_facts(struct facts *f, const char *unit_src)
{
        fact_str(f, unit_src, "ondemand.service", "tuner.ondemand.unit");
        _cleanup_free_ char *g = first_offered(f, "interactive|ondemand|powersave");
        fact_str(f, "/etc/init.d/ondemand", g, "tuner.ondemand.governor");
}

/* The governor of "cpupower frequency-set -g G" (or --governor G) in a command line. */
static char *opt_governor(const char *opts)
{
        _cleanup_free_ char *copy = xstrdup(opts);
        char *save = NULL, *prev = NULL;
        for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                if (prev && (streq(prev, "-g") || streq(prev, "--governor")))
                        return xstrdup(t);
                if (startswith(t, "--governor="))
                        return xstrdup(t + strlen("--governor="));
                prev = t;
        }
        return NULL;
}

static void cpupower_facts(struct facts *f, const char *unit_src)
{
        struct root *r = facts_root(f);
        fact_str(f, unit_src, "cpupower.service", "tuner.cpupower.unit");
        static const struct {
                const char *path, *key;
                bool opts;
        } confs[] = {
                {"/etc/sysconfig/cpupower", "CPUPOWER_START_OPTS", true},
                {"/etc/default/cpupower", "governor", false},
                {"/etc/cpupower-service.conf", "GOVERNOR", false},
        };
        const char *seen = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(confs); i++) {
                const char *data;
                int rc = root_read(r, confs[i].path, &data, NULL);
                if (rc == -ENOENT)
                        continue;
                if (rc < 0) {
                        fact_unreadable(f, confs[i].path, rc, NULL, "tuner.cpupower.governor");
                        return;
                }
                seen = confs[i].path;
                _cleanup_free_ char *v = shell_var(data, confs[i].key, false);
                _cleanup_free_ char *g = v && confs[i].opts ? opt_governor(v) : v ? xstrdup(v) : NULL;
                if (g && *g) {
                        fact_str(f, confs[i].path, g, "tuner.cpupower.governor");
                        return;
                }
        }
        fact_absent(f, seen ? seen : "/etc/sysconfig/cpupower",
                    seen ? "cpupower.service's configuration sets no governor"
                         : "no cpupower configuration (/etc/sysconfig/cpupower, /etc/default/cpupower, "
                           "/etc/cpupower-service.conf): it sets no governor",
                    "tuner.cpupower.governor");
}

/* Debian's cpufrequtils: the init script's default GOVERNOR, then /etc/default/cpufrequtils. */
static void cpufrequtils_facts(struct facts *f, const char *unit_src)
{
        struct root *r = facts_root(f);
        fact_str(f, unit_src, "cpufrequtils", "tuner.cpufrequtils.unit");
        const char *data;
        _cleanup_free_ char *g = NULL;
        const char *src = "/etc/init.d/cpufrequtils";
        int rc = root_read(r, src, &data, NULL);
        if (rc == 0)
                g = shell_var(data, "GOVERNOR", true);
        else if (!root_gone(rc)) {
                /* its default may be what /etc/default/cpufrequtils leaves in force */
                fact_unreadable(f, src, rc, NULL, "tuner.cpufrequtils.governor");
                return;
        }
        const char *conf = "/etc/default/cpufrequtils";
        rc = root_read(r, conf, &data, NULL);
        if (rc < 0 && rc != -ENOENT) {
                fact_unreadable(f, conf, rc, NULL, "tuner.cpufrequtils.governor");
                return;
        }
        if (rc == 0) {
                _cleanup_free_ char *v = shell_var(data, "GOVERNOR", false);
                if (v && *v) {
                        free(g);
                        g = xstrdup(v);
                        src = conf;
                }
        }
        if (g && *g)
                fact_str(f, src, g, "tuner.cpufrequtils.governor");
        else
                fact_absent(f, src, "no GOVERNOR= in /etc/default/cpufrequtils or the init script",
                            "tuner.cpufrequtils.governor");
}

/* --- enabled? ----------------------------------------------------------------------------------- */

/* The unit's service.NAME.enabled fact (probe-service.c reads the .wants/.requires links). Returns
 * 1 enabled, 0 not, <0 unknown (*bad set to the fact). */
static int unit_enabled(struct facts *f, const char *name, const struct fact **bad)
{
        _cleanup_free_ char *n = xasprintf("service.%s.enabled", name);
        const struct fact *fc = facts_get(f, n);
        if (fc && fc->status == FACT_OK)
                return fc->b;
        /* unreadable, or absent (no /etc/systemd/system: not systemd, or a trimmed tree): unknown */
        if (fc && (!*bad || fc->status == FACT_UNREADABLE))
                *bad = fc;
        return fc ? -EIO : 0;
}

/* Whether cpufrequtils starts at boot cannot be told (PATH unreadable): say so, and let
 * tuner.count carry it. */
static char *cpufrequtils_unknown(struct facts *f, const char *path, int rc, const char *why,
                                  const struct fact **bad)
{
        fact_unreadable(f, path, rc, why, "tuner.cpufrequtils.unit");
        *bad = facts_get(f, "tuner.cpufrequtils.unit");
        return NULL;
}

/* cpufrequtils is a SysV script: "update-rc.d cpufrequtils defaults" makes S links in rc2-5.d,
 * which systemd-sysv-generator(8) turns into a unit unless /etc/systemd/system/cpufrequtils.service
 * masks it. Returns the enabling path or NULL. What could not be read (/etc/default/cpufrequtils and
 * its ENABLE=, an rcN.d directory) makes it unknown: tuner.cpufrequtils.unit unreadable, *bad set to
 * that fact. */
static char *cpufrequtils_enabled(struct facts *f, const struct fact **bad)
{
        struct root *r = facts_root(f);
        if (root_masked(r, "/etc/systemd/system/cpufrequtils.service"))
                return NULL;
        if (unit_enabled(f, "cpufrequtils", bad) > 0)
                return xstrdup("/etc/systemd/system (cpufrequtils.service)");
        const char *data, *conf = "/etc/default/cpufrequtils";
        int rc = root_read(r, conf, &data, NULL);
        if (rc == 0) {
                _cleanup_free_ char *en = shell_var(data, "ENABLE", false);
                if (en && streq(en, "false"))
                        return NULL; /* the script exits without setting anything */
        } else if (!root_gone(rc))
                return cpufrequtils_unknown(f, conf, rc, "its ENABLE= is unknown", bad);
        for (int lvl = 2; lvl <= 5; lvl++) {
                _cleanup_free_ char *dir = xasprintf("/etc/rc%d.d", lvl);
                _cleanup_(strv_done) struct strv names = {0};
                rc = root_list(r, dir, &names);
                if (rc < 0 && !root_gone(rc))
                        return cpufrequtils_unknown(f, dir, rc, "its start links are unknown", bad);
                for (size_t i = 0; i < names.n; i++) {
                        const char *n = names.v[i];
                        if (n[0] == 'S' && isdigit((unsigned char)n[1]) && isdigit((unsigned char)n[2]) &&
                            streq(n + 3, "cpufrequtils"))
                                return xasprintf("%s/%s", dir, n);
                }
        }
        return NULL;
}

static int tuner_run(struct facts *f)
{
        static const struct {
                const char *name, *unit;
                void (*facts)(struct facts *f, const char *unit_src);
        } tuners[] = {
                {"tuned", "tuned", tuned_facts},
                {"power-profiles-daemon", "power-profiles-daemon", ppd_facts},
                {"ondemand", "ondemand", ondemand_facts},
                {"cpupower", "cpupower", cpupower_facts},
                {"cpufrequtils", NULL, cpufrequtils_facts},
        };
        const char *units = "/etc/systemd/system";
        struct strv on = {0};
        const struct fact *bad = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(tuners); i++) {
                _cleanup_free_ char *src = NULL;
                if (tuners[i].unit) {
                        if (unit_enabled(f, tuners[i].unit, &bad) > 0)
                                src = xasprintf("%s/*.wants/%s.service", units, tuners[i].unit);
                } else
                        src = cpufrequtils_enabled(f, &bad);
                if (!src)
                        continue;
                strv_add(&on, tuners[i].name);
                tuners[i].facts(f, src);
        }
        if (bad && bad->status == FACT_UNREADABLE) {
                /* a tuner may be enabled among the units that could not be listed */
                fact_unreadable(f, bad->source, 0, bad->reason, "tuner.count");
                fact_unreadable(f, bad->source, 0, bad->reason, "tuner.enabled");
        } else if (bad) {
                fact_absent(f, bad->source, bad->reason, "tuner.count");
                fact_absent(f, bad->source, bad->reason, "tuner.enabled");
        } else {
                _cleanup_free_ char *names = strv_join(&on, " ");
                fact_uint(f, units, on.n, "tuner.count");
                fact_str(f, units, names, "tuner.enabled");
        }
        strv_done(&on);
        return 0;
}

const struct probe probe_tuner = {
        .name = "tuner",
        .prefixes = {"tuner."},
        .run = tuner_run,
};
