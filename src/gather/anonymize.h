/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `llmtune gather --anonymize`: values that identify a machine are replaced in the gathered
 * content, consistently, so that an audit of the archive finds exactly what it found before:
 *  - MAC addresses (6 bytes, "aa:bb:cc:dd:ee:ff" or "aa-bb-..."), InfiniBand GUIDs
 *    ("xxxx:xxxx:xxxx:xxxx"), the GUID half of GIDs (8 groups of 4) and of IPoIB hardware
 *    addresses (20 bytes): the vendor part (OUI, first 3 bytes; the GID/IPoIB prefix) is kept,
 *    the rest replaced; the MAC inside an EUI-64 IPv6 address becomes the MAC's replacement;
 *  - serial numbers and UUIDs of the board, chassis, product (DMI) and devices (files named
 *    *serial*, product_uuid): the value is replaced by "ANON-" and 12 hex digits;
 *  - every UUID (GPU UUIDs, file system and partition UUIDs in fstab, the kernel command line,
 *    /dev/disk/by-uuid names; not the well-known GPT partition types), what follows UUID= (a FAT
 *    volume id), the <serial> and <board_id> of the nvidia-smi capture: a value of the same shape;
 *  - IPv4 and IPv6 addresses in /proc/net (route, ipv6_route, if_inet6) and in text outside
 *    /sys and /proc (the kernel log, /etc): prefix-preserving, of the same kind (anonymize-ip.h);
 *  - the host name, as a whole word with its domain: replaced by "host-" and 8 hex digits (a
 *    short word such as "vm" only in the files that name the host: hostname, hosts, the logs).
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
/* PATH (root-relative) with the identifiers in its names replaced as in content: the UUID-shaped
 * names and those in /dev/disk/by-uuid and by-partuuid (caller frees). */
char *anonymize_path(struct anonymizer *a, const char *path);
