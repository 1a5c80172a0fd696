/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One check per written file format and field (file-format.h). */
#include "base/file-format.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/parse.h"
#include "base/util.h"

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

static const char *const names[FF__COUNT] = {
        [FF_NCCL_CONF] = "nccl.conf",   [FF_SYSCTL_D] = "sysctl.d", [FF_TMPFILES_D] = "tmpfiles.d",
        [FF_MODPROBE_D] = "modprobe.d", [FF_MODULES_LOAD_D] = "modules-load.d", [FF_FSTAB] = "fstab",
        [FF_LIMITS_D] = "limits.d",     [FF_SYSTEMD] = "a systemd unit or drop-in",
        [FF_GPU_AFFINITY] = "gpu-affinity.conf", [FF_CMDLINE] = "the kernel command line",
};

const char *ff_name(enum file_format fmt) { return (unsigned)fmt < FF__COUNT ? names[fmt] : "?"; }

static bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

static bool has_control(const char *s)
{
        for (; *s; s++)
                if (is_control((unsigned char)*s))
                        return true;
        return false;
}

static bool only(const char *s, const char *set) { return strspn(s, set) == strlen(s); }

static bool is_space(char c) { return c == ' ' || c == '\t'; }

static bool edge_space(const char *s) { return *s && (is_space(s[0]) || is_space(s[strlen(s) - 1])); }

/* What every field of every format refuses: nothing at all, and control characters (a newline
 * would end the line and start another one the reader obeys). */
static const char *basic(const char *v)
{
        if (!v || !*v)
                return "it is empty";
        if (has_control(v))
                return "it holds a control character (a newline would start a line of its own)";
        return NULL;
}

/* A whitespace-separated field: no blank inside, and not read as a comment. */
static const char *word(const char *v)
{
        if (strpbrk(v, " \t"))
                return "it holds a blank, which separates fields";
        if (v[0] == '#')
                return "it starts with '#', which starts a comment";
        return NULL;
}

/* A file name in a drop-in directory: no '/', not hidden, ending in ".conf" (what systemd-sysctl,
 * tmpfiles, modprobe and pam_limits read; the others are skipped). */
static const char *file_name(const char *v)
{
        if (!only(v, ALNUM "_-.@+:"))
                return "a drop-in's file name holds letters, digits and _ - . @ + : only";
        if (v[0] == '.' || v[0] == '-')
                return "a drop-in's file name starts with a letter or digit";
        return endswith(v, ".conf") ? NULL : "a drop-in's file name ends in .conf";
}

static const char *nccl_conf(enum ff_field field, const char *v)
{
        switch (field) {
        case FF_KEY:
                if (!only(v, ALNUM "_") || (v[0] >= '0' && v[0] <= '9'))
                        return "a key holds letters, digits and '_' (an environment variable's name)";
                return strlen(v) > 1023 ? "NCCL reads at most 1023 bytes of a key" : NULL;
        case FF_VALUE:
                if (edge_space(v))
                        return "NCCL keeps blanks around a value literally";
                return strlen(v) > 1023 ? "NCCL reads at most 1023 bytes of a value" : NULL;
        case FF_ITEM:
                if (!only(v, ALNUM "_.-") || v[0] == '-' || v[0] == '.')
                        return "a list item holds letters, digits and _ . - only (',' separates items, ^ = and : "
                               "are list syntax)";
                return strlen(v) > 64 ? "a device or interface name has at most 64 characters" : NULL;
        default: return "not a field of nccl.conf";
        }
}

static const char *sysctl_d(enum ff_field field, const char *v)
{
        switch (field) {
        case FF_KEY:
                if (!only(v, ALNUM "_.-/*"))
                        return "a key holds letters, digits and _ . - / * only";
                return v[0] == '-' || v[0] == '.' || v[0] == '/' ? "a key starts with a letter, digit, '_' or '*' "
                                                                   "('-' would make its failure ignored)"
                                                                 : NULL;
        case FF_VALUE:
                return edge_space(v) ? "sysctl.d trims blanks around a value" : NULL;
        case FF_FILENAME: return file_name(v);
        default: return "not a field of sysctl.d";
        }
}

