/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * os.* and boot.*: the distribution (os-release(5)), the initramfs tool that is installed, and whether
 * the initramfs of the running kernel is older than the modprobe.d configuration it carries a copy
 * of (update-initramfs(8), dracut(8): a blacklist is not in force at boot until the initramfs is
 * regenerated).
 */
#include <errno.h>
#include <sys/stat.h>

#include "facts/facts.h"
#include "facts/probes/probes.h"

static int os_run(struct facts *f)
{
        struct root *r = facts_root(f);
        /* os-release(5): /etc/os-release first, /usr/lib/os-release only when there is none */
        const char *path = "/etc/os-release", *data;
        int rc = root_read(r, path, &data, NULL);
        if (root_gone(rc)) {
                path = "/usr/lib/os-release";
                rc = root_read(r, path, &data, NULL);
                if (root_gone(rc)) {
                        fact_absent(f, "/etc/os-release", "no os-release file", "os.id");
                        return -ENOENT;
                }
        }
        if (rc < 0) {
                fact_unreadable(f, path, rc, NULL, "os.id");
                return rc;
        }
        static const char *const keys[] = {"ID", "ID_LIKE", "VERSION_ID", "PRETTY_NAME"};
        static const char *const names[] = {"id", "id_like", "version_id", "pretty_name"};
        for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
                bool found = false;
                for (const char *p = data; *p && !found;) {
                        const char *nl = strchr(p, '\n');
                        size_t len = nl ? (size_t)(nl - p) : strlen(p);
                        size_t kl = strlen(keys[k]);
                        if (len > kl && strncmp(p, keys[k], kl) == 0 && p[kl] == '=') {
                                _cleanup_free_ char *v = xstrndup(p + kl + 1, len - kl - 1);
                                char *s = v;
                                size_t vl = strlen(s);
                                if (vl >= 2 && (s[0] == '"' || s[0] == '\'') && s[vl - 1] == s[0]) {
                                        s[vl - 1] = '\0';
                                        s++;
                                }
                                fact_str(f, path, s, "os.%s", names[k]);
                                found = true;
                        }
                        p = nl ? nl + 1 : p + len;
                }
                if (!found)
                        fact_absent(f, path, "not set in os-release", "os.%s", names[k]);
        }
        return 0;
}

/* The initramfs generator is the one installed, not the one the distribution's name suggests (a
 * Debian with dracut, Arch with mkinitcpio or dracut): update-initramfs(8) of initramfs-tools,
 * dracut(8), mkinitcpio(8), looked up in the root's /usr/sbin, /usr/bin and /sbin. When several are,
 * the first in that order is used and os.initramfs_tools names them all. */
static void initramfs_tool(struct facts *f)
{
        static const char *const tools[] = {"update-initramfs", "dracut", "mkinitcpio"};
        static const char *const dirs[] = {"/usr/sbin", "/usr/bin", "/sbin"};
        struct root *r = facts_root(f);
        struct strv found = {0};
        char *first = NULL;
        int bad = 0;
        const char *bad_path = NULL;
        for (size_t t = 0; t < ARRAY_SIZE(tools); t++)
                for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
                        _cleanup_free_ char *p = xasprintf("%s/%s", dirs[d], tools[t]);
                        struct stat st;
                        int rc = root_stat(r, p, &st, true);
                        if (rc == 0 && S_ISREG(st.st_mode)) {
                                strv_add(&found, tools[t]);
                                if (!first)
                                        first = xstrdup(p);
                                break;
                        }
                        if (rc < 0 && !root_gone(rc) && !bad) {
                                bad = rc;
                                bad_path = dirs[d];
                        }
                }
        if (first) {
                const char *name = strrchr(first, '/') + 1;
                fact_str(f, first, name, "os.initramfs_tool");
                _cleanup_free_ char *all = strv_join(&found, " ");
                fact_str(f, first, all, "os.initramfs_tools");
        } else if (bad) {
                fact_unreadable(f, bad_path, bad, NULL, "os.initramfs_tool");
                fact_unreadable(f, bad_path, bad, NULL, "os.initramfs_tools");
        } else {
                const char *why = "none of update-initramfs, dracut, mkinitcpio in /usr/sbin, /usr/bin, /sbin";
                fact_absent(f, "/usr/sbin", why, "os.initramfs_tool");
                fact_absent(f, "/usr/sbin", why, "os.initramfs_tools");
        }
        free(first);
        strv_done(&found);
}

static int boot_run(struct facts *f)
{
        struct root *r = facts_root(f);
        const struct fact *rel = facts_get(f, "kernel.release");
        if (!rel || rel->status != FACT_OK) {
                fact_absent(f, "/boot", "kernel release unknown", "boot.initramfs.path");
                return -ENOENT;
        }
        _cleanup_free_ char *deb = xasprintf("/boot/initrd.img-%s", rel->str);
        _cleanup_free_ char *rh = xasprintf("/boot/initramfs-%s.img", rel->str);
        struct stat img;
        const char *path = root_stat(r, deb, &img, true) == 0 ? deb : root_stat(r, rh, &img, true) == 0 ? rh : NULL;
        if (!path) {
                fact_absent(f, "/boot", "no initramfs for the running kernel in /boot", "boot.initramfs.path");
                return 0;
        }
        fact_str(f, path, path, "boot.initramfs.path");
        struct strv names = {0};
        struct timespec newest = {0};
        const char *newest_name = NULL;
        int rc = root_list(r, "/etc/modprobe.d", &names);
        if (rc < 0 && !root_gone(rc)) {
                /* a file there may be newer than the image */
                fact_unreadable(f, "/etc/modprobe.d", rc, NULL, "boot.initramfs.stale");
                strv_done(&names);
                return rc;
        }
        for (size_t i = 0; i < names.n; i++) {
                _cleanup_free_ char *p = xasprintf("/etc/modprobe.d/%s", names.v[i]);
                struct stat st;
                if (root_stat(r, p, &st, true) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (st.st_mtim.tv_sec > newest.tv_sec ||
                    (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec > newest.tv_nsec)) {
                        newest = st.st_mtim;
                        newest_name = names.v[i];
                }
        }
        bool stale = newest_name && (newest.tv_sec > img.st_mtim.tv_sec ||
                                     (newest.tv_sec == img.st_mtim.tv_sec && newest.tv_nsec > img.st_mtim.tv_nsec));
        fact_bool(f, path, stale, "boot.initramfs.stale");
        strv_done(&names);
        return 0;
}

static int boot_probe_run(struct facts *f)
{
        os_run(f);
        initramfs_tool(f);
        boot_run(f);
        return 0;
}

const struct probe probe_boot = {
        .name = "boot",
        .prefixes = {"os.", "boot."},
        .run = boot_probe_run,
};
