/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "engine/expr.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "base/parse.h"

/* The value that says "not checked here" for a parameter (base.ini: ram_per_gpu = any). */
#define PARAM_UNSET "any"

static const struct {
        const char *name;
        enum expr_op op;
        bool needs_value;
} ops[] = {
        {"==", OP_EQ, true},           {"!=", OP_NE, true},
        {">=", OP_GE, true},           {"<=", OP_LE, true},
        {">", OP_GT, true},            {"<", OP_LT, true},
        {"in", OP_IN, true},           {"!in", OP_NOT_IN, true},
        {"contains", OP_CONTAINS, true}, {"!contains", OP_NOT_CONTAINS, true},
        {"present", OP_PRESENT, false}, {"absent", OP_ABSENT, false},
        {"version>=", OP_VERSION_GE, true}, {"version<", OP_VERSION_LT, true},
        {"set", OP_SET, false},
};

const char *expr_op_name(enum expr_op op)
{
        for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
                if (ops[i].op == op)
                        return ops[i].name;
        return "?";
}

static int find_op(const char *tok, enum expr_op *ret, bool *needs_value)
{
        for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
                if (streq(ops[i].name, tok)) {
                        *ret = ops[i].op;
                        *needs_value = ops[i].needs_value;
                        return 0;
                }
        return -EINVAL;
}

void expr_done(struct expr *e)
{
        free(e->fact);
        free(e->value);
        for (size_t i = 0; i < e->nwhere; i++) {
                free(e->where[i].field);
                free(e->where[i].value);
        }
        free(e->text);
        *e = (struct expr){0};
}

/* Next whitespace-separated token of *p, or NULL. */
static char *next_token(const char **p)
{
        while (isspace((unsigned char)**p))
                (*p)++;
        if (!**p)
                return NULL;
        const char *s = *p;
        while (**p && !isspace((unsigned char)**p))
                (*p)++;
        return xstrndup(s, (size_t)(*p - s));
}

static char *trimmed(const char *s, size_t n)
{
        while (n && isspace((unsigned char)*s)) {
                s++;
                n--;
        }
        while (n && isspace((unsigned char)s[n - 1]))
                n--;
        return xstrndup(s, n);
}

/* "FIELD OP [VALUE]" of a where clause, or the main "FACT OP [VALUE]" part. */
static int parse_test(const char *s, char **ret_fact, enum expr_op *ret_op, char **ret_value, char **err)
{
        const char *p = s;
        _cleanup_free_ char *fact = next_token(&p);
        _cleanup_free_ char *optok = next_token(&p);
        if (!fact || !optok) {
                *err = xasprintf("expected 'FACT OPERATOR [VALUE]' in \"%s\"", s);
                return -EINVAL;
        }
        bool needs_value;
        if (find_op(optok, ret_op, &needs_value) < 0) {
                *err = xasprintf("unknown operator '%s' (use == != >= <= > < in !in contains !contains present absent version>= version< set)",
                                 optok);
                return -EINVAL;
        }
        _cleanup_free_ char *value = trimmed(p, strlen(p));
        if (needs_value && !*value) {
                *err = xasprintf("operator '%s' needs a value", optok);
                return -EINVAL;
        }
        if (!needs_value && *value) {
                *err = xasprintf("operator '%s' takes no value, got \"%s\"", optok, value);
                return -EINVAL;
        }
        *ret_fact = fact;
        fact = NULL;
        *ret_value = needs_value ? value : NULL;
        if (needs_value)
                value = NULL;
        return 0;
}

