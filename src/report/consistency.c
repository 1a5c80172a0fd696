/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fleet consistency (consistency.h): which hosts differ from the rest in facts that must agree. */
#include "report/consistency.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "facts/facts.h"
#include "base/json-doc.h"
#include "facts/json-out.h"
#include "engine/rules.h"

/* Largest input file: a facts --json of a 384-CPU machine is well under 2 MiB. */
#define CONS_FILE_MAX (64u << 20)
/* Differences shown per host in the table; JSON has them all. */
#define DIFFS_SHOWN 6

/* --- the rules file ----------------------------------------------------------------------- */

struct loader {
        struct cons_rules *rs;
        const char *file;
        struct diags *d;
};

static void split_patterns(struct strv *l, const char *value)
{
        _cleanup_free_ char *copy = xstrdup(value);
        char *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                while (isspace((unsigned char)*t))
                        t++;
                strip_trailing(t);
                if (*t)
                        strv_add(l, t);
        }
}

static void on_key(void *user, const char *section, unsigned section_line, const char *key, const char *value,
                   unsigned line)
{
        struct loader *l = user;
        if (!section || !*section) {
                diag_add(l->d, l->file, line, "key '%s' outside a [check-id] section", key);
                return;
        }
        if (!rule_id_valid(section)) {
                diag_add(l->d, l->file, section_line, "check id '%s': use lowercase letters, digits and '-'", section);
                return;
        }
        struct cons_check *c = NULL;
        for (size_t i = 0; i < l->rs->n; i++)
                if (streq(l->rs->v[i].id, section) && streq(l->rs->v[i].file, l->file))
                        c = &l->rs->v[i];
        if (!c) {
                for (size_t i = 0; i < l->rs->n; i++)
                        if (streq(l->rs->v[i].id, section))
                                diag_add(l->d, l->file, section_line, "check '%s' already defined", section);
                l->rs->v = xrealloc(l->rs->v, (l->rs->n + 1) * sizeof(*l->rs->v));
                c = &l->rs->v[l->rs->n++];
                *c = (struct cons_check){.id = xstrdup(section), .file = xstrdup(l->file), .line = section_line};
        }
        char **slot = streq(key, "title") ? &c->title : streq(key, "why") ? &c->why : streq(key, "source") ? &c->source : NULL;
        if (slot) {
                if (*slot)
                        diag_add(l->d, l->file, line, "'%s' given twice in [%s]", key, section);
                else
                        *slot = xstrdup(value);
        } else if (streq(key, "facts"))
                split_patterns(&c->facts, value);
        else if (streq(key, "ignore"))
                split_patterns(&c->ignore, value);
        else
                diag_add(l->d, l->file, line, "unknown key '%s' (title, facts, ignore, why, source)", key);
}

int cons_rules_load(const char *path, struct cons_rules *rs, struct diags *d)
{
        size_t before = d->msgs.n;
        struct loader l = {.rs = rs, .file = path, .d = d};
        int rc = ini_load_file(path, on_key, &l, d);
        for (size_t i = 0; i < rs->n; i++) {
                const struct cons_check *c = &rs->v[i];
                if (!c->title)
                        diag_add(d, c->file, c->line, "check '%s' has no title", c->id);
                if (!c->facts.n)
                        diag_add(d, c->file, c->line, "check '%s' has no facts", c->id);
                if (!c->why)
                        diag_add(d, c->file, c->line, "check '%s' has no why", c->id);
        }
        if (rc == 0 && rs->n == 0)
                diag_add(d, path, 0, "no checks");
        return rc < 0 ? rc : d->msgs.n > before ? -EINVAL : 0;
}

void cons_rules_done(struct cons_rules *rs)
{
        for (size_t i = 0; i < rs->n; i++) {
                struct cons_check *c = &rs->v[i];
                free(c->id);
                free(c->title);
                free(c->why);
                free(c->source);
                free(c->file);
                strv_done(&c->facts);
                strv_done(&c->ignore);
        }
        free(rs->v);
        *rs = (struct cons_rules){0};
}

/* --- input -------------------------------------------------------------------------------- */

