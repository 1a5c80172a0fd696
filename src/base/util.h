/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small helpers shared by every layer: cleanup attributes, checked allocation, string lists. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))

/* No coverage instrumentation (-fsanitize-coverage, the fuzzing builds) for a function whose
 * comparisons are arithmetic on lengths and table cells: their trace callbacks give the fuzzer no
 * path worth finding and were most of a harness's time. Sanitizers still check the function. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize_coverage) /* GCC 12, clang 13 */
#define _no_coverage_ __attribute__((no_sanitize_coverage))
#elif defined(__clang__)
#define _no_coverage_ __attribute__((no_sanitize("coverage")))
#endif
#endif
#ifndef _no_coverage_
#define _no_coverage_
#endif

/* A result the caller must look at (an error it must not drop). */
#define _wur_ __attribute__((warn_unused_result))

static inline void freep(void *p) { free(*(void **)p); }
#define _cleanup_free_ _cleanup_(freep)

/* Release what a variable holds when it goes out of scope (systemd's fd-util.h, fileio.h): each
 * leaves errno as it was, so a function may return -errno after its descriptors are closed. A
 * descriptor below 0, a NULL stream or directory is nothing to release. */
static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int e = errno;
                close(*fd);
                errno = e;
        }
}
static inline void fclosep(FILE **f)
{
        if (*f) {
                int e = errno;
                fclose(*f);
                errno = e;
        }
}
static inline void closedirp(DIR **d)
{
        if (*d) {
                int e = errno;
                closedir(*d);
                errno = e;
        }
}
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Hand a value out of a variable that a cleanup attribute would release: the variable is left
 * NULL (-1 for a descriptor), so the cleanup does nothing (systemd's TAKE_PTR / TAKE_FD). */
#define TAKE_PTR(p)                                                                                       \
        ({                                                                                                \
                __typeof__(p) *_pp = &(p);                                                                \
                __typeof__(p) _v = *_pp;                                                                  \
                *_pp = NULL;                                                                              \
                _v;                                                                                       \
        })
#define TAKE_FD(fd)                                                                                       \
        ({                                                                                                \
                int *_pfd = &(fd);                                                                        \
                int _v = *_pfd;                                                                           \
                *_pfd = -1;                                                                               \
                _v;                                                                                       \
        })

/* Out-of-memory is not an error llmtune can report sensibly: abort with a message. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
/* P (an array of *CAP elements of SIZE bytes) with room for NEED elements: the capacity doubles,
 * from MIN, until it holds them (systemd's GREEDY_REALLOC); P itself when it already does. */
void *greedy_realloc(void *p, size_t *cap, size_t need, size_t size, size_t min);
#define GREEDY_REALLOC(p, cap, need, min) ((p) = greedy_realloc((p), &(cap), (need), sizeof(*(p)), (min)))
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) _printf_(1, 2);
char *xvasprintf(const char *fmt, va_list ap);

/* qsort(3) and memcpy(3) with a count of 0 may still not be given a NULL array (C17 7.1.4,
 * 7.22.5): an empty list is often NULL here. */
static inline void qsort_safe(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
        if (n > 1)
                qsort(base, n, size, cmp);
}
static inline bool streq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }
/* Equal strings, or both NULL. */
static inline bool streq_ptr(const char *a, const char *b) { return a == b || streq(a, b); }
static inline bool startswith(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }
bool endswith(const char *s, const char *suffix);

/* FNV-1a (32 bits) of the string S, or of its first LEN bytes: the hash of llmtune's tables keyed
 * by a path or a name. Inline: a fact lookup hashes its name every time. */
static inline uint32_t string_hash_n(const char *s, size_t len)
{
        uint32_t h = 2166136261u;
        for (size_t i = 0; i < len; i++)
                h = (h ^ (unsigned char)s[i]) * 16777619u;
        return h;
}
static inline uint32_t string_hash(const char *s)
{
        uint32_t h = 2166136261u;
        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 16777619u;
        return h;
}

/* The index of S among the N names of TABLE (an enum's names, in its order; a NULL entry matches
 * nothing), or -EINVAL: one lookup for every name read back into its enum (systemd's
 * string_table_lookup). */