int expr_parse(const char *text, struct expr *ret, char **err)
{
        struct expr e = {.text = trimmed(text, strlen(text))};
        const char *p = e.text;
        const char *q = p;
        _cleanup_free_ char *first = next_token(&q);
        if (!first) {
                *err = xstrdup("empty condition");
                expr_done(&e);
                return -EINVAL;
        }
        bool explicit_quant = true;
        if (streq(first, "all"))
                e.quant = Q_ALL;
        else if (streq(first, "any"))
                e.quant = Q_ANY;
        else if (streq(first, "none"))
                e.quant = Q_NONE;
        else
                explicit_quant = false;
        if (explicit_quant)
                p = q;

        _cleanup_free_ char *main_part = NULL;
        const char *w = strstr(p, " where ");
        if (w) {
                main_part = xstrndup(p, (size_t)(w - p));
                const char *c = w + strlen(" where ");
                for (;;) {
                        const char *and = strstr(c, " and ");
                        _cleanup_free_ char *clause = and ? xstrndup(c, (size_t)(and - c)) : xstrdup(c);
                        if (e.nwhere == EXPR_WHERE_MAX) {
                                *err = xasprintf("more than %d 'where' clauses", EXPR_WHERE_MAX);
                                expr_done(&e);
                                return -EINVAL;
                        }
                        struct expr_where *wc = &e.where[e.nwhere++];
                        if (parse_test(clause, &wc->field, &wc->op, &wc->value, err) < 0) {
                                expr_done(&e);
                                return -EINVAL;
                        }
                        if (wc->op == OP_SET) {
                                *err = xasprintf("'set' tests a profile parameter, not the field '%s'", wc->field);
                                expr_done(&e);
                                return -EINVAL;
                        }
                        if (strpbrk(wc->field, "*?[")) {
                                *err = xasprintf("'where' takes a field of the item (like vendor_id), not \"%s\"",
                                                 wc->field);
                                expr_done(&e);
                                return -EINVAL;
                        }
                        if (!and)
                                break;
                        c = and + strlen(" and ");
                }
        } else
                main_part = xstrdup(p);
        if (parse_test(main_part, &e.fact, &e.op, &e.value, err) < 0) {
                expr_done(&e);
                return -EINVAL;
        }
        bool wild = strpbrk(e.fact, "*?[") != NULL;
        if ((explicit_quant || e.nwhere) && !wild) {
                *err = xasprintf("'%s' needs a fact pattern with '*', got \"%s\"", e.nwhere ? "where" : first, e.fact);
                expr_done(&e);
                return -EINVAL;
        }
        if (e.op == OP_SET && !(startswith(e.fact, "${") && endswith(e.fact, "}"))) {
                *err = xasprintf("'set' tests a profile parameter (\"${name} set\"), not \"%s\"; facts take present/absent",
                                 e.fact);
                expr_done(&e);
                return -EINVAL;
        }
        if (startswith(e.fact, "${") && (!endswith(e.fact, "}") || wild)) {
                *err = xasprintf("malformed parameter reference \"%s\"", e.fact);
                expr_done(&e);
                return -EINVAL;
        }
        *ret = e;
        return 0;
}

char *expr_substitute(const char *s, param_fn params, void *userdata, char **missing)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        for (const char *p = s; *p;) {
                const char *start = strstr(p, "${");
                if (!start) {
                        sbuf_add(&b, p);
                        break;
                }
                sbuf_addn(&b, p, (size_t)(start - p));
                const char *end = strchr(start, '}');
                if (!end) {
                        sbuf_add(&b, start);
                        break;
                }
                _cleanup_free_ char *name = xstrndup(start + 2, (size_t)(end - start - 2));
                const char *v = params ? params(userdata, name) : NULL;
                if (!v) {
                        if (missing)
                                *missing = xstrdup(name);
                        free(sbuf_steal(&b));
                        return NULL;
                }
                sbuf_add(&b, v);
                p = end + 1;
        }
        return sbuf_steal(&b);
}

static void collect_params(const char *s, struct strv *ret)
{
        for (const char *p = s ? strstr(s, "${") : NULL; p; p = strstr(p, "${")) {
                const char *end = strchr(p, '}');
                if (!end)
                        return;
                _cleanup_free_ char *name = xstrndup(p + 2, (size_t)(end - p - 2));
                if (!strv_contains(ret, name))
                        strv_add(ret, name);
                p = end + 1;
        }
}

