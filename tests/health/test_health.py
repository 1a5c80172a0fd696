#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Hardware health rules (rules/pcie.ini, driver.ini, infiniband.ini, limits.ini): every rule has a
failing and a passing case.

    test_health.py LLMTUNE MKROOTS ROOTS_DIR BUILT_ROOTS CORPUS_DIR

Cases are variants of the fixture machines: each variant loads a tests/roots/NAME.desc, changes
what the case needs (a GPU trained at x8, ACS on, an IB port DOWN, nvidia_peermem missing, memlock
8 MiB, ...), and has mkroots.py generate it into a temporary directory, so the .desc files stay the
healthy (or deliberately broken) machines they describe. Unchanged machines are taken from
BUILT_ROOTS (the build's fixture roots). Then `llmtune --root TREE audit --profile P
--rule ID --json` must give the expected status. The real-machine corpus (when present) must audit
under the base profile without "error" results, and the 32em64t tree must report its ACTIVE FDR
port. Exit 0 pass, 1 fail.
"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# 13 resource lines of an endpoint whose BAR1 is a 256 MiB window (Above 4G decoding off)
SMALL_BAR = ('0x00000000a0000000 0x00000000a0ffffff 0x0000000000040200\n'
             '0x00000000b0000000 0x00000000bfffffff 0x000000000014220c\n' +
             '0x0000000000000000 0x0000000000000000 0x0000000000000000\n' * 11)


def load(roots, name):
    """tests/roots/NAME.desc (NAME may be hardware/X), 'inherits' resolved as mkroots.py resolves it."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('mkroots', os.path.join(roots, 'mkroots.py'))
    mkroots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mkroots)
    return mkroots.load_desc(os.path.join(roots, name + '.desc'))


def children(d):
    for hb in d['pci']:
        for p in hb.get('ports', []):
            if 'switch' in p:
                for ch in p['switch']['children']:
                    yield hb, p, ch
            elif 'child' in p:
                yield hb, p, p['child']


def child(d, bus):
    for hb, p, ch in children(d):
        if ch['bus'] == bus:
            return ch
    raise KeyError(bus)


def ib_child(d, name):
    for hb, p, ch in children(d):
        if ch.get('ib', {}).get('name') == name:
            return ch
    raise KeyError(name)


def drop_modules(d, names):
    mods = []
    for m in d['modules']:
        if m[0] in names:
            continue
        m = list(m)
        m[3] = tuple(x for x in m[3] if x not in names)
        mods.append(tuple(m))
    d['modules'] = mods


SYSTEMD_UNIT = '[Unit]\nDescription=%s\n\n[Service]\nExecStart=/usr/bin/%s\n\n[Install]\nWantedBy=multi-user.target\n'


def enable(d, unit):
    path = '/usr/lib/systemd/system/%s.service' % unit
    d.setdefault('etc', {})[path] = SYSTEMD_UNIT % (unit, unit)
    d.setdefault('links', {})['/etc/systemd/system/multi-user.target.wants/%s.service' % unit] = path


PROC1_LIMITS = ('Limit                     Soft Limit           Hard Limit           Units     \n'
                'Max open files            1048576              1048576              files     \n'
                'Max locked memory         %s %s bytes     \n')


def h100_good(d):
    """The HGX H100 fixture with everything the health rules look at in order."""
    etc = d.setdefault('etc', {})
    etc['/etc/systemd/system.conf'] = '[Manager]\n#DefaultLimitMEMLOCK=\n'
    etc['/etc/systemd/system.conf.d/90-memlock.conf'] = '[Manager]\nDefaultLimitMEMLOCK=infinity\n'
    etc['/proc/1/limits'] = PROC1_LIMITS % ('unlimited'.ljust(20), 'unlimited'.ljust(20))
    enable(d, 'nvidia-persistenced')
    enable(d, 'nvidia-fabricmanager')
    # The fabric manager package of the fixture's driver (535.104.05); h100-bad loads 470.57.02.
    etc['/var/lib/dpkg/status'] = ('Package: nvidia-fabricmanager-535\nStatus: install ok installed\n'
                                   'Version: 535.104.05-1\n')
    for mc in ('mc0', 'mc1'):
        etc['/sys/devices/system/edac/mc/%s/ce_count' % mc] = '0\n'
        etc['/sys/devices/system/edac/mc/%s/ue_count' % mc] = '0\n'
    etc['/sys/class/iommu/dmar0'] = None
    etc['/sys/kernel/iommu_groups/0/type'] = 'identity\n'
    etc['/sys/kernel/iommu_groups/1/type'] = 'identity\n'
    # a Slurm node whose jobs keep the node's memlock limit (slurm.conf(5))
    etc['/etc/slurm/slurm.conf'] = 'ClusterName=lab\nPropagateResourceLimitsExcept=MEMLOCK\n'


def iommu_translated(d):
    etc = d.setdefault('etc', {})
    etc['/sys/class/iommu/dmar0'] = None
    etc['/sys/kernel/iommu_groups/0/type'] = 'DMA-FQ\n'
    etc['/sys/kernel/iommu_groups/1/type'] = 'DMA\n'


def iommu_passthrough(d):
    etc = d.setdefault('etc', {})
    etc['/sys/class/iommu/dmar0'] = None
    etc['/sys/kernel/iommu_groups/0/type'] = 'identity\n'


def h100_peermem_translated(d):
    """h100-good with the IOMMU translating: GPUDirect RDMA through nvidia_peermem (issue 29 item 6)."""
    h100_good(d)
    iommu_translated(d)


def h100_no_gpudirect(d):
    """h100-good without nvidia_peermem (MLNX_OFED, the proprietary module): no GPUDirect RDMA, and the
    NVSwitches carry GPU peer traffic: nothing crosses the IOMMU."""
    h100_good(d)
    drop_modules(d, {'nvidia_peermem'})


def h100_bad(d):
    """One fault per rule, each on a different device so the rules stay independent."""
    child(d, 0x18)['sta'] = (5, 8)             # GPU trained x8 in an x16 port
    child(d, 0x2a)['sta'] = (1, 16)            # GPU at 2.5 GT/s
    child(d, 0x19)['sta'] = (5, 8)             # mlx5_0 trained x8
    child(d, 0x29)['sta'] = (1, 16)            # mlx5_1 at 2.5 GT/s
    child(d, 0x3b)['cap'] = (5, 32)            # mlx5_2 wider than its x16 port
    child(d, 0x9a)['mps'] = 128                # GPU 4 sends 128-byte payloads where both ends do 256
    ib_child(d, 'mlx5_5')['mrrs'] = 128        # mlx5_5 reads 128 bytes at a time
    child(d, 0xab)['mrrs'] = 128               # GPU 5 likewise
    ib_child(d, 'mlx5_3')['mps'] = 128         # mlx5_3 sends 128-byte payloads where both ends do 512
    for hb in d['pci']:
        if hb['root'] == '0000:5a':
            hb['ports'][0]['switch']['acs_ctrl'] = 0x1d   # SrcValid ReqRedir CmpltRedir UpstreamFwd
        if hb['root'] == '0000:00':
            sw = hb['ports'][0]['switch']
            sw['children'] = sw['children'][:3]          # an NVSwitch fell off the bus
    ib_child(d, 'mlx5_4')['ib'].update(state='1: DOWN', phys_state='3: Disabled')
    ib_child(d, 'mlx5_5')['ib']['rate'] = '200 Gb/sec (4X HDR)'
    ib_child(d, 'mlx5_6')['ib']['link_layer'] = 'Ethernet'
    del ib_child(d, 'mlx5_7')['ib']                      # HCA without a bound RDMA device
    drop_modules(d, {'nvidia_peermem', 'nvidia_uvm'})
    d['nvidia'] = d['nvidia'].replace('535.104.05', '470.57.02')
    d['memory_gib'] = 512
    d['mounts'] = d['mounts'].replace('tmpfs /dev/shm tmpfs rw,', 'tmpfs /dev/shm tmpfs rw,size=65536k,')
    etc = d.setdefault('etc', {})
    etc['/etc/security/limits.d/99-memlock.conf'] = '* soft memlock 8192\n* hard memlock 8192\n'
    etc['/etc/systemd/system.conf'] = '[Manager]\n#DefaultLimitMEMLOCK=\n'
    etc['/etc/systemd/system.conf.d/50-memlock.conf'] = '[Manager]\n'   # the fixture's infinity taken out
    etc['/proc/1/limits'] = PROC1_LIMITS % ('8388608'.ljust(20), '8388608'.ljust(20))   # PID 1 booted with the default
    d.setdefault('links', {})['/etc/systemd/system/multi-user.target.wants/sshd.service'] = \
        '/usr/lib/systemd/system/sshd.service'
    etc['/sys/devices/system/edac/mc/mc0/ce_count'] = '5\n'
    etc['/sys/devices/system/edac/mc/mc0/ue_count'] = '1\n'
    etc['/sys/class/iommu/dmar0'] = None
    etc['/sys/kernel/iommu_groups/0/type'] = 'DMA-FQ\n'
    etc['/sys/bus/pci/devices/0000:18:00.0/resource'] = SMALL_BAR
    etc['/etc/slurm/slurm.conf'] = 'ClusterName=lab\n#PropagateResourceLimitsExcept=MEMLOCK\n'   # ALL by default


def a100_no_local_hca(d):
    """DGX A100 whose node-1 HCAs (root 0000:40) are gone: GPUs there have no local NIC."""
    for hb in d['pci']:
        if hb['root'] == '0000:40':
            for ch in hb['ports'][0]['switch']['children']:
                ch.pop('ib', None)


def h100_hca_moved(d):
    """h100-good with GPU 0's rail (mlx5_0) moved from GPU 0's PCIe switch (root 0000:15) to the switch
    of GPU 1 (root 0000:26): same NUMA node, another switch. GPU 0's nearest HCAs are then only on its
    NUMA node, where NCCL does not use GPUDirect RDMA by default."""
    h100_good(d)
    moved = None
    for hb in d['pci']:
        if hb['root'] == '0000:15':
            sw = hb['ports'][0]['switch']
            moved = [ch for ch in sw['children'] if ch.get('ib', {}).get('name') == 'mlx5_0'][0]
            sw['children'] = [ch for ch in sw['children'] if ch is not moved]
    for hb in d['pci']:
        if hb['root'] == '0000:26':
            hb['ports'][0]['switch']['children'].append(dict(moved, bus=0x2b))


def a100_storage_hcas(d, down=True):
    """DGX A100 with the two storage ConnectX-6 of the real box on node 4 (no GPU there): one DOWN,
    one ACTIVE at EDR 100 Gb/s. Neither is an NCCL rail, so the compute-port rules must not fail."""
    for hb in d['pci']:
        if hb['root'] == '0000:e0':
            for dev, bus, name, extra in (('03.7', 0xe7, 'mlx5_8', {'state': '1: DOWN', 'phys_state': '3: Disabled'}
                                           if down else {}),
                                          ('04.1', 0xe8, 'mlx5_9', {'rate': '100 Gb/sec (4X EDR)'})):
                ib = {'name': name, 'guid': '0c42:a103:0067:a7%02x' % bus, 'fw': '20.35.1012', 'hca': 'MT4123',
                      'board': 'MT_0000000223', 'rate': '200 Gb/sec (4X HDR)'}
                ib.update(extra)
                hb['ports'].append({'dev': dev, 'use': 'rome-rp', 'child': {
                    'bus': bus, 'use': 'connectx-6', 'driver': 'mlx5_core', 'ib': ib}})


def h100_inbox(d):
    """HGX H100 on the distribution's RDMA stack: no MLNX_OFED, so no nvidia_peermem."""
    del d['etc']['/usr/bin/ofed_info']
    drop_modules(d, {'nvidia_peermem'})


def h100_inbox_open(d):
    """The same with NVIDIA's open kernel module: GPUDirect RDMA through DMA-BUF."""
    h100_inbox(d)
    d['nvidia'] = d['nvidia'].replace('NVIDIA UNIX x86_64 Kernel Module', 'NVIDIA UNIX Open Kernel Module for x86_64')


def h100_fm_old(d):
    """h100-good after a driver change without the fabric manager's: 535.104.05's package, 470.57.02 loaded."""
    h100_good(d)
    d['nvidia'] = d['nvidia'].replace('535.104.05', '470.57.02')


def b200(d, open_modules):
    """The HGX H100 with B200 GPUs (10de:2901, named by the machine's own pci.ids) in its GPUs' places
    and driver 570.133.20, open or proprietary flavour (mkroots.py 'swap'; tests/roots/hardware/hgx-b200)."""
    d['swap'] = {'h100-sxm5-80gb': 'b200', 'nvswitch-h100': None}
    d.setdefault('etc', {})['/usr/share/misc/pci.ids'] = '10de  NVIDIA Corporation\n\t2901  GB100 [B200]\n'
    flavour = 'Open Kernel Module for x86_64' if open_modules else 'x86_64 Kernel Module'
    d['nvidia'] = 'NVRM version: NVIDIA UNIX %s  570.133.20  Release Build  Tue Mar 25 00:45:38 UTC 2025\n' % flavour


def roce(d, bad=False):
    """The HGX H100 on a RoCE fabric (mkroots.py 'ib_ports'): every ConnectX-7 port Ethernet, its netdev
    at MTU 9000, ECN's notification and reaction points on priority 3 (MLNX_OFED's ecn/ files). Bad:
    mlx5_2's netdev left at 1500 (RoCE MTU 1024) and mlx5_4's reaction point off."""
    d['ib_ports'] = {'*': {'link_layer': 'Ethernet', 'netdev': {'mtu': 9000, 'ecn': {'np': [3], 'rp': [3]}}}}
    if bad:
        d['ib_ports'].update({'mlx5_2': {'netdev': {'mtu': 1500}}, 'mlx5_4': {'netdev': {'ecn': {'np': [3], 'rp': []}}}})


def b200_nvl5(d, nvlsm=True, umad=True, fm=True):
    """tests/roots/hardware/hgx-b200 (NVLink 5 switches behind a ConnectX bridge whose VPD says SW_MNG,
    the fabric manager enabled, nvlsm installed, ib_umad loaded), less what the case takes away."""
    if not nvlsm:
        d['rpmdb'] = [p for p in d['rpmdb'] if p[0] != 'nvlsm']
    if not umad:
        drop_modules(d, {'ib_umad'})
    if not fm:   # installed, not enabled: another unit is
        del d['links']['/etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service']
        d['links']['/etc/systemd/system/multi-user.target.wants/sshd.service'] = '/usr/lib/systemd/system/sshd.service'


VARIANTS = {
    # name: (desc, change); change None: the built fixture root of that name
    'ws-4090': ('ws-4090', None),
    'dgx-a100': ('dgx-a100', None),
    'h100-good': ('hgx-h100', h100_good),
    'h100-bad': ('hgx-h100', h100_bad),
    'a100-nohca': ('dgx-a100', a100_no_local_hca),
    'h100-hca-moved': ('hgx-h100', h100_hca_moved),
    'a100-storage': ('dgx-a100', a100_storage_hcas),
    'a100-storage-up': ('dgx-a100', lambda d: a100_storage_hcas(d, down=False)),
    'h100-inbox': ('hgx-h100', h100_inbox),
    'h100-inbox-open': ('hgx-h100', h100_inbox_open),
    'h100-fm-old': ('hgx-h100', h100_fm_old),
    'b200-open': ('hgx-h100', lambda d: b200(d, True)),
    'b200-proprietary': ('hgx-h100', lambda d: b200(d, False)),
    'b200-nvl5': ('hardware/hgx-b200', b200_nvl5),
    'b200-no-nvlsm': ('hardware/hgx-b200', lambda d: b200_nvl5(d, nvlsm=False)),
    'b200-no-umad': ('hardware/hgx-b200', lambda d: b200_nvl5(d, umad=False)),
    'b200-no-fm': ('hardware/hgx-b200', lambda d: b200_nvl5(d, fm=False)),
    'h100-peermem-dma': ('hgx-h100', h100_peermem_translated),
    'h100-no-gpudirect': ('hgx-h100', h100_no_gpudirect),
    'h100-open-pt': ('hgx-h100', lambda d: (h100_inbox_open(d), iommu_passthrough(d))),
    'h100-open-dma': ('hgx-h100', lambda d: (h100_inbox_open(d), iommu_translated(d))),
    'roce-good': ('hgx-h100', roce),
    'roce-bad': ('hgx-h100', lambda d: roce(d, bad=True)),
}

LOADED = 'loaded.ini'  # a site profile: the audit runs under load
IB_SITE = 'ib-site.ini'  # a site profile: the site's fabric is InfiniBand (ib_link_layer = ib)
ROCE_SITE = 'roce-site.ini'  # a site profile: RoCE, its traffic on priority 3 (roce_ecn_priority = 3)

# (variant, profile, rule) -> the severity of its finding (issue 12 item 12): a link below what both
# ends support is information on an idle audit (GPUs lower width and speed when idle), critical
# under load; the slot's own capability and an adapter's width are judged the same either way.
SEVERITIES = {
    ('h100-peermem-dma', 'h100-sxm-8x', 'pcie-iommu-peermem'): 'critical',
    ('h100-open-dma', 'h100-sxm-8x', 'pcie-iommu-gpudirect'): 'warning',
    ('h100-bad', 'h100-sxm-8x', 'pcie-iommu-mode'): 'info',
    ('h100-bad', 'h100-sxm-8x', 'pcie-gpu-link-width'): 'info',
    ('h100-bad', LOADED, 'pcie-gpu-link-width'): 'critical',
    ('ws-4090', 'rtx4090-ws', 'pcie-gpu-link-speed'): 'info',
    ('h100-bad', LOADED, 'pcie-gpu-link-speed'): 'critical',
    ('h100-bad', 'h100-sxm-8x', 'pcie-hca-link-speed'): 'info',
    ('h100-bad', LOADED, 'pcie-hca-link-speed'): 'critical',
    ('h100-bad', 'h100-sxm-8x', 'pcie-hca-link-width'): 'critical',
    ('ws-4090', 'a100-pcie-4x', 'pcie-gpu-slot-width'): 'critical',
}
# (variant, profile, rule) whose pass carries the idle link as a note (note_when; issue 29 item 12)
NOTED = {('h100-bad', 'h100-sxm-8x', 'pcie-gpu-link-width'), ('h100-bad', 'rtx4090-ws', 'pcie-gpu-link-width'),
         ('ws-4090', 'rtx4090-ws', 'pcie-gpu-link-speed'), ('h100-bad', 'h100-sxm-8x', 'pcie-hca-link-speed')}
# (variant, profile, rules, exit status): idle drops alone are not exit 2; under load they are
EXITS = [
    ('h100-bad', 'h100-sxm-8x', ['pcie-gpu-link-width', 'pcie-gpu-link-speed', 'pcie-hca-link-speed'], 0),
    ('h100-bad', LOADED, ['pcie-gpu-link-width', 'pcie-gpu-link-speed', 'pcie-hca-link-speed'], 2),
]

# (variant, profile, rule, expected status, text the observed value must contain or None)
CASES = [
    # PCIe width: a GPU at x8 in an x8 slot passes on the workstation profile, fails an x16 profile
    ('ws-4090', 'rtx4090-ws', 'pcie-gpu-slot-width', 'pass', None),
    ('ws-4090', 'a100-pcie-4x', 'pcie-gpu-slot-width', 'fail', 'gpu.1.upstream_link.max_width = 8'),
    ('ws-4090', 'rtx4090-ws', 'pcie-gpu-link-width', 'pass', None),
    ('h100-good', 'h100-sxm-8x', 'pcie-gpu-slot-width', 'pass', None),
    ('h100-good', 'h100-sxm-8x', 'pcie-gpu-link-width', 'pass', None),
    # a GPU link below what both ends support: a pass with a note when idle (the default; issue 29
    # item 12), a fault under load
    ('h100-bad', 'h100-sxm-8x', 'pcie-gpu-link-width', 'pass', 'gpu.0.link.width_ok = false'),
    ('h100-bad', 'rtx4090-ws', 'pcie-gpu-link-width', 'pass', 'gpu.0.link.width_ok = false'),
    ('h100-bad', LOADED, 'pcie-gpu-link-width', 'fail', 'gpu.0.link.width_ok = false'),
    ('h100-good', LOADED, 'pcie-gpu-link-width', 'pass', None),
    ('ws-4090', 'rtx4090-ws', 'pcie-gpu-link-speed', 'pass', 'gpu.0.link.speed_ok = false'),
    ('h100-good', 'h100-sxm-8x', 'pcie-gpu-link-speed', 'pass', None),
    ('h100-good', LOADED, 'pcie-gpu-link-speed', 'pass', None),
    ('h100-bad', LOADED, 'pcie-gpu-link-speed', 'fail', 'gpu.1.link.speed_ok = false'),
    ('h100-good', 'h100-sxm-8x', 'pcie-hca-link-width', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'pcie-hca-link-width', 'fail', 'ib.mlx5_0.link.width_ok = false'),
    ('h100-good', 'h100-sxm-8x', 'pcie-hca-slot', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'pcie-hca-slot', 'fail', 'ib.mlx5_2.link.slot_limited = true'),
    ('h100-good', 'h100-sxm-8x', 'pcie-hca-link-speed', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'pcie-hca-link-speed', 'pass', 'ib.mlx5_1.link.speed_ok = false'),
    ('h100-good', LOADED, 'pcie-hca-link-speed', 'pass', None),
    ('h100-bad', LOADED, 'pcie-hca-link-speed', 'fail', 'ib.mlx5_1'),
    # ACS redirect on the switch above GPU 3 and mlx5_3
    ('h100-good', 'h100-sxm-8x', 'pcie-acs-redirect', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'pcie-acs-redirect', 'fail', 'gpu.3.acs_redirect = 0000:5c:'),
    ('h100-good', 'h100-sxm-8x', 'pcie-acs-redirect-hca', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'pcie-acs-redirect-hca', 'fail', 'ib.mlx5_3.acs_redirect'),
    ('h100-good', 'h100-sxm-8x', 'pcie-large-bar', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'pcie-large-bar', 'fail', 'gpu.0.large_bar = false'),
    ('h100-good', 'h100-sxm-8x', 'pcie-gpu-max-payload', 'pass', 'gpu.0.link.mps_ok = true (8 items)'),
    ('h100-bad', 'h100-sxm-8x', 'pcie-gpu-max-payload', 'fail', 'gpu.4.link.mps_ok = false (1 of 8'),
    ('h100-good', 'h100-sxm-8x', 'pcie-hca-max-payload', 'pass', 'ib.mlx5_0.link.mps_ok = true'),
    ('h100-bad', 'h100-sxm-8x', 'pcie-hca-max-payload', 'fail', 'ib.mlx5_3.link.mps_ok = false (1 of'),
    ('h100-good', 'h100-sxm-8x', 'pcie-gpu-max-read-request', 'pass', 'gpu.0.link.mrrs = 512 (8 items)'),
    ('h100-bad', 'h100-sxm-8x', 'pcie-gpu-max-read-request', 'fail', 'gpu.5.link.mrrs = 128 (1 of 8'),
    ('h100-good', 'h100-sxm-8x', 'pcie-hca-max-read-request', 'pass', 'ib.mlx5_0.link.mrrs = 512'),
    ('h100-bad', 'h100-sxm-8x', 'pcie-hca-max-read-request', 'fail', 'ib.mlx5_5.link.mrrs = 128 (1 of'),
    # the IOMMU, graded by the traffic that crosses it (issue 29 item 6)
    ('h100-good', 'h100-sxm-8x', 'pcie-iommu-peermem', 'pass', 'passthrough'),
    ('h100-peermem-dma', 'h100-sxm-8x', 'pcie-iommu-peermem', 'fail', 'translated'),
    ('h100-open-pt', 'h100-sxm-8x', 'pcie-iommu-gpudirect', 'pass', 'passthrough'),
    ('h100-open-dma', 'h100-sxm-8x', 'pcie-iommu-gpudirect', 'fail', 'translated'),
    ('h100-no-gpudirect', 'h100-sxm-8x', 'pcie-iommu-mode', 'pass', 'passthrough'),
    ('h100-bad', 'h100-sxm-8x', 'pcie-iommu-mode', 'fail', 'translated'),
    # driver stack
    ('h100-good', 'h100-sxm-8x', 'driver-nvidia-loaded', 'pass', None),
    ('dgx-a100', 'a100-8x', 'driver-nvidia-loaded', 'fail', None),
    ('h100-good', 'h100-sxm-8x', 'driver-nvidia-uvm-loaded', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'driver-nvidia-uvm-loaded', 'fail', None),
    ('h100-good', 'h100-sxm-8x', 'driver-peermem-loaded', 'pass', 'peermem'),
    ('h100-bad', 'h100-sxm-8x', 'driver-peermem-loaded', 'fail', 'gpudirect.mode = none'),
    # DMA-BUF: the inbox stack (no OFED) with the proprietary module fails; the cases of item 5 are in
    # tests/advice (open module, kernel version, OFED)
    ('h100-inbox', 'h100-sxm-8x', 'driver-gpudirect-dmabuf', 'fail', 'gpudirect.mode = none'),
    ('h100-inbox-open', 'h100-sxm-8x', 'driver-gpudirect-dmabuf', 'pass', 'dmabuf'),
    ('ws-4090', 'rtx4090-ws', 'driver-peermem-loaded', 'n/a', None),  # no GPUDirect RDMA expected
    ('h100-good', 'h100-sxm-8x', 'driver-persistenced', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'driver-persistenced', 'fail', None),
    ('h100-good', 'h100-sxm-8x', 'driver-version', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'driver-version', 'fail', '470.57.02'),
    ('ws-4090', 'rtx4090-ws', 'driver-version', 'pass', None),
    ('h100-good', 'h100-sxm-8x', 'driver-nvswitch-count', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'driver-nvswitch-count', 'fail', 'nvswitch.count = 3'),
    ('dgx-a100', 'a100-8x', 'driver-nvswitch-count', 'pass', None),
    ('h100-good', 'h100-sxm-8x', 'driver-fabricmanager', 'pass', None),
    ('h100-good', 'h100-sxm-8x', 'driver-fabricmgr-version', 'pass', None),
    ('h100-fm-old', 'h100-sxm-8x', 'driver-fabricmgr-version', 'fail', 'fabricmanager.driver_match = false'),
    ('h100-bad', 'h100-sxm-8x', 'driver-fabricmanager', 'fail', None),
    # Blackwell needs the open kernel modules, whatever the profile (issue 29 item 2)
    ('b200-open', 'b200-8x', 'driver-open-kernel-module', 'pass', None),
    ('b200-proprietary', 'base', 'driver-open-kernel-module', 'fail', 'nvidia.driver.flavor = proprietary'),
    ('h100-good', 'h100-sxm-8x', 'driver-open-kernel-module', 'n/a', None),
    # NVLink 5 (HGX B200): the switches are found by their ConnectX bridges, not on the PCI bus; the
    # fabric manager, NVLSM and ib_umad are required whatever the profile (issue 29 item 2)
    ('b200-nvl5', 'b200-8x', 'driver-fabricmanager', 'pass', None),
    ('b200-no-fm', 'base', 'driver-fabricmanager', 'fail', 'service.nvidia-fabricmanager.enabled = false'),
    ('b200-nvl5', 'b200-8x', 'driver-nvlsm', 'pass', None),
    ('b200-no-nvlsm', 'base', 'driver-nvlsm', 'fail', 'nvlsm.installed = false'),
    ('b200-nvl5', 'base', 'driver-nvlsm-umad', 'pass', None),
    ('b200-no-umad', 'b200-8x', 'driver-nvlsm-umad', 'fail', 'module.ib_umad.loaded = false'),
    ('h100-good', 'h100-sxm-8x', 'driver-nvlsm', 'n/a', None),
    # InfiniBand
    ('h100-good', 'h100-sxm-8x', 'ib-hca-count', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'ib-hca-count', 'fail', 'ib.hca_count = 7'),
    ('h100-good', 'h100-sxm-8x', 'ib-port-active', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'ib-port-active', 'fail', 'ib.mlx5_4.port.1.state = DOWN'),
    ('h100-good', 'h100-sxm-8x', 'ib-port-rate', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'ib-port-rate', 'fail', 'ib.mlx5_5.port.1.rate_gbps = 200'),
    ('dgx-a100', 'a100-8x', 'ib-port-rate', 'pass', None),
    # storage HCAs (no NVIDIA GPU on their NUMA node) are not NCCL rails: only an info finding
    ('a100-storage', 'a100-8x', 'ib-port-active', 'pass', None),
    ('a100-storage', 'a100-8x', 'ib-port-rate', 'pass', None),
    ('a100-storage', 'a100-8x', 'ib-storage-port-health', 'fail', 'ib.mlx5_8.port.1.state = DOWN'),
    ('a100-storage-up', 'a100-8x', 'ib-storage-port-health', 'pass', None),
    ('dgx-a100', 'a100-8x', 'ib-storage-port-health', 'n/a', None),
    ('h100-good', IB_SITE, 'ib-link-layer', 'pass', None),
    ('h100-bad', IB_SITE, 'ib-link-layer', 'fail', 'ib.compute_link_layers = ib,roce'),
    ('h100-good', 'h100-sxm-8x', 'ib-link-layer', 'n/a', None),  # ib_link_layer = any: the site's
    ('h100-good', 'h100-sxm-8x', 'ib-link-layer-uniform', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'ib-link-layer-uniform', 'fail', 'ib.compute_link_layers = ib,roce'),
    # RoCE: the netdev's MTU behind the RDMA MTU, ECN on the site's priority (issue 29 item 1)
    ('roce-good', 'h100-sxm-8x', 'roce-mtu', 'pass', 'ib.mlx5_0.port.1.roce_mtu = 4096 (8 items)'),
    ('roce-bad', 'h100-sxm-8x', 'roce-mtu', 'fail', 'ib.mlx5_2.port.1.roce_mtu = 1024 (1 of 8'),
    ('h100-good', 'h100-sxm-8x', 'roce-mtu', 'n/a', None),  # InfiniBand ports have their own MTU
    ('roce-good', ROCE_SITE, 'roce-ecn', 'pass', None),
    ('roce-bad', ROCE_SITE, 'roce-ecn', 'fail', 'ib.mlx5_4.port.1.ecn_rp_priorities = none'),
    ('roce-good', 'h100-sxm-8x', 'roce-ecn', 'n/a', None),  # roce_ecn_priority = any: the site's
    ('dgx-a100', 'a100-8x', 'ib-gpu-affinity', 'pass', None),
    ('a100-nohca', 'a100-8x', 'ib-gpu-affinity', 'fail', '.local_hca = none'),
    # HGX: the HCA must share the GPU's PCIe switch, not only its NUMA node (issue 29)
    ('h100-good', 'h100-sxm-8x', 'ib-gpu-affinity', 'pass', None),
    ('h100-hca-moved', 'h100-sxm-8x', 'ib-gpu-affinity', 'fail', 'gpu.0.local_hca_via = numa_node'),
    # limits and memory
    ('h100-good', 'h100-sxm-8x', 'memlock-login', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'memlock-login', 'fail', 'limits.memlock.login.soft = 8388608'),
    ('h100-good', 'h100-sxm-8x', 'memlock-services', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'memlock-services', 'fail', 'limits.memlock.service.soft = 8388608'),
    ('h100-good', 'h100-sxm-8x', 'memlock-slurm-propagation', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'memlock-slurm-propagation', 'fail', 'slurm.propagate_memlock = true'),
    ('h100-good', 'h100-sxm-8x', 'memlock-services-running', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'memlock-services-running', 'fail', 'limits.memlock.manager.soft = 8388608'),
    ('h100-good', 'h100-sxm-8x', 'shm-size', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'shm-size', 'fail', 'mem.shm.size = 67108864'),
    ('h100-good', 'h100-sxm-8x', 'host-ram-per-gpu', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'host-ram-per-gpu', 'fail', None),
    ('ws-4090', 'rtx4090-ws', 'host-ram-per-gpu', 'pass', None),
    ('h100-good', 'h100-sxm-8x', 'edac-uncorrected', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'edac-uncorrected', 'fail', 'edac.ue_count = 1'),
    ('h100-good', 'h100-sxm-8x', 'edac-corrected', 'pass', None),
    ('h100-bad', 'h100-sxm-8x', 'edac-corrected', 'fail', 'edac.ce_count = 5'),
]

# Rules every fixture machine in its own detected profile must not fail for being what it is.
HEALTH_AREAS = ('pcie', 'driver', 'infiniband', 'limits')


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def audit(exe, root, profile, rules):
    cmd = [exe, '--root', root, 'audit', '--json']
    if profile:
        cmd += ['--profile', profile]
    for r in rules:
        cmd += ['--rule', r]
    p = run(cmd)
    if p.returncode not in (0, 2):
        raise RuntimeError('%s: exit %d: %s' % (' '.join(cmd), p.returncode, p.stderr.strip()[-1000:]))
    return json.loads(p.stdout)


def main(argv):
    if len(argv) != 6:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    exe, mkroots, roots, built, corpus = (os.path.abspath(a) for a in argv[1:])
    failures = []
    checked = 0
    tmp = tempfile.mkdtemp(prefix='llmtune-health-')
    try:
        descs = os.path.join(tmp, 'desc')
        out = os.path.join(tmp, 'roots')
        os.mkdir(descs)
        os.mkdir(out)
        procs = []
        for name, (src, change) in VARIANTS.items():
            if not change:
                os.symlink(os.path.join(built, src), os.path.join(out, name))
                continue
            d = copy.deepcopy(load(roots, src))
            change(d)
            path = os.path.join(descs, name + '.desc')
            with open(path, 'w') as f:
                f.write(repr(d))
            # one generator per variant, in parallel (each writes its own tree)
            procs.append(subprocess.Popen([sys.executable, mkroots, '--out', out, path],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for p in procs:
            _, err = p.communicate(timeout=300)
            if p.returncode != 0:
                print('mkroots.py failed: %s' % err.strip()[-2000:])
                return 1
        loaded = os.path.join(tmp, LOADED)
        with open(loaded, 'w') as f:
            f.write('[profile]\nname = h100-loaded\ndescription = HGX H100 audited during a job\n'
                    'inherits = h100-sxm-8x\n\n[params]\npcie_link_severity = critical\n')
        ib_site = os.path.join(tmp, IB_SITE)
        with open(ib_site, 'w') as f:
            f.write('[profile]\nname = h100-ib\ndescription = HGX H100 on an InfiniBand fabric\n'
                    'inherits = h100-sxm-8x\n\n[params]\nib_link_layer = ib\n')
        roce_site = os.path.join(tmp, ROCE_SITE)
        with open(roce_site, 'w') as f:
            f.write('[profile]\nname = h100-roce\ndescription = HGX H100 on a RoCE fabric\n'
                    'inherits = h100-sxm-8x\n\n[params]\nib_link_layer = roce\nroce_ecn_priority = 3\n')
        sites = {LOADED: loaded, IB_SITE: ib_site, ROCE_SITE: roce_site}

        # group the cases per (variant, profile): one audit each
        groups = {}
        for v, prof, rule, want, text in CASES:
            groups.setdefault((v, prof), []).append((rule, want, text))
        for (v, prof), cases in groups.items():
            profile = sites.get(prof, prof)
            res = audit(exe, os.path.join(out, v), profile, [c[0] for c in cases])
            by = {r['rule']: r for r in res['results']}
            for rule, want, text in cases:
                checked += 1
                r = by.get(rule)
                got = r['status'] if r else 'missing'
                what = '%s --profile %s --rule %s' % (v, prof, rule)
                if got != want:
                    failures.append('%s: %s, expected %s (observed %r, reason %r)' %
                                    (what, got, want, r and r['observed'], r and r['reason']))
                elif text and text not in (r['observed'] or '') + (r['reason'] or ''):
                    failures.append('%s: observed %r lacks %r' % (what, r['observed'], text))
                elif (v, prof, rule) in NOTED and text not in (r.get('note') or ''):
                    failures.append('%s: the pass carries no note of %r (%r)' % (what, text, r.get('note')))
                sev = SEVERITIES.get((v, prof, rule))
                if r and sev and r['severity'] != sev:
                    failures.append('%s: severity %s, expected %s' % (what, r['severity'], sev))
                checked += bool(sev)
        for v, prof, rules, want in EXITS:
            cmd = [exe, '--root', os.path.join(out, v), 'audit', '--profile', sites.get(prof, prof)]
            for rule in rules:
                cmd += ['--rule', rule]
            p = run(cmd)
            checked += 1
            if p.returncode != want:
                failures.append('%s: exit %d, expected %d' % (' '.join(cmd[3:]), p.returncode, want))

        # every health rule has a failing and a passing case above
        rules = set()
        for f in ('pcie.ini', 'driver.ini', 'infiniband.ini', 'limits.ini'):
            with open(os.path.join(HERE, '..', '..', 'rules', f)) as fh:
                rules |= {l.strip()[1:-1] for l in fh if l.startswith('[')}
        for rule in sorted(rules):
            for want in ('pass', 'fail'):
                if not any(c[2] == rule and c[3] == want for c in CASES):
                    failures.append('rule %s has no %s case' % (rule, want))

        # healthy machines pass in their own (detected) profile: a SKU never fails for being what it is
        res = audit(exe, os.path.join(out, 'h100-good'), None, [])
        for r in res['results']:
            if r['area'] in HEALTH_AREAS and r['status'] in ('fail', 'error'):
                failures.append('h100-good (detected %s): %s %s: %s' %
                                (res['profile']['name'], r['rule'], r['status'], r['observed']))
        res = audit(exe, os.path.join(out, 'ws-4090'), None, [])
        for r in res['results']:
            if r['area'] in HEALTH_AREAS and r['status'] in ('fail', 'error'):
                failures.append('ws-4090 (detected %s): %s %s: %s' %
                                (res['profile']['name'], r['rule'], r['status'], r['observed']))
        checked += 2

        # the real-machine corpus
        corpus_note = 'corpus absent: skipped'
        if os.path.isdir(corpus):
            sys.path.insert(0, os.path.join(HERE, '..', 'corpus'))
            import test_corpus  # the corpus test's safe unpacker
            os.mkdir(os.path.join(tmp, 'corpus'))
            trees = test_corpus.unpack_all(corpus, os.path.join(tmp, 'corpus'))
            for name, root in sorted(trees.items()):
                res = audit(exe, root, 'base', [])
                for r in res['results']:
                    if r['status'] == 'error':
                        failures.append('corpus %s: %s error: %s' % (name, r['rule'], r['reason']))
                checked += 1
            root = trees['32em64t']
            p = run([exe, '--root', root, 'facts', '--json', 'ib.mlx4_0.port.1'])
            facts = json.loads(p.stdout)['facts'] if p.returncode == 0 else {}
            for k, v in (('ib.mlx4_0.port.1.state', 'ACTIVE'), ('ib.mlx4_0.port.1.rate_gbps', 56),
                         ('ib.mlx4_0.port.1.rate', '56 Gb/sec (4X FDR)')):
                got = facts.get(k, {}).get('value')
                if got != v:
                    failures.append('corpus 32em64t: %s = %r, expected %r' % (k, got, v))
            res = audit(exe, root, 'base', ['ib-port-active'])
            if res['results'][0]['status'] != 'pass':
                failures.append('corpus 32em64t: ib-port-active %s' % res['results'][0]['status'])
            checked += 2
            corpus_note = '%d corpus trees' % len(trees)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print('FAIL: ' + f)
    print('%d checks, %d failures (%s)' % (checked, len(failures), corpus_note))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
