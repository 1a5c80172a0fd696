/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which file, and which line, wins at boot: one model per configuration family, each from its
 * manual page, used by the probes (the value a key gets at the next boot), the planner (a remedy
 * whose file would lose neutralises the line that beats it) and verify (which re-reads the same
 * facts). docs/TUNING.md ("Which file wins") has the same table in prose; the unit test
 * dropin_families_documented holds the two together.
 *
 * A family reads its files in one order: an optional main file first (limits.conf, system.conf),
 * then the drop-ins NAME.SUFFIX of every search directory merged by name, a name in an earlier
 * directory hiding the same name in a later one (a link to /dev/null masks it: it reads as empty),
 * in C-locale name order, then an optional main file last (sysctl.conf, unless a drop-in links it
 * in). Each line makes settings (KEY, VALUE). Normally every setting is applied in that order, so
 * the last one for a key wins; a setting with an identity (a tmpfiles.d path, a modprobe.d install
 * line) is dropped when an earlier line had the same identity, so the first one wins there.
 *
 * Fixing a setting: a file under /etc is edited in place; one under /run or /usr is shadowed by a
 * copy of the same name in the family's /etc directory (the documented way to override a vendor
 * file), with the line commented out behind the marker.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "base/root.h"
#include "base/util.h"

/* The state a family's parser keeps while it reads one file (the [Section] of systemd's files). */
struct dropin_state {
        char section[64];
};

/* One setting of a line. IDENTITY: NULL, or what makes a later setting with the same identity be
 * dropped (tmpfiles.d: the path as written). */
struct dropin_setting {
        char *key, *value, *identity;
};

struct dropin_settings_of_line {
        struct dropin_setting *v;
        size_t n;
};

struct dropin_family {
        const char *name;         /* "tmpfiles.d" */
        const char *manual;       /* "tmpfiles.d(5)" */
        const char *subdir;       /* under each search directory: "tmpfiles.d", "systemd/system.conf.d" */
        const char *const *dirs;  /* the search directories, highest precedence first */
        const char *suffix;       /* ".conf", ".rules" */
        const char *first, *last; /* main files read before / after the drop-ins (NULL: none) */
        const char *winner;       /* the rule in words, for the docs and the plan's notes */
        /* Append the settings LINE makes to OUT; NULL for a family whose lines llmtune does not read
         * setting by setting (udev rules, whose matches depend on the device). */
        void (*parse)(const char *line, struct dropin_state *st, struct dropin_settings_of_line *out);
        /* Does a setting of LINE_KEY set KEY? (a sysctl.d glob); NULL: the keys are equal. */
        bool (*applies)(const char *line_key, const char *key);
        /* The keys are paths that may be globs reaching files through links (tmpfiles.d): a key
         * also sets the files its expansion reaches. */
        bool paths;
        /* VALUE as a number, for "at least" comparisons (*unlimited for infinity); -EINVAL if not. */
        int (*number)(const char *value, bool *unlimited, uint64_t *n);
        /* A line whose value NUMBER refuses is ignored by the reader (pam_limits, systemd): it
         * decides nothing. */
        bool skip_invalid;
};

extern const struct dropin_family dropin_sysctl, dropin_tmpfiles, dropin_limits, dropin_system_conf,
        dropin_modprobe, dropin_modules_load, dropin_udev;

/* Every family, NULL-terminated (the docs test walks it). */
extern const struct dropin_family *const dropin_families[];

/* The drop-in directories family F reads, highest precedence first ("/etc/modprobe.d", ...), appended
 * to RET (the caller's to release with strv_done). */
void dropin_family_dirs(const struct dropin_family *f, struct strv *ret);

/* The family whose /etc directory (or main file) holds PATH, or NULL. */
const struct dropin_family *dropin_family_of(const char *path);

void dropin_settings_of_line_done(struct dropin_settings_of_line *s);

struct dropin_file {
        char *name;  /* NAME.SUFFIX, the sort key ("" for a main file read first) */
        char *path;  /* where it is read (may be a link, as 99-sysctl.conf) */
        char *real;  /* the file behind a link inside /etc (/etc/sysctl.conf), else = path */
        char *edit;  /* the file a fix writes: real when under /etc, else /etc/SUBDIR/NAME (a shadow copy) */
};

struct dropin_list {
        struct dropin_file *v;
        size_t n;
};

struct dropin_file_id {
        uint64_t dev, ino;
};

/* What a plan has written so far, seen before the tree: a file it creates, changes (content) or
 * removes (content NULL). NULL: the tree as it is. */
struct dropin_view {
        const char *const *paths, *const *contents;
        size_t n;
};

/* The files of family F in reading order. A directory that exists but cannot be listed is an error
 * (-errno, *bad = its path): an unreadable directory is never "no files". */
int dropin_list_load(struct root *r, const struct dropin_family *f, const struct dropin_view *view,
                     struct dropin_list *ret, char **bad);
void dropin_list_done(struct dropin_list *l);

/* One setting, in the reading order. */
struct dropin_entry {
        const struct dropin_file *file; /* points into the list */
        unsigned line;                  /* 1-based */
        char *key, *value;
        bool dropped;                   /* an earlier line with the same identity wins over it */
        struct dropin_file_id *ids;     /* the files a glob key reaches (tmpfiles.d), once expanded */
        size_t n_ids;
};

struct dropin_entries {
        const struct dropin_family *f;
        struct dropin_list files;
        struct dropin_entry *v;
        size_t n;
};

/* Every setting of family F in reading order, with the ones the family drops marked. Returns 0 or
 * -errno with *bad the unreadable path (a file that is there but cannot be read). */
int dropin_entries_load(struct root *r, const struct dropin_family *f, const struct dropin_view *view,
                        struct dropin_entries *ret, char **bad);
void dropin_entries_done(struct dropin_entries *e);

/* Does entry E set KEY? */
bool dropin_entry_sets(struct root *r, const struct dropin_entries *all, const struct dropin_entry *e, const char *key);

/* The setting of KEY in effect after boot: the last one not dropped; NULL when no line sets KEY. */
const struct dropin_entry *dropin_effective(struct root *r, const struct dropin_entries *all, const char *key);

/* CONTENT (a file of family F) with every line that sets KEY to a value KEEP(value, data) rejects
 * commented out behind MARK. NULL when no line changes. */
char *dropin_neutralise(struct root *r, const struct dropin_family *f, const char *content, const char *key,
                        const char *mark, bool (*keep)(const char *value, void *data), void *data);

/* The keys the lines of CONTENT (a file of family F) set, in order, without repeats. */
void dropin_keys_of(const struct dropin_family *f, const char *content, struct strv *ret);

/* PATH (a file of a family llmtune models) holds CONTENT: is each key it sets still decided at
 * boot by it, or by a line with the same value (for numbers: at least as much)? 0 when it is (or
 * PATH is of no family); 1 when not, *why saying which file and line wins ("KEY is set at boot by
 * FILE:LINE (VALUE) ..."); -errno when a file of the family cannot be read, *why naming it. */
int dropin_overridden(struct root *r, const char *path, const char *content, char **why);

/* Does sysctl.d line LINE set KEY? *value (caller frees) is its value. */
bool sysctl_line_sets(const char *line, const char *key, char **value);
