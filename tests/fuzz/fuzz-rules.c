/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A rule file, through loading and validation (conditions, remedies, parameters). */
#include "fuzz.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fuzz_put("rules.ini", data, size);
        _cleanup_free_ char *path = xasprintf("%s/rules.ini", fuzz_tmpdir());
        struct ruleset rs = {0};
        struct diags d = {0};
        rules_load_file(&rs, path, &d);
        for (size_t i = 0; i < rs.n; i++) {
                struct strv params = {0};
                rule_params(&rs.v[i], &params);
                strv_free(&params);
        }
        rules_free(&rs);
        strv_free(&d.msgs);
        return 0;
}