static bool check_wants(const struct cons_check *c, const char *name)
{
        bool in = false;
        for (size_t i = 0; i < c->facts.n && !in; i++)
                in = fnmatch(c->facts.v[i], name, 0) == 0;
        for (size_t i = 0; i < c->ignore.n && in; i++)
                in = fnmatch(c->ignore.v[i], name, 0) != 0;
        return in;
}

bool cons_rules_want(const struct cons_rules *rs, const char *name)
{
        for (size_t i = 0; i < rs->n; i++)
                if (check_wants(&rs->v[i], name))
                        return true;
        return false;
}


static int entry_cmp(const void *a, const void *b)
{
        return natcmp(((const struct cons_entry *)a)->name, ((const struct cons_entry *)b)->name);
}

static void entry_done(struct cons_entry *e)
{
        free(e->name);
        free(e->value);
}

static void host_done(struct cons_host *h)
{
        for (size_t i = 0; i < h->n; i++)
                entry_done(&h->v[i]);
        free(h->v);
        free(h->name);
        free(h->facts_file);
        free(h->audit_file);
}

static void add_entry(struct cons_entry **v, size_t *n, const char *name, enum cons_state st, const char *value)
{
        *v = xrealloc(*v, (*n + 1) * sizeof(**v));
        (*v)[(*n)++] = (struct cons_entry){
                .name = report_clean(name), .state = st, .value = value ? report_clean(value) : NULL};
}

/* One fact of facts --json: {"status": "ok", "value": V, ...} or {"status": "absent"|"unreadable",
 * "reason": "..."}. Returns false when it has neither shape. */
static bool fact_entry(json_object *o, enum cons_state *st, const char **value)
{
        const char *s = json_object_is_type(o, json_type_object) ? json_doc_str(o, "status") : NULL;
        json_object *v;
        if (streq(s, "ok") && json_object_object_get_ex(o, "value", &v) && v &&
            !json_object_is_type(v, json_type_object) && !json_object_is_type(v, json_type_array)) {
                *st = CONS_OK;
                *value = json_object_get_string(v);
                return true;
        }
        if (streq(s, "absent") || streq(s, "unreadable")) {
                *st = streq(s, "absent") ? CONS_ABSENT : CONS_UNREADABLE;
                *value = json_doc_str(o, "reason");
                return true;
        }
        return false;
}

static struct cons_host *find_host(const struct cons_fleet *fl, const char *name)
{
        for (size_t i = 0; i < fl->nhosts; i++)
                if (streq(fl->hosts[i].name, name))
                        return &fl->hosts[i];
        return NULL;
}

static struct cons_entry *entries_free(struct cons_entry *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                entry_done(&v[i]);
        free(v);
        return NULL;
}

/* TEXT as the output of facts --json (*FACTS: its "facts") or audit --json (*FACTS NULL). */
static int parse_input(const char *file, const char *text, size_t len, json_object **ret, json_object **facts,
                       char **err)
{
        const char *why;
        json_object *top, *format, *results;
        if (json_doc_parse(text, len, &top, &why) < 0) {
                *err = xasprintf("%s: not JSON (%s)", file, why);
                return -EINVAL;
        }
        *facts = NULL;
        bool is_facts = json_object_object_get_ex(top, "facts", facts) && json_object_is_type(*facts, json_type_object);
        if (!is_facts)
                *facts = NULL;
        bool is_audit = json_object_object_get_ex(top, "results", &results) && json_object_is_type(results, json_type_array);
        if (!json_object_is_type(top, json_type_object) || !json_object_object_get_ex(top, "format", &format) ||
            json_object_get_int(format) != 1 || (!is_facts && !is_audit)) {
                *err = xasprintf("%s: not the output of `llmtune facts --json` or `llmtune audit --json` (format 1)", file);
                json_object_put(top);
                return -EINVAL;
        }
        *ret = top;
        return 0;
}

/* The entries the rules want from FACTS, or of an audit (TOP): the profile it used is the host's
 * "profile" fact. */
