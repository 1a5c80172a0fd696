/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * slurm.*: what Slurm's configuration does to a job's locked-memory limit (slurm.conf(5)).
 *   slurm.conf              the slurm.conf read: the first of /etc/slurm/slurm.conf (Slurm's default
 *                           and Debian's since 20.11), /etc/slurm-llnl/slurm.conf (older Debian),
 *                           /run/slurm/conf/slurm.conf and /var/spool/slurmd/conf-cache/slurm.conf
 *                           (what slurmd keeps of a configless setup); absent when there is none
 *   slurm.propagate_memlock whether srun/sbatch carry the submit host's soft RLIMIT_MEMLOCK into the
 *                           job. PropagateResourceLimitsExcept=, when set, decides alone (the names
 *                           it lists are not propagated; ALL: none is); otherwise
 *                           PropagateResourceLimits= (default ALL; NONE: none) lists the limits that
 *                           are. The source is FILE:LINE of the deciding line. slurmctld and slurmd
 *                           refuse a limit name they do not know, so such a value is unreadable.
 * Keys are case-insensitive, '#' starts a comment, a line may hold several KEY=VALUE pairs, and
 * "Include FILE" reads FILE (relative to the directory of slurm.conf) in place; the last setting of
 * a key wins.
 */
#include <errno.h>
#include <strings.h>

#include "facts/facts.h"
#include "facts/probes/probes.h"

#define INCLUDE_DEPTH 8

static const char *const conf_paths[] = {
        "/etc/slurm/slurm.conf",
        "/etc/slurm-llnl/slurm.conf",
        "/run/slurm/conf/slurm.conf",
        "/var/spool/slurmd/conf-cache/slurm.conf",
};

/* The last value of each of the two keys, with FILE:LINE. */
struct propagate {
        char *limits, *limits_src; /* PropagateResourceLimits */
        char *except, *except_src; /* PropagateResourceLimitsExcept */
        char *bad;                 /* a file that is there but cannot be read */
        int bad_rc;
};

static void set(char **v, char **src, const char *value, const char *path, unsigned line)
{
        free(*v);
        free(*src);
        *v = xstrdup(value);
        *src = xasprintf("%s:%u", path, line);
}

static void parse_file(struct root *r, const char *path, const char *dir, unsigned depth, struct propagate *p);

/* One line: "Include FILE", or KEY=VALUE pairs separated by blanks. */
static void parse_line(struct root *r, char *line, const char *path, unsigned lineno, const char *dir, unsigned depth,
                       struct propagate *p)
{
        char *hash = strchr(line, '#');
        if (hash)
                *hash = '\0';
        char *save = NULL;
        char *tok = strtok_r(line, " \t\r", &save);
        if (tok && strcasecmp(tok, "include") == 0) {
                char *file = strtok_r(NULL, " \t\r", &save);
                if (!file)
                        return;
                _cleanup_free_ char *inc = file[0] == '/' ? xstrdup(file) : xasprintf("%s/%s", dir, file);
                parse_file(r, inc, dir, depth + 1, p);
                return;
        }
        for (; tok; tok = strtok_r(NULL, " \t\r", &save)) {
                char *eq = strchr(tok, '=');
                if (!eq)
                        continue;
                *eq = '\0';
                if (strcasecmp(tok, "PropagateResourceLimits") == 0)
                        set(&p->limits, &p->limits_src, eq + 1, path, lineno);
                else if (strcasecmp(tok, "PropagateResourceLimitsExcept") == 0)
                        set(&p->except, &p->except_src, eq + 1, path, lineno);
        }
}

static void parse_file(struct root *r, const char *path, const char *dir, unsigned depth, struct propagate *p)
{
        const char *data;
        int rc = depth > INCLUDE_DEPTH ? -ELOOP : root_read(r, path, &data, NULL);
        if (rc < 0) {
                if (!p->bad && (!root_gone(rc) || depth > 0)) {
                        /* an Include that is missing is an error for Slurm too */
                        p->bad = xstrdup(path);
                        p->bad_rc = rc;
                }
                return;
        }
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it))
                parse_line(r, it.line, path, it.lineno, dir, depth, p);
}