void expr_params(const struct expr *e, struct strv *ret)
{
        collect_params(e->fact, ret);
        collect_params(e->value, ret);
        for (size_t i = 0; i < e->nwhere; i++)
                collect_params(e->where[i].value, ret);
}

/* A product of non-negative numbers, "40G*2": a profile parameter times another (saturates). 1 when
 * S is not a product. */
static int parse_product(const char *s, uint64_t *mag)
{
        const char *star = strchr(s, '*');
        if (!star || star == s || !star[1])
                return 1;
        _cleanup_free_ char *left = xstrndup(s, (size_t)(star - s));
        bool ln, rn;
        uint64_t lm, rm;
        if (parse_rule_number(left, &ln, &lm) < 0 || parse_rule_number(star + 1, &rn, &rm) < 0 || ln || rn)
                return -EINVAL;
        *mag = lm && rm > UINT64_MAX / lm ? UINT64_MAX : lm * rm;
        return 0;
}

/* V followed by UNIT: durations in seconds (30s, 10min, 24h, 7d, 2w: lower case, "M" is a size),
 * sizes in binary units as memory is counted (64G, 64GiB, 512K, 1T). */
static int apply_unit(unsigned long long v, const char *unit, uint64_t *mag)
{
        static const struct { const char *unit; uint64_t seconds; } durations[] = {
                {"s", 1}, {"min", 60}, {"h", 3600}, {"d", 86400}, {"w", 604800},
        };
        for (size_t i = 0; i < ARRAY_SIZE(durations); i++)
                if (streq(unit, durations[i].unit)) {
                        if (v > UINT64_MAX / durations[i].seconds)
                                return -EINVAL;
                        *mag = v * durations[i].seconds;
                        return 0;
                }
        const char *p = strchr("KMGT", toupper((unsigned char)*unit));
        if (!*unit || !p)
                return -EINVAL;
        unsigned shift = 10 * (unsigned)(p - "KMGT" + 1);
        unit++;
        if (streq(unit, "iB") || streq(unit, "B"))
                unit += strlen(unit);
        if (*unit || v > (UINT64_MAX >> shift))
                return -EINVAL;
        *mag = (uint64_t)v << shift;
        return 0;
}

int parse_rule_number(const char *s, bool *neg, uint64_t *mag)
{
        if (parse_integer(s, neg, mag) == 0)
                return 0;
        *neg = false;
        /* "unlimited" / "infinity": the largest value, as limits.conf(5) and systemd write RLIM_INFINITY. */
        if (strcasecmp(s, "unlimited") == 0 || strcasecmp(s, "infinity") == 0) {
                *mag = UINT64_MAX;
                return 0;
        }
        int rc = parse_product(s, mag);
        if (rc <= 0)
                return rc;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || !isdigit((unsigned char)*s))
                return -EINVAL;
        return apply_unit(v, end, mag);
}

static int bool_word(const char *s)
{
        static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
        for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        }
        return -1;
}

static bool values_equal(const struct fact *fc, const char *want)
{
        if (fc->type == FACT_BOOL) {
                int b = bool_word(want);
                return b >= 0 && (bool)b == fc->b;
        }
        bool an, bn;
        uint64_t am, bm;
        if (fc->type == FACT_INT && fact_number(fc, &an, &am) && parse_rule_number(want, &bn, &bm) == 0)
                return num_cmp(an, am, bn, bm) == 0;
        return streq(fc->str, want);
}

/* Words of a list value: separated by whitespace or commas. */
static bool has_word(const char *list, const char *word)
{
        size_t wl = strlen(word);
        for (const char *p = list; *p;) {
                while (*p && (isspace((unsigned char)*p) || *p == ','))
                        p++;
                size_t l = strcspn(p, " \t\n,");
                if (l == wl && strncmp(p, word, wl) == 0)
                        return true;
                p += l;
        }
        return false;
}

