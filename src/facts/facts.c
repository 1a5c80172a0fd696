/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/facts.h"

#include "base/deadline.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "base/parse.h"
#include "facts/probes/probes.h"

#define BUCKETS 4096

struct entry {
        struct fact fact;
        struct entry *next_hash;
};

struct handle {
        char *key;
        void *h;
        void (*destroy)(void *);
        struct handle *next;
};

struct facts {
        struct root *root;
        struct entry *buckets[BUCKETS];
        struct entry **all;
        size_t n, cap;
        bool ran[PROBES_MAX];     /* per probe_table entry */
        bool running[PROBES_MAX]; /* guards against a probe asking for its own facts */
        bool sealed;   /* facts_seal: no probe runs any more */
        struct handle *handles;
};

static unsigned hash(const char *s) { return string_hash(s) % BUCKETS; }

struct facts *facts_new(struct root *root)
{
        struct facts *f = xcalloc(1, sizeof(*f));
        f->root = root;
        return f;
}

void facts_seal(struct facts *f) { f->sealed = true; }

struct facts *facts_free(struct facts *f)
{
        if (!f)
                return NULL;
        for (struct handle *h = f->handles, *n; h; h = n) {
                n = h->next;
                if (h->destroy)
                        h->destroy(h->h);
                free(h->key);
                free(h);
        }
        for (size_t i = 0; i < f->n; i++) {
                struct fact *fc = &f->all[i]->fact;
                free(fc->name);
                free(fc->str);
                free(fc->reason);
                free(fc->source);
                free(f->all[i]);
        }
        free(f->all);
        free(f);
        return NULL;
}

struct root *facts_root(struct facts *f) { return f->root; }

void *facts_handle(struct facts *f, const char *key)
{
        for (struct handle *h = f->handles; h; h = h->next)
                if (streq(h->key, key))
                        return h->h;
        return NULL;
}

/* Process-wide, for the LLMTUNE_STATS report (main.c): stores come and go, the record stays. */
static char handles_loaded[256];

const char *facts_handles_loaded(void) { return handles_loaded; }

void facts_set_handle(struct facts *f, const char *key, void *ptr, void (*destroy)(void *))
{
        size_t used = strlen(handles_loaded), kl = strlen(key);
        bool seen = false;
        for (const char *p = handles_loaded; *p; p += strcspn(p, ","), p += *p == ',')
                seen |= strncmp(p, key, kl) == 0 && (p[kl] == ',' || p[kl] == '\0');
        if (!seen)
                snprintf(handles_loaded + used, sizeof(handles_loaded) - used, "%s%s", used ? "," : "", key);
        struct handle *h = xcalloc(1, sizeof(*h));
        h->key = xstrdup(key);
        h->h = ptr;
        h->destroy = destroy;
        h->next = f->handles;
        f->handles = h;
}

void *facts_state(struct facts *f, const char *key, size_t size, void (*destroy)(void *))
{
        void *s = facts_handle(f, key);
        if (!s) {
                s = xcalloc(1, size);
                facts_set_handle(f, key, s, destroy);
        }
        return s;
}

void facts_replace_handle(struct facts *f, const char *key, void *ptr)
{
        for (struct handle *h = f->handles; h; h = h->next)
                if (streq(h->key, key)) {
                        h->h = ptr;
                        return;
                }
}

static struct entry *find(struct facts *f, const char *name)
{
        for (struct entry *e = f->buckets[hash(name)]; e; e = e->next_hash)
                if (streq(e->fact.name, name))
                        return e;
        return NULL;
}

/* First writer wins: a probe never overwrites what another already established. */
static struct fact *add(struct facts *f, char *name, const char *source)
{
        if (find(f, name)) {
                free(name);
                return NULL;
        }
        struct entry *e = xcalloc(1, sizeof(*e));
        e->fact.name = name;
        e->fact.source = source ? xstrdup(source) : NULL;
        unsigned h = hash(name);
        e->next_hash = f->buckets[h];
        f->buckets[h] = e;
        GREEDY_REALLOC(f->all, f->cap, f->n + 1, 256);
        f->all[f->n++] = e;
        return &e->fact;
}

#define VNAME(fmt)                                  \
        va_list ap;                                 \
        va_start(ap, fmt);                          \
        char *name = xvasprintf(fmt, ap);           \
        va_end(ap)

void fact_str(struct facts *f, const char *source, const char *value, const char *namefmt, ...)
{
        VNAME(namefmt);
        struct fact *fc = add(f, name, source);
        if (!fc)
                return;
        fc->type = FACT_STR;
        fc->str = xstrdup(value);
}

void fact_int(struct facts *f, const char *source, int64_t v, const char *namefmt, ...)
{
        VNAME(namefmt);
        struct fact *fc = add(f, name, source);
        if (!fc)
                return;
        fc->type = FACT_INT;
        fc->neg = v < 0;
        fc->mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        fc->str = xasprintf("%" PRId64, v);
}

