/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Consistent replacement of identifying values in gathered content (anonymize.h). */
#include "anonymize.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>
#include <sys/random.h>

#include "util.h"

struct anonymizer {
        unsigned char key[32];
        char *host;
};

struct anonymizer *anonymizer_new_key(const char *host, const unsigned char key[32])
{
        struct anonymizer *a = xcalloc(1, sizeof(*a));
        memcpy(a->key, key, 32);
        if (host && strlen(host) >= 2 && !streq(host, "localhost"))
                a->host = xstrdup(host);
        return a;
}

struct anonymizer *anonymizer_new(const char *host)
{
        unsigned char key[32] = {0};
        size_t got = 0;
        while (got < sizeof(key)) {
                ssize_t n = getrandom(key + got, sizeof(key) - got, 0);
                if (n <= 0)
                        abort(); /* no randomness: never fall back to a guessable key */
                got += (size_t)n;
        }
        return anonymizer_new_key(host, key);
}

struct anonymizer *anonymizer_free(struct anonymizer *a)
{
        if (!a)
                return NULL;
        free(a->host);
        free(a);
        return NULL;
}

static void mac_of(const struct anonymizer *a, const char *tag, const void *in, size_t n, unsigned char out[32])
{
        unsigned char buf[256];
        size_t tl = strlen(tag);
        if (tl + n > sizeof(buf))
                n = sizeof(buf) - tl;
        memcpy(buf, tag, tl);
        memcpy(buf + tl, in, n);
        unsigned len = 32;
        HMAC(EVP_sha256(), a->key, sizeof(a->key), buf, tl + n, out, &len);
}

char *anonymize_host(struct anonymizer *a, const char *host)
{
        unsigned char md[32];
        mac_of(a, "host:", host, strlen(host), md);
        return xasprintf("host-%02x%02x%02x%02x", md[0], md[1], md[2], md[3]);
}

static bool hostch(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_'; }

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/*
 * A run of hex groups separated by ':' at S (LEN chars, not preceded/followed by a hex digit or
 * ':'): if it is a MAC, GUID, GID or IPoIB address, rewrite the identifying bytes in place.
 */
static void address(struct anonymizer *a, char *s, size_t len)
{
        size_t groups = 1, glen = 0, gw = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == ':') {
                        if (glen == 0 || (gw && glen != gw))
                                return;
                        gw = glen;
                        glen = 0;
                        groups++;
                } else
                        glen++;
        }
        if (glen != gw)
                return;
        size_t nbytes = groups * gw / 2, keep, guid_from;
        if (gw == 2 && groups == 6) {
                keep = 3; /* OUI */
                guid_from = 0;
        } else if (gw == 4 && groups == 4) {
                keep = 3;
                guid_from = 0;
        } else if (gw == 4 && groups == 8) {
                keep = 8 + 3; /* GID: subnet prefix + the GUID's OUI */
                guid_from = 8;
        } else if (gw == 2 && groups == 20) {
                keep = 12 + 3; /* IPoIB: flags/QPN + GID prefix + the GUID's OUI */
                guid_from = 12;
        } else
                return;
        unsigned char b[32];
        size_t k = 0;
        bool zero = true, ones = true;
        for (size_t i = 0; i < len && k < nbytes; i++) {
                if (s[i] == ':')
                        continue;
                int hi = hexval(s[i]), lo = hexval(s[i + 1]);
                if (hi < 0 || lo < 0)
                        return;
                b[k++] = (unsigned char)(hi << 4 | lo);
                i++;
        }
        for (size_t i = guid_from; i < nbytes; i++) {
                zero &= b[i] == 0;
                ones &= b[i] == 0xff;
        }
        if (zero || ones)
                return;
        /* Keyed on the identifying bytes only (a MAC, or the GUID), so that the same GUID in a
         * node_guid file and inside a GID gets the same replacement. */
        unsigned char md[32];
        mac_of(a, nbytes - guid_from == 6 ? "mac:" : "guid:", b + guid_from, nbytes - guid_from, md);
        for (size_t i = keep; i < nbytes; i++)
                b[i] = md[i - keep];
        bool upper = false;
        for (size_t i = 0; i < len; i++)
                upper |= s[i] >= 'A' && s[i] <= 'F';
        k = 0;
        for (size_t i = 0; i < len && k < nbytes; i++) {
                if (s[i] == ':')
                        continue;
                char tmp[3];
                snprintf(tmp, sizeof(tmp), upper ? "%02X" : "%02x", b[k++]);
                s[i] = tmp[0];
                s[i + 1] = tmp[1];
                i++;
        }
}

static bool ishexc(char c) { return hexval(c) >= 0; }

static bool serial_file(const char *path)
{
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        return strstr(base, "serial") || streq(base, "product_uuid");
}

bool anonymize_content(struct anonymizer *a, const char *path, const char *data, size_t len, char **ret,
                       size_t *ret_len)
{
        struct sbuf b = {0};
        if (serial_file(path)) {
                size_t end = len;
                while (end > 0 && isspace((unsigned char)data[end - 1]))
                        end--;
                if (end == 0)
                        return false;
                unsigned char md[32];
                mac_of(a, "serial:", data, end, md);
                sbuf_addf(&b, "ANON-%02x%02x%02x%02x%02x%02x", md[0], md[1], md[2], md[3], md[4], md[5]);
                sbuf_addn(&b, data + end, len - end);
        } else {
                /* Addresses first, in a copy (same length), then the host name (length changes). */
                char *copy = xmalloc(len + 1);
                memcpy(copy, data, len);
                copy[len] = '\0';
                for (size_t i = 0; i < len;) {
                        if (!ishexc(copy[i]) || (i > 0 && (ishexc(copy[i - 1]) || copy[i - 1] == ':'))) {
                                i++;
                                continue;
                        }
                        size_t j = i;
                        while (j < len && (ishexc(copy[j]) || copy[j] == ':'))
                                j++;
                        if (j - i >= 17)
                                address(a, copy + i, j - i);
                        i = j;
                }
                size_t hl = a->host ? strlen(a->host) : 0;
                _cleanup_free_ char *fake = a->host ? anonymize_host(a, a->host) : NULL;
                for (size_t i = 0; i < len;) {
                        if (hl && i + hl <= len && memcmp(copy + i, a->host, hl) == 0 && (i == 0 || !hostch(copy[i - 1])) &&
                            (i + hl == len || !hostch(copy[i + hl]))) {
                                sbuf_add(&b, fake);
                                i += hl;
                        } else
                                sbuf_addn(&b, copy + i++, 1);
                }
                free(copy);
        }
        if (!b.s)
                sbuf_addn(&b, "", 0);
        if (b.len == len && memcmp(b.s, data, len) == 0) {
                free(sbuf_steal(&b));
                return false;
        }
        *ret_len = b.len;
        *ret = sbuf_steal(&b);
        return true;
}

char *anonymize_text(struct anonymizer *a, const char *s)
{
        char *out = NULL;
        size_t n;
        if (anonymize_content(a, "", s, strlen(s), &out, &n))
                return out;
        return xstrdup(s);
}