/* Two runs of digits (LA and LB long) as numbers: leading zeros do not count. */
static int digits_cmp(const char *x, size_t lx, const char *y, size_t ly)
{
        while (lx > 1 && *x == '0')
                x++, lx--;
        while (ly > 1 && *y == '0')
                y++, ly--;
        return lx != ly ? (lx < ly ? -1 : 1) : strncmp(x, y, lx);
}

static int text_cmp(const char *a, size_t la, const char *b, size_t lb)
{
        int c = strncmp(a, b, la < lb ? la : lb);
        return c || la == lb ? c : la < lb ? -1 : 1;
}

/*
 * Versions compare component by component ("535.104.05" >= "535.86.10"): runs of digits as
 * numbers, anything else (letters, "-rc1") as text; '.', '-', '_' and '+' only separate. A missing
 * component is smaller ("535.104" < "535.104.05"). Returns <0, 0, >0.
 */
static int version_cmp(const char *a, const char *b)
{
        for (;;) {
                a += strspn(a, ".-_+");
                b += strspn(b, ".-_+");
                if (!*a || !*b)
                        return *a ? 1 : *b ? -1 : 0;
                bool da = isdigit((unsigned char)*a), db = isdigit((unsigned char)*b);
                if (da != db)
                        return da ? 1 : -1; /* a number beats a suffix: "1.0" > "1.rc" */
                size_t la = da ? strspn(a, "0123456789") : strcspn(a, ".-_+0123456789");
                size_t lb = db ? strspn(b, "0123456789") : strcspn(b, ".-_+0123456789");
                int c = da ? digits_cmp(a, la, b, lb) : text_cmp(a, la, b, lb);
                if (c)
                        return c;
                a += la;
                b += lb;
        }
}

/* Numbers of a fact for >= and friends; "unlimited" / "infinity" is the largest. */
static bool fact_number_or_unlimited(const struct fact *fc, bool *neg, uint64_t *mag)
{
        if (fact_number(fc, neg, mag))
                return true;
        if (fc->type == FACT_STR && (strcasecmp(fc->str, "unlimited") == 0 || strcasecmp(fc->str, "infinity") == 0)) {
                *neg = false;
                *mag = UINT64_MAX;
                return true;
        }
        return false;
}

static int test_order(const struct fact *fc, enum expr_op op, const char *want, char **err)
{
        bool an, bn;
        uint64_t am, bm;
        if (!fact_number_or_unlimited(fc, &an, &am)) {
                *err = xasprintf("%s = \"%s\" is not a number", fc->name, fc->str);
                return -1;
        }
        if (parse_rule_number(want, &bn, &bm) < 0) {
                *err = xasprintf("expected value \"%s\" is not a number", want);
                return -1;
        }
        int c = num_cmp(an, am, bn, bm);
        return op == OP_GE ? c >= 0 : op == OP_LE ? c <= 0 : op == OP_GT ? c > 0 : c < 0;
}

/* Is the fact one of the comma-separated values WANT? */
static bool in_list(const struct fact *fc, const char *want)
{
        _cleanup_free_ char *copy = xstrdup(want);
        char *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                _cleanup_free_ char *w = trimmed(t, strlen(t));
                if (values_equal(fc, w))
                        return true;
        }
        return false;
}

