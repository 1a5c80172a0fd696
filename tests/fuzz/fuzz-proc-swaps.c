/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/swaps through the swap probe, on a one-file root. */
#include "facts.h"
#include "fuzz.h"
#include "root.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fuzz_put("swaps/proc/swaps", data, size);
        _cleanup_free_ char *top = xasprintf("%s/swaps", fuzz_tmpdir());
        struct root *r = NULL;
        if (root_new(top, &r) < 0)
                return 0;
        struct facts *f = facts_new(r);
        facts_get(f, "swap.active.count");
        const struct fact **v = NULL;
        facts_under(f, "swap.active.", &v);
        free(v);
        facts_free(f);
        root_free(r);
        return 0;
}
