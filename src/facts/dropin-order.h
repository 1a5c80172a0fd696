/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Boot-time order of systemd's drop-in directories (sysctl.d(5), tmpfiles.d(5), modprobe.d(5),
 * modules-load.d(5) share it): the files NAME.conf of /etc/D, /run/D, /usr/local/lib/D, /usr/lib/D
 * and /lib/D are merged by file name, a name in an earlier directory hiding the same name in a later
 * one (a link to /dev/null masks it), and read in name order. For sysctl, /etc/sysctl.conf is read
 * too: distributions link it in as /etc/sysctl.d/99-sysctl.conf, and procps' `sysctl --system` reads
 * it last, so it is placed last unless such a link already placed it.
 *
 * What a fix must know from this: which file's line sets a value at boot (the last one for sysctl),
 * and where to neutralise a line that would override llmtune's drop-in. A file under /etc is edited in
 * place; one under /run or /usr is shadowed by a copy of the same name in /etc/D (the documented way
 * to override a vendor file), with the line commented behind the marker.
 */
#pragma once

#include <stddef.h>

#include "root.h"
#include "util.h"

struct dropin_file {
        char *name;  /* NAME.conf, the sort key */
        char *path;  /* where it is read (may be a link, as 99-sysctl.conf) */
        char *real;  /* the file behind a link inside /etc (/etc/sysctl.conf), else = path */
        char *edit;  /* the file a fix writes: real when under /etc, else /etc/D/NAME (a shadow copy) */
};

struct dropin_list {
        struct dropin_file *v;
        size_t n;
};

/* The files of family D ("sysctl.d") in boot order. A directory that exists but cannot be listed
 * is an error (-errno, *bad = its path): an unreadable directory is never "no files". */
int dropin_list_load(struct root *r, const char *family, struct dropin_list *ret, char **bad);
void dropin_list_done(struct dropin_list *l);

/* One line of a sysctl file that sets a key. */
struct sysctl_setting {
        const struct dropin_file *file; /* points into the list */
        unsigned line;                  /* 1-based */
        char *value;
};

struct sysctl_settings {
        struct dropin_list files;
        struct sysctl_setting *v; /* in boot order: the last one is in effect after boot */
        size_t n;
};

/* Every line in the boot order of sysctl.d that sets KEY (dots or slashes, globs as sysctl.d(5)
 * allows). Returns 0 or -errno with *bad the unreadable path. */
int sysctl_settings_load(struct root *r, const char *key, struct sysctl_settings *ret, char **bad);
void sysctl_settings_done(struct sysctl_settings *s);

/* Does sysctl.d line LINE set KEY? *value (caller frees) is its value. */
bool sysctl_line_sets(const char *line, const char *key, char **value);

/* CONTENT with every line of it that sets KEY and for which KEEP(value, data) is false commented out
 * behind MARK. Returns NULL when no line changes. */
char *sysctl_neutralise(const char *content, const char *key, const char *mark,
                        bool (*keep)(const char *value, void *data), void *data);
