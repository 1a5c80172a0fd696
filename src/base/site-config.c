/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "base/site-config.h"

#include <errno.h>
#include <string.h>

struct loader {
        struct site_config *c;
        struct diags *d;
};

static const char *const fail_on_values[] = {"critical", "warning", "info", NULL};

static int parse_bool(const char *v)
{
        if (streq(v, "true") || streq(v, "yes") || streq(v, "1"))
                return 1;
        if (streq(v, "false") || streq(v, "no") || streq(v, "0"))
                return 0;
        return -1;
}

static void on_key(void *user, const char *section, unsigned section_line, const char *key, const char *value,
                   unsigned line)
{
        struct loader *l = user;
        struct site_config *c = l->c;
        (void)section_line;
        if (streq(section, "") || streq(section, "llmtune")) {
                if (!streq(key, "profile")) {
                        diag_add(l->d, SITE_CONFIG_PATH, line, "unknown key '%s' (profile)", key);
                        return;
                }
                bool ok = *value != '\0';
                for (const char *s = value; *s; s++)
                        ok &= (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_';
                if (!ok)
                        diag_add(l->d, SITE_CONFIG_PATH, line, "profile '%s': a profile name (lowercase letters, digits, '-', '_')",
                                 value);
                else if (c->profile)
                        diag_add(l->d, SITE_CONFIG_PATH, line, "profile given twice (first at line %u)", c->profile_line);
                else {
                        c->profile = xstrdup(value);
                        c->profile_line = line;
                }
        } else if (streq(section, "audit")) {
                bool ok = false;
                for (size_t i = 0; fail_on_values[i]; i++)
                        ok |= streq(value, fail_on_values[i]);
                if (!streq(key, "fail_on"))
                        diag_add(l->d, SITE_CONFIG_PATH, line, "unknown key '%s' in [audit] (fail_on)", key);
                else if (!ok)
                        diag_add(l->d, SITE_CONFIG_PATH, line, "fail_on '%s': critical, warning or info", value);
                else {
                        free(c->fail_on);
                        c->fail_on = xstrdup(value);
                }
        } else if (streq(section, "apply") || streq(section, "rollback")) {
                int b = parse_bool(value);
                if (!streq(key, "wait"))
                        diag_add(l->d, SITE_CONFIG_PATH, line, "unknown key '%s' in [%s] (wait)", key, section);
                else if (b < 0)
                        diag_add(l->d, SITE_CONFIG_PATH, line, "wait '%s': true or false", value);
                else
                        *(streq(section, "apply") ? &c->apply_wait : &c->rollback_wait) = b;
        } else
                diag_add(l->d, SITE_CONFIG_PATH, line, "unknown section [%s] (llmtune, audit, apply, rollback)", section);
}

int site_config_load(struct root *r, struct site_config *ret, struct diags *d)
{
        *ret = (struct site_config){.apply_wait = -1, .rollback_wait = -1};
        _cleanup_free_ char *data = NULL;
        size_t len;
        /* Read as a profile is (the pin chooses one): judged on what is read, by the one trust policy.
         * A file that cannot be read is an error: the pin could be in there, and reading on without
         * it would pick another profile. */
        int rc = ini_read_optional(r, SITE_CONFIG_PATH, "the site configuration", &data, &len, d);
        if (rc == -ENOENT)
                return 0;
        if (rc < 0)
                return rc;
        ret->present = true;
        size_t before = d->msgs.n;
        struct loader l = {ret, d};
        ini_load_buffer(SITE_CONFIG_PATH, data, len, on_key, &l, d);
        return d->msgs.n > before ? -EINVAL : 0;
}

void site_config_done(struct site_config *c)
{
        free(c->profile);
        free(c->fail_on);
        *c = (struct site_config){.apply_wait = -1, .rollback_wait = -1};
}

/* Is LINE (without its newline) "profile = ..." or "profile: ..."? */
static bool is_profile_line(const char *line, size_t len)
{
        size_t i = 0;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
                i++;
        if (len - i < 7 || strncmp(line + i, "profile", 7) != 0)
                return false;
        i += 7;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
                i++;
        return i < len && (line[i] == '=' || line[i] == ':');
}

char *site_config_with_profile(const char *data, const char *profile)
{
        struct sbuf out = {0};
        bool done = false, global = true;
        const char *p = data ? data : "";
        if (!data)
                sbuf_add(&out, "# llmtune site configuration: see llmtune(1), CONFIGURATION.\n");
        /* Replace the pin where it stands (the top, or [llmtune]); other lines are untouched. */
        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                const char *t = p;
                while (t < p + len && (*t == ' ' || *t == '\t'))
                        t++;
                if (t < p + len && *t == '[') {
                        if (!done && profile && global) {
                                sbuf_addf(&out, "profile = %s\n", profile);
                                done = true;
                        }
                        global = len - (size_t)(t - p) >= 9 && strncmp(t, "[llmtune]", 9) == 0;
                }
                if (global && is_profile_line(p, len)) {
                        if (profile && !done)
                                sbuf_addf(&out, "profile = %s\n", profile);
                        done = true;
                } else {
                        sbuf_addn(&out, p, len);
                        sbuf_add(&out, "\n");
                }
                p += len + (nl ? 1 : 0);
        }
        if (!done && profile) /* no section at all: the pin ends the file */
                sbuf_addf(&out, "profile = %s\n", profile);
        return out.s ? sbuf_steal(&out) : xstrdup("");
}
