/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer targets for every parser of outside input (docs/RELIABILITY.md). Each fuzz-NAME.c
 * defines LLVMFuzzerTestOneInput. With -Dfuzzing=true (clang) they link libFuzzer; otherwise
 * replay-main.c runs them over the seed corpus (tests/fuzz/corpus/NAME) and the reproducers of
 * past crashes (tests/fuzz/regress/NAME) as ordinary tests in every build.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A private directory for targets that need files (a fixture root, a rules file). */
const char *fuzz_tmpdir(void);
/* Write DATA to DIR/REL (parents created), replacing it. */
void fuzz_put(const char *rel, const uint8_t *data, size_t size);
/* NUL-terminated copy of the input (caller frees). */
char *fuzz_string(const uint8_t *data, size_t size);
