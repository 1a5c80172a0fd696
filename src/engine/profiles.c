/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "engine/profiles.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/digest.h"
#include "engine/param-types.h"
#include "base/parse.h"
#include "base/trust.h"

static void settings_set(struct settings *s, const char *key, const char *value, const char *origin)
{
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->v[i].key, key)) {
                        free(s->v[i].value);
                        free(s->v[i].origin);
                        s->v[i].value = xstrdup(value);
                        s->v[i].origin = xstrdup(origin);
                        return;
                }
        s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
        s->v[s->n++] = (struct setting){xstrdup(key), xstrdup(value), xstrdup(origin)};
}

static const struct setting *settings_get(const struct settings *s, const char *key)
{
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->v[i].key, key))
                        return &s->v[i];
        return NULL;
}

static void settings_done(struct settings *s)
{
        for (size_t i = 0; i < s->n; i++) {
                free(s->v[i].key);
                free(s->v[i].value);
                free(s->v[i].origin);
        }
        free(s->v);
        *s = (struct settings){0};
}

static void profile_done(struct profile *p)
{
        free(p->name);
        free(p->description);
        free(p->inherits);
        free(p->file);
        settings_done(&p->params);
        settings_done(&p->rules);
        settings_done(&p->nccl);
        settings_done(&p->types);
        for (size_t i = 0; i < p->n_match; i++)
                expr_done(&p->match[i]);
        free(p->match);
}

void profiles_truncate(struct profile_lib *lib, size_t n)
{
        for (size_t i = n; i < lib->n; i++)
                profile_done(&lib->v[i]);
        if (n < lib->n)
                lib->n = n;
}

void profiles_forget_file(struct profile_lib *lib, const char *file)
{
        size_t k = 0;
        for (size_t i = 0; i < lib->n; i++) {
                if (streq(lib->v[i].file, file))
                        profile_done(&lib->v[i]);
                else
                        lib->v[k++] = lib->v[i];
        }
        lib->n = k;
}

void profiles_done(struct profile_lib *lib)
{
        profiles_truncate(lib, 0);
        free(lib->v);
        *lib = (struct profile_lib){0};
}

struct ploader {
        struct profile *p;
        struct diags *d;
        const char *file;
};

