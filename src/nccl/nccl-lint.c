/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "nccl/nccl-lint.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>

void nccl_catalog_done(struct nccl_catalog *c)
{
        for (size_t i = 0; i < c->n; i++) {
                free(c->v[i].name);
                free(c->v[i].type);
                free(c->v[i].replacement);
                free(c->v[i].allowed);
        }
        free(c->v);
        *c = (struct nccl_catalog){0};
}

static enum nccl_status status_parse(const char *s)
{
        if (streq(s, "deprecated"))
                return NCCL_DEPRECATED;
        if (streq(s, "removed"))
                return NCCL_REMOVED;
        if (streq(s, "not-nccl"))
                return NCCL_NOT_NCCL;
        if (streq(s, "undocumented"))
                return NCCL_UNDOCUMENTED;
        return NCCL_DOCUMENTED;
}

int nccl_catalog_load(const char *path, struct nccl_catalog *ret)
{
        _cleanup_fclose_ FILE *fp = fopen(path, "re");
        if (!fp)
                return -errno;
        struct nccl_catalog c = {0};
        char line[1024];
        while (fgets(line, sizeof(line), fp)) {
                if (line[0] == '#' || line[0] == '\n')
                        continue;
                strip_trailing(line);
                char *f[5] = {0};
                size_t k = 0;
                for (char *p = line, *tab; k < 5; p = tab + 1) {
                        f[k++] = p;
                        tab = strchr(p, '\t');
                        if (!tab)
                                break;
                        *tab = '\0';
                }
                if (k < 4)
                        continue;
                c.v = xrealloc(c.v, (c.n + 1) * sizeof(*c.v));
                c.v[c.n++] = (struct nccl_var){
                        .name = xstrdup(f[0]),
                        .type = xstrdup(f[1]),
                        .status = status_parse(f[2]),
                        .replacement = streq(f[3], "-") ? NULL : xstrdup(f[3]),
                        .allowed = k < 5 || streq(f[4], "-") ? NULL : xstrdup(f[4]),
                };
        }
        *ret = c;
        return 0;
}

const struct nccl_var *nccl_catalog_find(const struct nccl_catalog *c, const char *name)
{
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->v[i].name, name))
                        return &c->v[i];
        return NULL;
}

/* The Levenshtein distance of a (la bytes) and b (lb bytes) if it is below k, else k: only the
 * diagonal band |i - j| < k of the table can hold a value below k (a cell outside it is at least
 * |i - j| edits), and once a whole row is k or more the rest cannot come back below it. So a
 * comparison costs about la * 2k steps instead of la * lb, and most end after a few rows: this runs
 * for every unknown key of a file against the catalog. Names over 64 bytes are never typos of a
 * catalog name (the longest is under 40). Not coverage-instrumented (util.h): the fuzz-nccl-conf
 * harness spent 60% of its time in the trace callbacks of this loop; the unit test
 * nccl_suggest_matches_full_table checks it against the full table instead. */
_no_coverage_ static size_t edit_distance_below(const char *a, size_t la, const char *b, size_t lb, size_t k)
{
        if (la > 64 || lb > 64 || (la > lb ? la - lb : lb - la) >= k)
                return k; /* too long for a name, or k or more insertions or deletions apart */
        size_t row[2][65];
        size_t *prev = row[0], *cur = row[1];
        for (size_t j = 0; j <= lb; j++)
                prev[j] = j < k ? j : k;
        for (size_t i = 1; i <= la; i++) {
                size_t lo = i >= k ? i - k + 1 : 1, hi = i + k - 1 < lb ? i + k - 1 : lb;
                cur[0] = i < k ? i : k;
                if (lo > 1)
                        cur[lo - 1] = k; /* left of the band: read by the next row */
                size_t least = lo > 1 ? k : cur[0];
                for (size_t j = lo; j <= hi; j++) {
                        size_t v = prev[j - 1] + (a[i - 1] != b[j - 1]);
                        if (prev[j] + 1 < v)
                                v = prev[j] + 1;
                        if (cur[j - 1] + 1 < v)
                                v = cur[j - 1] + 1;
                        cur[j] = v < k ? v : k;
                        if (cur[j] < least)
                                least = cur[j];
                }
                if (hi < lb)
                        cur[hi + 1] = k; /* right of the band */
                if (least >= k)
                        return k;
                size_t *t = prev;
                prev = cur;
                cur = t;
        }
        return prev[lb];
}

