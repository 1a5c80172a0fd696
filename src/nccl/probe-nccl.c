/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nccl.*: /etc/nccl.conf of the root, linted against the NCCL catalog (rules/nccl-catalog.tsv,
 * located through the "datadir" handle the CLI sets). Each problem class is one fact listing the
 * offending keys, "none" when clean, so rules can compare and the audit can show what is wrong.
 */
#include <errno.h>
#include <sys/stat.h>

#include "facts/facts.h"
#include "nccl/nccl-gen.h"
#include "nccl/nccl-lint.h"
#include "facts/probes/probes.h"

#define NCCL_CONF "/etc/nccl.conf"

static void catalog_destroy(void *p)
{
        nccl_catalog_done(p);
        free(p);
}

/* The catalog, loaded once per run; NULL when the data directory is unknown or unreadable. */
const struct nccl_catalog *facts_nccl_catalog(struct facts *f)
{
        struct nccl_catalog *c = facts_handle(f, "nccl-catalog");
        if (c)
                return c;
        const char *dir = facts_handle(f, "datadir");
        if (!dir)
                return NULL;
        _cleanup_free_ char *path = xasprintf("%s/rules/nccl-catalog.tsv", dir);
        c = xcalloc(1, sizeof(*c));
        if (nccl_catalog_load(path, c) < 0 || c->n == 0) {
                catalog_destroy(c);
                return NULL;
        }
        facts_set_handle(f, "nccl-catalog", c, catalog_destroy);
        return c;
}

static void list_fact(struct facts *f, const struct nccl_lint *l, enum nccl_problem a, enum nccl_problem b,
                      const char *name)
{
        struct sbuf s = {0};
        for (size_t i = 0; i < l->n_findings; i++) {
                const struct nccl_finding *x = &l->findings[i];
                if (x->problem != a && x->problem != b)
                        continue;
                /* NCCL_IB_GID_INDEX may be the site's (the profile's nccl_ib_gid_index): the rule
                 * nccl-conf-gid-index judges nccl.conf.key.NCCL_IB_GID_INDEX against the profile */
                if (a == NP_ADVICE && streq(x->key, "NCCL_IB_GID_INDEX"))
                        continue;
                sbuf_addf(&s, "%sline %u: %s", s.len ? "; " : "", x->line, x->message);
        }
        fact_str(f, NCCL_CONF, s.len ? s.s : "none", "%s", name);
        free(sbuf_steal(&s));
}

/* nccl.conf.transports_disabled / nccl.conf.noop_switches: the transport switches (NP_DEBUG) split
 * by whether they act as NCCL reads them. A later definition of a key is ignored by NCCL, so it
 * does nothing either. */
static void switch_facts(struct facts *f, const struct nccl_lint *l)
{
        struct sbuf acting = {0}, noop = {0};
        for (size_t i = 0; i < l->n_findings; i++) {
                const struct nccl_finding *x = &l->findings[i];
                if (x->problem != NP_DEBUG)
                        continue;
                bool acts = false;
                for (size_t k = 0; k < l->n_entries; k++)
                        if (l->entries[k].line == x->line)
                                acts = nccl_switch_acts(l->entries[k].key, l->entries[k].value);
                struct sbuf *b = acts ? &acting : &noop;
                sbuf_addf(b, "%sline %u: %s", b->len ? "; " : "", x->line, x->message);
        }
        fact_str(f, NCCL_CONF, acting.len ? acting.s : "none", "nccl.conf.transports_disabled");
        fact_str(f, NCCL_CONF, noop.len ? noop.s : "none", "nccl.conf.noop_switches");
        free(sbuf_steal(&acting));
        free(sbuf_steal(&noop));
}

/* nccl.user_conf.*: the ~/.nccl.conf files of the root's homes (NCCL reads $HOME/.nccl.conf before
 * /etc/nccl.conf, so a user's file overrides the site's). One fact for every problem of every file. */
