/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/boot-config.h"

#include <errno.h>

int kernel_config(struct root *r, const char *release, const char *sym, char **value, char **path)
{
        *value = NULL;
        *path = xasprintf("/boot/config-%s", release);
        const char *data;
        int rc = root_read(r, *path, &data, NULL);
        if (rc < 0)
                return root_gone(rc) ? -ENOENT : rc;
        _cleanup_free_ char *set = xasprintf("CONFIG_%s=", sym);
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it))
                if (startswith(it.line, set)) {
                        const char *v = it.line + strlen(set);
                        size_t vl = strlen(v);
                        *value = vl >= 2 && v[0] == '"' && v[vl - 1] == '"' ? xstrndup(v + 1, vl - 2) : xstrdup(v);
                        return 0;
                }
        return -ENODATA;
}
