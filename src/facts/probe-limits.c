/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * limits.*: the locked-memory limit RDMA needs (limits.conf(5), systemd-system.conf(5)).
 *   limits.memlock.login.{soft,hard}    login sessions: pam_limits from /etc/security/limits.conf, then
 *                                       limits.d/NAME.conf in name order, "*" (default) lines; without one,
 *                                       what the session inherits from its service (sshd, logind)
 *   limits.memlock.root.{soft,hard}     the same for root: a "*" line does not apply to root
 *                                       (limits.conf(5)), only "root" lines do; else inherited
 *   limits.memlock.service.{soft,hard}  services: DefaultLimitMEMLOCK= of systemd-system.conf(5) and its
 *                                       drop-ins; systemd's default 8M when not set; without systemd the
 *                                       kernel's default, MLOCK_LIMIT (include/uapi/linux/resource.h):
 *                                       8 MiB since Linux 5.16, 64 KiB before
 *   limits.memlock.manager.{soft,hard}  what the running service manager (PID 1) has now, from
 *                                       /proc/1/limits "Max locked memory" (proc(5)): a changed
 *                                       DefaultLimitMEMLOCK= is in force only after systemctl
 *                                       daemon-reexec or a reboot
 * Values are bytes (limits.conf counts KiB), or the word "unlimited". A file or drop-in directory
 * that is there but cannot be read makes the values it may set unreadable, never the default.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "facts.h"
#include "parse.h"
#include "probes.h"

#define LIMITS_CONF "/etc/security/limits.conf"
#define LIMITS_D "/etc/security/limits.d"
#define SYSTEM_CONF "/etc/systemd/system.conf"
#define SYSTEMD_DEFAULT_MEMLOCK (8ull << 20) /* systemd-system.conf(5): DefaultLimitMEMLOCK=8M */
#define MAX_FILES 4096

struct lim {
        bool set, unlimited;
        uint64_t bytes;
        char *src;
};

struct pair {
        struct lim soft, hard;
        char *bad; /* a file or directory that is there but could not be read: both values unknown */
        int bad_rc;
};

/* RC of reading PATH for P: 0 when there is something to parse; "not there" is not an error;
 * anything else makes P unknown (the first such path is the one reported). */
static bool pair_read(struct pair *p, const char *path, int rc)
{
        if (rc < 0 && !root_gone(rc) && !p->bad) {
                p->bad = xstrdup(path);
                p->bad_rc = rc;
        }
        return rc == 0;
}

static void lim_set(struct lim *l, bool unlimited, uint64_t bytes, const char *src)
{
        l->set = true;
        l->unlimited = unlimited;
        l->bytes = bytes;
        free(l->src);
        l->src = xstrdup(src);
}

static void record(struct facts *f, const struct lim *l, const char *name)
{
        if (l->unlimited)
                fact_str(f, l->src, "unlimited", "%s", name);
        else
                fact_uint(f, l->src, l->bytes, "%s", name);
}

/* --- pam_limits ------------------------------------------------------------------------------- */

/* limits.conf(5): "domain type item value"; memlock in KiB; "-" sets both; unlimited/infinity/-1.
 * Lines of the same domain replace earlier ones (pam_limits.c process_limit); a bad value is
 * ignored, as pam_limits does. Only DOMAIN's lines: "*" (what every user but root gets) or "root". */
static void parse_limits(const char *path, const char *data, const char *domain, struct pair *ret)
{
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                char *line = it.line;
                char *hash = strchr(line, '#');
                if (hash)
                        *hash = '\0';
                char dom[64], type[16], item[32], value[64], extra;
                if (sscanf(line, "%63s %15s %31s %63s %c", dom, type, item, value, &extra) != 4)
                        continue;
                if (!streq(dom, domain) || !streq(item, "memlock"))
                        continue;
                bool unlimited = streq(value, "unlimited") || streq(value, "infinity") || streq(value, "-1");
                uint64_t kib = 0;
                if (!unlimited && parse_u64(value, &kib) < 0)
                        continue;
                if (kib > UINT64_MAX / 1024)
                        unlimited = true;
                _cleanup_free_ char *src = xasprintf("%s:%u", path, it.lineno);
                if (streq(type, "soft") || streq(type, "-"))
                        lim_set(&ret->soft, unlimited, kib * 1024, src);
                if (streq(type, "hard") || streq(type, "-"))
                        lim_set(&ret->hard, unlimited, kib * 1024, src);
        }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void login_limits(struct root *r, const char *domain, struct pair *ret)
{
        const char *data;
        if (pair_read(ret, LIMITS_CONF, root_read(r, LIMITS_CONF, &data, NULL)))
                parse_limits(LIMITS_CONF, data, domain, ret);
        struct strv names = {0};
        if (pair_read(ret, LIMITS_D, root_list(r, LIMITS_D, &names)) && names.n > 0 && names.n < MAX_FILES) {
                qsort_safe(names.v, names.n, sizeof(*names.v), cmp_str);
                for (size_t i = 0; i < names.n; i++) {
                        if (!endswith(names.v[i], ".conf") || names.v[i][0] == '.')
                                continue;
                        _cleanup_free_ char *path = xasprintf(LIMITS_D "/%s", names.v[i]);
                        if (pair_read(ret, path, root_read(r, path, &data, NULL)))
                                parse_limits(path, data, domain, ret);
                }
        }
        strv_done(&names);
}

