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
#include "facts/facts.h"
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

/* Whether an NVLink switch management bridge can be here at all. They exist only on NVLink 5
 * baseboards (Blackwell GPUs): before them the NVSwitches are PCI functions of the host and the fabric
 * manager reaches them itself (NVIDIA Fabric Manager User Guide, "NVIDIA HGX B200/B100 GPU Baseboard"
 * against the earlier boards). So where every NVIDIA GPU is of an earlier architecture, or there is
 * none, no VPD is read: it is root's only, and an unprivileged run would otherwise lose ib.hca_count on
 * every ConnectX host (and nvswitch.bridge_count with it). A GPU whose architecture is not known (not in
 * pci.ids, a later one), or whose vendor is, keeps the test. */
bool nvlink_bridges_possible(struct facts *f)
{
        static const char *const earlier[] = {"kepler", "maxwell", "pascal", "volta",
                                              "turing", "ampere",  "ada",    "hopper"};
        _cleanup_free_ const struct fact **v = NULL;
        size_t n = facts_match(f, "gpu.*.vendor_id", &v);
        for (size_t i = 0; i < n; i++) {
                if (v[i]->status != FACT_OK)
                        return true;
                if (!streq(v[i]->str, "10de"))
                        continue;
                size_t plen = strlen(v[i]->name) - strlen("vendor_id");
                _cleanup_free_ char *an = xasprintf("%.*sarch", (int)plen, v[i]->name);
                const struct fact *af = facts_get(f, an);
                if (!af || af->status != FACT_OK)
                        return true;
                bool known_earlier = false;
                for (size_t k = 0; k < ARRAY_SIZE(earlier); k++)
                        known_earlier |= streq(af->str, earlier[k]);
                if (!known_earlier)
                        return true;
        }
        return false;
}
