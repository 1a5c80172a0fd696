/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The change log read back (what verify, log and rollback trust), with its in-force and
 * unfinished-step analyses. */
#include "changelog.h"
#include "fuzz.h"
#include "root.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fuzz_put("log" CHANGELOG_PATH, data, size);
        _cleanup_free_ char *top = xasprintf("%s/log", fuzz_tmpdir());
        struct root *r = NULL;
        if (root_new(top, &r) < 0)
                return 0;
        struct log_read lr;
        if (changelog_read(r, &lr) == 0) {
                size_t *idx = NULL;
                changelog_in_force(&lr, &idx);
                free(idx);
                changelog_unfinished(&lr, &idx);
                free(idx);
                log_read_free(&lr);
        }
        root_free(r);
        return 0;
}
