/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fleet report output: terminal table, CSV (RFC 4180), JSON (json-c) and self-contained HTML. */
#include "report/report-render.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <string.h>

#include "facts/json-out.h"

#define HOSTS_SHOWN 6 /* host names listed per line in the terminal table before "+N more" */
#define WRAP 100      /* terminal line width for wrapped lists */

static size_t findings_of(const struct report_rule *r) { return r->count[CELL_FAIL] + r->count[CELL_ERROR]; }

/* Words after `indent` columns, wrapped at WRAP; at most `max` words (0: all), then "+N more". */
static void print_words(FILE *out, const struct strv *w, size_t col, size_t indent, size_t max)
{
        for (size_t i = 0; i < w->n; i++) {
                if (max && i == max) {
                        fprintf(out, "%s+%zu more", col > indent ? " " : "", w->n - max);
                        break;
                }
                size_t len = strlen(w->v[i]);
                if (col > indent && col + 1 + len > WRAP) {
                        fprintf(out, "\n%*s", (int)indent, "");
                        col = indent;
                }
                if (col > indent) {
                        fputc(' ', out);
                        col++;
                }
                fputs(w->v[i], out);
                col += len;
        }
        fputc('\n', out);
}

/* Names of the hosts whose cell for rule k is `state`, in host order. */
static void hosts_in_state(const struct report *rp, size_t k, enum cell state, struct strv *out)
{
        for (size_t i = 0; i < rp->nhosts; i++)
                if (rp->hosts[i].cells[k].state == state)
                        strv_add(out, rp->hosts[i].name);
}

/* The hosts that fail rule K, then those that cannot evaluate it. */
static void hosts_failing(const struct report *rp, size_t k, struct strv *out)
{
        hosts_in_state(rp, k, CELL_FAIL, out);
        hosts_in_state(rp, k, CELL_ERROR, out);
}

/* A group's findings as words: "rule" when failing, "rule(error)" when not evaluable. */
static void group_findings(const struct report *rp, const struct host_group *g, struct strv *out)
{
        const struct report_host *h = &rp->hosts[g->hosts[0]];
        for (size_t j = 0; j < rp->nrules; j++) {
                size_t k = rp->by_failing[j];
                if (h->cells[k].state == CELL_FAIL)
                        strv_add(out, rp->rules[k].id);
                else if (h->cells[k].state == CELL_ERROR)
                        strv_push(out, xasprintf("%s(error)", rp->rules[k].id));
        }
}

/* A group's host names. */
static void group_hosts(const struct report *rp, const struct host_group *g, struct strv *out)
{
        for (size_t i = 0; i < g->n; i++)
                strv_add(out, rp->hosts[g->hosts[i]].name);
}

/* Profiles and how many hosts each: "a100-8x 100, base 12". */
static char *profiles_line(const struct report *rp)
{
        _cleanup_strv_ struct strv names = {0};
        for (size_t i = 0; i < rp->nhosts; i++) {
                const char *p = rp->hosts[i].profile ? rp->hosts[i].profile : "(unknown)";
                if (!strv_contains(&names, p))
                        strv_add(&names, p);
        }
        strv_sort(&names);
        struct sbuf b = {0};
        for (size_t k = 0; k < names.n; k++) {
                size_t n = 0;
                for (size_t i = 0; i < rp->nhosts; i++)
                        n += streq(rp->hosts[i].profile ? rp->hosts[i].profile : "(unknown)", names.v[k]);
                sbuf_addf(&b, "%s%s %zu", k ? ", " : "", names.v[k], n);
        }
        return b.s ? sbuf_steal(&b) : xstrdup("none");
}

