/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * os.* and boot.*: the distribution (os-release(5)), which decides the initramfs tool, and whether
 * the initramfs of the running kernel is older than the modprobe.d configuration it carries a copy
 * of (update-initramfs(8), dracut(8): a blacklist is not in force at boot until the initramfs is
 * regenerated).
 */
#include <errno.h>
#include <sys/stat.h>

#include "facts.h"
#include "probes.h"

static int os_run(struct facts *f)
{
        struct root *r = facts_root(f);
        const char *path = "/etc/os-release", *data;
        if (root_read(r, path, &data, NULL) < 0) {
                path = "/usr/lib/os-release";
                if (root_read(r, path, &data, NULL) < 0) {
                        fact_absent(f, "/etc/os-release", "no os-release file", "os.id");
                        return -ENOENT;
                }
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
        /* Debian and its derivatives use initramfs-tools; Fedora/RHEL/SUSE use dracut. */
        const struct fact *id = facts_get(f, "os.id"), *like = facts_get(f, "os.id_like");
        bool debian = (id && id->status == FACT_OK && (streq(id->str, "debian") || streq(id->str, "ubuntu"))) ||
                      (like && like->status == FACT_OK && strstr(like->str, "debian"));
        fact_str(f, path, debian ? "update-initramfs" : "dracut", "os.initramfs_tool");
        return 0;
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
        if (root_list(r, "/etc/modprobe.d", &names) == 0)
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
        strv_free(&names);
        return 0;
}

static int boot_probe_run(struct facts *f)
{
        os_run(f);
        boot_run(f);
        return 0;
}

const struct probe probe_boot = {
        .name = "boot",
        .prefixes = {"os.", "boot."},
        .run = boot_probe_run,
};
