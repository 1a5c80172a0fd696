/* SPDX-License-Identifier: GPL-2.0-or-later */
/* nccl.conf text through the linter (NCCL's own reading rules). */
#include "config.h"
#include "fuzz.h"
#include "nccl/nccl-lint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct nccl_catalog cat;
        static bool loaded;
        if (!loaded) {
                nccl_catalog_load(LLMTUNE_SRCDIR "/rules/nccl-catalog.tsv", &cat);
                loaded = true;
        }
        struct nccl_lint l = {0};
        nccl_lint_text(&cat, (const char *)data, size, &l);
        nccl_lint_done(&l);
        return 0;
}