void report_print_table(FILE *out, const struct report *rp)
{
        size_t with = report_hosts_with_findings(rp);
        _cleanup_free_ char *profiles = profiles_line(rp);
        fprintf(out, "%zu host%s, %zu rules: %zu with findings, %zu without; %zu group%s of identical findings\n",
                rp->nhosts, rp->nhosts == 1 ? "" : "s", rp->nrules, with, rp->nhosts - with, rp->ngroups,
                rp->ngroups == 1 ? "" : "s");
        fprintf(out, "Profiles: %s\n", profiles);

        size_t idw = strlen("RULE"), nfailing = 0;
        for (size_t k = 0; k < rp->nrules; k++)
                if (findings_of(&rp->rules[k])) {
                        nfailing++;
                        if (strlen(rp->rules[k].id) > idw)
                                idw = strlen(rp->rules[k].id);
                }
        fprintf(out, "\nFailing rules (%zu of %zu)\n", nfailing, rp->nrules);
        if (nfailing) {
                fprintf(out, "%-*s  %-8s  %5s  %5s  %5s  %5s  %s\n", (int)idw, "RULE", "SEVERITY", "FAIL", "ERROR", "PASS",
                        "N/A", "HOSTS");
                for (size_t j = 0; j < rp->nrules; j++) {
                        const struct report_rule *r = &rp->rules[rp->by_failing[j]];
                        if (!findings_of(r))
                                break;
                        fprintf(out, "%-*s  %-8s  %5zu  %5zu  %5zu  %5zu  ", (int)idw, r->id, r->severity ? r->severity : "?",
                                r->count[CELL_FAIL], r->count[CELL_ERROR], r->count[CELL_PASS], r->count[CELL_NA]);
                        _cleanup_strv_ struct strv hosts = {0};
                        hosts_failing(rp, rp->by_failing[j], &hosts);
                        size_t col = idw + 2 + 8 + 4 * 7 + 2;
                        print_words(out, &hosts, col, col, HOSTS_SHOWN);
                }
        } else
                fputs("  none: every rule passes or does not apply on every host\n", out);

        fprintf(out, "\nHost groups (hosts with identical findings)\n");
        for (size_t g = 0; g < rp->ngroups; g++) {
                const struct host_group *gr = &rp->groups[g];
                _cleanup_strv_ struct strv f = {0}, hosts = {0};
                group_findings(rp, gr, &f);
                group_hosts(rp, gr, &hosts);
                char head[64];
                int len = snprintf(head, sizeof(head), "#%zu  %zu host%s, %zu finding%s:", g + 1, gr->n,
                                   gr->n == 1 ? "" : "s", f.n, f.n == 1 ? "" : "s");
                fputs(head, out);
                if (f.n)
                        print_words(out, &f, (size_t)len, 6, 0);
                else
                        fputs(" none\n", out);
                fputs("      hosts:", out);
                print_words(out, &hosts, 12, 6, HOSTS_SHOWN * 2);
        }
}

/* A cell a spreadsheet would run as a formula: one that starts with =, +, - or @, or with a tab or
 * CR (OWASP, "CSV Injection"). Host names, rule titles and file names come from the audit files,
 * which anyone who can write one controls. */
static bool csv_formula_start(const char *s)
{
        return *s && strchr("=+-@\t\r", *s);
}

/* RFC 4180: quote when the field holds a comma, quote, CR or LF; double the quotes. A cell that
 * would start a formula gets a leading ' (the OWASP rule), which the spreadsheet shows as text. */
static void csv_field(FILE *out, const char *s, bool last)
{
        if (!s)
                s = "";
        const char *guard = csv_formula_start(s) ? "'" : "";
        if (strpbrk(s, ",\"\r\n")) {
                fputc('"', out);
                fputs(guard, out);
                for (const char *p = s; *p; p++) {
                        if (*p == '"')
                                fputc('"', out);
                        fputc(*p, out);
                }
                fputc('"', out);
        } else {
                fputs(guard, out);
                fputs(s, out);
        }
        fputs(last ? "\r\n" : ",", out);
}

static void csv_num(FILE *out, size_t n)
{
        fprintf(out, "%zu,", n);
}

