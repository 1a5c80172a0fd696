/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel command line's keys: see cmdline.h. */
#include "facts/readers/cmdline.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"

/* The next word of *P (lib/cmdline.c next_arg: white space inside double quotes does not end it),
 * its quotes removed; NULL at the end. */
static char *next_word(const char **p)
{
        const char *s = *p;
        while (isspace((unsigned char)*s))
                s++;
        if (!*s) {
                *p = s;
                return NULL;
        }
        const char *e = s;
        for (bool quoted = false; *e && (quoted || !isspace((unsigned char)*e)); e++)
                quoted ^= *e == '"';
        *p = e;
        char *w = xmalloc((size_t)(e - s) + 1), *o = w;
        for (const char *c = s; c < e; c++)
                if (*c != '"')
                        *o++ = *c;
        *o = '\0';
        return w;
}

/* The first LEN bytes of A are the key B, '-' and '_' alike. */
static bool key_eq(const char *a, size_t len, const char *b)
{
        if (strlen(b) != len)
                return false;
        for (size_t i = 0; i < len; i++)
                if ((a[i] == '-' ? '_' : a[i]) != (b[i] == '-' ? '_' : b[i]))
                        return false;
        return true;
}

bool cmdline_get_key(const char *cmdline, const char *key, bool (*accept)(const char *value), char **ret_value)
{
        bool found = false;
        char *value = NULL;
        const char *p = cmdline ? cmdline : "";
        for (char *w; (w = next_word(&p));) {
                char *eq = strchr(w, '=');
                const char *v = eq ? eq + 1 : NULL;
                if (key_eq(w, eq ? (size_t)(eq - w) : strlen(w), key) && (!accept || accept(v))) {
                        free(value);
                        value = v ? xstrdup(v) : NULL;
                        found = true;
                }
                free(w);
        }
        if (ret_value)
                *ret_value = value;
        else
                free(value);
        return found;
}

/* 1, 0, or -1 when V is not a boolean (systemd's parse_boolean). */
static int boolean(const char *v)
{
        static const char *const yes[] = {"1", "yes", "y", "true", "t", "on"}, *const no[] = {"0", "no", "n", "false", "f", "off"};
        for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
                if (strcasecmp(v, yes[i]) == 0)
                        return 1;
                if (strcasecmp(v, no[i]) == 0)
                        return 0;
        }
        return -1;
}

static bool is_boolean(const char *v) { return !v || boolean(v) >= 0; }

bool cmdline_get_bool(const char *cmdline, const char *key, bool *ret)
{
        _cleanup_free_ char *v = NULL;
        if (!cmdline_get_key(cmdline, key, is_boolean, &v))
                return false;
        *ret = !v || boolean(v) == 1;
        return true;
}
