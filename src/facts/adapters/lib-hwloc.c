/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/adapters/lib-hwloc.h"

#include <errno.h>
#include <hwloc.h>
#include <inttypes.h>
#include <stdio.h>

#include "base/deadline.h"
#include "base/sandbox.h"

#define HANDLE_KEY "hwloc"

/* What hwloc said of one PCI function (its object exists: found). */
struct pciloc {
        unsigned dom, bus, dev, fn;
        bool on_machine;
        int numa_node;
        char *nodes; /* NULL when the ancestor has no nodeset */
};

/*
 * hwloc's answers, not hwloc itself: under a foreign root the topology is loaded in the sandbox
 * child (sandbox.h), which sends back the locality of every PCI function (a few lines per device)
 * or, for gather, the XML export; the parent never holds a topology read by host path. The live
 * system takes the same path in the process itself.
 */
struct hwlib {
        struct pciloc *locs;
        size_t n;
        char *xml; /* the full export (hwloc_export_xml), else NULL */
        size_t xml_len;
        bool full; /* every object and attribute, not only what locality needs */
        char *backends; /* of the lean load: hwloc's discovery components, "Linux,..." */
        int err;   /* 0, or why hwloc gave nothing (with why) */
        char *why;
};

static void hwlib_free(void *ptr)
{
        struct hwlib *h = ptr;
        if (!h)
                return;
        for (size_t i = 0; i < h->n; i++)
                free(h->locs[i].nodes);
        free(h->locs);
        free(h->xml);
        free(h->backends);
        free(h->why);
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
#if HWLOC_API_VERSION >= 0x00020100
        /* The x86 backend runs CPUID on every PU in turn, binding the thread to each (a VM traps
         * every CPUID), for caches, cores and packages: caches and cores are dropped above, the
         * packages are sysfs's too. Without it the live load reads what a --root load reads
         * (HWLOC_COMPONENTS=linux,stop): the same facts from the same files. */
        if (hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86") < 0)
                return -1;
#endif
        if (hwloc_topology_set_cache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
            hwloc_topology_set_icache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
            hwloc_topology_set_type_filter(t, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
            hwloc_topology_set_type_filter(t, HWLOC_OBJ_OS_DEVICE, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
            hwloc_topology_set_type_filter(t, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE) < 0)
                return -1;
        return flags ? hwloc_topology_set_flags(t, flags) : 0;
}

/* Where the topology comes from: the tree (HWLOC_FSROOT), or an export hwloc wrote on the
 * machine itself (an archive root's HWLOC_CAPTURE_XML, read through the root handle). */
struct hwjob {
        bool full;
        const char *xml;
        size_t xml_len;
};

/* "backends NAME,NAME..." (the root object's Backend infos: which discovery components ran), then
 * one line per PCI function: "DOM BUS DEV FN ON_MACHINE NUMA_NODE NODES" (NODES "-" for none). */
static void put_localities(hwloc_topology_t t, struct sbuf *out)
{
        hwloc_obj_t root = hwloc_get_root_obj(t);
        sbuf_add(out, "backends ");
        for (unsigned i = 0, n = 0; i < root->infos_count; i++)
                if (streq(root->infos[i].name, "Backend"))
                        sbuf_addf(out, "%s%s", n++ ? "," : "", root->infos[i].value);
        sbuf_add(out, "\n");
        bool multi = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE) > 1;
        for (hwloc_obj_t o = hwloc_get_next_pcidev(t, NULL); o; o = hwloc_get_next_pcidev(t, o)) {
                const struct hwloc_pcidev_attr_s *a = &o->attr->pcidev;
                hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);
                char *list = NULL;
                if (anc && anc->nodeset && hwloc_bitmap_list_asprintf(&list, anc->nodeset) < 0)
                        list = NULL;
                /* A device hwloc could place nowhere narrower sits on the Machine: on a multi-node
                 * host that means "unknown", not "local to everything". */
                bool on_machine = anc && anc->nodeset && anc->type == HWLOC_OBJ_MACHINE && multi;
                int node = anc && anc->nodeset && !on_machine && hwloc_bitmap_weight(anc->nodeset) == 1
                                   ? hwloc_bitmap_first(anc->nodeset)
                                   : -1;
                sbuf_addf(out, "%x %x %x %x %d %d %s\n", a->domain, a->bus, a->dev, a->func, on_machine, node,
                          list && *list ? list : "-");
                free(list);
        }
}

static int hw_fail(hwloc_topology_t t, struct sbuf *out, const char *what)
{
        int e = errno ? errno : EIO;
        sbuf_addf(out, "%s: %s", what, errno_name(e));
        if (t)
                hwloc_topology_destroy(t);
        return -EIO;
}

/* The work (sandbox_fn): load as the job says, and say what the caller needs. */
static int hw_work(void *arg, const char *root_path, struct sbuf *out)
{
        const struct hwjob *j = arg;
        char *fs_old = NULL, *comp_old = NULL, *hide_old = NULL;
        bool fs_had = false, comp_had = false, hide_had = false;
        /* A foreign tree: hwloc's Linux component, on it alone (without "stop" the x86 CPUID
         * backend of this machine leaks into the tree's topology). */
        bool foreign = !j->xml && !streq(root_path, "/");
        if (foreign) {
                env_push("HWLOC_FSROOT", root_path, &fs_old, &fs_had);
                env_push("HWLOC_COMPONENTS", "linux,stop", &comp_old, &comp_had);
        }
        /* hwloc prints "critical" errors to stderr unless told not to; library code never prints. */
        env_push("HWLOC_HIDE_ERRORS", "2", &hide_old, &hide_had);
        hwloc_topology_t t = NULL;
        int rc = 0;
        errno = 0;
        if (hwloc_topology_init(&t) < 0)
                rc = hw_fail(NULL, out, "hwloc_topology_init"), t = NULL;
        else if (j->xml && hwloc_topology_set_xmlbuffer(t, j->xml, (int)j->xml_len + 1) < 0)
                rc = hw_fail(t, out, "hwloc_topology_set_xmlbuffer " HWLOC_CAPTURE_XML);
        /* hwloc 2.x drops I/O objects unless asked; "important" keeps GPUs, NICs, NVMe and the
         * bridges above them. */
        else if (hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) < 0)
                rc = hw_fail(t, out, "hwloc_topology_set_io_types_filter");
        else if (!j->full && lean(t) < 0)
                rc = hw_fail(t, out, "hwloc filters");
        else if (hwloc_topology_load(t) < 0)
                rc = hw_fail(t, out, "hwloc_topology_load");
        env_pop("HWLOC_HIDE_ERRORS", hide_old, hide_had);
        if (foreign) {
                env_pop("HWLOC_FSROOT", fs_old, fs_had);
                env_pop("HWLOC_COMPONENTS", comp_old, comp_had);
        }
        if (rc < 0)
                return rc;
        if (j->full) {
                char *buf = NULL;
                int len = 0;
                if (hwloc_topology_export_xmlbuffer(t, &buf, &len, 0) < 0 || !buf || len <= 0)
                        return hw_fail(t, out, "hwloc_topology_export_xmlbuffer");
                sbuf_addn(out, buf, (size_t)len - 1); /* len counts the terminating NUL */
                hwloc_free_xmlbuffer(t, buf);
        } else
                put_localities(t, out);
        hwloc_topology_destroy(t);
        return 0;
}

