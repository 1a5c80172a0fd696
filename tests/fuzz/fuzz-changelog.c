/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The change log read back (what verify, log and rollback trust), with its in-force and
 * unfinished-step analyses. One root handle on one private directory serves every input (made on
 * the first); the log is read through open file descriptors, never from the handle's cache. */
#include <stdlib.h>

#include "apply/changelog.h"
#include "fuzz.h"
#include "base/root.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct root *r;
        fuzz_put("log" CHANGELOG_PATH, data, size);
        if (!r) {
                _cleanup_free_ char *top = xasprintf("%s/log", fuzz_tmpdir());
                if (root_new(top, &r) < 0)
                        abort();
        }
        struct log_read lr;
        if (changelog_read(r, &lr, NULL) == 0) {
                size_t *idx = NULL;
                changelog_in_force(&lr, &idx);
                free(idx);
                changelog_unfinished(&lr, &idx);
                free(idx);
                log_read_done(&lr);
        }
        return 0;
}
