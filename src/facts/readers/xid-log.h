/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVIDIA Xid events read from kernel log text, each with the time the log gives it and the GPU it
 * names, and the GPU resets the driver logs between them (probe-xid.c turns this into xid.* facts).
 *
 * Times come in two clocks: seconds since boot (a /dev/kmsg record's microseconds, the "[ 600.2]"
 * printk time of dmesg and syslog lines) and wall-clock seconds (the "[Sun Feb 23 16:24:18 2025]"
 * of `dmesg -T`, an RFC 3339 syslog stamp; read as UTC, which is all an age needs). A line without
 * either has no time: its age is unknown, never guessed.
 *
 * A reset: the driver logs Xid 154 each time a GPU's recovery action changes, and only then (NVIDIA
 * open-gpu-kernel-modules, src/nvidia/src/kernel/gpu/gpu.c, _gpuRefreshRecoveryActionInLock:
 * "GPU recovery action changed from 0x%x (%s) to 0x%x (%s)", not logged when the driver sets up the
 * GPU). The change back to "0x0 (None)" is the driver saying the reset (or drain) it asked for was
 * done: the events of that GPU before it no longer hold.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum xid_clock { XID_CLOCK_NONE, XID_CLOCK_BOOT, XID_CLOCK_WALL, XID_CLOCK_MAX };

struct xid_event {
        unsigned code;
        enum xid_clock clock;
        double t;   /* seconds in CLOCK */
        bool reset; /* Xid 154 "... to 0x0 (None)": the GPU no longer needs recovery */
        char *msg;  /* the text after the code, at most 200 bytes */
        char mig[32]; /* the MIG instance the driver names, "GPU-I:05" or "GPU-I:05 GPU-CI:00"; "" when none */
};

struct xid_dev {
        char addr[32]; /* as the driver writes it, lower case: 0000:9b:00 */
        struct xid_event *v;
        size_t n, cap;
};

struct xid_log {
        struct xid_dev *devs; /* in order of first appearance */
        size_t ndevs;
        uint64_t events;
        bool truncated;                 /* stopped at XID_LOG_MAX events */
        double newest[XID_CLOCK_MAX];   /* the latest time of any line, per clock */
        bool have_newest[XID_CLOCK_MAX];
};

#define XID_LOG_MAX 100000 /* a storm of one code is still one fact; bound the work */

/* One line of kernel log text: a /dev/kmsg record ("PRI,SEQ,USEC,FLAGS;text"), a dmesg line or a
 * syslog line. A "Linux version" banner starts a new boot: what came before is forgotten. */
void xid_log_line(struct xid_log *l, const char *line, size_t len);
/* Every line of DATA. */
void xid_log_text(struct xid_log *l, const char *data);
void xid_log_done(struct xid_log *l);

/* The index of DEV's last reset marker, or -1 when the log shows none since boot. */
long xid_dev_last_reset(const struct xid_dev *dev);

/* "boot+600.2s" or "2025-02-23T16:24:18Z" for an event's time; "unknown" without one. */
char *xid_time_text(enum xid_clock clock, double t);
