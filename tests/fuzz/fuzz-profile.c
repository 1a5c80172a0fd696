/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A site profile file, through loading, validation and inheritance against the shipped profiles
 * and rules (what `llmtune lint`, `audit --profile FILE` and site profiles.d go through). */
#include <stdio.h>

#include "config.h"
#include "fuzz.h"
#include "profiles.h"
#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct ruleset rules;
        static bool loaded;
        if (!loaded) {
                struct diags d = {0};
                rules_load_dir(&rules, LLMTUNE_SRCDIR "/rules", &d);
                strv_free(&d.msgs);
                loaded = true;
        }
        fuzz_put("site.ini", data, size);
        _cleanup_free_ char *path = xasprintf("%s/site.ini", fuzz_tmpdir());
        struct profile_lib lib = {0};
        struct diags d = {0};
        profiles_load(&lib, LLMTUNE_SRCDIR "/profiles", NULL, &d);
        size_t before = lib.n;
        if (profiles_load_file(&lib, path, &d) == 0 && lib.n > before) {
                struct resolved r = {0};
                if (profile_resolve(&lib, lib.v[before].name, &rules, &r, &d) == 0) {
                        for (size_t i = 0; i < rules.n; i++) {
                                enum severity sev;
                                resolved_rule_enabled(&r, &rules.v[i], &sev);
                        }
                        resolved_param(&r, "thp_enabled");
                }
                resolved_free(&r);
        }
        profiles_free(&lib);
        strv_free(&d.msgs);
        return 0;
}
