/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What `apply --param` and `apply --pin` write besides the remedies, as part of the same run (so a
 * failed run undoes them and rollback restores them): the site profile holding the parameters,
 * ROOT/etc/llmtune/profiles.d/NAME.ini inheriting the --profile, and the pin in llmtune.conf.
 * `plan` shows the same files with the same options, so a dry run says what apply writes.
 */
#pragma once

#include "cli/cli-data.h"
#include "apply/plan.h"

struct site_setup {
        struct strv keys, vals;  /* --param NAME=VALUE, in order given */
        const char *site_name;   /* --site-profile NAME (default site-PROFILE) */
        bool pin;                /* --pin */
        char *name;              /* the site profile's name, once prepared */
        char *path, *text;       /* its file and the text the run writes */
        char *conf_text;         /* llmtune.conf with the pin */
        struct plan_setup_file files[2];
        size_t n_files;
};
void site_setup_done(struct site_setup *s);

/* Add one --param argument (NAME=VALUE). EXIT_OK or EXIT_ERROR after saying why. */
int site_setup_param(struct site_setup *s, const char *arg);

/* Before the profiles are loaded: with --param, the site profile's text, handed to ENV's profile
 * library as an overlay of its file, and *PROFILE becomes its name. PROFILE must name a profile
 * (not a file). EXIT_OK or EXIT_ERROR. */
int site_setup_profile(struct site_setup *s, const char **profile, struct rule_env *env);

/* After the profile is resolved: every --param holds in it as given, and with --pin the profile is
 * one a pin can name; fills s->files with what the run writes. EXIT_OK or EXIT_ERROR. */
int site_setup_files(struct cli *cli, struct site_setup *s, const struct rule_env *env);
