/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Error counters between runs: "link_downed rose by 3 since the last health check" is a finding,
 * "it was 3 at boot two months ago" is not. Probes that read a counter (ib.*, aer.*, nvml.*) call
 * counter_growth() after recording it, which adds NAME_growth: how much it rose since the reading
 * kept in the state file ROOT/var/lib/llmtune/counters.state.
 *
 * The state file: "llmtune-counters 1", "boot BOOT_ID", "time UNIX_SECONDS", then "KEY VALUE"
 * lines; written atomically (temporary file, fsync, rename), mode 0600 in the change log's
 * directory. Missing: no growth is known yet (NAME_growth absent, with that reason). Not in that
 * format: ignored with the line it stopped at, and replaced by the next save. A reading from an
 * earlier boot (another boot_id) or a counter now below its reading (cleared: perfquery -R, a
 * driver reload) counts from zero: the growth is the counter's value now.
 *
 * Who writes it is the caller's choice (counters_save); see README "Health over time": the
 * periodic health check does, an audit only when asked, so no reader takes another's baseline.
 */
#pragma once

#include "facts/facts.h"

#define COUNTERS_STATE "/var/lib/llmtune/counters.state"

/* NAME (a counter fact already recorded) -> NAME_growth; KEY names the counter in the state file
 * (NULL: NAME; the NVML facts use the GPU's PCI address, as their index may change). */
void counter_growth(struct facts *f, const char *name, const char *key);

/* Write the readings of this run, with those of the state not read again this boot, to the state
 * file. Returns 0, or -errno (-EROFS for a gathered archive or topology export). */
int counters_save(struct facts *f);
