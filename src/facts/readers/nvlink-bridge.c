/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The NVLink switch management bridge test (nvlink-bridge.h). The marker is a keyword value inside
 * the VPD's read-only section ("SMDL=SW_MNG" on the baseboards NVIDIA ships); it is looked for in
 * the whole VPD image, as NVIDIA's own driver container does (grep over the vpd file), so that where
 * in the VPD a board puts it does not matter.
 */
#include <errno.h>
#include <string.h>

#include "base/util.h"
#include "facts/readers/nvlink-bridge.h"

#define PCI_DEVS "/sys/bus/pci/devices"
#define VENDOR_MELLANOX 0x15b3
#define SW_MNG "SW_MNG"

char *nvlink_bridge_vpd_path(const char *addr) { return xasprintf(PCI_DEVS "/%s/vpd", addr); }

int nvlink_bridge_check(struct root *r, const char *addr)
{
        uint64_t vendor;
        int rc = root_readf_u64(r, &vendor, PCI_DEVS "/%s/vendor", addr);
        if (rc < 0)
                return root_gone(rc) ? 0 : rc;
        if (vendor != VENDOR_MELLANOX)
                return 0;
        _cleanup_free_ char *path = nvlink_bridge_vpd_path(addr);
        const char *data;
        size_t len;
        rc = root_read(r, path, &data, &len);
        if (root_gone(rc))
                return 0; /* no VPD capability */
        if (rc < 0)
                return rc;
        bool found = memmem(data, len, SW_MNG, strlen(SW_MNG)) != NULL;
        /* gather keeps the marker, not the VPD: it holds the board's serial number, which
         * --anonymize does not know to replace inside a binary file */
        if (root_recording(r))
                root_record_data(r, path, found ? SW_MNG : "", found ? strlen(SW_MNG) : 0);
        return found;
}
