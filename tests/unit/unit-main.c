/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "unit-main.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int unit_main(int argc, char **argv, Suite *(*build)(bool live), char *(*live_missing)(void))
{
        bool live = argc > 1 && strcmp(argv[1], "live") == 0;
        if (argc > 2 || (argc == 2 && !live)) {
                fprintf(stderr, "usage: %s [live]\n", argv[0]);
                return 2;
        }
        if (live) {
                char *why = live_missing();
                if (why) {
                        printf("skipped: %s\n", why);
                        free(why);
                        return 77;
                }
        }
        SRunner *sr = srunner_create(build(live));
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