void report_print_csv(FILE *out, const struct report *rp, bool by_host)
{
        if (!by_host) {
                /* "acked" last: the columns before it keep their places for readers that count them */
                fputs("rule,title,area,severity,fail,error,pass,na,missing,failing_hosts,error_hosts,acked\r\n", out);
                for (size_t j = 0; j < rp->nrules; j++) {
                        size_t k = rp->by_failing[j];
                        const struct report_rule *r = &rp->rules[k];
                        csv_field(out, r->id, false);
                        csv_field(out, r->title, false);
                        csv_field(out, r->area, false);
                        csv_field(out, r->severity, false);
                        static const enum cell order[] = {CELL_FAIL, CELL_ERROR, CELL_PASS, CELL_NA, CELL_MISSING};
                        for (size_t c = 0; c < ARRAY_SIZE(order); c++)
                                csv_num(out, r->count[order[c]]);
                        _cleanup_strv_ struct strv f = {0}, e = {0};
                        hosts_in_state(rp, k, CELL_FAIL, &f);
                        hosts_in_state(rp, k, CELL_ERROR, &e);
                        _cleanup_free_ char *fs = f.n ? strv_join(&f, " ") : NULL, *es = e.n ? strv_join(&e, " ") : NULL;
                        csv_field(out, fs, false);
                        csv_field(out, es, false);
                        fprintf(out, "%zu\r\n", r->count[CELL_ACKED]);
                }
                return;
        }
        fputs("host,file,profile,group,pass,fail,na,error,missing,findings,acked\r\n", out);
        for (size_t i = 0; i < rp->nhosts; i++) {
                const struct report_host *h = &rp->hosts[i];
                csv_field(out, h->name, false);
                csv_field(out, h->file, false);
                csv_field(out, h->profile, false);
                csv_num(out, h->group + 1);
                static const enum cell order[] = {CELL_PASS, CELL_FAIL, CELL_NA, CELL_ERROR, CELL_MISSING};
                for (size_t c = 0; c < ARRAY_SIZE(order); c++)
                        csv_num(out, h->count[order[c]]);
                _cleanup_strv_ struct strv f = {0};
                group_findings(rp, &rp->groups[h->group], &f);
                _cleanup_free_ char *fs = f.n ? strv_join(&f, " ") : NULL;
                csv_field(out, fs, false);
                fprintf(out, "%zu\r\n", h->count[CELL_ACKED]);
        }
}

static json_object *str_or_null(const char *s) { return s ? json_object_new_string(s) : NULL; }

static json_object *counts_json(const size_t *count)
{
        json_object *o = json_object_new_object();
        for (enum cell c = CELL_PASS; c < CELL__COUNT; c++)
                json_object_object_add(o, cell_key(c), json_object_new_int64((int64_t)count[c]));
        return o;
}

static json_object *names_json(const struct strv *l)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < l->n; i++)
                json_object_array_add(a, json_object_new_string(l->v[i]));
        return a;
}

void report_print_json(FILE *out, const struct report *rp)
{
        json_object *top = json_object_new_object();
        json_object_object_add(top, "format", json_object_new_int(1));
        json_object_object_add(top, "hosts_total", json_object_new_int64((int64_t)rp->nhosts));
        json_object_object_add(top, "hosts_with_findings", json_object_new_int64((int64_t)report_hosts_with_findings(rp)));
        json_object *rules = json_object_new_array();
        for (size_t j = 0; j < rp->nrules; j++) {
                size_t k = rp->by_failing[j];
                const struct report_rule *r = &rp->rules[k];
                json_object *o = json_object_new_object();
                json_object_object_add(o, "rule", json_object_new_string(r->id));
                json_object_object_add(o, "title", str_or_null(r->title));
                json_object_object_add(o, "area", str_or_null(r->area));
                json_object_object_add(o, "severity", str_or_null(r->severity));
                json_object_object_add(o, "hosts", counts_json(r->count));
                _cleanup_strv_ struct strv f = {0}, e = {0};
                hosts_in_state(rp, k, CELL_FAIL, &f);
                hosts_in_state(rp, k, CELL_ERROR, &e);
                json_object_object_add(o, "failing_hosts", names_json(&f));
                json_object_object_add(o, "error_hosts", names_json(&e));
                json_object_array_add(rules, o);
        }
        json_object_object_add(top, "rules", rules);
        json_object *groups = json_object_new_array();
        for (size_t g = 0; g < rp->ngroups; g++) {
                const struct host_group *gr = &rp->groups[g];
                const struct report_host *first = &rp->hosts[gr->hosts[0]];
                json_object *o = json_object_new_object(), *hosts = json_object_new_array(),
                            *findings = json_object_new_array();
                json_object_object_add(o, "group", json_object_new_int64((int64_t)g + 1));
                for (size_t i = 0; i < gr->n; i++)
                        json_object_array_add(hosts, json_object_new_string(rp->hosts[gr->hosts[i]].name));
                for (size_t j = 0; j < rp->nrules; j++) {
                        size_t k = rp->by_failing[j];
                        enum cell c = first->cells[k].state;
                        if (c != CELL_FAIL && c != CELL_ERROR)
                                continue;
                        json_object *fo = json_object_new_object();
                        json_object_object_add(fo, "rule", json_object_new_string(rp->rules[k].id));
                        json_object_object_add(fo, "status", json_object_new_string(cell_name(c)));
                        json_object_array_add(findings, fo);
                }
                json_object_object_add(o, "hosts", hosts);
                json_object_object_add(o, "findings", findings);
                json_object_array_add(groups, o);
        }
        json_object_object_add(top, "groups", groups);
        json_object *hosts = json_object_new_array();
        for (size_t i = 0; i < rp->nhosts; i++) {
                const struct report_host *h = &rp->hosts[i];
                json_object *o = json_object_new_object(), *res = json_object_new_object();
                json_object_object_add(o, "host", json_object_new_string(h->name));
                json_object_object_add(o, "file", json_object_new_string(h->file));
                json_object_object_add(o, "profile", str_or_null(h->profile));
                json_object_object_add(o, "group", json_object_new_int64((int64_t)h->group + 1));
                json_object_object_add(o, "summary", counts_json(h->count));
                for (size_t k = 0; k < rp->nrules; k++)
                        if (h->cells[k].state != CELL_MISSING)
                                json_object_object_add(res, rp->rules[k].id,
                                                       json_object_new_string(cell_name(h->cells[k].state)));
                json_object_object_add(o, "results", res);
                json_object_array_add(hosts, o);
        }
        json_object_object_add(top, "hosts", hosts);
        json_print(out, top);
        json_object_put(top);
}

