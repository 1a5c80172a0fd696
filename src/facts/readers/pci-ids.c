/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "facts/readers/pci-ids.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/root.h"

#define HANDLE_KEY "pci.ids"

static const char *const ids_paths[] = {"/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"};

struct ids {
        void *host;          /* the host's list, when the tree has none: mapped (host_len bytes) */
        size_t host_len;
        const char *data;    /* the list in use: the tree's (owned by the root handle) or host */
        size_t len;          /* of data: the host's list is mapped, not NUL-terminated */
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
        if (ids && ids->host)
                munmap(ids->host, ids->host_len);
        free(ids);
}

/*
 * The host's list PATH, mapped: only the pages up to the vendor's section are touched, where reading
 * it copies all 1.3 MB into memory first (0.6-0.8 ms of CPU a run against 0.1 ms). The rules of
 * read_user_file hold: a regular file, at most ROOT_READ_MAX (the tree's copy's cap); an empty one
 * or one that cannot be mapped counts as none, as an unreadable one does.
 */
static bool map_host(const char *path, struct ids *ids)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return false;
        struct stat st;
        void *m = MAP_FAILED;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= ROOT_READ_MAX)
                m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
                return false;
        ids->host = m;
        ids->host_len = (size_t)st.st_size;
        return true;
}

static struct ids *ids_get(struct facts *f)
{
        struct ids *ids = facts_handle(f, HANDLE_KEY);
        if (ids)
                return ids;
        ids = xcalloc(1, sizeof(*ids));
        for (size_t i = 0; i < ARRAY_SIZE(ids_paths) && !ids->data; i++)
                if (root_read(facts_root(f), ids_paths[i], &ids->data, &ids->len) == 0)
                        ids->source = ids_paths[i];
        for (size_t i = 0; i < ARRAY_SIZE(ids_paths) && !ids->data; i++)
                if (map_host(ids_paths[i], ids)) {
                        ids->data = ids->host;
                        ids->len = ids->host_len;
                        ids->source = "pci.ids of this host";
                }
        facts_set_handle(f, HANDLE_KEY, ids, ids_free);
        return ids;
}

/* The name after "ID  " on the line at P, which ends at a newline or END. */
static char *line_name(const char *p, const char *end)
{
        while (p < end && *p == '\t')
                p++;
        p += end - p < 4 ? end - p : 4;
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        const char *e = p;
        while (e < end && *e != '\r' && *e != '\n')
                e++;
        return xstrndup(p, (size_t)(e - p));
}

/*
 * The format (the list's own header): a vendor line "vvvv  name" at the start of a line, then its
 * devices "\tdddd  name" (and their subsystems "\t\tssss ssss  name"), four lower-case hex digits
 * each; comments start with '#'. The vendor's section ends at the next line that starts with
 * neither a tab nor '#'.
 *
 * The line "vvvv  name" of VENDOR in DATA (LEN bytes), or NULL.
 */
static const char *vendor_section(const char *data, size_t len, unsigned vendor)
{
        char key[16];
        snprintf(key, sizeof(key), "\n%04x  ", vendor & 0xffffu);
        if (len >= 6 && memcmp(data, key + 1, 6) == 0)
                return data;
        const char *v = memmem(data, len, key, 7);
        return v ? v + 1 : NULL;
}

/* The line "\tdddd  name" of DEVICE in the vendor section at V (the list ends at END), or NULL. */
static const char *device_line(const char *v, const char *end, unsigned device)
{
        char key[16];
        snprintf(key, sizeof(key), "\t%04x  ", device & 0xffffu);
        for (const char *l = memchr(v, '\n', (size_t)(end - v)); l && end - l > 1;
             l = memchr(l + 1, '\n', (size_t)(end - l - 1))) {
                if (l[1] != '\t' && l[1] != '#')
                        break;
                if (end - l - 1 >= 7 && memcmp(l + 1, key, 7) == 0)
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
                ids->vendor_line = vendor_section(ids->data, ids->len, vendor);
                ids->last_vendor = vendor;
                ids->have_vendor = true;
                ids->have_device = false; /* a device line found is the old vendor's */
        }
        if (!ids->vendor_line)
                return 0;
        if (!ids->have_device || ids->last_device != device) {
                ids->device_line = device_line(ids->vendor_line, ids->data + ids->len, device);
                ids->last_device = device;
                ids->have_device = true;
        }
        *ret_vendor = line_name(ids->vendor_line, ids->data + ids->len);
        if (ids->device_line)
                *ret_device = line_name(ids->device_line, ids->data + ids->len);
        return 0;
}
