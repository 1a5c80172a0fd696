/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prefix-preserving replacement of IP addresses (anonymize-ip.h). */
#include "gather/anonymize-ip.h"

#include <stdbool.h>
#include <string.h>

/* How many leading bits of A (NBITS long) say what kind of address it is and stay; NBITS: all. */
struct kept {
        uint8_t net[16];
        unsigned len, keep;
};

/* IPv4 ranges whose first bits stay (RFC 6890's special-purpose registry, the private ranges of
 * RFC 1918, shared 6598, link-local 3927, documentation 5737); keep 32: the whole address says
 * nothing about a host. */
static const struct kept keep4[] = {
        {{0}, 8, 32},                    /* 0/8 "this network" */
        {{127}, 8, 32},                  /* loopback */
        {{224}, 4, 32},                  /* multicast and 240/4 reserved (with the next) */
        {{240}, 4, 32},
        {{192, 0, 2}, 24, 24},           /* documentation (RFC 5737): test machines use them */
        {{198, 51, 100}, 24, 24},
        {{203, 0, 113}, 24, 24},
        {{169, 254}, 16, 16},            /* link-local */
        {{10}, 8, 8},
        {{172, 16}, 12, 12},
        {{192, 168}, 16, 16},
        {{100, 64}, 10, 10},
};

static const struct kept keep6[] = {
        {{0xff}, 8, 128},                            /* multicast */
        {{0x20, 0x01, 0x0d, 0xb8}, 32, 32},          /* documentation (RFC 3849) */
        {{0xfe, 0x80}, 10, 64},                      /* link-local: fe80::/64 and an interface id */
        {{0xfc}, 7, 8},                              /* unique local */
};

static bool in_net(const uint8_t *a, const struct kept *k)
{
        for (unsigned i = 0; i < k->len; i++)
                if (((a[i / 8] ^ k->net[i / 8]) >> (7 - i % 8)) & 1)
                        return false;
        return true;
}

static unsigned kept_bits(const uint8_t *a, const struct kept *table, size_t n, unsigned deflt)
{
        for (size_t i = 0; i < n; i++)
                if (in_net(a, &table[i]))
                        return table[i].keep;
        return deflt;
}

/* Bits FROM..TO-1 of A flipped by the PRF of the original bits before each. */
static void flip_bits(uint8_t *a, unsigned nbytes, unsigned from, unsigned to, const char *tag, anon_prf_fn prf, void *ctx)
{
        uint8_t orig[16], prefix[16];
        memcpy(orig, a, nbytes);
        for (unsigned i = from; i < to; i++) {
                memset(prefix, 0, nbytes);
                memcpy(prefix, orig, i / 8);
                if (i % 8)
                        prefix[i / 8] = (uint8_t)(orig[i / 8] & (0xff << (8 - i % 8)));
                if (prf(ctx, tag, i, prefix, nbytes) & 1)
                        a[i / 8] ^= (uint8_t)(0x80 >> (i % 8));
        }
}

static void mask_to(uint8_t *a, unsigned nbytes, unsigned plen)
{
        for (unsigned i = plen; i < nbytes * 8; i++)
                a[i / 8] &= (uint8_t)~(0x80 >> (i % 8));
}

void anon_ipv4(uint8_t a[4], unsigned plen, anon_prf_fn prf, void *ctx)
{
        static const uint8_t bcast[4] = {255, 255, 255, 255};
        if (memcmp(a, bcast, 4) == 0)
                return;
        unsigned keep = kept_bits(a, keep4, sizeof(keep4) / sizeof(keep4[0]), 8);
        flip_bits(a, 4, keep, 32, "ip4:", prf, ctx);
        if (plen <= 32)
                mask_to(a, 4, plen);
}

static bool zero(const uint8_t *a, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                if (a[i])
                        return false;
        return true;
}

void anon_ipv6(uint8_t a[16], unsigned plen, anon_prf_fn prf, anon_mac_fn mac, void *ctx)
{
        /* ::, ::1 and the IPv4-compatible and -mapped forms (::a.b.c.d, ::ffff:a.b.c.d) */
        if (zero(a, 10) && ((a[10] == 0 && a[11] == 0) || (a[10] == 0xff && a[11] == 0xff))) {
                if (!zero(a + 12, 3) || a[15] > 1)
                        anon_ipv4(a + 12, plen >= 96 && plen <= 128 ? plen - 96 : 33, prf, ctx);
                return;
        }
        unsigned keep = kept_bits(a, keep6, sizeof(keep6) / sizeof(keep6[0]), 16);
        /* an EUI-64 interface id: the MAC it was made from (the universal/local bit inverted) */
        bool eui = a[11] == 0xff && a[12] == 0xfe && keep < 128;
        flip_bits(a, 16, keep, eui ? 64 : 128, "ip6:", prf, ctx);
        if (eui) {
                uint8_t m[6] = {(uint8_t)(a[8] ^ 0x02), a[9], a[10], a[13], a[14], a[15]};
                mac(ctx, m);
                a[8] = (uint8_t)(m[0] ^ 0x02), a[9] = m[1], a[10] = m[2], a[13] = m[3], a[14] = m[4], a[15] = m[5];
        }
        if (plen <= 128)
                mask_to(a, 16, plen);
}
