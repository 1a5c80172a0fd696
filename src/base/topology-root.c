/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "base/topology-root.h"

#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/archive-root.h"
#include "base/private-tmp.h"

/* Bigger than any real export (a DGX-2 with every PCI function is about 300 KiB); a file this
 * size is not an lstopo export and is refused before hwloc parses it. */
#define TOPOLOGY_XML_MAX (64u << 20)

struct builder {
        int dirfd;
        int err;      /* first -errno */
        char *where;  /* the file that failed */
};

/* mkdir -p of the parents of REL (relative to the private directory). */
static void make_parents(struct builder *b, const char *rel)
{
        _cleanup_free_ char *p = xstrdup(rel);
        for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdirat(b->dirfd, p, 0755) < 0 && errno != EEXIST && !b->err) {
                        b->err = -errno;
                        b->where = xstrdup(p);
                }
                *s = '/';
        }
}

static void put(struct builder *b, const char *rel, const char *text)
{
        if (b->err)
                return;
        make_parents(b, rel);
        _cleanup_close_ int fd = openat(b->dirfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        size_t len = strlen(text);
        if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
                if (!b->err) {
                        b->err = errno ? -errno : -EIO;
                        b->where = xstrdup(rel);
                }
        }
}

static void putf(struct builder *b, const char *rel, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void putf(struct builder *b, const char *rel, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *text = xvasprintf(fmt, ap);
        va_end(ap);
        put(b, rel, text);
        free(text);
}

/* "0-3,8-11": sysfs list syntax, which hwloc's list format is. */
static char *bitmap_list(hwloc_const_bitmap_t set)
{
        char *s = NULL;
        if (!set || hwloc_bitmap_list_asprintf(&s, set) < 0 || !s)
                return xstrdup("");
        return s;
}

/* sysfs cpumask syntax ("00000000,000000ff"): 32-bit words, most significant first, as the kernel's
 * bitmap_print_to_pagebuf() writes local_cpus. */
static char *bitmap_mask(hwloc_const_bitmap_t set)
{
        int last = set ? hwloc_bitmap_last(set) : -1;
        unsigned words = last < 0 ? 1 : (unsigned)last / 32 + 1;
        char *out = xcalloc(words * 9 + 1, 1);
        char *w = out;
        for (unsigned i = words; i-- > 0;) {
                unsigned long v = set ? hwloc_bitmap_to_ith_ulong(set, i * 32 / (8 * sizeof(unsigned long))) : 0;
                if (sizeof(unsigned long) == 8)
                        v = (i % 2) ? v >> 32 : v & 0xffffffffUL;
                w += sprintf(w, "%08lx%s", v, i ? "," : "");
        }
        return out;
}

static unsigned index_of(hwloc_obj_t o)
{
        return o->os_index != HWLOC_UNKNOWN_INDEX ? o->os_index : o->logical_index;
}

/* /sys/devices/system/cpu: the online list and each CPU's topology files, from the PUs. */
static void write_cpus(struct builder *b, hwloc_topology_t t)
{
        hwloc_bitmap_t all = hwloc_bitmap_alloc();
        for (hwloc_obj_t pu = NULL; (pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu));) {
                unsigned cpu = pu->os_index;
                if (cpu == HWLOC_UNKNOWN_INDEX)
                        continue;
                hwloc_bitmap_set(all, cpu);
                hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu);
                hwloc_obj_t die = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_DIE, pu);
                hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
                char dir[96];
                snprintf(dir, sizeof(dir), "sys/devices/system/cpu/cpu%u/topology", cpu);
                char path[160];
                snprintf(path, sizeof(path), "%s/physical_package_id", dir);
                putf(b, path, "%u\n", pkg ? index_of(pkg) : 0u);
                if (die) {
                        snprintf(path, sizeof(path), "%s/die_id", dir);
                        putf(b, path, "%u\n", index_of(die));
                }
                /* Without a Core object (some exports) each PU is its own core. */
                snprintf(path, sizeof(path), "%s/core_id", dir);
                putf(b, path, "%u\n", core ? index_of(core) : cpu);
                _cleanup_free_ char *sib = core ? bitmap_list(core->cpuset) : xasprintf("%u", cpu);
                snprintf(path, sizeof(path), "%s/core_cpus_list", dir);
                putf(b, path, "%s\n", sib);
                snprintf(path, sizeof(path), "%s/thread_siblings_list", dir);
                putf(b, path, "%s\n", sib);
        }
        _cleanup_free_ char *online = bitmap_list(all);
        putf(b, "sys/devices/system/cpu/online", "%s\n", online);
        putf(b, "sys/devices/system/cpu/possible", "%s\n", online);
        putf(b, "sys/devices/system/cpu/present", "%s\n", online);
        hwloc_bitmap_free(all);
}

