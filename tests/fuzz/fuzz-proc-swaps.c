/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/swaps through the swap probe, on a one-file root. One root handle on one private
 * directory serves every input (made on the first); each input gets fresh facts and is handed to
 * the handle's cache as /proc/swaps (root_preload), so nothing of the previous input is seen and
 * no file is written per input. Asking for swap.active.count runs the whole probe (every
 * swap.active.N.* fact is made); the facts are not listed afterwards: facts_under sorts them with
 * natcmp, which on inputs of a few hundred lines took over half the run's time (perf) and is the
 * facts store's code, not this parser's. */
#include <stdlib.h>

#include "facts/facts.h"
#include "fuzz.h"
#include "base/root.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct root *r;
        if (!r) {
                fuzz_put("swaps/proc/swaps", (const uint8_t *)"", 0);
                _cleanup_free_ char *top = xasprintf("%s/swaps", fuzz_tmpdir());
                if (root_new(top, &r) < 0)
                        abort();
        }
        root_preload(r, "/proc/swaps", data, size);
        struct facts *f = facts_new(r);
        facts_get(f, "swap.active.count");
        facts_free(f);
        return 0;
}