static const char *tmpfiles_d(enum ff_field field, const char *v)
{
        if ((field == FF_PATH || field == FF_VALUE) && strpbrk(v, "%\\"))
                return "'%' starts a specifier and '\\' an escape in tmpfiles.d";
        switch (field) {
        case FF_PATH:
                if (v[0] != '/')
                        return "a path is absolute";
                return strpbrk(v, " \t\"'") ? "a path holds no blank or quote (field separators and quoting)" : NULL;
        case FF_VALUE:
                return is_space(v[0]) || is_space(v[strlen(v) - 1]) ? "tmpfiles.d trims blanks around an argument"
                                                                    : NULL;
        case FF_FILENAME: return file_name(v);
        default: return "not a field of tmpfiles.d";
        }
}

/* A kernel module's name (modprobe.d, modules-load.d): MODULE_NAME_LEN is 56 with its NUL. */
static const char *module_name(const char *v)
{
        if (!only(v, ALNUM "_-") || v[0] == '-')
                return "a module name holds letters, digits, '_' and '-' only, and starts with a letter or digit";
        return strlen(v) > 55 ? "a module name has at most 55 characters" : NULL;
}

static const char *modprobe_d(enum file_format fmt, enum ff_field field, const char *v)
{
        switch (field) {
        case FF_NAME: return module_name(v);
        case FF_VALUE:
                if (fmt != FF_MODPROBE_D)
                        break;
                if (strchr(v, '\\'))
                        return "'\\' escapes and, at the end of a line, continues it in modprobe.d";
                return edge_space(v) || v[0] == '#' ? "options start and end with a word" : NULL;
        case FF_FILENAME: return file_name(v);
        default: break;
        }
        return fmt == FF_MODPROBE_D ? "not a field of modprobe.d" : "not a field of modules-load.d";
}

static const char *fstab_limits(enum file_format fmt, enum ff_field field, const char *v)
{
        if (field == FF_FIELD)
                return word(v);
        if (fmt == FF_FSTAB && field == FF_OPTION) {
                if (strpbrk(v, ", \t\\\"'"))
                        return "an option holds no ',' (it separates options), blank, '\\' or quote";
                return v[0] == '#' ? "an option starting with '#' would start a comment" : NULL;
        }
        if (fmt == FF_LIMITS_D && field == FF_FILENAME)
                return file_name(v);
        return fmt == FF_FSTAB ? "not a field of fstab" : "not a field of limits.d";
}

/* A unit name (systemd.unit(5)): letters, digits and ":-_.\" with '@' for instances, a type
 * suffix, at most 255 characters. */
static const char *unit_name(const char *v)
{
        if (!only(v, ALNUM ":-_.\\@") || v[0] == '-' || v[0] == '.')
                return "a unit name holds letters, digits and : - _ . \\ @ only";
        if (!strchr(v, '.'))
                return "a unit name ends in its type (.service, .timer, ...)";
        return strlen(v) > 255 ? "a unit name has at most 255 characters" : NULL;
}

static const char *systemd(enum ff_field field, const char *v)
{
        switch (field) {
        case FF_KEY: return only(v, ALNUM "_-") ? NULL : "a setting's name holds letters, digits, '_' and '-' only";
        case FF_VALUE:
                if (v[strlen(v) - 1] == '\\')
                        return "a '\\' at the end continues the line";
                return strchr(v, '%') ? "'%' starts a specifier in unit files" : NULL;
        case FF_NAME: return unit_name(v);
        case FF_FILENAME: return file_name(v);
        default: return "not a field of a systemd unit or drop-in";
        }
}

static const char *gpu_affinity(enum ff_field field, const char *v)
{
        struct pci_addr a;
        switch (field) {
        case FF_FIELD: return word(v);
        case FF_ADDRESS:
                /* The kernel's DOMAIN:BUS:DEV.FN (pci_addr_parse), in lower-case hex as it prints it. */
                if (!only(v, "0123456789abcdef:.") || !pci_addr_parse(v, &a))
                        return "a PCI address is DOMAIN:BUS:DEVICE.FUNCTION in lower-case hex (0000:07:00.0)";
                return NULL;
        default: return "not a field of gpu-affinity.conf";
        }
}

