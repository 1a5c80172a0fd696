/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "base/ini-load.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdio.h>
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