/* Does the comma list L name MEMLOCK (or ALL, or NONE)? *unknown gets a name Slurm refuses. */
static bool list_has(const char *l, const char *name, const char **unknown)
{
        static const char *const names[] = {"ALL",   "NONE",   "AS",     "CORE",  "CPU", "DATA",
                                            "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS", "STACK"};
        bool found = false;
        _cleanup_free_ char *copy = xstrdup(l);
        char *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                bool known = false;
                for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                        known |= strcasecmp(t, names[i]) == 0;
                if (!known && !*unknown)
                        *unknown = l;
                found |= strcasecmp(t, name) == 0;
        }
        return found;
}

static void propagate_done(struct propagate *p)
{
        free(p->limits);
        free(p->limits_src);
        free(p->except);
        free(p->except_src);
        free(p->bad);
}

static void memlock_fact(struct facts *f, const char *conf, const struct propagate *p)
{
        const char *name = "slurm.propagate_memlock", *unknown = NULL;
        if (p->bad) {
                fact_unreadable(f, p->bad, p->bad_rc, "slurm.conf reads it", "%s", name);
                return;
        }
        if (p->except) {
                /* slurm.conf(5): every limit is propagated but those listed */
                bool out = list_has(p->except, "MEMLOCK", &unknown) || list_has(p->except, "ALL", &unknown);
                if (unknown)
                        fact_unreadable(f, p->except_src, -EINVAL, "a limit name Slurm refuses", "%s", name);
                else
                        fact_bool(f, p->except_src, !out, "%s", name);
                return;
        }
        if (p->limits) {
                bool in = !list_has(p->limits, "NONE", &unknown) &&
                          (list_has(p->limits, "MEMLOCK", &unknown) || list_has(p->limits, "ALL", &unknown));
                if (unknown)
                        fact_unreadable(f, p->limits_src, -EINVAL, "a limit name Slurm refuses", "%s", name);
                else
                        fact_bool(f, p->limits_src, in, "%s", name);
                return;
        }
        _cleanup_free_ char *src = xasprintf("%s (no PropagateResourceLimits or PropagateResourceLimitsExcept: "
                                             "Slurm's default, ALL)",
                                             conf);
        fact_bool(f, src, true, "%s", name);
}

static int slurm_run(struct facts *f)
{
        struct root *r = facts_root(f);
        const char *data;
        size_t i;
        int rc = root_read_first(r, conf_paths, ARRAY_SIZE(conf_paths), &i, &data);
        if (rc < 0 && rc != -ENOENT) {
                fact_unreadable(f, conf_paths[i], rc, NULL, "slurm.conf");
                fact_unreadable(f, conf_paths[i], rc, NULL, "slurm.propagate_memlock");
                return 0;
        }
        if (rc == 0) {
                fact_str(f, conf_paths[i], conf_paths[i], "slurm.conf");
                _cleanup_free_ char *dir = xstrndup(conf_paths[i], (size_t)(strrchr(conf_paths[i], '/') - conf_paths[i]));
                struct propagate p = {0};
                parse_file(r, conf_paths[i], dir, 0, &p);
                memlock_fact(f, conf_paths[i], &p);
                propagate_done(&p);
                return 0;
        }
        const char *why = "no slurm.conf (/etc/slurm, /etc/slurm-llnl, a configless slurmd's cache): not a Slurm node";
        fact_absent(f, "/etc/slurm/slurm.conf", why, "slurm.conf");
        fact_absent(f, "/etc/slurm/slurm.conf", why, "slurm.propagate_memlock");
        return 0;
}

const struct probe probe_slurm = {
        .name = "slurm",
        .prefixes = {"slurm."},
        .run = slurm_run,
};