/* One kernel argument, KEY or KEY=VALUE: a key of letters, digits and _ . - (at most 64), a value
 * of letters, digits and _ . , : - (at most 192), neither starting with '-' (a boot loader tool
 * would take it for an option). No blank (it separates arguments), quote, '$', '\\' or '`' (the
 * shell's syntax in grub.d, which sources the file), no '/' (a path is no setting llmtune makes). */
static const char *cmdline(enum ff_field field, const char *v)
{
        if (field != FF_ITEM)
                return "not a field of the kernel command line";
        const char *eq = strchr(v, '=');
        size_t kl = eq ? (size_t)(eq - v) : strlen(v);
        if (kl == 0 || kl > 64 || v[0] == '-' || strspn(v, ALNUM "_.-") != kl)
                return "a kernel argument's key holds letters, digits and _ . - only (at most 64), and starts with "
                       "a letter or digit";
        if (eq && eq[1] && (strlen(eq + 1) > 192 || eq[1] == '-' || !only(eq + 1, ALNUM "_.,:-")))
                return "a kernel argument's value holds letters, digits and _ . , : - only (at most 192), and "
                       "starts with a letter or digit";
        return NULL;
}

/* A limits.conf(5) entry: DOMAIN TYPE ITEM VALUE. */
static const char *line_limits(const char *v)
{
        char d[256], t[256], i[256], val[256], extra;
        if (strlen(v) > 255 || sscanf(v, "%255s %255s %255s %255s %c", d, t, i, val, &extra) != 4)
                return "a limits.d line is DOMAIN TYPE ITEM VALUE";
        return streq(t, "soft") || streq(t, "hard") || streq(t, "-") ? NULL : "a limit's type is soft, hard or -";
}

/* "KEY=VALUE" (systemd) or "KEY = VALUE" (sysctl.d): the key and the value checked as fields. */
static const char *line_key_value(enum file_format fmt, const char *v)
{
        const char *eq = strchr(v, '=');
        if (!eq || eq == v)
                return fmt == FF_SYSTEMD ? "a systemd line is [Section], Key=Value or a comment"
                                         : "a sysctl.d line is key = value or a comment";
        _cleanup_free_ char *key = xstrndup(v, (size_t)(eq - v));
        while (*key && is_space(key[strlen(key) - 1]))
                key[strlen(key) - 1] = '\0';
        const char *value = eq + 1;
        if (fmt == FF_SYSCTL_D) {
                while (is_space(*value))
                        value++;
                /* a leading '-' only says a failure to set the key is ignored */
                const char *why = ff_check(fmt, FF_KEY, key[0] == '-' ? key + 1 : key);
                return why ? why : *value ? ff_check(fmt, FF_VALUE, value) : NULL;
        }
        const char *why = ff_check(fmt, FF_KEY, key);
        return why ? why : *value ? ff_check(fmt, FF_VALUE, value) : NULL;
}

/* A whole line written as it is: blank, a comment, or an entry of the format. */
static const char *line(enum file_format fmt, const char *v)
{
        while (is_space(*v))
                v++;
        if (!*v || *v == '#' || (*v == ';' && fmt != FF_LIMITS_D && fmt != FF_FSTAB))
                return NULL;
        switch (fmt) {
        case FF_LIMITS_D: return line_limits(v);
        case FF_SYSCTL_D: return line_key_value(fmt, v);
        case FF_SYSTEMD:
                if (*v != '[')
                        return line_key_value(fmt, v);
                return strchr(v, ']') == v + strlen(v) - 1 && !strchr(v + 1, '[') ? NULL : "a section line is [NAME]";
        case FF_MODULES_LOAD_D: return ff_check(fmt, FF_NAME, v);
        case FF_MODPROBE_D:
        case FF_TMPFILES_D:
                /* whitespace-separated words, nothing continued or escaped across lines */
                return v[strlen(v) - 1] == '\\' ? "a '\\' at the end would continue the line" : NULL;
        default: return "llmtune writes no line of this format whole";
        }
}

