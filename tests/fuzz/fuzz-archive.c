/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Gathered archives as roots (archive-root.c): untrusted tar/gzip/zstd input, vetted and unpacked. */
#include <stdlib.h>

#include "base/archive-root.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *dir = NULL, *why = NULL;
        struct archive_unread unread = {0};
        if (archive_root_unpack_mem(data, size, &dir, &unread, &why) == 0) {
                archive_root_remove(dir);
                free(dir);
                archive_unread_done(&unread);
        } else if (!why)
                abort(); /* every refusal says why */
        free(why);
        return 0;
}
