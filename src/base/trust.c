/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "trust.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* Who besides root may own what llmtune reads: the user who ran it (directly or through sudo). */
static bool trusted_owner(uid_t uid)
{
        if (uid == 0 || uid == getuid())
                return true;
        const char *s = getenv("SUDO_UID");
        if (!s || !*s)
                return false;
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        return !*end && v == (unsigned long)uid;
}

static char *problem_of(const char *what, const char *path, const struct stat *st, bool dir)
{
        if (!trusted_owner(st->st_uid))
                return xasprintf("%s %s is owned by uid %u, neither root nor the invoking user", what, path,
                                 (unsigned)st->st_uid);
        mode_t m = st->st_mode;
        /* A sticky directory (/tmp) lets others add entries but not replace someone else's. */
        if (dir && (m & S_ISVTX))
                return NULL;
        if (m & S_IWOTH)
                return xasprintf("%s %s is writable by every user (mode %04o)", what, path, (unsigned)(m & 07777));
        if ((m & S_IWGRP) && st->st_gid != 0)
                return xasprintf("%s %s is writable by group %u (mode %04o)", what, path, (unsigned)st->st_gid,
                                 (unsigned)(m & 07777));
        return NULL;
}

char *trust_problem(const char *path)
{
        if (geteuid() != 0)
                return NULL;
        char real[PATH_MAX];
        /* Missing: the loader reports it. Any other failure to check (a path over PATH_MAX, a
         * directory that cannot be searched) is a refusal, never "no problem". */
        if (!realpath(path, real))
                return errno == ENOENT ? NULL
                                       : xasprintf("who may change %s cannot be checked: %s", path, strerror(errno));
        struct stat st;
        if (stat(real, &st) < 0)
                return errno == ENOENT ? NULL
                                       : xasprintf("who may change %s cannot be checked: %s", real, strerror(errno));
        char *why = problem_of("the file", streq(real, path) ? "itself" : real, &st, false);
        if (why)
                return why;
        /* Every directory from the file's up to "/". */
        for (char *slash = strrchr(real, '/'); slash; slash = strrchr(real, '/')) {
                if (slash == real)
                        slash[1] = '\0';
                else
                        *slash = '\0';
                if (stat(real, &st) < 0)
                        return xasprintf("who may change its directory %s cannot be checked: %s", real, strerror(errno));
                if ((why = problem_of("its directory", real, &st, true)))
                        return why;
                if (streq(real, "/"))
                        break;
        }
        return NULL;
}

int trust_check_file(const char *path, struct diags *d)
{
        _cleanup_free_ char *why = trust_problem(path);
        if (!why)
                return 0;
        diag_add(d, path, 0,
                 "refused: %s; llmtune runs as root and takes rules and profiles only from files that no other "
                 "user can change (chmod go-w, or chown root)",
                 why);
        return -EPERM;
}
