/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `nvidia-smi nvlink -s` as text (what `gather` captures beside `nvidia-smi -q -x`, which carries no
 * NVLink state): per GPU, named by its UUID, the links nvidia-smi lists ("Link 0: 25 GB/s" up,
 * "Link 3: <inactive>" down), or NVML's "Unable to retrieve NVLink information as all links are
 * inActive" (spelled so by the driver; matched without regard to case).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define NVLINK_STATUS_CAPTURE "/var/lib/llmtune/captures/nvidia-smi-nvlink.txt"
#define NVLINK_STATUS_MAX_LINKS 32

struct nvlink_gpu {
        char uuid[96];
        unsigned links, up;
        bool all_inactive;                         /* NVML's message instead of a list */
        signed char state[NVLINK_STATUS_MAX_LINKS]; /* 1 up, 0 down, -1 not listed */
};

struct nvlink_status {
        struct nvlink_gpu *v;
        size_t n;
};

/* TEXT into ST (appended); lines that are neither a GPU header, a link nor the message are skipped. */
void nvlink_status_parse(struct nvlink_status *st, const char *text);
void nvlink_status_done(struct nvlink_status *st);
/* The GPU with UUID, or NULL. */
const struct nvlink_gpu *nvlink_status_find(const struct nvlink_status *st, const char *uuid);
