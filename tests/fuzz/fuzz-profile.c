/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A site profile, through loading, validation and inheritance against the shipped profiles and
 * rules (what `llmtune lint`, `audit --profile FILE` and site profiles.d go through). The shipped
 * rules and profiles are loaded once; each input is parsed from memory (profiles_load_buffer, what
 * profiles_load_file does once it has read the file) and dropped again (profiles_truncate), so an
 * execution costs the parse, not reading 20 files. */
#include <stdio.h>

#include "config.h"
#include "fuzz.h"
#include "engine/profiles.h"
#include "engine/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct ruleset rules;
        static struct profile_lib lib;
        static bool loaded;
        if (!loaded) {
                struct diags d = {0};
                rules_load_dir(&rules, LLMTUNE_SRCDIR "/rules", &d);
                profiles_load(&lib, LLMTUNE_SRCDIR "/profiles", NULL, &d);
                strv_done(&d.msgs);
                loaded = true;
        }
        _cleanup_free_ char *text = fuzz_string(data, size);
        struct diags d = {0};
        size_t before = lib.n;
        if (profiles_load_buffer(&lib, "site.ini", text, size, &d) == 0 && lib.n > before) {
                struct resolved r = {0};
                if (profile_resolve(&lib, lib.v[before].name, &rules, &r, &d) == 0) {
                        for (size_t i = 0; i < rules.n; i++) {
                                enum severity sev;
                                resolved_rule_enabled(&r, &rules.v[i], &sev);
                        }
                        resolved_param(&r, "thp_enabled");
                }
                resolved_done(&r);
        }
        profiles_truncate(&lib, before);
        strv_done(&d.msgs);
        return 0;
}
