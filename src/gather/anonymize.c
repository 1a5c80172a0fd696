/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Consistent replacement of identifying values in gathered content (anonymize.h). */
#include "gather/anonymize.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <fnmatch.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>
#include <sys/random.h>

#include "gather/anonymize-ip.h"
#include "base/util.h"

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

/* The shape of a run of hex groups separated by ':' at S (LEN chars): *groups of *width digits each
 * (false when the groups differ in width or one is empty). */
static bool group_shape(const char *s, size_t len, size_t *groups, size_t *width)
{
        size_t n = 1, glen = 0, gw = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] != ':') {
                        glen++;
                        continue;
                }
                if (glen == 0 || (gw && glen != gw))
                        return false;
                gw = glen;
                glen = 0;
                n++;
        }
        *groups = n;
        *width = gw;
        return glen == gw;
}

/* Which addresses are rewritten: GROUPS groups of WIDTH digits; the first KEEP bytes stay (an OUI,
 * a GID's subnet prefix), the identifying bytes start at GUID_FROM. */
static const struct address_kind {
        size_t width, groups, keep, guid_from;
} address_kinds[] = {
        {2, 6, 3, 0},           /* MAC: the OUI stays */
        {4, 4, 3, 0},           /* GUID */
        {4, 8, 8 + 3, 8},       /* GID: subnet prefix + the GUID's OUI */
        {2, 20, 12 + 3, 12},    /* IPoIB: flags/QPN + GID prefix + the GUID's OUI */
};

/* The NBYTES bytes the hex digits of S (LEN chars, ':' between groups) spell, into B. */
static bool group_bytes(const char *s, size_t len, unsigned char *b, size_t nbytes)
{
        size_t k = 0;
        for (size_t i = 0; i < len && k < nbytes; i++) {
                if (s[i] == ':')
                        continue;
                int hi = hexval(s[i]), lo = hexval(s[i + 1]);
                if (hi < 0 || lo < 0)
                        return false;
                b[k++] = (unsigned char)(hi << 4 | lo);
                i++;
        }
        return true;
}

/* B written back into the hex digits of S, in the case S had. */
static void group_write(char *s, size_t len, const unsigned char *b, size_t nbytes)
{
        bool upper = false;
        for (size_t i = 0; i < len; i++)
                upper |= s[i] >= 'A' && s[i] <= 'F';
        size_t k = 0;
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

/* All zero or all ones: a placeholder, not an identity. */
static bool placeholder(const unsigned char *b, size_t n)
{
        bool zero = true, ones = true;
        for (size_t i = 0; i < n; i++) {
                zero &= b[i] == 0;
                ones &= b[i] == 0xff;
        }
        return zero || ones;
}

/*
 * A run of hex groups separated by ':' at S (LEN chars, not preceded/followed by a hex digit or
 * ':'): if it is a MAC, GUID, GID or IPoIB address, rewrite the identifying bytes in place.
 */
static void address(struct anonymizer *a, char *s, size_t len)
{
        size_t groups, gw;
        if (!group_shape(s, len, &groups, &gw))
                return;
        const struct address_kind *kind = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(address_kinds); i++)
                if (address_kinds[i].width == gw && address_kinds[i].groups == groups)
                        kind = &address_kinds[i];
        if (!kind)
                return;
        size_t nbytes = groups * gw / 2, keep = kind->keep, guid_from = kind->guid_from;
        unsigned char b[32];
        if (!group_bytes(s, len, b, nbytes) || placeholder(b + guid_from, nbytes - guid_from))
                return;
        /* Keyed on the identifying bytes only (a MAC, or the GUID), so that the same GUID in a
         * node_guid file and inside a GID gets the same replacement. */
        unsigned char md[32];
        mac_of(a, nbytes - guid_from == 6 ? "mac:" : "guid:", b + guid_from, nbytes - guid_from, md);
        for (size_t i = keep; i < nbytes; i++)
                b[i] = md[i - keep];
        group_write(s, len, b, nbytes);
}

static bool ishexc(char c) { return hexval(c) >= 0; }

static bool serial_file(const char *path)
{
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        return strstr(base, "serial") || streq(base, "product_uuid");
}

/* ---- identifiers of any shape: UUIDs, volume ids, serials in the nvidia-smi capture ---------------- */