static int collect(struct cons_fleet *fl, const char *file, json_object *top, json_object *facts,
                   struct cons_entry **v, size_t *n, char **err)
{
        if (!facts) {
                json_object *prof;
                if (json_object_object_get_ex(top, "profile", &prof) && json_doc_str(prof, "name"))
                        add_entry(v, n, "profile", CONS_OK, json_doc_str(prof, "name"));
                else
                        add_entry(v, n, "profile", CONS_UNREADABLE, "the audit names no profile");
                return 0;
        }
        json_object_object_foreach(facts, key, val)
        {
                if (!cons_rules_want(fl->rules, key))
                        continue;
                enum cons_state st;
                const char *value;
                if (!fact_entry(val, &st, &value)) {
                        *err = xasprintf("%s: fact %s is neither a value nor absent/unreadable", file, key);
                        return -EINVAL;
                }
                add_entry(v, n, key, st, value);
        }
        return 0;
}

/* The host NAME, new or known from the other kind of file (one facts and one audit file per host). */
static int host_for(struct cons_fleet *fl, const char *name, const char *file, bool facts, struct cons_host **ret,
                    char **err)
{
        struct cons_host *h = find_host(fl, name);
        if (h && ((facts && h->facts_file) || (!facts && h->audit_file))) {
                *err = xasprintf("host %s is in both %s and %s (one %s file per host)", name,
                                 facts ? h->facts_file : h->audit_file, file, facts ? "facts" : "audit");
                return -EEXIST;
        }
        if (!h) {
                fl->hosts = xrealloc(fl->hosts, (fl->nhosts + 1) * sizeof(*fl->hosts));
                h = &fl->hosts[fl->nhosts++];
                *h = (struct cons_host){.name = xstrdup(name)};
        }
        if (facts)
                h->facts_file = xstrdup(file);
        else
                h->audit_file = xstrdup(file);
        *ret = h;
        return 0;
}

int cons_add_json(struct cons_fleet *fl, const char *file, const char *text, size_t len, char **err)
{
        *err = NULL;
        json_object *top, *facts;
        int rc = parse_input(file, text, len, &top, &facts, err);
        if (rc < 0)
                return rc;
        const char *hn = json_doc_str(top, "host");
        _cleanup_free_ char *name = hn && *hn ? report_clean(hn) : report_name_from_file(file);
        struct cons_entry *v = NULL;
        size_t n = 0;
        bool is_facts = facts != NULL;
        rc = collect(fl, file, top, facts, &v, &n, err);
        json_object_put(top);
        struct cons_host *h = NULL;
        if (rc == 0)
                rc = host_for(fl, name, file, is_facts, &h, err);
        if (rc < 0) {
                v = entries_free(v, n);
                return rc;
        }
        h->v = xrealloc(h->v, (h->n + n + 1) * sizeof(*h->v));
        memcpy(h->v + h->n, v, n * sizeof(*v));
        h->n += n;
        free(v);
        return 0;
}

/* --- the reference: a baseline's [facts], [facts-absent] and [facts-unreadable] ------------- */

/* A "name = value" line longer than this would not load back: inih reads lines of at most 198
 * characters (Debian builds it with INI_MAX_LINE=200), and ini-load.c refuses longer ones. */
#define REF_LINE_MAX 190

static const char *const ref_sections[] = {[CONS_OK] = "facts", [CONS_ABSENT] = "facts-absent",
                                           [CONS_UNREADABLE] = "facts-unreadable"};

/* Whether byte I of V would not read back as itself from an ini value: a control character (a
 * profile refuses it), '%' (the escape), ';' (inih's inline comment), a space at either end
 * (trimmed). Those are written %XX. */
static bool ref_escaped(const char *v, size_t i, size_t n)
{
        unsigned char c = (unsigned char)v[i];
        return c < 0x20 || c == 0x7f || c == '%' || c == ';' || (c == ' ' && (i == 0 || i == n - 1));
}

/* A fact name inih takes as a key, whole: no blank, control character, comment, section or
 * separator character. */
static bool ref_name_ok(const char *name)
{
        for (const char *c = name; *c; c++)
                if ((unsigned char)*c <= ' ' || *c == 0x7f || strchr("=:;#[]%", *c))
                        return false;
        return *name;
}

/* E's text in a reference: a value with its unsafe bytes escaped, exact; a reason (not compared)
 * made to fit one line of plain text. */
