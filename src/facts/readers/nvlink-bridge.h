/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Is a PCI function an NVLink switch management bridge? On NVLink 5 baseboards (HGX B200/B300) the
 * NVSwitches are no PCI functions of the host: it reaches them over InfiniBand through ConnectX
 * functions of the baseboard whose Vital Product Data carries the marker SW_MNG. Those functions are
 * mlx5 RDMA devices too (they are listed in /sys/class/infiniband, which is where NVIDIA's
 * gpu-driver-container looks for the marker: nvidia-driver, _assert_nvlink5_system), used by the
 * NVLink Subnet Manager (NVLSM) the fabric manager starts, never by NCCL's network traffic.
 *
 * One decision for every probe: probe-pci.c counts the bridges as the NVSwitches' presence
 * (nvswitch.bridges), probe-ib.c gives such an RDMA device the role nvlink-mgmt instead of an HCA's.
 */
#pragma once

#include <stdbool.h>

#include "base/root.h"

struct facts;

/* The function at PCI address ADDR (/sys/bus/pci/devices/ADDR): 1 a bridge (a Mellanox function
 * whose VPD carries SW_MNG), 0 not one (another vendor, or no VPD capability at all), -errno when the
 * vendor or the VPD that is there cannot be read (the VPD file is root's only): maybe one. */
int nvlink_bridge_check(struct root *r, const char *addr);

/* The path of ADDR's VPD file (caller frees), for a reason that names what could not be read. */
char *nvlink_bridge_vpd_path(const char *addr);

/* Whether any function here can be such a bridge: only where an NVIDIA GPU is of the Blackwell
 * architecture or of one not known (gpu.N.arch; the caller makes sure they are in the store). Where
 * not, the VPD, root's only, is not asked. */
bool nvlink_bridges_possible(struct facts *f);