/* C's class, the characters a replacement of C is drawn from: digits, a-f, A-F (hex stays hex),
 * the other letters of C's case. False where C has none (a '-', a ':': it stays). */
static bool shape_class(char c, char *first, unsigned *size)
{
        unsigned char u = (unsigned char)c;
        if (isdigit(u))
                *first = '0', *size = 10;
        else if (isxdigit(u))
                *first = islower(u) ? 'a' : 'A', *size = 6;
        else if (isalpha(u))
                *first = islower(u) ? 'a' : 'A', *size = 26;
        else
                return false;
        return true;
}

/* S (N chars) replaced in place by a value of the same shape keyed on it (lower case): each
 * character drawn from its class. The same value gives the same replacement in any case and wherever
 * it is (fstab, a link name). A short value would come out as itself now and then (a 3-digit board id
 * one time in a thousand): then its first character that has a class moves on by one in it, so the
 * source value is never left, and the replacement still depends on the value and the key alone. */
static void shape_replace(struct anonymizer *a, char *s, size_t n)
{
        _cleanup_free_ char *low = xstrndup(s, n);
        for (char *c = low; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        unsigned char md[32];
        mac_of(a, "id:", low, n, md);
        bool same = true;
        for (size_t i = 0; i < n; i++) {
                char first;
                unsigned size;
                if (!shape_class(s[i], &first, &size))
                        continue;
                unsigned v = md[i % 32] ^ (unsigned)(i / 32 * 0x9d);
                s[i] = (char)(first + v % size);
                same = same && tolower((unsigned char)s[i]) == low[i];
        }
        for (size_t i = 0; same && i < n; i++) {
                char first;
                unsigned size;
                if (shape_class(s[i], &first, &size)) {
                        s[i] = (char)(first + ((unsigned)(s[i] - first) + 1) % size);
                        same = false;
                }
        }
}

/* Well-known UUIDs that say what something is, never which one: GPT partition types the probes
 * read (the Discoverable Partitions Specification), the nil UUID. */
static const char *const known_uuids[] = {
        "0657fd6d-a4ab-43c4-84e5-0933c84b4f4f", /* Linux swap */
        "c12a7328-f81f-11d2-ba4b-00a0c93ec93b", /* EFI system */
        "0fc63daf-8483-4772-8e79-3d69d8477de4", /* Linux filesystem */
        "4f68bce3-e8cd-4db1-96e7-fbcaf984b709", /* root, x86-64 */
        "933ac7e1-2eb4-4f13-b844-0e14e2aef915", /* /home */
        "a19d880f-05fc-4d3b-a006-743f0f84911e", /* Linux RAID */
        "e6d6d379-f507-44c2-a23c-238f2a3df928", /* Linux LVM */
        "00000000-0000-0000-0000-000000000000",
};

/* Is S (36 chars) 8-4-4-4-12 hex? */
static bool uuid_shape(const char *s)
{
        for (int i = 0; i < 36; i++)
                if ((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' : !ishexc(s[i]))
                        return false;
        return true;
}

static bool known_uuid(const char *s)
{
        for (size_t i = 0; i < ARRAY_SIZE(known_uuids); i++)
                if (strncasecmp(s, known_uuids[i], 36) == 0)
                        return true;
        return false;
}

/* An identifier starts at I: not inside a longer run of hex digits (a '-' before counts only
 * when a hex digit is before it). */
static bool id_start(const char *c, size_t i)
{
        return i == 0 || (!ishexc(c[i - 1]) && !(c[i - 1] == '-' && i >= 2 && ishexc(c[i - 2])));
}

static bool id_end(const char *c, size_t len, size_t j)
{
        return j == len || (!ishexc(c[j]) && !(c[j] == '-' && j + 1 < len && ishexc(c[j + 1])));
}

/* UUIDs (GPU-..., filesystem and partition UUIDs), and what follows UUID= or PARTUUID= (a FAT
 * volume id, 1A2B-3C4D) in the copy C of LEN chars. */
static void uuids(struct anonymizer *a, char *c, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                if (i + 36 <= len && id_start(c, i) && uuid_shape(c + i) && id_end(c, len, i + 36)) {
                        if (!known_uuid(c + i))
                                shape_replace(a, c + i, 36);
                        i += 35;
                } else if ((i >= 5 && strncmp(c + i - 5, "UUID=", 5) == 0) && ishexc(c[i]) && id_start(c, i)) {
                        size_t j = i;
                        while (j < len && (ishexc(c[j]) || c[j] == '-'))
                                j++;
                        if (j - i != 36)
                                shape_replace(a, c + i, j - i);
                        i = j;
                }
        }
}

/* The nvidia-smi capture (nvidia-smi -q -x): the GPU's serial number and board id (a UUID is
 * one by its shape, above). The value keeps its shape and a "0x". */
static void xml_ids(struct anonymizer *a, char *c, size_t len)
{
        static const char *const tags[] = {"<serial>", "<board_id>"};
        for (size_t t = 0; t < ARRAY_SIZE(tags); t++)
                for (char *p = strstr(c, tags[t]); p; p = strstr(p + 1, tags[t])) {
                        char *v = p + strlen(tags[t]);
                        char *end = strchr(v, '<');
                        if (!end)
                                break;
                        if (strncmp(v, "0x", 2) == 0)
                                v += 2;
                        if (end > v && strncmp(v, "N/A", 3) != 0)
                                shape_replace(a, v, (size_t)(end - v));
                }
        (void)len;
}

/* "Serial Number: 1650124014249", "SerialNumber: X", "serial=X" in text (the NVIDIA driver and
 * USB log the boards' serials at boot): the value keeps its shape. */
static void serial_phrases(struct anonymizer *a, char *c, size_t len)
{
        for (char *p = strcasestr(c, "serial"); p; p = strcasestr(p + 6, "serial")) {
                char *v = p + 6;
                if (strncasecmp(v, " number", 7) == 0)
                        v += 7;
                else if (strncasecmp(v, "number", 6) == 0)
                        v += 6;
                size_t sep = strspn(v, ":= ");
                if (!sep || sep > 3 || (size_t)(v - c) + sep >= len)
                        continue;
                v += sep;
                size_t n = strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_");
                if (n)
                        shape_replace(a, v, n);
        }
}

/* ---- MAC addresses, GUIDs, GIDs ------------------------------------------------------------- */

static void mac_replace(void *ctx, uint8_t m[6]);

/* Colon runs (address()), and MACs written with '-' (aa-bb-cc-dd-ee-ff), in the copy C. */
static void hw_addresses(struct anonymizer *a, char *c, size_t len)
{
        for (size_t i = 0; i < len;) {
                if (!ishexc(c[i]) || (i > 0 && (ishexc(c[i - 1]) || c[i - 1] == ':'))) {
                        i++;
                        continue;
                }
                size_t j = i;
                while (j < len && (ishexc(c[j]) || c[j] == ':'))
                        j++;
                if (j - i >= 17)
                        address(a, c + i, j - i);
                if (j - i == 2 && i + 17 <= len && c[i + 2] == '-' && id_start(c, i) && id_end(c, len, i + 17)) {
                        char t[18];
                        memcpy(t, c + i, 17);
                        t[17] = '\0';
                        bool shape = true;
                        for (int k = 0; k < 17; k++)
                                shape &= k % 3 == 2 ? t[k] == '-' : ishexc(t[k]);
                        if (shape) {
                                for (int k = 2; k < 17; k += 3)
                                        t[k] = ':';
                                address(a, t, 17);
                                for (int k = 2; k < 17; k += 3)
                                        t[k] = '-';
                                memcpy(c + i, t, 17);
                                j = i + 17;
                        }
                }
                i = j;
        }
}

/* ---- IP addresses ----------------------------------------------------------------------------- */

static unsigned ip_prf(void *ctx, const char *tag, unsigned i, const uint8_t *prefix, unsigned nbytes)
{
        unsigned char buf[1 + 16], md[32];
        buf[0] = (unsigned char)i;
        memcpy(buf + 1, prefix, nbytes);
        mac_of(ctx, tag, buf, 1 + nbytes, md);
        return md[0];
}

static void mac_replace(void *ctx, uint8_t m[6])
{
        char t[18];
        snprintf(t, sizeof(t), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
        address(ctx, t, 17);
        for (int k = 0; k < 6; k++)
                m[k] = (uint8_t)(hexval(t[3 * k]) << 4 | hexval(t[3 * k + 1]));
}

static bool hex_bytes(const char *s, uint8_t *out, unsigned n)
{
        for (unsigned i = 0; i < n; i++) {
                int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return false;
                out[i] = (uint8_t)(hi << 4 | lo);
        }
        return true;
}

static void put_hex(char *s, const uint8_t *b, unsigned n, bool upper)
{
        for (unsigned i = 0; i < n; i++) {
                char t[3];
                snprintf(t, sizeof(t), upper ? "%02X" : "%02x", b[i]);
                s[2 * i] = t[0];
                s[2 * i + 1] = t[1];
        }
}

/* 32 hex digits at S: an IPv6 address as /proc/net prints it, masked to PLEN (129: not). */
static void ipv6_hex(struct anonymizer *a, char *s, unsigned plen)
{
        uint8_t b[16];
        if (hex_bytes(s, b, 16)) {
                anon_ipv6(b, plen, ip_prf, mac_replace, a);
                put_hex(s, b, 16, false);
        }
}

/* 8 hex digits at S: an IPv4 address as /proc/net/route prints it (the __be32 as a host-order
 * number: bytes reversed on a little-endian machine, as every such machine has them). */
static void ipv4_hex(struct anonymizer *a, char *s, unsigned plen)
{
        uint8_t b[4], r[4];
        if (!hex_bytes(s, b, 4))
                return;
        for (int i = 0; i < 4; i++)
                r[i] = b[3 - i];
        if (!r[0] && !r[1] && !r[2] && !r[3])
                return;
        anon_ipv4(r, plen, ip_prf, a);
        for (int i = 0; i < 4; i++)
                b[i] = r[3 - i];
        put_hex(s, b, 4, true);
}

/* The whitespace-separated fields of LINE (N chars) into F (at most MAX), as offsets. */
static size_t fields(const char *line, size_t n, size_t *f, size_t *flen, size_t max)
{
        size_t k = 0;
        for (size_t i = 0; i < n && k < max;) {
                while (i < n && isspace((unsigned char)line[i]))
                        i++;
                if (i == n)
                        break;
                f[k] = i;
                while (i < n && !isspace((unsigned char)line[i]))
                        i++;
                flen[k] = i - f[k];
                k++;
        }
        return k;
}

static unsigned mask_len4(const char *hex)
{
        uint8_t b[4];
        if (!hex_bytes(hex, b, 4))
                return 33;
        uint32_t m = (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
        unsigned n = 0;
        while (n < 32 && (m & (0x80000000u >> n)))
                n++;
        return n;
}

/* /proc/net/route, ipv6_route, if_inet6: fixed-width hex columns. */
static void proc_net(struct anonymizer *a, const char *base, char *c, size_t len)
{
        for (size_t at = 0; at < len;) {
                char *nl = memchr(c + at, '\n', len - at);
                size_t n = nl ? (size_t)(nl - (c + at)) : len - at;
                char *line = c + at;
                size_t f[12], fl[12];
                size_t k = fields(line, n, f, fl, 12);
                if (streq(base, "route") && k >= 8 && fl[1] == 8 && fl[2] == 8 && fl[7] == 8) {
                        ipv4_hex(a, line + f[1], mask_len4(line + f[7]));
                        ipv4_hex(a, line + f[2], 33);
                } else if (streq(base, "if_inet6") && k >= 1 && fl[0] == 32)
                        ipv6_hex(a, line + f[0], 129);
                else if (streq(base, "ipv6_route") && k >= 5 && fl[0] == 32 && fl[2] == 32 && fl[4] == 32) {
                        ipv6_hex(a, line + f[0], (unsigned)strtoul(line + f[1], NULL, 16));
                        ipv6_hex(a, line + f[2], (unsigned)strtoul(line + f[3], NULL, 16));
                        ipv6_hex(a, line + f[4], 129);
                }
                at += n + 1;
        }
}

/* "/LEN" after an address ending at C+J: *PLEN (MAX + 1 when there is none or it is above MAX),
 * and where the address and its length end. */
static size_t prefix_len(const char *c, size_t len, size_t j, unsigned max, unsigned *plen)
{
        *plen = max + 1;
        if (j + 1 >= len || c[j] != '/' || !isdigit((unsigned char)c[j + 1]))
                return j;
        unsigned long v = strtoul(c + j + 1, NULL, 10);
        *plen = v <= max ? (unsigned)v : max + 1;
        size_t end = j + 1;
        while (end < len && isdigit((unsigned char)c[end]))
                end++;
        return end;
}

/* A dotted IPv4 address at C+I (four numbers of at most 255, not a longer dotted version), with an
 * optional "/LEN": its replacement into B, the length consumed, or 0. */
static size_t ipv4_text(struct anonymizer *a, const char *c, size_t len, size_t i, struct sbuf *b)
{
        if (i > 0 && (isalnum((unsigned char)c[i - 1]) || strchr("._-", c[i - 1])))
                return 0;
        uint8_t r[4];
        size_t j = i;
        for (int k = 0; k < 4; k++) {
                size_t d = 0;
                unsigned v = 0;
                while (j < len && isdigit((unsigned char)c[j]) && d < 4)
                        v = v * 10 + (unsigned)(c[j++] - '0'), d++;
                if (d == 0 || d > 3 || v > 255 || (k < 3 && (j >= len || c[j++] != '.')))
                        return 0;
                r[k] = (uint8_t)v;
        }
        if (j < len && (isalnum((unsigned char)c[j]) || c[j] == '_' || (c[j] == '.' && j + 1 < len && isdigit((unsigned char)c[j + 1]))))
                return 0;
        unsigned plen;
        size_t end = prefix_len(c, len, j, 32, &plen);
        anon_ipv4(r, plen, ip_prf, a);
        sbuf_addf(b, "%u.%u.%u.%u", r[0], r[1], r[2], r[3]);
        sbuf_addn(b, c + j, end - j);
        return end - i;
}

/* An IPv6 address in text at C+I (what inet_pton(3) takes, not a GID, which is done above). */
static size_t ipv6_text(struct anonymizer *a, const char *c, size_t len, size_t i, struct sbuf *b)
{
        if (i > 0 && (isalnum((unsigned char)c[i - 1]) || strchr(":._-", c[i - 1])))
                return 0;
        size_t j = i, colons = 0;
        while (j < len && (ishexc(c[j]) || c[j] == ':' || c[j] == '.') && j - i < 46)
                colons += c[j++] == ':';
        while (j > i && (c[j - 1] == '.' || (c[j - 1] == ':' && !(j - i >= 2 && c[j - 2] == ':'))))
                j--; /* a sentence's full stop or colon */
        if (colons < 2 || (j < len && (isalnum((unsigned char)c[j]) || c[j] == '_')))
                return 0;
        char t[47];
        memcpy(t, c + i, j - i);
        t[j - i] = '\0';
        uint8_t addr[16];
        bool gid = j - i == 39;
        for (size_t k = 0; gid && k < 39; k++)
                gid = k % 5 == 4 ? t[k] == ':' : ishexc(t[k]);
        if (gid || inet_pton(AF_INET6, t, addr) != 1)
                return 0;
        unsigned plen;
        size_t end = prefix_len(c, len, j, 128, &plen);
        anon_ipv6(addr, plen, ip_prf, mac_replace, a);
        char out[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, addr, out, sizeof(out));
        sbuf_add(b, out);
        sbuf_addn(b, c + j, end - j);
        return end - i;
}

/* ---- host names ------------------------------------------------------------------------------- */

/* A host name is replaced everywhere when it cannot be an ordinary word (4 characters or more, or
 * a digit or '-' in it: gpu-017, dgx-a100); a short word (vm, db) only in the files that name the
 * host, since elsewhere "vm" is /proc/sys/vm and vm.swappiness. */
static bool distinctive(const char *host)
{
        return strlen(host) >= 4 || strpbrk(host, "0123456789-");
}

static const char *const host_files[] = {
        "etc/hostname", "etc/hosts", "etc/mailname", "proc/sys/kernel/hostname", "var/lib/llmtune/captures/*",
        "var/log/*",
};

static bool names_host(const char *path)
{
        if (!*path)
                return true; /* the MANIFEST's own strings (anonymize_text) */
        for (size_t i = 0; i < ARRAY_SIZE(host_files); i++)
                if (fnmatch(host_files[i], path, 0) == 0)
                        return true;
        return false;
}

/* The host name at C+I as a whole word, with the domain after it (node17.cluster.example.com):
 * the length it takes, or 0. */
static size_t host_at(const struct anonymizer *a, const char *c, size_t len, size_t i)
{
        size_t hl = strlen(a->host);
        if (i + hl > len || strncasecmp(c + i, a->host, hl) != 0 || (i > 0 && hostch(c[i - 1])))
                return 0;
        size_t j = i + hl;
        if (j < len && hostch(c[j]))
                return 0;
        /* ".label" parts of a domain name (letters first, as a name's labels are) */
        while (j + 1 < len && c[j] == '.' && isalpha((unsigned char)c[j + 1])) {
                size_t k = j + 1;
                while (k < len && (isalnum((unsigned char)c[k]) || c[k] == '-'))
                        k++;
                if (k < len && (c[k] == '_' || c[k] == '/'))
                        break;
                j = k;
        }
        return j - i;
}

/* ---- the content of one file ------------------------------------------------------------------ */

/* What kind of file PATH (root-relative) is, for which replacements apply. */
struct kinds {
        const char *net;    /* route, ipv6_route, if_inet6 under proc/.../net, else NULL */
        bool text_ip;       /* dotted and IPv6 addresses, serials in text: not sysfs or procfs values */
        bool host;          /* the host name (both: never in a binary file, where a length must stay) */
};

static struct kinds kinds_of(const struct anonymizer *a, const char *path, bool binary)
{
        struct kinds k = {0};
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        bool procnet = startswith(path, "proc/") && strstr(path, "/net/");
        if (procnet && (streq(base, "route") || streq(base, "ipv6_route") || streq(base, "if_inet6")))
                k.net = base;
        /* a binary file (a database) gets only replacements of the same length */
        k.text_ip = !binary && !startswith(path, "sys/") &&
                    (!startswith(path, "proc/") || procnet || streq(path, "proc/cmdline"));
        k.host = !binary && a->host && (distinctive(a->host) || names_host(path));
        return k;
}

/* The copy C (LEN chars, fixed-length replacements done) into B with the replacements that change
 * lengths: host names, addresses in text. */
static void rewrite_text(struct anonymizer *a, const struct kinds *k, const char *c, size_t len, struct sbuf *b)
{
        _cleanup_free_ char *fake = k->host ? anonymize_host(a, a->host) : NULL;
        for (size_t i = 0; i < len;) {
                size_t n = k->host ? host_at(a, c, len, i) : 0;
                if (n) {
                        sbuf_add(b, fake);
                        i += n;
                        continue;
                }
                if (k->text_ip && isdigit((unsigned char)c[i]) && (n = ipv4_text(a, c, len, i, b)))
                        i += n;
                else if (k->text_ip && (ishexc(c[i]) || c[i] == ':') && (n = ipv6_text(a, c, len, i, b)))
                        i += n;
                else
                        sbuf_addn(b, c + i++, 1);
        }
}

bool anonymize_content(struct anonymizer *a, const char *path, const char *data, size_t len, char **ret,
                       size_t *ret_len)
{
        struct sbuf b = {0};
        while (*path == '/')
                path++;
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
                /* Replacements of the same length first, in a copy, then those that change it. */
                struct kinds k = kinds_of(a, path, memchr(data, '\0', len) != NULL);
                _cleanup_free_ char *copy = xmalloc(len + 1);
                memcpy(copy, data, len);
                copy[len] = '\0';
                hw_addresses(a, copy, len);
                uuids(a, copy, len);
                if (endswith(path, ".xml"))
                        xml_ids(a, copy, len);
                if (k.net)
                        proc_net(a, k.net, copy, len);
                if (k.text_ip)
                        serial_phrases(a, copy, len);
                rewrite_text(a, &k, copy, len, &b);
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

char *anonymize_path(struct anonymizer *a, const char *path)
{
        char *out = xstrdup(path);
        bool by_uuid = false;
        for (char *c = out; *c;) {
                char *slash = strchr(c, '/');
                size_t n = slash ? (size_t)(slash - c) : strlen(c);
                /* a link named by a volume's id (dev/disk/by-uuid/1A2B-3C4D), or any UUID-shaped name */
                if ((by_uuid && n && strspn(c, "0123456789abcdefABCDEF-") >= n) || (n == 36 && uuid_shape(c) && !known_uuid(c)))
                        shape_replace(a, c, n);
                by_uuid = (n == 7 && strncmp(c, "by-uuid", 7) == 0) || (n == 11 && strncmp(c, "by-partuuid", 11) == 0);
                if (!slash)
                        break;
                c = slash + 1;
        }
        return out;
}
