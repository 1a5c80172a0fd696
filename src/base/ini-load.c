/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "base/ini-load.h"

#include "base/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

void diag_add(struct diags *d, const char *file, unsigned line, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *msg = xvasprintf(fmt, ap);
        va_end(ap);
        strv_push(&d->msgs, line ? xasprintf("%s:%u: %s", file, line, msg) : xasprintf("%s: %s", file, msg));
        free(msg);
}

struct stream {
        const char *file;
        const char *p, *end;
        unsigned line;        /* line most recently handed to inih */
        unsigned header_line; /* line of the most recent [section] header */
        bool line_indented;   /* it started with whitespace: a continuation */
        struct diags *d;
        ini_key_fn fn;
        void *user;
        /* the key being assembled (continuations are appended before it is delivered) */
        char *section, *key;
        struct sbuf value;
        unsigned key_line, section_line;
        char *cur_section;
        unsigned cur_section_line;
};

static char *reader(char *buf, int num, void *userdata)
{
        struct stream *s = userdata;
        if (s->p >= s->end)
                return NULL;
        const char *nl = memchr(s->p, '\n', (size_t)(s->end - s->p));
        size_t len = nl ? (size_t)(nl - s->p) : (size_t)(s->end - s->p);
        const char *line = s->p;
        s->p = nl ? nl + 1 : s->end;
        s->line++;
        s->line_indented = len > 0 && (*line == ' ' || *line == '\t');
        const char *t = line;
        while (t < line + len && (*t == ' ' || *t == '\t'))
                t++;
        if (t < line + len && *t == '[')
                s->header_line = s->line;
        if (len > 0 && line[len - 1] == '\r')
                len--; /* CRLF files */
        if (len + 2 > (size_t)num) {
                diag_add(s->d, s->file, s->line, "line longer than %d characters: continue it on an indented line",
                         num - 2);
                len = 0; /* hand inih an empty line so it does not split the rest into bogus keys */
        }
        memcpy(buf, line, len);
        buf[len] = '\n';
        buf[len + 1] = '\0';
        return buf;
}

static void flush(struct stream *s)
{
        if (!s->key)
                return;
        s->fn(s->user, s->section, s->section_line, s->key, s->value.s ? s->value.s : "", s->key_line);
        free(s->section);
        free(s->key);
        free(sbuf_steal(&s->value));
        s->section = s->key = NULL;
}

static int handler(void *userdata, const char *section, const char *name, const char *value)
{
        struct stream *s = userdata;
        if (!streq(section, s->cur_section)) {
                /* inih reports the section only with its first key: remember where it began */
                free(s->cur_section);
                s->cur_section = xstrdup(section);
                s->cur_section_line = s->header_line;
        }
        if (s->line_indented && s->key && streq(name, s->key) && streq(section, s->section)) {
                sbuf_add(&s->value, " ");
                sbuf_add(&s->value, value);
                return 1;
        }
        flush(s);
        s->section = xstrdup(section);
        s->section_line = s->cur_section_line;
        s->key = xstrdup(name);
        sbuf_add(&s->value, value);
        s->key_line = s->line;
        return 1;
}

int ini_load_buffer(const char *file, const char *data, size_t len, ini_key_fn fn, void *user, struct diags *d)
{
        size_t before = d->msgs.n;
        struct stream s = {.file = file, .p = data, .end = data + len, .d = d, .fn = fn, .user = user};
        if (memchr(data, '\0', len)) {
                diag_add(d, file, 0, "binary content (NUL bytes): not an INI file");
                return -EINVAL;
        }
        int rc = ini_parse_stream(reader, &s, handler, &s);
        flush(&s);
        free(s.cur_section);
        if (rc > 0)
                diag_add(d, file, (unsigned)rc, "syntax error (expected [section], key = value, or a comment)");
        return d->msgs.n > before ? -EINVAL : 0;
}

