/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Prometheus and node-feature-discovery renderings of an audit (audit-export.h).
 *
 * Prometheus: the text exposition format as documented in prometheus/docs
 * content/docs/instrumenting/exposition_formats.md, read by node_exporter's textfile collector
 * (files *.prom in its --collector.textfile.directory). Label values escape '\', '"' and newline;
 * every series of one metric follows its # HELP and # TYPE lines; no timestamps (the collector
 * refuses them).
 *
 * NFD: the "local" feature source of nfd-worker reads files in
 * /etc/kubernetes/node-feature-discovery/features.d/, one "name=value" per line, '#' comments; a
 * name without a namespace becomes a label under feature.node.kubernetes.io/. Values must be valid
 * Kubernetes label values (63 characters of [A-Za-z0-9._-], alphanumeric at both ends).
 */
#include "report/audit-export.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

/* Length of the well-formed UTF-8 sequence at s (1..4), or 0 when it is not one (overlong
 * forms, surrogates and code points above U+10FFFF included). */
static size_t utf8_len(const unsigned char *s)
{
        unsigned char c = s[0];
        if (c < 0x80)
                return 1;
        size_t n;
        unsigned min;
        unsigned cp;
        if ((c & 0xe0) == 0xc0)
                n = 2, cp = c & 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0)
                n = 3, cp = c & 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0)
                n = 4, cp = c & 0x07, min = 0x10000;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

char *prom_label_escape(const char *s)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        const unsigned char *p = (const unsigned char *)(s ? s : "");
        while (*p) {
                if (*p == '\\')
                        sbuf_add(&b, "\\\\");
                else if (*p == '"')
                        sbuf_add(&b, "\\\"");
                else if (*p == '\n')
                        sbuf_add(&b, "\\n");
                else if (*p < 0x20 || *p == 0x7f)
                        sbuf_add(&b, "?");
                else {
                        size_t n = utf8_len(p);
                        if (n == 0) {
                                sbuf_add(&b, "?");
                                p++;
                                continue;
                        }
                        sbuf_addn(&b, (const char *)p, n);
                        p += n;
                        continue;
                }
                p++;
        }
        return sbuf_steal(&b);
}