/* contains: every listed word present; !contains: none of them. */
static int test_words(const struct fact *fc, enum expr_op op, const char *want)
{
        _cleanup_free_ char *copy = xstrdup(want);
        char *save = NULL;
        bool all = true, any = false;
        for (char *t = strtok_r(copy, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
                bool h = has_word(fc->str, t);
                all &= h;
                any |= h;
        }
        return op == OP_CONTAINS ? all : !any;
}

static int test_version(const struct fact *fc, enum expr_op op, const char *want, char **err)
{
        if (!isdigit((unsigned char)*fc->str) || !isdigit((unsigned char)*want)) {
                *err = xasprintf("version comparison needs versions: %s = \"%s\", expected \"%s\"", fc->name, fc->str,
                                 want);
                return -1;
        }
        int c = version_cmp(fc->str, want);
        return op == OP_VERSION_GE ? c >= 0 : c < 0;
}

/* 1 true, 0 false, -1 error (message in *err). */
static int test_fact(const struct fact *fc, enum expr_op op, const char *want, char **err)
{
        switch (op) {
        case OP_EQ: return values_equal(fc, want);
        case OP_NE: return !values_equal(fc, want);
        case OP_GE: case OP_LE: case OP_GT: case OP_LT: return test_order(fc, op, want, err);
        case OP_IN: return in_list(fc, want);
        case OP_NOT_IN: return !in_list(fc, want);
        case OP_CONTAINS: case OP_NOT_CONTAINS: return test_words(fc, op, want);
        case OP_VERSION_GE: case OP_VERSION_LT: return test_version(fc, op, want, err);
        case OP_PRESENT: return 1;
        case OP_ABSENT: return 0;
        case OP_SET: return *fc->str && !streq(fc->str, PARAM_UNSET);
        }
        return -1;
}

void eval_result_done(struct eval_result *r)
{
        free(r->observed);
        free(r->expected);
        free(r->reason);
        strv_done(&r->failed);
        *r = (struct eval_result){0};
}

/* Name of the item's sibling FIELD: "gpu.3.numa_node" with pattern "gpu.*.numa_node" -> "gpu.3.FIELD". */
static char *sibling(const char *pattern, const char *name, const char *field)
{
        const char *star = strrchr(pattern, '*');
        size_t suffix = strlen(star + 1);
        size_t nl = strlen(name);
        size_t base = nl >= suffix ? nl - suffix : nl;
        if (base > 0 && name[base - 1] == '.')
                base--;
        /* the item is what the last '*' matched: keep up to the end of that segment */
        return xasprintf("%.*s.%s", (int)base, name, field);
}

char *expr_item_sibling(const struct expr *e, const char *name, const char *field)
{
        if (strchr(e->fact, '*'))
                return sibling(e->fact, name, field);
        const char *dot = strrchr(name, '.');
        return dot ? xasprintf("%.*s.%s", (int)(dot - name), name, field) : xstrdup(field);
}

static const char *describe(const struct fact *fc)
{
        return fc->status == FACT_OK ? fc->str : fc->reason;
}

/*
 * The count fact of the collection a pattern ranges over: "mount.*.options" -> mount.count,
 * "ib.*.port.*.state" -> ib.count. An empty match means "nothing there" only when that count is a
 * value; when it is absent or unreadable the collection itself is unknown (no /proc/mounts, an
 * unreadable /sys/bus/pci/devices) and the rule cannot say "nothing to check". NULL when the
 * pattern has no such count (cpu.policy.*: the rules guard it with a when= instead).
 */
static const struct fact *collection_of(struct facts *f, const char *pattern)
{
        size_t lit = strcspn(pattern, "*?[");
        if (lit == 0 || pattern[lit - 1] != '.' || lit != strcspn(pattern, ".") + 1)
                return NULL;
        _cleanup_free_ char *name = xasprintf("%.*scount", (int)lit, pattern);
        return facts_get(f, name);
}

/* Fill RET for a collection that is not known: n/a with its reason when absent, error when
 * unreadable. */
static void collection_unknown(const struct expr *e, const struct fact *coll, struct eval_result *ret)
{
        free(ret->reason);
        free(ret->observed);
        bool unreadable = coll->status == FACT_UNREADABLE;
        ret->status = unreadable ? EVAL_ERROR : EVAL_NA;
        ret->reason = xasprintf("%s: collection %s: %s%s%s", e->fact, unreadable ? "unreadable" : "unknown",
                                coll->name, coll->reason ? " " : "", coll->reason ? coll->reason : "");
        if (coll->source) {
                char *r = xasprintf("%s (%s)", ret->reason, coll->source);
                free(ret->reason);
                ret->reason = r;
        }
        ret->observed = xasprintf("%s %s", coll->name, unreadable ? "unreadable" : "absent");
        ret->failing = 0;
}

static void where_wants_done(char ***v)
{
        for (size_t i = 0; i < EXPR_WHERE_MAX; i++)
                free((*v)[i]);
}

static void eval_error(struct eval_result *ret, char *reason, char *observed)
{
        ret->status = EVAL_ERROR;
        ret->reason = reason;
        ret->observed = observed;
}

static char *unreadable_reason(const char *name, const struct fact *fc)
{
        return xasprintf("%s unreadable: %s%s%s", name, fc->reason, fc->source ? " at " : "",
                         fc->source ? fc->source : "");
}

/* A parameter tested directly ("${swap} == off", "${ram_per_gpu} set"): a constant of the profile. */
static void eval_param(const struct expr *e, const char *want, param_fn params, void *userdata,
                       struct eval_result *ret)
{
        _cleanup_free_ char *missing = NULL;
        _cleanup_free_ char *v = expr_substitute(e->fact, params, userdata, &missing);
        if (!v) {
                eval_error(ret, xasprintf("unknown parameter ${%s}", missing), NULL);
                return;
        }
        struct fact pf = {.name = e->fact, .type = FACT_STR, .str = v};
        char *err = NULL;
        int t = test_fact(&pf, e->op, want ? want : "", &err);
        ret->status = t < 0 ? EVAL_ERROR : t ? EVAL_TRUE : EVAL_FALSE;
        ret->reason = err;
        ret->observed = xasprintf("%s = %s", e->fact, v);
        ret->items = 1;
}

/* One fact by name: absent is n/a (or the answer, for present/absent), unreadable an error. */
static void eval_single(const struct expr *e, const char *want, struct facts *f, struct eval_result *ret)
{
        const struct fact *fc = facts_get(f, e->fact);
        ret->items = 1;
        if (!fc || fc->status == FACT_ABSENT) {
                const char *why = fc ? fc->reason : "no such fact";
                ret->observed = xasprintf("%s absent (%s)", e->fact, why);
                if (e->op == OP_ABSENT)
                        ret->status = EVAL_TRUE;
                else {
                        ret->status = e->op == OP_PRESENT ? EVAL_FALSE : EVAL_NA;
                        ret->reason = xasprintf("%s: %s", e->fact, why);
                }
                return;
        }
        if (fc->status == FACT_UNREADABLE) {
                eval_error(ret, unreadable_reason(e->fact, fc), xasprintf("%s unreadable", e->fact));
                return;
        }
        char *err = NULL;
        int t = test_fact(fc, e->op, want, &err);
        ret->observed = xasprintf("%s = %s", fc->name, fc->str);
        ret->status = t < 0 ? EVAL_ERROR : t ? EVAL_TRUE : EVAL_FALSE;
        ret->reason = err;
        ret->failing = t == 0;
        if (t == 0)
                strv_add(&ret->failed, fc->name);
}

/* Does item FC pass every "where" clause? 1 yes, 0 no, -1 a clause's field is unreadable (RET
 * says which: the item may be one the rule is about). */
static int where_keeps(const struct expr *e, char *const *where_want, struct facts *f, const struct fact *fc,
                       struct eval_result *ret)
{
        for (size_t w = 0; w < e->nwhere; w++) {
                _cleanup_free_ char *sib = sibling(e->fact, fc->name, e->where[w].field);
                const struct fact *sf = facts_get(f, sib);
                if (sf && sf->status == FACT_UNREADABLE) {
                        eval_error(ret,
                                   xasprintf("%s unreadable (for where %s): %s%s%s", sf->name, e->where[w].field,
                                             sf->reason, sf->source ? " at " : "", sf->source ? sf->source : ""),
                                   xasprintf("%s unreadable", sf->name));
                        return -1;
                }
                char *err = NULL;
                int t = sf && sf->status == FACT_OK ? test_fact(sf, e->where[w].op, where_want[w], &err) : 0;
                free(err);
                if (t <= 0)
                        return 0;
        }
        return 1;
}

/* What the items of a wildcard gave. */
struct tally {
        unsigned evaluated, passing;
        const struct fact *first_fail, *first_pass, *first_absent;
        bool uniform;
        struct strv passed, failed; /* item names */
};

static void tally_done(struct tally *t)
{
        strv_done(&t->passed);
        strv_done(&t->failed);
}

/* "nothing to check" over an empty match, or "none" holding over it. */
static void eval_empty(const struct expr *e, char *const *where_want, const struct tally *t,
                       struct eval_result *ret)
{
        ret->observed = xasprintf("no %s", e->fact);
        if (e->quant == Q_NONE) {
                ret->status = EVAL_TRUE;
                return;
        }
        ret->status = EVAL_NA;
        if (t->first_absent) {
                ret->reason = xasprintf("%s: %s", t->first_absent->name, t->first_absent->reason);
                return;
        }
        struct sbuf b = {0};
        sbuf_addf(&b, "nothing to check: no %s", e->fact);
        for (size_t w = 0; w < e->nwhere; w++)
                sbuf_addf(&b, " %s %s %s%s%s", w ? "and" : "where", e->where[w].field, expr_op_name(e->where[w].op),
                          where_want[w] ? " " : "", where_want[w] ? where_want[w] : "");
        ret->reason = sbuf_steal(&b);
}

/* The quantifier over the tally: status, what to show, how many fail. */
static void eval_verdict(const struct expr *e, struct tally *t, const struct fact *coll,
                         struct eval_result *ret)
{
        bool ok = e->quant == Q_ANY ? t->passing > 0 : e->quant == Q_NONE ? t->passing == 0
                                                                       : t->passing == t->evaluated;
        ret->status = ok ? EVAL_TRUE : EVAL_FALSE;
        /* With part of the collection unknown only a result the unknown items cannot change stands:
         * "all"/"none" failing on a seen item, "any" passing on one. */
        if (coll && coll->status == FACT_UNREADABLE && (e->quant == Q_ANY ? !ok : ok)) {
                collection_unknown(e, coll, ret);
                return;
        }
        /* What to show: for "all", the first item that fails; for "none", the first that matches. */
        const struct fact *pass_first = t->first_pass ? t->first_pass : t->first_fail;
        const struct fact *fail_first = t->first_fail ? t->first_fail : t->first_pass;
        const struct fact *shown = e->quant == Q_NONE || ok ? pass_first : fail_first;
        unsigned count = e->quant == Q_NONE ? t->passing : t->evaluated - t->passing;
        const char *s = t->evaluated == 1 ? "" : "s";
        if (ok && e->quant != Q_NONE)
                ret->observed = t->evaluated == 1 || t->uniform
                                        ? xasprintf("%s = %s (%u item%s)", shown->name, describe(shown), t->evaluated, s)
                                        : xasprintf("%u of %u items pass", t->passing, t->evaluated);
        else if (ok)
                ret->observed = xasprintf("none of %u items matches", t->evaluated);
        else
                ret->observed = xasprintf("%s = %s (%u of %u item%s)", shown->name, describe(shown), count,
                                          t->evaluated, s);
        ret->failing = ok ? 0 : count;
        /* The items the check fails on: for "none" those that match, else those that do not. */
        if (!ok) {
                struct strv *v = e->quant == Q_NONE ? (struct strv *)&t->passed : (struct strv *)&t->failed;
                ret->failed = *v;
                *v = (struct strv){0};
        }
}

/* Test one item of a wildcard into T; -1 with RET filled on an error that decides the whole. */
static int eval_item(const struct expr *e, const char *want, const struct fact *fc, struct tally *t,
                     struct eval_result *ret)
{
        if (fc->status == FACT_UNREADABLE) {
                eval_error(ret, unreadable_reason(fc->name, fc), xasprintf("%s unreadable", fc->name));
                return -1;
        }
        if (fc->status == FACT_ABSENT && e->op != OP_ABSENT && e->op != OP_PRESENT) {
                if (!t->first_absent)
                        t->first_absent = fc;
                return 0;
        }
        char *err = NULL;
        int r = fc->status == FACT_ABSENT ? e->op == OP_ABSENT : test_fact(fc, e->op, want, &err);
        if (r < 0) {
                eval_error(ret, err, xasprintf("%s = %s", fc->name, fc->str));
                return -1;
        }
        t->evaluated++;
        strv_add(r ? &t->passed : &t->failed, fc->name);
        if (r) {
                t->passing++;
                if (!t->first_pass)
                        t->first_pass = fc;
        } else if (!t->first_fail)
                t->first_fail = fc;
        if (t->evaluated > 1 && t->first_pass && fc->status == FACT_OK && t->first_pass->status == FACT_OK &&
            !streq(fc->str, (t->first_fail ? t->first_fail : t->first_pass)->str))
                t->uniform = false;
        return 0;
}

/* A pattern ("all gpu.*.numa_node >= 0 where vendor_id == 10de"): every matching item that passes
 * the where clauses, judged by the quantifier, with the collection's count deciding what an empty
 * or partial match means. */
static void eval_wildcard(const struct expr *e, const char *want, char *const *where_want, struct facts *f,
                          struct eval_result *ret)
{
        const struct fact **items = NULL;
        size_t n = facts_match(f, e->fact, &items);
        _cleanup_(tally_done) struct tally t = {.uniform = true};
        for (size_t i = 0; i < n; i++) {
                int keep = where_keeps(e, where_want, f, items[i], ret);
                if (keep < 0 || (keep > 0 && eval_item(e, want, items[i], &t, ret) < 0)) {
                        free(items);
                        return;
                }
        }
        free(items);
        ret->items = t.evaluated;
        const struct fact *coll = collection_of(f, e->fact);
        if (coll && coll->status == FACT_OK)
                coll = NULL;
        if (t.evaluated == 0 && coll)
                collection_unknown(e, coll, ret);
        else if (t.evaluated == 0)
                eval_empty(e, where_want, &t, ret);
        else
                eval_verdict(e, &t, coll, ret);
}

void expr_eval(const struct expr *e, struct facts *f, param_fn params, void *userdata, struct eval_result *ret)
{
        *ret = (struct eval_result){0};
        _cleanup_free_ char *missing = NULL;
        _cleanup_free_ char *want = NULL;
        char *where_want[EXPR_WHERE_MAX] = {0};
        _cleanup_(where_wants_done) char **where_wants = where_want;
        if (e->value && !(want = expr_substitute(e->value, params, userdata, &missing))) {
                eval_error(ret, xasprintf("unknown parameter ${%s}", missing), NULL);
                return;
        }
        for (size_t i = 0; i < e->nwhere; i++)
                if (e->where[i].value &&
                    !(where_want[i] = expr_substitute(e->where[i].value, params, userdata, &missing))) {
                        eval_error(ret, xasprintf("unknown parameter ${%s}", missing), NULL);
                        return;
                }
        ret->expected = want ? xasprintf("%s %s", expr_op_name(e->op), want) : xstrdup(expr_op_name(e->op));
        if (startswith(e->fact, "${"))
                eval_param(e, want, params, userdata, ret);
        else if (strpbrk(e->fact, "*?["))
                eval_wildcard(e, want, where_want, f, ret);
        else
                eval_single(e, want, f, ret);
}
