/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/mounts and /etc/fstab (the same bytes as both), and mount option lookups. One root handle
 * on one private directory serves every input (made on the first): an input costs writing the two
 * files and parsing them, the root handle's cache of the two paths dropped in between. */
#include <stdlib.h>

#include "fuzz.h"
#include "mounts.h"
#include "root.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct root *r;
        fuzz_put("mounts/proc/mounts", data, size);
        fuzz_put("mounts/etc/fstab", data, size);
        if (!r) {
                _cleanup_free_ char *top = xasprintf("%s/mounts", fuzz_tmpdir());
                if (root_new(top, &r) < 0)
                        abort();
        }
        root_forget(r, "/proc/mounts");
        root_forget(r, "/etc/fstab");
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