static void parse_localities(struct hwlib *h, char *text)
{
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (startswith(line, "backends ")) {
                        free(h->backends);
                        h->backends = xstrdup(line + strlen("backends "));
                        continue;
                }
                struct pciloc l = {0};
                int on_machine = 0;
                char nodes[512];
                if (sscanf(line, "%x %x %x %x %d %d %511s", &l.dom, &l.bus, &l.dev, &l.fn, &on_machine, &l.numa_node,
                           nodes) != 7)
                        continue;
                l.on_machine = on_machine != 0;
                l.nodes = streq(nodes, "-") ? NULL : xstrdup(nodes);
                h->locs = xrealloc(h->locs, (h->n + 1) * sizeof(*h->locs));
                h->locs[h->n++] = l;
        }
}

static struct hwlib *hwlib_load(struct facts *f, bool full)
{
        struct root *r = facts_root(f);
        struct hwlib *h = xcalloc(1, sizeof(*h));
        h->full = full;
        struct hwjob j = {.full = full};
        /* An archive root made by gather: the topology hwloc exported on the machine itself. */
        struct stat xst;
        if (root_is_archive(r) && root_stat(r, HWLOC_CAPTURE_XML, &xst, false) == 0 && S_ISREG(xst.st_mode)) {
                int rc = root_read(r, HWLOC_CAPTURE_XML, &j.xml, &j.xml_len);
                if (rc < 0) {
                        h->err = rc;
                        h->why = xasprintf("%s: %s", HWLOC_CAPTURE_XML, errno_name(rc));
                        return h;
                }
        }
        char *res = NULL;
        size_t len = 0;
        h->err = sandbox_run(r, hw_work, &j, &res, &len, &h->why);
        if (h->err == 0 && full) {
                h->xml = res;
                h->xml_len = len;
                res = NULL;
        } else if (h->err == 0)
                parse_localities(h, res);
        free(res);
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

const char *hwloc_backends(struct facts *f)
{
        const struct hwlib *h = facts_handle(f, HANDLE_KEY);
        return h && !h->err ? h->backends : NULL;
}

int hwloc_pci_locality(struct facts *f, unsigned domain, unsigned bus, unsigned dev, unsigned func,
                       struct hwloc_locality *ret, const char **ret_err)
{
        struct hwlib *h = hwlib_get(f, false);
        if (h->err) {
                if (ret_err)
                        *ret_err = h->why;
                return h->err;
        }
        *ret = (struct hwloc_locality){.numa_node = -1};
        for (size_t i = 0; i < h->n; i++) {
                const struct pciloc *l = &h->locs[i];
                if (l->dom != domain || l->bus != bus || l->dev != dev || l->fn != func)
                        continue;
                ret->found = true;
                ret->on_machine = l->on_machine;
                ret->numa_node = l->numa_node;
                ret->nodes = l->nodes ? xstrdup(l->nodes) : NULL;
                break;
        }
        return 0;
}

int hwloc_export_xml(struct facts *f, char **ret, size_t *ret_len, const char **ret_err)
{
        struct hwlib *h = hwlib_get(f, true);
        if (h->err) {
                if (ret_err)
                        *ret_err = h->why;
                return h->err;
        }
        *ret_len = h->xml_len;
        *ret = xstrndup(h->xml, h->xml_len);
        return 0;
}
