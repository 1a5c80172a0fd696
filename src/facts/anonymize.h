/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `llmtune gather --anonymize`: values that identify a machine are replaced in the gathered
 * content, consistently, so that an audit of the archive finds exactly what it found before:
 *  - MAC addresses (6 bytes, "aa:bb:cc:dd:ee:ff"), InfiniBand GUIDs ("xxxx:xxxx:xxxx:xxxx"), the
 *    GUID half of GIDs (8 groups of 4) and of IPoIB hardware addresses (20 bytes): the vendor
 *    part (OUI, first 3 bytes; the GID/IPoIB prefix) is kept, the rest replaced;
 *  - serial numbers and UUIDs of the board, chassis, product (DMI) and devices (files named
 *    *serial*, product_uuid): the value is replaced by "ANON-" and 12 hex digits;
 *  - the host name, as a whole word: replaced by "host-" and 8 hex digits.
 * Each replacement is an HMAC-SHA-256 of the original under a key drawn for this run, so the same
 * value always gives the same replacement within one archive (a MAC in /sys/class/net and in a
 * GID stays the same MAC) and cannot be reversed without the key, which is never stored.
 * All-zero and all-ones addresses (none, broadcast) are kept: they say something, identify nothing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct anonymizer;

/* HOST: the host name to replace (NULL or "localhost": none). KEY_HEX (tests) fixes the key. */
struct anonymizer *anonymizer_new(const char *host);
struct anonymizer *anonymizer_new_key(const char *host, const unsigned char key[32]);
/* Frees A (NULL is fine) and returns NULL: `a = anonymizer_free(a);`. */
struct anonymizer *anonymizer_free(struct anonymizer *a);

/* The replacement of the host name (caller frees). */
char *anonymize_host(struct anonymizer *a, const char *host);
/* Anonymize file PATH's content; returns true and a new buffer (caller frees) when it changed. */
bool anonymize_content(struct anonymizer *a, const char *path, const char *data, size_t len, char **ret,
                       size_t *ret_len);
/* A string of the command line with the host name replaced (caller frees). */
char *anonymize_text(struct anonymizer *a, const char *s);
