/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `nvidia-smi nvlink -s` text (nvlink-status.h). */
#include "facts/readers/nvlink-status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"

/* "GPU 7: NVIDIA A100-SXM4-80GB (UUID: GPU-c7e2...)": a new GPU. */
static bool gpu_header(struct nvlink_status *st, const char *l)
{
        const char *u = strstr(l, "(UUID: ");
        if (strncmp(l, "GPU ", 4) != 0 || !u)
                return false;
        u += strlen("(UUID: ");
        size_t len = strcspn(u, ")");
        st->v = xrealloc(st->v, (st->n + 1) * sizeof(*st->v));
        struct nvlink_gpu *g = &st->v[st->n++];
        *g = (struct nvlink_gpu){0};
        memset(g->state, -1, sizeof(g->state));
        snprintf(g->uuid, sizeof(g->uuid), "%.*s", (int)(len < sizeof(g->uuid) ? len : sizeof(g->uuid) - 1), u);
        return true;
}

void nvlink_status_parse(struct nvlink_status *st, const char *text)
{
        for (const char *line = text; *line; line += strcspn(line, "\n"), line += *line == '\n') {
                _cleanup_free_ char *l = xstrndup(line, strcspn(line, "\n"));
                char *s = l + strspn(l, " \t");
                if (gpu_header(st, s) || !st->n)
                        continue;
                struct nvlink_gpu *g = &st->v[st->n - 1];
                unsigned link;
                int n = 0;
                if (strcasestr(s, "all links are inactive"))
                        g->all_inactive = true;
                else if (sscanf(s, "Link %u:%n", &link, &n) == 1 && n > 0 && link < NVLINK_STATUS_MAX_LINKS &&
                         g->state[link] < 0) {
                        const char *v = s + n + strspn(s + n, " \t");
                        bool down = *v == '<' || !*v; /* "<inactive>" */
                        g->state[link] = !down;
                        g->links++;
                        g->up += !down;
                }
        }
}

void nvlink_status_done(struct nvlink_status *st)
{
        free(st->v);
        *st = (struct nvlink_status){0};
}

const struct nvlink_gpu *nvlink_status_find(const struct nvlink_status *st, const char *uuid)
{
        for (size_t i = 0; uuid && i < st->n; i++)
                if (strcasecmp(st->v[i].uuid, uuid) == 0)
                        return &st->v[i];
        return NULL;
}
