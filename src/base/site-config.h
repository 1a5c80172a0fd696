/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The site configuration, ROOT/etc/llmtune/llmtune.conf (INI, read with inih; llmtune(1) section
 * CONFIGURATION): the pinned profile and defaults for options, so that automation chooses a
 * profile instead of leaving it to detection.
 *
 *     profile = a100-8x        # before any section, or in [llmtune]
 *     [audit]
 *     fail_on = warning        # critical | warning | info
 *     [apply]
 *     wait = true              # apply waits for the lock; also [rollback] wait
 */
#pragma once

#include <stdbool.h>

#include "base/ini-load.h"
#include "base/root.h"

#define SITE_CONFIG_PATH "/etc/llmtune/llmtune.conf"

struct site_config {
        bool present;          /* the file exists */
        char *profile;         /* pinned profile name, or NULL */
        unsigned profile_line; /* where it was set */
        char *fail_on;         /* [audit] fail_on, validated; NULL when unset */
        int apply_wait;        /* [apply] wait: -1 unset, 0, 1 */
        int rollback_wait;     /* [rollback] wait */
};

/* Read SITE_CONFIG_PATH through the root handle. A missing file is an empty configuration;
 * an unreadable one, unknown sections or keys and bad values are errors in D (-EINVAL, or the
 * read error). */
int site_config_load(struct root *r, struct site_config *ret, struct diags *d);
void site_config_done(struct site_config *c);

/* The text of the configuration DATA (may be NULL: no file) with the pin set to PROFILE, or
 * removed when PROFILE is NULL; every other line is kept as it was. */
char *site_config_with_profile(const char *data, const char *profile);
