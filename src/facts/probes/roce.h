/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a RoCE port (link layer Ethernet) adds to ib.DEV.port.P.*: the Ethernet interface it runs
 * over and that interface's MTU, the RDMA MTU the kernel derives from it, the ECN settings of
 * mlx5 under MLNX_OFED, and the RDMA error and congestion counters of hw_counters/.
 */
#pragma once

#include "facts/facts.h"

/* Bytes of RoCE headers the kernel takes off the netdev's MTU before choosing the IB MTU of a RoCE
 * port (include/rdma/ib_addr.h iboe_get_mtu: GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 +
 * ICRC 4, include/rdma/ib_pack.h). */
#define ROCE_HEADER_BYTES 96

/* The IB MTU (256, 512, 1024, 2048 or 4096) of a RoCE port whose netdev has MTU NETDEV_MTU, as
 * iboe_get_mtu chooses it: the largest that fits NETDEV_MTU less ROCE_HEADER_BYTES; 0 when none. */
int roce_ib_mtu(int64_t netdev_mtu);

/* The facts of RoCE port PORT of RDMA device DEV, whose sysfs directory is DIR (.../ports/PORT). */
void roce_port_facts(struct facts *f, const char *dev, const char *port, const char *dir);
