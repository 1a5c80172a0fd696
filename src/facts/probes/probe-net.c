/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * net.*: network interfaces from /sys/class/net (Documentation/ABI/testing/sysfs-class-net),
 * keyed by kernel name (which may contain dots: eth0.1015 is a VLAN).
 *
 * Addresses: on the live root, getifaddrs(3). A foreign root has no sockets to ask, so the
 * snapshot's /proc/net is read instead: if_inet6 lists IPv6 addresses per interface; IPv4
 * addresses are not in procfs at all, so an interface that appears in /proc/net/route (the
 * kernel adds a prefix route for every configured IPv4 address) counts as having one. Link-local
 * IPv6 (fe80::/10) is ignored on both paths: every up interface has one. So is IPv4 link-local
 * (169.254/16, RFC 3927): an interface with only such an address is a BMC's USB NIC or an
 * unconfigured port, not a network a job can reach other nodes on.
 *
 * net.IF.virtual and net.IF.hardware: a network device the kernel registers without a parent device
 * (bridge, bond, VLAN, veth, tun, VXLAN, WireGuard) has no `device` link and sits under
 * /sys/devices/virtual/net; every other one sits under the device on its bus (PCI, USB, virtio).
 * An interface is on hardware when it is such a device, or when an interface below it is: the
 * kernel links each upper device to its lower ones as lower_NAME (net/core/dev.c
 * netdev_adjacent_sysfs_add), so a bond, a VLAN or a host bridge over a NIC counts, and a container
 * bridge whose ports are veths, an overlay or a VPN tunnel does not.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/stat.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>

#include "facts/facts.h"
#include "base/parse.h"
#include "facts/probes/probes.h"

#define NET_DIR "/sys/class/net"
#define IF_INET6 "/proc/net/if_inet6"
#define ROUTE "/proc/net/route"

struct ifaddr_info {
        bool has;           /* an address (or, from /proc/net/route, a route) */
        struct strv addrs;  /* printable addresses */
};

static bool ipv6_link_local(const struct in6_addr *a) { return a->s6_addr[0] == 0xfe && (a->s6_addr[1] & 0xc0) == 0x80; }
/* 169.254/16, network byte order */
static bool ipv4_link_local(uint32_t be) { return (ntohl(be) & 0xffff0000u) == 0xa9fe0000u; }

static struct ifaddr_info *find_if(const struct strv *ifs, struct ifaddr_info *info, const char *name)
{
        for (size_t i = 0; i < ifs->n; i++)
                if (streq(ifs->v[i], name))
                        return &info[i];
        /* getifaddrs reports IPv4 aliases by label ("eth0:1") */
        const char *colon = strchr(name, ':');
        if (colon) {
                _cleanup_free_ char *base = xstrndup(name, (size_t)(colon - name));
                for (size_t i = 0; i < ifs->n; i++)
                        if (streq(ifs->v[i], base))
                                return &info[i];
        }
        return NULL;
}

static int addrs_live(const struct strv *ifs, struct ifaddr_info *info)
{
        struct ifaddrs *list = NULL;
        if (getifaddrs(&list) < 0)
                return -errno;
        for (struct ifaddrs *a = list; a; a = a->ifa_next) {
                if (!a->ifa_addr || !a->ifa_name)
                        continue;
                char buf[INET6_ADDRSTRLEN];
                if (a->ifa_addr->sa_family == AF_INET) {
                        const struct sockaddr_in *sin = (const void *)a->ifa_addr;
                        if (ipv4_link_local(sin->sin_addr.s_addr))
                                continue;
                        inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf));
                } else if (a->ifa_addr->sa_family == AF_INET6) {
                        const struct sockaddr_in6 *sin6 = (const void *)a->ifa_addr;
                        if (ipv6_link_local(&sin6->sin6_addr))
                                continue;
                        inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof(buf));
                } else
                        continue;
                struct ifaddr_info *i = find_if(ifs, info, a->ifa_name);
                if (!i)
                        continue;
                i->has = true;
                if (!strv_contains(&i->addrs, buf))
                        strv_add(&i->addrs, buf);
        }
        freeifaddrs(list);
        return 0;
}

/* if_inet6: "ADDR(32 hex) IFINDEX PREFIXLEN SCOPE FLAGS NAME" per line. */
static int addrs_if_inet6(struct root *r, const struct strv *ifs, struct ifaddr_info *info)
{
        const char *data;
        int rc = root_read(r, IF_INET6, &data, NULL);
        if (rc < 0)
                return rc;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                const char *line = it.line;
                char hex[33], name[IF_NAMESIZE + 1];
                unsigned idx, plen, scope, flags;
                if (sscanf(line, "%32[0-9a-fA-F] %x %x %x %x %16s", hex, &idx, &plen, &scope, &flags, name) != 6 ||
                    strlen(hex) != 32)
                        continue; /* a malformed line says nothing about any interface */
                struct in6_addr a;
                for (int i = 0; i < 16; i++) {
                        unsigned byte;
                        sscanf(hex + 2 * i, "%2x", &byte);
                        a.s6_addr[i] = (uint8_t)byte;
                }
                if (ipv6_link_local(&a))
                        continue;
                struct ifaddr_info *i = find_if(ifs, info, name);
                if (!i)
                        continue;
                char buf[INET6_ADDRSTRLEN];
                inet_ntop(AF_INET6, &a, buf, sizeof(buf));
                i->has = true;
                if (!strv_contains(&i->addrs, buf))
                        strv_add(&i->addrs, buf);
        }
        return 0;
}