/* Text and attribute values: & < > " ' escaped. */
static void html(FILE *out, const char *s)
{
        for (; s && *s; s++)
                switch (*s) {
                case '&': fputs("&amp;", out); break;
                case '<': fputs("&lt;", out); break;
                case '>': fputs("&gt;", out); break;
                case '"': fputs("&quot;", out); break;
                case '\'': fputs("&#39;", out); break;
                default: fputc(*s, out);
                }
}

/* FMT with every %s argument escaped as html() does; its conversions are %s, %zu and %% only. */
static void htmlf(FILE *out, const char *fmt, ...) _printf_(2, 3);
static void htmlf(FILE *out, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        for (const char *p = fmt; *p; p++) {
                if (*p != '%')
                        fputc(*p, out);
                else if (*++p == 's')
                        html(out, va_arg(ap, const char *));
                else if (startswith(p, "zu")) {
                        fprintf(out, "%zu", va_arg(ap, size_t));
                        p++;
                } else
                        fputc('%', out); /* %% */
        }
        va_end(ap);
}

static const char CSS[] =
        "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em;color:#222;background:#fff}\n"
        "h1{font-size:1.5em;margin:0 0 .3em}h2{font-size:1.15em;margin:1.6em 0 .5em}\n"
        "table{border-collapse:collapse}th,td{padding:2px 6px;text-align:left;vertical-align:top}\n"
        "#rules td,#rules th,#groups td,#groups th{border-bottom:1px solid #ddd}\n"
        "td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
        ".hosts{max-width:60em;font-size:.9em;color:#444}.h{white-space:nowrap}summary{cursor:pointer}\n"
        ".sev-critical{color:#b00020;font-weight:600}.sev-warning{color:#a15c00}.sev-info{color:#555}\n"
        ".gridwrap{overflow:auto;max-height:85vh;border:1px solid #ccc}\n"
        "#grid{font-size:12px}#grid th,#grid td{border:1px solid #e4e4e4;padding:1px 3px}\n"
        "#grid thead th{position:sticky;top:0;background:#f6f6f6;z-index:1}\n"
        "#grid th.rule{vertical-align:bottom;height:12em}\n"
        "#grid th.rule span{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}\n"
        "#grid tbody th{position:sticky;left:0;background:#fafafa;white-space:nowrap;font-weight:normal}\n"
        "#grid td.cell{width:1.2em;text-align:center}\n"
        ".cell.pass{background:#d9f2d9;color:#1e6b1e}.cell.fail{background:#f9d0d0;color:#9b1111}\n"
        ".cell.fail.critical{background:#e88a8a;color:#5a0000;font-weight:700}\n"
        ".cell.na{background:#f2f2f2;color:#999}.cell.error{background:#e8d4f4;color:#5b1a86;font-weight:700}\n"
        ".cell.acked{background:#fbefc4;color:#6b5200}.cell.missing{background:#fff}\n"
        "td.grp{color:#666;font-size:.9em}\n"
        ".legend span{display:inline-block;padding:0 .5em;margin-right:.5em;border:1px solid #ddd}\n";

