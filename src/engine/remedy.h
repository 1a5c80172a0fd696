/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Remedies: the typed actions a rule names as its fix ("remedy = sysctl" with "remedy.key = ...").
 * This table says which kinds exist and which parameters each takes, so rule files are validated
 * when loaded; the apply layer carries them out.
 */
#pragma once

#include <stdbool.h>

#include "base/util.h"

struct remedy_kind {
        const char *name;
        const char *required[4]; /* parameter names that must be given */
        const char *optional[4];
        const char *summary;     /* one line for the audit; ${param} are the remedy's parameters */
        bool reboot;             /* the change takes effect only after a reboot */
};

const struct remedy_kind *remedy_kind_find(const char *name);
bool remedy_kind_has_param(const struct remedy_kind *k, const char *param);
/* All kind names, space-separated, for error messages. */
char *remedy_kind_names(void);