/* route: a header line, then "IFACE DEST GATEWAY FLAGS ..." per IPv4 route. */
static int addrs_route(struct root *r, const struct strv *ifs, struct ifaddr_info *info, bool *route_only)
{
        const char *data;
        int rc = root_read(r, ROUTE, &data, NULL);
        if (rc < 0)
                return rc;
        _cleanup_(line_iter_done) struct line_iter it = LINE_ITER(data);
        while (line_next(&it)) {
                if (it.lineno == 1)
                        continue; /* the header */
                const char *line = it.line;
                char name[IF_NAMESIZE + 1];
                unsigned dest = 0;
                /* DEST is the network in host-order hex of the kernel's __be32 (fib_route_seq_show):
                 * a 169.254/16 prefix route is a link-local address, not a reachable network */
                int k = sscanf(line, "%16s %8x", name, &dest);
                if (k == 2 && ipv4_link_local((uint32_t)dest))
                        k = 0;
                if (k >= 1) {
                        struct ifaddr_info *i = find_if(ifs, info, name);
                        if (i) {
                                route_only[i - info] = !i->has || route_only[i - info];
                                i->has = true;
                        }
                }
        }
        return 0;
}

/* The interfaces among the entries NAMES of NET_DIR, into DIRS. Interfaces are links (or
 * directories); the bonding driver's control file "bonding_masters" is a regular file beside them
 * and is not one. A dangling link is still an interface, with unreadable facts. */
static void interfaces(struct root *r, const struct strv *names, struct strv *dirs)
{
        for (size_t i = 0; i < names->n; i++) {
                _cleanup_free_ char *p = xasprintf(NET_DIR "/%s", names->v[i]);
                struct stat st;
                if (root_stat(r, p, &st, false) == 0 && S_ISREG(st.st_mode))
                        continue;
                strv_add(dirs, names->v[i]);
        }
}

/* Where the addresses of IFS come from and what they are (INFO, ROUTE_ONLY per interface). *SRC
 * names the source; *ADDR_ERR says why there are none to tell (caller frees). Returns whether
 * that is because a source could not be read (as against not being in the tree). */
static bool read_addrs(struct root *r, const struct strv *ifs, struct ifaddr_info *info, bool *route_only,
                       const char **src, char **addr_err)
{
        if (root_is_live(r)) {
                *src = "getifaddrs";
                int rc = addrs_live(ifs, info);
                if (rc < 0)
                        *addr_err = xasprintf("getifaddrs: %s", errno_name(rc));
                return rc < 0;
        }
        *src = IF_INET6 ", " ROUTE;
        int a = addrs_if_inet6(r, ifs, info);
        int b = addrs_route(r, ifs, info, route_only);
        if ((a < 0 && a != -ENOENT) || (b < 0 && b != -ENOENT)) {
                /* one source unreadable: what the other says is not the whole answer */
                int e = a < 0 && a != -ENOENT ? a : b;
                *addr_err = xasprintf("%s: %s", e == a ? IF_INET6 : ROUTE, errno_name(e));
                return true;
        }
        if (a < 0 && b < 0)
                *addr_err = xstrdup("no /proc/net/if_inet6 or /proc/net/route under the root");
        return false;
}

/* Is interface N a device of its own (not one registered without a parent)? 1 yes, 0 no, -errno
 * when that cannot be told; *SRC the path that says so. */
static int iface_own_device(struct root *r, const char *n, char **src)
{
        _cleanup_free_ char *dev = xasprintf(NET_DIR "/%s/device", n);
        struct stat st;
        int rc = root_stat(r, dev, &st, false);
        if (rc == 0) {
                *src = xstrdup(dev);
                return 1;
        }
        if (!root_gone(rc))
                return rc;
        _cleanup_free_ char *cls = xasprintf(NET_DIR "/%s", n), *target = NULL;
        rc = root_readlink(r, cls, &target);
        *src = xstrdup(cls);
        if (rc == 0)
                return strstr(target, "devices/virtual/") ? 0 : 1;
        /* not a link (a snapshot that copied the directory): no device link means no parent */
        return rc == -EINVAL || root_gone(rc) ? 0 : rc;
}

#define NET_STACK_MAX 8 /* bonds of VLANs of bridges: far deeper than any real stack */