static void help_type(FILE *out, const char *name, const char *help)
{
        fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static const char *const statuses[] = {"pass", "fail", "n/a", "error", "acked"};

/* A rule's series keep their identity whatever its status: the status is a value (a stateset, one
 * series per status, 1 for the current one, as node_exporter's systemd unit states), and the title,
 * which an upgrade may reword, is in the _info series alone (join on rule for it). */
static void print_rules(FILE *out, const struct audit *a, const char *prof)
{
        help_type(out, "llmtune_rule_result",
                  "One series per rule of the last llmtune audit: 1 when it is a finding (status fail or error), "
                  "0 when it passed, is not applicable or was acknowledged (status acked, llmtune ack).");
        for (size_t i = 0; i < a->n; i++) {
                const struct result *r = &a->v[i];
                _cleanup_free_ char *id = prom_label_escape(r->rule->id), *area = prom_label_escape(r->rule->area);
                fprintf(out, "llmtune_rule_result{rule=\"%s\",area=\"%s\",severity=\"%s\",profile=\"%s\"} %d\n", id, area,
                        severity_name(r->severity), prof, r->status == RES_FAIL || r->status == RES_ERROR);
        }
        help_type(out, "llmtune_rule_status",
                  "The status of each rule in the last llmtune audit: 1 for the current one (pass, fail, n/a, "
                  "error, acked), 0 for the others.");
        for (size_t i = 0; i < a->n; i++) {
                _cleanup_free_ char *id = prom_label_escape(a->v[i].rule->id);
                for (size_t s = 0; s < RES_STATUS_MAX; s++)
                        fprintf(out, "llmtune_rule_status{rule=\"%s\",status=\"%s\"} %d\n", id, statuses[s],
                                a->v[i].status == (enum result_status)s);
        }
        help_type(out, "llmtune_rule_info", "Each rule of the last llmtune audit: its title and area; always 1.");
        for (size_t i = 0; i < a->n; i++) {
                const struct rule *r = a->v[i].rule;
                _cleanup_free_ char *id = prom_label_escape(r->id), *title = prom_label_escape(r->title),
                                    *area = prom_label_escape(r->area);
                fprintf(out, "llmtune_rule_info{rule=\"%s\",title=\"%s\",area=\"%s\"} 1\n", id, title, area);
        }
}

void audit_print_prometheus(FILE *out, const struct audit_export *x)
{
        const struct audit *a = x->audit;
        _cleanup_free_ char *prof = prom_label_escape(x->profile);

        print_rules(out, a, prof);

        help_type(out, "llmtune_audit_rules", "Rules evaluated by the last llmtune audit, by status.");
        for (size_t s = 0; s < RES_STATUS_MAX; s++)
                fprintf(out, "llmtune_audit_rules{status=\"%s\",profile=\"%s\"} %zu\n", statuses[s], prof, a->count[s]);

        /* Every severity x {fail, error} series is written, zeros included, so an alert on
         * `> 0` has a series to watch before the first finding. */
        help_type(out, "llmtune_audit_findings",
                  "Rules of the last llmtune audit that failed or could not be evaluated, by severity.");
        for (enum severity sev = SEV_INFO; sev <= SEV_CRITICAL; sev++)
                for (size_t s = RES_FAIL; s <= RES_ERROR; s += RES_ERROR - RES_FAIL) {
                        size_t n = 0;
                        for (size_t i = 0; i < a->n; i++)
                                n += a->v[i].severity == sev && a->v[i].status == (enum result_status)s;
                        fprintf(out, "llmtune_audit_findings{severity=\"%s\",status=\"%s\",profile=\"%s\"} %zu\n",
                                severity_name(sev), statuses[s], prof, n);
                }

        help_type(out, "llmtune_audit_info", "The last llmtune audit: profile, how it was chosen, llmtune version.");
        fprintf(out, "llmtune_audit_info{profile=\"%s\",selected=\"%s\",version=\"%s\"} 1\n", prof, x->selected,
                LLMTUNE_VERSION);
        help_type(out, "llmtune_audit_timestamp_seconds", "When the last llmtune audit began (Unix time).");
        fprintf(out, "llmtune_audit_timestamp_seconds %lld.%03ld\n", (long long)x->started.tv_sec,
                x->started.tv_nsec / 1000000);
        help_type(out, "llmtune_audit_duration_seconds",
                  "How long the last llmtune audit took: reading the facts and evaluating the rules.");
        fprintf(out, "llmtune_audit_duration_seconds %.6f\n", x->duration);

        /* The change log: a stateset (one series per state, 1 for the current one) so that
         * alerts need no string matching on values; "unreadable" when the log could not be read. */
        help_type(out, "llmtune_changelog_verify_status",
                  "State of the llmtune change log as llmtune verify judges it: 1 for the current state.");
        const char *cur = x->log ? x->log->status : "unreadable";
        for (size_t i = 0; verify_state_names[i]; i++)
                fprintf(out, "llmtune_changelog_verify_status{status=\"%s\"} %d\n", verify_state_names[i],
                        streq(verify_state_names[i], cur));
        fprintf(out, "llmtune_changelog_verify_status{status=\"unreadable\"} %d\n", x->log == NULL);
        if (!x->log)
                return;
        help_type(out, "llmtune_changelog_records", "Records in the llmtune change log (0: nothing ever applied).");
        fprintf(out, "llmtune_changelog_records %zu\n", x->log->records);
        help_type(out, "llmtune_changelog_changes_in_force", "Changes llmtune applied and did not roll back.");
        fprintf(out, "llmtune_changelog_changes_in_force %zu\n", x->log->in_force);
        help_type(out, "llmtune_changelog_drifted_changes", "Changes in force whose target no longer holds the applied value.");
        fprintf(out, "llmtune_changelog_drifted_changes %zu\n", x->log->drifted);
        help_type(out, "llmtune_changelog_unfinished_steps", "Apply or rollback steps that started and have no outcome.");
        fprintf(out, "llmtune_changelog_unfinished_steps %zu\n", x->log->unfinished);
        help_type(out, "llmtune_changelog_chain_problems", "Breaks in the change log's hash chain (edited, removed, reordered records).");
        fprintf(out, "llmtune_changelog_chain_problems %zu\n", x->log->chain_problems);
        /* No series at all when nothing was ever applied: 0 would read as 1970. */
        if (x->log->last_apply) {
                help_type(out, "llmtune_changelog_last_apply_timestamp_seconds",
                          "Time of the newest change llmtune applied (Unix time).");
                fprintf(out, "llmtune_changelog_last_apply_timestamp_seconds %lld\n", (long long)x->log->last_apply);
        }
}

char *nfd_label_value(const char *s)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        size_t n = 0;
        bool dash = false;
        for (const char *p = s ? s : ""; *p && n < 63; p++) {
                char c = *p;
                bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
                if (alnum || c == '.' || c == '_' || c == '-') {
                        if (!alnum && n == 0)
                                continue; /* must start alphanumeric */
                        sbuf_addn(&b, &c, 1);
                        n++;
                        dash = c == '-';
                } else if (n && !dash) {
                        sbuf_add(&b, "-");
                        n++;
                        dash = true;
                }
        }
        char *v = sbuf_steal(&b);
        size_t len = strlen(v);
        while (len && !((v[len - 1] >= 'a' && v[len - 1] <= 'z') || (v[len - 1] >= 'A' && v[len - 1] <= 'Z') ||
                        (v[len - 1] >= '0' && v[len - 1] <= '9')))
                v[--len] = '\0';
        return v;
}

