/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nvml.*: the health state of NVIDIA GPUs as the driver reports it, from one of two sources that
 * produce the same fact names (docs/FACTS.md):
 *   - the live machine: NVML, loaded at run time with dlopen("libnvidia-ml.so.1") (nvml-live.c);
 *     llmtune has no build dependency on it;
 *   - a foreign --root: a capture of `nvidia-smi -q -x` at var/lib/llmtune/captures/nvidia-smi.xml,
 *     parsed with libxml2 (nvsmi-xml.c).
 * Both backends hand every GPU's values to the emit helpers below, which number the GPUs in PCI
 * bus order (nvml.N, like gpu.N of the NVIDIA GPUs and CUDA_DEVICE_ORDER=PCI_BUS_ID) and record
 * each value as ok, absent (the GPU or driver does not support it: N/A, NOT_SUPPORTED) or
 * unreadable (an error, with the driver's words).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "facts/facts.h"

#define NVGPU_CAPTURE "/var/lib/llmtune/captures/nvidia-smi.xml"
#define NVGPU_SONAME "libnvidia-ml.so.1"

/* Clock event (throttle) reasons: NVML's bit values (nvmlClocksEventReason*), nvidia-smi's
 * element suffixes (clocks_event_reason_SUFFIX, clocks_throttle_reason_SUFFIX before 535) and our
 * fact words (nvml.N.clock_event.WORD). */
struct nvgpu_reason {
        uint64_t bit;
        const char *xml;
        const char *word;
};
extern const struct nvgpu_reason nvgpu_reasons[];
extern const unsigned nvgpu_nreasons;

/* A PCI bus id in any spelling NVML and nvidia-smi use ("00000000:3B:00.0", "0000:3b:00.0",
 * "00001580:00:00.0") as sysfs spells it ("0000:3b:00.0", "1580:00:00.0"); false when it is not one. */
bool nvgpu_bus_id(const char *in, char out[32]);

/* One GPU's facts under nvml.IDX. */
struct nvgpu_out {
        struct facts *f;
        unsigned idx;
        const char *source;
};

void nvgpu_str(const struct nvgpu_out *o, const char *field, const char *value);
void nvgpu_uint(const struct nvgpu_out *o, const char *field, uint64_t value);
void nvgpu_bool(const struct nvgpu_out *o, const char *field, bool value);
void nvgpu_absent(const struct nvgpu_out *o, const char *field, const char *reason);
void nvgpu_unreadable(const struct nvgpu_out *o, const char *field, const char *reason);

/* Backends. Each records nvml.count and nvml.N.address for every GPU it lists, and returns the
 * number of GPUs, or -1 after recording why nothing could be read (absent/unreadable nvml.count). */
int nvsmi_xml_facts(struct facts *f, const char *path);
int nvml_live_facts(struct facts *f, const char *soname);

/* nvml.unlisted and nvml.unlisted_count, after a backend listed LISTED GPUs (or -1). */
void nvgpu_unlisted(struct facts *f, int listed);
/* nvml.N.power.below_default (enforced limit < default) and nvml.N.clocks.app_below_default
 * (application clocks < the default ones) for the LISTED GPUs. */
void nvgpu_derived(struct facts *f, int listed);
