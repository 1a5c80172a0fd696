/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * IP addresses for `gather --anonymize` (anonymize.h): each address is replaced by another of the
 * same kind, prefix-preserving (two addresses that share their first N bits share their first N
 * bits after, so hosts of one subnet stay in one subnet, as in Crypto-PAn: Xu, Fan, Ammar, Moon,
 * "Prefix-Preserving IP Address Anonymization", 2002), each bit flipped by a keyed pseudo-random
 * function of the bits before it. What says what kind of address it is stays: the special
 * addresses (unspecified, loopback, broadcast, multicast) are kept whole, and the prefix of a
 * private, link-local, shared or documentation range is kept (10/8, 172.16/12, 192.168/16,
 * 169.254/16, 100.64/10, 192.0.2/24, fc00::/7, fe80::/64, 2001:db8::/32); other addresses keep
 * their first octet (IPv4) or first 16 bits (IPv6). An IPv6 interface identifier made from a MAC address (EUI-64, ff:fe in its
 * middle, RFC 4291 appendix A) becomes the one made from the MAC's replacement.
 */
#pragma once

#include <stdint.h>

/* The keyed bit function: bit I of the replacement of an address whose first I bits are PREFIX
 * (the rest zero, NBYTES bytes), under TAG. */
typedef unsigned (*anon_prf_fn)(void *ctx, const char *tag, unsigned i, const uint8_t *prefix, unsigned nbytes);
/* Replace a 6-byte MAC in place (keeping its OUI), as the anonymizer does everywhere else. */
typedef void (*anon_mac_fn)(void *ctx, uint8_t mac[6]);

/* Replace A (network byte order) in place; PLEN (0..32, or 33: none) masks the result as a
 * network of that length (the bits after it stay zero). */
void anon_ipv4(uint8_t a[4], unsigned plen, anon_prf_fn prf, void *ctx);
void anon_ipv6(uint8_t a[16], unsigned plen, anon_prf_fn prf, anon_mac_fn mac, void *ctx);