void fact_uint(struct facts *f, const char *source, uint64_t v, const char *namefmt, ...)
{
        VNAME(namefmt);
        struct fact *fc = add(f, name, source);
        if (!fc)
                return;
        fc->type = FACT_INT;
        fc->mag = v;
        fc->str = xasprintf("%" PRIu64, v);
}

void fact_bool(struct facts *f, const char *source, bool v, const char *namefmt, ...)
{
        VNAME(namefmt);
        struct fact *fc = add(f, name, source);
        if (!fc)
                return;
        fc->type = FACT_BOOL;
        fc->b = v;
        fc->str = xstrdup(v ? "true" : "false");
}

void fact_absent(struct facts *f, const char *source, const char *reason, const char *namefmt, ...)
{
        VNAME(namefmt);
        struct fact *fc = add(f, name, source);
        if (!fc)
                return;
        fc->status = FACT_ABSENT;
        fc->reason = xstrdup(reason);
}

const char *errno_name(int err)
{
        if (err < 0)
                err = -err;
        switch (err) {
        case ENOENT: return "ENOENT (No such file or directory)";
        case EACCES: return "EACCES (Permission denied)";
        case EPERM: return "EPERM (Operation not permitted)";
        case EIO: return "EIO (Input/output error)";
        case EFBIG: return "EFBIG (file too large to be a sane value)";
        case EINVAL: return "EINVAL (Invalid argument)";
        case ERANGE: return "ERANGE (value out of range)";
        case EBADMSG: return "EBADMSG (malformed content)";
        case EISDIR: return "EISDIR (Is a directory)";
        case ENOTDIR: return "ENOTDIR (Not a directory)";
        case ELOOP: return "ELOOP (Too many symbolic links)";
        case ENODATA: return "ENODATA (empty value)";
        case EXDEV: return "EXDEV (path leaves the root)";
        case ENOTREG: return "not a regular file (a FIFO, socket or device is at that path)";
        case ETIMEDOUT: return DEADLINE_REASON;
        case ETIME: return BUDGET_REASON;
        default: return strerror(err);
        }
}

void fact_unreadable(struct facts *f, const char *source, int err, const char *reason, const char *namefmt, ...)
{
        VNAME(namefmt);
        struct fact *fc = add(f, name, source);
        if (!fc)
                return;
        fc->status = FACT_UNREADABLE;
        if (err && reason)
                fc->reason = xasprintf("%s: %s", errno_name(err), reason);
        else
                fc->reason = xstrdup(err ? errno_name(err) : reason ? reason : "unreadable");
}

int fact_read_present(struct facts *f, const char *path, const char **data, size_t *len, const char *name)
{
        int rc = root_read(f->root, path, data, len);
        if (rc == -ENOENT)
                fact_bool(f, path, false, "%s", name);
        else if (rc < 0)
                fact_unreadable(f, path, rc, NULL, "%s", name);
        else
                fact_bool(f, path, true, "%s", name);
        return rc;
}

static int file_common(struct facts *f, const char *path, const char *absent_reason, char *name, bool as_int)
{
        _cleanup_free_ char *line = NULL;
        int rc = root_read_line(f->root, path, &line);
        struct fact *fc;
        if (root_gone(rc)) {
                fc = add(f, name, path);
                if (fc) {
                        fc->status = FACT_ABSENT;
                        fc->reason = xstrdup(absent_reason ? absent_reason : "no such file");
                }
                return rc;
        }
        if (rc < 0) {
                fc = add(f, name, path);
                if (fc) {
                        fc->status = FACT_UNREADABLE;
                        fc->reason = xstrdup(errno_name(rc));
                }
                return rc;
        }
        if (as_int) {
                bool neg;
                uint64_t mag;
                rc = parse_integer(line, &neg, &mag);
                if (rc < 0) {
                        fc = add(f, name, path);
                        if (fc) {
                                fc->status = FACT_UNREADABLE;
                                fc->reason = xasprintf("%s: not an integer: \"%.40s\"", errno_name(rc), line);
                        }
                        return rc;
                }
                fc = add(f, name, path);
                if (fc) {
                        fc->type = FACT_INT;
                        fc->neg = neg;
                        fc->mag = mag;
                        fc->str = xasprintf("%s%" PRIu64, neg ? "-" : "", mag);
                }
                return 0;
        }
        fc = add(f, name, path);
        if (fc) {
                fc->type = FACT_STR;
                fc->str = xstrdup(line);
        }
        return 0;
}

int fact_file_str(struct facts *f, const char *path, const char *absent_reason, const char *namefmt, ...)
{
        VNAME(namefmt);
        return file_common(f, path, absent_reason, name, false);
}

int fact_file_int(struct facts *f, const char *path, const char *absent_reason, const char *namefmt, ...)
{
        VNAME(namefmt);
        return file_common(f, path, absent_reason, name, true);
}

/* --- probing ---------------------------------------------------------------------------------- */

/* Does a request for names starting with WANT need probe prefix HAVE? Either may be the longer. */
static bool prefix_overlap(const char *want, const char *have)
{
        size_t a = strlen(want), b = strlen(have);
        return strncmp(want, have, a < b ? a : b) == 0;
}

