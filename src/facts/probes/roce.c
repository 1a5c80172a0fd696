/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RoCE ports (ib.DEV.port.P.* of a port whose link layer is Ethernet). A RoCE port has no MTU of
 * its own in sysfs: the kernel derives its active MTU from the MTU of the Ethernet interface it runs
 * over (mlx5_query_port_roce, mlx4, ionic: min(max_mtu, iboe_get_mtu(ndev->mtu))), so a netdev
 * left at 1500 gives 1024-byte RDMA packets. What is read:
 *
 *   netdev        ports/P/gid_attrs/ndevs/0 (drivers/infiniband/core/sysfs.c print_ndev: the
 *                 interface of GID 0, the port's default GID), else the one interface in the PCI
 *                 function's net/ folder, or the one whose dev_port is P-1
 *   netdev_mtu    /sys/class/net/NETDEV/mtu
 *   roce_mtu      iboe_get_mtu(netdev_mtu) (include/rdma/ib_addr.h)
 *   ecn_np_priorities, ecn_rp_priorities
 *                 /sys/class/net/NETDEV/ecn/roce_{np,rp}/enable/0..7: the priorities on which the
 *                 notification point (marks, sends CNPs) and the reaction point (slows down on a
 *                 CNP) of DCQCN are on. MLNX_OFED's mlx5 driver creates these (en_sysfs.c,
 *                 mlx5e_sysfs_create; en_ecn.c mlx5e_show_ecn_enable prints "0" or "1" and nothing
 *                 when the firmware query fails); the inbox driver does not.
 *   hw_counters   ports/P/hw_counters/NAME (the kernel's hw_counters group, sysfs-class-infiniband;
 *                 mlx5's names in drivers/infiniband/hw/mlx5/counters.c), with their growth.
 */
#include "facts/probes/roce.h"

#include <errno.h>
#include <stdio.h>

#include "facts/probes/counters.h"
#include "base/parse.h"

int roce_ib_mtu(int64_t netdev_mtu)
{
        int64_t room = netdev_mtu - ROCE_HEADER_BYTES;
        for (int mtu = 4096; mtu >= 256; mtu /= 2)
                if (room >= mtu)
                        return mtu;
        return 0;
}

/* The interface of the PCI function's net/ folder DIR/device/net that serves PORT: the only one, or
 * the one whose dev_port (0-based, Documentation/ABI/testing/sysfs-class-net) is PORT-1. */
static char *netdev_of_function(struct root *r, const char *devdir, const char *port)
{
        _cleanup_free_ char *nd = xasprintf("%s/device/net", devdir);
        _cleanup_strv_ struct strv names = {0};
        if (root_list(r, nd, &names) < 0 || !names.n)
                return NULL;
        if (names.n == 1)
                return xstrdup(names.v[0]);
        uint64_t p;
        if (parse_u64(port, &p) < 0 || p == 0)
                return NULL;
        for (size_t i = 0; i < names.n; i++) {
                _cleanup_free_ char *dp = xasprintf("%s/%s/dev_port", nd, names.v[i]);
                uint64_t v;
                if (root_read_u64(r, dp, &v) == 0 && v == p - 1)
                        return xstrdup(names.v[i]);
        }
        return NULL;
}

/* ib.DEV.port.P.netdev; the name (caller frees), or NULL with the fact absent or unreadable. */
static char *port_netdev(struct facts *f, const char *dev, const char *port, const char *dir)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *gp = xasprintf("%s/gid_attrs/ndevs/0", dir);
        char *name = NULL;
        int rc = root_read_line(r, gp, &name);
        if (rc == 0 && *name && !strchr(name, '/')) {
                fact_str(f, gp, name, "ib.%s.port.%s.netdev", dev, port);
                return name;
        }
        free(name);
        _cleanup_free_ char *devdir = xasprintf("/sys/class/infiniband/%s", dev);
        name = netdev_of_function(r, devdir, port);
        _cleanup_free_ char *fp = xasprintf("%s/device/net", devdir);
        if (name) {
                fact_str(f, fp, name, "ib.%s.port.%s.netdev", dev, port);
                return name;
        }
        /* ndevs/0 fails with EINVAL while GID 0 has no interface; a file that cannot be read for
         * another reason may still name it. */
        if (rc == 0 || root_gone(rc) || rc == -EINVAL || rc == -ENODATA)
                fact_absent(f, gp, "no interface in gid_attrs/ndevs/0 nor one for the port in the device's net/ folder",
                            "ib.%s.port.%s.netdev", dev, port);
        else
                fact_unreadable(f, gp, rc, NULL, "ib.%s.port.%s.netdev", dev, port);
        return NULL;
}

