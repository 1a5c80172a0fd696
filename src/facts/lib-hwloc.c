/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib-hwloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define HANDLE_KEY "hwloc"

struct hwlib {
        hwloc_topology_t topo; /* NULL when loading failed */
        char *err;
};

static void hwlib_free(void *ptr)
{
        struct hwlib *h = ptr;
        if (!h)
                return;
        if (h->topo)
                hwloc_topology_destroy(h->topo);
        free(h->err);
        free(h);
}

/* Set NAME for the duration of the load; *saved gets the caller's value back afterwards. */
static void env_push(const char *name, const char *value, char **saved, bool *had)
{
        const char *old = getenv(name);
        *had = old != NULL;
        *saved = old ? xstrdup(old) : NULL;
        setenv(name, value, 1);
}

static void env_pop(const char *name, char *saved, bool had)
{
        if (had)
                setenv(name, saved, 1);
        else
                unsetenv(name);
        free(saved);
}

/*
 * hwloc reads a foreign root by host path (HWLOC_FSROOT), not through the root handle: the host
 * kernel follows every link it meets and a FIFO or device opened there blocks forever. So the
 * parts of the tree hwloc reads (/proc and /sys) are vetted first, without following anything: no
 * FIFO, socket or device node, no absolute link and no relative one climbing out of the tree.
 * Returns NULL when the tree is fit, else why not (caller frees). Bounded: a tree of more than
 * VET_MAX entries is refused rather than walked for ever.
 */
#define VET_MAX 500000

struct vet {
        size_t seen;
        char *why;
};

static void vet_dir(int dfd, const char *rel, int depth, struct vet *v)
{
        int fd = dup(dfd);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                return; /* unreadable: hwloc will not read it either */
        }
        struct dirent *de;
        while (!v->why && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (++v->seen > VET_MAX) {
                        v->why = xasprintf("more than %d entries under /proc and /sys", VET_MAX);
                        break;
                }
                struct stat st;
                if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0) {
                                _cleanup_free_ char *p = xasprintf("%s/%s", rel, de->d_name);
                                vet_dir(sub, p, depth + 1, v);
                                close(sub);
                        }
                } else if (S_ISLNK(st.st_mode)) {
                        char t[4096];
                        ssize_t n = readlinkat(dfd, de->d_name, t, sizeof(t) - 1);
                        if (n < 0)
                                continue;
                        t[n] = '\0';
                        /* Lexically: a relative link may climb only as far as the tree's top. */
                        int level = depth;
                        bool out = t[0] == '/';
                        for (char *save = NULL, *c = strtok_r(t, "/", &save); c && !out; c = strtok_r(NULL, "/", &save))
                                level += streq(c, "..") ? -1 : streq(c, ".") ? 0 : 1, out = level < 0;
                        if (out)
                                v->why = xasprintf("%s/%s is a link leading out of the tree", rel, de->d_name);
                } else if (!S_ISREG(st.st_mode))
                        v->why = xasprintf("%s/%s is a %s, not a regular file", rel, de->d_name,
                                           S_ISFIFO(st.st_mode)  ? "FIFO"
                                           : S_ISCHR(st.st_mode) ? "character device"
                                           : S_ISBLK(st.st_mode) ? "block device"
                                                                 : "socket");
        }
        closedir(d);
}

char *host_read_vet(struct root *r)
{
        struct vet v = {0};
        static const char *const tops[] = {"proc", "sys"};
        for (size_t i = 0; i < ARRAY_SIZE(tops) && !v.why; i++) {
                int fd = root_open_nolinks(r, tops[i], O_RDONLY | O_DIRECTORY, 0);
                if (fd == -ELOOP)
                        v.why = xasprintf("/%s is a symbolic link", tops[i]);
                if (fd < 0)
                        continue;
                _cleanup_free_ char *rel = xasprintf("/%s", tops[i]);
                vet_dir(fd, rel, 1, &v);
                close(fd);
        }
        return v.why;
}

static struct hwlib *hwlib_load(struct facts *f)
{
        struct root *r = facts_root(f);
        struct hwlib *h = xcalloc(1, sizeof(*h));
        char *fs_old = NULL, *comp_old = NULL, *hide_old = NULL;
        bool fs_had = false, comp_had = false, hide_had = false;
        bool foreign = !root_is_live(r);
        /* An archive root made by gather: the topology hwloc exported on the machine itself. */
        _cleanup_free_ char *xml = NULL;
        struct stat xst;
        if (root_is_archive(r) && root_stat(r, HWLOC_CAPTURE_XML, &xst, false) == 0 && S_ISREG(xst.st_mode)) {
                xml = root_host_path(r, HWLOC_CAPTURE_XML);
                foreign = false;
        }
        if (foreign) {
                _cleanup_free_ char *why = host_read_vet(r);
                if (why) {
                        h->err = xasprintf("not loaded: %s (hwloc reads the tree by host path)", why);
                        return h;
                }
        }

