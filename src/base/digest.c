/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "base/digest.h"

#include <openssl/evp.h>
#include <string.h>

void digest_hex(const unsigned char *md, size_t n, char *out)
{
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[md[i] >> 4];
                out[2 * i + 1] = digits[md[i] & 15];
        }
        out[2 * n] = '\0';
}

void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1])
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
        digest_hex(md, mdlen < 32 ? mdlen : 32, out);
}

bool sha256_hex_valid(const char *s)
{
        if (!s || strlen(s) != SHA256_HEX_LEN)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}
