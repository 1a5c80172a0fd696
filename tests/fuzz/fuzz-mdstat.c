/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/mdstat. */
#include "fuzz.h"
#include "facts/readers/mdstat.h"
#include "base/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_free_ char *text = fuzz_string(data, size);
        struct mdstat_array *a = NULL;
        size_t n = 0;
        if (mdstat_parse(text, &a, &n) == 0)
                mdstat_free(a, n);
        return 0;
}
