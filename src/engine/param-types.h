/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Profile parameter types. Every parameter is declared once, with its default in [params] and its
 * type in [types] of the profile that defines it (the top of the chain: base.ini for the shipped
 * profiles). A type is one or more alternatives separated by '|':
 *
 *   enum W1 W2 ...     one of the words                 thp_enabled = enum always madvise never
 *   bool               true or false
 *   integer [LO..HI]   a decimal integer, in the range when given (either bound may be left out)
 *   size [LO..HI]      bytes: an integer with an optional binary unit, K M G T (KiB, KB, ...)
 *   duration           an integer with s, min, h, d or w
 *   version            a dotted version, digits and dots (535.104.05)
 *   integers           a comma list of integers (4,4)
 *   names              a comma list of names: letters, digits, '_', '-', '.', ':'
 *   list W1 W2 ...     a comma list of the words, each at most once
 *   WORD               that word itself: any, unlimited, auto, none
 *
 * so `integer 0.. | any`, `size | unlimited`. lint, `profiles show` and the Ansible module's
 * argument spec read the same declaration.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"

enum param_kind {
        PT_WORD, PT_ENUM, PT_BOOL, PT_INTEGER, PT_SIZE, PT_DURATION, PT_VERSION, PT_INTEGERS, PT_NAMES, PT_LIST,
};

struct param_alt {
        enum param_kind kind;
        struct strv words; /* WORD (one), ENUM, LIST */
        bool has_lo, has_hi;
        uint64_t lo, hi;   /* INTEGER, SIZE */
};

struct param_type {
        struct param_alt *v;
        size_t n;
};

/* Parse SPEC. 0, or -EINVAL with *err saying what is wrong (caller frees). */
int param_type_parse(const char *spec, struct param_type *ret, char **err);
void param_type_done(struct param_type *t);

/* Does VALUE have type T? */
bool param_type_accepts(const struct param_type *t, const char *value);

/* T in words for a message: "one of always, madvise, never", "an integer from 0, or any". */
char *param_type_describe(const struct param_type *t);

/* The values T allows when they are finitely many (enum, bool, words), in order, else false. */
bool param_type_choices(const struct param_type *t, struct strv *ret);