int ini_load_file(const char *path, ini_key_fn fn, void *user, struct diags *d)
{
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int rc = read_user_file(path, HOST_FILE_MAX, &data, &len);
        if (rc < 0) {
                _cleanup_free_ char *why = read_user_file_why(rc, HOST_FILE_MAX, "a profile or rule file");
                diag_add(d, path, 0, "cannot read: %s", why);
                return rc;
        }
        return ini_load_buffer(path, data, len, fn, user, d);
}

/* PATH opened for ini_read_input: -EINVAL when it is not a regular file (read_user_file's code). */
static int open_input(struct root *root, const char *path)
{
        _cleanup_close_ int fd = root ? root_open_input(root, path)
                                      : open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return fd == -ENOTREG ? -EINVAL : root ? fd : -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return -EINVAL;
        return TAKE_FD(fd);
}

/* ini_read_input, and with OPTIONAL a file that is not there is -ENOENT with nothing said in D. */
static int read_input(struct root *root, const char *path, const char *what, bool optional, char **ret,
                      size_t *ret_len, struct diags *d)
{
        _cleanup_close_ int fd = open_input(root, path);
        int rc = fd < 0 ? fd : 0;
        if (rc == 0) {
                /* the messages name the file on this machine, as trust_problem's walk sees it */
                _cleanup_free_ char *shown = root ? root_host_path(root, path) : xstrdup(path);
                _cleanup_free_ char *why = trust_opened_problem(fd, shown);
                if (why) {
                        diag_add(d, path, 0,
                                 "refused: %s; llmtune runs as root and takes rules, profiles and its configuration "
                                 "only from files that no other user can change (chmod go-w, or chown root)",
                                 why);
                        return -EPERM;
                }
                rc = read_fd_capped(fd, HOST_FILE_MAX, ret, ret_len);
        }
        if (rc < 0 && !(optional && rc == -ENOENT)) {
                _cleanup_free_ char *why = read_user_file_why(rc, HOST_FILE_MAX, what);
                diag_add(d, path, 0, "cannot read: %s", why);
        }
        return rc;
}

int ini_read_input(struct root *root, const char *path, const char *what, char **ret, size_t *ret_len,
                   struct diags *d)
{
        return read_input(root, path, what, false, ret, ret_len, d);
}

int ini_read_optional(struct root *root, const char *path, const char *what, char **ret, size_t *ret_len,
                      struct diags *d)
{
        return read_input(root, path, what, true, ret, ret_len, d);
}

int ini_input_load(struct root *root, const char *path, const char *what, ini_file_fn fn, void *user,
                   struct diags *d)
{
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int rc = ini_read_input(root, path, what, &data, &len, d);
        return rc < 0 ? rc : fn(user, path, data, len, d);
}

/* The *.ini names of the host directory DIR, sorted. */
static int host_list(const char *dir, struct strv *ret)
{
        _cleanup_closedir_ DIR *dp = opendir(dir);
        if (!dp)
                return -errno;
        struct dirent *de;
        while ((de = readdir(dp)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        strv_add(ret, de->d_name);
        strv_sort(ret);
        return 0;
}

int ini_dir_load(struct root *root, const char *dir, const char *what, const char *skip, ini_file_fn fn, void *user,
                 struct diags *d, size_t *ret_n)
{
        _cleanup_strv_ struct strv names = {0};
        int rc = root ? root_list(root, dir, &names) : host_list(dir, &names);
        if (ret_n)
                *ret_n = 0;
        if (rc < 0) {
                if (!root_gone(rc))
                        diag_add(d, dir, 0, "cannot list: %s", strerror(-rc));
                return rc;
        }
        for (size_t i = 0; i < names.n; i++) {
                if (!endswith(names.v[i], ".ini") || names.v[i][0] == '.')
                        continue;
                if (ret_n)
                        (*ret_n)++;
                _cleanup_free_ char *p = xasprintf("%s/%s", dir, names.v[i]);
                if (skip && streq(p, skip))
                        continue;
                if (ini_input_load(root, p, what, fn, user, d) < 0)
                        rc = -EINVAL;
        }
        return rc;
}
