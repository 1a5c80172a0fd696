/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The runner of the declared unit tests: see unit-main.h. */
#include "unit-main.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Registered by the constructors DEFINE_TEST makes, in whatever order they run; sorted by line. */
#define UNIT_MAX 256
struct entry {
        const struct unit_test *t;
        const TTest *tt;
};
static struct entry tests[UNIT_MAX];
static size_t n_tests;

void unit_register(const struct unit_test *t, const TTest *tt)
{
        if (n_tests == UNIT_MAX) {
                fprintf(stderr, "more than %d cases in one test program: raise UNIT_MAX\n", UNIT_MAX);
                abort();
        }
        tests[n_tests++] = (struct entry){t, tt};
}

static int by_line(const void *a, const void *b)
{
        const struct entry *x = a, *y = b;
        return (x->tt->line > y->tt->line) - (x->tt->line < y->tt->line);
}

static void list(void)
{
        for (size_t i = 0; i < n_tests; i++) {
                const struct unit_test *t = tests[i].t;
                printf("%s%s [%s]%s\n    %s\n", t->name, t->live ? " (live)" : "", t->root ? t->root : "?",
                       t->when && !t->when() ? " (left out here)" : "", t->description ? t->description : "");
        }
}

/* One TCase per case, named after it, so Check's report names the case and each has its timeout. */
static void add(Suite *s, const struct unit_suite *us, const struct entry *e)
{
        const struct unit_test *t = e->t;
        TCase *tc = tcase_create(t->name);
        if (!t->no_fixture && (us->setup || us->teardown))
                tcase_add_checked_fixture(tc, us->setup, us->teardown);
        tcase_set_timeout(tc, t->timeout ? t->timeout : UNIT_TIMEOUT);
        if (t->exit_status)
                tcase_add_exit_test(tc, e->tt, t->exit_status);
        else if (t->loop_end > 0)
                tcase_add_loop_test(tc, e->tt, 0, t->loop_end);
        else
                tcase_add_test(tc, e->tt);
        suite_add_tcase(s, tc);
}

int unit_main(int argc, char **argv, const struct unit_suite *us)
{
        qsort(tests, n_tests, sizeof(tests[0]), by_line);
        bool live = argc > 1 && strcmp(argv[1], "live") == 0;
        if (argc == 2 && strcmp(argv[1], "--list") == 0) {
                list();
                return 0;
        }
        if (argc > 2 || (argc == 2 && !live)) {
                fprintf(stderr, "usage: %s [live | --list]\n", argv[0]);
                return 2;
        }
        if (live) {
                char *why = us->live_missing ? us->live_missing() : strdup("this program has no live cases");
                if (why) {
                        printf("skipped: %s\n", why);
                        free(why);
                        return 77;
                }
        }
        if (us->prepare) {
                int rc = us->prepare();
                if (rc)
                        return rc;
        }
        size_t added = 0;
        for (size_t i = 0; i < n_tests; i++) {
                const struct unit_test *t = tests[i].t;
                if (t->live != live)
                        continue;
                if (t->when && !t->when())
                        printf("left out here: %s (%s)\n", t->name, t->description ? t->description : "");
                else
                        tests[added++] = tests[i];
        }
        if (!added) {
                fprintf(stderr, "%s: no case to run\n", argv[0]);
                return EXIT_FAILURE;
        }
        Suite *s = suite_create(us->name);
        for (size_t i = 0; i < added; i++)
                add(s, us, &tests[i]);
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
