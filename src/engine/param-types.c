/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "engine/param-types.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "base/parse.h"

static const struct {
        const char *name;
        enum param_kind kind;
        bool words, range; /* takes words (enum, list); takes LO..HI */
} kinds[] = {
        {"enum", PT_ENUM, true, false},         {"bool", PT_BOOL, false, false},
        {"integer", PT_INTEGER, false, true},   {"size", PT_SIZE, false, true},
        {"duration", PT_DURATION, false, false}, {"version", PT_VERSION, false, false},
        {"integers", PT_INTEGERS, false, false}, {"names", PT_NAMES, false, false},
        {"list", PT_LIST, true, false},
};

void param_type_done(struct param_type *t)
{
        for (size_t i = 0; i < t->n; i++)
                strv_done(&t->v[i].words);
        free(t->v);
        *t = (struct param_type){0};
}

static bool all_digits(const char *s, size_t n)
{
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isdigit((unsigned char)s[i]))
                        return false;
        return true;
}

/* A byte count: digits, then an optional binary unit K M G T (any case) with optional "iB"/"B". */
static int parse_bytes(const char *s, uint64_t *ret)
{
        size_t n = strspn(s, "0123456789");
        uint64_t v;
        _cleanup_free_ char *num = xstrndup(s, n);
        if (!n || parse_u64(num, &v) < 0)
                return -EINVAL;
        const char *u = s + n;
        static const char units[] = "KMGT";
        const char *k = *u ? strchr(units, toupper((unsigned char)*u)) : NULL;
        unsigned shift = k ? 10u * (unsigned)(k - units + 1) : 0;
        if (k)
                u++;
        if (k && (streq(u, "iB") || streq(u, "B")))
                u += strlen(u);
        if (*u || (shift && v > (UINT64_MAX >> shift)))
                return -EINVAL;
        *ret = v << shift;
        return 0;
}

/* The number a range bound or a value of INTEGER or SIZE stands for. */
static int alt_number(enum param_kind kind, const char *s, uint64_t *ret)
{
        return kind == PT_SIZE ? parse_bytes(s, ret) : all_digits(s, strlen(s)) ? parse_u64(s, ret) : -EINVAL;
}

/* "LO..HI", "LO..", "..HI" into A. */
static int parse_range(struct param_alt *a, const char *tok)
{
        const char *dots = strstr(tok, "..");
        if (!dots)
                return -EINVAL;
        _cleanup_free_ char *lo = xstrndup(tok, (size_t)(dots - tok));
        const char *hi = dots + 2;
        if ((*lo && alt_number(a->kind, lo, &a->lo) < 0) || (*hi && alt_number(a->kind, hi, &a->hi) < 0))
                return -EINVAL;
        a->has_lo = *lo != '\0';
        a->has_hi = *hi != '\0';
        return a->has_lo && a->has_hi && a->lo > a->hi ? -EINVAL : 0;
}

/* One alternative from its words TOKS (at least one). */
static int parse_alt(const struct strv *toks, struct param_alt *a, char **err)
{
        const char *head = toks->v[0];
        size_t k = 0;
        while (k < ARRAY_SIZE(kinds) && !streq(kinds[k].name, head))
                k++;
        *a = (struct param_alt){.kind = PT_WORD};
        if (k == ARRAY_SIZE(kinds)) {
                if (toks->n != 1) {
                        *err = xasprintf("'%s' is not a type (enum, bool, integer, size, duration, version, integers, "
                                         "names, list) and a literal word stands alone", head);
                        return -EINVAL;
                }
                strv_add(&a->words, head);
                return 0;
        }
        a->kind = kinds[k].kind;
        if (kinds[k].words) {
                if (toks->n < 2) {
                        *err = xasprintf("%s needs its words: %s W1 W2 ...", head, head);
                        return -EINVAL;
                }
                for (size_t i = 1; i < toks->n; i++)
                        strv_add(&a->words, toks->v[i]);
                return 0;
        }
        if (toks->n > 2 || (toks->n == 2 && (!kinds[k].range || parse_range(a, toks->v[1]) < 0))) {
                *err = kinds[k].range ? xasprintf("%s takes one range, LO..HI (either may be left out), not '%s'", head,
                                                  toks->v[toks->n - 1])
                                      : xasprintf("%s takes nothing after it, not '%s'", head, toks->v[1]);
                return -EINVAL;
        }
        return 0;
}

int param_type_parse(const char *spec, struct param_type *ret, char **err)
{
        *ret = (struct param_type){0};
        *err = NULL;
        _cleanup_free_ char *copy = xstrdup(spec);
        char *save = NULL;
        for (char *part = strtok_r(copy, "|", &save); part; part = strtok_r(NULL, "|", &save)) {
                struct strv toks = {0};
                char *s2 = NULL;
                for (char *t = strtok_r(part, " \t", &s2); t; t = strtok_r(NULL, " \t", &s2))
                        strv_add(&toks, t);
                int rc = toks.n ? 0 : -EINVAL;
                if (!toks.n)
                        *err = xasprintf("an empty alternative in '%s'", spec);
                ret->v = xrealloc(ret->v, (ret->n + 1) * sizeof(*ret->v));
                if (rc == 0)
                        rc = parse_alt(&toks, &ret->v[ret->n], err);
                strv_done(&toks);
                if (rc < 0) {
                        param_type_done(ret);
                        return rc;
                }
                ret->n++;
        }
        if (ret->n == 0) {
                *err = xstrdup("no type given");
                return -EINVAL;
        }
        return 0;
}

