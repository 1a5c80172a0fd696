/* SPDX-License-Identifier: MIT */
#include "lib-hwloc.h"

#include <errno.h>
#include <hwloc.h>
#include <stdio.h>

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

static struct hwlib *hwlib_load(struct facts *f)
{
        struct root *r = facts_root(f);
        struct hwlib *h = xcalloc(1, sizeof(*h));
        char *fs_old = NULL, *comp_old = NULL, *hide_old = NULL;
        bool fs_had = false, comp_had = false, hide_had = false;
        bool foreign = !root_is_live(r);

        if (foreign) {
                /* Read by the linux component when the topology loads, so restored after it. */
                env_push("HWLOC_FSROOT", root_path(r), &fs_old, &fs_had);
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
