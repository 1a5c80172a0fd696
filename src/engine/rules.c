/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "engine/rules.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>

#include "engine/remedy.h"
#include "base/trust.h"

const char *severity_name(enum severity s)
{
        return s == SEV_CRITICAL ? "critical" : s == SEV_WARNING ? "warning" : "info";
}

int severity_parse(const char *s, enum severity *ret)
{
        if (streq(s, "critical"))
                *ret = SEV_CRITICAL;
        else if (streq(s, "warning"))
                *ret = SEV_WARNING;
        else if (streq(s, "info"))
                *ret = SEV_INFO;
        else
                return -EINVAL;
        return 0;
}

static void rule_done(struct rule *r)
{
        free(r->id);
        free(r->title);
        free(r->area);
        free(r->severity_param);
        free(r->rationale);
        free(r->source);
        free(r->note);
        for (size_t i = 0; i < r->n_when; i++)
                expr_done(&r->when[i]);
        free(r->when);
        for (size_t i = 0; i < r->n_checks; i++)
                expr_done(&r->checks[i]);
        free(r->checks);
        for (size_t i = 0; i < r->n_note_when; i++)
                expr_done(&r->note_when[i]);
        free(r->note_when);
        free(r->remedy);
        strv_done(&r->remedy_keys);
        strv_done(&r->remedy_vals);
        strv_done(&r->evidence);
        free(r->file);
}

void rules_done(struct ruleset *rs)
{
        for (size_t i = 0; i < rs->n; i++)
                rule_done(&rs->v[i]);
        free(rs->v);
        *rs = (struct ruleset){0};
}

const struct rule *rules_find(const struct ruleset *rs, const char *id)
{
        for (size_t i = 0; i < rs->n; i++)
                if (streq(rs->v[i].id, id))
                        return &rs->v[i];
        return NULL;
}

struct loader {
        struct ruleset *rs;
        struct diags *d;
        const char *file;
        size_t first; /* rules of this file start here */
};

static struct rule *current(struct loader *l, const char *section, unsigned section_line)
{
        /* The keys of a section come one after another: the rule of the previous key first, so
         * that a file of N rules loads in O(N) string compares, not O(N^2) (10,000-rule test). */
        if (l->rs->n > l->first && streq(l->rs->v[l->rs->n - 1].id, section))
                return &l->rs->v[l->rs->n - 1];
        for (size_t i = l->first; i < l->rs->n; i++)
                if (streq(l->rs->v[i].id, section))
                        return &l->rs->v[i];
        /* Geometric growth: one entry at a time copies the whole array on every rule (quadratic;
         * under ASan every realloc copies), 10,000-rule files took a minute there. */
        if (l->rs->n + 1 > l->rs->cap) {
                l->rs->cap = 2 * (l->rs->n + 1);
                l->rs->v = xrealloc(l->rs->v, l->rs->cap * sizeof(*l->rs->v));
        }
        struct rule *r = &l->rs->v[l->rs->n++];
        *r = (struct rule){.id = xstrdup(section), .file = xstrdup(l->file), .line = section_line,
                           .severity = SEV_WARNING};
        return r;
}

static void set_once(struct loader *l, char **slot, const char *key, const char *value, unsigned line)
{
        if (*slot) {
                diag_add(l->d, l->file, line, "'%s' given twice", key);
                return;
        }
        *slot = xstrdup(value);
}

static void add_expr(struct loader *l, struct expr **v, size_t *n, const char *value, unsigned line)
{
        struct expr e;
        char *err = NULL;
        if (expr_parse(value, &e, &err) < 0) {
                diag_add(l->d, l->file, line, "%s", err);
                free(err);
                return;
        }
        *v = xrealloc(*v, (*n + 1) * sizeof(**v));
        (*v)[(*n)++] = e;
}