/* /proc/cpuinfo with what the export's Package info holds (x86 exports carry CPUVendor and
 * CPUModel; others may not, and then cpu.model is absent as on any tree without it). */
static void write_cpuinfo(struct builder *b, hwloc_topology_t t)
{
        struct sbuf m = {0};
        bool any = false;
        for (hwloc_obj_t pu = NULL; (pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu));) {
                if (pu->os_index == HWLOC_UNKNOWN_INDEX)
                        continue;
                hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu);
                const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
                const char *vendor = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUVendor") : NULL;
                if (!model)
                        continue;
                any = true;
                sbuf_addf(&m, "processor\t: %u\n", pu->os_index);
                if (vendor)
                        sbuf_addf(&m, "vendor_id\t: %s\n", vendor);
                sbuf_addf(&m, "model name\t: %s\nphysical id\t: %u\n\n", model, index_of(pkg));
        }
        _cleanup_free_ char *text = sbuf_steal(&m);
        if (any)
                put(b, "proc/cpuinfo", text);
}

/* /sys/devices/system/node and /proc/meminfo from the NUMA nodes' local memory. */
static void write_numa(struct builder *b, hwloc_topology_t t)
{
        hwloc_bitmap_t online = hwloc_bitmap_alloc();
        uint64_t total = 0;
        for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));) {
                if (n->os_index == HWLOC_UNKNOWN_INDEX)
                        continue;
                hwloc_bitmap_set(online, n->os_index);
                char path[96];
                _cleanup_free_ char *cpus = bitmap_list(n->cpuset);
                snprintf(path, sizeof(path), "sys/devices/system/node/node%u/cpulist", n->os_index);
                putf(b, path, "%s\n", cpus);
                uint64_t kb = n->attr->numanode.local_memory / 1024;
                total += kb;
                snprintf(path, sizeof(path), "sys/devices/system/node/node%u/meminfo", n->os_index);
                putf(b, path, "Node %u MemTotal:       %" PRIu64 " kB\n", n->os_index, kb);
        }
        if (!hwloc_bitmap_iszero(online)) {
                _cleanup_free_ char *list = bitmap_list(online);
                putf(b, "sys/devices/system/node/online", "%s\n", list);
                putf(b, "sys/devices/system/node/possible", "%s\n", list);
        }
        /* Only the total: the export says nothing about free memory or swap. */
        if (total)
                putf(b, "proc/meminfo", "MemTotal:       %" PRIu64 " kB\n", total);
        hwloc_bitmap_free(online);
}