static bool valid_name(const char *s)
{
        if (!*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
                        return false;
        return true;
}

/* One key of a section: KEY = VALUE at LINE (ORIGIN "file:line"); SECTION_LINE where the section starts. */
struct pkey {
        struct ploader *l;
        unsigned section_line, line;
        const char *key, *value, *origin;
};

static void key_profile(const struct pkey *k)
{
        struct profile *p = k->l->p;
        char **slot = streq(k->key, "name") ? &p->name : streq(k->key, "description") ? &p->description
                    : streq(k->key, "inherits") ? &p->inherits : NULL;
        if (!slot)
                diag_add(k->l->d, k->l->file, k->line, "unknown key '%s' in [profile] (name, description, inherits)",
                         k->key);
        else if (*slot)
                diag_add(k->l->d, k->l->file, k->line, "'%s' given twice", k->key);
        else if (slot != &p->description && !valid_name(k->value))
                diag_add(k->l->d, k->l->file, k->line, "%s '%s': use lowercase letters, digits, '-' and '_'", k->key,
                         k->value);
        else {
                *slot = xstrdup(k->value);
                if (slot == &p->name)
                        p->line = k->section_line;
        }
}

static void key_match(const struct pkey *k)
{
        struct profile *p = k->l->p;
        if (!streq(k->key, "require")) {
                diag_add(k->l->d, k->l->file, k->line, "unknown key '%s' in [match] (require)", k->key);
                return;
        }
        struct expr e;
        _cleanup_free_ char *err = NULL;
        if (expr_parse(k->value, &e, &err) < 0) {
                diag_add(k->l->d, k->l->file, k->line, "%s", err);
                return;
        }
        p->match = xrealloc(p->match, (p->n_match + 1) * sizeof(*p->match));
        p->match[p->n_match++] = e;
}

static void key_params(const struct pkey *k)
{
        struct profile *p = k->l->p;
        if (settings_get(&p->params, k->key))
                diag_add(k->l->d, k->l->file, k->line, "parameter '%s' given twice", k->key);
        settings_set(&p->params, k->key, k->value, k->origin);
}

static void key_types(const struct pkey *k)
{
        struct profile *p = k->l->p;
        struct param_type t;
        _cleanup_free_ char *err = NULL;
        if (settings_get(&p->types, k->key))
                diag_add(k->l->d, k->l->file, k->line, "type of '%s' given twice", k->key);
        else if (param_type_parse(k->value, &t, &err) < 0)
                diag_add(k->l->d, k->l->file, k->line, "type of '%s': %s", k->key, err);
        else {
                param_type_done(&t);
                settings_set(&p->types, k->key, k->value, k->origin);
        }
}

static void key_rules(const struct pkey *k)
{
        enum severity sev;
        if (!streq(k->value, "on") && !streq(k->value, "off") && severity_parse(k->value, &sev) < 0)
                diag_add(k->l->d, k->l->file, k->line, "rule '%s': expected on, off, critical, warning or info, not '%s'",
                         k->key, k->value);
        settings_set(&k->l->p->rules, k->key, k->value, k->origin);
}

static void key_nccl(const struct pkey *k)
{
        if (!startswith(k->key, "NCCL_"))
                diag_add(k->l->d, k->l->file, k->line, "[nccl] holds NCCL_* keys only, not '%s'", k->key);
        settings_set(&k->l->p->nccl, k->key, k->value, k->origin);
}

/* [facts], [facts-absent], [facts-unreadable]: what a baseline was taken from, read by `report
 * --consistency --reference`; an audit judges the [params], never these. */
static void key_facts(const struct pkey *k)
{
        (void)k;
}

static const struct {
        const char *name;
        void (*key)(const struct pkey *k);
} profile_sections[] = {
        {"profile", key_profile}, {"match", key_match},        {"params", key_params},
        {"types", key_types},     {"rules", key_rules},        {"nccl", key_nccl},
        {"facts", key_facts},     {"facts-absent", key_facts}, {"facts-unreadable", key_facts},
};

static void on_key(void *user, const char *section, unsigned section_line, const char *key, const char *value,
                   unsigned line)
{
        struct ploader *l = user;
        _cleanup_free_ char *origin = xasprintf("%s:%u", l->file, line);
        /* Values are data: a CR or any other control character would become syntax in the files
         * remedies write (a tmpfiles.d line split in two by systemd-tmpfiles). */
        for (const char *c = value; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f) {
                        diag_add(l->d, l->file, line,
                                 "the value of '%s' holds a control character (0x%02x): profile values are data, "
                                 "never line breaks or control characters",
                                 key, (unsigned)(unsigned char)*c);
                        return;
                }
        const struct pkey k = {l, section_line, line, key, value, origin};
        for (size_t i = 0; i < ARRAY_SIZE(profile_sections); i++)
                if (streq(section, profile_sections[i].name)) {
                        profile_sections[i].key(&k);
                        return;
                }
        diag_add(l->d, l->file, line, "unknown section [%s] (profile, match, params, types, rules, nccl, facts)",
                 section);
}

/* The parameters and their types are declared together, once: by a profile that inherits nothing
 * (base for the shipped ones), every parameter with a type and every type for a parameter. A
 * profile that inherits sets values of parameters declared above it. */
static void check_types(const struct profile *p, struct diags *d)
{
        if (p->inherits) {
                if (p->types.n)
                        diag_add(d, p->types.v[0].origin, 0,
                                 "[types] declares parameters, which only a profile that inherits nothing does "
                                 "(the type of '%s' is declared where it is defined)", p->types.v[0].key);
                return;
        }
        for (size_t i = 0; i < p->params.n; i++)
                if (!settings_get(&p->types, p->params.v[i].key))
                        diag_add(d, p->params.v[i].origin, 0,
                                 "parameter '%s' has no type: declare it in [types] of this profile (enum, bool, "
                                 "integer, size, duration, version, integers, names, list; llmtune.profile(5))",
                                 p->params.v[i].key);
        for (size_t i = 0; i < p->types.n; i++)
                if (!settings_get(&p->params, p->types.v[i].key))
                        diag_add(d, p->types.v[i].origin, 0, "type of '%s', which [params] does not define",
                                 p->types.v[i].key);
}

static int load_one(struct profile_lib *lib, const char *file, const char *data, size_t len, bool site,
                    struct diags *d)
{
        struct profile p = {.file = xstrdup(file), .site = site};
        struct ploader l = {.p = &p, .d = d, .file = file};
        size_t before = d->msgs.n;
        ini_load_buffer(file, data, len, on_key, &l, d);
        if (!p.name)
                diag_add(d, file, 0, "no [profile] name");
        check_types(&p, d);
        if (d->msgs.n > before) {
                profile_done(&p);
                return -EINVAL;
        }
        for (size_t i = 0; i < lib->n; i++)
                if (lib->v[i].site == site && streq(lib->v[i].name, p.name)) {
                        diag_add(d, file, p.line, "profile '%s' already defined in %s", p.name, lib->v[i].file);
                        profile_done(&p);
                        return -EINVAL;
                }
        lib->v = xrealloc(lib->v, (lib->n + 1) * sizeof(*lib->v));
        lib->v[lib->n++] = p;
        return 0;
}

static int load_shipped(void *lib, const char *file, const char *data, size_t len, struct diags *d)
{
        return load_one(lib, file, data, len, false, d);
}

static int load_site(void *lib, const char *file, const char *data, size_t len, struct diags *d)
{
        return load_one(lib, file, data, len, true, d);
}

/* A profile given by path loads as a site profile does (profiles_load_buffer). */
int profiles_load_file(struct profile_lib *lib, const char *path, struct diags *d)
{
        return ini_input_load(NULL, path, "a profile", load_site, lib, d);
}

int profiles_load_buffer(struct profile_lib *lib, const char *name, const char *data, size_t len, struct diags *d)
{
        return load_one(lib, name, data, len, true, d);
}

int profiles_load(struct profile_lib *lib, const char *shipped_dir, struct root *root, struct diags *d)
{
        size_t n = 0;
        int rc = ini_dir_load(NULL, shipped_dir, "a profile", NULL, load_shipped, lib, d, &n);
        if (n == 0 && (rc == 0 || root_gone(rc))) {
                diag_add(d, shipped_dir, 0, "no profiles found");
                rc = -ENOENT;
        } else if (rc < 0)
                rc = -EINVAL;
        if (!root)
                return rc;
        /* Site profiles are part of the machine: read them through the root handle. A site profile
         * that cannot be read may be the one asked for, or replace a shipped one: an error. */
        int src = ini_dir_load(root, PROFILES_SITE_DIR, "a profile", lib->overlay_path, load_site, lib, d, NULL);
        if (src < 0 && !root_gone(src))
                rc = -EINVAL;
        if (lib->overlay_path && load_one(lib, lib->overlay_path, lib->overlay_text, strlen(lib->overlay_text), true, d) < 0)
                rc = -EINVAL;
        return rc;
}

const struct profile *profile_find(const struct profile_lib *lib, const char *name, bool site_first)
{
        const struct profile *shipped = NULL, *site = NULL;
        for (size_t i = 0; i < lib->n; i++)
                if (streq(lib->v[i].name, name))
                        *(lib->v[i].site ? &site : &shipped) = &lib->v[i];
        return site_first && site ? site : shipped ? shipped : site;
}

void resolved_done(struct resolved *r)
{
        free(r->name);
        free(r->description);
        strv_done(&r->chain);
        settings_done(&r->params);
        settings_done(&r->types);
        settings_done(&r->rules);
        settings_done(&r->nccl);
        *r = (struct resolved){0};
}

const char *resolved_param(const struct resolved *r, const char *name)
{
        const struct setting *s = settings_get(&r->params, name);
        return s ? s->value : NULL;
}

const char *resolved_param_type(const struct resolved *r, const char *name)
{
        const struct setting *s = settings_get(&r->types, name);
        return s ? s->value : NULL;
}

bool resolved_rule_enabled(const struct resolved *r, const struct rule *rule, enum severity *sev)
{
        bool on = true;
        *sev = rule->severity;
        /* "severity = ${param}": the profile's value (profile_resolve checked it) */
        const char *pv = rule->severity_param ? resolved_param(r, rule->severity_param) : NULL;
        if (pv)
                severity_parse(pv, sev);
        /* In order: the later setting (closer to the leaf, or further down a file) wins. */
        for (size_t i = 0; i < r->rules.n; i++) {
                if (fnmatch(r->rules.v[i].key, rule->id, 0) != 0)
                        continue;
                const char *v = r->rules.v[i].value;
                if (streq(v, "off"))
                        on = false;
                else if (streq(v, "on"))
                        on = true;
                else {
                        on = true;
                        severity_parse(v, sev);
                }
        }
        return on;
}

static void hash_settings(EVP_MD_CTX *ctx, const char *tag, const struct settings *s)
{
        for (size_t i = 0; i < s->n; i++) {
                _cleanup_free_ char *line = xasprintf("%s %s=%s\n", tag, s->v[i].key, s->v[i].value);
                EVP_DigestUpdate(ctx, line, strlen(line));
        }
}

static int cmp_setting(const void *a, const void *b)
{
        return strcmp(((const struct setting *)a)->key, ((const struct setting *)b)->key);
}

/* The inheritance chain of NAME into STACK, leaf first; *depth entries. A site profile may inherit
 * the shipped profile of its own name. Unknown names and cycles are reported in D. */
static int resolve_chain(const struct profile_lib *lib, const char *name, const struct profile **stack, size_t cap,
                         size_t *depth, struct diags *d)
{
        const struct profile *p = profile_find(lib, name, true);
        *depth = 0;
        if (!p) {
                diag_add(d, name, 0, "no such profile (see `llmtune profiles`)");
                return -ENOENT;
        }
        while (p) {
                for (size_t i = 0; i < *depth; i++)
                        if (stack[i] == p) {
                                diag_add(d, p->file, p->line, "inheritance cycle through '%s'", p->name);
                                return -ELOOP;
                        }
                if (*depth == cap) {
                        diag_add(d, p->file, p->line, "inheritance deeper than %zu levels", cap);
                        return -ELOOP;
                }
                stack[(*depth)++] = p;
                if (!p->inherits)
                        break;
                const struct profile *parent =
                        streq(p->inherits, p->name) && p->site ? profile_find(lib, p->inherits, false)
                                                               : profile_find(lib, p->inherits, true);
                if (!parent || parent == p) {
                        diag_add(d, p->file, p->line, "profile '%s' inherits unknown profile '%s'", p->name, p->inherits);
                        return -ENOENT;
                }
                p = parent;
        }
        return 0;
}

/* Parameters that were replaced: a site profile still setting one is told what to set instead. */
static const char *renamed_hint(const char *key)
{
        static const struct {
                const char *old, *hint;
        } renamed[] = {
                {"pcie_check_under_load", "; it became pcie_link_severity: critical for an audit under load (was true), "
                                          "info for an idle one (was false)"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(renamed); i++)
                if (streq(key, renamed[i].old))
                        return renamed[i].hint;
        return "";
}

/* Merge profile Q (one link of the chain; ROOT_NAME is the chain's top) into R: later wins. A
 * parameter the top does not define, or one whose value changes kind, is reported in D. */
static void merge_profile(struct resolved *r, const struct profile *q, bool is_top, const char *root_name,
                          const struct ruleset *rules, struct diags *d)
{
        strv_push(&r->chain, xasprintf("%s (%s)", q->name, q->file));
        if (q->description) {
                free(r->description);
                r->description = xstrdup(q->description);
        }
        for (size_t k = 0; k < q->params.n; k++) {
                const struct setting *s = &q->params.v[k];
                const struct setting *old = settings_get(&r->params, s->key);
                if (!is_top && !old)
                        diag_add(d, s->origin, 0, "unknown parameter '%s' (not defined by '%s')%s", s->key, root_name,
                                 renamed_hint(s->key));
                settings_set(&r->params, s->key, s->value, s->origin);
        }
        for (size_t k = 0; k < q->rules.n; k++) {
                const struct setting *s = &q->rules.v[k];
                bool any = false;
                for (size_t j = 0; rules && j < rules->n && !any; j++)
                        any = fnmatch(s->key, rules->v[j].id, 0) == 0;
                if (rules && !any)
                        diag_add(d, s->origin, 0, "unknown rule id '%s'", s->key);
                /* keep order: a later switch must override an earlier one */
                r->rules.v = xrealloc(r->rules.v, (r->rules.n + 1) * sizeof(*r->rules.v));
                r->rules.v[r->rules.n++] = (struct setting){xstrdup(s->key), xstrdup(s->value), xstrdup(s->origin)};
        }
        for (size_t k = 0; k < q->nccl.n; k++)
                settings_set(&r->nccl, q->nccl.v[k].key, q->nccl.v[k].value, q->nccl.v[k].origin);
        for (size_t k = 0; is_top && k < q->types.n; k++)
                settings_set(&r->types, q->types.v[k].key, q->types.v[k].value, q->types.v[k].origin);
}

/* Every parameter's value has its declared type; a wrong one is reported where it was set, and
 * its name added to BAD. */
static void check_param_values(const struct resolved *r, struct diags *d, struct strv *bad)
{
        for (size_t k = 0; k < r->params.n; k++) {
                const struct setting *s = &r->params.v[k];
                const struct setting *ty = settings_get(&r->types, s->key);
                struct param_type t;
                _cleanup_free_ char *err = NULL;
                if (!ty || param_type_parse(ty->value, &t, &err) < 0)
                        continue; /* undeclared: reported where the parameter is defined */
                if (!param_type_accepts(&t, s->value)) {
                        _cleanup_free_ char *want = param_type_describe(&t);
                        diag_add(d, s->origin, 0, "parameter '%s' must be %s (its type at %s), not '%s'", s->key, want,
                                 ty->origin, s->value);
                        strv_add(bad, s->key);
                }
                param_type_done(&t);
        }
}

/* What the merged profile must satisfy: every enabled rule finds its parameters, and a parameter
 * that is a rule's severity holds one (reported where the profile set it, unless its type was
 * already wrong: BAD). */
static void validate_resolved(const struct resolved *r, const struct ruleset *rules, const struct strv *bad,
                              struct diags *d)
{
        for (size_t j = 0; rules && j < rules->n; j++) {
                const struct rule *rule = &rules->v[j];
                enum severity sev;
                if (rule->severity_param) {
                        const struct setting *s = settings_get(&r->params, rule->severity_param);
                        if (s && severity_parse(s->value, &sev) < 0 && !strv_contains(bad, s->key))
                                diag_add(d, s->origin, 0,
                                         "parameter '%s' is the severity of rule '%s' (%s:%u): critical, warning or "
                                         "info, not '%s'",
                                         s->key, rule->id, rule->file, rule->line, s->value);
                }
                if (!resolved_rule_enabled(r, rule, &sev))
                        continue;
                struct strv ps = {0};
                rule_params(rule, &ps);
                for (size_t k = 0; k < ps.n; k++)
                        if (!resolved_param(r, ps.v[k]))
                                diag_add(d, rule->file, rule->line,
                                         "rule '%s' needs parameter '%s', which profile '%s' does not set", rule->id,
                                         ps.v[k], r->name);
                strv_done(&ps);
        }
}

/* Content hash: SHA-256 of the canonical text of what the profile resolves to (parameters sorted,
 * rule switches and NCCL keys in order), hex into R->hash. */
static void hash_resolved(struct resolved *r)
{
        struct settings sorted = {0};
        for (size_t k = 0; k < r->params.n; k++)
                settings_set(&sorted, r->params.v[k].key, r->params.v[k].value, "");
        qsort_safe(sorted.v, sorted.n, sizeof(*sorted.v), cmp_setting);
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
        EVP_DigestUpdate(ctx, r->name, strlen(r->name));
        hash_settings(ctx, "param", &sorted);
        hash_settings(ctx, "rule", &r->rules);
        hash_settings(ctx, "nccl", &r->nccl);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        EVP_DigestFinal_ex(ctx, md, &mdlen);
        EVP_MD_CTX_free(ctx);
        settings_done(&sorted);
        digest_hex(md, mdlen < 32 ? mdlen : 32, r->hash);
}

const struct profile_nccl_param profile_nccl_params[] = {
        {"nccl_ib_tc", "NCCL_IB_TC"},
        {"nccl_ib_sl", "NCCL_IB_SL"},
        {"nccl_ib_gid_index", "NCCL_IB_GID_INDEX"},
};
const size_t profile_nccl_params_n = ARRAY_SIZE(profile_nccl_params);

/* nccl_keys: the NCCL keys the profile wants in /etc/nccl.conf ("none" without any): its [nccl] keys
 * and the NCCL variables its parameters set. A key of profile_nccl_params written in [nccl] instead
 * sets its parameter, where that is `any`, so the rules that judge the parameter see the site's value
 * whichever way the profile gave it. */
static void set_nccl_keys(struct resolved *r)
{
        for (size_t k = 0; k < profile_nccl_params_n; k++) {
                const struct setting *n = settings_get(&r->nccl, profile_nccl_params[k].key);
                const struct setting *v = settings_get(&r->params, profile_nccl_params[k].param);
                if (n && (!v || streq(v->value, "any")))
                        settings_set(&r->params, profile_nccl_params[k].param, n->value, n->origin);
        }
        _cleanup_strv_ struct strv keys = {0};
        for (size_t k = 0; k < r->nccl.n; k++)
                if (!strchr(r->nccl.v[k].key, '.')) /* KEY.reason explains KEY (nccl-gen.h) */
                        strv_add(&keys, r->nccl.v[k].key);
        for (size_t k = 0; k < profile_nccl_params_n; k++) {
                const struct setting *v = settings_get(&r->params, profile_nccl_params[k].param);
                if (v && !streq(v->value, "any") && !strv_contains(&keys, profile_nccl_params[k].key))
                        strv_add(&keys, profile_nccl_params[k].key);
        }
        _cleanup_free_ char *joined = keys.n ? strv_join(&keys, ",") : xstrdup("none");
        settings_set(&r->params, "nccl_keys", joined, "[nccl] sections and NCCL parameters");
}

int profile_resolve(const struct profile_lib *lib, const char *name, const struct ruleset *rules,
                    struct resolved *ret, struct diags *d)
{
        size_t before = d->msgs.n;
        const struct profile *stack[64];
        size_t depth = 0;
        int rc = resolve_chain(lib, name, stack, ARRAY_SIZE(stack), &depth, d);
        if (rc < 0)
                return rc;
        struct resolved r = {.name = xstrdup(name), .leaf = stack[0]};
        for (size_t i = depth; i-- > 0;) /* base first: later (closer to the leaf) wins */
                merge_profile(&r, stack[i], i + 1 == depth, stack[depth - 1]->name, rules, d);
        set_nccl_keys(&r);
        struct strv bad = {0};
        check_param_values(&r, d, &bad);
        validate_resolved(&r, rules, &bad, d);
        strv_done(&bad);
        hash_resolved(&r);
        if (d->msgs.n > before) {
                resolved_done(&r);
                return -EINVAL;
        }
        *ret = r;
        return 0;
}

static const char *no_params(void *u, const char *n) { return NULL; }

const struct expr *profile_match(const struct profile_lib *lib, const struct profile *p, size_t *n)
{
        if (p->n_match || !p->site) {
                *n = p->n_match;
                return p->match;
        }
        /* A site profile that shadows a shipped one and says nothing about matching keeps the
         * shipped profile's [match]: shadowing changes values, not which machines it is for. */
        for (size_t i = 0; i < lib->n; i++)
                if (!lib->v[i].site && streq(lib->v[i].name, p->name)) {
                        *n = lib->v[i].n_match;
                        return lib->v[i].match;
                }
        *n = 0;
        return NULL;
}

char *profile_misfit(const struct profile_lib *lib, const struct profile *p, struct facts *f)
{
        /* A profile without requirements of its own is meant for the machines of the one it
         * inherits (a site profile made from a shipped one): follow the chain to a [match]. */
        size_t n = 0;
        const struct expr *match = profile_match(lib, p, &n);
        for (int depth = 0; !n && p && p->inherits && depth < 64; depth++) {
                const char *parent = p->inherits;
                p = profile_find(lib, parent, !streq(parent, p->name));
                if (p)
                        match = profile_match(lib, p, &n);
        }
        struct sbuf b = {0};
        for (size_t k = 0; k < n; k++) {
                struct eval_result er;
                expr_eval(&match[k], f, no_params, NULL, &er);
                if (er.status != EVAL_TRUE)
                        sbuf_addf(&b, "%s%s [%s]", b.len ? "; " : "", match[k].text,
                                  er.status == EVAL_ERROR ? (er.reason ? er.reason : "unreadable")
                                                          : er.observed ? er.observed : "");
                eval_result_done(&er);
        }
        return b.len ? sbuf_steal(&b) : NULL;
}

bool profile_detectable(const struct profile_lib *lib, const struct profile *p)
{
        /* a shadowed shipped profile is not a candidate of its own */
        if (!p->site)
                return profile_find(lib, p->name, true) == p;
        /* A site profile takes part only with a [match] of its own or of the shipped profile it
         * shadows: one without would match every machine and could win over the right profile. */
        size_t n;
        profile_match(lib, p, &n);
        if (n)
                return true;
        for (size_t i = 0; i < lib->n; i++)
                if (!lib->v[i].site && streq(lib->v[i].name, p->name))
                        return true; /* shadows a shipped profile without [match] (base): the fallback */
        return false;
}

int profile_detect(const struct profile_lib *lib, struct facts *f, const struct profile **ret, char **why)
{
        const struct profile *best = NULL;
        size_t best_score = 0;
        struct sbuf b = {0}, unknown = {0};
        *ret = NULL;
        for (size_t i = 0; i < lib->n; i++) {
                const struct profile *p = &lib->v[i];
                if (!profile_detectable(lib, p))
                        continue;
                size_t n_match;
                const struct expr *match = profile_match(lib, p, &n_match);
                /* Every requirement is evaluated: one that is false rules the profile out even when
                 * another could not be read; an unreadable one of a profile not ruled out leaves
                 * the answer open, and detection must not pretend to know it. */
                bool is_false = false;
                struct sbuf reasons = {0}, errs = {0};
                sbuf_add(&reasons, "");
                for (size_t k = 0; k < n_match; k++) {
                        struct eval_result er;
                        expr_eval(&match[k], f, no_params, NULL, &er);
                        if (er.status == EVAL_ERROR)
                                sbuf_addf(&errs, "%s%s: %s [%s]", errs.len ? "; " : "", p->name, match[k].text,
                                          er.reason ? er.reason : er.observed ? er.observed : "unreadable");
                        else if (er.status != EVAL_TRUE)
                                is_false = true;
                        sbuf_addf(&reasons, "%s%s [%s]", k ? "; " : "", match[k].text, er.observed ? er.observed : "");
                        eval_result_done(&er);
                }
                if (!is_false && errs.len)
                        sbuf_addf(&unknown, "%s%s", unknown.len ? "; " : "", errs.s);
                bool ok = !is_false && !errs.len;
                free(errs.s);
                if (ok && (!best || n_match > best_score ||
                           (n_match == best_score && strcmp(p->name, best->name) < 0))) {
                        best = p;
                        best_score = n_match;
                        free(b.s);
                        b = (struct sbuf){0};
                        if (n_match)
                                sbuf_addf(&b, "%s", reasons.s);
                        else
                                sbuf_add(&b, "no more specific profile matches this machine");
                }
                free(reasons.s);
        }
        if (unknown.len) {
                free(b.s);
                if (why)
                        *why = sbuf_steal(&unknown);
                else
                        free(unknown.s);
                return -EIO;
        }
        if (why)
                *why = sbuf_steal(&b);
        else
                free(b.s);
        *ret = best;
        return best ? 0 : -ENOENT;
}