static char *ref_text(const struct cons_entry *e)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        const char *v = e->value ? e->value : "";
        size_t n = strlen(v);
        if (e->state == CONS_OK) {
                for (size_t i = 0; i < n; i++)
                        if (ref_escaped(v, i, n))
                                sbuf_addf(&b, "%%%02X", (unsigned char)v[i]);
                        else
                                sbuf_addn(&b, v + i, 1);
                return sbuf_steal(&b);
        }
        for (size_t i = strspn(v, " "); i < n && b.len + strlen(e->name) + 4 < REF_LINE_MAX; i++)
                sbuf_addn(&b, ref_escaped(v, i, n) ? " " : v + i, 1);
        return strip_trailing(sbuf_steal(&b));
}

/* A value too long for one line is recorded as unreadable, saying so. */
static bool ref_too_long(const struct cons_entry *e)
{
        _cleanup_free_ char *text = e->state == CONS_OK ? ref_text(e) : NULL;
        return text && strlen(e->name) + strlen(text) + 3 > REF_LINE_MAX;
}

/* E as a line of section ST's. */
static void ref_write_one(FILE *out, const struct cons_entry *e, enum cons_state st)
{
        _cleanup_free_ char *text = st != e->state ? xasprintf("its value is longer than a line of a baseline holds "
                                                               "(%zu characters)", strlen(e->value))
                                                   : ref_text(e);
        if (!ref_name_ok(e->name) || strlen(e->name) + strlen(text) + 3 > REF_LINE_MAX)
                fprintf(out, "# %s left out: an ini line cannot hold its name (the reference lacks it)\n", e->name);
        else
                fprintf(out, "%s = %s\n", e->name, text);
}

void cons_write_reference(FILE *out, const struct cons_entry *v, size_t n)
{
        for (enum cons_state st = CONS_OK; st <= CONS_UNREADABLE; st++) {
                bool head = false;
                for (size_t i = 0; i < n; i++) {
                        bool too_long = ref_too_long(&v[i]);
                        if (too_long ? st != CONS_UNREADABLE : v[i].state != st)
                                continue;
                        if (!head)
                                fprintf(out, "\n[%s]\n", ref_sections[st]);
                        head = true;
                        ref_write_one(out, &v[i], st);
                }
        }
}

/* V with its %XX escapes undone, or NULL when one is not two hex digits. */
static char *ref_unescape(const char *v)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        for (const char *c = v; *c; c++) {
                unsigned x;
                if (*c != '%')
                        sbuf_addn(&b, c, 1);
                else if (isxdigit((unsigned char)c[1]) && isxdigit((unsigned char)c[2]) && sscanf(c + 1, "%2x", &x) == 1 &&
                         x) {
                        sbuf_addn(&b, (const char *)&(char){(char)x}, 1);
                        c += 2;
                } else {
                        free(sbuf_steal(&b));
                        return NULL;
                }
        }
        return sbuf_steal(&b);
}

struct ref_load {
        const char *file;
        const struct cons_rules *rules;
        struct cons_entry *v;
        size_t n;
        struct diags *d;
};

/* One fact of a baseline's [facts] (its value), [facts-absent] or [facts-unreadable] (the reason);
 * the other sections are the profile's, and a fact no check compares is not kept. */
static void ref_key(void *user, const char *section, unsigned section_line, const char *key, const char *value,
                    unsigned line)
{
        (void)section_line;
        struct ref_load *rl = user;
        for (size_t st = 0; st < ARRAY_SIZE(ref_sections); st++) {
                if (!streq(section, ref_sections[st]) || !cons_rules_want(rl->rules, key))
                        continue;
                for (size_t i = 0; i < rl->n; i++)
                        if (streq(rl->v[i].name, key)) {
                                diag_add(rl->d, rl->file, line, "fact '%s' given twice", key);
                                return;
                        }
                _cleanup_free_ char *plain = st == CONS_OK ? ref_unescape(value) : xstrdup(value);
                if (!plain)
                        diag_add(rl->d, rl->file, line, "the value of '%s' holds a '%%' that is not %%XX", key);
                else
                        add_entry(&rl->v, &rl->n, key, (enum cons_state)st, plain);
        }
}