static void user_confs(struct facts *f, const struct nccl_catalog *c)
{
        _cleanup_strv_ struct strv paths = {0}, found = {0}, hidden = {0};
        struct sbuf problems = {0};
        int hrc = nccl_conf_paths(facts_root(f), &paths);
        for (size_t i = 0; i < paths.n; i++) {
                if (streq(paths.v[i], NCCL_CONF))
                        continue;
                const char *data;
                size_t len;
                int rc = root_read(facts_root(f), paths.v[i], &data, &len);
                if (rc == -ENOENT)
                        continue;
                struct stat st;
                if (rc == -EACCES && root_stat(facts_root(f), paths.v[i], &st, true) == -EACCES) {
                        /* The home cannot be searched (a non-root audit of /root): whether the
                         * file exists is unknown, which is not a problem in a file. */
                        strv_add(&hidden, paths.v[i]);
                        continue;
                }
                strv_add(&found, paths.v[i]);
                if (rc < 0) {
                        sbuf_addf(&problems, "%s%s: %s", problems.len ? "; " : "", paths.v[i], errno_name(-rc));
                        continue;
                }
                if (!c)
                        continue;
                struct nccl_lint l;
                nccl_lint_text(c, data, len, &l);
                for (size_t k = 0; k < l.n_findings; k++)
                        sbuf_addf(&problems, "%s%s line %u: %s", problems.len ? "; " : "", paths.v[i],
                                  l.findings[k].line, l.findings[k].message);
                nccl_lint_done(&l);
        }
        _cleanup_free_ char *files = found.n ? strv_join(&found, ",") : xstrdup("none");
        if (hrc < 0) {
                /* a user's file may be among the homes that could not be listed */
                fact_unreadable(f, "/home", hrc, "the users' ~/.nccl.conf are unknown", "nccl.user_conf.files");
                fact_unreadable(f, "/home", hrc, "the users' ~/.nccl.conf are unknown", "nccl.user_conf.problems");
        } else if (!found.n && hidden.n) {
                _cleanup_free_ char *h = strv_join(&hidden, ",");
                _cleanup_free_ char *why = xasprintf("none found, but whether %s exist%s is unknown: its "
                                                     "directory is not searchable (EACCES; run as root)",
                                                     h, hidden.n == 1 ? "s" : "");
                fact_absent(f, "/root, /home", why, "nccl.user_conf.files");
        } else
                fact_str(f, "/root, /home", files, "nccl.user_conf.files");
        if (hrc == 0 && found.n && !c)
                fact_unreadable(f, "rules/nccl-catalog.tsv", 0, "NCCL catalog not found", "nccl.user_conf.problems");
        else if (hrc == 0)
                fact_str(f, "/root, /home", problems.len ? problems.s : "none", "nccl.user_conf.problems");
        free(sbuf_steal(&problems));
}

/* nccl.conf.hardware_drift: the keys of llmtune's managed block that were derived from the hardware
 * (NCCL_IB_HCA, NCCL_SOCKET_IFNAME; a "# KEY: profile ..." comment marks a profile's value) compared
 * with what the hardware gives now. A key frozen from the ports and interfaces of one moment must not
 * stay green when an HCA or interface is added, lost or renamed. "none" when they agree. */