/* "GA100 [A100 SXM4 40GB]" (pci.ids: chip [marketing name]) -> "A100 SXM4 40GB". */
static char *gpu_model(const char *name)
{
        const char *o = strrchr(name, '['), *c = o ? strchr(o, ']') : NULL;
        if (o && c && c > o + 1)
                return xstrndup(o + 1, (size_t)(c - o - 1));
        return xstrdup(name);
}

static void nfd_comment_unknown(FILE *out, const char *label, const struct fact *fc, const char *name)
{
        fprintf(out, "# %s: not labelled: %s %s\n", label, name,
                !fc ? "is not a known fact" : fc->status == FACT_ABSENT ? "is absent" : "could not be read");
}

/* llmtune-gpu-count and llmtune-gpu-model: one model when every GPU has the same, "mixed" when
 * they differ. */
static void nfd_gpu_labels(FILE *out, struct facts *f)
{
        bool neg;
        const struct fact *cnt = facts_get(f, "gpu.count");
        uint64_t ngpu = 0;
        if (!cnt || cnt->status != FACT_OK || !fact_number(cnt, &neg, &ngpu) || neg) {
                nfd_comment_unknown(out, "llmtune-gpu-count", cnt, "gpu.count");
                return;
        }
        fprintf(out, "llmtune-gpu-count=%llu\n", (unsigned long long)ngpu);
        _cleanup_free_ char *model = NULL;
        bool mixed = false, unknown = false;
        for (uint64_t i = 0; i < ngpu; i++) {
                _cleanup_free_ char *fname = xasprintf("gpu.%llu.name", (unsigned long long)i);
                const struct fact *nm = facts_get(f, fname);
                if (!nm || nm->status != FACT_OK) {
                        unknown = true;
                        continue;
                }
                _cleanup_free_ char *m = gpu_model(nm->str);
                if (!model)
                        model = xstrdup(m);
                else if (!streq(model, m))
                        mixed = true;
        }
        _cleanup_free_ char *v = nfd_label_value(mixed ? "mixed" : model);
        if (ngpu && *v && !unknown)
                fprintf(out, "llmtune-gpu-model=%s\n", v);
        else if (ngpu)
                fputs("# llmtune-gpu-model: not labelled: a GPU's name could not be read\n", out);
}

/* IB: the lowest rate of the active InfiniBand/RoCE ports, the rate a job can count on across all
 * of them, and how many are active. */