int cons_add_reference(struct cons_fleet *fl, const char *file, char **err)
{
        *err = NULL;
        struct diags d = {0};
        struct ref_load rl = {.file = file, .rules = fl->rules, .d = &d};
        int rc = ini_load_file(file, ref_key, &rl, &d);
        if (rc < 0 || d.msgs.n)
                *err = xasprintf("reference %s", d.msgs.n ? d.msgs.v[0] : file);
        else if (!rl.n)
                *err = xasprintf("reference %s: no fact a check compares in [facts], [facts-absent] or "
                                 "[facts-unreadable] (write it with `llmtune baseline -o FILE`)", file);
        else if (find_host(fl, CONS_REFERENCE))
                *err = xasprintf("reference %s: a host of the input is named %s too", file, CONS_REFERENCE);
        strv_done(&d.msgs);
        if (*err) {
                entries_free(rl.v, rl.n);
                return -EINVAL;
        }
        fl->hosts = xrealloc(fl->hosts, (fl->nhosts + 1) * sizeof(*fl->hosts));
        fl->hosts[fl->nhosts++] = (struct cons_host){.name = xstrdup(CONS_REFERENCE), .facts_file = xstrdup(file),
                                                     .v = rl.v, .n = rl.n};
        fl->reference = true;
        return 0;
}

int cons_add_file(struct cons_fleet *fl, const char *file, char **err)
{
        *err = NULL;
        char *buf = NULL;
        size_t len = 0;
        int rc = read_user_file(file, CONS_FILE_MAX, &buf, &len);
        if (rc < 0)
                *err = read_user_file_error(file, rc, CONS_FILE_MAX, "a facts or audit file");
        else
                rc = cons_add_json(fl, file, buf, len, err);
        free(buf);
        return rc;
}

/* --- grouping ----------------------------------------------------------------------------- */

static int natural_cmp(const char *a, const char *b)
{
        int c = natcmp(a, b);
        return c ? c : strcmp(a, b);
}

static int host_cmp(const void *x, const void *y)
{
        return natural_cmp(((const struct cons_host *)x)->name, ((const struct cons_host *)y)->name);
}

static const char *const state_names[] = {"ok", "absent", "unreadable"};

/* The host's facts for check C as "name\tstate\tvalue\n" lines, in name order. Absent facts are
 * part of it: a host that lacks what the others have differs. */
static char *signature(const struct cons_host *h, const struct cons_check *c, bool *unreadable)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        for (size_t i = 0; i < h->n; i++) {
                const struct cons_entry *e = &h->v[i];
                if (!check_wants(c, e->name))
                        continue;
                if (e->state == CONS_UNREADABLE)
                        *unreadable = true;
                /* The reason of an absent fact is not part of the value: only that it is absent. */
                sbuf_addf(&b, "%s\t%s\t%s\n", e->name, state_names[e->state], e->state == CONS_OK ? e->value : "");
        }
        return sbuf_steal(&b);
}

/* Whether G holds the reference (cons_add_reference). */
static bool holds_reference(const struct cons_fleet *fl, const struct host_group *g)
{
        for (size_t j = 0; j < g->n; j++)
                if (fl->reference && streq(fl->hosts[g->hosts[j]].name, CONS_REFERENCE))
                        return true;
        return false;
}

/* With a reference the norm is its group, first, whatever its size. */
static void reference_first(const struct cons_fleet *fl, struct cons_result *r)
{
        for (size_t g = 0; g < r->ngroups; g++)
                if (holds_reference(fl, &r->groups[g])) {
                        struct host_group ref = r->groups[g];
                        memmove(r->groups + 1, r->groups, g * sizeof(*r->groups));
                        r->groups[0] = ref;
                        r->norm = true;
                        return;
                }
}

/* The hosts grouped by their signature for R's check. The reference takes part in the checks it
 * recorded a fact of: one it holds nothing of (the profile, which an audit gives and a baseline
 * does not) keeps the majority as its norm. */
