/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The unit tests declare themselves (kmod's testsuite/testsuite.h is the model): each Check case is
 * followed by
 *
 *     DEFINE_TEST(name, .description = "what it shows", .root = "the tree it runs on");
 *
 * and the file ends with UNIT_MAIN(.name = "suite", .setup = ..., .teardown = ...). No list of cases
 * in main() to keep in step with the file, and every case gets the same timeout with headroom for
 * AddressSanitizer on a loaded 2-core machine (UNIT_TIMEOUT; Check's default of 4 s failed cases on
 * time alone; CK_TIMEOUT_MULTIPLIER scales it further, as tests/run-all.sh does in the ASan pass).
 *
 * Check has no "skipped": a case that returns early passes without testing anything. So the cases
 * that depend on this machine rather than on a tree (a NUMA node whose CPUs are all allowed,
 * permission to mknod) are declared .live: they run as a meson test of their own (NAME-live, the
 * program run with the argument "live"), which exits 77 (skipped) with the reason when the machine
 * lacks what they need (the suite's .live_missing says why, or NULL when it has it). A case that
 * needs what only some runs have (the corpus, root) names a .when predicate: it is left out, and
 * listed as left out, where that is false.
 *
 * `test-NAME --list` prints every case with its root and description.
 */
#pragma once

#include <check.h>
#include <stdbool.h>

/* Seconds a case may take before Check fails it (before CK_TIMEOUT_MULTIPLIER). */
#define UNIT_TIMEOUT 120

struct unit_test {
        const char *name;
        const char *description; /* what the case shows, in a phrase */
        /* The tree it reads: "tmptree" (written by the case or its setup, tests/unit/tmptree.h), a
         * fixture root's name (BUILDDIR/tests/roots, LLMTUNE_ROOTS), "corpus" (../shared/corpus),
         * "none" (no tree: code on values), "this machine" (a .live case). */
        const char *root;
        bool live;               /* needs this machine: runs in NAME-live only */
        bool (*when)(void);      /* added only when this holds (NULL: always) */
        int exit_status;         /* the status the case must exit with (tcase_add_exit_test), 0: returns */
        int loop_end;            /* > 0: run for _i = 0 .. loop_end - 1 (tcase_add_loop_test) */
        bool no_fixture;         /* without the suite's setup and teardown */
        int timeout;             /* seconds, 0: UNIT_TIMEOUT */
};

struct unit_suite {
        const char *name;
        void (*setup)(void), (*teardown)(void); /* run around every case (checked fixture) */
        char *(*live_missing)(void);            /* why this machine cannot run the .live cases (freed), or NULL */
        int (*prepare)(void);                   /* before any case: 0 to go on, else the exit status */
};

/* T is the case's declaration, TT the case Check runs (the pointer START_TEST defines). */
void unit_register(const struct unit_test *t, const TTest *tt);
int unit_main(int argc, char **argv, const struct unit_suite *s);

#define UNIT_CONCAT_(a, b) a##b
/* The case's constructor registers it before main() runs; the declaration comes last so that the
 * use reads as one declaration ending in ';'. */
#define DEFINE_TEST(_name, ...)                                                                           \
        static const struct unit_test UNIT_CONCAT_(unit_test_, _name);                                    \
        __attribute__((constructor)) static void UNIT_CONCAT_(unit_register_, _name)(void)                \
        {                                                                                                 \
                unit_register(&UNIT_CONCAT_(unit_test_, _name), _name);                                        \
        }                                                                                                 \
        static const struct unit_test UNIT_CONCAT_(unit_test_, _name) = {                                 \
                .name = #_name, __VA_ARGS__}

#define UNIT_MAIN(...)                                                                                    \
        int main(int argc, char **argv)                                                                   \
        {                                                                                                 \
                static const struct unit_suite unit_suite_ = {__VA_ARGS__};                               \
                return unit_main(argc, argv, &unit_suite_);                                               \
        }