static void nfd_ib_labels(FILE *out, struct facts *f)
{
        const struct fact **rates;
        size_t nr = facts_match(f, "ib.*.port.*.rate_gbps", &rates);
        double low = 0;
        size_t active = 0;
        bool unreadable = false;
        for (size_t i = 0; i < nr; i++) {
                if (rates[i]->status == FACT_UNREADABLE)
                        unreadable = true;
                if (rates[i]->status != FACT_OK)
                        continue;
                /* An integer, or "2.5" (SDR 1X: the kernel prints halves). */
                char *end;
                double v = strtod(rates[i]->str, &end);
                if (*end || v <= 0) {
                        unreadable = true;
                        continue;
                }
                _cleanup_free_ char *sname = xstrndup(rates[i]->name, strlen(rates[i]->name) - strlen("rate_gbps"));
                _cleanup_free_ char *state_name = xasprintf("%sstate", sname);
                const struct fact *st = facts_get(f, state_name);
                if (st && st->status == FACT_UNREADABLE)
                        unreadable = true;
                if (!st || st->status != FACT_OK || !streq(st->str, "ACTIVE"))
                        continue;
                if (!active || v < low)
                        low = v;
                active++;
        }
        free(rates);
        const struct fact *ibc = facts_get(f, "ib.count");
        if (unreadable || !ibc || ibc->status == FACT_UNREADABLE)
                fputs("# llmtune-ib-rate: not labelled: an InfiniBand port's rate could not be read\n", out);
        else {
                fprintf(out, "llmtune-ib-active-ports=%zu\n", active);
                if (active)
                        fprintf(out, "llmtune-ib-rate=%g\n", low);
        }
}

void audit_print_nfd(FILE *out, const struct audit_export *x, struct facts *f)
{
        const struct audit *a = x->audit;
        fputs("# node-feature-discovery local features, written by `llmtune audit --format nfd`\n", out);
        fprintf(out, "# %zu rules: %zu passed, %zu failed, %zu not applicable, %zu errors, %zu acknowledged\n", a->n,
                a->count[RES_PASS], a->count[RES_FAIL], a->count[RES_NA], a->count[RES_ERROR], a->count[RES_ACKED]);
        _cleanup_free_ char *prof = nfd_label_value(x->profile);
        if (*prof)
                fprintf(out, "llmtune-profile=%s\n", prof);
        /* fail outranks error: a rule that failed is known to be wrong; error means unknown. */
        fprintf(out, "llmtune-audit=%s\n", a->count[RES_FAIL] ? "fail" : a->count[RES_ERROR] ? "error" : "pass");
        size_t crit = 0;
        for (size_t i = 0; i < a->n; i++)
                crit += a->v[i].status == RES_FAIL && a->v[i].severity == SEV_CRITICAL;
        fprintf(out, "llmtune-audit-failed=%zu\n", a->count[RES_FAIL]);
        fprintf(out, "llmtune-audit-critical=%zu\n", crit);
        nfd_gpu_labels(out, f);
        nfd_ib_labels(out, f);
}

int write_file_atomic(const char *path, void (*render)(FILE *out, void *ud), void *ud)
{
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *dir = slash ? xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : xstrdup(".");
        const char *base = slash ? slash + 1 : path;
        if (!*base)
                return -EISDIR;
        /* A dot name: node_exporter reads only *.prom, so the temporary file is never collected. */
        _cleanup_free_ char *tmp = xasprintf("%s/.%s.XXXXXX", dir, base);
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        FILE *out = fdopen(fd, "w");
        if (!out) {
                int e = errno;
                unlink(tmp);
                return -e;
        }
        int sfd = TAKE_FD(fd); /* the stream owns it now */
        render(out, ud);
        int rc = 0;
        if (fflush(out) != 0 || ferror(out))
                rc = -EIO;
        else if (fchmod(sfd, 0644) < 0 || fsync(sfd) < 0)
                rc = -errno;
        if (fclose(out) != 0 && rc == 0)
                rc = -EIO;
        if (rc == 0 && rename(tmp, path) < 0)
                rc = -errno;
        if (rc < 0)
                unlink(tmp);
        return rc;
}