static void group_hosts(const struct cons_fleet *fl, struct cons_result *r)
{
        for (size_t i = 0; i < fl->nhosts; i++) {
                bool unreadable = false;
                char *key = signature(&fl->hosts[i], r->check, &unreadable);
                if (fl->reference && !*key && streq(fl->hosts[i].name, CONS_REFERENCE)) {
                        free(key);
                        continue;
                }
                r->unreadable_hosts += unreadable;
                host_groups_add(&r->groups, &r->ngroups, key, i);
        }
        host_groups_sort(r->groups, r->ngroups);
        r->norm = r->ngroups == 1 || (r->ngroups > 1 && r->groups[0].n > r->groups[1].n);
        if (fl->reference)
                reference_first(fl, r);
}

int cons_finish(struct cons_fleet *fl, char **err)
{
        *err = NULL;
        for (size_t i = 0; i < fl->nhosts; i++)
                if (!fl->hosts[i].facts_file) {
                        *err = xasprintf("host %s: an audit (%s) but no facts file", fl->hosts[i].name,
                                         fl->hosts[i].audit_file);
                        return -EINVAL;
                }
        if (fl->nhosts)
                qsort_safe(fl->hosts, fl->nhosts, sizeof(*fl->hosts), host_cmp);
        for (size_t i = 0; i < fl->nhosts; i++)
                if (fl->hosts[i].n)
                        qsort_safe(fl->hosts[i].v, fl->hosts[i].n, sizeof(*fl->hosts[i].v), entry_cmp);
        fl->results = xcalloc(fl->rules->n + 1, sizeof(*fl->results));
        for (size_t k = 0; k < fl->rules->n; k++) {
                fl->results[k].check = &fl->rules->v[k];
                group_hosts(fl, &fl->results[k]);
        }
        return 0;
}

size_t cons_not_uniform(const struct cons_fleet *fl)
{
        size_t n = 0;
        for (size_t k = 0; k < fl->rules->n; k++)
                n += fl->results && fl->results[k].ngroups > 1;
        return n;
}

/* --- differences from the norm ------------------------------------------------------------ */

struct diff {
        const char *name;
        const struct cons_entry *here, *norm; /* NULL: the fact is not there */
};

static const struct cons_entry *find_entry(const struct cons_host *h, const struct cons_check *c, const char *name)
{
        for (size_t i = 0; i < h->n; i++)
                if (streq(h->v[i].name, name) && check_wants(c, name))
                        return &h->v[i];
        return NULL;
}

static bool entry_same(const struct cons_entry *a, const struct cons_entry *b)
{
        if (!a || !b)
                return !a && !b;
        return a->state == b->state && (a->state != CONS_OK || streq(a->value, b->value));
}

static int diff_cmp(const void *a, const void *b)
{
        return natcmp(((const struct diff *)a)->name, ((const struct diff *)b)->name);
}

/* Facts of check C in which host H differs from host N (a host of the norm), in name order. */
static size_t diffs(const struct cons_host *h, const struct cons_host *n, const struct cons_check *c, struct diff **ret)
{
        struct diff *v = NULL;
        size_t cnt = 0;
        const struct cons_host *both[2] = {h, n};
        for (int s = 0; s < 2; s++)
                for (size_t i = 0; i < both[s]->n; i++) {
                        const char *name = both[s]->v[i].name;
                        if (!check_wants(c, name))
                                continue;
                        const struct cons_entry *a = find_entry(h, c, name), *b = find_entry(n, c, name);
                        if (s == 1 && a)
                                continue; /* seen from h's side */
                        if (entry_same(a, b))
                                continue;
                        v = xrealloc(v, (cnt + 1) * sizeof(*v));
                        v[cnt++] = (struct diff){.name = name, .here = a, .norm = b};
                }
        if (cnt)
                qsort_safe(v, cnt, sizeof(*v), diff_cmp);
        *ret = v;
        return cnt;
}

static char *entry_text(const struct cons_entry *e)
{
        if (!e)
                return xstrdup("(not there)");
        if (e->state == CONS_OK)
                return xstrdup(e->value);
        return e->value ? xasprintf("(%s: %s)", state_names[e->state], e->value) : xasprintf("(%s)", state_names[e->state]);
}