        if (foreign) {
                /* Read by the linux component when the topology loads, so restored after it. */
                _cleanup_free_ char *fsroot = root_host_path(r, "/");
                env_push("HWLOC_FSROOT", fsroot, &fs_old, &fs_had);
                env_push("HWLOC_COMPONENTS", "linux,stop", &comp_old, &comp_had);
        }
        /* hwloc prints "critical" errors to stderr unless told not to; library code never prints.
         * (Read once per process, on hwloc's first complaint.) */
        env_push("HWLOC_HIDE_ERRORS", "2", &hide_old, &hide_had);
        hwloc_topology_t t = NULL;
        if (hwloc_topology_init(&t) < 0)
                h->err = xasprintf("hwloc_topology_init: %s", errno_name(errno));
        /* hwloc 2.x drops I/O objects unless asked; "important" keeps GPUs, NICs, NVMe and the
         * bridges above them. */
        else if (xml && hwloc_topology_set_xml(t, xml) < 0)
                h->err = xasprintf("hwloc_topology_set_xml %s: %s", HWLOC_CAPTURE_XML, errno_name(errno));
        else if (hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) < 0)
                h->err = xasprintf("hwloc_topology_set_io_types_filter: %s", errno_name(errno));
        else if (hwloc_topology_load(t) < 0)
                h->err = xasprintf("hwloc_topology_load: %s", errno_name(errno));
        env_pop("HWLOC_HIDE_ERRORS", hide_old, hide_had);
        if (foreign) {
                env_pop("HWLOC_FSROOT", fs_old, fs_had);
                env_pop("HWLOC_COMPONENTS", comp_old, comp_had);
        }
        if (h->err) {
                if (t)
                        hwloc_topology_destroy(t);
        } else
                h->topo = t;
        return h;
}

static struct hwlib *hwlib_get(struct facts *f)
{
        struct hwlib *h = facts_handle(f, HANDLE_KEY);
        if (!h) {
                h = hwlib_load(f);
                facts_set_handle(f, HANDLE_KEY, h, hwlib_free);
        }
        return h;
}

bool hwloc_loaded(struct facts *f) { return facts_handle(f, HANDLE_KEY) != NULL; }

int hwloc_pci_locality(struct facts *f, unsigned domain, unsigned bus, unsigned dev, unsigned func,
                       struct hwloc_locality *ret, const char **ret_err)
{
        struct hwlib *h = hwlib_get(f);
        if (!h->topo) {
                if (ret_err)
                        *ret_err = h->err;
                return -EIO;
        }
        *ret = (struct hwloc_locality){.numa_node = -1};
        hwloc_obj_t o = hwloc_get_pcidev_by_busid(h->topo, domain, bus, dev, func);
        if (!o)
                return 0;
        ret->found = true;
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(h->topo, o);
        if (!anc || !anc->nodeset)
                return 0;
        char *list = NULL;
        if (hwloc_bitmap_list_asprintf(&list, anc->nodeset) >= 0 && list) {
                ret->nodes = xstrdup(list);
                free(list);
        }
        /* A device hwloc could place nowhere narrower sits on the Machine: on a multi-node host
         * that means "unknown", not "local to everything". */
        if (anc->type == HWLOC_OBJ_MACHINE && hwloc_get_nbobjs_by_type(h->topo, HWLOC_OBJ_NUMANODE) > 1) {
                ret->on_machine = true;
                return 0;
        }
        if (hwloc_bitmap_weight(anc->nodeset) == 1)
                ret->numa_node = hwloc_bitmap_first(anc->nodeset);
        return 0;
}

int hwloc_export_xml(struct facts *f, char **ret, size_t *ret_len, const char **ret_err)
{
        struct hwlib *h = hwlib_get(f);
        if (!h->topo) {
                if (ret_err)
                        *ret_err = h->err;
                return -EIO;
        }
        char *buf = NULL;
        int len = 0;
        if (hwloc_topology_export_xmlbuffer(h->topo, &buf, &len, 0) < 0 || !buf || len <= 0) {
                if (ret_err)
                        *ret_err = "hwloc_topology_export_xmlbuffer failed";
                return -EIO;
        }
        /* len counts the terminating NUL */
        *ret_len = (size_t)len - 1;
        *ret = xstrndup(buf, *ret_len);
        hwloc_free_xmlbuffer(h->topo, buf);
        return 0;
}