/* A comma list whose items each pass OK (no empty item); EACH_ONCE: no item twice. */
static bool comma_list(const char *v, bool (*ok)(const char *item, const struct param_alt *a),
                       const struct param_alt *a, bool each_once)
{
        _cleanup_strv_ struct strv seen = {0};
        bool good = *v != '\0';
        const char *p = v;
        while (good) {
                const char *comma = strchr(p, ',');
                _cleanup_free_ char *item = comma ? xstrndup(p, (size_t)(comma - p)) : xstrdup(p);
                good = *item && ok(item, a) && !(each_once && strv_contains(&seen, item));
                strv_add(&seen, item);
                if (!comma)
                        break;
                p = comma + 1;
        }
        return good;
}

static bool is_integer_item(const char *s, const struct param_alt *a) { return all_digits(s, strlen(s)); }

static bool is_name_item(const char *s, const struct param_alt *a)
{
        return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:") == strlen(s);
}

static bool is_word_item(const char *s, const struct param_alt *a) { return strv_contains(&a->words, s); }

static bool is_version(const char *s)
{
        /* digits, then any number of ".digits" (leading zeros kept: 535.104.05) */
        for (;;) {
                size_t n = strspn(s, "0123456789");
                if (!n)
                        return false;
                s += n;
                if (!*s)
                        return true;
                if (*s++ != '.')
                        return false;
        }
}

static bool is_duration(const char *s)
{
        size_t n = strspn(s, "0123456789");
        const char *u = s + n;
        return n && (streq(u, "s") || streq(u, "min") || streq(u, "h") || streq(u, "d") || streq(u, "w"));
}

static bool alt_accepts(const struct param_alt *a, const char *v)
{
        uint64_t x;
        switch (a->kind) {
        case PT_WORD:
        case PT_ENUM: return strv_contains(&a->words, v);
        case PT_BOOL: return streq(v, "true") || streq(v, "false");
        case PT_INTEGER:
        case PT_SIZE:
                return alt_number(a->kind, v, &x) == 0 && (!a->has_lo || x >= a->lo) && (!a->has_hi || x <= a->hi);
        case PT_DURATION: return is_duration(v);
        case PT_VERSION: return is_version(v);
        case PT_INTEGERS: return comma_list(v, is_integer_item, a, false);
        case PT_NAMES: return comma_list(v, is_name_item, a, false);
        case PT_LIST: return comma_list(v, is_word_item, a, true);
        }
        return false;
}

bool param_type_accepts(const struct param_type *t, const char *value)
{
        for (size_t i = 0; i < t->n; i++)
                if (alt_accepts(&t->v[i], value))
                        return true;
        return false;
}

static void describe_range(struct sbuf *b, const struct param_alt *a)
{
        if (a->has_lo && a->has_hi)
                sbuf_addf(b, " from %llu to %llu", (unsigned long long)a->lo, (unsigned long long)a->hi);
        else if (a->has_lo)
                sbuf_addf(b, " of at least %llu", (unsigned long long)a->lo);
        else if (a->has_hi)
                sbuf_addf(b, " of at most %llu", (unsigned long long)a->hi);
        if (a->kind == PT_SIZE && (a->has_lo || a->has_hi))
                sbuf_add(b, " bytes");
}

static void describe_alt(struct sbuf *b, const struct param_alt *a)
{
        _cleanup_free_ char *words = a->words.n ? strv_join(&a->words, ", ") : NULL;
        switch (a->kind) {
        case PT_WORD: sbuf_add(b, words); break;
        case PT_ENUM: sbuf_addf(b, "one of %s", words); break;
        case PT_BOOL: sbuf_add(b, "true or false"); break;
        case PT_INTEGER: sbuf_add(b, "an integer"); describe_range(b, a); break;
        case PT_SIZE: sbuf_add(b, "a size (bytes, or with K, M, G or T: 64G)"); describe_range(b, a); break;
        case PT_DURATION: sbuf_add(b, "a duration (with s, min, h, d or w: 24h)"); break;
        case PT_VERSION: sbuf_add(b, "a dotted version (535.104.05)"); break;
        case PT_INTEGERS: sbuf_add(b, "a comma list of integers (4,4)"); break;
        case PT_NAMES: sbuf_add(b, "a comma list of names"); break;
        case PT_LIST: sbuf_addf(b, "a comma list of %s", words); break;
        }
}

char *param_type_describe(const struct param_type *t)
{
        struct sbuf b = {0};
        for (size_t i = 0; i < t->n; i++) {
                if (i)
                        sbuf_add(&b, i + 1 == t->n ? " or " : ", ");
                describe_alt(&b, &t->v[i]);
        }
        return sbuf_steal(&b);
}

bool param_type_choices(const struct param_type *t, struct strv *ret)
{
        struct strv out = {0};
        for (size_t i = 0; i < t->n; i++) {
                const struct param_alt *a = &t->v[i];
                if (a->kind == PT_BOOL) {
                        strv_add(&out, "true");
                        strv_add(&out, "false");
                } else if (a->kind == PT_WORD || a->kind == PT_ENUM) {
                        for (size_t k = 0; k < a->words.n; k++)
                                strv_add(&out, a->words.v[k]);
                } else {
                        strv_done(&out);
                        return false;
                }
        }
        *ret = out;
        return true;
}