/* --- systemd ---------------------------------------------------------------------------------- */

static void parse_system_conf(const char *path, const char *data, struct pair *ret)
{
        bool manager = false;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                char *line = it.line;
                strip_trailing(line);
                const char *l = line;
                while (isspace((unsigned char)*l))
                        l++;
                if (*l == '#' || *l == ';' || !*l)
                        continue;
                if (*l == '[') {
                        manager = streq(l, "[Manager]");
                        continue;
                }
                if (!manager || !startswith(l, "DefaultLimitMEMLOCK"))
                        continue;
                const char *v = l + strlen("DefaultLimitMEMLOCK");
                while (*v == ' ' || *v == '\t')
                        v++;
                if (*v != '=')
                        continue;
                v++;
                while (*v == ' ' || *v == '\t')
                        v++;
                /* "SOFT:HARD" or one value for both (systemd.exec(5) LimitCPU=); a bad value is ignored */
                struct rlimit_pair p;
                if (rlimit_pair_parse(v, &p) < 0)
                        continue;
                _cleanup_free_ char *src = xasprintf("%s:%u", path, it.lineno);
                lim_set(&ret->soft, p.soft_unlimited, p.soft, src);
                lim_set(&ret->hard, p.hard_unlimited, p.hard, src);
        }
}

/* systemd-system.conf(5): system.conf, then the drop-ins of every system.conf.d in name order; a
 * name in /etc hides the same name in /run and /usr/lib. Returns whether any file was found. */
static bool service_limits(struct root *r, struct pair *ret)
{
        static const char *const dirs[] = {"/etc/systemd/system.conf.d", "/run/systemd/system.conf.d",
                                           "/usr/local/lib/systemd/system.conf.d", "/usr/lib/systemd/system.conf.d",
                                           "/lib/systemd/system.conf.d"};
        const char *data;
        bool found = false;
        if (pair_read(ret, SYSTEM_CONF, root_read(r, SYSTEM_CONF, &data, NULL))) {
                parse_system_conf(SYSTEM_CONF, data, ret);
                found = true;
        }
        struct strv names = {0}, paths = {0};
        for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
                struct strv l = {0};
                if (pair_read(ret, dirs[d], root_list(r, dirs[d], &l)))
                        for (size_t i = 0; i < l.n && names.n < MAX_FILES; i++)
                                if (endswith(l.v[i], ".conf") && !strv_contains(&names, l.v[i])) {
                                        strv_add(&names, l.v[i]);
                                        strv_push(&paths, xasprintf("%s/%s", dirs[d], l.v[i]));
                                }
                strv_done(&l);
        }
        /* name order across directories */
        for (size_t i = 1; i < names.n; i++)
                for (size_t j = i; j > 0 && strcmp(names.v[j - 1], names.v[j]) > 0; j--) {
                        char *t = names.v[j];
                        names.v[j] = names.v[j - 1];
                        names.v[j - 1] = t;
                        t = paths.v[j];
                        paths.v[j] = paths.v[j - 1];
                        paths.v[j - 1] = t;
                }
        for (size_t i = 0; i < paths.n; i++)
                if (pair_read(ret, paths.v[i], root_read(r, paths.v[i], &data, NULL))) {
                        parse_system_conf(paths.v[i], data, ret);
                        found = true;
                }
        strv_done(&names);
        strv_done(&paths);
        return found;
}

static void pair_done(struct pair *p)
{
        free(p->soft.src);
        free(p->hard.src);
        free(p->bad);
}

/* MLOCK_LIMIT: 8 MiB since Linux 5.16 (include/uapi/linux/resource.h), 64 KiB before. */
static void kernel_default(struct facts *f, struct lim *l)
{
        const struct fact *rel = facts_get(f, "kernel.release");
        unsigned a = 0, b = 0;
        if (rel && rel->status == FACT_OK && sscanf(rel->str, "%u.%u", &a, &b) == 2) {
                bool new = a > 5 || (a == 5 && b >= 16);
                _cleanup_free_ char *src = xasprintf("kernel default MLOCK_LIMIT for Linux %s (%s since 5.16, "
                                                     "include/uapi/linux/resource.h); no systemd under the root",
                                                     rel->str, new ? "8 MiB" : "64 KiB before 8 MiB");
                lim_set(l, false, new ? 8ull << 20 : 64ull << 10, src);
        } else
                /* either default is at most 8 MiB: a minimum above it fails on both */
                lim_set(l, false, 8ull << 20, "kernel default MLOCK_LIMIT, at most 8 MiB (64 KiB before Linux 5.16; "
                                              "the release is unknown); no systemd under the root");
}