/* "name=value, name=value (+N more)" of a group's facts. */
static char *summary(const struct cons_host *h, const struct cons_check *c, size_t max)
{
        _cleanup_strv_ struct strv l = {0};
        size_t total = 0;
        for (size_t i = 0; i < h->n; i++) {
                if (!check_wants(c, h->v[i].name))
                        continue;
                if (total++ < max) {
                        _cleanup_free_ char *t = entry_text(&h->v[i]);
                        strv_push(&l, xasprintf("%s=%s", h->v[i].name, t));
                }
        }
        if (total > max)
                strv_push(&l, xasprintf("(+%zu more)", total - max));
        char *s = total ? strv_join(&l, ", ") : xstrdup("(no such facts)");
        return s;
}

static void print_hosts(FILE *out, const struct cons_fleet *fl, const struct host_group *g)
{
        for (size_t j = 0; j < g->n; j++)
                fprintf(out, "%s%s", j ? ", " : "", fl->hosts[g->hosts[j]].name);
}

/* The hosts of the input: the reference is not one of them. */
static size_t input_hosts(const struct cons_fleet *fl)
{
        return fl->nhosts - (fl->reference && fl->nhosts);
}

/* "N of M hosts agree", or with the reference among them, "the reference and N of M hosts agree". */
static void print_norm(FILE *out, const struct cons_fleet *fl, const struct host_group *norm, const char *summary)
{
        bool ref = holds_reference(fl, norm);
        fprintf(out, "  %s%zu of %zu hosts agree: %s\n", ref ? "the reference and " : "", norm->n - ref, input_hosts(fl),
                summary);
}

void cons_print_table(FILE *out, const struct cons_fleet *fl)
{
        size_t bad = cons_not_uniform(fl);
        fprintf(out, "Fleet consistency: %zu hosts%s, %zu checks: %zu uniform, %zu not uniform\n", input_hosts(fl),
                fl->reference ? " held to the reference" : "", fl->rules->n, fl->rules->n - bad, bad);
        for (size_t k = 0; k < fl->rules->n; k++) {
                const struct cons_result *r = &fl->results[k];
                const struct cons_check *c = r->check;
                if (r->ngroups <= 1) {
                        /* Uniform only when there was something to compare. */
                        bool none = !r->ngroups || !*r->groups[0].key;
                        _cleanup_free_ char *s = none ? NULL : summary(&fl->hosts[r->groups[0].hosts[0]], c, 3);
                        fprintf(out, "\n%s %s: %s\n  %s\n", none ? "not compared " : "uniform      ", c->id, c->title,
                                s ? s : "no host has these facts");
                        continue;
                }
                fprintf(out, "\nNOT UNIFORM   %s: %s\n", c->id, c->title);
                fprintf(out, "  why: %s\n", c->why);
                const struct host_group *norm = r->norm ? &r->groups[0] : NULL;
                const struct cons_host *nh = norm ? &fl->hosts[norm->hosts[0]] : NULL;
                if (norm) {
                        _cleanup_free_ char *s = summary(nh, c, 3);
                        print_norm(out, fl, norm, s);
                } else
                        fprintf(out, "  no majority: the %zu hosts fall into %zu groups of which the largest are the same size\n",
                                input_hosts(fl), r->ngroups);
                for (size_t g = norm ? 1 : 0; g < r->ngroups; g++) {
                        const struct host_group *gr = &r->groups[g];
                        const struct cons_host *h = &fl->hosts[gr->hosts[0]];
                        fprintf(out, "  %s %zu host%s: ", norm ? "differ," : "group,", gr->n, gr->n == 1 ? "" : "s");
                        print_hosts(out, fl, gr);
                        fputc('\n', out);
                        if (!norm) {
                                _cleanup_free_ char *s = summary(h, c, 3);
                                fprintf(out, "    %s\n", s);
                                continue;
                        }
                        struct diff *d;
                        size_t nd = diffs(h, nh, c, &d);
                        for (size_t i = 0; i < nd && i < DIFFS_SHOWN; i++) {
                                _cleanup_free_ char *a = entry_text(d[i].here), *b = entry_text(d[i].norm);
                                fprintf(out, "    %s: %s (the %s: %s)\n", d[i].name, a,
                                        holds_reference(fl, norm) ? "reference" : "others", b);
                        }
                        if (nd > DIFFS_SHOWN)
                                fprintf(out, "    ... and %zu more\n", nd - DIFFS_SHOWN);
                        free(d);
                }
        }
}