/* A section of the page: its heading and a table of COLUMNS (NULL-terminated) whose body follows. */
static void html_table_start(FILE *out, const char *heading, const char *id, const char *const *columns)
{
        fprintf(out, "<h2>%s</h2>\n<table id=\"%s\">\n<thead><tr>", heading, id);
        for (; *columns; columns++)
                fprintf(out, "<th>%s</th>", *columns);
        fputs("</tr></thead>\n<tbody>\n", out);
}

static const char *cell_glyph(enum cell c)
{
        /* check mark, ballot x, en dash, exclamation, circled check (acknowledged); missing: empty */
        static const char *const g[] = {"&#10003;", "&#10007;", "&#8211;", "!", "&#9745;", ""};
        return c < CELL__COUNT ? g[c] : "";
}

/* Host names; a long list folds behind its count (<details>: no script needed). */
static void html_hosts_list(FILE *out, const struct strv *l)
{
        bool fold = l->n > HOSTS_SHOWN;
        if (fold)
                fprintf(out, "<details><summary>%zu hosts</summary>", l->n);
        for (size_t i = 0; i < l->n; i++)
                htmlf(out, "%s<span class=\"h\">%s</span>", i ? ", " : "", l->v[i]);
        if (fold)
                fputs("</details>", out);
}

/* The page up to its summary paragraph: head, style, title, counts and profiles. */
static void html_summary(FILE *out, const struct report *rp)
{
        size_t with = report_hosts_with_findings(rp);
        _cleanup_free_ char *profiles = profiles_line(rp);
        fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
              "<title>llmtune fleet report</title>\n<style>\n",
              out);
        fputs(CSS, out);
        fputs("</style>\n</head>\n<body>\n<h1>llmtune fleet report</h1>\n", out);
        fprintf(out,
                "<p id=\"summary\">%zu hosts, %zu rules: <b>%zu</b> hosts with findings, %zu without; %zu groups of "
                "identical findings.<br>Profiles: ",
                rp->nhosts, rp->nrules, with, rp->nhosts - with, rp->ngroups);
        html(out, profiles);
        fputs("</p>\n", out);
}

/* One row per rule with findings, most failing first, with the hosts that fail it. */
static void html_failing_rules(FILE *out, const struct report *rp)
{
        static const char *const columns[] = {"rule", "severity", "fail", "error", "pass", "n/a", "hosts", NULL};
        html_table_start(out, "Failing rules", "rules", columns);
        for (size_t j = 0; j < rp->nrules; j++) {
                size_t k = rp->by_failing[j];
                const struct report_rule *r = &rp->rules[k];
                if (!findings_of(r))
                        break;
                htmlf(out,
                      "<tr><td title=\"%s\"><code>%s</code></td><td class=\"sev-%s\">%s</td><td class=\"num\">%zu</td>"
                      "<td class=\"num\">%zu</td><td class=\"num\">%zu</td><td class=\"num\">%zu</td><td class=\"hosts\">",
                      r->title, r->id, r->severity, r->severity, r->count[CELL_FAIL], r->count[CELL_ERROR],
                      r->count[CELL_PASS], r->count[CELL_NA]);
                _cleanup_strv_ struct strv hosts = {0};
                hosts_failing(rp, k, &hosts);
                html_hosts_list(out, &hosts);
                fputs("</td></tr>\n", out);
        }
        fputs("</tbody>\n</table>\n", out);
}

