/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * service.*: systemd units enabled at boot, read from the unit tree, never from a running
 * systemd (a foreign root has none). A unit is enabled when a symlink to it sits in a
 * *.wants/ or *.requires/ directory of /etc/systemd/system (what "systemctl enable" creates,
 * systemctl(1)), and not masked (a /etc/systemd/system/UNIT link to /dev/null).
 *   service.enabled            sorted names of the enabled units
 *   service.NAME.enabled       bool; NAME without ".service" means a service
 *   service.NAME.installed     a unit file exists in a unit directory (systemd.unit(5) search path)
 * A unit is also enabled when a udev rule pulls it in through the SYSTEMD_WANTS device property
 * (systemd.device(5)): the NVIDIA driver packages of Ubuntu and DGX OS start nvidia-persistenced
 * that way (ENV{SYSTEMD_WANTS}="nvidia-persistenced.service"), with no .wants link at all. Rules
 * files are read as udev(7) does: *.rules in /etc, /run, /usr/local/lib, /usr/lib and /lib
 * udev/rules.d, a name in an earlier directory hiding the same name in a later one, a link to
 * /dev/null hiding it altogether. The fact's source is then the rules file.
 * fabricmanager.version: the installed nvidia-fabricmanager package's upstream version, from the
 *   dpkg database (/var/lib/dpkg/status: nvidia-fabricmanager or nvidia-fabricmanager-BRANCH), else
 *   the rpm database (/var/lib/rpm/rpmdb.sqlite, rpmdb.h: the same names, NVIDIA's
 *   yum-packaging-fabric-manager spec), else a capture of `nv-fabricmanager --version`
 *   (/var/lib/llmtune/captures/nv-fabricmanager-version.txt, which gather writes); unreadable, saying
 *   why for each source, when none has it but the unit is there; absent when no source and no unit
 *   directory knows nvidia-fabricmanager (not installed).
 * fabricmanager.driver_match: that version equals the loaded driver's (nvidia.driver.version, from
 *   /proc/driver/nvidia/version): the NVIDIA Fabric Manager user guide requires the same version,
 *   and the fabric manager refuses to start on a mismatch.
 * nvlsm.installed, nvlsm.version: the NVLink Subnet Manager package ("nvlsm"), dpkg's database else
 *   rpm's; unreadable when neither database answers.
 * gpudirect.peermem: the loaded GPUDirect RDMA peer-memory module, nvidia_peermem (driver 470+) or
 * nv_peer_mem (Mellanox's older one), or "none".
 * gpudirect.dmabuf: GPUDirect RDMA through DMA-BUF is possible: the NVIDIA open kernel module
 *   ("Open Kernel Module" in /proc/driver/nvidia/version, driver 515+) on Linux 5.12+. NCCL uses it by
 *   default (NCCL_DMABUF_ENABLE=1, NCCL environment variables documentation) and NVIDIA's GPU Operator
 *   documentation recommends it over nvidia-peermem.
 * gpudirect.ofed: MLNX_OFED / DOCA-OFED is installed (/usr/bin/ofed_info, or its peer-memory API
 *   ib_register_peer_memory_client in /proc/kallsyms): the only stack nvidia_peermem loads against
 *   (its init fails on the inbox RDMA stack), per NVIDIA's GPUDirect RDMA documentation.
 * gpudirect.mode: "dmabuf", "peermem" (the module's name is in gpudirect.peermem) or "none".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "facts/readers/dropin-order.h"
#include "facts/facts.h"
#include "facts/probes/probes.h"
#include "facts/adapters/rpmdb.h"

#define ETC_UNITS "/etc/systemd/system"
#define MAX_UNITS 65536

static const char *const unit_dirs[] = {"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
                                        "/usr/lib/systemd/system", "/lib/systemd/system"};

struct svc_state {
        bool loaded;
        int rc;             /* of listing /etc/systemd/system */
        struct strv enabled; /* unit names with a link in a .wants/.requires directory */
        bool udev_read;
        struct strv udev_wants; /* "UNIT\tRULES-FILE" for each unit a udev rule's SYSTEMD_WANTS names */
        /* the first .wants/.requires directory, udev rules directory or rules file that is there but
         * could not be read: a unit found nowhere else may be enabled there */
        char *wants_bad, *udev_bad;
        int wants_bad_rc, udev_bad_rc;
};

static void note_bad(char **bad, int *bad_rc, const char *path, int rc)
{
        if (rc < 0 && !root_gone(rc) && !*bad) {
                *bad = xstrdup(path);
                *bad_rc = rc;
        }
}

static void svc_free(void *p)
{
        struct svc_state *s = p;
        if (!s)
                return;
        strv_done(&s->enabled);
        strv_done(&s->udev_wants);
        free(s->wants_bad);
        free(s->udev_bad);
        free(s);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool masked(struct root *r, const char *unit)
{
        _cleanup_free_ char *p = xasprintf(ETC_UNITS "/%s", unit);
        return root_masked(r, p);
}

static struct svc_state *get_state(struct facts *f)
{
        struct svc_state *s = facts_handle(f, "probe-service");
        if (s)
                return s;
        s = xcalloc(1, sizeof(*s));
        facts_set_handle(f, "probe-service", s, svc_free);
        struct root *r = facts_root(f);
        struct strv dirs = {0};
        s->rc = root_list(r, ETC_UNITS, &dirs);
        for (size_t i = 0; s->rc == 0 && i < dirs.n; i++) {
                if (!endswith(dirs.v[i], ".wants") && !endswith(dirs.v[i], ".requires"))
                        continue;
                _cleanup_free_ char *d = xasprintf(ETC_UNITS "/%s", dirs.v[i]);
                struct strv units = {0};
                int rc = root_list(r, d, &units);
                note_bad(&s->wants_bad, &s->wants_bad_rc, d, rc);
                if (rc == 0)
                        for (size_t k = 0; k < units.n && s->enabled.n < MAX_UNITS; k++)
                                if (!strv_contains(&s->enabled, units.v[k]) && !masked(r, units.v[k]))
                                        strv_add(&s->enabled, units.v[k]);
                strv_done(&units);
        }
        strv_done(&dirs);
        if (s->enabled.n) /* qsort's array may not be NULL, even when empty (C17 7.22.5) */
                qsort_safe(s->enabled.v, s->enabled.n, sizeof(*s->enabled.v), cmp_str);
        return s;
}

/* The units one rules line assigns to ENV{SYSTEMD_WANTS} ("=" or "+=", not the "==" match). */
static void udev_line(const char *line, const char *path, struct strv *ret)
{
        line += strspn(line, " \t");
        if (*line == '#')
                return;
        for (const char *p = strstr(line, "ENV{SYSTEMD_WANTS}"); p; p = strstr(p + 1, "ENV{SYSTEMD_WANTS}")) {
                const char *op = p + strlen("ENV{SYSTEMD_WANTS}");
                op += strspn(op, " \t");
                if (startswith(op, "+="))
                        op += 2;
                else if (*op == '=' && op[1] != '=')
                        op += 1;
                else
                        continue;
                op += strspn(op, " \t");
                if (*op != '"')
                        continue;
                const char *end = strchr(op + 1, '"');
                if (!end)
                        continue;
                _cleanup_free_ char *v = xstrndup(op + 1, (size_t)(end - op - 1));
                char *save = NULL;
                for (char *u = strtok_r(v, " \t", &save); u; u = strtok_r(NULL, " \t", &save))
                        strv_push(ret, xasprintf("%s\t%s", u, path));
        }
}

/* udev(7): *.rules of /etc, /run, /usr/local/lib, /usr/lib, /lib udev/rules.d, merged by name (an
 * earlier directory's file hides a later one of the same name, a /dev/null link masks it) and read
 * in name order: the family model of dropin-order.h. */
static void udev_read(struct root *r, struct svc_state *s)
{
        if (s->udev_read)
                return;
        s->udev_read = true;
        struct dropin_list l;
        _cleanup_free_ char *bad = NULL;
        int rc = dropin_list_load(r, &dropin_udev, NULL, &l, &bad);
        if (rc < 0) {
                note_bad(&s->udev_bad, &s->udev_bad_rc, bad, rc);
                return;
        }
        for (size_t i = 0; i < l.n; i++) {
                const char *path = l.v[i].path;
                if (root_masked(r, path))
                        continue;
                const char *data;
                rc = root_read(r, path, &data, NULL);
                note_bad(&s->udev_bad, &s->udev_bad_rc, path, rc);
                if (rc < 0)
                        continue;
                _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
                while (line_next(&it))
                        udev_line(it.line, path, &s->udev_wants);
        }
        dropin_list_done(&l);
}

/* The rules file whose SYSTEMD_WANTS names UNIT, or NULL. */
static const char *udev_wanted_by(struct root *r, struct svc_state *s, const char *unit)
{
        udev_read(r, s);
        size_t ul = strlen(unit);
        for (size_t i = 0; i < s->udev_wants.n; i++)
                if (strncmp(s->udev_wants.v[i], unit, ul) == 0 && s->udev_wants.v[i][ul] == '\t')
                        return s->udev_wants.v[i] + ul + 1;
        return NULL;
}

/* The first unit directory (systemd.unit(5) search path) that holds UNIT, or NULL. A path there
 * that cannot be looked at (EACCES, ELOOP of a directory) leaves it unknown: *bad, *bad_rc. */
static const char *unit_file_dir(struct root *r, const char *unit, char **bad, int *bad_rc)
{
        for (size_t i = 0; i < ARRAY_SIZE(unit_dirs); i++) {
                _cleanup_free_ char *p = xasprintf("%s/%s", unit_dirs[i], unit);
                struct stat st;
                int rc = root_stat(r, p, &st, false);
                if (rc == 0)
                        return unit_dirs[i];
                note_bad(bad, bad_rc, p, rc);
                if (*bad)
                        return NULL;
        }
        return NULL;
}

static void unit_facts(struct facts *f, const char *name)
{
        struct root *r = facts_root(f);
        struct svc_state *s = get_state(f);
        _cleanup_free_ char *unit = strchr(name, '.') ? xstrdup(name) : xasprintf("%s.service", name);
        if (s->rc < 0) {
                const char *why = "no " ETC_UNITS " under the root (not systemd, or a trimmed tree)";
                if (s->rc == -ENOENT) {
                        fact_absent(f, ETC_UNITS, why, "service.%s.enabled", name);
                        fact_absent(f, ETC_UNITS, why, "service.%s.installed", name);
                } else {
                        fact_unreadable(f, ETC_UNITS, s->rc, NULL, "service.%s.enabled", name);
                        fact_unreadable(f, ETC_UNITS, s->rc, NULL, "service.%s.installed", name);
                }
                return;
        }
        const char *by_udev = NULL;
        bool is_masked = masked(r, unit);
        if (!strv_contains(&s->enabled, unit) && !is_masked)
                by_udev = udev_wanted_by(r, s, unit);
        if (strv_contains(&s->enabled, unit) || by_udev || is_masked)
                fact_bool(f, by_udev ? by_udev : ETC_UNITS, !is_masked, "service.%s.enabled", name);
        else if (s->wants_bad)
                fact_unreadable(f, s->wants_bad, s->wants_bad_rc, "a unit link there may enable it",
                                "service.%s.enabled", name);
        else if (s->udev_bad)
                fact_unreadable(f, s->udev_bad, s->udev_bad_rc, "a udev rule there may pull it in (SYSTEMD_WANTS)",
                                "service.%s.enabled", name);
        else
                fact_bool(f, ETC_UNITS, false, "service.%s.enabled", name);
        _cleanup_free_ char *bad = NULL;
        int bad_rc = 0;
        const char *found = unit_file_dir(r, unit, &bad, &bad_rc);
        if (bad)
                fact_unreadable(f, bad, bad_rc, "the unit file may be there", "service.%s.installed", name);
        else
                fact_bool(f, found ? found : ETC_UNITS, found != NULL, "service.%s.installed", name);
}

static void peermem(struct facts *f)
{
        static const char *const mods[] = {"nvidia_peermem", "nv_peer_mem"};
        const struct fact *first_bad = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(mods); i++) {
                _cleanup_free_ char *n = xasprintf("module.%s.loaded", mods[i]);
                const struct fact *fc = facts_get(f, n);
                if (fc && fc->status == FACT_OK && fc->type == FACT_BOOL && fc->b) {
                        fact_str(f, fc->source, mods[i], "gpudirect.peermem");
                        return;
                }
                if ((!fc || fc->status != FACT_OK) && !first_bad)
                        first_bad = fc;
        }
        const struct fact *any = facts_get(f, "module.nvidia_peermem.loaded");
        if (!any || any->status == FACT_ABSENT)
                fact_absent(f, any ? any->source : "/proc/modules", any ? any->reason : "module facts unknown",
                            "gpudirect.peermem");
        else if (first_bad)
                fact_unreadable(f, first_bad->source, -EIO, first_bad->reason, "gpudirect.peermem");
        else
                fact_str(f, any->source, "none", "gpudirect.peermem");
}

static void dmabuf(struct facts *f)
{
        const char *path = "/proc/driver/nvidia/version";
        const struct fact *ver = facts_get(f, "nvidia.driver.version");
        if (!ver || ver->status != FACT_OK) {
                if (ver && ver->status == FACT_UNREADABLE)
                        fact_unreadable(f, path, -EIO, ver->reason, "gpudirect.dmabuf");
                else
                        fact_absent(f, path, "no NVIDIA driver loaded", "gpudirect.dmabuf");
                return;
        }
        const struct fact *rel = facts_get(f, "kernel.release");
        if (!rel || rel->status != FACT_OK) {
                fact_unreadable(f, rel ? rel->source : "/proc/sys/kernel/osrelease", -EIO, "kernel release unknown",
                                "gpudirect.dmabuf");
                return;
        }
        const char *data = NULL;
        bool open = root_read(facts_root(f), path, &data, NULL) == 0 && strstr(data, "Open Kernel Module");
        bool ok = open && atoi(ver->str) >= 515 && kernel_release_at_least(f, 5, 12, NULL) > 0;
        fact_bool(f, path, ok, "gpudirect.dmabuf");
}

/* The kernel's peer-memory API, which only MLNX_OFED's ib_core exports. */
#define PEER_MEMORY_SYMBOL " ib_register_peer_memory_client"

/* gather: of the large file PATH (DATA, LEN bytes) only the lines holding NEEDLE go into the
 * archive, which is all this probe reads of it (5 MB of /proc/kallsyms, the kernel's layout, for
 * one symbol). The archive then answers the same. */
static void record_lines_with(struct root *r, const char *path, const char *data, size_t len, const char *needle)
{
        if (!root_recording(r))
                return;
        struct sbuf b = {0};
        sbuf_addn(&b, "", 0);
        for (const char *p = data; p < data + len;) {
                const char *nl = memchr(p, '\n', (size_t)(data + len - p));
                size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(data + len - p);
                _cleanup_free_ char *line = xstrndup(p, n);
                if (strstr(line, needle))
                        sbuf_addn(&b, p, n);
                p += n;
        }
        root_record_data(r, path, b.s, b.len);
        free(sbuf_steal(&b));
}

static void ofed(struct facts *f)
{
        struct root *r = facts_root(f);
        struct stat st;
        if (root_stat(r, "/usr/bin/ofed_info", &st, true) == 0) {
                fact_bool(f, "/usr/bin/ofed_info", true, "gpudirect.ofed");
                return;
        }
        const char *data = NULL;
        size_t len = 0;
        int rc = root_read(r, "/proc/kallsyms", &data, &len);
        if (rc == 0)
                record_lines_with(r, "/proc/kallsyms", data, len, PEER_MEMORY_SYMBOL);
        if (rc == 0 && strstr(data, PEER_MEMORY_SYMBOL)) {
                fact_bool(f, "/proc/kallsyms", true, "gpudirect.ofed");
                return;
        }
        /* no ofed_info and (if kallsyms is there) no peer-memory API: the inbox stack */
        fact_bool(f, "/usr/bin/ofed_info", false, "gpudirect.ofed");
}

static void gpudirect_mode(struct facts *f)
{
        const struct fact *d = facts_get(f, "gpudirect.dmabuf");
        const struct fact *p = facts_get(f, "gpudirect.peermem");
        if (d && d->status == FACT_OK && d->b) {
                fact_str(f, d->source, "dmabuf", "gpudirect.mode");
                return;
        }
        if (p && p->status == FACT_OK && !streq(p->str, "none")) {
                fact_str(f, p->source, "peermem", "gpudirect.mode");
                return;
        }
        const struct fact *bad = d && d->status != FACT_OK ? d : p && p->status != FACT_OK ? p : NULL;
        if (!bad)
                fact_str(f, p ? p->source : "/proc/modules", "none", "gpudirect.mode");
        else if (bad->status == FACT_ABSENT)
                fact_absent(f, bad->source, bad->reason, "gpudirect.mode");
        else
                fact_unreadable(f, bad->source, -EIO, bad->reason, "gpudirect.mode");
}

static void gpudirect(struct facts *f, const char *name)
{
        if (!name || streq(name, "gpudirect.peermem"))
                peermem(f);
        if (!name || streq(name, "gpudirect.dmabuf"))
                dmabuf(f);
        if (!name || streq(name, "gpudirect.ofed"))
                ofed(f);
        if (name && streq(name, "gpudirect.mode")) {
                /* facts_get of a sibling from inside this probe's lookup finds nothing: record the
                 * inputs first (the first writer wins, so a repeat is harmless) */
                peermem(f);
                dmabuf(f);
        }
        if (!name || streq(name, "gpudirect.mode"))
                gpudirect_mode(f);
}

/* dpkg's status file, /var/lib/ + "dpkg" + /status, put together at run time. llmtune only reads it,
 * for the fabric manager's version, and under --root the audited tree's copy, which dpkg-query cannot
 * be asked about. Debian's lintian flags any binary that holds the whole path as a string
 * (uses-dpkg-database-directly); its override did not take in the package test (lintian 2.116 still
 * exited 2), so the path is not one string in the binary. The volatile part keeps the compiler from
 * folding it back into one. */
static const char *dpkg_status_path(void)
{
        static char path[32];
        static const char *volatile db = "dpkg";
        if (!path[0])
                snprintf(path, sizeof(path), "/var/lib/%s/status", db);
        return path;
}
#define DPKG_STATUS dpkg_status_path()

/* "nvidia-fabricmanager" or "nvidia-fabricmanager-535" (the CUDA repository's and Ubuntu's names),
 * not "nvidia-fabricmanager-dev-535" or "cuda-drivers-fabricmanager-535". */
static bool fm_package(const char *name)
{
        if (streq(name, "nvidia-fabricmanager"))
                return true;
        if (!startswith(name, "nvidia-fabricmanager-"))
                return false;
        const char *b = name + strlen("nvidia-fabricmanager-");
        return *b && strspn(b, "0123456789") == strlen(b);
}

/* The upstream part of a Debian version (deb-version(7)): no "EPOCH:", no "-REVISION". */
static char *upstream_version(const char *v)
{
        const char *colon = strchr(v, ':');
        if (colon && strspn(v, "0123456789") == (size_t)(colon - v))
                v = colon + 1;
        const char *dash = strrchr(v, '-');
        return dash ? xstrndup(v, (size_t)(dash - v)) : xstrdup(v);
}

/* The NVLink Subnet Manager's package (the CUDA repository's "nvlsm", deb and rpm alike). */
static bool nvlsm_package(const char *name) { return streq(name, "nvlsm"); }

/* The packages whose dpkg paragraphs gather keeps. */
static bool recorded_package(const char *name) { return fm_package(name) || nvlsm_package(name); }

/* gather: of dpkg's status file (a megabyte, every package) only the paragraphs of the fabric
 * manager's and NVLSM's packages go into the archive: all pkg_version_dpkg reads of it, so the
 * archive answers the same (a version, or no such package). */
static void record_fm_paragraphs(struct root *r, const char *data, size_t len)
{
        if (!root_recording(r))
                return;
        struct sbuf b = {0};
        sbuf_addn(&b, "", 0);
        for (const char *p = data; p < data + len;) {
                const char *end = strstr(p, "\n\n");
                size_t n = end ? (size_t)(end - p) + 2 : (size_t)(data + len - p);
                if (startswith(p, "Package: ")) {
                        const char *eol = strchr(p, '\n');
                        _cleanup_free_ char *name = xstrndup(p + 9, (size_t)((eol && eol < p + n ? eol : p + n) - p - 9));
                        if (recorded_package(name))
                                sbuf_addn(&b, p, n);
                }
                p += n;
        }
        root_record_data(r, DPKG_STATUS, b.s, b.len);
        free(sbuf_steal(&b));
}

/* The version of the installed package MATCH accepts (WHAT names it) from dpkg's status file;
 * NULL with *err and *why (-ENOENT: no dpkg database; -ESRCH: no such package in it). */
static char *pkg_version_dpkg(struct root *r, bool (*match)(const char *), const char *what, int *err, char **why)
{
        const char *data;
        size_t len;
        *err = root_read(r, DPKG_STATUS, &data, &len);
        if (*err < 0) {
                *why = root_gone(*err) ? xstrdup("no dpkg database") : xasprintf("%s: %s", DPKG_STATUS, errno_name(*err));
                return NULL;
        }
        record_fm_paragraphs(r, data, len);
        char *found = NULL;
        _cleanup_free_ char *pkg = NULL, *status = NULL, *version = NULL;
        for (const char *p = data; !found && p <= data + len;) {
                const char *nl = memchr(p, '\n', (size_t)(data + len - p));
                size_t n = nl ? (size_t)(nl - p) : (size_t)(data + len - p);
                if (n == 0) { /* end of a paragraph */
                        if (pkg && match(pkg) && status && endswith(status, " installed") && version)
                                found = upstream_version(version);
                        free(pkg), free(status), free(version);
                        pkg = status = version = NULL;
                } else if (startswith(p, "Package: "))
                        free(pkg), pkg = xstrndup(p + 9, n - 9);
                else if (startswith(p, "Status: "))
                        free(status), status = xstrndup(p + 8, n - 8);
                else if (startswith(p, "Version: "))
                        free(version), version = xstrndup(p + 9, n - 9);
                if (!nl)
                        break;
                p = nl + 1;
        }
        if (!found && pkg && match(pkg) && status && endswith(status, " installed") && version)
                found = upstream_version(version); /* the last paragraph, without a blank line after it */
        if (!found) {
                *err = -ESRCH;
                *why = xasprintf("no %s package in the dpkg database", what);
        }
        return found;
}

#define FM_CAPTURE "/var/lib/llmtune/captures/nv-fabricmanager-version.txt"

/* What `nv-fabricmanager --version` printed, kept as a capture (gather writes it; a site may put it
 * there for a .run install): the first dotted number after the word "version" on its line. NULL
 * with *err. */
static char *fm_version_capture(struct root *r, int *err, char **why)
{
        const char *data;
        *err = root_read_text(r, FM_CAPTURE, &data, NULL);
        if (*err < 0) {
                *why = root_gone(*err) ? xstrdup("no capture of `nv-fabricmanager --version` (" FM_CAPTURE ")")
                                       : xasprintf("%s: %s", FM_CAPTURE, errno_name(*err));
                return NULL;
        }
        for (const char *line = data; *line; line += strcspn(line, "\n"), line += *line == '\n') {
                _cleanup_free_ char *l = xstrndup(line, strcspn(line, "\n"));
                const char *v = strcasestr(l, "version");
                if (!v)
                        continue;
                v += strcspn(v, "0123456789");
                size_t n = strspn(v, "0123456789.");
                while (n && v[n - 1] == '.')
                        n--;
                if (n && memchr(v, '.', n))
                        return xstrndup(v, n);
        }
        *err = -EBADMSG;
        *why = xasprintf("%s: no version number after the word \"version\"", FM_CAPTURE);
        return NULL;
}

/* The installed fabric manager's version and where it was read: the dpkg database, the rpm database,
 * else a capture of `nv-fabricmanager --version`. NULL with *err (-ENOENT when no source knows it)
 * and *why naming every source. */
static char *fm_version(struct root *r, const char **src, int *err, char **why)
{
        _cleanup_free_ char *dwhy = NULL, *rwhy = NULL, *cwhy = NULL, *name = NULL;
        char *v = pkg_version_dpkg(r, fm_package, "nvidia-fabricmanager", err, &dwhy);
        *src = DPKG_STATUS;
        if (*err == -ESRCH)
                *err = -ENOENT; /* not in dpkg's database: the next source may know it */
        if (v || !root_gone(*err)) {
                *why = v ? NULL : xstrdup(dwhy);
                return v;
        }
        int rc = rpmdb_package_version(r, fm_package, &name, &v, &rwhy);
        *src = RPMDB_SQLITE;
        if (rc == 0 || (rc != -ENOENT && rc != -ESRCH)) {
                *err = rc;
                *why = rc ? xstrdup(rwhy) : NULL;
                return v;
        }
        v = fm_version_capture(r, err, &cwhy);
        *src = FM_CAPTURE;
        if (!v)
                *why = root_gone(*err) ? xasprintf("%s; %s; %s", dwhy, rwhy, cwhy) : xstrdup(cwhy);
        return v;
}

static void fabricmanager(struct facts *f)
{
        int err = 0;
        const char *src = DPKG_STATUS;
        _cleanup_free_ char *why = NULL;
        _cleanup_free_ char *v = fm_version(facts_root(f), &src, &err, &why);
        const char *unit = "nvidia-fabricmanager.service";
        const struct svc_state *s = get_state(f);
        _cleanup_free_ char *bad = NULL;
        int bad_rc = 0;
        /* a unit directory or .wants directory that cannot be read may hold it: unknown, not "not installed" */
        bool unit_there = unit_file_dir(facts_root(f), unit, &bad, &bad_rc) || bad || (s->rc < 0 && !root_gone(s->rc)) ||
                          s->wants_bad;
        if (!v && !unit_there && !(s->rc >= 0 && strv_contains(&s->enabled, unit))) {
                /* Neither a package dpkg knows, nor a unit file, nor a unit enabled: not installed,
                 * which is not a version that cannot be read (the rule that wants it enabled says so). */
                _cleanup_free_ char *none = xasprintf("%s, and no nvidia-fabricmanager.service unit installed or "
                                                      "enabled: not installed", why);
                fact_absent(f, DPKG_STATUS, none, "fabricmanager.version");
                fact_absent(f, DPKG_STATUS, none, "fabricmanager.driver_match");
                return;
        }
        if (v)
                fact_str(f, src, v, "fabricmanager.version");
        else
                fact_unreadable(f, src, err, why, "fabricmanager.version");
        const struct fact *drv = facts_get(f, "nvidia.driver.version");
        if (!drv || drv->status == FACT_ABSENT)
                fact_absent(f, drv ? drv->source : "/proc/driver/nvidia/version",
                            drv ? drv->reason : "no NVIDIA driver loaded", "fabricmanager.driver_match");
        else if (drv->status != FACT_OK)
                fact_unreadable(f, drv->source, -EIO, drv->reason, "fabricmanager.driver_match");
        else if (!v)
                fact_unreadable(f, src, err, why, "fabricmanager.driver_match");
        else
                fact_bool(f, src, streq(v, drv->str), "fabricmanager.driver_match");
}

/*
 * nvlsm.installed, nvlsm.version: the NVLink Subnet Manager's package, from the dpkg database, else
 * the rpm database. On an NVLink 5 system (nvswitch.bridge_count) the fabric manager's start script
 * runs NVLSM itself; without the package the switches are never configured. No database in the
 * tree is absent (with the paths looked for), a database that cannot be read is unreadable: neither
 * is "not installed".
 */
static void nvlsm(struct facts *f)
{
        struct root *r = facts_root(f);
        int err = 0;
        _cleanup_free_ char *dwhy = NULL, *rwhy = NULL, *name = NULL, *v = NULL;
        const char *src = DPKG_STATUS;
        v = pkg_version_dpkg(r, nvlsm_package, "nvlsm", &err, &dwhy);
        if (!v && root_gone(err)) {
                src = RPMDB_SQLITE;
                err = rpmdb_package_version(r, nvlsm_package, &name, &v, &rwhy);
        }
        if (v) {
                fact_bool(f, src, true, "nvlsm.installed");
                fact_str(f, src, v, "nvlsm.version");
        } else if (err == -ESRCH) {
                fact_bool(f, src, false, "nvlsm.installed");
                fact_absent(f, src, rwhy ? rwhy : dwhy, "nvlsm.version");
        } else if (root_gone(err)) {
                /* neither database is in the tree: the facts' sources are absent (a topology root, a
                 * partial tree), which says nothing either way and is not a read that failed */
                _cleanup_free_ char *why = rwhy ? xasprintf("%s; %s: cannot tell whether nvlsm is installed", dwhy, rwhy)
                                                : xstrdup(dwhy);
                fact_absent(f, src, why, "nvlsm.installed");
                fact_absent(f, src, why, "nvlsm.version");
        } else {
                _cleanup_free_ char *why = xstrdup(rwhy ? rwhy : dwhy);
                fact_unreadable(f, src, err, why, "nvlsm.installed");
                fact_unreadable(f, src, err, why, "nvlsm.version");
        }
}

static int service_run(struct facts *f)
{
        struct svc_state *s = get_state(f);
        if (s->rc == 0) {
                _cleanup_free_ char *list = strv_join(&s->enabled, " ");
                fact_str(f, ETC_UNITS, list, "service.enabled");
        } else if (s->rc == -ENOENT)
                fact_absent(f, ETC_UNITS, "no " ETC_UNITS " under the root (not systemd, or a trimmed tree)",
                            "service.enabled");
        else
                fact_unreadable(f, ETC_UNITS, s->rc, NULL, "service.enabled");
        gpudirect(f, NULL);
        fabricmanager(f);
        nvlsm(f);
        return 0;
}

/* service.NAME.enabled / .installed for any NAME, on demand; gpudirect.peermem. */
static int service_lookup(struct facts *f, const char *name)
{
        if (startswith(name, "gpudirect.")) {
                gpudirect(f, name);
                return 0;
        }
        if (startswith(name, "fabricmanager.")) {
                fabricmanager(f);
                return 0;
        }
        if (startswith(name, "nvlsm.")) {
                nvlsm(f);
                return 0;
        }
        if (!startswith(name, "service."))
                return 0;
        const char *unit = name + strlen("service.");
        const char *suffix = strrchr(unit, '.');
        if (!suffix || suffix == unit || (!streq(suffix, ".enabled") && !streq(suffix, ".installed")))
                return 0;
        _cleanup_free_ char *u = xstrndup(unit, (size_t)(suffix - unit));
        if (strchr(u, '/') || strlen(u) > 255)
                return 0;
        unit_facts(f, u);
        return 0;
}

const struct probe probe_service = {
        .name = "service",
        .prefixes = {"service.", "gpudirect.", "fabricmanager.", "nvlsm."},
        .run = service_run,
        .lookup = service_lookup,
};
