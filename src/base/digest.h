/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * SHA-256 as lowercase hex, the one spelling of a digest llmtune writes (the change log's chain
 * and backup names, gather's MANIFEST, archive member checks, profile hashes, verify's file
 * hashes).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define SHA256_HEX_LEN 64

/* OUT gets 64 hex digits and a NUL. */
void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1]);

/* N bytes of a finished digest as 2N hex digits and a NUL. */
void digest_hex(const unsigned char *md, size_t n, char *out);

/* Is S a digest as sha256_hex spells it: exactly 64 lowercase hex digits (NULL: no)? */
bool sha256_hex_valid(const char *s);
