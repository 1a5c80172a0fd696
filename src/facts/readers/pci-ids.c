/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/pci-ids.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/root.h"

#define HANDLE_KEY "pci.ids"

static const char *const ids_paths[] = {"/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"};

struct ids {
        char *host;          /* the host's list, when the tree has none (owned) */
        const char *data;    /* the list in use: the tree's (owned by the root handle) or host */
        const char *source;  /* the facts' source: the tree's path, or "pci.ids of this host" */
        /* The last vendor's section and device line found: a node's GPUs are mostly one model, and
         * the list is 1.3 MB, NVIDIA's section a few thousand lines into it. */
        unsigned last_vendor, last_device;
        const char *vendor_line; /* NULL: not in the list (or nothing looked up yet) */
        const char *device_line; /* NULL: not in the vendor's section */
        bool have_vendor, have_device;
};

static void ids_free(void *ptr)
{
        struct ids *ids = ptr;
        if (ids)
                free(ids->host);
        free(ids);
}

static struct ids *ids_get(struct facts *f)
{
        struct ids *ids = facts_handle(f, HANDLE_KEY);
        if (ids)
                return ids;
        ids = xcalloc(1, sizeof(*ids));
        for (size_t i = 0; i < ARRAY_SIZE(ids_paths) && !ids->data; i++)
                if (root_read(facts_root(f), ids_paths[i], &ids->data, NULL) == 0)
                        ids->source = ids_paths[i];
        for (size_t i = 0; i < ARRAY_SIZE(ids_paths) && !ids->data; i++)
                if (read_user_file(ids_paths[i], ROOT_READ_MAX, &ids->host, &(size_t){0}) == 0) {
                        ids->data = ids->host;
                        ids->source = "pci.ids of this host";
                }
        facts_set_handle(f, HANDLE_KEY, ids, ids_free);
        return ids;
}

/* The name after "ID  " on the line at P (up to the line's end). */
static char *line_name(const char *p)
{
        p += strspn(p, "\t");
        p += 4;
        p += strspn(p, " \t");
        return xstrndup(p, strcspn(p, "\r\n"));
}

/*
 * The format (the list's own header): a vendor line "vvvv  name" at the start of a line, then its
 * devices "\tdddd  name" (and their subsystems "\t\tssss ssss  name"), four lower-case hex digits
 * each; comments start with '#'. The vendor's section ends at the next line that starts with
 * neither a tab nor '#'.
 *
 * The line "vvvv  name" of VENDOR, or NULL.
 */
static const char *vendor_section(const char *data, unsigned vendor)
{
        char key[16];
        snprintf(key, sizeof(key), "\n%04x  ", vendor & 0xffffu);
        if (strncmp(data, key + 1, 6) == 0)
                return data;
        const char *v = strstr(data, key);
        return v ? v + 1 : NULL;
}

/* The line "\tdddd  name" of DEVICE in the vendor section at V, or NULL. */
static const char *device_line(const char *v, unsigned device)
{
        char key[16];
        snprintf(key, sizeof(key), "\t%04x  ", device & 0xffffu);
        for (const char *l = strchr(v, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
                if (l[1] != '\t' && l[1] != '#')
                        break;
                if (strncmp(l + 1, key, 7) == 0)
                        return l + 1;
        }
        return NULL;
}

int pci_ids_names(struct facts *f, unsigned vendor, unsigned device, char **ret_vendor, char **ret_device,
                  const char **ret_source)
{
        struct ids *ids = ids_get(f);
        *ret_vendor = *ret_device = NULL;
        *ret_source = ids->source;
        if (!ids->data)
                return -ENOENT;
        if (!ids->have_vendor || ids->last_vendor != vendor) {
                ids->vendor_line = vendor_section(ids->data, vendor);
                ids->last_vendor = vendor;
                ids->have_vendor = true;
                ids->have_device = false; /* a device line found is the old vendor's */
        }
        if (!ids->vendor_line)
                return 0;
        if (!ids->have_device || ids->last_device != device) {
                ids->device_line = device_line(ids->vendor_line, device);
                ids->last_device = device;
                ids->have_device = true;
        }
        *ret_vendor = line_name(ids->vendor_line);
        if (ids->device_line)
                *ret_device = line_name(ids->device_line);
        return 0;
}
