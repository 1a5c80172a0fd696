/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sysfs/procfs value parsers (parse.h). The first byte picks the parser; cpulists must also
 * survive a round trip through format_cpulist. */
#include <stdlib.h>

#include "fuzz.h"
#include "base/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        _cleanup_free_ char *s = fuzz_string(data + 1, size - 1);
        switch (data[0] % 8) {
        case 0: {
                bool neg;
                uint64_t mag;
                parse_integer(s, &neg, &mag);
                break;
        }
        case 1: {
                uint64_t u;
                int64_t i;
                parse_u64(s, &u);
                parse_i64(s, &i);
                break;
        }
        case 2: {
                unsigned *cpus = NULL;
                int n = parse_cpulist(s, &cpus);
                if (n > 0) {
                        _cleanup_free_ char *again = format_cpulist(cpus, (size_t)n);
                        unsigned *cpus2 = NULL;
                        int n2 = parse_cpulist(again, &cpus2);
                        if (n2 != n || memcmp(cpus, cpus2, (size_t)n * sizeof(unsigned)) != 0)
                                abort(); /* format_cpulist must render what parse_cpulist reads */
                        free(cpus2);
                }
                free(cpus);
                break;
        }
        case 3: {
                char *active = NULL;
                struct strv all = {0};
                if (parse_bracketed(s, &active, &all) == 0)
                        free(active);
                strv_done(&all);
                break;
        }
        case 4: {
                unsigned mts;
                parse_link_speed(s, &mts);
                break;
        }
        case 5: {
                uint64_t v;
                parse_size(s, 1ull << 40, &v);
                break;
        }
        case 6:
                unescape_octal(s);
                break;
        case 7:
                parse_cpulist(s, NULL);
                break;
        }
        return 0;
}