bool rule_id_valid(const char *s)
{
        if (!*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
                        return false;
        return true;
}

/* "${name}" with a name of letters, digits and '_': the parameter name (caller frees), else NULL. */
static char *param_ref(const char *s)
{
        size_t n = strlen(s);
        if (n < 4 || !startswith(s, "${") || s[n - 1] != '}')
                return NULL;
        for (size_t i = 2; i < n - 1; i++)
                if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
                        return NULL;
        return xstrndup(s + 2, n - 3);
}

static void set_severity(struct loader *l, struct rule *r, const char *value, unsigned line)
{
        if (r->severity_param) {
                diag_add(l->d, l->file, line, "'severity' given twice");
                return;
        }
        /* A profile parameter: its value is checked when a profile resolves (profile_resolve). */
        if ((r->severity_param = param_ref(value)))
                return;
        if (severity_parse(value, &r->severity) < 0)
                diag_add(l->d, l->file, line, "severity must be critical, warning, info or ${parameter}, not '%s'",
                         value);
}

/* "evidence = FIELD...": names of sibling facts (letters, digits, '_', '.'). */
static void add_evidence(struct loader *l, struct rule *r, const char *value, unsigned line)
{
        _cleanup_free_ char *v = xstrdup(value);
        char *save = NULL;
        for (char *t = strtok_r(v, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save)) {
                bool ok = true;
                for (const char *c = t; *c && ok; c++)
                        ok = islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '_' || *c == '.';
                if (!ok || *t == '.')
                        diag_add(l->d, l->file, line, "evidence '%s': a fact name's last parts (a-z, 0-9, _, .)", t);
                else if (!strv_contains(&r->evidence, t))
                        strv_add(&r->evidence, t);
        }
}

static void on_key(void *user, const char *section, unsigned section_line, const char *key, const char *value,
                   unsigned line)
{
        struct loader *l = user;
        if (!*section) {
                diag_add(l->d, l->file, line, "key '%s' outside a [rule-id] section", key);
                return;
        }
        if (!rule_id_valid(section)) {
                diag_add(l->d, l->file, section_line, "rule id '%s': use lowercase letters, digits and '-'", section);
                return;
        }
        struct rule *r = current(l, section, section_line);
        if (streq(key, "title"))
                set_once(l, &r->title, key, value, line);
        else if (streq(key, "area")) {
                /* Areas are data: any name a rule gives (audit groups rules by it, in the order the
                 * areas first appear); only its spelling is checked, as it becomes a metric label. */
                if (!rule_id_valid(value))
                        diag_add(l->d, l->file, line, "area '%s': use lowercase letters, digits and '-'", value);
                set_once(l, &r->area, key, value, line);
        } else if (streq(key, "severity"))
                set_severity(l, r, value, line);
        else if (streq(key, "rationale"))
                set_once(l, &r->rationale, key, value, line);
        else if (streq(key, "source"))
                set_once(l, &r->source, key, value, line);
        else if (streq(key, "note"))
                set_once(l, &r->note, key, value, line);
        else if (streq(key, "when"))
                add_expr(l, &r->when, &r->n_when, value, line);
        else if (streq(key, "check"))
                add_expr(l, &r->checks, &r->n_checks, value, line);
        else if (streq(key, "note_when"))
                add_expr(l, &r->note_when, &r->n_note_when, value, line);
        else if (streq(key, "remedy")) {
                if (!remedy_kind_find(value)) {
                        _cleanup_free_ char *names = remedy_kind_names();
                        diag_add(l->d, l->file, line, "unknown remedy '%s' (known: %s)", value, names);
                }
                set_once(l, &r->remedy, key, value, line);
        } else if (startswith(key, "remedy.") && key[7]) {
                if (strv_contains(&r->remedy_keys, key + 7))
                        diag_add(l->d, l->file, line, "'%s' given twice", key);
                strv_add(&r->remedy_keys, key + 7);
                strv_add(&r->remedy_vals, value);
        } else if (streq(key, "evidence"))
                add_evidence(l, r, value, line);
        else
                diag_add(l->d, l->file, line, "unknown key '%s' in rule '%s'", key, section);
}

/* Whole-rule checks once the file is read: required keys, remedy parameters, duplicates. */
static void validate(struct loader *l)
{
        for (size_t i = l->first; i < l->rs->n; i++) {
                struct rule *r = &l->rs->v[i];
                static const char *const req[] = {"title", "area", "rationale", "source"};
                char *const vals[] = {r->title, r->area, r->rationale, r->source};
                for (size_t k = 0; k < ARRAY_SIZE(req); k++)
                        if (!vals[k] || !*vals[k])
                                diag_add(l->d, r->file, r->line, "rule '%s' has no %s", r->id, req[k]);
                if (r->n_checks == 0)
                        diag_add(l->d, r->file, r->line, "rule '%s' has no check", r->id);
                const struct remedy_kind *k = r->remedy ? remedy_kind_find(r->remedy) : NULL;
                if (!r->remedy && r->remedy_keys.n)
                        diag_add(l->d, r->file, r->line, "rule '%s' has remedy parameters but no remedy", r->id);
                if (k) {
                        for (size_t j = 0; j < r->remedy_keys.n; j++)
                                if (!remedy_kind_has_param(k, r->remedy_keys.v[j]))
                                        diag_add(l->d, r->file, r->line, "remedy '%s' takes no parameter '%s'", k->name,
                                                 r->remedy_keys.v[j]);
                        for (size_t j = 0; j < ARRAY_SIZE(k->required) && k->required[j]; j++)
                                if (!strv_contains(&r->remedy_keys, k->required[j]))
                                        diag_add(l->d, r->file, r->line, "remedy '%s' needs remedy.%s", k->name,
                                                 k->required[j]);
                }
                for (size_t j = 0; j < i; j++)
                        if (streq(l->rs->v[j].id, r->id))
                                diag_add(l->d, r->file, r->line, "rule '%s' already defined at %s:%u", r->id,
                                         l->rs->v[j].file, l->rs->v[j].line);
        }
}

static int load_one(void *rs, const char *file, const char *data, size_t len, struct diags *d)
{
        return rules_load_buffer(rs, file, data, len, d);
}

int rules_load_file(struct ruleset *rs, const char *path, struct diags *d)
{
        return ini_input_load(NULL, path, "a rule file", load_one, rs, d);
}

int rules_load_buffer(struct ruleset *rs, const char *name, const char *data, size_t len, struct diags *d)
{
        struct loader l = {.rs = rs, .d = d, .file = name, .first = rs->n};
        size_t before = d->msgs.n;
        ini_load_buffer(name, data, len, on_key, &l, d);
        validate(&l);
        return d->msgs.n > before ? -EINVAL : 0;
}

int rules_load_dir(struct ruleset *rs, const char *dir, struct diags *d)
{
        int rc = ini_dir_load(NULL, dir, "a rule file", NULL, load_one, rs, d, NULL);
        if (root_gone(rc))
                diag_add(d, dir, 0, "cannot open rules directory: %s", strerror(-rc));
        return rc;
}

int rules_load_site(struct ruleset *rs, struct root *root, struct diags *d)
{
        /* no rules.d: nothing to load, no error */
        int rc = ini_dir_load(root, RULES_SITE_DIR, "a rule file", NULL, load_one, rs, d, NULL);
        return root_gone(rc) ? 0 : rc;
}

void rule_params(const struct rule *r, struct strv *ret)
{
        if (r->severity_param && !strv_contains(ret, r->severity_param))
                strv_add(ret, r->severity_param);
        for (size_t i = 0; i < r->n_when; i++)
                expr_params(&r->when[i], ret);
        for (size_t i = 0; i < r->n_checks; i++)
                expr_params(&r->checks[i], ret);
        for (size_t i = 0; i < r->n_note_when; i++)
                expr_params(&r->note_when[i], ret);
        struct expr tmp = {0};
        for (size_t i = 0; i < r->remedy_vals.n; i++) {
                tmp.value = r->remedy_vals.v[i];
                expr_params(&tmp, ret);
        }
}

const char *rule_remedy_param(const struct rule *r, const char *key)
{
        for (size_t i = 0; i < r->remedy_keys.n; i++)
                if (streq(r->remedy_keys.v[i], key))
                        return r->remedy_vals.v[i];
        return NULL;
}
