#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Generate large synthetic machine roots for the benchmark, in the fixture format.

    mkbench.py --out DIR [--preset small|medium|large]... [--sockets N --cores N --threads N
               --nps N --gpus N --hcas N --nvme N --md N --name NAME]

Each machine is a description (a Python literal like tests/roots/*.desc, written to DIR/descs/)
built from tests/roots/hgx-h100.desc with the CPU topology, the PCI tree and the md arrays
scaled, and the tree is written by tests/roots/mkroots.py (imported, not copied) to DIR/NAME.
Per NUMA node: one host bridge; a PCIe switch with that node's GPUs and HCAs; a second switch
with its NVMe drives. The OS drive, the management NIC and four NVSwitches hang off node 0.
Only the Python 3 standard library is used.
"""
import argparse
import ast
import copy
import os
import pprint
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOTS = os.path.join(os.path.dirname(HERE), 'tests', 'roots')
sys.path.insert(0, ROOTS)
import mkroots  # noqa: E402  (tests/roots/mkroots.py)

# name: (sockets, cores, threads, nodes_per_socket, gpus, hcas, nvme, md arrays)
PRESETS = {
    'small': (2, 8, 2, 1, 2, 2, 4, 1),      # 32 CPUs, 2 nodes
    'medium': (2, 32, 2, 2, 8, 8, 16, 2),   # 128 CPUs, 4 nodes
    'large': (2, 96, 2, 4, 16, 16, 32, 4),  # 384 CPUs, 8 nodes
}
BUS_STRIDE = 0x18  # buses per NUMA node's host bridge


def spread(n, buckets):
    """Items 0..n-1 over buckets round-robin by block: [[0, 1], [2, 3], ...] for 4 over 2."""
    out = [[] for _ in range(buckets)]
    for i in range(n):
        out[i * buckets // n if n >= buckets else i].append(i)
    return out


def describe(name, sockets, cores, threads, nps, gpus, hcas, nvme, mds):
    with open(os.path.join(ROOTS, 'hgx-h100.desc')) as f:
        base = ast.literal_eval(f.read())
    d = copy.deepcopy(base)
    nodes = sockets * nps
    if nvme % max(mds, 1):
        raise SystemExit('mkbench: --nvme must be a multiple of --md')
    if nodes * BUS_STRIDE > 0xf0:
        raise SystemExit('mkbench: at most %d NUMA nodes' % (0xf0 // BUS_STRIDE))
    d['hostname'] = name
    d['cpu'].update(sockets=sockets, cores=cores, threads=threads, nodes_per_socket=nps,
                    apic_per_socket=max(256, 2 * cores * threads))
    # The hgx fixture's data and OS drives, as templates.
    data_nv = os_nv = None
    for hb in base['pci']:
        for p in hb['ports']:
            for ch in ([p['child']] if 'child' in p else p['switch']['children']):
                if 'nvme' in ch:
                    if ch['nvme'].get('parts'):
                        os_nv = ch['nvme']
                    elif data_nv is None:
                        data_nv = ch['nvme']
    per_md = nvme // mds if mds else 0
    pci = []
    g_of, h_of, n_of = spread(gpus, nodes), spread(hcas, nodes), spread(nvme, nodes)
    for node in range(nodes):
        rb = node * BUS_STRIDE
        hb = {'root': '0000:%02x' % rb, 'node': node, 'hostbridge': 'spr-hb', 'ports': []}
        kids = []
        for g in g_of[node]:
            kids.append({'use': 'h100-sxm5-80gb', 'driver': 'nvidia'})
        for h in h_of[node]:
            guid = 'a088:c203:%04x:%04x' % (0x12, 0x3e00 + 8 * h)
            kids.append({'use': 'connectx-7', 'driver': 'mlx5_core',
                         'ib': {'name': 'mlx5_%d' % h, 'guid': guid, 'fw': '28.39.1002', 'hca': 'MT4129',
                                'board': 'MT_0000000838', 'rate': '400 Gb/sec (4X NDR)'}})
        if kids:
            for i, k in enumerate(kids):
                k['bus'] = rb + 3 + i
            hb['ports'].append({'dev': '01.0', 'use': 'spr-rp', 'switch': {
                'use': 'pex89144', 'bus': rb + 1, 'down_bus': rb + 2, 'children': kids}})
        drives = []
        for i, n in enumerate(n_of[node]):
            nv = dict(data_nv, name='nvme%d' % n, serial='31K0B%03dT8Z1' % n)
            if mds:
                nv['holder'] = 'md%d' % (n // per_md)
            else:
                nv.pop('holder', None)
            drives.append({'bus': rb + 10 + i, 'use': 'kioxia-cm6', 'driver': 'nvme', 'nvme': nv})
        if drives:
            hb['ports'].append({'dev': '03.0', 'use': 'spr-rp', 'switch': {
                'use': 'pex89144', 'bus': rb + 8, 'down_bus': rb + 9, 'children': drives}})
        if node == 0:
            hb['ports'].append({'dev': '02.0', 'use': 'spr-rp', 'child': {
                'bus': rb + 0x0e, 'use': 'i210', 'driver': 'igb',
                'net': {'name': 'eno1', 'mac': '7c:c2:55:9a:0b:1c', 'type': 1, 'ifindex': 2, 'speed': 1000}}})
            hb['ports'].append({'dev': '04.0', 'use': 'spr-rp', 'child': {
                'bus': rb + 0x0f, 'use': 'kioxia-cm6', 'driver': 'nvme',
                'nvme': dict(os_nv, name='nvme%d' % nvme)}})
        pci.append(hb)
    pci.append({'root': '0000:f0', 'node': 0, 'hostbridge': 'spr-hb', 'ports': [
        {'dev': '01.0', 'use': 'spr-rp', 'switch': {'use': 'pex89144', 'bus': 0xf1, 'down_bus': 0xf2, 'children': [
            {'bus': 0xf3 + i, 'use': 'nvswitch-h100', 'driver': 'nvidia-nvswitch'} for i in range(4)]}}]})
    d['pci'] = pci

    # The OS drive is nvme<N> here (nvme8 in the hgx fixture).
    def osdisk(s):
        return s.replace('/dev/nvme8n1', '/dev/nvme%dn1' % nvme)
    md0 = base['md']
    mounts = ''.join(osdisk(l) + '\n' for l in base['mounts'].strip('\n').split('\n') if '/dev/md0' not in l)
    fstab = ''.join(l + '\n' for l in base['etc']['/etc/fstab'].split('\n')
                    if l and not l.endswith('/raid xfs defaults,noatime,nofail 0 0'))
    links = {k: osdisk(v) for k, v in base['links'].items() if v != '/dev/md0'}
    arrays = []
    for j in range(mds):
        members = ['nvme%dn1' % n for n in range(j * per_md, (j + 1) * per_md)]
        uuid = 'c3d4e5f6-a7b8-4c9d-8e0f-a1b2c3d4e5%02x' % j
        # 512 KiB chunks: sunit 128 blocks of 4 KiB, swidth sunit x data disks (mount: 512-byte units)
        arrays.append(dict(md0, name='md%d' % j, members=members, uuid=uuid, label='raid%d' % j,
                           array_uuid='8a7b6c5d:4e3f2a1b:0c9d8e7f:6a5b4c%02x' % j, sunit=128,
                           swidth=128 * per_md))
        mounts += ('/dev/md%d /raid%d xfs rw,seclabel,noatime,attr2,inode64,logbufs=8,logbsize=32k,'
                   'sunit=1024,swidth=%d,noquota 0 0\n' % (j, j, 1024 * per_md))
        fstab += 'UUID=%s /raid%d xfs defaults,noatime,nofail 0 0\n' % (uuid, j)
        links['/dev/disk/by-uuid/%s' % uuid] = '/dev/md%d' % j
    d['md'] = arrays
    d['mounts'] = '\n' + mounts
    d['etc']['/etc/fstab'] = fstab
    d['links'] = links
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--out', required=True, help='directory that receives DIR/NAME trees and DIR/descs')
    ap.add_argument('--preset', action='append', choices=sorted(PRESETS), help='small, medium, large')
    ap.add_argument('--name', help='name of a custom machine (with the sizes below)')
    for opt, default in (('sockets', 2), ('cores', 96), ('threads', 2), ('nps', 4), ('gpus', 16), ('hcas', 16),
                         ('nvme', 32), ('md', 4)):
        ap.add_argument('--' + opt, type=int, default=default)
    a = ap.parse_args()
    todo = [('bench-' + p, PRESETS[p]) for p in (a.preset or [])]
    if a.name:
        todo.append((a.name, (a.sockets, a.cores, a.threads, a.nps, a.gpus, a.hcas, a.nvme, a.md)))
    if not todo:
        ap.error('give --preset and/or --name')
    descs = os.path.join(a.out, 'descs')
    os.makedirs(descs, exist_ok=True)
    for name, sizes in todo:
        d = describe(name, *sizes)
        path = os.path.join(descs, name + '.desc')
        with open(path, 'w') as f:
            f.write('# Generated by bench/mkbench.py: %s\n' % ' '.join(
                '%s=%d' % kv for kv in zip(('sockets', 'cores', 'threads', 'nps', 'gpus', 'hcas', 'nvme', 'md'),
                                           sizes)))
            f.write(pprint.pformat(d, width=120) + '\n')
        mkroots.generate(path, a.out)
        print('%s/%s' % (a.out, name))
    return 0


if __name__ == '__main__':
    sys.exit(main())