/* One PCI function: the identity files and its locality, as the kernel would show them. */
static void write_pci_function(struct builder *b, hwloc_topology_t t, hwloc_obj_t o, const struct hwloc_pcidev_attr_s *p)
{
        char dir[80];
        snprintf(dir, sizeof(dir), "sys/bus/pci/devices/%04x:%02x:%02x.%01x", p->domain, p->bus, p->dev, p->func);
        char path[128];
        snprintf(path, sizeof(path), "%s/vendor", dir);
        putf(b, path, "0x%04x\n", p->vendor_id);
        snprintf(path, sizeof(path), "%s/device", dir);
        putf(b, path, "0x%04x\n", p->device_id);
        /* hwloc keeps class and subclass only; the programming interface reads as 00. */
        snprintf(path, sizeof(path), "%s/class", dir);
        putf(b, path, "0x%04x00\n", p->class_id);
        snprintf(path, sizeof(path), "%s/subsystem_vendor", dir);
        putf(b, path, "0x%04x\n", p->subvendor_id);
        snprintf(path, sizeof(path), "%s/subsystem_device", dir);
        putf(b, path, "0x%04x\n", p->subdevice_id);
        /* Locality is the first non-I/O ancestor's: the same rule hwloc's Linux backend applied
         * when it attached the device there from numa_node and local_cpus. */
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);
        int node = -1;
        if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1 && anc->depth > 0)
                node = hwloc_bitmap_first(anc->nodeset);
        snprintf(path, sizeof(path), "%s/numa_node", dir);
        putf(b, path, "%d\n", node);
        if (anc && anc->cpuset) {
                _cleanup_free_ char *list = bitmap_list(anc->cpuset);
                _cleanup_free_ char *mask = bitmap_mask(anc->cpuset);
                snprintf(path, sizeof(path), "%s/local_cpulist", dir);
                putf(b, path, "%s\n", list);
                snprintf(path, sizeof(path), "%s/local_cpus", dir);
                putf(b, path, "%s\n", mask);
        }
}

static void write_pci(struct builder *b, hwloc_topology_t t)
{
        bool any = false;
        for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(t, o));) {
                write_pci_function(b, t, o, &o->attr->pcidev);
                any = true;
        }
        for (hwloc_obj_t o = NULL; (o = hwloc_get_next_bridge(t, o));)
                if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
                        write_pci_function(b, t, o, &o->attr->bridge.upstream.pci);
                        any = true;
                }
        /* An export without I/O objects says nothing about PCI: then there is no /sys/bus/pci at
         * all (gpu.count absent, "no PCI data"), rather than an empty bus (gpu.count 0). */
        if (any)
                make_parents(b, "sys/bus/pci/devices/.");
}