/* netdev_mtu and roce_mtu of the port whose interface is NETDEV (NULL: unknown). */
static void port_mtu(struct facts *f, const char *dev, const char *port, const char *netdev)
{
        if (!netdev) {
                fact_absent(f, "ib.*.port.*.netdev", "the port's Ethernet interface is unknown",
                            "ib.%s.port.%s.netdev_mtu", dev, port);
                fact_absent(f, "ib.*.port.*.netdev", "the port's Ethernet interface is unknown",
                            "ib.%s.port.%s.roce_mtu", dev, port);
                return;
        }
        _cleanup_free_ char *mp = xasprintf("/sys/class/net/%s/mtu", netdev);
        int64_t mtu;
        int rc = root_read_i64(facts_root(f), mp, &mtu);
        if (rc < 0 || mtu <= 0) {
                int err = rc < 0 ? rc : -EINVAL;
                if (root_gone(err)) {
                        fact_absent(f, mp, "no such interface", "ib.%s.port.%s.netdev_mtu", dev, port);
                        fact_absent(f, mp, "no such interface", "ib.%s.port.%s.roce_mtu", dev, port);
                } else {
                        fact_unreadable(f, mp, err, NULL, "ib.%s.port.%s.netdev_mtu", dev, port);
                        fact_unreadable(f, mp, err, NULL, "ib.%s.port.%s.roce_mtu", dev, port);
                }
                return;
        }
        fact_int(f, mp, mtu, "ib.%s.port.%s.netdev_mtu", dev, port);
        _cleanup_free_ char *src = xasprintf("%s less %d bytes of RoCE headers (iboe_get_mtu)", mp, ROCE_HEADER_BYTES);
        fact_int(f, src, roce_ib_mtu(mtu), "ib.%s.port.%s.roce_mtu", dev, port);
}

/* ecn_WHO_priorities (WHO: np or rp) from /sys/class/net/NETDEV/ecn/roce_WHO/enable/0..7. */
static void port_ecn(struct facts *f, const char *dev, const char *port, const char *netdev, const char *who)
{
        if (!netdev) {
                fact_absent(f, "ib.*.port.*.netdev", "the port's Ethernet interface is unknown",
                            "ib.%s.port.%s.ecn_%s_priorities", dev, port, who);
                return;
        }
        struct root *r = facts_root(f);
        _cleanup_free_ char *dir = xasprintf("/sys/class/net/%s/ecn/roce_%s/enable", netdev, who);
        _cleanup_strv_ struct strv on = {0};
        for (int prio = 0; prio < 8; prio++) {
                _cleanup_free_ char *p = xasprintf("%s/%d", dir, prio);
                _cleanup_free_ char *line = NULL;
                int rc = root_read_line(r, p, &line);
                uint64_t v = 0;
                if (rc == 0)
                        rc = parse_u64(line, &v) < 0 || v > 1 ? -EINVAL : 0;
                if (rc == -ENOENT && prio == 0) {
                        fact_absent(f, dir, "no ECN settings in sysfs (MLNX_OFED's mlx5 driver has them; the inbox "
                                            "driver does not)",
                                    "ib.%s.port.%s.ecn_%s_priorities", dev, port, who);
                        return;
                }
                if (rc < 0) {
                        /* mlx5 prints nothing when the firmware query fails: unknown, never "off" */
                        fact_unreadable(f, p, rc, line, "ib.%s.port.%s.ecn_%s_priorities", dev, port, who);
                        return;
                }
                if (v)
                        strv_push(&on, xasprintf("%d", prio));
        }
        _cleanup_free_ char *list = on.n ? strv_join(&on, ",") : xstrdup("none");
        fact_str(f, dir, list, "ib.%s.port.%s.ecn_%s_priorities", dev, port, who);
}

/* The RDMA error and congestion counters of hw_counters/ (mlx5 names, counters.c): packets lost or
 * reordered on the wire (out_of_sequence, packet_seq_err, implied_nak_seq_err), requests that timed
 * out unacknowledged (local_ack_timeout_err) or ran out of receiver-not-ready retries
 * (rnr_nak_retry_err), receive buffers exhausted (out_of_buffer), and DCQCN's congestion
 * notifications sent and acted on (np_cnp_sent, np_ecn_marked_roce_packets, rp_cnp_handled). */
static void port_hw_counters(struct facts *f, const char *dev, const char *port, const char *dir)
{
        static const char *const names[] = {"out_of_sequence",      "packet_seq_err", "implied_nak_seq_err",
                                            "local_ack_timeout_err", "rnr_nak_retry_err", "out_of_buffer",
                                            "np_cnp_sent",           "np_ecn_marked_roce_packets", "rp_cnp_handled"};
        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                _cleanup_free_ char *cp = xasprintf("%s/hw_counters/%s", dir, names[i]);
                fact_file_int(f, cp, "the driver does not provide this counter in hw_counters/", "ib.%s.port.%s.%s",
                              dev, port, names[i]);
                _cleanup_free_ char *name = xasprintf("ib.%s.port.%s.%s", dev, port, names[i]);
                counter_growth(f, name, NULL); /* NAME_growth: since the last recorded reading */
        }
}

void roce_port_facts(struct facts *f, const char *dev, const char *port, const char *dir)
{
        _cleanup_free_ char *netdev = port_netdev(f, dev, port, dir);
        port_mtu(f, dev, port, netdev);
        port_ecn(f, dev, port, netdev, "np");
        port_ecn(f, dev, port, netdev, "rp");
        port_hw_counters(f, dev, port, dir);
}
