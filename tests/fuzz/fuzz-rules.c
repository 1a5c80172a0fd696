/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A rule file, through loading and validation (conditions, remedies, parameters), parsed from
 * memory (rules_load_buffer, what rules_load_file does once it has read the file). */
#include "fuzz.h"
#include "engine/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_free_ char *text = fuzz_string(data, size);
        struct ruleset rs = {0};
        struct diags d = {0};
        rules_load_buffer(&rs, "rules.ini", text, size, &d);
        for (size_t i = 0; i < rs.n; i++) {
                struct strv params = {0};
                rule_params(&rs.v[i], &params);
                strv_done(&params);
        }
        rules_done(&rs);
        strv_done(&d.msgs);
        return 0;
}