const char *ff_check(enum file_format fmt, enum ff_field field, const char *value)
{
        if (field == FF_COMMENT)
                return value && has_control(value) ? "a comment is one line" : NULL;
        const char *why = basic(value);
        if (why)
                return why;
        if (field == FF_LINE)
                return line(fmt, value);
        switch (fmt) {
        case FF_NCCL_CONF: return nccl_conf(field, value);
        case FF_SYSCTL_D: return sysctl_d(field, value);
        case FF_TMPFILES_D: return tmpfiles_d(field, value);
        case FF_MODPROBE_D:
        case FF_MODULES_LOAD_D: return modprobe_d(fmt, field, value);
        case FF_FSTAB:
        case FF_LIMITS_D: return fstab_limits(fmt, field, value);
        case FF_SYSTEMD: return systemd(field, value);
        case FF_GPU_AFFINITY: return gpu_affinity(field, value);
        case FF_CMDLINE: return cmdline(field, value);
        default: return "not a format llmtune writes";
        }
}

enum file_format ff_of_path(const char *path)
{
        static const struct {
                const char *prefix; /* a directory ends in '/' */
                enum file_format fmt;
        } places[] = {
                {"/etc/nccl.conf", FF_NCCL_CONF},
                {"/etc/sysctl.conf", FF_SYSCTL_D},
                {"/etc/sysctl.d/", FF_SYSCTL_D},
                {"/etc/tmpfiles.d/", FF_TMPFILES_D},
                {"/etc/modprobe.d/", FF_MODPROBE_D},
                {"/etc/modules-load.d/", FF_MODULES_LOAD_D},
                {"/etc/fstab", FF_FSTAB},
                {"/etc/security/limits.conf", FF_LIMITS_D},
                {"/etc/security/limits.d/", FF_LIMITS_D},
                {"/etc/systemd/", FF_SYSTEMD},
                {"/etc/llmtune/gpu-affinity.conf", FF_GPU_AFFINITY},
        };
        for (size_t i = 0; path && i < ARRAY_SIZE(places); i++) {
                const char *p = places[i].prefix;
                if (p[strlen(p) - 1] == '/' ? startswith(path, p) : streq(path, p))
                        return places[i].fmt;
        }
        if (path && startswith(path, "/home/") && endswith(path, "/.nccl.conf"))
                return FF_NCCL_CONF;
        return path && streq(path, "/root/.nccl.conf") ? FF_NCCL_CONF : FF__COUNT;
}

char *ff_escape(const char *value)
{
        struct sbuf b = {0};
        sbuf_add(&b, "");
        for (const unsigned char *p = (const unsigned char *)(value ? value : ""); *p; p++)
                if (*p == '\n')
                        sbuf_add(&b, "\\n");
                else if (*p == '\t')
                        sbuf_add(&b, "\\t");
                else if (*p == '\\')
                        sbuf_add(&b, "\\\\");
                else if (*p < 0x20 || *p >= 0x7f)
                        sbuf_addf(&b, "\\x%02x", *p);
                else
                        sbuf_addn(&b, (const char *)p, 1);
        return sbuf_steal(&b);
}

char *ff_refusal(enum file_format fmt, const char *what, const char *value, const char *from, const char *why)
{
        _cleanup_free_ char *shown = ff_escape(value), *src = from ? ff_escape(from) : NULL;
        return xasprintf("%s '%s'%s%s%s cannot be written%s%s: %s", what, shown, src ? " (from " : "",
                         src ? src : "", src ? ")" : "", fmt < FF__COUNT ? " to " : "",
                         fmt < FF__COUNT ? ff_name(fmt) : "", why);
}

char *ff_comment(enum file_format fmt, const char *text)
{
        (void)fmt; /* the same rule in every format llmtune writes: a comment is one line */
        char *s = xstrdup(text ? text : "");
        for (char *p = s; *p; p++)
                if (is_control((unsigned char)*p))
                        *p = '?';
        return s;
}