int string_table_lookup(const char *const *table, size_t n, const char *s);
#define STRING_TABLE_LOOKUP(table, s) string_table_lookup((table), ARRAY_SIZE(table), (s))
/* NAME_from_string(S, &v): S looked up in NAME_table (the names of enum TYPE, in its order) into v;
 * 0, or -EINVAL with v untouched (systemd's DEFINE_STRING_TABLE_LOOKUP_FROM_STRING). */
#define DEFINE_STRING_TABLE_FROM_STRING(scope, name, type)                                               \
        scope int name##_from_string(const char *s, type *ret)                                            \
        {                                                                                                 \
                int i = STRING_TABLE_LOOKUP(name##_table, s);                                             \
                if (i < 0)                                                                                \
                        return i;                                                                         \
                *ret = (type)i;                                                                           \
                return 0;                                                                                 \
        }

/*
 * fnmatch(PATTERN, NAME, 0) == 0, in the C locale llmtune runs in (it never calls setlocale):
 * '*' matches any run of bytes ('/' and a leading '.' included), '?' any one byte. A pattern with
 * a bracket expression or a backslash is handed to fnmatch(3) itself. glibc's fnmatch converts
 * both strings to wide characters on every call; fact patterns are matched against thousands of
 * names per audit.
 */
bool glob_match(const char *pattern, const char *name);

/* A growable NULL-terminated list of owned strings. */
struct strv {
        char **v;
        size_t n, cap;
};
void strv_push(struct strv *l, char *owned);
void strv_add(struct strv *l, const char *s);
bool strv_contains(const struct strv *l, const char *s);
void strv_sort(struct strv *l);
char *strv_join(const struct strv *l, const char *sep);
void strv_done(struct strv *l);
/* Drop the last string (a path's ".." step); nothing when the list is empty. */
void strv_pop(struct strv *l);
/* A struct strv released when it goes out of scope. */
#define _cleanup_strv_ _cleanup_(strv_done)

/* A growable string buffer. */
struct sbuf {
        char *s;
        size_t len, cap;
};
void sbuf_addf(struct sbuf *b, const char *fmt, ...) _printf_(2, 3);
void sbuf_add(struct sbuf *b, const char *s);
void sbuf_addn(struct sbuf *b, const char *s, size_t n);
char *sbuf_steal(struct sbuf *b);

/*
 * The lines of a NUL-terminated text, one at a time, each a fresh copy without its '\n' that the
 * caller may cut up (strtok_r, '#' comments); a last line without '\n' counts, an empty text has
 * none. lineno is 1 for the first line.
 *
 *     _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
 *     while (line_next(&it))
 *             use(it.line, it.lineno);
 */
struct line_iter {
        const char *p;
        char *line; /* owned by the iterator: valid until the next line_next() */
        unsigned lineno;
        bool newline; /* the line ended with '\n' (false only for an unterminated last line) */
};
#define LINE_ITER(text) {.p = (text)}
bool line_next(struct line_iter *it);
void line_iter_done(struct line_iter *it);

/* A file of the user's (a report input named on the command line, not a path under --root) read
 * whole: -errno, -EINVAL when it is not a regular file (opened without blocking, so a FIFO is
 * refused, not waited on), -EFBIG past MAX bytes (read up to MAX + 1: st_size is not trusted).
 * *ret (NUL-terminated) is the caller's. */
int read_user_file(const char *path, size_t max, char **ret, size_t *ret_len);

/* What is left to read of FD, whatever kind of file it is (a pipe too), as read_user_file reads:
 * -EFBIG past MAX bytes, else 0 and *ret (NUL-terminated, the caller's). */
int read_fd_capped(int fd, size_t max, char **ret, size_t *ret_len);

/* read_user_file()'s error RC said for PATH: "PATH: not a regular file", "PATH: larger than N MiB:
 * not WHAT" (WHAT: "an audit file"), or "PATH: " + strerror. The caller frees it. */
char *read_user_file_error(const char *path, int rc, size_t max, const char *what);
/* The same without "PATH: ". */
char *read_user_file_why(int rc, size_t max, const char *what);

/* The cap of a rule, profile, health-check or NCCL configuration file named on the command line or
 * shipped: real ones are a few KiB. */
#define HOST_FILE_MAX (1u << 20)

/* Natural order: digit runs compare as numbers ("gpu.2" before "gpu.10", "node-2" before
 * "node-10"); leading zeros do not count, so "01" and "1" compare equal. */
int natcmp(const char *a, const char *b);

/* Trim trailing whitespace in place; returns s. */
char *strip_trailing(char *s);