/* Copy the export byte for byte (it may hold NUL-free text only, but need not end in a newline). */
static void copy_export(struct builder *b, const char *xml, const char *rel)
{
        if (b->err)
                return;
        make_parents(b, rel);
        _cleanup_close_ int in = open(xml, O_RDONLY | O_NOCTTY | O_CLOEXEC);
        _cleanup_close_ int out = in < 0 ? -1 : openat(b->dirfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        char buf[65536];
        ssize_t n = 0;
        while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
                if (write(out, buf, (size_t)n) != n) {
                        n = -1;
                        break;
                }
        if ((in < 0 || out < 0 || n < 0) && !b->err) {
                b->err = errno ? -errno : -EIO;
                b->where = xstrdup(in < 0 ? xml : rel);
        }
}

static int fail(char **ret_why, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char **ret_why, int rc, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        *ret_why = xvasprintf(fmt, ap);
        va_end(ap);
        return rc;
}

/* The first bytes of PATH, NUL-terminated (empty when unreadable). */
static void head_of(const char *path, char *buf, size_t size)
{
        buf[0] = '\0';
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return;
        ssize_t n = read(fd, buf, size - 1);
        buf[n > 0 ? n : 0] = '\0';
}

/* Why an XML file is known not to import, before hwloc says only "failed": NULL when it may. hwloc
 * 2 imports its own format (version="2.0") and hwloc 1's (no version); hwloc 3 writes "3.0". */
static char *xml_unfit(const char *path)
{
        char head[4096];
        head_of(path, head, sizeof(head));
        if (strstr(head, "<system") && !strstr(head, "<topology"))
                return xstrdup("an NCCL topology file (NCCL_TOPO_FILE), not an hwloc export (lstopo --of xml)");
        const char *top = strstr(head, "<topology");
        const char *v = top ? strstr(top, "version=\"") : NULL;
        const char *end = top ? strchr(top, '>') : NULL;
        if (v && end && v < end) {
                unsigned major = (unsigned)strtoul(v + strlen("version=\""), NULL, 10);
                if (major > HWLOC_API_VERSION >> 16)
                        return xasprintf("hwloc XML format %u.x, newer than the hwloc %u.x this llmtune is built "
                                         "with imports (formats 1 and %u): export it with an hwloc %u lstopo",
                                         major, HWLOC_API_VERSION >> 16, HWLOC_API_VERSION >> 16,
                                         HWLOC_API_VERSION >> 16);
        }
        return NULL;
}

bool topology_file_is_xml(const char *path)
{
        char head[512];
        head_of(path, head, sizeof(head));
        const char *s = head;
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
                s++;
        /* "<system": an NCCL topology file, refused with its own reason by xml_unfit(). */
        return startswith(s, "<?xml") || startswith(s, "<topology") || startswith(s, "<!DOCTYPE topology") ||
               startswith(s, "<system") || startswith(s, "<!--");
}

int topology_root_build(const char *xml, char **ret_dir, char **ret_why)
{
        *ret_dir = NULL;
        *ret_why = NULL;
        struct stat st;
        if (stat(xml, &st) < 0)
                return fail(ret_why, -errno, "%s: %s", xml, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return fail(ret_why, -EINVAL, "%s: not a regular file", xml);
        if ((uint64_t)st.st_size > TOPOLOGY_XML_MAX)
                return fail(ret_why, -EFBIG, "%s: %jd bytes, more than any topology export (%u MiB at most)", xml,
                            (intmax_t)st.st_size, TOPOLOGY_XML_MAX >> 20);

        hwloc_topology_t t = NULL;
        int rc = 0;
        /* hwloc prints its XML complaints to stderr unless told not to; the error is ours to say. */
        setenv("HWLOC_HIDE_ERRORS", "2", 0);
        if (hwloc_topology_init(&t) < 0)
                return fail(ret_why, -ENOMEM, "hwloc_topology_init: %s", strerror(errno));
        _cleanup_free_ char *unfit = xml_unfit(xml);
        if (unfit)
                rc = fail(ret_why, -EINVAL, "%s: %s", xml, unfit);
        else if (hwloc_topology_set_xml(t, xml) < 0)
                rc = fail(ret_why, -EINVAL, "%s: hwloc cannot read it as a topology export (lstopo --of xml)", xml);
        else if (hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL) < 0)
                rc = fail(ret_why, -EINVAL, "hwloc_topology_set_io_types_filter: %s", strerror(errno));
        else if (hwloc_topology_load(t) < 0)
                rc = fail(ret_why, -EINVAL, "%s: hwloc cannot load it as a topology export (lstopo --of xml)", xml);
        if (rc < 0) {
                hwloc_topology_destroy(t);
                return rc;
        }

        char *dir = NULL;
        rc = private_tmp_make("topology", &dir);
        if (rc < 0) {
                rc = fail(ret_why, rc, "cannot create a private directory in %s: %s", private_tmp_base(), strerror(-rc));
                hwloc_topology_destroy(t);
                return rc;
        }
        struct builder b = {.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
        if (b.dirfd < 0) {
                b.err = -errno;
                b.where = xstrdup(".");
        } else {
                write_cpus(&b, t);
                write_cpuinfo(&b, t);
                write_numa(&b, t);
                write_pci(&b, t);
                /* The export itself, where hwloc's own facts load it from (as for a gathered
                 * archive): hwloc locality then comes from the XML, not from the files above. */
                copy_export(&b, xml, HWLOC_CAPTURE_XML + 1);
                close(b.dirfd);
        }
        hwloc_topology_destroy(t);
        if (b.err) {
                rc = fail(ret_why, b.err, "building a tree from %s: %s: %s", xml, b.where, strerror(-b.err));
                free(b.where);
                archive_root_remove(dir);
                free(dir);
                return rc;
        }
        *ret_dir = dir;
        return 0;
}