/* Is N on hardware, itself or through the interfaces below it (lower_NAME links)? */
static int iface_hardware(struct root *r, const char *n, unsigned depth, char **src)
{
        int own = iface_own_device(r, n, src);
        if (own != 0 || depth >= NET_STACK_MAX)
                return own;
        _cleanup_free_ char *dir = xasprintf(NET_DIR "/%s", n);
        _cleanup_(strv_done) struct strv names = {0};
        int rc = root_list(r, dir, &names);
        if (rc < 0)
                return root_gone(rc) ? 0 : rc;
        for (size_t i = 0; i < names.n; i++) {
                const char *lower = names.v[i];
                if (!startswith(lower, "lower_") || !lower[strlen("lower_")] || strchr(lower, '/'))
                        continue;
                char *why = NULL;
                rc = iface_hardware(r, lower + strlen("lower_"), depth + 1, &why);
                if (rc != 0) {
                        free(*src);
                        *src = rc > 0 ? xasprintf("%s/%s", dir, lower) : xstrdup(why);
                }
                free(why);
                if (rc != 0)
                        return rc;
        }
        return 0;
}

static void iface_kind(struct facts *f, const char *n)
{
        struct root *r = facts_root(f);
        _cleanup_free_ char *src = NULL, *hsrc = NULL;
        int own = iface_own_device(r, n, &src);
        if (own < 0) {
                fact_unreadable(f, src, own, NULL, "net.%s.virtual", n);
                fact_unreadable(f, src, own, NULL, "net.%s.hardware", n);
                return;
        }
        fact_bool(f, src, own == 0, "net.%s.virtual", n);
        int hw = iface_hardware(r, n, 0, &hsrc);
        if (hw < 0)
                fact_unreadable(f, hsrc, hw, "an interface below it cannot be read", "net.%s.hardware", n);
        else
                fact_bool(f, hsrc, hw > 0, "net.%s.hardware", n);
}

/* net.N.up from N's flags (IFF_UP). */
static void iface_up(struct facts *f, const char *n)
{
        _cleanup_free_ char *fp = xasprintf(NET_DIR "/%s/flags", n);
        _cleanup_free_ char *line = NULL;
        uint64_t flags;
        int rc = root_read_line(facts_root(f), fp, &line);
        if (rc == 0 && (!startswith(line, "0x") || (rc = parse_u64(line, &flags)) < 0))
                rc = rc < 0 ? rc : -EINVAL;
        if (rc == 0)
                fact_bool(f, fp, flags & IFF_UP, "net.%s.up", n);
        else if (rc == -ENOENT)
                fact_absent(f, fp, "no flags file", "net.%s.up", n);
        else
                fact_unreadable(f, fp, rc, line, "net.%s.up", n);
}

static int net_run(struct facts *f)
{
        struct root *r = facts_root(f);
        _cleanup_(strv_done) struct strv names = {0};
        int rc = root_list(r, NET_DIR, &names);
        if (rc < 0) {
                if (rc == -ENOENT)
                        fact_absent(f, NET_DIR, "no " NET_DIR " under the root", "net.count");
                else
                        fact_unreadable(f, NET_DIR, rc, NULL, "net.count");
                return 0;
        }
        _cleanup_(strv_done) struct strv ifs = {0};
        interfaces(r, &names, &ifs);
        struct ifaddr_info *info = xcalloc(ifs.n + 1, sizeof(*info));
        _cleanup_free_ bool *route_only = xcalloc(ifs.n + 1, sizeof(bool));
        const char *src;
        _cleanup_free_ char *addr_err = NULL;
        bool addr_unreadable = read_addrs(r, &ifs, info, route_only, &src, &addr_err);

        for (size_t i = 0; i < ifs.n; i++) {
                const char *n = ifs.v[i];
                _cleanup_free_ char *op = xasprintf(NET_DIR "/%s/operstate", n);
                fact_file_str(f, op, "no operstate file", "net.%s.operstate", n);
                iface_up(f, n);
                iface_kind(f, n);
                if (addr_err && addr_unreadable) {
                        fact_unreadable(f, src, 0, addr_err, "net.%s.has_address", n);
                        fact_unreadable(f, src, 0, addr_err, "net.%s.addresses", n);
                        continue;
                }
                if (addr_err) {
                        fact_absent(f, src, addr_err, "net.%s.has_address", n);
                        fact_absent(f, src, addr_err, "net.%s.addresses", n);
                        continue;
                }
                fact_bool(f, src, info[i].has, "net.%s.has_address", n);
                if (info[i].addrs.n) {
                        _cleanup_free_ char *list = strv_join(&info[i].addrs, ",");
                        fact_str(f, src, list, "net.%s.addresses", n);
                } else if (route_only[i])
                        fact_absent(f, src, "IPv4 addresses of a foreign root are not in procfs (only a route shows one)",
                                    "net.%s.addresses", n);
                else
                        fact_absent(f, src, "no address", "net.%s.addresses", n);
        }
        fact_int(f, NET_DIR, (int64_t)ifs.n, "net.count");
        for (size_t i = 0; i < ifs.n; i++)
                strv_done(&info[i].addrs);
        free(info);
        return 0;
}

const struct probe probe_net = {
        .name = "net",
        .prefixes = {"net."},
        .run = net_run,
};