static bool has_systemd(struct root *r)
{
        static const char *const bins[] = {"/usr/lib/systemd/systemd", "/lib/systemd/systemd"};
        struct stat st;
        for (size_t i = 0; i < ARRAY_SIZE(bins); i++)
                if (root_stat(r, bins[i], &st, true) == 0)
                        return true;
        return root_stat(r, "/etc/systemd/system", &st, true) == 0;
}

/* /proc/1/limits: "Max locked memory  SOFT  HARD  bytes" (fs/proc/base.c proc_pid_limits). */
static void manager_limits(struct facts *f)
{
        const char *path = "/proc/1/limits", *data;
        int rc = root_read(facts_root(f), path, &data, NULL);
        const char *names[2] = {"limits.memlock.manager.soft", "limits.memlock.manager.hard"};
        if (rc < 0) {
                for (int k = 0; k < 2; k++)
                        if (rc == -ENOENT)
                                fact_absent(f, path, root_runs_here(facts_root(f)) ? "no /proc/1/limits"
                                                                                 : "no /proc/1/limits in this tree",
                                            "%s", names[k]);
                        else
                                fact_unreadable(f, path, rc, NULL, "%s", names[k]);
                return;
        }
        const char *line = strstr(data, "\nMax locked memory");
        char v[2][32];
        if (!line || sscanf(line + strlen("\nMax locked memory"), " %31s %31s", v[0], v[1]) != 2) {
                for (int k = 0; k < 2; k++)
                        fact_unreadable(f, path, -EBADMSG, "no \"Max locked memory\" line", "%s", names[k]);
                return;
        }
        for (int k = 0; k < 2; k++) {
                uint64_t n;
                if (streq(v[k], "unlimited"))
                        fact_str(f, path, "unlimited", "%s", names[k]);
                else if (parse_u64(v[k], &n) == 0)
                        fact_uint(f, path, n, "%s", names[k]);
                else
                        fact_unreadable(f, path, -EBADMSG, "not a number", "%s", names[k]);
        }
}

static void session_facts(struct facts *f, struct pair *own, const struct pair *svc, const char *who,
                          const char *domain_text)
{
        struct lim *ll[2] = {&own->soft, &own->hard};
        const struct lim *sl[2] = {&svc->soft, &svc->hard};
        const char *kinds[2] = {"soft", "hard"};
        for (int k = 0; k < 2; k++) {
                _cleanup_free_ char *name = xasprintf("limits.memlock.%s.%s", who, kinds[k]);
                if (own->bad) {
                        /* a line there may set it */
                        fact_unreadable(f, own->bad, own->bad_rc, "pam_limits reads it (limits.conf(5))", "%s", name);
                        continue;
                }
                if (!ll[k]->set && svc->bad) {
                        fact_unreadable(f, svc->bad, svc->bad_rc,
                                        "no memlock line for the session: it inherits the services' limit, unknown",
                                        "%s", name);
                        continue;
                }
                if (!ll[k]->set) {
                        /* no line for the domain: the session keeps what sshd/logind run with */
                        _cleanup_free_ char *src = xasprintf("no %s memlock line in " LIMITS_CONF " or " LIMITS_D
                                                             "; inherited from %s",
                                                             domain_text, sl[k]->src);
                        lim_set(ll[k], sl[k]->unlimited, sl[k]->bytes, src);
                }
                record(f, ll[k], name);
        }
}

static int limits_run(struct facts *f)
{
        struct root *r = facts_root(f);
        struct pair svc = {0}, login = {0}, root = {0};
        bool systemd = service_limits(r, &svc) || has_systemd(r);
        const char *dflt = "systemd default (DefaultLimitMEMLOCK=8M, systemd-system.conf(5))";
        struct lim *sl[2] = {&svc.soft, &svc.hard};
        for (int k = 0; k < 2; k++) {
                const char *name = k ? "limits.memlock.service.hard" : "limits.memlock.service.soft";
                if (svc.bad) {
                        /* a DefaultLimitMEMLOCK= there would decide it, not the default */
                        fact_unreadable(f, svc.bad, svc.bad_rc, "systemd reads it (systemd-system.conf(5))", "%s",
                                        name);
                        continue;
                }
                /* nothing configured is not "no limit": it is systemd's or the kernel's default */
                if (!sl[k]->set && systemd)
                        lim_set(sl[k], false, SYSTEMD_DEFAULT_MEMLOCK, dflt);
                else if (!sl[k]->set)
                        kernel_default(f, sl[k]);
                record(f, sl[k], name);
        }
        login_limits(r, "*", &login);
        login_limits(r, "root", &root);
        session_facts(f, &login, &svc, "login", "\"*\"");
        session_facts(f, &root, &svc, "root", "\"root\" (a \"*\" line does not apply to root)");
        manager_limits(f);
        pair_done(&svc);
        pair_done(&login);
        pair_done(&root);
        return 0;
}

const struct probe probe_limits = {
        .name = "limits",
        .prefixes = {"limits."},
        .run = limits_run,
};
