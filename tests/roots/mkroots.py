#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Generate the fixture machine roots (a fake "/" per machine) from short descriptions.

    mkroots.py --out DIR [--stamp FILE] DESC...

Each DESC (tests/roots/NAME.desc) is a Python literal (read with ast.literal_eval, never
executed) describing one machine; the tree is written to DIR/NAME. Files are produced in the
formats the kernel and the distributions use (see README.md for the sources): sysfs attributes
end with a newline, cpumasks are comma-separated 32-bit hex words, PCI config space is binary.
Only the Python 3 standard library is used; mkfs.ext4 is used for ext4 images when present.
"""
import argparse
import ast
import os
import shutil
import struct
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------------------------------------
# PCI device catalogue. bars: (index, kind, size); kind: mem32, mem64 (non-prefetchable 64-bit),
# pref64, io, rom. link: the device's own LnkCap (gen, width). type: PCIe device/port type.
# ---------------------------------------------------------------------------------------------
GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10
CATALOGUE = {
    # AMD EPYC 7002 (Rome) root complex and GPP bridge
    'rome-hb': dict(vendor=0x1022, device=0x1480, cls=0x060000, sub=(0x1022, 0x1480), rev=0x00, type=None),
    'rome-rp': dict(vendor=0x1022, device=0x1483, cls=0x060400, sub=(0x0000, 0x0000), rev=0x00, type='rp',
                    link=(4, 16)),
    # AMD Ryzen 7000 (Raphael) root complex and GPP bridge
    'raphael-hb': dict(vendor=0x1022, device=0x14d8, cls=0x060000, sub=(0x1022, 0x14d8), rev=0x00, type=None),
    'raphael-rp': dict(vendor=0x1022, device=0x14db, cls=0x060400, sub=(0x0000, 0x0000), rev=0x00, type='rp',
                       link=(5, 16)),
    # Intel Sapphire Rapids IIO stack: VT-d/memory map function and PCIe root port
    'spr-hb': dict(vendor=0x8086, device=0x09a2, cls=0x088000, sub=(0x8086, 0x0000), rev=0x20, type='rciep'),
    'spr-rp': dict(vendor=0x8086, device=0x352a, cls=0x060400, sub=(0x0000, 0x0000), rev=0x04, type='rp',
                   link=(5, 16)),
    # QEMU q35 host bridge and pcie-root-port
    'q35-hb': dict(vendor=0x8086, device=0x29c0, cls=0x060000, sub=(0x1af4, 0x1100), rev=0x00, type=None),
    'qemu-rp': dict(vendor=0x1b36, device=0x000c, cls=0x060400, sub=(0x1b36, 0x0000), rev=0x00, type='rp',
                    link=(1, 1)),
    # Broadcom / PLX PEX88096 (DGX A100) and PEX89144 (HGX H100) PCIe switches
    'pex88096': dict(vendor=0x1000, device=0xc010, cls=0x060400, sub=(0x1000, 0xa064), rev=0xb0, type='switch',
                     link=(4, 16)),
    'pex89144': dict(vendor=0x1000, device=0xc030, cls=0x060400, sub=(0x1000, 0x100b), rev=0xb0, type='switch',
                     link=(5, 16)),
    # NVIDIA GPUs
    'a100-sxm4-40gb': dict(vendor=0x10de, device=0x20b0, cls=0x030200, sub=(0x10de, 0x134f), rev=0xa1, type='ep',
                           link=(4, 16), bars=[(0, 'mem32', 16 * MIB), (1, 'pref64', 64 * GIB),
                                               (3, 'pref64', 32 * MIB)]),
    'h100-sxm5-80gb': dict(vendor=0x10de, device=0x2330, cls=0x030200, sub=(0x10de, 0x16c1), rev=0xa1, type='ep',
                           link=(5, 16), bars=[(0, 'mem32', 16 * MIB), (1, 'pref64', 128 * GIB),
                                               (3, 'pref64', 32 * MIB)]),
    'rtx-4090': dict(vendor=0x10de, device=0x2684, cls=0x030000, sub=(0x1458, 0x40bf), rev=0xa1, type='ep',
                     link=(4, 16), multifunction=True,
                     bars=[(0, 'mem32', 16 * MIB), (1, 'pref64', 32 * GIB), (3, 'pref64', 32 * MIB),
                           (5, 'io', 128), (6, 'rom', 512 * KIB)]),
    'ad102-audio': dict(vendor=0x10de, device=0x22ba, cls=0x040300, sub=(0x1458, 0x40bf), rev=0xa1, type='ep',
                        link=(4, 16), multifunction=True, bars=[(0, 'mem32', 16 * KIB)]),
    # H200 SXM 141GB and B200: the memory (141 GB, 180 GB) rounded up to a power of two is BAR1, as real
    # nvidia-smi captures show for the A100 (80 GB: 131072 MiB, 40 GB: 65536 MiB); subsystem IDs are
    # placeholders (no rule reads them)
    'h200-sxm-141gb': dict(vendor=0x10de, device=0x2335, cls=0x030200, sub=(0x10de, 0x18be), rev=0xa1, type='ep',
                           link=(5, 16), bars=[(0, 'mem32', 16 * MIB), (1, 'pref64', 256 * GIB),
                                               (3, 'pref64', 32 * MIB)]),
    'b200': dict(vendor=0x10de, device=0x2901, cls=0x030200, sub=(0x10de, 0x1999), rev=0xa1, type='ep',
                 link=(5, 16), bars=[(0, 'mem32', 64 * MIB), (1, 'pref64', 256 * GIB), (3, 'pref64', 32 * MIB)]),
    'nvswitch-a100': dict(vendor=0x10de, device=0x1af1, cls=0x068000, sub=(0x10de, 0x1631), rev=0xa1, type='ep',
                          link=(4, 1), bars=[(0, 'mem32', 32 * MIB)]),
    'nvswitch-h100': dict(vendor=0x10de, device=0x22a3, cls=0x068000, sub=(0x10de, 0x1796), rev=0xa1, type='ep',
                          link=(4, 1), bars=[(0, 'mem32', 32 * MIB)]),
    # Mellanox / NVIDIA ConnectX-6 (HDR) and ConnectX-7 (NDR) in InfiniBand mode
    'connectx-6': dict(vendor=0x15b3, device=0x101b, cls=0x020700, sub=(0x15b3, 0x0007), rev=0x00, type='ep',
                       link=(4, 16), bars=[(0, 'pref64', 32 * MIB)]),
    'connectx-7': dict(vendor=0x15b3, device=0x1021, cls=0x020700, sub=(0x15b3, 0x0041), rev=0x00, type='ep',
                       link=(5, 16), bars=[(0, 'pref64', 32 * MIB)]),
    # The ConnectX-7 of an NVLink 5 baseboard (HGX B200) that bridges the host to the NVSwitches: the same
    # chip, a narrow link, and SW_MNG in its VPD (what NVIDIA's gpu-driver-container looks for)
    'connectx-7-bridge': dict(vendor=0x15b3, device=0x1021, cls=0x020700, sub=(0x15b3, 0x0041), rev=0x00,
                              type='ep', link=(5, 2), bars=[(0, 'pref64', 32 * MIB)],
                              vpd=dict(ident='NVIDIA ConnectX-7 NVLink switch management bridge',
                                       ro=[('PN', 'MCX7-BRIDGE'), ('EC', 'A1'), ('SN', 'MT2412X00042'),
                                           ('V3', 'SMDL=SW_MNG')])),
    # NVMe SSDs: Samsung PM1733, Kioxia CM6, Samsung 990 PRO
    'pm1733': dict(vendor=0x144d, device=0xa824, cls=0x010802, sub=(0x144d, 0xa809), rev=0x00, type='ep',
                   link=(4, 4), bars=[(0, 'mem64', 32 * KIB)]),
    'kioxia-cm6': dict(vendor=0x1e0f, device=0x0007, cls=0x010802, sub=(0x1e0f, 0x0001), rev=0x01, type='ep',
                       link=(4, 4), bars=[(0, 'mem64', 32 * KIB)]),
    '990pro': dict(vendor=0x144d, device=0xa80c, cls=0x010802, sub=(0x144d, 0xa801), rev=0x00, type='ep',
                   link=(4, 4), bars=[(0, 'mem64', 16 * KIB)]),
    # Ethernet: Intel I210, Intel I226-V, virtio-net (modern)
    'i210': dict(vendor=0x8086, device=0x1533, cls=0x020000, sub=(0x15d9, 0x1533), rev=0x03, type='ep',
                 link=(1, 1), bars=[(0, 'mem32', 1 * MIB), (3, 'mem32', 16 * KIB)]),
    'i226-v': dict(vendor=0x8086, device=0x125c, cls=0x020000, sub=(0x1458, 0xe000), rev=0x06, type='ep',
                   link=(2, 1), bars=[(0, 'mem32', 1 * MIB), (3, 'mem32', 16 * KIB)]),
    'virtio-net': dict(vendor=0x1af4, device=0x1041, cls=0x020000, sub=(0x1af4, 0x1100), rev=0x01, type='ep',
                       link=(1, 1), bars=[(1, 'mem32', 4 * KIB), (4, 'pref64', 16 * KIB)]),
}

# kernel include/linux/ioport.h resource flags as /sys/bus/pci/devices/*/resource prints them
RES_FLAGS = {'mem32': 0x40200, 'mem64': 0x140204, 'pref64': 0x14220c, 'io': 0x40101, 'rom': 0x46200}
SPEED = {1: '2.5 GT/s PCIe', 2: '5.0 GT/s PCIe', 3: '8.0 GT/s PCIe', 4: '16.0 GT/s PCIe', 5: '32.0 GT/s PCIe'}
PCIE_TYPE = {'ep': 0x0, 'rp': 0x4, 'up': 0x5, 'down': 0x6, 'rciep': 0x9}


# ---------------------------------------------------------------------------------------------
# Tree writer
# ---------------------------------------------------------------------------------------------
class Tree:
    def __init__(self, base):
        self.base = base

    def host(self, path):
        return os.path.join(self.base, path.lstrip('/'))

    def mkdir(self, path):
        os.makedirs(self.host(path), exist_ok=True)

    def write(self, path, content, mode=0o644):
        """Write a file; str content is written as UTF-8 exactly as given."""
        h = self.host(path)
        os.makedirs(os.path.dirname(h), exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        with open(h, 'wb') as f:
            f.write(data)
        os.chmod(h, mode)

    def attr(self, path, value, mode=0o444):
        """A sysfs/procfs attribute: one value and a newline."""
        self.write(path, '%s\n' % value, mode)

    def link(self, path, target):
        """Symlink at PATH to the root-absolute TARGET, written relative like sysfs does."""
        h = self.host(path)
        os.makedirs(os.path.dirname(h), exist_ok=True)
        if target.startswith('/'):
            # Like sysfs: up to the target's parent, then down by name, so the link always
            # ends in the target's name (a link to an ancestor is "../../../0000:07:00.0", not "../..").
            here = os.path.dirname('/' + path.lstrip('/'))
            target = os.path.join(os.path.relpath(os.path.dirname(target), here), os.path.basename(target))
        if os.path.lexists(h):
            os.unlink(h)
        os.symlink(target, h)


# ---------------------------------------------------------------------------------------------
# Formatting helpers (kernel lib/bitmap.c %*pb / %*pbl)
# ---------------------------------------------------------------------------------------------
def cpumask(cpus, nbits):
    v = 0
    for c in cpus:
        v |= 1 << c
    words = (nbits + 31) // 32
    out = []
    for w in range(words - 1, -1, -1):
        word = (v >> (32 * w)) & 0xffffffff
        if w == words - 1 and nbits % 32:
            out.append('%0*x' % ((nbits % 32 + 3) // 4, word))
        else:
            out.append('%08x' % word)
    return ','.join(out)


def cpulist(cpus):
    cpus = sorted(set(cpus))
    parts, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append('%d' % cpus[i] if i == j else '%d-%d' % (cpus[i], cpus[j]))
        i = j + 1
    return ','.join(parts)


def kb_line(key, kb):
    # fs/proc/meminfo.c show_val_kb(): "Key:" padded to 16, value %8lu, " kB"
    return '%-16s%8d kB\n' % (key + ':', kb)


# ---------------------------------------------------------------------------------------------
# CPU and NUMA
# ---------------------------------------------------------------------------------------------
class Cpus:
    def __init__(self, d):
        c = d['cpu']
        self.sockets, self.cores, self.threads = c['sockets'], c['cores'], c['threads']
        # dies per package (a Threadripper 2990WX has 4): the kernel numbers core_id within a
        # die, so core ids repeat in one package and only the sibling sets tell cores apart
        self.dies = c.get('dies', 1)
        self.count = self.sockets * self.cores * self.threads
        self.nps = c.get('nodes_per_socket', 1)
        self.nodes = self.sockets * self.nps

    def cpu(self, s, k, t):
        # Linux enumerates first threads of all sockets, then the SMT siblings (ACPI MADT order).
        return t * self.sockets * self.cores + s * self.cores + k

    def where(self, n):
        t, rest = divmod(n, self.sockets * self.cores)
        s, k = divmod(rest, self.cores)
        return s, k, t

    def node_of(self, n):
        s, k, _ = self.where(n)
        return s * self.nps + k // (self.cores // self.nps)

    def node_cpus(self, node):
        return [n for n in range(self.count) if self.node_of(n) == node]

    def siblings(self, n):
        s, k, _ = self.where(n)
        return [self.cpu(s, k, t) for t in range(self.threads)]

    def package(self, n):
        s = self.where(n)[0]
        return [self.cpu(s, k, t) for k in range(self.cores) for t in range(self.threads)]

    def die(self, n):
        """(die index within the package, core_id as the kernel shows it)."""
        k = self.where(n)[1]
        per_die = self.cores // self.dies
        return k // per_die, k % per_die

    def die_cpus(self, n):
        s, k, _ = self.where(n)
        per_die = self.cores // self.dies
        first = k - k % per_die
        return [self.cpu(s, j, t) for j in range(first, first + per_die) for t in range(self.threads)]


def gen_cpu(t, d, cpus):
    c, f = d['cpu'], d.get('cpufreq')
    n = cpus.count
    base = '/sys/devices/system/cpu'
    allc = cpulist(range(n))
    for name in ('online', 'possible', 'present'):
        t.attr('%s/%s' % (base, name), allc)
    t.attr(base + '/offline', '')
    t.attr(base + '/isolated', '')
    t.attr(base + '/kernel_max', '8191')
    t.attr(base + '/smt/active', '1' if cpus.threads > 1 else '0')
    t.attr(base + '/smt/control', 'on' if cpus.threads > 1 else 'notsupported')
    for i in range(n):
        d_ = '%s/cpu%d' % (base, i)
        s, k, _ = cpus.where(i)
        if i:
            t.attr(d_ + '/online', '1')
        topo = d_ + '/topology'
        t.attr(topo + '/physical_package_id', s)
        sib, pkg = cpus.siblings(i), cpus.package(i)
        groups = [('thread_siblings', sib), ('core_cpus', sib), ('core_siblings', pkg), ('package_cpus', pkg)]
        if cpus.dies > 1:
            # 'die_files': False is a kernel before 5.3 (no die_id/die_cpus), as on the 2990WX
            # machines that showed "8 cores x 8 threads"
            die, core_id = cpus.die(i)
            t.attr(topo + '/core_id', core_id)
            if c.get('die_files', True):
                t.attr(topo + '/die_id', die)
                groups.append(('die_cpus', cpus.die_cpus(i)))
        else:
            t.attr(topo + '/die_id', s if c.get('die_per_socket', True) else 0)
            t.attr(topo + '/core_id', k)
            groups.append(('die_cpus', pkg))
        for name, group in groups:
            t.attr('%s/%s' % (topo, name), cpumask(group, n))
            t.attr('%s/%s_list' % (topo, name), cpulist(group))
        t.link('%s/node%d' % (d_, cpus.node_of(i)), '/sys/devices/system/node/node%d' % cpus.node_of(i))
        if f:
            t.link(d_ + '/cpufreq', '%s/cpufreq/policy%d' % (base, i))
    if f:
        for i in range(n):
            p = '%s/cpufreq/policy%d' % (base, i)
            t.attr(p + '/scaling_driver', f['driver'])
            t.attr(p + '/scaling_governor', f['governor'])
            t.attr(p + '/scaling_available_governors', f['available_governors'])
            t.attr(p + '/affected_cpus', i)
            t.attr(p + '/related_cpus', i)
            t.attr(p + '/cpuinfo_min_freq', f['min_khz'])
            t.attr(p + '/cpuinfo_max_freq', f['max_khz'])
            t.attr(p + '/scaling_min_freq', f['min_khz'])
            t.attr(p + '/scaling_max_freq', f['max_khz'])
            t.attr(p + '/scaling_cur_freq', f['max_khz'] if f['governor'] == 'performance' else f['min_khz'])
            if 'available_frequencies' in f:
                t.attr(p + '/scaling_available_frequencies', f['available_frequencies'])
            if 'epp' in f:
                t.attr(p + '/energy_performance_preference', f['epp'])
                t.attr(p + '/energy_performance_available_preferences',
                       'default performance balance_performance balance_power power ')
        if f.get('pstate'):
            kind, status = f['pstate']
            t.attr('%s/%s/status' % (base, kind), status)
        if f['driver'] == 'acpi-cpufreq':
            t.attr(base + '/cpufreq/boost', '1', 0o644)


def gen_nodes(t, d, cpus):
    base = '/sys/devices/system/node'
    nodes = list(range(cpus.nodes))
    nl = cpulist(nodes)
    for name in ('online', 'possible', 'has_cpu', 'has_memory', 'has_normal_memory'):
        t.attr('%s/%s' % (base, name), nl)
    dist = d.get('numa_distance', (12, 32))
    total_kb = d['memory_gib'] * 1024 * 1024
    reserved = d.get('memory_reserved_kb', 2 * 1024 * 1024)
    node_kb = []
    for node in nodes:
        kb = total_kb // cpus.nodes - (reserved if node == 0 else reserved // 8)
        node_kb.append(kb)
        nd = '%s/node%d' % (base, node)
        cl = cpus.node_cpus(node)
        t.attr(nd + '/cpulist', cpulist(cl))
        t.attr(nd + '/cpumap', cpumask(cl, cpus.count))
        for c in cl:
            t.link('%s/cpu%d' % (nd, c), '/sys/devices/system/cpu/cpu%d' % c)
        row = []
        for other in nodes:
            if other == node:
                row.append(10)
            elif other // cpus.nps == node // cpus.nps:
                row.append(dist[0])
            else:
                row.append(dist[1])
        t.attr(nd + '/distance', ' '.join(map(str, row)))
        free = kb * 9 // 10
        lines = [('MemTotal', kb), ('MemFree', free), ('MemUsed', kb - free), ('SwapCached', 0),
                 ('Active', kb // 50), ('Inactive', kb // 40), ('Active(anon)', kb // 200),
                 ('Inactive(anon)', kb // 400), ('Active(file)', kb // 60), ('Inactive(file)', kb // 45),
                 ('Unevictable', 0), ('Mlocked', 0), ('Dirty', 12), ('Writeback', 0),
                 ('FilePages', kb // 25), ('Mapped', kb // 500), ('AnonPages', kb // 150),
                 ('Shmem', kb // 1000), ('KernelStack', 18240), ('PageTables', 4120),
                 ('NFS_Unstable', 0), ('Bounce', 0), ('WritebackTmp', 0), ('KReclaimable', kb // 300),
                 ('Slab', kb // 200), ('SReclaimable', kb // 300), ('SUnreclaim', kb // 600),
                 ('AnonHugePages', 0), ('ShmemHugePages', 0), ('ShmemPmdMapped', 0),
                 ('FileHugePages', 0), ('FilePmdMapped', 0)]
        text = ''.join('Node %d %s' % (node, kb_line(k, v)) for k, v in lines)
        text += 'Node %d HugePages_Total: %5d\nNode %d HugePages_Free:  %5d\nNode %d HugePages_Surp:  %5d\n' % (
            node, 0, node, 0, node, 0)
        t.write(nd + '/meminfo', text, 0o444)
        for size in ('2048kB', '1048576kB'):
            h = '%s/hugepages/hugepages-%s' % (nd, size)
            for a in ('nr_hugepages', 'free_hugepages', 'surplus_hugepages'):
                t.attr('%s/%s' % (h, a), 0)
    return node_kb


def gen_cpuinfo(t, d, cpus):
    c = d['cpu']
    out = []
    for i in range(cpus.count):
        s, k, th = cpus.where(i)
        apic = s * c.get('apic_per_socket', 2 * cpus.cores) + k * 2 + th
        lines = [('processor', i), ('vendor_id', c['vendor']), ('cpu family', c['family']), ('model', c['model']),
                 ('model name', c['model_name']), ('stepping', c['stepping']), ('microcode', c['microcode']),
                 ('cpu MHz', '%.3f' % c['mhz']), ('cache size', '%d KB' % c['cache_kb']), ('physical id', s),
                 ('siblings', cpus.cores * cpus.threads), ('core id', cpus.die(i)[1]), ('cpu cores', cpus.cores),
                 ('apicid', apic), ('initial apicid', apic), ('fpu', 'yes'), ('fpu_exception', 'yes'),
                 ('cpuid level', c['cpuid_level']), ('wp', 'yes'), ('flags', c['flags']), ('bugs', c['bugs']),
                 ('bogomips', '%.2f' % c['bogomips'])]
        if 'tlb' in c:
            lines.append(('TLB size', c['tlb']))
        lines += [('clflush size', 64), ('cache_alignment', 64), ('address sizes', c['address_sizes']),
                  ('power management', c.get('power_management', ''))]
        # arch/x86/kernel/cpu/proc.c: "%s\t: %s" with keys padded by tabs to a column of 16
        for key, val in lines:
            tabs = '\t' if len(key) >= 8 else '\t\t'
            out.append(('%s%s: %s' % (key, tabs, val)).rstrip(' ') + '\n')
        out.append('\n')
    t.write('/proc/cpuinfo', ''.join(out), 0o444)


def gen_stat(t, cpus):
    lines = ['cpu  %d 0 %d %d %d 0 %d 0 0 0\n' % (1200 * cpus.count, 300 * cpus.count, 900000 * cpus.count,
                                                  20 * cpus.count, 7 * cpus.count)]
    for i in range(cpus.count):
        lines.append('cpu%d 1200 0 300 900000 20 0 7 0 0 0\n' % i)
    lines += ['intr 123456789 0 9 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n', 'ctxt 987654321\n', 'btime 1700000000\n',
              'processes 654321\n', 'procs_running 1\n', 'procs_blocked 0\n',
              'softirq 23456789 0 3456789 12 345678 123456 0 98765 4567890 0 1234567\n']
    t.write('/proc/stat', ''.join(lines), 0o444)


def gen_meminfo(t, d, node_kb):
    total = sum(node_kb)
    swap_kb = sum(s['size_kb'] for s in d.get('swaps', []))
    free = total * 9 // 10
    lines = [('MemTotal', total), ('MemFree', free), ('MemAvailable', total * 93 // 100),
             ('Buffers', total // 400), ('Cached', total // 25), ('SwapCached', 0), ('Active', total // 50),
             ('Inactive', total // 40), ('Active(anon)', total // 200), ('Inactive(anon)', total // 400),
             ('Active(file)', total // 60), ('Inactive(file)', total // 45), ('Unevictable', 0), ('Mlocked', 0),
             ('SwapTotal', swap_kb), ('SwapFree', swap_kb), ('Zswap', 0), ('Zswapped', 0), ('Dirty', 96),
             ('Writeback', 0), ('AnonPages', total // 150), ('Mapped', total // 500), ('Shmem', total // 1000),
             ('KReclaimable', total // 300), ('Slab', total // 200), ('SReclaimable', total // 300),
             ('SUnreclaim', total // 600), ('KernelStack', 18240 * len(node_kb)),
             ('PageTables', 4120 * len(node_kb)), ('SecPageTables', 0), ('NFS_Unstable', 0), ('Bounce', 0),
             ('WritebackTmp', 0), ('CommitLimit', total // 2 + swap_kb), ('Committed_AS', total // 100),
             ('VmallocTotal', 34359738367), ('VmallocUsed', 512000), ('VmallocChunk', 0),
             ('Percpu', 1536 * len(node_kb)), ('HardwareCorrupted', 0), ('AnonHugePages', 0),
             ('ShmemHugePages', 0), ('ShmemPmdMapped', 0), ('FileHugePages', 0), ('FilePmdMapped', 0)]
    text = ''.join(kb_line(k, v) for k, v in lines)
    text += '%-16s%8d\n%-16s%8d\n%-16s%8d\n%-16s%8d\n' % ('HugePages_Total:', 0, 'HugePages_Free:', 0,
                                                       'HugePages_Rsvd:', 0, 'HugePages_Surp:', 0)
    text += kb_line('Hugepagesize', 2048) + kb_line('Hugetlb', 0)
    text += kb_line('DirectMap4k', 1048576) + kb_line('DirectMap2M', 33554432)
    text += kb_line('DirectMap1G', max(total - 34603008, 0) // 1048576 * 1048576)
    t.write('/proc/meminfo', text, 0o444)
    return total


# ---------------------------------------------------------------------------------------------
# PCI
# ---------------------------------------------------------------------------------------------
class Dev:
    def __init__(self, bdf, cat, parent, node, spec):
        self.bdf, self.parent, self.node, self.spec = bdf, parent, node, spec
        self.cat = dict(CATALOGUE[cat])
        self.children = []
        self.ptype = spec.get('ptype', self.cat['type'])
        self.cap = tuple(spec.get('cap', self.cat.get('link', (0, 0))))
        self.sta = tuple(spec['sta']) if 'sta' in spec else None
        self.sec = self.sub = None
        # Device Capabilities / Control (bytes): the payload the function supports (NVIDIA GPUs 256,
        # the rest 512 unless the spec says), the payload it is set to (default: the smallest the
        # path to the root supports, as the kernel's and firmware's configuration leaves it) and the
        # read request size.
        gpu = self.cat['vendor'] == 0x10de and self.cat['cls'] >> 16 == 0x03
        self.mps_cap = spec.get('mps_cap', self.cat.get('mps_cap', 256 if gpu else 512))
        self.mps = spec.get('mps')
        self.mrrs = spec.get('mrrs', 512)
        self.res = {}  # resource index -> (start, end, flags)
        self.sysdir = None

    @property
    def bus(self):
        return int(self.bdf[5:7], 16)


def build_pci(d):
    devs = []

    def add(bdf, cat, parent, node, spec):
        dev = Dev(bdf, cat, parent, node, spec)
        if parent:
            parent.children.append(dev)
        devs.append(dev)
        return dev

    def endpoint(port, spec, node):
        bus = spec['bus']
        fns = [spec] + spec.get('functions', [])
        first = None
        for fn, fs in enumerate(fns):
            e = add('%s:%02x:00.%d' % (dom, bus, fs.get('fn', fn)), fs['use'], port, node, fs)
            if first is None:
                first = e
            elif 'sta' not in fs:
                e.sta = first.sta
        return bus

    for hb in d['pci']:
        dom, root = hb['root'].split(':')
        rootbus = int(root, 16)
        node = hb.get('node', -1)
        host = add('%s:%02x:00.0' % (dom, rootbus), hb['hostbridge'], None, node, {})
        host.hostdir = '/sys/devices/pci%s:%02x' % (dom, rootbus)
        for p in hb.get('ports', []):
            rp = add('%s:%02x:%s' % (dom, rootbus, p['dev']), p['use'], None, node, p)
            rp.hostdir = host.hostdir
            buses = []
            if 'switch' in p:
                sw = p['switch']
                up = add('%s:%02x:00.0' % (dom, sw['bus']), sw['use'], rp, node, dict(sw, ptype='up'))
                up.sta = tuple(sw.get('sta', rp.cap))
                buses.append(sw['bus'])
                for i, ch in enumerate(sw['children']):
                    dn = add('%s:%02x:%02x.0' % (dom, sw['down_bus'], i), sw['use'], up, node,
                             dict(ptype='down', cap=sw.get('cap', CATALOGUE[sw['use']]['link'])))
                    dn.acs = sw.get('acs_ctrl', 0)
                    dn.sec = dn.sub = ch['bus']
                    buses.append(endpoint(dn, ch, node))
                up.sec, up.sub = sw['down_bus'], max(buses)
                buses.append(sw['down_bus'])
            else:
                buses.append(endpoint(rp, p['child'], node))
            rp.sec, rp.sub = min(buses), max(buses)
            rp.acs = p.get('acs_ctrl', 0)
    for dev in devs:
        if dev.mps is None:
            a, cap = dev, dev.mps_cap
            while a.parent:
                a = a.parent
                cap = min(cap, a.mps_cap)
            dev.mps = cap
    # Links: a port shares the negotiated state of the link below it.
    for dev in devs:
        if dev.ptype in ('ep', 'up') and dev.parent:
            if dev.sta is None:
                dev.sta = (min(dev.cap[0], dev.parent.cap[0]), min(dev.cap[1], dev.parent.cap[1]))
            dev.parent.sta = dev.sta
    for dev in devs:
        if dev.ptype in ('rp', 'down') and dev.sta is None:
            dev.sta = (dev.cap[0], 0)  # empty slot: link down
        if dev.ptype == 'rciep':
            dev.sta = dev.cap = None
    return devs


def assign_resources(devs, d):
    """Hand out BAR addresses per host bridge (32-bit window below 4 GiB, 64-bit above)."""
    mem32 = {}
    pref = {}
    io = {}
    for i, hb in enumerate(d['pci']):
        mem32[hb['root']] = 0xa0000000 + i * 0x04000000
        pref[hb['root']] = 0x20000000000 + i * 0x4000000000
        io[hb['root']] = 0x1000 + i * 0x1000

    def alloc(counter, key, size):
        start = (counter[key] + size - 1) // size * size
        counter[key] = start + size
        return start

    for dev in devs:
        key = _hostkey(dev)
        for idx, kind, size in dev.cat.get('bars', []):
            if kind in ('pref64',):
                s = alloc(pref, key, size)
            elif kind == 'io':
                s = alloc(io, key, max(size, 0x80))
            else:
                s = alloc(mem32, key, size)
            dev.res[idx] = (s, s + size - 1, RES_FLAGS[kind])
    # Bridge windows: the span of everything below.
    def span(dev, kinds):
        lo, hi = None, None
        for ch in dev.children:
            for s, e, fl in ch.res.values():
                if (fl in kinds):
                    lo = s if lo is None else min(lo, s)
                    hi = e if hi is None else max(hi, e)
            if ch.children:
                r = span(ch, kinds)
                if r:
                    lo = r[0] if lo is None else min(lo, r[0])
                    hi = r[1] if hi is None else max(hi, r[1])
        return (lo, hi) if lo is not None else None

    for dev in devs:
        if dev.sec is None:
            continue
        for idx, kinds, flags, gran in ((13, (RES_FLAGS['io'],), 0x101, 0x1000),
                                        (14, (RES_FLAGS['mem32'], RES_FLAGS['mem64'], RES_FLAGS['rom']), 0x200, MIB),
                                        (15, (RES_FLAGS['pref64'],), 0x102201, MIB)):
            r = span(dev, kinds)
            if r:
                dev.res[idx] = (r[0] // gran * gran, (r[1] // gran + 1) * gran - 1, flags)


def _hostkey(dev):
    top = dev
    while top.parent:
        top = top.parent
    return top.bdf[:7]


def pcie_config(dev):
    """4 KiB of config space: header, PM capability, PCI Express capability, ACS on ports."""
    c = bytearray(4096 if dev.ptype else 256)
    cat = dev.cat
    bridge = dev.sec is not None
    struct.pack_into('<HH', c, 0, cat['vendor'], cat['device'])
    struct.pack_into('<HH', c, 4, 0x0407 if bridge else 0x0406, 0x0010)
    struct.pack_into('<I', c, 8, (cat['cls'] << 8) | cat['rev'])
    c[0x0c] = 0x10
    c[0x0e] = (0x01 if bridge else 0x00) | (0x80 if cat.get('multifunction') else 0)
    if bridge:
        c[0x18], c[0x19], c[0x1a] = dev.bus, dev.sec, dev.sub
        io = dev.res.get(13)
        if io:
            c[0x1c], c[0x1d] = (io[0] >> 8) & 0xf0, (io[1] >> 8) & 0xf0
        else:
            c[0x1c], c[0x1d] = 0xf0, 0x00
        m = dev.res.get(14)
        struct.pack_into('<HH', c, 0x20, *(((m[0] >> 16) & 0xfff0, (m[1] >> 16) & 0xfff0) if m else (0xfff0, 0)))
        p = dev.res.get(15)
        if p:
            struct.pack_into('<HHII', c, 0x24, ((p[0] >> 16) & 0xfff0) | 1, ((p[1] >> 16) & 0xfff0) | 1,
                             p[0] >> 32, p[1] >> 32)
        else:
            struct.pack_into('<HH', c, 0x24, 0xfff1, 0x0001)
        struct.pack_into('<H', c, 0x3e, 0x0012)
    else:
        for idx, (s, e, fl) in dev.res.items():
            if idx == 6:
                struct.pack_into('<I', c, 0x30, s & 0xfffff800)
                continue
            if idx > 5:
                continue
            if fl == RES_FLAGS['io']:
                struct.pack_into('<I', c, 0x10 + 4 * idx, (s & 0xfffffffc) | 1)
            else:
                struct.pack_into('<I', c, 0x10 + 4 * idx, (s & 0xfffffff0) | (fl & 0xf))
                if fl & 0x100000:
                    struct.pack_into('<I', c, 0x14 + 4 * idx, s >> 32)
        struct.pack_into('<HH', c, 0x2c, *cat['sub'])
        c[0x3d] = 1
    c[0x3c] = dev.spec.get('irq', 0) & 0xff
    if not dev.ptype:
        c[0x06] = 0
        return bytes(c)
    c[0x34] = 0x40
    # Power management capability (id 0x01) at 0x40 -> PCI Express (id 0x10) at 0x70
    struct.pack_into('<BBHH', c, 0x40, 0x01, 0x70, 0x0003, 0x0008)
    ptype = PCIE_TYPE[dev.ptype]
    port = dev.ptype in ('rp', 'down')
    struct.pack_into('<BBH', c, 0x70, 0x10, 0x00, 0x0002 | (ptype << 4) | (0x0100 if port else 0))
    code = {128: 0, 256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
    devcap = ((0x00008fc2 if not port else 0x00008022) & ~0x7) | code[dev.mps_cap]
    devctl = (0x2930 & ~0x70e0) | (code[dev.mps] << 5) | (code[dev.mrrs] << 12)  # MPS bits 7:5, MRRS 14:12
    struct.pack_into('<IHH', c, 0x74, devcap, devctl, 0x0000)
    if dev.cap:
        gen, width = dev.cap
        lnkcap = gen | (width << 4) | (0x3 << 10) | (0x7 << 12) | (0x7 << 15)
        if port:
            lnkcap |= (1 << 20) | ((int(dev.bdf[8:10], 16) + 1) << 24)
        sgen, swidth = dev.sta
        lnksta = (sgen | (swidth << 4) | 0x1000) if swidth else 0
        if port and swidth:
            lnksta |= 1 << 13  # Data Link Layer Link Active
        struct.pack_into('<IHH', c, 0x7c, lnkcap, 0x0040, lnksta)
        struct.pack_into('<I', c, 0x9c, ((1 << (gen + 1)) - 2))  # LnkCap2 supported speeds vector
        struct.pack_into('<H', c, 0xa0, gen)  # LnkCtl2 target link speed
    if port:
        struct.pack_into('<I', c, 0x84, 0x00040060 | ((int(dev.bdf[8:10], 16) + 1) << 19))  # SltCap
    if dev.ptype in ('rp', 'down') and hasattr(dev, 'acs'):
        # Access Control Services extended capability (id 0x000d) at 0x100
        struct.pack_into('<IHH', c, 0x100, 0x000d | (1 << 16), 0x005f, dev.acs)
    return bytes(c)


def vpd_bytes(vpd):
    """PCI Vital Product Data (PCI Local Bus Specification 3.0, 6.4 and appendix I): the identifier
    string (large resource tag 0x82), the read-only keywords (tag 0x90) ending in RV, whose first byte
    makes the sum of every byte up to it zero, and the end tag 0x78."""
    ident = vpd['ident'].encode()
    out = bytearray(b'\x82' + struct.pack('<H', len(ident)) + ident)
    ro = bytearray()
    for key, value in vpd.get('ro', []):
        v = value.encode()
        ro += key.encode() + bytes([len(v)]) + v
    ro += b'RV\x01'                      # RV: checksum byte follows (no reserved space)
    out += b'\x90' + struct.pack('<H', len(ro) + 1) + ro
    out += bytes([(-sum(out)) & 0xff])
    out += b'\x78'
    return bytes(out)


def gen_pci(t, d, cpus):
    devs = build_pci(d)
    assign_resources(devs, d)
    nbits = cpus.count
    drivers = set()
    irq = 32
    for dev in devs:
        if dev.parent is None:
            path = '%s/%s' % (dev.hostdir, dev.bdf)
        else:
            path = '%s/%s' % (dev.parent.sysdir, dev.bdf)
        dev.sysdir = path
        cat = dev.cat
        node = dev.node
        local = cpus.node_cpus(node) if node >= 0 else list(range(nbits))
        t.attr(path + '/vendor', '0x%04x' % cat['vendor'])
        t.attr(path + '/device', '0x%04x' % cat['device'])
        t.attr(path + '/subsystem_vendor', '0x%04x' % cat['sub'][0])
        t.attr(path + '/subsystem_device', '0x%04x' % cat['sub'][1])
        t.attr(path + '/class', '0x%06x' % cat['cls'])
        t.attr(path + '/revision', '0x%02x' % cat['rev'])
        t.attr(path + '/numa_node', node)
        t.attr(path + '/local_cpus', cpumask(local, nbits))
        t.attr(path + '/local_cpulist', cpulist(local))
        dirq = dev.spec.get('irq', irq if cat.get('bars') else 0)
        irq += 1
        t.attr(path + '/irq', dirq)
        t.attr(path + '/enable', 1 if dev.parent or dev.sec else 0)
        t.attr(path + '/dma_mask_bits', 64 if cat.get('bars') else 32)
        t.attr(path + '/consistent_dma_mask_bits', 64 if cat.get('bars') else 32)
        t.attr(path + '/broken_parity_status', 0, 0o644)
        t.attr(path + '/msi_bus', 1, 0o644)
        t.attr(path + '/d3cold_allowed', 1, 0o644)
        modalias = 'pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X' % (
            cat['vendor'], cat['device'], cat['sub'][0], cat['sub'][1], cat['cls'] >> 16, (cat['cls'] >> 8) & 0xff,
            cat['cls'] & 0xff)
        t.attr(path + '/modalias', modalias)
        nres = 17 if dev.sec is not None else 13
        lines = []
        for i in range(nres):
            s, e, fl = dev.res.get(i, (0, 0, 0))
            lines.append('0x%016x 0x%016x 0x%016x\n' % (s, e, fl))
        t.write(path + '/resource', ''.join(lines), 0o444)
        t.write(path + '/config', pcie_config(dev), 0o644)
        vpd = dev.spec.get('vpd', cat.get('vpd'))
        if vpd:
            t.write(path + '/vpd', vpd_bytes(vpd), 0o600)   # root's only, as the kernel makes it
        if dev.sec is not None:
            t.attr(path + '/secondary_bus_number', dev.sec)
            t.attr(path + '/subordinate_bus_number', dev.sub)
        if dev.cap and dev.ptype in ('ep', 'rp', 'up', 'down'):
            t.attr(path + '/max_link_speed', SPEED[dev.cap[0]])
            t.attr(path + '/max_link_width', dev.cap[1])
            sgen, swidth = dev.sta
            t.attr(path + '/current_link_speed', SPEED[sgen] if swidth else 'Unknown')
            t.attr(path + '/current_link_width', swidth)
        drv = dev.spec.get('driver') or {'rp': 'pcieport', 'up': 'pcieport', 'down': 'pcieport'}.get(dev.ptype)
        uevent = ''
        if drv:
            drivers.add(drv)
            t.link(path + '/driver', '/sys/bus/pci/drivers/%s' % drv)
            t.link('/sys/bus/pci/drivers/%s/%s' % (drv, dev.bdf), path)
            uevent = 'DRIVER=%s\n' % drv
        uevent += 'PCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nPCI_SLOT_NAME=%s\nMODALIAS=%s\n' % (
            cat['cls'], cat['vendor'], cat['device'], cat['sub'][0], cat['sub'][1], dev.bdf, modalias)
        t.write(path + '/uevent', uevent)
        t.link(path + '/subsystem', '/sys/bus/pci')
        t.link('/sys/bus/pci/devices/%s' % dev.bdf, path)
        gen_pci_children(t, d, dev)
    for drv in drivers:
        t.mkdir('/sys/bus/pci/drivers/%s' % drv)
    t.attr('/sys/bus/pci/drivers_autoprobe', 1, 0o644)
    return devs


def gen_pci_children(t, d, dev):
    spec = dev.spec
    if 'ib' in spec:
        ib = spec['ib']
        p = '%s/infiniband/%s' % (dev.sysdir, ib['name'])
        t.link(p + '/device', dev.sysdir)
        t.attr(p + '/node_type', '1: CA')
        t.attr(p + '/node_guid', ib['guid'])
        t.attr(p + '/sys_image_guid', ib['guid'])
        t.attr(p + '/fw_ver', ib['fw'])
        t.attr(p + '/hca_type', ib['hca'])
        t.attr(p + '/board_id', ib['board'])
        t.attr(p + '/hw_rev', '0x0')
        t.attr(p + '/node_desc', '%s %s' % (d['hostname'], ib['name']), 0o644)
        port = p + '/ports/1'
        t.attr(port + '/state', ib.get('state', '4: ACTIVE'))
        t.attr(port + '/phys_state', ib.get('phys_state', '5: LinkUp'))
        t.attr(port + '/rate', ib['rate'])
        t.attr(port + '/link_layer', ib.get('link_layer', 'InfiniBand'))
        t.attr(port + '/lid', ib.get('lid', '0x1'))
        t.attr(port + '/lid_mask_count', 0)
        t.attr(port + '/sm_lid', '0x1')
        t.attr(port + '/sm_sl', 0)
        t.attr(port + '/cap_mask', '0xa651e848')
        g = ib['guid'].replace(':', '')
        t.attr(port + '/gids/0', 'fe80:0000:0000:0000:%s:%s:%s:%s' % (g[0:4], g[4:8], g[8:12], g[12:16]))
        for name, value in ib.get('hw_counters', {}).items():
            t.attr(port + '/hw_counters/' + name, value)
        if 'netdev' in ib:
            gen_roce_netdev(t, d, dev, port, ib, g)
        t.link('/sys/class/infiniband/%s' % ib['name'], p)
    if 'nvme' in spec:
        gen_nvme(t, d, dev, spec['nvme'])
    if 'net' in spec:
        net = spec['net']
        parent = dev.sysdir
        if net.get('virtio'):
            v = '%s/%s' % (dev.sysdir, net['virtio'])
            t.attr(v + '/vendor', '0x1af4')
            t.attr(v + '/device', '0x0001')
            t.attr(v + '/status', '0x0000000f')
            t.link(v + '/driver', '/sys/bus/virtio/drivers/virtio_net')
            t.link(v + '/subsystem', '/sys/bus/virtio')
            t.link('/sys/bus/virtio/devices/%s' % net['virtio'], v)
            parent = v
        gen_netdev(t, d, '%s/net/%s' % (parent, net['name']), net, parent)


def gen_roce_netdev(t, d, dev, port, ib, guid):
    """The Ethernet interface of a RoCE port: in the PCI function's net/ folder, named in the port's
    gid_attrs/ndevs/0 (drivers/infiniband/core/sysfs.c), with MLNX_OFED mlx5's ecn/roce_{np,rp}/enable/
    0..7 files when 'ecn' gives the priorities each is on ({'np': [3], 'rp': [3]})."""
    nd = ib['netdev']
    name = nd.get('name', 'enp%ds0np0' % dev.spec['bus'])
    mac = ':'.join(guid[i:i + 2] for i in (0, 2, 4, 10, 12, 14))
    net = dict(name=name, mac=mac, type=1, ifindex=100 + dev.spec['bus'], mtu=nd.get('mtu', 1500),
               speed=nd.get('speed', 400000))
    path = '%s/net/%s' % (dev.sysdir, name)
    gen_netdev(t, d, path, net, dev.sysdir)
    t.attr(path + '/dev_port', 0)
    if not nd.get('no_gid_ndev'):
        t.attr(port + '/gid_attrs/ndevs/0', name)
    for who, prios in (nd.get('ecn') or {}).items():
        for prio in range(8):
            t.attr('%s/ecn/roce_%s/enable/%d' % (path, who, prio), 1 if prio in prios else 0, 0o644)


def gen_netdev(t, d, p, net, device):
    t.attr(p + '/address', net['mac'])
    t.attr(p + '/broadcast', 'ff:ff:ff:ff:ff:ff' if net['type'] == 1 else '00:00:00:00:00:00')
    t.attr(p + '/addr_len', 6)
    t.attr(p + '/type', net['type'])
    t.attr(p + '/ifindex', net['ifindex'])
    t.attr(p + '/iflink', net['ifindex'])
    t.attr(p + '/mtu', net.get('mtu', 1500), 0o644)
    t.attr(p + '/operstate', net.get('operstate', 'up'))
    t.attr(p + '/carrier', 1, 0o644)
    t.attr(p + '/flags', net.get('flags', '0x1003'), 0o644)
    t.attr(p + '/tx_queue_len', 1000, 0o644)
    if device:
        t.link(p + '/device', device)
        if 'speed' in net:
            t.attr(p + '/speed', net['speed'])
            t.attr(p + '/duplex', 'full')
    t.link('/sys/class/net/%s' % net['name'], p)


NVME_SUBSYS = '/sys/devices/virtual/nvme-subsystem'


def gen_nvme(t, d, dev, nv):
    ctrl = int(nv['name'][4:])
    p = '%s/nvme/%s' % (dev.sysdir, nv['name'])
    t.link(p + '/device', dev.sysdir)
    t.attr(p + '/model', '%-40s' % nv['model'])
    t.attr(p + '/serial', '%-20s' % nv['serial'])
    t.attr(p + '/firmware_rev', '%-8s' % nv['fw'])
    t.attr(p + '/transport', 'pcie')
    t.attr(p + '/address', dev.bdf)
    t.attr(p + '/state', 'live')
    t.attr(p + '/numa_node', dev.node)
    t.attr(p + '/cntlid', 65)
    t.attr(p + '/dev', '%d:%d' % (240, ctrl))
    t.link('/sys/class/nvme/%s' % nv['name'], p)
    # Native NVMe multipath (Ubuntu and RHEL kernels): the block device lives in the subsystem.
    sub = '%s/nvme-subsys%d' % (NVME_SUBSYS, ctrl)
    t.link('%s/%s' % (sub, nv['name']), p)
    t.attr(sub + '/model', '%-40s' % nv['model'])
    t.attr(sub + '/iopolicy', 'numa', 0o644)
    t.attr(sub + '/subsysnqn', 'nqn.1994-11.com.samsung:nvme:%s' % nv['serial'])
    t.link('/sys/class/nvme-subsystem/nvme-subsys%d' % ctrl, sub)
    t.mkdir('%s/nvme%dc%dn1' % (p, ctrl, ctrl))
    disk = 'nvme%dn1' % ctrl
    b = '%s/%s' % (sub, disk)
    sectors = nv['size'] // 512
    t.attr(b + '/size', sectors)
    t.attr(b + '/dev', '259:%d' % (ctrl * 8))
    t.attr(b + '/removable', 0)
    t.attr(b + '/ro', 0)
    t.attr(b + '/queue/logical_block_size', 512)
    t.attr(b + '/queue/physical_block_size', 512)
    t.attr(b + '/queue/minimum_io_size', 512)
    t.attr(b + '/queue/optimal_io_size', 0)
    t.attr(b + '/queue/rotational', 0, 0o644)
    t.attr(b + '/queue/scheduler', '[none] mq-deadline', 0o644)
    t.link(b + '/device', p)
    t.link('/sys/block/%s' % disk, b)
    t.link('/sys/class/block/%s' % disk, b)
    for i, (start, size) in enumerate(nv.get('parts', []), 1):
        pp = '%s/%sp%d' % (b, disk, i)
        t.attr(pp + '/partition', i)
        t.attr(pp + '/start', start)
        t.attr(pp + '/size', size)
        t.attr(pp + '/dev', '259:%d' % (ctrl * 8 + i))
        t.link('/sys/class/block/%sp%d' % (disk, i), pp)
    if nv.get('holder'):
        t.link('%s/holders/%s' % (b, nv['holder']), '/sys/devices/virtual/block/%s' % nv['holder'])


# ---------------------------------------------------------------------------------------------
# md RAID and the filesystem superblock image
# ---------------------------------------------------------------------------------------------
def crc32c(data):
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff


def xfs_image(md, size_bytes):
    """A version 5 XFS primary superblock (fs/xfs/libxfs/xfs_format.h), one 512-byte sector + padding."""
    bs = 4096
    dblocks = size_bytes // bs
    agcount = 32
    agblocks = (dblocks + agcount - 1) // agcount
    sb = bytearray(512)
    struct.pack_into('>4sIQQQ', sb, 0, b'XFSB', bs, dblocks, 0, 0)
    sb[0x20:0x30] = bytes.fromhex(md['uuid'].replace('-', ''))
    struct.pack_into('>QQQQ', sb, 0x30, dblocks // 2 + 8, 128, 129, 130)  # logstart, rootino, rbmino, rsumino
    struct.pack_into('>IIIII', sb, 0x50, 1, agblocks, agcount, 0, 521728)  # rextsize..logblocks
    struct.pack_into('>HHHH', sb, 0x64, 0xb4a5, 512, 512, 8)  # versionnum, sectsize, inodesize, inopblock
    sb[0x6c:0x78] = md.get('label', '').encode().ljust(12, b'\0')
    sb[0x78:0x80] = bytes([12, 9, 9, 3, max(agblocks - 1, 1).bit_length(), 0, 0, 5])
    struct.pack_into('>QQQQ', sb, 0x80, 64, 61, dblocks - 600000, 0)  # icount, ifree, fdblocks, frextents
    struct.pack_into('>QQHBBI', sb, 0xa0, 0xffffffffffffffff, 0xffffffffffffffff, 0, 0, 0, 4)
    struct.pack_into('>II', sb, 0xb8, md['sunit'], md['swidth'])  # sb_unit, sb_width (fs blocks)
    struct.pack_into('>BBHI', sb, 0xc0, 0, 9, 512, 1)  # dirblklog, logsectlog, logsectsize, logsunit
    struct.pack_into('>II', sb, 0xc8, 0x18a, 0x18a)  # features2, bad_features2
    struct.pack_into('>IIII', sb, 0xd0, 0, 0, 0x1 | 0x2 | 0x4 | 0x8, 0)  # compat, ro_compat, incompat, log_incompat
    struct.pack_into('>I', sb, 0xe4, 0)  # spino_align
    struct.pack_into('>QQ', sb, 0xe8, 0xffffffffffffffff, 0)  # pquotino, lsn
    sb[0xf8:0x108] = sb[0x20:0x30]  # meta_uuid
    struct.pack_into('<I', sb, 0xe0, crc32c(bytes(sb)))  # sb_crc (stored little-endian, crc field zero)
    return bytes(sb) + bytes(64 * KIB - 512)


def ext4_image(md, tmpdir):
    """mkfs.ext4 the way the brief asks, deterministic; hand-written superblock if it is missing."""
    mkfs = shutil.which('mkfs.ext4') or shutil.which('mkfs.ext4', path='/sbin:/usr/sbin')
    img = os.path.join(tmpdir, 'md.img')
    if mkfs:
        env = dict(os.environ, E2FSPROGS_FAKE_TIME='1700000000', SOURCE_DATE_EPOCH='1700000000',
                   MKE2FS_CONFIG='/dev/null', LC_ALL='C')
        cmd = [mkfs, '-q', '-F', '-b', '4096', '-U', md['uuid'], '-L', md.get('label', ''),
               '-O', 'has_journal,ext_attr,resize_inode,dir_index,filetype,extent,64bit,flex_bg,sparse_super,'
                     'large_file,huge_file,dir_nlink,extra_isize,metadata_csum',
               '-E', 'stride=%d,stripe_width=%d,root_owner=0:0,hash_seed=%s' % (
                   md['stride'], md['stripe_width'], md['uuid']),
               img, '8M']
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode == 0:
            with open(img, 'rb') as f:
                return f.read()
        sys.stderr.write('mkroots: mkfs.ext4 failed, writing the superblock by hand:\n%s' % r.stdout.decode())
    data = bytearray(8 * MIB)
    sb = 1024
    struct.pack_into('<IIIIIII', data, sb, 2048, 2048, 102, 1500, 2037, 0, 2)  # counts, first block, log bs
    struct.pack_into('<I', data, sb + 0x20, 32768)  # blocks per group
    struct.pack_into('<HHH', data, sb + 0x38, 0xef53, 1, 1)  # magic, state, errors
    struct.pack_into('<I', data, sb + 0x4c, 1)  # rev_level dynamic
    struct.pack_into('<IH', data, sb + 0x54, 11, 256)  # first_ino, inode_size
    data[sb + 0x68:sb + 0x78] = bytes.fromhex(md['uuid'].replace('-', ''))
    struct.pack_into('<H', data, sb + 0x164, md['stride'])  # s_raid_stride
    struct.pack_into('<I', data, sb + 0x170, md['stripe_width'])  # s_raid_stripe_width
    return bytes(data)


def gen_md(t, d, devs, tmpdir):
    """'md' is one array (a dict) or a list of them (md0, md1, ...: minor numbers in list order)."""
    mds = d.get('md')
    if not mds:
        t.write('/proc/mdstat', 'Personalities : \nunused devices: <none>\n', 0o444)
        return
    if isinstance(mds, dict):
        mds = [mds]
    sizes = {}
    for dev in devs:
        nv = dev.spec.get('nvme')
        if nv:
            sizes['nvme%sn1' % nv['name'][4:]] = nv['size']
    stat = ''
    for minor, md in enumerate(mds):
        stat += gen_one_md(t, md, minor, sizes, tmpdir)
    t.write('/proc/mdstat',
            'Personalities : [raid0] [linear] [multipath] [raid1] [raid6] [raid5] [raid4] [raid10] \n'
            '%sunused devices: <none>\n' % stat, 0o444)


def gen_one_md(t, md, minor, sizes, tmpdir):
    name, members = md['name'], md['members']
    chunk = md['chunk_kib'] * 1024
    data_offset = 262144  # sectors (128 MiB), mdadm 1.2 default for large members
    per = (sizes[members[0]] // 512 - data_offset) * 512 // chunk * chunk
    size = per * len(members)
    b = '/sys/devices/virtual/block/%s' % name
    m = b + '/md'
    t.attr(m + '/level', md['level'])
    t.attr(m + '/chunk_size', chunk)
    t.attr(m + '/raid_disks', len(members))
    t.attr(m + '/array_state', 'clean', 0o644)
    t.attr(m + '/metadata_version', '1.2')
    t.attr(m + '/uuid', md['array_uuid'])
    if md['level'] != 'raid0':
        t.attr(m + '/degraded', 0)
    for i, mem in enumerate(members):
        r = '%s/dev-%s' % (m, mem)
        t.attr(r + '/state', 'in_sync', 0o644)
        t.attr(r + '/slot', i, 0o644)
        t.attr(r + '/offset', data_offset, 0o644)
        t.attr(r + '/size', per // 1024, 0o644)
        target = '%s/nvme-subsys%s/%s' % (NVME_SUBSYS, mem[4:-2], mem)
        t.link(r + '/block', target)
        t.link('%s/rd%d' % (m, i), r)
        t.link('%s/slaves/%s' % (b, mem), target)
    t.attr(b + '/size', size // 512)
    t.attr(b + '/dev', '9:%d' % minor)
    t.attr(b + '/queue/logical_block_size', 512)
    t.attr(b + '/queue/physical_block_size', 512)
    t.attr(b + '/queue/minimum_io_size', chunk)
    t.attr(b + '/queue/optimal_io_size', chunk * len(members))
    t.attr(b + '/queue/rotational', 0, 0o644)
    t.link('/sys/block/%s' % name, b)
    t.link('/sys/class/block/%s' % name, b)
    t.mkdir(b + '/holders')
    if md['fs'] == 'ext4':
        img = ext4_image(md, tmpdir)
    else:
        img = xfs_image(md, size)
    t.write('/dev/%s' % name, img, 0o660)
    # drivers/md/md.c md_seq_show(): members newest first, "N blocks super 1.2 512k chunks"
    mem_s = ' '.join('%s[%d]' % (mem, i) for i, mem in reversed(list(enumerate(members))))
    return '%s : active %s %s\n      %d blocks super 1.2 %dk chunks\n      \n' % (
        name, md['level'], mem_s, size // 1024, md['chunk_kib'])


# ---------------------------------------------------------------------------------------------
# procfs and /etc
# ---------------------------------------------------------------------------------------------
def swaps_text(swaps):
    # mm/swapfile.c swap_show()
    out = 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n'
    for s in swaps:
        path = s['path']
        pad = 40 - len(path) if len(path) < 40 else 1
        kind = 'partition' if s['type'] == 'partition' else 'file\t'
        out += '%s%*s%s\t%d\t%s%d\t%s%d\n' % (path, pad, ' ', kind, s['size_kb'],
                                              '\t' if s['size_kb'] < 10000000 else '', s.get('used_kb', 0),
                                              '\t' if s.get('used_kb', 0) < 10000000 else '', s['priority'])
    return out


def modules_text(mods):
    # kernel/module/procfs.c m_show(): name size refcnt deps state address [taints]
    out = ''
    for m in mods:
        name, size, refs = m[0], m[1], m[2]
        deps = ''.join('%s,' % x for x in m[3]) or '-'
        taint = ' (%s)' % m[4] if len(m) > 4 and m[4] else ''
        out += '%s %d %d %s Live 0x0000000000000000%s\n' % (name, size, refs, deps, taint)
    return out


def route_line(cols):
    # net/ipv4/fib_trie.c fib_route_seq_show(): padded to 127 columns
    return '%-127s\n' % cols


def ip_hex(ip):
    return '%08X' % struct.unpack('<I', bytes(int(x) for x in ip.split('.')))[0]


def gen_net_proc(t, d):
    nets = [n for n in d.get('nets', [])]
    route = route_line('Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT')
    inet6 = '00000000000000000000000000000001 01 80 10 80       lo\n'
    for n in nets:
        if n.get('ipv4'):
            addr, plen, gw = n['ipv4']
            mask = (0xffffffff << (32 - plen)) & 0xffffffff
            net = struct.unpack('>I', bytes(int(x) for x in addr.split('.')))[0] & mask
            netip = '.'.join(str((net >> s) & 0xff) for s in (24, 16, 8, 0))
            maskip = '.'.join(str((mask >> s) & 0xff) for s in (24, 16, 8, 0))
            route += route_line('%s\t00000000\t%s\t0003\t0\t0\t%d\t00000000\t0\t0\t0' % (
                n['name'], ip_hex(gw), n.get('metric', 100)))
            route += route_line('%s\t%s\t00000000\t0001\t0\t0\t%d\t%s\t0\t0\t0' % (
                n['name'], ip_hex(netip), n.get('metric', 100), ip_hex(maskip)))
        if n.get('ipv6ll', True) and n['type'] == 1:
            mac = [int(x, 16) for x in n['mac'].split(':')]
            eui = [mac[0] ^ 2] + mac[1:3] + [0xff, 0xfe] + mac[3:]
            inet6 += 'fe800000000000%s %02x 40 20 80 %8s\n' % (
                '00' + ''.join('%02x' % x for x in eui), n['ifindex'], n['name'])
    t.write('/proc/net/route', route, 0o444)
    t.write('/proc/net/if_inet6', inet6, 0o444)


def gen_modules(t, d):
    rel = d['kernel']['release']
    mods = d.get('modules')
    if mods is not None:
        t.write('/proc/modules', modules_text(mods), 0o444)
        for m in mods:
            sm = '/sys/module/%s' % m[0]
            t.attr(sm + '/initstate', 'live')
            t.attr(sm + '/refcnt', m[2])
            t.attr(sm + '/coresize', m[1])
            if len(m) > 4 and m[4]:
                t.attr(sm + '/taint', m[4])
            t.mkdir(sm + '/holders')
            for dep in m[3]:
                t.link('/sys/module/%s/holders/%s' % (m[0], dep), '/sys/module/%s' % dep)
        for name, params in d.get('module_params', {}).items():
            for k, v in params.items():
                t.attr('/sys/module/%s/parameters/%s' % (name, k), v)
    for name in d.get('builtin_modules', []):
        t.mkdir('/sys/module/%s/parameters' % name)
    if mods is None:
        return  # kernel without loadable modules: no /proc/modules, no /lib/modules
    lm = '/lib/modules/%s' % rel
    t.mkdir(lm + '/kernel')
    for f in ('modules.dep', 'modules.alias', 'modules.builtin', 'modules.order', 'modules.symbols',
              'modules.softdep', 'modules.devname'):
        t.write('%s/%s' % (lm, f), '')
    t.write(lm + '/modules.builtin.modinfo', ''.join('%s.file=%s\0' % (n, n) for n in
                                                     d.get('builtin_modules', [])))


def gen_sysctl(t, d, cpus):
    base = {
        'kernel/osrelease': d['kernel']['release'], 'kernel/ostype': 'Linux', 'kernel/hostname': d['hostname'],
        'kernel/shmmax': '18446744073692774399', 'kernel/shmall': '18446744073692774399', 'kernel/shmmni': '4096',
        'kernel/numa_balancing': '1' if cpus.nodes > 1 else '0', 'kernel/pid_max': '4194304',
        'kernel/randomize_va_space': '2', 'kernel/perf_event_paranoid': '4', 'kernel/panic': '0',
        'vm/swappiness': '60', 'vm/overcommit_memory': '0', 'vm/overcommit_ratio': '50',
        'vm/zone_reclaim_mode': '0', 'vm/max_map_count': '65530', 'vm/nr_hugepages': '0',
        'vm/min_free_kbytes': '90112', 'vm/dirty_ratio': '20', 'vm/dirty_background_ratio': '10',
        'vm/vfs_cache_pressure': '100', 'fs/file-max': '9223372036854775807', 'fs/nr_open': '1048576',
        'net/core/somaxconn': '4096', 'net/core/rmem_max': '212992', 'net/core/wmem_max': '212992',
    }
    base.update(d.get('sysctl', {}))
    for k, v in base.items():
        if v is None:
            continue
        t.write('/proc/sys/%s' % k, '%s\n' % v, 0o644)


def thp_line(words, active):
    return ' '.join('[%s]' % w if w == active else w for w in words)


def gen_misc(t, d, cpus, node_kb, total_kb):
    k = d['kernel']
    t.write('/proc/version', k['version'] + '\n', 0o444)
    t.write('/proc/cmdline', k['cmdline'] + '\n', 0o444)
    t.write('/proc/swaps', swaps_text(d.get('swaps', [])), 0o444)
    mounts = d['mounts'].strip('\n') + '\n'
    mounts = mounts.replace('@SHMKB@', '%dk' % (total_kb // 2))
    t.write('/proc/mounts', mounts, 0o444)
    thp = d['thp']
    tb = '/sys/kernel/mm/transparent_hugepage'
    t.attr(tb + '/enabled', thp_line(('always', 'madvise', 'never'), thp['enabled']), 0o644)
    t.attr(tb + '/defrag', thp_line(('always', 'defer', 'defer+madvise', 'madvise', 'never'), thp['defrag']), 0o644)
    t.attr(tb + '/use_zero_page', 1, 0o644)
    t.attr(tb + '/hpage_pmd_size', 2097152)
    t.attr(tb + '/khugepaged/defrag', 1, 0o644)
    t.attr(tb + '/shmem_enabled', 'always within_size advise [never] deny force', 0o644)
    dmi = d.get('dmi')
    if dmi:
        base = '/sys/devices/virtual/dmi/id'
        for key, v in dmi.items():
            t.attr('%s/%s' % (base, key), v)
        t.link('/sys/class/dmi/id', base)
    if d.get('nvidia'):
        t.write('/proc/driver/nvidia/version', d['nvidia'], 0o444)
    # loopback
    gen_netdev(t, d, '/sys/devices/virtual/net/lo', dict(name='lo', mac='00:00:00:00:00:00', type=772,
                                                         ifindex=1, mtu=65536, operstate='unknown',
                                                         flags='0x9'), None)
    for path, content in d.get('etc', {}).items():
        if content is None:
            t.mkdir(path)
        elif isinstance(content, tuple) and content[0] == 'symlink':
            t.link(path, content[1])
        else:
            t.write(path, content)
    for path, target in d.get('links', {}).items():
        t.link(path, target)
    for path, (kind, size) in d.get('files', {}).items():
        if kind == 'swap':
            # mkswap(8) layout: the signature "SWAPSPACE2" ends the first page
            data = bytearray(size)
            struct.pack_into('<II', data, 1024, 1, size // 4096 - 1)  # version 1, last_page
            data[4096 - 10:4096] = b'SWAPSPACE2'
            t.write(path, bytes(data), 0o600)


def rpm_header(name, version, release, arch='x86_64'):
    """A package header as rpm keeps it in its database (rpm lib/header_internal.h): big-endian count
    of index entries and data size, entries (tag, type, offset, count), then the data. NAME 1000,
    VERSION 1001, RELEASE 1002, ARCH 1022, all strings (type 6) ending in a NUL."""
    index, data = b'', b''
    for tag, value in ((1000, name), (1001, version), (1002, release), (1022, arch)):
        index += struct.pack('>iiii', tag, 6, len(data), 1)
        data += value.encode() + b'\0'
    return struct.pack('>II', 4, len(data)) + index + data


def rpmdb_sqlite(packages, tmpdir):
    """The bytes of an rpm database in rpm's SQLite form (rpm >= 4.16, lib/backend/sqlite.c): table
    Packages (hnum, blob) and the Name index, for PACKAGES [(name, version, release)]."""
    import sqlite3
    path = os.path.join(tmpdir, 'rpmdb.sqlite')
    if os.path.exists(path):
        os.unlink(path)
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE 'Packages' (hnum INTEGER PRIMARY KEY AUTOINCREMENT,blob BLOB NOT NULL)")
    c.execute("CREATE TABLE 'Name' (key 'TEXT' NOT NULL, hnum INTEGER NOT NULL, idx INTEGER NOT NULL, "
              "FOREIGN KEY (hnum) REFERENCES 'Packages'(hnum))")
    for i, (n, v, r) in enumerate(packages, 1):
        c.execute("INSERT INTO Packages (hnum, blob) VALUES (?, ?)", (i, rpm_header(n, v, r)))
        c.execute("INSERT INTO Name (key, hnum, idx) VALUES (?, ?, 0)", (n, i))
    c.commit()
    c.close()
    with open(path, 'rb') as f:
        return f.read()


def gen_rpmdb(t, d, tmpdir):
    if d.get('rpmdb'):
        t.write('/var/lib/rpm/rpmdb.sqlite', rpmdb_sqlite(d['rpmdb'], tmpdir))


def merge(base, over):
    """A description over another: dicts merge key by key, anything else replaces; a key ending in '+'
    appends its list to the inherited one ('pci+': [...] adds host bridges)."""
    out = dict(base)
    for k, v in over.items():
        if k.endswith('+'):
            out[k[:-1]] = list(base.get(k[:-1], [])) + list(v)
        else:
            out[k] = merge(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return out


def load_desc(desc_path):
    """Read a description; 'inherits': 'NAME' starts from tests/roots/NAME.desc (looked up beside
    the file, then in its parent), so a partial tree says only what it changes."""
    with open(desc_path) as f:
        d = ast.literal_eval(f.read())
    parent = d.pop('inherits', None)
    if parent is None:
        return d
    here = os.path.dirname(os.path.abspath(desc_path))
    for folder in (here, os.path.dirname(here)):
        cand = os.path.join(folder, parent + '.desc')
        if os.path.exists(cand) and os.path.abspath(cand) != os.path.abspath(desc_path):
            return merge(load_desc(cand), d)
    raise SystemExit('%s: inherits %r: no %s.desc beside it or in its parent folder' % (desc_path, parent, parent))


def swap(d):
    """'swap': {USE: NEW} puts catalogue entry NEW wherever the PCI tree uses USE (an HGX H100 board
    with H200 GPUs); NEW None removes those functions."""
    table = d.pop('swap', {})

    def walk(node):
        if isinstance(node, list):
            out = [walk(x) for x in node if not (isinstance(x, dict) and x.get('use') in table
                                                 and table[x['use']] is None)]
            return out
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            if out.get('use') in table:
                out['use'] = table[out['use']]
            return out
        return node
    if table:
        d['pci'] = walk(d['pci'])


def ib_ports(d):
    """'ib_ports': {NAME: {...}} merges into the 'ib' spec of RDMA device NAME ('*': every one), after
    inheritance: an HGX H100 whose ConnectX-7 run RoCE, one of them on a netdev of MTU 1500."""
    table = d.pop('ib_ports', {})

    def walk(node):
        if isinstance(node, list):
            for x in node:
                walk(x)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
            ib = node.get('ib')
            if isinstance(ib, dict) and 'name' in ib:
                for key in ('*', ib['name']):
                    if key in table:
                        node['ib'] = ib = merge(ib, table[key])
    if table:
        walk(d['pci'])


def trim(t, d):
    """What a snapshot tool did not copy: 'move' {FROM: TO} renames a generated path (a copy of
    /proc/self/mounts without the /proc/mounts symlink), then 'omit' [PATH...] removes paths."""
    for src, dst in d.get('move', {}).items():
        h = t.host(dst)
        os.makedirs(os.path.dirname(h), exist_ok=True)
        os.rename(t.host(src), h)
    for path in d.get('omit', []):
        h = t.host(path)
        if not os.path.lexists(h):
            raise SystemExit('omit: %s was not generated (a description that omits nothing tests nothing)' % path)
        if os.path.isdir(h) and not os.path.islink(h):
            shutil.rmtree(h)
        else:
            os.unlink(h)


def generate(desc_path, outdir):
    d = load_desc(desc_path)
    swap(d)
    ib_ports(d)
    name = os.path.splitext(os.path.basename(desc_path))[0]
    final = os.path.join(outdir, name)
    os.makedirs(outdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix='.%s.' % name, dir=outdir)
    tmp = tempfile.mkdtemp(prefix='.img.', dir=outdir)
    try:
        t = Tree(work)
        for top in ('sys', 'proc', 'etc', 'dev', 'run', 'tmp', 'usr', 'lib', 'var'):
            t.mkdir(top)
        cpus = Cpus(d)
        gen_cpu(t, d, cpus)
        node_kb = gen_nodes(t, d, cpus)
        gen_cpuinfo(t, d, cpus)
        gen_stat(t, cpus)
        total = gen_meminfo(t, d, node_kb)
        devs = gen_pci(t, d, cpus) if d.get('pci') else []
        gen_md(t, d, devs, tmp)
        gen_modules(t, d)
        gen_sysctl(t, d, cpus)
        gen_net_proc(t, d)
        gen_misc(t, d, cpus, node_kb, total)
        gen_rpmdb(t, d, tmp)
        for path, net in ((n.get('sysdir'), n) for n in d.get('nets', []) if n.get('sysdir')):
            gen_netdev(t, d, path, net, None)
        trim(t, d)
        if os.path.lexists(final):
            shutil.rmtree(final)
        os.rename(work, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if os.path.exists(work):
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--out', required=True, help='directory that receives one tree per description')
    ap.add_argument('--stamp', help='file to touch when done (for build systems)')
    ap.add_argument('desc', nargs='+')
    a = ap.parse_args()
    for p in a.desc:
        generate(p, a.out)
    if a.stamp:
        with open(a.stamp, 'w') as f:
            f.write(''.join('%s\n' % os.path.splitext(os.path.basename(p))[0] for p in a.desc))
    return 0


if __name__ == '__main__':
    sys.exit(main())