_no_coverage_ const char *nccl_catalog_suggest(const struct nccl_catalog *c, const char *name)
{
        const char *best = NULL;
        size_t bd = 4; /* more than 3 edits away is not a typo */
        size_t ln = strlen(name);
        for (size_t i = 0; i < c->n; i++) {
                if (c->v[i].status == NCCL_REMOVED || c->v[i].status == NCCL_NOT_NCCL)
                        continue;
                /* Most of the catalog differs in length by BD or more: answered without a table. */
                size_t dd = edit_distance_below(name, ln, c->v[i].name, strlen(c->v[i].name), bd);
                if (dd < bd) {
                        bd = dd;
                        best = c->v[i].name;
                }
        }
        return best;
}

const char *nccl_problem_name(enum nccl_problem p)
{
        static const char *const n[] = {"syntax",  "duplicate", "unknown",      "removed",    "deprecated", "foreign",
                                        "bad-value", "debug",   "init-failure", "debug-only", "advice"};
        return n[p];
}

bool nccl_problem_is_error(enum nccl_problem p)
{
        return p != NP_DEPRECATED && p != NP_DEBUG && p != NP_DEBUG_KEY && p != NP_ADVICE;
}

bool nccl_problem_is_advisory(enum nccl_problem p) { return p == NP_DEBUG_KEY || p == NP_ADVICE; }

bool nccl_is_transport_switch(const char *key)
{
        return streq(key, "NCCL_P2P_DISABLE") || streq(key, "NCCL_IB_DISABLE") || streq(key, "NCCL_SHM_DISABLE");
}

bool nccl_switch_acts(const char *key, const char *value)
{
        /* NCCL ignores trailing text after the number, as strtol does. */
        long long v = strtoll(value, NULL, 0);
        return streq(key, "NCCL_IB_DISABLE") ? v != 0 : v == 1;
}

static void add(struct nccl_lint *l, unsigned line, enum nccl_problem p, const char *key, const char *fmt, ...)
        _printf_(5, 6);
static void add(struct nccl_lint *l, unsigned line, enum nccl_problem p, const char *key, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *msg = xvasprintf(fmt, ap);
        va_end(ap);
        l->findings = xrealloc(l->findings, (l->n_findings + 1) * sizeof(*l->findings));
        l->findings[l->n_findings++] = (struct nccl_finding){line, p, xstrdup(key), msg};
}

static bool valid_key(const char *k)
{
        if (!*k || isdigit((unsigned char)*k))
                return false;
        for (; *k; k++)
                if (!isalnum((unsigned char)*k) && *k != '_')
                        return false;
        return true;
}

/* NCCL's legacy integers: strtoll base 0; trailing garbage is ignored by NCCL, which is exactly why
 * it is worth flagging here. */
static bool is_int(const char *v)
{
        const char *p = v;
        if (*p == '-' || *p == '+')
                p++;
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
                p += 2;
                if (!isxdigit((unsigned char)*p))
                        return false;
                while (isxdigit((unsigned char)*p))
                        p++;
        } else {
                if (!isdigit((unsigned char)*p))
                        return false;
                while (isdigit((unsigned char)*p))
                        p++;
        }
        return *p == '\0';
}

static bool in_list(const char *list, const char *v)
{
        size_t vl = strlen(v);
        for (const char *p = list; *p;) {
                size_t l = strcspn(p, ",");
                if (l == vl && strncasecmp(p, v, l) == 0)
                        return true;
                p += l + (p[l] == ',');
        }
        return false;
}

static bool in_words(const char *const *w, size_t n, const char *s)
{
        for (size_t i = 0; i < n; i++)
                if (strcasecmp(w[i], s) == 0)
                        return true;
        return false;
}

/* NCCL_ALGO and NCCL_PROTO as parseList() in NCCL's src/graph/tuning.cc reads them:
 * "[func:]item[,item...][;func:item,...]", ';' then ':' then ',' split with strtok (empty fields
 * vanish), names compared case-insensitively, a '^' before an item list inverts it, only the first
 * entry may omit "func:". Anything else is ncclInvalidUsage, and the communicator init fails (NCCL
 * 2.24 and later). Returns what is wrong, or NULL; *crashes is set when NCCL does not even get to
 * return an error. */
