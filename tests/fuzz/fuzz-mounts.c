/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/mounts and /etc/fstab (the same bytes as both), and mount option lookups. One root handle
 * on one private directory serves every input (made on the first, with both files there so that
 * mounts_source finds /proc/mounts); each input is handed to the handle's cache (root_preload)
 * instead of being written to the files: an input costs its parse, not a file's write and read. */
#include <stdlib.h>

#include "fuzz.h"
#include "facts/readers/mounts.h"
#include "base/root.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct root *r;
        if (!r) {
                fuzz_put("mounts/proc/mounts", (const uint8_t *)"", 0);
                fuzz_put("mounts/etc/fstab", (const uint8_t *)"", 0);
                _cleanup_free_ char *top = xasprintf("%s/mounts", fuzz_tmpdir());
                if (root_new(top, &r) < 0)
                        abort();
        }
        root_preload(r, "/proc/mounts", data, size);
        root_preload(r, "/etc/fstab", data, size);
        struct mount_entry *m = NULL;
        size_t n = 0;
        if (mounts_read(r, &m, &n) == 0) {
                for (size_t i = 0; i < n; i++)
                        free(mount_option(m[i].options, "noatime"));
                mounts_free(m, n);
        }
        if (fstab_read(r, &m, &n) == 0) {
                for (size_t i = 0; i < n; i++)
                        free(mount_option(m[i].options, "size"));
                mounts_free(m, n);
        }
        return 0;
}
