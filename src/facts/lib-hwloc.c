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
        bool full;             /* every object and attribute, not only what locality needs */
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

static void vet_dir(int dfd, const char *rel, int depth, struct vet *v);

/* The entry's type from getdents' d_type; one fstatat only where the file system gives none. */
static unsigned entry_type(int dfd, const char *name, unsigned char d_type)
{
        struct stat st;
        if (d_type != DT_UNKNOWN)
                return d_type;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return DT_UNKNOWN;
        return S_ISDIR(st.st_mode)    ? DT_DIR
               : S_ISLNK(st.st_mode)  ? DT_LNK
               : S_ISREG(st.st_mode)  ? DT_REG
               : S_ISFIFO(st.st_mode) ? DT_FIFO
               : S_ISCHR(st.st_mode)  ? DT_CHR
               : S_ISBLK(st.st_mode)  ? DT_BLK
                                      : DT_SOCK;
}

static void vet_entry(int dfd, const char *rel, int depth, const char *name, unsigned type, struct vet *v)
{
        if (type == DT_DIR) {
                int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0) {
                        _cleanup_free_ char *p = xasprintf("%s/%s", rel, name);
                        vet_dir(sub, p, depth + 1, v);
                }
        } else if (type == DT_LNK) {
                char t[4096];
                ssize_t n = readlinkat(dfd, name, t, sizeof(t) - 1);
                if (n < 0)
                        return;
                t[n] = '\0';
                /* Lexically: a relative link may climb only as far as the tree's top. */
                int level = depth;
                bool out = t[0] == '/';
                for (char *save = NULL, *c = strtok_r(t, "/", &save); c && !out; c = strtok_r(NULL, "/", &save))
                        level += streq(c, "..") ? -1 : streq(c, ".") ? 0 : 1, out = level < 0;
                if (out)
                        v->why = xasprintf("%s/%s is a link leading out of the tree", rel, name);
        } else if (type != DT_REG && type != DT_UNKNOWN)
                v->why = xasprintf("%s/%s is a %s, not a regular file", rel, name,
                                   type == DT_FIFO  ? "FIFO"
                                   : type == DT_CHR ? "character device"
                                   : type == DT_BLK ? "block device"
                                                    : "socket");
}

/* Takes DFD (closed here). getdents64 straight into a buffer, no DIR: a tree's walk is ~1,800
 * directories, and opendir's dup, fcntl and second close were a third of its system calls. */
static void vet_dir(int dfd, const char *rel, int depth, struct vet *v)
{
        /* 32 KiB: a directory of a few hundred entries in one call; a heap buffer, as the
         * recursion is as deep as the tree. */
        size_t cap = 32768;
        _cleanup_free_ char *buf = xmalloc(cap);
        while (!v->why) {
                ssize_t n = getdents64(dfd, buf, cap);
                if (n <= 0)
                        break; /* end, or unreadable: hwloc will not read it either */
                for (ssize_t off = 0; off < n && !v->why;) {
                        struct dirent64 *de = (struct dirent64 *)(buf + off);
                        off += de->d_reclen;
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        if (++v->seen > VET_MAX) {
                                v->why = xasprintf("more than %d entries under /proc and /sys", VET_MAX);
                                break;
                        }
                        vet_entry(dfd, rel, depth, de->d_name, entry_type(dfd, de->d_name, de->d_type), v);
                }
        }
        close(dfd);
}

static char *vet_tree(struct root *r)
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
        }
        return v.why;
}

/* The verdict, kept by the store: libpci and hwloc both need it, and the walk visits every entry
 * under /proc and /sys (20,000 on a 384-CPU tree), so it is made once. */
struct vet_verdict {
        char *why;
};

static void vet_verdict_free(void *p)
{
        struct vet_verdict *vv = p;
        if (vv)
                free(vv->why);
        free(vv);
}

char *host_read_vet(struct facts *f)
{
        struct vet_verdict *vv = facts_handle(f, "host-read-vet");
        if (!vv) {
                vv = xcalloc(1, sizeof(*vv));
                vv->why = vet_tree(facts_root(f));
                facts_set_handle(f, "host-read-vet", vv, vet_verdict_free);
        }
        return vv->why ? xstrdup(vv->why) : NULL;
}

/*
 * What PCI locality needs: the PUs, NUMA nodes and the objects a host bridge can hang from
 * (Package, Die, Group; a bridge's local_cpus never names one core or a cache), and the PCI
 * devices. Caches, cores, OS devices, distances, memory attributes and CPU kinds are left out:
 * on a 384-CPU tree that is a third of hwloc's system calls (per-CPU core_cpus, core_id,
 * cpuinfo_max_freq, base_frequency, cpu_capacity; the InfiniBand and NVMe class directories).
 */
static int lean(hwloc_topology_t t)
{
        unsigned long flags = 0;
#if HWLOC_API_VERSION >= 0x00020800
        flags = HWLOC_TOPOLOGY_FLAG_NO_DISTANCES | HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS | HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS;
#endif
        if (hwloc_topology_set_cache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
            hwloc_topology_set_icache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
            hwloc_topology_set_type_filter(t, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
            hwloc_topology_set_type_filter(t, HWLOC_OBJ_OS_DEVICE, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
            hwloc_topology_set_type_filter(t, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE) < 0)
                return -1;
        return flags ? hwloc_topology_set_flags(t, flags) : 0;
}

static struct hwlib *hwlib_load(struct facts *f, bool full)
{
        struct root *r = facts_root(f);
        struct hwlib *h = xcalloc(1, sizeof(*h));
        h->full = full;
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
                _cleanup_free_ char *why = host_read_vet(f);
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
        else if (!full && lean(t) < 0)
                h->err = xasprintf("hwloc filters: %s", errno_name(errno));
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

/* A lean topology serves locality; the XML export (gather) asks for the full one, loaded anew. */
static struct hwlib *hwlib_get(struct facts *f, bool full)
{
        struct hwlib *h = facts_handle(f, HANDLE_KEY);
        if (h && full && !h->full) {
                hwlib_free(h);
                h = hwlib_load(f, true);
                facts_replace_handle(f, HANDLE_KEY, h);
        }
        if (!h) {
                h = hwlib_load(f, full);
                facts_set_handle(f, HANDLE_KEY, h, hwlib_free);
        }
        return h;
}

bool hwloc_loaded(struct facts *f) { return facts_handle(f, HANDLE_KEY) != NULL; }

int hwloc_pci_locality(struct facts *f, unsigned domain, unsigned bus, unsigned dev, unsigned func,
                       struct hwloc_locality *ret, const char **ret_err)
{
        struct hwlib *h = hwlib_get(f, false);
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
        struct hwlib *h = hwlib_get(f, true);
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
