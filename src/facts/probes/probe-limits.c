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

#include "facts/readers/dropin-order.h"
#include "facts/facts.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

#define LIMITS_CONF "/etc/security/limits.conf"
#define LIMITS_D "/etc/security/limits.d"
#define SYSTEM_CONF "/etc/systemd/system.conf"
#define SYSTEMD_DEFAULT_MEMLOCK (8ull << 20) /* systemd-system.conf(5): DefaultLimitMEMLOCK=8M */

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

/* The setting in effect of KEY ("* soft memlock", "Manager.DefaultLimitMEMLOCK") in family F's files,
 * by the family's rule (dropin-order.h); NULL when no line sets it. An unreadable file makes the
 * pair unknown. *E is the caller's to release. */
static const struct dropin_entry *effective(struct root *r, const struct dropin_family *f, const char *key,
                                            struct dropin_entries *e, struct pair *p)
{
        _cleanup_free_ char *bad = NULL;
        int rc = dropin_entries_load(r, f, NULL, e, &bad);
        if (rc < 0) {
                pair_read(p, bad, rc);
                return NULL;
        }
        return dropin_effective(r, e, key);
}

/* --- pam_limits: limits.conf, then limits.d/\*.conf in name order; the last line of the domain wins */

static void login_limits(struct root *r, const char *domain, struct pair *ret)
{
        struct lim *l[2] = {&ret->soft, &ret->hard};
        const char *types[2] = {"soft", "hard"};
        for (int k = 0; k < 2 && !ret->bad; k++) {
                struct dropin_entries e;
                _cleanup_free_ char *key = xasprintf("%s %s memlock", domain, types[k]);
                const struct dropin_entry *w = effective(r, &dropin_limits, key, &e, ret);
                bool unlimited;
                uint64_t bytes;
                if (w && dropin_limits.number(w->value, &unlimited, &bytes) == 0) {
                        _cleanup_free_ char *src = xasprintf("%s:%u", w->file->path, w->line);
                        lim_set(l[k], unlimited, bytes, src);
                }
                dropin_entries_done(&e);
        }
}

/* --- systemd: system.conf, then the system.conf.d drop-ins; the last DefaultLimitMEMLOCK= wins --- */

/* Returns whether a setting or system.conf was found. */
static bool service_limits(struct root *r, struct pair *ret)
{
        struct dropin_entries e;
        const struct dropin_entry *w = effective(r, &dropin_system_conf, "Manager.DefaultLimitMEMLOCK", &e, ret);
        struct rlimit_pair p;
        if (!ret->bad && w && rlimit_pair_parse(w->value, &p) == 0) {
                _cleanup_free_ char *src = xasprintf("%s:%u", w->file->path, w->line);
                lim_set(&ret->soft, p.soft_unlimited, p.soft, src);
                lim_set(&ret->hard, p.hard_unlimited, p.hard, src);
        }
        dropin_entries_done(&e);
        struct stat st;
        return ret->bad || w || root_stat(r, SYSTEM_CONF, &st, true) == 0;
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
        const char *rel;
        int new = kernel_release_at_least(f, 5, 16, &rel);
        if (new >= 0) {
                _cleanup_free_ char *src = xasprintf("kernel default MLOCK_LIMIT for Linux %s (%s since 5.16, "
                                                     "include/uapi/linux/resource.h); no systemd under the root",
                                                     rel, new ? "8 MiB" : "64 KiB before 8 MiB");
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