/* One cell of the grid: its state as class and glyph, the values or the reason as its tooltip. */
static void html_grid_cell(FILE *out, const struct report *rp, const struct report_host *h, size_t k)
{
        const struct report_cell *c = &h->cells[k];
        fprintf(out, "<td class=\"cell %s", cell_key(c->state));
        if (c->state == CELL_FAIL &&
            (streq(c->severity, "critical") || streq(c->severity, "warning") || streq(c->severity, "info")))
                fprintf(out, " %s", c->severity);
        htmlf(out, "\" title=\"%s: %s", h->name, rp->rules[k].id);
        fprintf(out, " %s", cell_name(c->state));
        if (c->state == CELL_FAIL || c->state == CELL_PASS)
                htmlf(out, " &#8212; %s, expected %s", c->observed, c->expected);
        else if (c->reason)
                htmlf(out, " &#8212; %s", c->reason);
        fprintf(out, "\">%s</td>", cell_glyph(c->state));
}

/* The grid: columns most-failing rule first, rows by group so hosts alike sit together. */
static void html_grid(FILE *out, const struct report *rp)
{
        fputs("<h2>Hosts &times; rules</h2>\n<p class=\"legend\"><span class=\"cell pass\">&#10003; pass</span>"
              "<span class=\"cell fail\">&#10007; fail</span><span class=\"cell fail critical\">&#10007; fail "
              "(critical)</span><span class=\"cell na\">&#8211; n/a</span><span class=\"cell error\">! error</span>"
              "<span class=\"cell missing\">not audited</span></p>\n<div class=\"gridwrap\">\n<table id=\"grid\">\n"
              "<thead><tr><th class=\"corner\">host</th><th class=\"grp\">group</th>",
              out);
        for (size_t j = 0; j < rp->nrules; j++) {
                const struct report_rule *r = &rp->rules[rp->by_failing[j]];
                htmlf(out, "<th class=\"rule\" data-rule=\"%s\" title=\"%s\"><span>%s</span></th>", r->id, r->title, r->id);
        }
        fputs("</tr></thead>\n<tbody>\n", out);
        for (size_t g = 0; g < rp->ngroups; g++)
                for (size_t i = 0; i < rp->groups[g].n; i++) {
                        const struct report_host *h = &rp->hosts[rp->groups[g].hosts[i]];
                        htmlf(out, "<tr data-host=\"%s\" data-group=\"%zu\"><th class=\"host\" title=\"%s", h->name, g + 1,
                              h->file);
                        if (h->profile)
                                htmlf(out, " (profile %s)", h->profile);
                        htmlf(out, "\">%s</th><td class=\"grp\">#%zu</td>", h->name, g + 1);
                        for (size_t j = 0; j < rp->nrules; j++)
                                html_grid_cell(out, rp, h, rp->by_failing[j]);
                        fputs("</tr>\n", out);
                }
        fputs("</tbody>\n</table>\n</div>\n", out);
}

/* One row per group of hosts with identical findings. */
static void html_groups(FILE *out, const struct report *rp)
{
        static const char *const columns[] = {"group", "hosts", "findings", "members", NULL};
        html_table_start(out, "Host groups (identical findings)", "groups", columns);
        for (size_t g = 0; g < rp->ngroups; g++) {
                const struct host_group *gr = &rp->groups[g];
                _cleanup_strv_ struct strv f = {0}, hosts = {0};
                group_findings(rp, gr, &f);
                group_hosts(rp, gr, &hosts);
                fprintf(out, "<tr id=\"group-%zu\"><td>#%zu</td><td class=\"num\">%zu</td><td>", g + 1, g + 1, gr->n);
                if (!f.n)
                        fputs("none", out);
                for (size_t i = 0; i < f.n; i++)
                        htmlf(out, "%s<code>%s</code>", i ? ", " : "", f.v[i]);
                fputs("</td><td class=\"hosts\">", out);
                html_hosts_list(out, &hosts);
                fputs("</td></tr>\n", out);
        }
        fputs("</tbody>\n</table>\n", out);
}

void report_print_html(FILE *out, const struct report *rp)
{
        html_summary(out, rp);
        html_failing_rules(out, rp);
        html_grid(out, rp);
        html_groups(out, rp);
        fputs("</body>\n</html>\n", out);
}