static json_object *entry_json(const struct cons_entry *e)
{
        if (!e)
                return NULL;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "status", json_object_new_string(state_names[e->state]));
        json_object_object_add(o, e->state == CONS_OK ? "value" : "reason",
                               e->value ? json_object_new_string(e->value) : NULL);
        return o;
}

static json_object *facts_json(const struct cons_host *h, const struct cons_check *c)
{
        json_object *o = json_object_new_object();
        for (size_t i = 0; i < h->n; i++)
                if (check_wants(c, h->v[i].name))
                        json_object_object_add(o, h->v[i].name, entry_json(&h->v[i]));
        return o;
}

void cons_print_json(FILE *out, const struct cons_fleet *fl)
{
        json_object *top = json_object_new_object();
        json_object_object_add(top, "format", json_object_new_int(1));
        json_object_object_add(top, "hosts", json_object_new_int64((int64_t)input_hosts(fl)));
        const struct cons_host *ref = fl->reference ? find_host(fl, CONS_REFERENCE) : NULL;
        json_object_object_add(top, "reference", ref ? json_object_new_string(ref->facts_file) : NULL);
        json_object_object_add(top, "not_uniform", json_object_new_int64((int64_t)cons_not_uniform(fl)));
        json_object *checks = json_object_new_array();
        for (size_t k = 0; k < fl->rules->n; k++) {
                const struct cons_result *r = &fl->results[k];
                const struct cons_check *c = r->check;
                json_object *o = json_object_new_object();
                json_object_object_add(o, "id", json_object_new_string(c->id));
                json_object_object_add(o, "title", json_object_new_string(c->title));
                json_object_object_add(o, "uniform", json_object_new_boolean(r->ngroups <= 1));
                json_object_object_add(o, "compared", json_object_new_boolean(r->ngroups > 1 || (r->ngroups && *r->groups[0].key)));
                json_object_object_add(o, "norm", json_object_new_boolean(r->norm));
                json_object_object_add(o, "unreadable_hosts", json_object_new_int64((int64_t)r->unreadable_hosts));
                const struct cons_host *nh = r->norm && r->ngroups ? &fl->hosts[r->groups[0].hosts[0]] : NULL;
                json_object *groups = json_object_new_array();
                for (size_t g = 0; g < r->ngroups; g++) {
                        const struct host_group *gr = &r->groups[g];
                        const struct cons_host *h = &fl->hosts[gr->hosts[0]];
                        json_object *go = json_object_new_object(), *hosts = json_object_new_array();
                        for (size_t j = 0; j < gr->n; j++)
                                json_object_array_add(hosts, json_object_new_string(fl->hosts[gr->hosts[j]].name));
                        json_object_object_add(go, "hosts", hosts);
                        json_object_object_add(go, "facts", facts_json(h, c));
                        if (nh && g > 0) {
                                struct diff *d;
                                size_t nd = diffs(h, nh, c, &d);
                                json_object *da = json_object_new_array();
                                for (size_t i = 0; i < nd; i++) {
                                        json_object *x = json_object_new_object();
                                        json_object_object_add(x, "fact", json_object_new_string(d[i].name));
                                        json_object_object_add(x, "here", entry_json(d[i].here));
                                        json_object_object_add(x, "norm", entry_json(d[i].norm));
                                        json_object_array_add(da, x);
                                }
                                free(d);
                                json_object_object_add(go, "differences", da);
                        }
                        json_object_array_add(groups, go);
                }
                json_object_object_add(o, "groups", groups);
                json_object_array_add(checks, o);
        }
        json_object_object_add(top, "checks", checks);
        json_print(out, top);
        json_object_put(top);
}

void cons_fleet_done(struct cons_fleet *fl)
{
        for (size_t i = 0; i < fl->nhosts; i++)
                host_done(&fl->hosts[i]);
        free(fl->hosts);
        if (fl->results)
                for (size_t k = 0; k < fl->rules->n; k++)
                        host_groups_free(fl->results[k].groups, fl->results[k].ngroups);
        free(fl->results);
        *fl = (struct cons_fleet){.rules = fl->rules};
}