static void hardware_drift(struct facts *f, const struct nccl_catalog *c, const char *data)
{
        const char *b = strstr(data, NCCL_GEN_BEGIN "\n");
        const char *e = b ? strstr(b, "\n" NCCL_GEN_END) : NULL;
        if (!b || !e) {
                fact_str(f, NCCL_CONF, "none", "nccl.conf.hardware_drift");
                return;
        }
        struct nccl_settings now;
        nccl_settings_build(f, NULL, c, &now);
        struct sbuf out = {0};
        static const char *const hw_keys[] = {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"};
        _cleanup_free_ char *block = xstrndup(b, (size_t)(e - b));
        for (size_t k = 0; k < ARRAY_SIZE(hw_keys); k++) {
                _cleanup_free_ char *line_start = xasprintf("\n%s=", hw_keys[k]);
                _cleanup_free_ char *comment = xasprintf("\n# %s: profile", hw_keys[k]);
                const char *l = strstr(block, line_start);
                if (!l || strstr(block, comment))
                        continue;
                l += strlen(line_start);
                _cleanup_free_ char *val = xstrndup(l, strcspn(l, "\n"));
                const char *want = NULL;
                for (size_t i = 0; i < now.n; i++)
                        if (streq(now.v[i].key, hw_keys[k]))
                                want = now.v[i].value;
                if (!want)
                        sbuf_addf(&out, "%s%s=%s is written but the hardware gives none now", out.len ? "; " : "",
                                  hw_keys[k], val);
                else if (!streq(want, val))
                        sbuf_addf(&out, "%s%s=%s is written, the hardware gives %s now", out.len ? "; " : "",
                                  hw_keys[k], val, want);
        }
        fact_str(f, NCCL_CONF, out.len ? out.s : "none", "nccl.conf.hardware_drift");
        free(sbuf_steal(&out));
        nccl_settings_done(&now);
}

static int nccl_run(struct facts *f)
{
        const char *data;
        size_t len;
        user_confs(f, facts_nccl_catalog(f));
        int rc = fact_read_present(f, NCCL_CONF, &data, &len, "nccl.conf.present");
        if (rc == -ENOENT)
                return 0;
        if (rc < 0)
                return rc;
        const struct nccl_catalog *c = facts_nccl_catalog(f);
        if (!c) {
                static const char *const names[] = {"keys", "syntax", "unknown", "removed", "deprecated",
                                                    "foreign", "bad_values", "debug_switches", "init_failures",
                                                    "debug_keys", "advice", "transports_disabled",
                                                    "noop_switches"};
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        fact_unreadable(f, "rules/nccl-catalog.tsv", 0, "NCCL catalog not found", "nccl.conf.%s",
                                        names[i]);
                return -ENOENT;
        }
        struct nccl_lint l;
        nccl_lint_text(c, data, len, &l);
        _cleanup_strv_ struct strv keys = {0};
        for (size_t i = 0; i < l.n_entries; i++)
                strv_add(&keys, l.entries[i].key);
        _cleanup_free_ char *joined = keys.n ? strv_join(&keys, ",") : xstrdup("none");
        fact_str(f, NCCL_CONF, joined, "nccl.conf.keys");
        for (size_t i = 0; i < l.n_entries; i++)
                fact_str(f, NCCL_CONF, l.entries[i].value, "nccl.conf.key.%s", l.entries[i].key);
        list_fact(f, &l, NP_SYNTAX, NP_DUPLICATE, "nccl.conf.syntax");
        list_fact(f, &l, NP_UNKNOWN, NP_UNKNOWN, "nccl.conf.unknown");
        list_fact(f, &l, NP_REMOVED, NP_REMOVED, "nccl.conf.removed");
        list_fact(f, &l, NP_DEPRECATED, NP_DEPRECATED, "nccl.conf.deprecated");
        list_fact(f, &l, NP_FOREIGN, NP_FOREIGN, "nccl.conf.foreign");
        list_fact(f, &l, NP_BAD_VALUE, NP_BAD_VALUE, "nccl.conf.bad_values");
        list_fact(f, &l, NP_DEBUG, NP_DEBUG, "nccl.conf.debug_switches");
        switch_facts(f, &l);
        list_fact(f, &l, NP_INIT_FAIL, NP_INIT_FAIL, "nccl.conf.init_failures");
        list_fact(f, &l, NP_DEBUG_KEY, NP_DEBUG_KEY, "nccl.conf.debug_keys");
        list_fact(f, &l, NP_ADVICE, NP_ADVICE, "nccl.conf.advice");
        nccl_lint_done(&l);
        hardware_drift(f, c, data);
        return 0;
}

static const struct probe probe_nccl = {
        .name = "nccl",
        .prefixes = {"nccl."},
        .run = nccl_run,
};

/* facts/ is below nccl/ and cannot name this probe: it joins the probe table itself, at start-up
 * (the layer's library is linked whole, so every program that links it has it). */
__attribute__((constructor)) static void register_probe_nccl(void)
{
        facts_register_probe(&probe_nccl);
}