static char *tuning_list_error(const char *v, const char *kind, const char *const *elems, size_t nelems,
                               bool *crashes)
{
        static const char *const funcs[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
        _cleanup_free_ char *copy = xstrdup(v);
        char *err = NULL, *save = NULL;
        for (char *entry = strtok_r(copy, ";", &save); entry && !err; entry = strtok_r(NULL, ";", &save)) {
                _cleanup_free_ char *sub = xstrdup(entry);
                char *save2 = NULL;
                char *prefix = strtok_r(sub, ":", &save2);
                char *list = strtok_r(NULL, ":", &save2);
                if (!list) {
                        if (entry != copy) {
                                err = xasprintf("the entry \"%s\" has no \"function:\" (only the first entry may omit it)",
                                                entry);
                                break;
                        }
                        if (!prefix) {
                                /* Only ':' in the first entry: both strtok_r calls give NULL and
                                 * parseList reads the first byte of a NULL list (found by
                                 * fuzz-nccl-conf: "NCCL_ALGO=:;"). */
                                err = xasprintf("the entry \"%s\" holds neither a function nor an item", entry);
                                *crashes = true;
                                break;
                        }
                        list = prefix;
                        prefix = NULL;
                }
                if (prefix && !in_words(funcs, ARRAY_SIZE(funcs), prefix)) {
                        err = xasprintf("unknown function \"%s\" (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)",
                                        prefix);
                        break;
                }
                if (*list == '^')
                        list++;
                char *save3 = NULL;
                for (char *e = strtok_r(list, ",", &save3); e; e = strtok_r(NULL, ",", &save3))
                        if (!in_words(elems, nelems, e)) {
                                struct sbuf names = {0};
                                for (size_t i = 0; i < nelems; i++)
                                        sbuf_addf(&names, "%s%s", i ? ", " : "", elems[i]);
                                err = xasprintf("unknown %s \"%s\" (%s)", kind, e, names.s);
                                free(sbuf_steal(&names));
                                break;
                        }
        }
        return err;
}

/* NCCL_P2P_LEVEL and NCCL_NET_GDR_LEVEL go through ncclGetLevel() (NCCL src/graph/paths.cc): the
 * value is compared with strcmp against the path types of src/graph/topo.cc, so "pxb" matches
 * nothing; a value starting with a digit is a legacy number (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4+ SYS).
 * Whatever else is written is ignored without a word and NCCL keeps its default. */
static void check_level(struct nccl_lint *l, unsigned line, const char *key, const char *v)
{
        static const char *const levels[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"};
        for (size_t i = 0; i < ARRAY_SIZE(levels); i++) {
                if (streq(v, levels[i]))
                        return;
                if (strcasecmp(v, levels[i]) == 0) {
                        add(l, line, NP_BAD_VALUE, key,
                            "%s=%s is ignored: NCCL compares level names case-sensitively and keeps its default "
                            "(write %s)",
                            key, v, levels[i]);
                        return;
                }
        }
        if (isdigit((unsigned char)*v) && is_int(v))
                return;
        add(l, line, NP_BAD_VALUE, key,
            "%s=%s is ignored: not a level (LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS, or a legacy number 0-4), so "
            "NCCL keeps its default",
            key, v);
}

static void check_value(struct nccl_lint *l, unsigned line, const struct nccl_var *var, const char *v)
{
        if (!*v) {
                add(l, line, NP_BAD_VALUE, var->name, "%s is empty: integer keys treat it as unset, others as \"\"",
                    var->name);
                return;
        }
        if (streq(var->name, "NCCL_P2P_LEVEL") || streq(var->name, "NCCL_NET_GDR_LEVEL")) {
                check_level(l, line, var->name, v);
                return;
        }
        if (streq(var->name, "NCCL_ALGO") || streq(var->name, "NCCL_PROTO")) {
                static const char *const algos[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
                static const char *const protos[] = {"LL", "LL128", "Simple"};
                bool algo = streq(var->name, "NCCL_ALGO"), crashes = false;
                _cleanup_free_ char *err = algo ? tuning_list_error(v, "algorithm", algos, ARRAY_SIZE(algos), &crashes)
                                                : tuning_list_error(v, "protocol", protos, ARRAY_SIZE(protos), &crashes);
                if (err)
                        add(l, line, NP_INIT_FAIL, var->name, "%s=%s: %s: %s", var->name, v, err,
                            crashes ? "parseList reads a null item list there, and the process crashes at communicator init"
                                    : "every communicator init fails (ncclInvalidUsage, NCCL 2.24 and later)");
                return;
        }
        if (streq(var->type, "int64") && !is_int(v))
                add(l, line, NP_BAD_VALUE, var->name,
                    "%s=%s is not an integer (NCCL reads it with strtoll: non-numeric text becomes 0 silently)", var->name, v);
        else if (streq(var->type, "bool") && !in_list("0,1,T,F,TRUE,FALSE", v))
                add(l, line, NP_BAD_VALUE, var->name, "%s=%s is not a boolean (1/T/TRUE/0/F/FALSE)", var->name, v);
        else if (streq(var->type, "enum") && var->allowed && !in_list(var->allowed, v) &&
                 !(endswith(var->name, "_LEVEL") && is_int(v)))
                add(l, line, NP_BAD_VALUE, var->name, "%s=%s is not one of %s", var->name, v, var->allowed);
}

/* Keys that act as written but do not belong in a file every job on the machine reads. */
static void check_persistent(struct nccl_lint *l, unsigned line, const char *key, const char *value)
{
        /* The Debugging section of NCCL's environment variables documentation: "should not be used in
         * production nor retained in scripts". A file read by every job is such a script. */
        static const char *const debug_keys[] = {"NCCL_DEBUG_SUBSYS", "NCCL_BUFFSIZE", "NCCL_MAX_NCHANNELS",
                                                 "NCCL_MAX_CTAS", "NCCL_ALGO", "NCCL_PROTO"};
        if (streq(key, "NCCL_DEBUG")) {
                /* trimmed and case-insensitive (NCCL 2.30 src/param) */
                _cleanup_free_ char *v = xstrdup(value + strspn(value, " \t"));
                strip_trailing(v);
                if (strcasecmp(v, "INFO") == 0 || strcasecmp(v, "TRACE") == 0)
                        add(l, line, NP_DEBUG_KEY, key,
                            "NCCL_DEBUG=%s is a debugging level: every job of the machine logs every init and "
                            "connection (and slows its init); WARN is the level to keep",
                            value);
        } else if (streq(key, "NCCL_GRAPH_FILE"))
                add(l, line, NP_DEBUG_KEY, key,
                    "NCCL_GRAPH_FILE forces the rings and trees of a saved topology on every job: it goes stale and "
                    "breaks jobs when the hardware changes; keep it in the environment of the jobs being studied");
        else
                for (size_t i = 0; i < ARRAY_SIZE(debug_keys); i++)
                        if (streq(key, debug_keys[i]))
                                add(l, line, NP_DEBUG_KEY, key,
                                    "%s is a debugging setting (the Debugging section of NCCL's environment "
                                    "variables): in this file it binds every job of the machine; remove it once the "
                                    "debugging is done, or set it in the jobs that need it",
                                    key);
        /* NCCL 2.21 and later select the RoCE GID themselves (NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE,
         * NCCL_IB_ROCE_VERSION_NUM); the troubleshooting guide says the index should not be set. */
        if (streq(key, "NCCL_IB_GID_INDEX") && !streq(value, "-1"))
                add(l, line, NP_ADVICE, key,
                    "NCCL_IB_GID_INDEX=%s: NCCL 2.21 and later choose the RoCE GID themselves and NCCL's troubleshooting "
                    "guide says not to set it (a fixed index breaks when the GID table changes); a site that needs it "
                    "(NCCL older than 2.21) sets it through the profile's nccl_ib_gid_index, which llmtune writes and "
                    "the audit then expects",
                    value);
        /* [^][=]hca[:port],...: without '=' every name is a prefix (NCCL src/transport/net_ib). */
        if (streq(key, "NCCL_IB_HCA") && *value) {
                bool neg = value[0] == '^';
                const char *rest = value + neg;
                if (*rest != '=') {
                        _cleanup_free_ char *first = xstrndup(rest, strcspn(rest, ",:"));
                        add(l, line, NP_ADVICE, key,
                            "NCCL_IB_HCA=%s matches names by prefix (%s also selects %s0, %s1 and every name that "
                            "starts with %s): NCCL_IB_HCA=%s%s names exactly these HCAs",
                            value, first, first, first, first, neg ? "^=" : "=", rest);
                }
        }
}

static void check_key(struct nccl_lint *l, const struct nccl_catalog *c, unsigned line, const char *key, const char *value)
{
        const struct nccl_var *var = nccl_catalog_find(c, key);
        if (!var) {
                if (startswith(key, "TORCH_NCCL_")) {
                        add(l, line, NP_FOREIGN, key,
                            "%s is PyTorch's, read when the process group is built (before NCCL loads this file): "
                            "set it in the job's environment", key);
                        return;
                }
                if (!startswith(key, "NCCL_")) {
                        add(l, line, NP_FOREIGN, key, "%s is not an NCCL variable: set it in the job's environment", key);
                        return;
                }
                const char *s = nccl_catalog_suggest(c, key);
                if (s)
                        add(l, line, NP_UNKNOWN, key, "unknown key %s (did you mean %s?)", key, s);
                else
                        add(l, line, NP_UNKNOWN, key, "unknown key %s: NCCL 2.30 reads no such variable", key);
                return;
        }
        /* initEnvFunc() reads NCCL_CONF_FILE with getenv() before any file (NCCL src/misc/param.cc). */
        if (streq(key, "NCCL_CONF_FILE")) {
                add(l, line, NP_FOREIGN, key, "NCCL_CONF_FILE is read from the environment only: in a file it does nothing");
                return;
        }
        switch (var->status) {
        case NCCL_REMOVED:
                if (var->replacement)
                        add(l, line, NP_REMOVED, key, "%s was removed from NCCL (use %s)", key, var->replacement);
                else
                        add(l, line, NP_REMOVED, key, "%s was removed from NCCL and does nothing", key);
                return;
        case NCCL_NOT_NCCL:
                if (var->replacement)
                        add(l, line, NP_FOREIGN, key,
                            "%s is not read by NCCL (PyTorch reads %s, from the job's environment, before NCCL loads this file)",
                            key, var->replacement);
                else
                        add(l, line, NP_FOREIGN, key, "%s is read by nothing in NCCL", key);
                return;
        case NCCL_DEPRECATED:
                if (var->replacement)
                        add(l, line, NP_DEPRECATED, key, "%s is deprecated (use %s)", key, var->replacement);
                else
                        add(l, line, NP_DEPRECATED, key, "%s is deprecated", key);
                break;
        default: break;
        }
        if (nccl_is_transport_switch(key) && !nccl_switch_acts(key, value))
                add(l, line, NP_DEBUG, key, "%s=%s is a debugging switch and =%s does nothing (%s)", key, value, value,
                    streq(key, "NCCL_IB_DISABLE") ? "only a non-zero integer acts" : "only 1 acts");
        else if (nccl_is_transport_switch(key))
                add(l, line, NP_DEBUG, key,
                    "%s=%s is a debugging switch that costs bandwidth unless it works around a known problem", key,
                    value);
        check_value(l, line, var, value);
        check_persistent(l, line, key, value);
}

/* The key as a human meant it, cut in place out of KEY (a copy of RAWKEY, the text before '='):
 * blanks and "export" dropped, each liberty reported. Returns where it starts in KEY. */
static char *clean_key(struct nccl_lint *l, unsigned lineno, const char *rawkey, char *key)
{
        char *k = key;
        bool spaced = *k == ' ' || *k == '\t';
        while (*k == ' ' || *k == '\t')
                k++;
        if (startswith(k, "export ") || startswith(k, "export\t")) {
                add(l, lineno, NP_SYNTAX, k, "'export' is not understood: the key becomes \"%s\"", rawkey);
                k += 7;
                while (*k == ' ' || *k == '\t')
                        k++;
                spaced = false; /* already reported */
        } else {
                size_t kl = strlen(k);
                spaced |= kl && (k[kl - 1] == ' ' || k[kl - 1] == '\t');
        }
        strip_trailing(k);
        if (spaced)
                add(l, lineno, NP_SYNTAX, k, "spaces around '=': NCCL defines \"%s\", not %s", rawkey, k);
        return k;
}

/* The value of K as a human meant it, cut in place out of VALUE: an inline comment, blanks around
 * it and quotes dropped, each reported (NCCL keeps them all). Returns where it starts in VALUE. */
static char *clean_value(struct nccl_lint *l, unsigned lineno, const char *k, char *value)
{
        char *v = value;
        char *hash = strchr(v, '#');
        if (hash) {
                add(l, lineno, NP_SYNTAX, k, "inline '#' is part of the value of %s", k);
                *hash = '\0';
                if (hash > v && (hash[-1] == ' ' || hash[-1] == '\t'))
                        strip_trailing(v); /* the spaces before a comment are the comment's */
        }
        if (*v == ' ' || *v == '\t' || (*v && (v[strlen(v) - 1] == ' ' || v[strlen(v) - 1] == '\t'))) {
                add(l, lineno, NP_SYNTAX, k, "spaces around the value of %s are kept in the value", k);
                while (*v == ' ' || *v == '\t')
                        v++;
                strip_trailing(v);
        }
        size_t vl = strlen(v);
        if (vl >= 2 && ((v[0] == '"' && v[vl - 1] == '"') || (v[0] == '\'' && v[vl - 1] == '\''))) {
                add(l, lineno, NP_SYNTAX, k, "quotes are kept in the value of %s", k);
                v[vl - 1] = '\0';
                v++;
        }
        return v;
}

/* K=V of line LINENO kept and checked against the catalog C, unless K was set on an earlier line
 * (the first definition wins). */
static void add_entry(struct nccl_lint *l, const struct nccl_catalog *c, unsigned lineno, const char *k, const char *v)
{
        for (size_t i = 0; i < l->n_entries; i++)
                if (streq(l->entries[i].key, k)) {
                        add(l, lineno, NP_DUPLICATE, k, "%s is already set on line %u: the first definition wins", k,
                            l->entries[i].line);
                        return;
                }
        l->entries = xrealloc(l->entries, (l->n_entries + 1) * sizeof(*l->entries));
        l->entries[l->n_entries++] = (struct nccl_entry){lineno, xstrdup(k), xstrdup(v)};
        check_key(l, c, lineno, k, v);
}

/* Line LINENO (without its newline, no NUL in it; changed in place): its syntax as NCCL reads
 * it, then its setting. */
static void lint_line(struct nccl_lint *l, const struct nccl_catalog *c, unsigned lineno, char *line)
{
        size_t ll = strlen(line);
        if (ll && line[ll - 1] == '\r') {
                line[--ll] = '\0';
                add(l, lineno, NP_SYNTAX, "", "CRLF line ending: NCCL before 2.30 keeps the \\r in the value");
        }
        if (ll > 4095)
                add(l, lineno, NP_SYNTAX, "", "line longer than 4095 characters: NCCL splits it");
        if (!*line || line[0] == '#')
                return;
        const char *t = line;
        while (*t == ' ' || *t == '\t')
                t++;
        if (!*t)
                return;
        if (*t == '#') {
                add(l, lineno, NP_SYNTAX, "", "indented '#': only a '#' in column 1 starts a comment");
                return;
        }
        char *eq = strchr(line, '=');
        if (!eq) {
                add(l, lineno, NP_SYNTAX, "", "no '=': NCCL ignores the line");
                return;
        }
        _cleanup_free_ char *rawkey = xstrndup(line, (size_t)(eq - line));
        _cleanup_free_ char *value = xstrdup(eq + 1);
        /* What a human meant: trim, drop "export", quotes; then report each liberty taken. */
        _cleanup_free_ char *key = xstrdup(rawkey);
        char *k = clean_key(l, lineno, rawkey, key);
        char *v = clean_value(l, lineno, k, value);
        if (!valid_key(k)) {
                add(l, lineno, NP_SYNTAX, k, "\"%s\" is not a variable name", k);
                return;
        }
        if (strlen(k) > 1023 || strlen(v) > 1023)
                add(l, lineno, NP_SYNTAX, k, "key or value longer than 1023 characters: NCCL truncates it");
        add_entry(l, c, lineno, k, v);
}

void nccl_lint_text(const struct nccl_catalog *c, const char *text, size_t len, struct nccl_lint *ret)
{
        struct nccl_lint l = {0};
        unsigned lineno = 0;
        for (size_t pos = 0; pos < len;) {
                const char *s = text + pos;
                const char *nl = memchr(s, '\n', len - pos);
                size_t n = nl ? (size_t)(nl - s) : len - pos;
                pos += n + (nl ? 1 : 0);
                lineno++;
                if (memchr(s, '\0', n)) {
                        add(&l, lineno, NP_SYNTAX, "", "line %u holds a NUL byte", lineno);
                        continue;
                }
                _cleanup_free_ char *line = xstrndup(s, n);
                lint_line(&l, c, lineno, line);
        }
        *ret = l;
}

void nccl_lint_done(struct nccl_lint *l)
{
        for (size_t i = 0; i < l->n_entries; i++) {
                free(l->entries[i].key);
                free(l->entries[i].value);
        }
        free(l->entries);
        for (size_t i = 0; i < l->n_findings; i++) {
                free(l->findings[i].key);
                free(l->findings[i].message);
        }
        free(l->findings);
        *l = (struct nccl_lint){0};
}
