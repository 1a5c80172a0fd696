/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fleet report: parse many `llmtune audit --json` documents (json-c) and aggregate them. */
#include "report/report.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json-doc.h"
#include "facts/json-out.h"

const char *cell_name(enum cell c)
{
        static const char *const n[] = {"pass", "fail", "n/a", "error", "acked", "missing"};
        return c < CELL__COUNT ? n[c] : "?";
}

const char *cell_key(enum cell c)
{
        static const char *const n[] = {"pass", "fail", "na", "error", "acked", "missing"};
        return c < CELL__COUNT ? n[c] : "?";
}

char *report_clean(const char *s)
{
        char *d = xstrdup(s);
        for (char *p = d; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = '?';
        return d;
}

static char *dup_or_null(const char *s) { return s ? report_clean(s) : NULL; }

static size_t rule_index(struct report *rp, const char *id)
{
        for (size_t i = 0; i < rp->nrules; i++)
                if (streq(rp->rules[i].id, id))
                        return i;
        return (size_t)-1;
}

char *report_name_from_file(const char *file)
{
        const char *b = strrchr(file, '/');
        b = b ? b + 1 : file;
        size_t n = strlen(b);
        if (n > 5 && endswith(b, ".json"))
                n -= 5;
        _cleanup_free_ char *s = xstrndup(b, n);
        return report_clean(s);
}

static int fail(char **err, const char *file, const char *what)
{
        *err = xasprintf("%s: %s", file, what);
        return -EINVAL;
}

static void cell_done(struct report_cell *c)
{
        free(c->observed);
        free(c->expected);
        free(c->reason);
        free(c->severity);
}

static void host_done(struct report_host *h)
{
        for (size_t i = 0; i < h->ncells; i++)
                cell_done(&h->cells[i]);
        free(h->cells);
        free(h->name);
        free(h->file);
        free(h->profile);
        free(h->profile_hash);
}

/* TEXT parsed as one audit --json document of format 1 into *TOP, its "results" array into
 * *RESULTS. Returns 0 or -EINVAL with *ERR set. */
static int parse_audit_json(const char *file, const char *text, size_t len, json_object **top,
                            json_object **results, char **err)
{
        const char *why;
        if (json_doc_parse(text, len, top, &why) < 0) {
                *err = xasprintf("%s: not JSON (%s)", file, why);
                return -EINVAL;
        }
        json_object *format;
        if (!json_object_is_type(*top, json_type_object))
                return fail(err, file, "not an llmtune audit --json document (not an object)");
        if (!json_object_object_get_ex(*top, "format", &format) || !json_object_is_type(format, json_type_int) ||
            json_object_get_int(format) != 1)
                return fail(err, file, "not an llmtune audit --json document of format 1 (\"format\" is missing or not 1)");
        if (!json_object_object_get_ex(*top, "results", results) || !json_object_is_type(*results, json_type_array))
                return fail(err, file, "not an llmtune audit --json document (no \"results\" array)");
        return 0;
}

/* Every result has a rule and a known status, and no rule appears twice. Returns 0 or -EINVAL
 * with *ERR set. */
static int validate_results(const char *file, json_object *results, char **err)
{
        size_t n = json_object_array_length(results);
        for (size_t i = 0; i < n; i++) {
                json_object *r = json_object_array_get_idx(results, i);
                const char *id = json_object_is_type(r, json_type_object) ? json_doc_str(r, "rule") : NULL;
                const char *st = id ? json_doc_str(r, "status") : NULL;
                if (!id || !*id || !st) {
                        *err = xasprintf("%s: result %zu has no \"rule\" or \"status\" string", file, i);
                        return -EINVAL;
                }
                bool known = false;
                for (enum cell c = CELL_PASS; c < CELL_MISSING; c++)
                        known = known || streq(st, cell_name(c));
                if (!known) {
                        *err = xasprintf("%s: rule %s has the unknown status \"%s\"", file, id, st);
                        return -EINVAL;
                }
                for (size_t j = 0; j < i; j++)
                        if (streq(json_doc_str(json_object_array_get_idx(results, j), "rule"), id)) {
                                *err = xasprintf("%s: rule %s appears twice", file, id);
                                return -EINVAL;
                        }
        }
        return 0;
}

/* Result R into the report: its rule added to RP's rows when new (title, area and severity from
 * the first host that names them), its cell into H's column. */
static void add_result(struct report *rp, struct report_host *h, json_object *r)
{
        _cleanup_free_ char *id = report_clean(json_doc_str(r, "rule"));
        size_t k = rule_index(rp, id);
        if (k == (size_t)-1) {
                rp->rules = xrealloc(rp->rules, (rp->nrules + 1) * sizeof(*rp->rules));
                k = rp->nrules++;
                rp->rules[k] = (struct report_rule){.id = xstrdup(id)};
        }
        struct report_rule *rule = &rp->rules[k];
        if (!rule->title)
                rule->title = dup_or_null(json_doc_str(r, "title"));
        if (!rule->area)
                rule->area = dup_or_null(json_doc_str(r, "area"));
        if (!rule->severity)
                rule->severity = dup_or_null(json_doc_str(r, "severity"));
        if (k >= h->ncells) {
                h->cells = xrealloc(h->cells, rp->nrules * sizeof(*h->cells));
                for (size_t c = h->ncells; c < rp->nrules; c++)
                        h->cells[c] = (struct report_cell){.state = CELL_MISSING};
                h->ncells = rp->nrules;
        }
        struct report_cell *cell = &h->cells[k];
        const char *st = json_doc_str(r, "status");
        for (enum cell c = CELL_PASS; c < CELL_MISSING; c++)
                if (streq(st, cell_name(c)))
                        cell->state = c;
        cell->observed = dup_or_null(json_doc_str(r, "observed"));
        cell->expected = dup_or_null(json_doc_str(r, "expected"));
        cell->reason = dup_or_null(json_doc_str(r, "reason"));
        json_object *ack;
        if (cell->state == CELL_ACKED && !cell->reason && json_object_object_get_ex(r, "ack", &ack) &&
            json_object_is_type(ack, json_type_object))
                cell->reason = dup_or_null(json_doc_str(ack, "note")); /* who acknowledged it, why */
        cell->severity = dup_or_null(json_doc_str(r, "severity"));
}

int report_add_json(struct report *rp, const char *file, const char *text, size_t len, char **err)
{
        *err = NULL;
        _cleanup_(json_object_putp) json_object *top = NULL;
        json_object *results = NULL;
        int rc = parse_audit_json(file, text, len, &top, &results, err);
        /* Every result is validated before the report is touched, so a bad file leaves no trace. */
        if (rc == 0)
                rc = validate_results(file, results, err);
        if (rc < 0)
                return rc;

        struct report_host h = {0};
        const char *host = json_doc_str(top, "host");
        h.name = host && *host ? report_clean(host) : report_name_from_file(file);
        h.file = xstrdup(file);
        json_object *prof;
        if (json_object_object_get_ex(top, "profile", &prof) && json_object_is_type(prof, json_type_object)) {
                h.profile = dup_or_null(json_doc_str(prof, "name"));
                h.profile_hash = dup_or_null(json_doc_str(prof, "hash"));
        }
        size_t n = json_object_array_length(results);
        for (size_t i = 0; i < n; i++)
                add_result(rp, &h, json_object_array_get_idx(results, i));
        rp->hosts = xrealloc(rp->hosts, (rp->nhosts + 1) * sizeof(*rp->hosts));
        rp->hosts[rp->nhosts++] = h;
        return 0;
}

int report_add_file(struct report *rp, const char *file, char **err)
{
        *err = NULL;
        char *buf = NULL;
        size_t len = 0;
        int rc = read_user_file(file, REPORT_FILE_MAX, &buf, &len);
        if (rc < 0)
                *err = read_user_file_error(file, rc, REPORT_FILE_MAX, "an audit file");
        else if (len > INT32_MAX)
                rc = fail(err, file, "too large");
        else
                rc = report_add_json(rp, file, buf, len, err);
        free(buf);
        return rc;
}

static int host_cmp(const void *x, const void *y)
{
        const struct report_host *a = x, *b = y;
        /* host names in the order a person expects: "node-2" before "node-10" */
        int c = natcmp(a->name, b->name);
        if (!c)
                c = strcmp(a->name, b->name);
        return c ? c : strcmp(a->file, b->file);
}

static const struct report *sort_rp; /* qsort has no context argument */

static int rule_fail_cmp(const void *x, const void *y)
{
        const struct report_rule *a = &sort_rp->rules[*(const size_t *)x], *b = &sort_rp->rules[*(const size_t *)y];
        size_t fa = a->count[CELL_FAIL] + a->count[CELL_ERROR], fb = b->count[CELL_FAIL] + b->count[CELL_ERROR];
        if (fa != fb)
                return fa > fb ? -1 : 1;
        if (a->count[CELL_FAIL] != b->count[CELL_FAIL])
                return a->count[CELL_FAIL] > b->count[CELL_FAIL] ? -1 : 1;
        return strcmp(a->id, b->id);
}

void host_groups_add(struct host_group **groups, size_t *n, char *key, size_t i)
{
        size_t g = 0;
        while (g < *n && !streq((*groups)[g].key, key))
                g++;
        if (g == *n) {
                *groups = xrealloc(*groups, (*n + 1) * sizeof(**groups));
                (*groups)[(*n)++] = (struct host_group){.key = key};
        } else
                free(key);
        struct host_group *gr = &(*groups)[g];
        gr->hosts = xrealloc(gr->hosts, (gr->n + 1) * sizeof(size_t));
        gr->hosts[gr->n++] = i;
}

static int group_cmp(const void *x, const void *y)
{
        const struct host_group *a = x, *b = y;
        if (a->n != b->n)
                return a->n > b->n ? -1 : 1;
        return a->hosts[0] < b->hosts[0] ? -1 : a->hosts[0] > b->hosts[0];
}

void host_groups_sort(struct host_group *groups, size_t n)
{
        if (n)
                qsort_safe(groups, n, sizeof(*groups), group_cmp);
}

struct host_group *host_groups_free(struct host_group *groups, size_t n)
{
        for (size_t g = 0; g < n; g++) {
                free(groups[g].hosts);
                free(groups[g].key);
        }
        free(groups);
        return NULL;
}

static int strp_cmp(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static char *findings_key(const struct report *rp, const struct report_host *h)
{
        struct strv l = {0};
        for (size_t k = 0; k < rp->nrules; k++)
                if (h->cells[k].state == CELL_FAIL || h->cells[k].state == CELL_ERROR)
                        strv_push(&l, xasprintf("%s=%s", rp->rules[k].id, cell_name(h->cells[k].state)));
        if (l.n)
                qsort_safe(l.v, l.n, sizeof(char *), strp_cmp);
        char *key = l.n ? strv_join(&l, "\n") : xstrdup("");
        strv_done(&l);
        return key;
}

/* Two hosts "on a100-8x" whose profiles resolve to different content are on different profiles:
 * such names get the start of the hash, so every view (table, CSV, JSON, HTML) tells them apart. */
static void label_profiles(struct report *rp)
{
        bool *split = xcalloc(rp->nhosts + 1, sizeof(bool));
        for (size_t i = 0; i < rp->nhosts; i++) {
                const struct report_host *h = &rp->hosts[i];
                for (size_t j = 0; j < rp->nhosts && h->profile && h->profile_hash && !split[i]; j++) {
                        const struct report_host *o = &rp->hosts[j];
                        split[i] = o->profile && o->profile_hash && streq(o->profile, h->profile) &&
                                   !streq(o->profile_hash, h->profile_hash);
                }
        }
        for (size_t i = 0; i < rp->nhosts; i++)
                if (split[i]) {
                        struct report_host *h = &rp->hosts[i];
                        char *l = xasprintf("%s (sha256:%.12s)", h->profile, h->profile_hash);
                        free(h->profile);
                        h->profile = l;
                }
        free(split);
}

int report_finish(struct report *rp, char **err)
{
        *err = NULL;
        label_profiles(rp);
        rp->groups = host_groups_free(rp->groups, rp->ngroups);
        rp->ngroups = 0;
        for (size_t i = 0; i < rp->nhosts; i++) {
                struct report_host *h = &rp->hosts[i];
                if (h->ncells < rp->nrules) {
                        h->cells = xrealloc(h->cells, rp->nrules * sizeof(*h->cells));
                        for (size_t c = h->ncells; c < rp->nrules; c++)
                                h->cells[c] = (struct report_cell){.state = CELL_MISSING};
                        h->ncells = rp->nrules;
                }
        }
        if (rp->nhosts)
                qsort_safe(rp->hosts, rp->nhosts, sizeof(*rp->hosts), host_cmp);
        for (size_t i = 1; i < rp->nhosts; i++)
                if (streq(rp->hosts[i - 1].name, rp->hosts[i].name)) {
                        *err = xasprintf("host %s is in both %s and %s (one audit per host)", rp->hosts[i].name,
                                         rp->hosts[i - 1].file, rp->hosts[i].file);
                        return -EEXIST;
                }
        for (size_t k = 0; k < rp->nrules; k++)
                memset(rp->rules[k].count, 0, sizeof(rp->rules[k].count));
        for (size_t i = 0; i < rp->nhosts; i++) {
                struct report_host *h = &rp->hosts[i];
                memset(h->count, 0, sizeof(h->count));
                for (size_t k = 0; k < rp->nrules; k++) {
                        h->count[h->cells[k].state]++;
                        rp->rules[k].count[h->cells[k].state]++;
                }
        }
        /* Groups: hosts with the same findings, in host order inside each group. */
        for (size_t i = 0; i < rp->nhosts; i++)
                host_groups_add(&rp->groups, &rp->ngroups, findings_key(rp, &rp->hosts[i]), i);
        host_groups_sort(rp->groups, rp->ngroups);
        for (size_t g = 0; g < rp->ngroups; g++)
                for (size_t j = 0; j < rp->groups[g].n; j++)
                        rp->hosts[rp->groups[g].hosts[j]].group = g;
        free(rp->by_failing);
        rp->by_failing = xcalloc(rp->nrules + 1, sizeof(size_t));
        for (size_t k = 0; k < rp->nrules; k++)
                rp->by_failing[k] = k;
        sort_rp = rp;
        if (rp->nrules)
                qsort_safe(rp->by_failing, rp->nrules, sizeof(size_t), rule_fail_cmp);
        sort_rp = NULL;
        return 0;
}

size_t report_hosts_with_findings(const struct report *rp)
{
        size_t n = 0;
        for (size_t i = 0; i < rp->nhosts; i++)
                n += rp->hosts[i].count[CELL_FAIL] + rp->hosts[i].count[CELL_ERROR] > 0;
        return n;
}

void report_done(struct report *rp)
{
        for (size_t i = 0; i < rp->nhosts; i++)
                host_done(&rp->hosts[i]);
        free(rp->hosts);
        for (size_t k = 0; k < rp->nrules; k++) {
                free(rp->rules[k].id);
                free(rp->rules[k].title);
                free(rp->rules[k].area);
                free(rp->rules[k].severity);
        }
        free(rp->rules);
        host_groups_free(rp->groups, rp->ngroups);
        free(rp->by_failing);
        *rp = (struct report){0};
}
