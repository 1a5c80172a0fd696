/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Profiles are data: profiles/NAME.ini (shipped) and ROOT/etc/llmtune/profiles.d/NAME.ini (site), which
 * shadow shipped profiles of the same name. Sections: [profile] name, description, inherits;
 * [match] require = CONDITION (auto-detection); [params] NAME = VALUE; [types] NAME = TYPE (only in
 * a profile that inherits nothing: it defines the parameters, one type each, param-types.h);
 * [rules] ID-or-glob = on|off|critical|warning|info; [nccl] NCCL_KEY = VALUE.
 */
#pragma once

#include "engine/expr.h"
#include "facts/facts.h"
#include "base/ini-load.h"
#include "engine/rules.h"

#define PROFILES_SITE_DIR "/etc/llmtune/profiles.d"

struct setting {
        char *key, *value;
        char *origin; /* "file:line" where the value was set */
};

struct settings {
        struct setting *v;
        size_t n;
};

struct profile {
        char *name, *description, *inherits;
        char *file;
        unsigned line;
        bool site; /* from ROOT/etc/llmtune/profiles.d */
        struct settings params, rules, nccl;
        struct settings types; /* [types]: each parameter's type (param-types.h), top of a chain only */
        struct expr *match;
        size_t n_match;
};

struct profile_lib {
        struct profile *v;
        size_t n;
        /* The text a site profile file will hold once this run writes it (apply --param): set before
         * profiles_load, it is loaded in place of the file at OVERLAY_PATH (present or not). */
        const char *overlay_path, *overlay_text;
};

/* Shipped profiles from SHIPPED_DIR, then site profiles under the root (may be NULL). */
int profiles_load(struct profile_lib *lib, const char *shipped_dir, struct root *root, struct diags *d);
/* One profile file given by path (--profile FILE), added to LIB as a site-level profile. */
int profiles_load_file(struct profile_lib *lib, const char *path, struct diags *d);
/* The same for a profile already in memory (what profiles_load_file does once it has read the
 * file; NAME stands for the file in messages). The fuzz target parses from memory with it. */
int profiles_load_buffer(struct profile_lib *lib, const char *name, const char *data, size_t len, struct diags *d);
/* Forget the profiles loaded from FILE (lint loads a site profile again under the name it was given). */
void profiles_forget_file(struct profile_lib *lib, const char *file);
/* Free the profiles from index N on (those loaded after the first N), keeping the first N. */
void profiles_truncate(struct profile_lib *lib, size_t n);
void profiles_done(struct profile_lib *lib);

struct resolved {
        char *name, *description;
        const struct profile *leaf;
        struct strv chain;       /* base first, this profile last: "base (profiles/base.ini)" */
        struct settings params;  /* merged, later wins, with origin */
        struct settings types;   /* the top profile's [types]: NAME = type (param-types.h), with origin */
        struct settings rules;   /* merged rule switches, in order (later wins) */
        struct settings nccl;
        char hash[65];           /* SHA-256 of the resolved content, hex */
};

/* The profile NAME after inheritance. Unknown names, cycles, unknown parameters and rule ids and
 * badly typed values are reported in D with file:line. */
int profile_resolve(const struct profile_lib *lib, const char *name, const struct ruleset *rules,
                    struct resolved *ret, struct diags *d);
void resolved_done(struct resolved *r);

const char *resolved_param(const struct resolved *r, const char *name);

/* Profile parameters that are NCCL variables: values only the site knows (its switches' QoS, the GID
 * its fabric routes on; NCCL env.rst NCCL_IB_TC, NCCL_IB_SL, NCCL_IB_GID_INDEX), written into the
 * managed block of /etc/nccl.conf and counted in nccl_keys unless `any`. */
struct profile_nccl_param {
        const char *param, *key;
};
extern const struct profile_nccl_param profile_nccl_params[];
extern const size_t profile_nccl_params_n;
/* The declared type of parameter NAME (param-types.h syntax), or NULL. */
const char *resolved_param_type(const struct resolved *r, const char *name);
/* Is rule ID enabled for this profile, and with which severity? */
bool resolved_rule_enabled(const struct resolved *r, const struct rule *rule, enum severity *sev);

/* The [match] requirements that decide whether P fits a machine: its own, or, for a site profile
 * without [match] that shadows a shipped profile, the shipped one's. */
const struct expr *profile_match(const struct profile_lib *lib, const struct profile *p, size_t *n);
/* The [match] requirements (P's, else those of the profile it inherits from) that do not hold on
 * F, as "condition [observed]; ...", an unreadable one with its reason; NULL when all hold or
 * there are none. Caller frees. */
char *profile_misfit(const struct profile_lib *lib, const struct profile *p, struct facts *f);
/* Does P take part in detection? Not a shadowed shipped profile, and not a site profile without
 * a [match] (its own or the shadowed shipped profile's). */
bool profile_detectable(const struct profile_lib *lib, const struct profile *p);

/* The best-matching profile for the facts: every `require` holds; most requirements wins.
 * 0 and *ret set: *why gets "cond [observed]; ..." text. -EIO: a requirement of a profile not
 * ruled out could not be evaluated (an unreadable fact); *why says which, nothing is chosen.
 * -ENOENT: no profile matches. */
int profile_detect(const struct profile_lib *lib, struct facts *f, const struct profile **ret, char **why);

const struct profile *profile_find(const struct profile_lib *lib, const char *name, bool site_first);
