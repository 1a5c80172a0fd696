/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ext2/3/4 and XFS superblocks (the first bytes of a device or image). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "facts/readers/superblock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct fs_superblock sb;
        const char *why = NULL;
        /* An exact-size heap copy, so reading past the input is caught by ASan. */
        uint8_t *buf = malloc(size ? size : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        superblock_parse(buf, size, &sb, &why);
        free(buf);
        return 0;
}
