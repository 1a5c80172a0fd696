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
 */
int pci_ids_names(struct facts *f, unsigned vendor, unsigned device, char **ret_vendor, char **ret_device,
                  const char **ret_source)
{
        struct ids *ids = ids_get(f);
        *ret_vendor = *ret_device = NULL;
        *ret_source = ids->source;
        if (!ids->data)
                return -ENOENT;
        char key[16];
        snprintf(key, sizeof(key), "\n%04x  ", vendor & 0xffffu);
        const char *v = ids->data;
        if (strncmp(v, key + 1, 6) != 0) {
                v = strstr(v, key);
                if (!v)
                        return 0;
                v++;
        }
        *ret_vendor = line_name(v);
        snprintf(key, sizeof(key), "\t%04x  ", device & 0xffffu);
        for (const char *l = strchr(v, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
                if (l[1] != '\t' && l[1] != '#')
                        break;
                if (strncmp(l + 1, key, 7) == 0) {
                        *ret_device = line_name(l + 1);
                        break;
                }
        }
        return 0;
}