/* Run the probes whose prefixes overlap LITERAL_PREFIX. With a PATTERN, a probe that has a
 * match() hook produces only what the pattern can name (and is not marked as run). */
static void run_probes(struct facts *f, const char *literal_prefix, const char *pattern)
{
        if (f->sealed)
                return;
        for (size_t i = 0; i < probe_count; i++) {
                const struct probe *p = probe_table[i];
                if (f->ran[i] || f->running[i] || !p->run)
                        continue;
                for (size_t k = 0; k < ARRAY_SIZE(p->prefixes) && p->prefixes[k]; k++)
                        if (prefix_overlap(literal_prefix, p->prefixes[k])) {
                                bool partial = pattern && p->match;
                                f->running[i] = true;
                                if (partial)
                                        p->match(f, pattern);
                                else
                                        p->run(f);
                                f->running[i] = false;
                                f->ran[i] = !partial;
                                break;
                        }
        }
}

const struct fact *facts_get(struct facts *f, const char *name)
{
        struct entry *e = find(f, name);
        if (e || f->sealed)
                return e ? &e->fact : NULL;
        for (size_t i = 0; i < probe_count; i++) {
                const struct probe *p = probe_table[i];
                if (!p->lookup || f->running[i])
                        continue;
                for (size_t k = 0; k < ARRAY_SIZE(p->prefixes) && p->prefixes[k]; k++)
                        if (startswith(name, p->prefixes[k])) {
                                f->running[i] = true;
                                p->lookup(f, name);
                                f->running[i] = false;
                                e = find(f, name);
                                if (e)
                                        return &e->fact;
                        }
        }
        run_probes(f, name, NULL);
        e = find(f, name);
        return e ? &e->fact : NULL;
}

bool fact_pattern_may_end(const char *pattern, const char *ending)
{
        if (strpbrk(pattern, "[\\"))
                return true;
        const char *tail = pattern + strlen(pattern);
        while (tail > pattern && tail[-1] != '*' && tail[-1] != '?')
                tail--;
        /* a matching name ends in both: the shorter is the end of the longer */
        return strlen(tail) > strlen(ending) ? endswith(tail, ending) : endswith(ending, tail);
}

static int cmp_fact_ptr(const void *x, const void *y)
{
        const struct fact *a = *(const struct fact *const *)x, *b = *(const struct fact *const *)y;
        return natcmp(a->name, b->name);
}

size_t facts_match(struct facts *f, const char *pattern, const struct fact ***ret)
{
        size_t lit = strcspn(pattern, "*?[");
        _cleanup_free_ char *prefix = xstrndup(pattern, lit);
        /* An exact name may exist only through a lookup probe (sysctl.*). */
        if (lit == strlen(pattern))
                facts_get(f, pattern);
        else
                run_probes(f, prefix, pattern);
        const struct fact **out = xcalloc(f->n + 1, sizeof(*out));
        size_t n = 0;
        /* A glob matches the characters before its first wildcard or escape one for one: a name that does not start with them cannot match, and most names do not (the
         * store holds thousands, a pattern names one family). */
        size_t plain = strcspn(pattern, "*?[\\");
        for (size_t i = 0; i < f->n; i++) {
                const char *name = f->all[i]->fact.name;
                /* the first byte inline: it turns most of the store away without a call */
                if (plain && name[0] != pattern[0])
                        continue;
                if (strncmp(name, pattern, plain) == 0 && glob_match(pattern, name))
                        out[n++] = &f->all[i]->fact;
        }
        qsort_safe(out, n, sizeof(*out), cmp_fact_ptr);
        *ret = out;
        return n;
}

size_t facts_under(struct facts *f, const char *prefix, const struct fact ***ret)
{
        run_probes(f, prefix, NULL);
        const struct fact **out = xcalloc(f->n + 1, sizeof(*out));
        size_t n = 0, pl = strlen(prefix);
        for (size_t i = 0; i < f->n; i++) {
                const char *name = f->all[i]->fact.name;
                /* "gpu" selects gpu.* and gpu itself, not gpus.* */
                if (strncmp(name, prefix, pl) == 0 &&
                    (pl == 0 || name[pl] == '\0' || name[pl] == '.' || prefix[pl - 1] == '.'))
                        out[n++] = &f->all[i]->fact;
        }
        qsort_safe(out, n, sizeof(*out), cmp_fact_ptr);
        *ret = out;
        return n;
}

bool fact_number(const struct fact *fc, bool *neg, uint64_t *mag)
{
        if (!fc || fc->status != FACT_OK)
                return false;
        if (fc->type == FACT_INT) {
                *neg = fc->neg;
                *mag = fc->mag;
                return true;
        }
        if (fc->type == FACT_BOOL) {
                *neg = false;
                *mag = fc->b;
                return true;
        }
        return parse_integer(fc->str, neg, mag) == 0;
}

int num_cmp(bool an, uint64_t am, bool bn, uint64_t bm)
{
        if (an && am == 0)
                an = false;
        if (bn && bm == 0)
                bn = false;
        if (an != bn)
                return an ? -1 : 1;
        int c = am < bm ? -1 : am > bm ? 1 : 0;
        return an ? -c : c;
}
