#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Advice from the hardware, not from a list (issue 29): each case copies a built fixture root, changes
what a real machine would show (RoCE ports, an H200 or B200 baseboard, storage HCAs on a root port,
an RPM database, an nvidia-smi capture, Xid lines of a MIG node, ...), then runs llmtune on the copy
and checks the specific fact the item is about. The harness and helpers are test_advice.py's.

    test_hardware.py --llmtune BIN --roots DIR [CASE...]

Exit 0 when every case passes, 1 otherwise. Each case is named after its issue item.
"""
import json
import os
import shutil
import subprocess
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_advice as adv  # noqa: E402  (run, fact, copy_root, write, read; main() sets the binary)
from test_advice import check, copy_root, fact, read, run, write  # noqa: E402,F401


def audit_rc(root, profile, *rules):
    """Exit status, {rule: result} and the whole document of an audit (exit 3 included)."""
    args = ['audit', '--json']
    if profile:
        args += ['--profile', profile]
    for r in rules:
        args += ['--rule', r]
    rc, out, err = run(root, *args)
    if rc not in (0, 2, 3):
        raise RuntimeError('audit exit %d: %s' % (rc, err))
    doc = json.loads(out)
    return rc, {r['rule']: r for r in doc['results']}, doc


def audit(root, profile, *rules):
    return audit_rc(root, profile, *rules)[1]


def facts(root, prefix):
    rc, out, err = run(root, 'facts', '--json', prefix)
    return json.loads(out)['facts'] if rc == 0 else {}


# --- fixture roots of tests/roots/hardware/*.desc, made on first use --------------------------------

HW_DESCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'roots', 'hardware')
HW_BUILT = {}


def hw_root(tmp, name):
    """A copy of the root tests/roots/hardware/NAME.desc describes (built once per run by mkroots.py,
    like the fixture roots, into the run's temporary folder, which main() removes)."""
    if name not in HW_BUILT:
        out = os.path.join(os.path.dirname(tmp), '.hardware-roots')
        subprocess.run([sys.executable, os.path.join(HW_DESCS, '..', 'mkroots.py'), '--out', out,
                        os.path.join(HW_DESCS, name + '.desc')], check=True, capture_output=True, timeout=300)
        HW_BUILT[name] = os.path.join(out, name)
    dst = os.path.join(tmp, name)
    shutil.copytree(HW_BUILT[name], dst, symlinks=True)
    return dst


# --- item 16: an HCA without a device link has unknown GPU locality ---------------------------------

def unlink_class_tree(root):
    """/sys/class/infiniband as a copy that kept files but not links (the `device` link is gone)."""
    cls = os.path.join(root, 'sys/class/infiniband')
    for dev in sorted(os.listdir(cls)):
        p = os.path.join(cls, dev)
        real = os.path.realpath(p)
        os.unlink(p)
        shutil.copytree(real, p, symlinks=True)
        os.unlink(os.path.join(p, 'device'))


def case_item16_unknown_locality(tmp):
    """The HGX H100 fixture's InfiniBand class tree copied without its links: no HCA's PCI function,
    so no NUMA node, is known. ib-gpu-affinity cannot be evaluated; it never says local_hca = none."""
    root = copy_root(tmp, 'hgx-h100')
    res = audit(root, 'h100-sxm-8x', 'ib-gpu-affinity')
    check(res['ib-gpu-affinity']['status'] == 'pass', 'item 16: the fixture with its links passes')
    unlink_class_tree(root)
    f = fact(root, 'gpu.0.local_hca')
    check(f.get('status') == 'unreadable' and 'mlx5_0' in (f.get('reason') or ''),
          'item 16: gpu.0.local_hca is unknown, naming the unplaced HCAs (%r)' % f)
    rc, res, doc = audit_rc(root, 'h100-sxm-8x', 'ib-gpu-affinity')
    r = res['ib-gpu-affinity']
    check(r['status'] == 'error' and rc == 3,
          'item 16: ib-gpu-affinity could not be evaluated (exit 3), not a failure (%s, %d)' % (r['status'], rc))
    check('local_hca = none' not in (r.get('observed') or '') + (r.get('reason') or ''),
          'item 16: the result never says local_hca = none (%r)' % r)
    # one HCA placed again (its device link back): the GPU of its node has a known neighbour
    os.symlink('/sys/bus/pci/devices/0000:19:00.0', os.path.join(root, 'sys/class/infiniband/mlx5_0/device'))
    f = fact(root, 'gpu.0.local_hca')
    check(f.get('value') == 'mlx5_0', 'item 16: a placed HCA on the GPU\'s node is named (%r)' % f)


# --- item 13: Xid lines of a MIG node -----------------------------------------------------------

MIG_XID_LOG = (
    'Nov 30 01:00:00 n1 kernel: [    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\r\n'
    # the GPU-instance form, then the GPU- and compute-instance form (kernel_rc.c, krcReportXid)
    'Nov 30 02:00:00 n1 kernel: [ 7200.1] NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=4242, name=python, '
    'Contained: CE User Channel (0x4). RST: No, D-RST: No\r\n'
    'Nov 30 02:00:01 n1 kernel: [ 7201.1] NVRM: Xid (PCI:0000:01:00 GPU-I:01 GPU-CI:00): 43, pid=4243, '
    'name=python, Ch 00000010\r\n'
    # GPU 1 is not in MIG mode: the plain form
    'Nov 30 02:10:00 n1 kernel: [ 7800.0] NVRM: Xid (PCI:0000:02:00): 13, pid=4300, name=python, '
    'Graphics Exception\r\n')


def case_item13_mig_xid(tmp):
    """A MIG node's Xid lines carry the instance in the attribution ("PCI:0000:01:00 GPU-I:05"), and a
    log copied through Windows tools ends its lines in CR LF: the contained ECC error (Xid 94) is
    read, and the critical-Xid rule fails instead of passing."""
    root = copy_root(tmp, 'ws-4090')
    write(root, '/var/lib/llmtune/captures/kmsg.txt', MIG_XID_LOG)
    f = facts(root, 'xid')
    check(f.get('xid.codes', {}).get('value') == '13,43,94' and f.get('xid.events', {}).get('value') == 3,
          'item 13: both MIG Xid lines and the plain one are read (%r)' % {k: f.get(k) for k in ('xid.codes', 'xid.events')})
    check(f.get('xid.devices', {}).get('value') == '0000:01:00,0000:02:00',
          'item 13: the devices are named by PCI address without the instance (%r)' % f.get('xid.devices'))
    check(f.get('xid.0000:01:00.codes', {}).get('value') == '43,94', 'item 13: GPU 0 had Xid 94 and 43 (%r)'
          % f.get('xid.0000:01:00.codes'))
    last = f.get('xid.0000:01:00.last', {}).get('value') or ''
    check(last.startswith('43 (GPU-I:01 GPU-CI:00), pid=4243') and last.endswith('Ch 00000010'),
          'item 13: the last event names the GPU and compute instance, without the trailing CR (%r)' % last)
    last = f.get('xid.0000:02:00.last', {}).get('value')
    check(last == '13, pid=4300, name=python, Graphics Exception',
          'item 13: a plain line ending in CR LF is read without the CR (%r)' % last)
    res = audit(root, 'rtx4090-ws', 'gpu-xid-critical')
    r = res['gpu-xid-critical']
    check(r['status'] == 'fail' and '94' in (r.get('observed') or ''),
          'item 13: the contained ECC error fails gpu-xid-critical (%r)' % r)


# --- item 12: an idle GPU link below its capability is a note, not a failure -----------------------

def case_item12_idle_link(tmp):
    """ws-4090's GPU 0 idles at 2.5 GT/s on a Gen4 x16 link (both ends Gen4): on an idle audit (the
    default, pcie_link_severity = info) the rule passes with the link in a note; a site profile for
    audits under load (critical) fails it. GPU 1 runs x8 in a slot wired x8: not below both ends."""
    root = copy_root(tmp, 'ws-4090')
    rc, res, doc = audit_rc(root, 'rtx4090-ws', 'pcie-gpu-link-speed', 'pcie-gpu-link-width')
    r = res['pcie-gpu-link-speed']
    check(r['status'] == 'pass' and 'gpu.0.link.speed_ok = false' in (r.get('note') or ''),
          'item 12: the idle 2.5 GT/s link passes with a note naming GPU 0 (%r)' % r)
    check(rc == 0, 'item 12: the idle audit exits 0 (%d)' % rc)
    w = res['pcie-gpu-link-width']
    check(w['status'] == 'pass' and not w.get('note'), 'item 12: GPU 1\'s x8 in an x8 slot is no note (%r)' % w)
    rc, out, err = run(root, 'audit', '--profile', 'rtx4090-ws', '--rule', 'pcie-gpu-link-speed')
    check('PASS  pcie-gpu-link-speed' in out and 'note:     gpu.0.link.speed_ok = false' in out and 'FAIL' not in out,
          'item 12: the human audit shows PASS with a note line (%r)' % out)
    prof = os.path.join(tmp, 'busy.ini')
    with open(prof, 'w') as f:
        f.write('[profile]\nname = busy\ndescription = audits during jobs\ninherits = rtx4090-ws\n\n'
                '[params]\npcie_link_severity = critical\n')
    r = audit(root, prof, 'pcie-gpu-link-speed')['pcie-gpu-link-speed']
    check(r['status'] == 'fail' and r['severity'] == 'critical' and not r.get('note'),
          'item 12: audited under load the same link fails critical (%r)' % r)


# --- item 14: a capture that is not this machine's, and one that is not XML -----------------------

def capture(*bus_ids):
    gpus = ''.join(adv.NVSMI_GPU % (b, 'GPU-%08d-2222-3333-4444-555555555555' % i, b) for i, b in enumerate(bus_ids))
    return adv.NVSMI.replace('<attached_gpus>2<', '<attached_gpus>%d<' % len(bus_ids)) % gpus


def case_item14_capture_mismatch(tmp):
    """ws-4090's GPUs are 0000:01:00.0 and 0000:02:00.0. A capture that lists them and a third GPU this
    bus does not have, or lists one of them twice, is not this machine's: gpu-listed-on-bus fails and
    gpu-visible-to-driver cannot be evaluated (it passed before). A capture file holding nvidia-smi's
    error text is quoted."""
    root = copy_root(tmp, 'ws-4090')
    cap = '/var/lib/llmtune/captures/nvidia-smi.xml'
    rules = ('gpu-visible-to-driver', 'gpu-listed-on-bus')
    write(root, cap, capture('01:00.0', '02:00.0'))
    res = audit(root, 'rtx4090-ws', *rules)
    check(res['gpu-visible-to-driver']['status'] == 'pass' and res['gpu-listed-on-bus']['status'] == 'pass',
          'item 14: the machine\'s own capture passes both rules (%r)' % {r: res[r]['status'] for r in rules})
    write(root, cap, capture('01:00.0', '02:00.0', '03:00.0'))
    f = fact(root, 'nvml.foreign')
    check(f.get('value') == '0000:03:00.0', 'item 14: the GPU not on this bus is named (%r)' % f)
    rc, res, doc = audit_rc(root, 'rtx4090-ws', *rules)
    v, o = res['gpu-visible-to-driver'], res['gpu-listed-on-bus']
    check(v['status'] == 'error' and '0000:03:00.0' in (v.get('reason') or ''),
          'item 14: gpu-visible-to-driver cannot be evaluated, naming the foreign GPU (%r)' % v)
    check(o['status'] == 'fail' and o['severity'] == 'critical' and '0000:03:00.0' in (o.get('observed') or ''),
          'item 14: gpu-listed-on-bus fails critical (%r)' % o)
    write(root, cap, capture('01:00.0', '01:00.0', '02:00.0'))
    f = fact(root, 'nvml.duplicated')
    check(f.get('value') == '0000:01:00.0', 'item 14: one bus id listed twice is named (%r)' % f)
    res = audit(root, 'rtx4090-ws', *rules)
    check(res['gpu-listed-on-bus']['status'] == 'fail' and res['gpu-visible-to-driver']['status'] == 'error',
          'item 14: two <gpu> elements with one bus id are a mismatch, not two GPUs (%r)'
          % {r: res[r]['status'] for r in rules})
    write(root, cap, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
          'that the latest NVIDIA driver is installed and running.\n\n')
    f = fact(root, 'nvml.count')
    check(f.get('status') == 'unreadable' and
          "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" in (f.get('reason') or ''),
          'item 14: the error text nvidia-smi wrote is quoted (%r)' % f)


# --- item 15: memory per GPU judged against the node's share -----------------------------------------

def case_item15_node_share(tmp):
    """A stock DGX A100 in NPS4 (8 NUMA nodes of 128 GiB, GPU pairs on 4 of them) holds its share of the
    profile's memory on every node: exec warns for no GPU. Node 1 with a DIMM missing (96 GiB) warns for
    its GPUs (2 and 3) only."""
    root = copy_root(tmp, 'dgx-a100')
    warned = [g for g in range(8)
              if 'warning' in run(root, 'exec', '--profile', 'a100-8x', '--gpu', str(g), '--', 'true')[2]]
    check(warned == [], 'item 15: no GPU of the stock NPS4 DGX A100 warns (%r)' % warned)
    mi = '/sys/devices/system/node/node1/meminfo'
    text = read(root, mi)
    write(root, mi, text.replace('133955584 kB', '100663296 kB'), 0o444)
    out = {g: run(root, 'exec', '--profile', 'a100-8x', '--gpu', str(g), '--', 'true')[2] for g in range(8)}
    warned = [g for g in range(8) if 'warning' in out[g]]
    check(warned == [2, 3], 'item 15: only the GPUs of the node missing memory warn (%r)' % warned)
    check('NUMA node 1 holds 98304 MiB, less than its share' in out[2] and '122880 MiB x 8 GPUs over 8 NUMA nodes'
          in out[2], 'item 15: the warning gives the node\'s share and how it is made (%r)' % out[2])


# --- item 7: the fabric manager's version on an RPM system --------------------------------------------

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'roots'))
import mkroots  # noqa: E402  (rpm_header, rpmdb_sqlite: the fixture's own rpm database writer)

FM_RULES = ('driver-fabricmanager', 'driver-fabricmgr-version')


def put_rpmdb(root, packages, tmp):
    write(root, '/var/lib/rpm/rpmdb.sqlite', '')
    with open(os.path.join(root, 'var/lib/rpm/rpmdb.sqlite'), 'wb') as f:
        f.write(mkroots.rpmdb_sqlite(packages, tmp))


def put_rpmdb_wal(root, packages, late, tmp):
    """A database in WAL mode whose LATE packages are committed in the WAL only (rpm is running, or
    was killed, before a checkpoint): both files as they are on disk then."""
    import sqlite3
    d = os.path.join(tmp, 'wal')
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, 'rpmdb.sqlite'), 'wb') as f:
        f.write(mkroots.rpmdb_sqlite(packages, tmp))
    c = sqlite3.connect(os.path.join(d, 'rpmdb.sqlite'))
    c.execute('PRAGMA journal_mode=WAL')
    c.execute('PRAGMA wal_autocheckpoint=0')
    for n, v, r in late:
        c.execute('INSERT INTO Packages (blob) VALUES (?)', (mkroots.rpm_header(n, v, r),))
    c.commit()
    for name in ('rpmdb.sqlite', 'rpmdb.sqlite-wal'):
        shutil.copyfile(os.path.join(d, name), os.path.join(root, 'var/lib/rpm', name))
    c.close()


def real_rpmdb(root, tmp):
    """The database rpm itself writes for an installed nvidia-fabricmanager-535 535.104.05 (when rpmbuild
    and rpm are installed here); False when they are not."""
    if not (shutil.which('rpmbuild') and shutil.which('rpm')):
        return False
    top = os.path.join(tmp, 'rpmbuild')
    os.makedirs(os.path.join(top, 'SPECS'))
    spec = os.path.join(top, 'SPECS', 'fm.spec')
    with open(spec, 'w') as f:
        f.write('Name: nvidia-fabricmanager-535\nVersion: 535.104.05\nRelease: 1\nSummary: fabric manager\n'
                'License: MIT\nBuildArch: noarch\n%description\nfabric manager\n%files\n')
    subprocess.run(['rpmbuild', '-bb', '--quiet', '--define', '_topdir ' + top, spec], check=True,
                   capture_output=True, timeout=300)
    rpmfile = os.path.join(top, 'RPMS', 'noarch', 'nvidia-fabricmanager-535-535.104.05-1.noarch.rpm')
    for name in os.listdir(os.path.join(root, 'var/lib/rpm')):
        os.unlink(os.path.join(root, 'var/lib/rpm', name))
    base = ['rpm', '--root', root, '--dbpath', '/var/lib/rpm']
    subprocess.run(base + ['--initdb'], check=True, capture_output=True, timeout=120)
    subprocess.run(base + ['-i', '--justdb', '--nodeps', '--noscripts', rpmfile], check=True, capture_output=True,
                   timeout=120)
    return True


def case_item7_fabricmanager_rpm(tmp):
    """hgx-h100 is RHEL 9: its fabric manager's version is in the rpm database (SQLite), not dpkg's. With
    the unit enabled the version rule passes (it was an error, exit 3); a wrong version fails; a row
    still in the WAL counts; a Berkeley DB-only database says so, and a capture of `nv-fabricmanager
    --version` is then read."""
    root = copy_root(tmp, 'hgx-h100')
    os.makedirs(os.path.join(root, 'etc/systemd/system/multi-user.target.wants'))
    os.symlink('/lib/systemd/system/nvidia-fabricmanager.service',
               os.path.join(root, 'etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service'))
    f = fact(root, 'fabricmanager.version')
    check(f.get('value') == '535.104.05' and f.get('source') == '/var/lib/rpm/rpmdb.sqlite',
          'item 7: the version comes from the rpm database (%r)' % f)
    rc, res, doc = audit_rc(root, 'h100-sxm-8x', *FM_RULES)
    check(rc == 0 and all(res[r]['status'] == 'pass' for r in FM_RULES),
          'item 7: both fabric manager rules pass, exit 0 (%d, %r)' % (rc, {r: res[r]['status'] for r in FM_RULES}))
    base = [('kernel', '5.14.0', '284.30.1.el9_2'), ('nvidia-fabricmanager-devel-535', '535.104.05', '1')]
    put_rpmdb(root, base + [('nvidia-fabricmanager-535', '535.86.10', '1')], tmp)
    r = audit(root, 'h100-sxm-8x', *FM_RULES)['driver-fabricmgr-version']
    check(r['status'] == 'fail' and 'fabricmanager.driver_match = false' in (r.get('observed') or ''),
          'item 7: fabric manager 535.86.10 with driver 535.104.05 fails (%r)' % r)
    put_rpmdb_wal(root, base, [('nvidia-fabricmanager-535', '535.104.05', '1')], tmp)
    f = fact(root, 'fabricmanager.version')
    check(f.get('value') == '535.104.05', 'item 7: a package committed only in the WAL is read (%r)' % f)
    for name in os.listdir(os.path.join(root, 'var/lib/rpm')):
        os.unlink(os.path.join(root, 'var/lib/rpm', name))
    write(root, '/var/lib/rpm/Packages', '\0' * 4096)
    rc, res, doc = audit_rc(root, 'h100-sxm-8x', *FM_RULES)
    r = res['driver-fabricmgr-version']
    check(rc == 3 and r['status'] == 'error' and 'Berkeley DB' in (r.get('reason') or '') and
          'nv-fabricmanager --version' in (r.get('reason') or ''),
          'item 7: a Berkeley DB database is named, and the capture that would do (%d, %r)' % (rc, r.get('reason')))
    write(root, '/var/lib/llmtune/captures/nv-fabricmanager-version.txt', 'Fabric Manager version is : 535.104.05\n')
    f = fact(root, 'fabricmanager.version')
    check(f.get('value') == '535.104.05' and f.get('source', '').endswith('nv-fabricmanager-version.txt'),
          'item 7: the capture of nv-fabricmanager --version is read (%r)' % f)
    check(audit(root, 'h100-sxm-8x', *FM_RULES)['driver-fabricmgr-version']['status'] == 'pass',
          'item 7: with the capture the version rule passes')
    os.unlink(os.path.join(root, 'var/lib/llmtune/captures/nv-fabricmanager-version.txt'))
    if real_rpmdb(root, tmp):
        f = fact(root, 'fabricmanager.version')
        check(f.get('value') == '535.104.05', 'item 7: the database rpm itself wrote is read (%r)' % f)
    else:
        print('skip  item 7: rpmbuild or rpm not installed: the database rpm itself writes not checked')


# --- item 11: application and locked clocks ----------------------------------------------------------

CLOCK_GPU = ('<gpu id="00000000:%s">\n<product_name>NVIDIA GeForce RTX 4090</product_name>\n<uuid>GPU-%s</uuid>\n'
             '<pci><pci_bus_id>00000000:%s</pci_bus_id></pci>\n'
             '<clocks_event_reasons><clocks_event_reason_gpu_idle>Not Active</clocks_event_reason_gpu_idle>'
             '<clocks_event_reason_applications_clocks_setting>%s</clocks_event_reason_applications_clocks_setting>'
             '</clocks_event_reasons>\n'
             '<applications_clocks><graphics_clock>%d MHz</graphics_clock><mem_clock>10501 MHz</mem_clock>'
             '</applications_clocks>\n'
             '<default_applications_clocks><graphics_clock>2520 MHz</graphics_clock><mem_clock>10501 MHz</mem_clock>'
             '</default_applications_clocks>\n'
             '<max_clocks><graphics_clock>3120 MHz</graphics_clock><sm_clock>3120 MHz</sm_clock>'
             '<mem_clock>10501 MHz</mem_clock></max_clocks>\n</gpu>\n')


def clock_capture(gpu1_app, gpu1_reason):
    gpus = CLOCK_GPU % ('01:00.0', '1111', '01:00.0', 'Not Active', 2520) + \
        CLOCK_GPU % ('02:00.0', '2222', '02:00.0', gpu1_reason, gpu1_app)
    return adv.NVSMI % gpus


def case_item11_clocks(tmp):
    """Application clocks set below the board's default (nvidia-smi -ac) and clocks held by a user
    setting (nvidia-smi -lgc: the applications clocks setting clock event) are findings with the manual
    step, read from an nvidia-smi -q -x capture of ws-4090; default application clocks below the
    maximum (the base clock, boosted above) are not."""
    root = copy_root(tmp, 'ws-4090')
    cap = '/var/lib/llmtune/captures/nvidia-smi.xml'
    rules = ('gpu-app-clocks', 'gpu-clock-user-limit')
    write(root, cap, clock_capture(2520, 'Not Active'))
    res = audit(root, 'rtx4090-ws', *rules)
    check(all(res[r]['status'] == 'pass' for r in rules),
          'item 11: default application clocks (below the maximum) pass (%r)' % {r: res[r]['status'] for r in rules})
    write(root, cap, clock_capture(1800, 'Not Active'))
    f = fact(root, 'nvml.1.clocks.app_graphics_mhz')
    check(f.get('value') == 1800, 'item 11: the application clock is read from the capture (%r)' % f)
    r = audit(root, 'rtx4090-ws', *rules)['gpu-app-clocks']
    check(r['status'] == 'fail' and r['severity'] == 'warning' and 'nvml.1.clocks.app_below_default = true'
          in (r.get('observed') or '') and '-rac' in (r.get('remedy') or {}).get('summary', ''),
          'item 11: application clocks below the default fail with the reset step (%r)' % r)
    write(root, cap, clock_capture(2520, 'Active'))
    r = audit(root, 'rtx4090-ws', *rules)['gpu-clock-user-limit']
    check(r['status'] == 'fail' and 'nvml.1.clock_event.applications_clocks = true' in (r.get('observed') or '') and
          '-rgc' in (r.get('remedy') or {}).get('summary', ''),
          'item 11: clocks held by a user setting (locked clocks) fail with the reset step (%r)' % r)


# --- item 3: HCA role from the PCIe tree -------------------------------------------------------------

def case_item3_storage_hca(tmp):
    """hgx-h100-storage: two storage ConnectX-7 on root ports of NUMA node 0 (which has GPUs), behind
    no GPU's switch, at 200 Gb/s, one DOWN. They are storage: the compute port rules pass, the storage
    rule reports the DOWN port as information, NCCL_IB_HCA names the eight rails."""
    root = hw_root(tmp, 'hgx-h100-storage')
    f = facts(root, 'ib')
    roles = {k.split('.')[1]: v.get('value') for k, v in f.items() if k.endswith('.port.1.role')}
    check(roles.get('mlx5_8') == 'storage' and roles.get('mlx5_9') == 'storage' and
          all(roles.get('mlx5_%d' % i) == 'compute' for i in range(8)),
          'item 3: the root-port HCAs are storage, the eight behind GPU switches compute (%r)' % roles)
    res = audit(root, 'h100-sxm-8x', 'ib-port-active', 'ib-port-rate', 'ib-storage-port-health')
    check(res['ib-port-active']['status'] == 'pass' and res['ib-port-rate']['status'] == 'pass',
          'item 3: no critical port finding for the storage adapters (%r)'
          % {r: res[r]['status'] for r in ('ib-port-active', 'ib-port-rate')})
    r = res['ib-storage-port-health']
    check(r['status'] == 'fail' and r['severity'] == 'info' and 'mlx5_9' in (r.get('observed') or ''),
          'item 3: the storage port that is DOWN is information (%r)' % r)
    rc, out, err = run(root, 'nccl', 'conf', '--profile', 'h100-sxm-8x')
    check('\nNCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7\n' in out,
          'item 3: NCCL_IB_HCA names the eight rails (%r)' % [l for l in out.splitlines() if 'IB_HCA' in l])


# --- item 2: profiles by capability; hardware requirements whatever the profile ---------------------

def detected(root):
    """The profile detection picks (audit without --profile), and the audit document."""
    rc, res, doc = audit_rc(root, None, 'driver-fabricmanager')
    return doc['profile']['name'], doc


def case_item2_h200(tmp):
    """hgx-h200: the HGX H100 board with H200 GPUs (10de:2335), fabric manager not enabled. Detection
    picks h200-sxm-8x by capability (Hopper, eight, NVSwitches, a 256 GiB BAR1); under any profile,
    base included, the NVSwitches make driver-fabricmanager apply and fail."""
    root = hw_root(tmp, 'hgx-h200')
    f = facts(root, 'gpu')
    check(all(f.get('gpu.%d.arch' % i, {}).get('value') == 'hopper' for i in range(8)),
          'item 2: the H200s are Hopper by their chip code (%r)' % f.get('gpu.0.arch'))
    name, doc = detected(root)
    check(name == 'h200-sxm-8x', 'item 2: an HGX H200 is detected as h200-sxm-8x (%r: %s)'
          % (name, doc['profile'].get('why')))
    for prof in ('base', 'h200-sxm-8x'):
        r = audit(root, prof, 'driver-fabricmanager')['driver-fabricmanager']
        check(r['status'] == 'fail' and r['severity'] == 'critical',
              'item 2: four NVSwitches without the fabric manager fail critical under %s (%r)'
              % (prof, r['status']))
    h100 = copy_root(tmp, 'hgx-h100')
    name, doc = detected(h100)
    check(name == 'h100-sxm-8x', 'item 2: the HGX H100 (128 GiB BAR1) stays h100-sxm-8x (%r)' % name)


def case_item2_b200(tmp):
    """hgx-b200: eight B200 (10de:2901) on the open kernel modules 570.133.20. Detection picks b200-8x;
    the proprietary flavour fails driver-open-kernel-module critical under any profile."""
    root = hw_root(tmp, 'hgx-b200')
    name, doc = detected(root)
    check(name == 'b200-8x', 'item 2: an HGX B200 is detected as b200-8x (%r: %s)'
          % (name, doc['profile'].get('why')))
    res = audit(root, 'b200-8x', 'driver-open-kernel-module', 'driver-version')
    check(res['driver-open-kernel-module']['status'] == 'pass' and res['driver-version']['status'] == 'pass',
          'item 2: open modules 570.133.20 pass on b200-8x (%r)'
          % {k: v['status'] for k, v in res.items()})
    ver = read(root, '/proc/driver/nvidia/version')
    write(root, '/proc/driver/nvidia/version',
          ver.replace('Open Kernel Module for x86_64', 'x86_64 Kernel Module').replace('570.133.20', '565.57.01'))
    for prof in ('base', 'b200-8x'):
        r = audit(root, prof, 'driver-open-kernel-module')['driver-open-kernel-module']
        check(r['status'] == 'fail' and r['severity'] == 'critical' and 'proprietary' in (r.get('observed') or ''),
              'item 2: the proprietary modules on Blackwell fail critical under %s (%r)' % (prof, r))
    r = audit(root, 'b200-8x', 'driver-version')['driver-version']
    check(r['status'] == 'fail', 'item 2: 565 is below HGX B200\'s 570.133.20 (%r)' % r['status'])


B200_RPMDB = [('kernel', '5.14.0', '284.30.1.el9_2'), ('nvidia-driver', '570.133.20', '1.el9'),
              ('nvidia-fabricmanager-570', '570.133.20', '1'), ('rpm', '4.16.1.3', '22.el9')]
NVL5_RULES = ('driver-fabricmanager', 'driver-fabricmgr-version', 'driver-nvlsm', 'driver-nvlsm-umad')


def statuses(root, prof, rules):
    res = audit(root, prof, *rules)
    return {r: (res[r]['status'], res[r]['severity']) for r in rules}


def case_item2_b200_nvlink5(tmp):
    """hgx-b200's NVLink 5 switches are no PCI functions: the host reaches them through a ConnectX-7
    whose VPD says SW_MNG (NVIDIA gpu-driver-container's _assert_nvlink5_system). They are found
    there, so the fabric manager, NVLSM (nvlsm) and ib_umad are required under any profile; without
    the bridge eight Blackwell GPUs are not an HGX B200."""
    root = hw_root(tmp, 'hgx-b200')
    f = facts(root, 'nvswitch')
    got = tuple(f.get('nvswitch.' + k, {}).get('value') for k in ('count', 'bridge_count', 'present'))
    check(got == (0, 4, True), 'item 2: no NVSwitch on the bus, four SW_MNG bridges, switches present (%r)' % (got,))
    for prof in ('base', 'b200-8x'):
        got = statuses(root, prof, NVL5_RULES)
        check(all(v[0] == 'pass' for v in got.values()), 'item 2: an NVLink 5 board in order passes under %s (%r)'
              % (prof, got))
    wants = os.path.join(root, 'etc/systemd/system/multi-user.target.wants')
    os.unlink(os.path.join(wants, 'nvidia-fabricmanager.service'))
    os.symlink('/usr/lib/systemd/system/sshd.service', os.path.join(wants, 'sshd.service'))
    put_rpmdb(root, B200_RPMDB, tmp)
    write(root, '/proc/modules', ''.join(l + '\n' for l in read(root, '/proc/modules').splitlines()
                                         if not l.startswith(('ib_umad ', 'nvidia_peermem '))))
    for mod in ('ib_umad', 'nvidia_peermem'):
        shutil.rmtree(os.path.join(root, 'sys/module', mod))
    for prof in ('base', 'b200-8x'):
        got = statuses(root, prof, ('driver-fabricmanager', 'driver-nvlsm', 'driver-nvlsm-umad'))
        check(all(v == ('fail', 'critical') for v in got.values()),
              'item 2: fabric manager off, nvlsm not installed, ib_umad not loaded fail critical under %s (%r)'
              % (prof, got))
    rc, out, err = run(root, 'plan', '--profile', 'b200-8x', '--rule', 'driver-nvlsm-umad')
    check('ib_umad' in out and 'modules-load.d' in out, 'item 2: the plan loads ib_umad at boot (%r)' % out[-400:])
    # proprietary modules, no peermem: no GPUDirect; GPU peer copies go over NVLink, not PCIe
    ver = read(root, '/proc/driver/nvidia/version')
    write(root, '/proc/driver/nvidia/version', ver.replace('Open Kernel Module for x86_64', 'x86_64 Kernel Module'))
    g = fact(root, 'iommu.gpu_traffic').get('value')
    check(g == 'none', 'item 2: on an NVLink 5 board no GPU traffic crosses the IOMMU without GPUDirect (%r)' % g)
    for dirpath, dirs, files in os.walk(os.path.join(root, 'sys/devices')):
        if 'vpd' in files:
            os.unlink(os.path.join(dirpath, 'vpd'))
    name, doc = detected(root)
    check(name != 'b200-8x', 'item 2: eight Blackwell GPUs without NVLink switches are not an HGX B200 (%r)' % name)


# --- NVLink 5 switch management bridges are RDMA devices, not HCAs ----------------------------------

B200_RAILS = ['mlx5_%d' % i for i in range(8)]
B200_BRIDGES = ['mlx5_%d' % i for i in range(8, 12)]


def ib_port_file(root, dev, name, value):
    write(root, '/sys/class/infiniband/%s/ports/1/%s' % (dev, name), value + '\n')


def delink_gpus(root):
    """The GPUs' /sys/bus/pci/devices entries as copies that kept files but not the link into
    /sys/devices (a tree a snapshot tool copied file by file): no GPU's place in the PCIe tree is
    known, so the HCAs are paired with GPUs by NUMA node, and the bridges on node 0 are near GPUs."""
    for k, v in sorted(facts(root, 'gpu').items()):
        if k.endswith('.address') and v.get('value'):
            p = os.path.join(root, 'sys/bus/pci/devices', v['value'])
            real = os.path.realpath(p)
            os.unlink(p)
            shutil.copytree(real, p, symlinks=True)


def nccl_ib_hca(root, prof):
    rc, out, err = run(root, 'nccl', 'conf', '--profile', prof)
    lines = [l for l in out.splitlines() if l.startswith('NCCL_IB_HCA')]
    return lines[0] if lines else None


def case_nvlink_mgmt_roles(tmp):
    """hgx-b200's four ConnectX-7 bridge functions (VPD SW_MNG) are mlx5 devices mlx5_8..mlx5_11 with
    an InfiniBand port each, as NVIDIA's driver container finds them (/sys/class/infiniband/*/device/vpd).
    They get the role nvlink-mgmt, are no HCAs in the counts, no storage adapters, and stay out of
    NCCL_IB_HCA; the eight rails stay compute."""
    root = hw_root(tmp, 'hgx-b200')
    f = facts(root, 'ib')
    val = lambda k: f.get(k, {}).get('value')
    roles = {d: (val('ib.%s.role' % d), val('ib.%s.port.1.role' % d), val('ib.%s.nvlink_bridge' % d))
             for d in B200_RAILS + B200_BRIDGES}
    check(all(roles[d] == ('nvlink-mgmt', 'nvlink-mgmt', True) for d in B200_BRIDGES) and
          all(roles[d] == ('compute', 'compute', False) for d in B200_RAILS),
          'nvlink-mgmt: the SW_MNG functions are nvlink-mgmt, the rails compute (%r)' % roles)
    got = tuple(val('ib.' + k) for k in ('count', 'hca_count', 'nvlink_mgmt_count', 'infiniband_ports',
                                         'active_ports', 'compute_link_layers'))
    check(got == (12, 8, 4, 8, 8, 'ib'), 'nvlink-mgmt: 12 RDMA devices, 8 HCAs, 4 bridges, 8 HCA ports (%r)' % (got,))
    hca = nccl_ib_hca(root, 'b200-8x')
    check(hca == 'NCCL_IB_HCA==' + ','.join(B200_RAILS), 'nvlink-mgmt: NCCL_IB_HCA names the eight rails (%r)' % hca)
    # before NVLSM has configured the bridges their ports are INIT: no storage port is down
    for d in B200_BRIDGES:
        ib_port_file(root, d, 'state', '2: INIT')
    r = audit(root, 'b200-8x', 'ib-storage-port-health')['ib-storage-port-health']
    check(r['status'] == 'n/a', 'nvlink-mgmt: a bridge port is no storage port (%r %r)' % (r['status'], r.get('observed')))
    # a rail fallen off the bus is missing, whatever the bridges add to /sys/class/infiniband
    os.unlink(os.path.join(root, 'sys/class/infiniband/mlx5_7'))
    r = audit(root, 'b200-8x', 'ib-hca-count')['ib-hca-count']
    check(r['status'] == 'fail' and 'ib.hca_count = 7' in (r.get('observed') or ''),
          'nvlink-mgmt: seven rails and four bridges are not eight HCAs (%r %r)' % (r['status'], r.get('observed')))


def case_nvlink_mgmt_numa(tmp):
    """The same board in a tree that pairs no HCA with a GPU (the GPUs' PCI entries copied without
    their links): the NUMA node decides, and the bridges sit on node 0 with four GPUs. They are still
    nvlink-mgmt: NCCL_IB_HCA is written to keep them out, their ports (INIT, 200 Gb/s, with errors)
    fail no compute port rule, and the GPUs of node 0 without rails have no local HCA."""
    root = hw_root(tmp, 'hgx-b200')
    delink_gpus(root)
    f = facts(root, 'ib')
    roles = {d: f.get('ib.%s.port.1.role' % d, {}).get('value') for d in B200_RAILS + B200_BRIDGES}
    check(all(roles[d] == 'nvlink-mgmt' for d in B200_BRIDGES) and all(roles[d] == 'compute' for d in B200_RAILS),
          'nvlink-mgmt (NUMA): the bridges are nvlink-mgmt whatever node they are on (%r)' % roles)
    hca = nccl_ib_hca(root, 'b200-8x')
    check(hca == 'NCCL_IB_HCA==' + ','.join(B200_RAILS),
          'nvlink-mgmt (NUMA): NCCL_IB_HCA is written to keep the bridges out (%r)' % hca)
    r = audit(root, 'b200-8x', 'ib-port-rate')['ib-port-rate']
    check(r['status'] == 'pass', 'nvlink-mgmt (NUMA): the bridges\' 200 Gb/s ports are no slow rails (%r %r)'
          % (r['status'], r.get('observed')))
    for d in B200_BRIDGES:
        ib_port_file(root, d, 'state', '2: INIT')
        ib_port_file(root, d, 'counters/symbol_error', '65535')
    for d in B200_RAILS:
        ib_port_file(root, d, 'counters/symbol_error', '0')
        ib_port_file(root, d, 'counters/link_downed', '0')
    write(root, '/etc/llmtune/profiles.d/site-b200.ini',
          '[profile]\nname = site-b200\ndescription = our HGX B200\ninherits = b200-8x\n\n'
          '[params]\nib_error_max = 0\n')
    rules = ('ib-port-active', 'ib-port-rate', 'ib-port-symbol-errors', 'ib-link-layer-uniform')
    got = statuses(root, 'site-b200', rules)
    check(all(v[0] == 'pass' for v in got.values()),
          'nvlink-mgmt (NUMA): the bridges\' ports fail no compute port rule (%r)' % got)
    # RoCE rails beside the InfiniBand bridges are one fabric
    for d in B200_RAILS:
        ib_port_file(root, d, 'link_layer', 'Ethernet')
    v = fact(root, 'ib.compute_link_layers').get('value')
    r = audit(root, 'site-b200', 'ib-link-layer-uniform')['ib-link-layer-uniform']
    check(v == 'roce' and r['status'] == 'pass',
          'nvlink-mgmt (NUMA): RoCE rails and InfiniBand bridges are a RoCE node (%r %r)' % (v, r['status']))
    # the rails of node 0 gone: its GPUs have no HCA near, the bridges do not stand in for one
    for d in B200_RAILS[:4]:
        os.unlink(os.path.join(root, 'sys/class/infiniband', d))
    g = fact(root, 'gpu.0.local_hca').get('value')
    r = audit(root, 'b200-8x', 'ib-gpu-affinity')['ib-gpu-affinity']
    check(g == 'none' and r['status'] == 'fail',
          'nvlink-mgmt (NUMA): a GPU of node 0 has no local HCA without its rails (%r %r)' % (g, r['status']))


def case_nvlink_mgmt_baseline(tmp):
    """llmtune baseline of an HGX B200 takes its adapter parameters from the eight rails: the four
    bridges (x2 links, the baseboard's firmware) make neither the HCA count, nor the PCIe width, nor
    the firmware; the node then passes its own baseline, and a rail on other firmware still fails it."""
    root = hw_root(tmp, 'hgx-b200')
    out = os.path.join(tmp, 'b200-baseline.ini')
    rc, so, err = run(root, 'baseline', '-o', out)
    text = open(out).read() if os.path.exists(out) else ''
    got = {l.split(' = ')[0]: l.split(' = ')[1] for l in text.splitlines()
           if l.split(' = ')[0] in ('ib_hca_count', 'hca_pcie_width', 'hca_fw_version')}
    check(rc == 0 and got == {'ib_hca_count': '8', 'hca_pcie_width': '16', 'hca_fw_version': '28.39.1002'},
          'nvlink-mgmt baseline: the rails give the adapter parameters (%d %r %s)'
          % (rc, got, [l for l in text.splitlines() if 'hca' in l]))
    rules = ('baseline-hca-pcie', 'baseline-hca-firmware', 'ib-hca-count')
    res = audit(root, out, *rules)
    check(all(res[r]['status'] == 'pass' for r in rules),
          'nvlink-mgmt baseline: the node passes its own baseline (%r)' % {r: res[r]['status'] for r in rules})
    write(root, '/sys/class/infiniband/mlx5_3/fw_ver', '28.40.1000\n')
    r = audit(root, out, 'baseline-hca-firmware')['baseline-hca-firmware']
    check(r['status'] == 'fail' and 'ib.mlx5_3.fw_ver = 28.40.1000' in (r.get('observed') or ''),
          'nvlink-mgmt baseline: a rail on other firmware fails (%r %r)' % (r['status'], r.get('observed')))


# --- item 1: RoCE and EFA nodes ----------------------------------------------------------------------

def set_ports(root, **files):
    """Write FILE=VALUE into port 1 of every HCA of the tree (link_layer='Ethernet', ...)."""
    for dev in sorted(os.listdir(os.path.join(root, 'sys/class/infiniband'))):
        for name, value in files.items():
            write(root, '/sys/class/infiniband/%s/ports/1/%s' % (dev, name), value + '\n')


def fabric_check(root, want, what):
    """mlx5_0's port is of fabric WANT, and so are the compute ports together."""
    f = facts(root, 'ib')
    got = (f.get('ib.mlx5_0.port.1.fabric', {}).get('value'), f.get('ib.compute_link_layers', {}).get('value'))
    check(got == (want, want), 'item 1: %s (%r)' % (what, got))


LINK_RULES = ('ib-link-layer', 'ib-link-layer-uniform', 'ib-port-active', 'ib-port-rate')


def site_profile(root, layer):
    """A site profile of the HGX H100 that names the site's fabric."""
    write(root, '/etc/llmtune/profiles.d/site-h100.ini',
          '[profile]\nname = site-h100\ndescription = our HGX H100\ninherits = h100-sxm-8x\n\n'
          '[params]\nib_link_layer = %s\n' % layer)


def case_item1_roce(tmp):
    """An HGX H100 whose ConnectX-7 run RoCE (every link_layer Ethernet), one rail DOWN. No advice to
    switch to InfiniBand unless the site says its fabric is InfiniBand; the DOWN rail is reported."""
    root = copy_root(tmp, 'hgx-h100')
    set_ports(root, link_layer='Ethernet')
    write(root, '/sys/class/infiniband/mlx5_3/ports/1/state', '1: DOWN\n')
    fabric_check(root, 'roce', 'Ethernet ports are RoCE')
    rules = LINK_RULES
    res = audit(root, 'h100-sxm-8x', *rules)
    check(res['ib-link-layer']['status'] == 'n/a' and res['ib-link-layer-uniform']['status'] == 'pass',
          'item 1: no link-layer finding while the site has not named its fabric (%r)'
          % {r: res[r]['status'] for r in rules})
    r = res['ib-port-active']
    check(r['status'] == 'fail' and 'mlx5_3' in (r['observed'] or ''), 'item 1: the DOWN RoCE rail fails (%r)' % r)
    check(res['ib-port-rate']['status'] == 'pass', 'item 1: RoCE ports at 400 are judged and pass (%r)'
          % res['ib-port-rate']['status'])
    site_profile(root, 'roce')
    r = audit(root, 'site-h100', 'ib-link-layer')['ib-link-layer']
    check(r['status'] == 'pass', 'item 1: a RoCE site passes ib-link-layer (%r)' % r['status'])
    site_profile(root, 'ib')
    r = audit(root, 'site-h100', 'ib-link-layer')['ib-link-layer']
    check(r['status'] == 'fail' and r['severity'] == 'critical' and 'roce' in (r['observed'] or ''),
          'item 1: an InfiniBand site with RoCE ports fails critical (%r)' % r)
    write(root, '/sys/class/infiniband/mlx5_5/ports/1/link_layer', 'InfiniBand\n')
    r = audit(root, 'h100-sxm-8x', 'ib-link-layer-uniform')['ib-link-layer-uniform']
    check(r['status'] == 'fail' and 'ib,roce' in (r['observed'] or ''),
          'item 1: one port in another link layer fails the uniform check (%r)' % r)


def case_item1_efa(tmp):
    """The HGX H100's adapters as AWS EFA devices (link_layer Unspecified, driver efa, 100 Gb/s each):
    recognised as EFA, not as InfiniBand ports in the wrong mode."""
    root = copy_root(tmp, 'hgx-h100')
    set_ports(root, link_layer='Unspecified', rate='100 Gb/sec (4X EDR)')
    for dev in os.listdir(os.path.join(root, 'sys/class/infiniband')):
        addr = os.path.basename(os.readlink(os.path.join(root, 'sys/class/infiniband', dev, 'device')))
        drv = os.path.join(root, 'sys/bus/pci/devices', addr, 'driver')
        target = os.readlink(drv)
        os.unlink(drv)
        os.symlink(target.replace('mlx5_core', 'efa'), drv)
    fabric_check(root, 'efa', 'Unspecified ports of the efa driver are EFA')
    rules = LINK_RULES
    res = audit(root, 'h100-sxm-8x', *rules)
    got = {r: res[r]['status'] for r in rules}
    check(got == {'ib-link-layer': 'n/a', 'ib-link-layer-uniform': 'pass', 'ib-port-active': 'pass',
                  'ib-port-rate': 'n/a'}, 'item 1: an EFA node gets no InfiniBand finding (%r)' % got)


def roce_site(root, priority):
    """A site profile of the HGX H100 on RoCE whose switches give RoCE traffic 802.1p PRIORITY."""
    write(root, '/etc/llmtune/profiles.d/site-h100.ini',
          '[profile]\nname = site-h100\ndescription = our HGX H100 on RoCE\ninherits = h100-sxm-8x\n\n'
          '[params]\nib_link_layer = roce\nroce_ecn_priority = %d\n' % priority)


def case_item1_roce_mtu(tmp):
    """tests/roots/hardware/hgx-h100-roce: the RoCE MTU is the largest IB MTU that fits the netdev's MTU
    less 96 bytes of headers (iboe_get_mtu), so mlx5_2's netdev at 1500 gives 1024 and roce-mtu warns;
    the netdev is found through GID 0 or, without one, the PCI function's net/ folder."""
    root = hw_root(tmp, 'hgx-h100-roce')
    f = facts(root, 'ib')
    got = {k: f.get('ib.mlx5_%s.port.1.%s' % k, {}).get('value') for k in
           (('2', 'netdev'), ('2', 'netdev_mtu'), ('2', 'roce_mtu'), ('0', 'roce_mtu'), ('5', 'netdev'))}
    check(got == {('2', 'netdev'): 'enp59s0np0', ('2', 'netdev_mtu'): 1500, ('2', 'roce_mtu'): 1024,
                  ('0', 'roce_mtu'): 4096, ('5', 'netdev'): 'enp172s0np0'},
          'item 1: netdevs, their MTUs and the RoCE MTUs (%r)' % got)
    check(f['ib.mlx5_5.port.1.netdev']['source'].endswith('mlx5_5/device/net'),
          'item 1: without GID 0\'s interface the function\'s net/ folder names it (%r)' % f['ib.mlx5_5.port.1.netdev'])
    for mtu, want in ((4192, 4096), (4191, 2048), (1500 + 96, 1024), (351, 0)):
        write(root, '/sys/class/net/enp25s0np0/mtu', '%d\n' % mtu)
        got = fact(root, 'ib.mlx5_0.port.1.roce_mtu').get('value')
        check(got == want, 'item 1: netdev MTU %d gives RoCE MTU %d (%r)' % (mtu, want, got))
    write(root, '/sys/class/net/enp25s0np0/mtu', '9000\n')
    r = audit(root, 'h100-sxm-8x', 'roce-mtu')['roce-mtu']
    check(r['status'] == 'fail' and r['severity'] == 'warning' and
          'ib.mlx5_2.port.1.roce_mtu = 1024 (1 of 8 items)' in (r['observed'] or ''),
          'item 1: the netdev at 1500 fails roce-mtu, naming mlx5_2 (%r)' % r)
    write(root, '/sys/class/net/enp59s0np0/mtu', '9000\n')
    r = audit(root, 'h100-sxm-8x', 'roce-mtu')['roce-mtu']
    check(r['status'] == 'pass', 'item 1: jumbo frames everywhere pass (%r)' % r['status'])
    r = audit(copy_root(tmp, 'hgx-h100'), 'h100-sxm-8x', 'roce-mtu')['roce-mtu']
    check(r['status'] == 'n/a', 'item 1: InfiniBand ports are not judged by the netdev MTU (%r)' % r['status'])


def case_item1_roce_ecn(tmp):
    """ECN (DCQCN) per priority from MLNX_OFED's ecn/roce_{np,rp}/enable/ files, judged on the site's
    priority: mlx5_4's reaction point is off; mlx5_6 has no files (inbox driver: not judged); an
    empty file (mlx5 prints nothing when the firmware query fails) is unknown, never "off"."""
    root = hw_root(tmp, 'hgx-h100-roce')
    f = facts(root, 'ib')
    got = [f.get('ib.mlx5_%d.port.1.ecn_%s_priorities' % (n, w), {}).get('value') for n, w in
           ((0, 'np'), (0, 'rp'), (4, 'np'), (4, 'rp'))]
    check(got == ['3', '3', '3', 'none'], 'item 1: ECN priorities (%r)' % got)
    check(f.get('ib.mlx5_6.port.1.ecn_rp_priorities', {}).get('status') == 'absent',
          'item 1: no ecn/ folder is absent (%r)' % f.get('ib.mlx5_6.port.1.ecn_rp_priorities'))
    r = audit(root, 'h100-sxm-8x', 'roce-ecn')['roce-ecn']
    check(r['status'] == 'n/a', 'item 1: without the site\'s priority ECN is not judged (%r)' % r['status'])
    roce_site(root, 3)
    r = audit(root, 'site-h100', 'roce-ecn')['roce-ecn']
    check(r['status'] == 'fail' and 'ib.mlx5_4.port.1.ecn_rp_priorities = none (1 of 7 items)' in (r['observed'] or ''),
          'item 1: the reaction point off on priority 3 fails, the port without ECN files is not judged (%r)' % r)
    roce_site(root, 5)
    r = audit(root, 'site-h100', 'roce-ecn')['roce-ecn']
    check(r['status'] == 'fail' and '(7 of 7 items)' in (r['observed'] or ''),
          'item 1: ECN on 3 is not ECN on the site\'s 5 (%r)' % r)
    roce_site(root, 3)
    write(root, '/sys/class/net/enp155s0np0/ecn/roce_rp/enable/3', '1\n')
    write(root, '/sys/class/net/enp25s0np0/ecn/roce_np/enable/2', '')
    f = fact(root, 'ib.mlx5_0.port.1.ecn_np_priorities')
    check(f.get('status') == 'unreadable' and 'enable/2' in (f.get('source') or ''),
          'item 1: an empty ECN file is unreadable, naming it (%r)' % f)
    r = audit(root, 'site-h100', 'roce-ecn')['roce-ecn']
    check(r['status'] == 'error', 'item 1: ECN that cannot be read is not judged off (%r)' % r)


def case_item1_roce_counters(tmp):
    """mlx5's hw_counters of a RoCE port, judged by how much they rose since the recorded reading:
    a lost packet (local_ack_timeout_err) fails roce-port-errors-growing; CNPs (congestion control at
    work) do not."""
    root = hw_root(tmp, 'hgx-h100-roce')
    f = facts(root, 'ib.mlx5_1.port.1')
    check(f.get('ib.mlx5_1.port.1.np_cnp_sent', {}).get('value') == 1520 and
          f.get('ib.mlx5_1.port.1.local_ack_timeout_err', {}).get('value') == 0,
          'item 1: hw_counters read (%r)' % {k: v.get('value') for k, v in f.items() if 'cnp' in k or 'ack' in k})
    rc, out, err = run(root, 'audit', '--profile', 'h100-sxm-8x', '--rule', 'roce-port-errors-growing',
                       '--record-counters')
    check(rc == 0 and 'not applicable' in out, 'item 1: no growth before a recorded reading (%d %r)' % (rc, out[-300:]))
    cp = '/sys/class/infiniband/mlx5_1/ports/1/hw_counters/'
    write(root, cp + 'np_cnp_sent', '9000\n')
    write(root, cp + 'rp_cnp_handled', '8000\n')
    r = audit(root, 'h100-sxm-8x', 'roce-port-errors-growing')['roce-port-errors-growing']
    check(r['status'] == 'pass', 'item 1: congestion notifications are not loss (%r)' % r)
    write(root, cp + 'local_ack_timeout_err', '4\n')
    r = audit(root, 'h100-sxm-8x', 'roce-port-errors-growing')['roce-port-errors-growing']
    check(r['status'] == 'fail' and 'ib.mlx5_1.port.1.local_ack_timeout_err_growth = 4' in (r['observed'] or ''),
          'item 1: a lost packet on mlx5_1 fails (%r)' % r)


def case_item1_roce_nccl(tmp):
    """NCCL_IB_TC, NCCL_IB_SL and NCCL_IB_GID_INDEX are the site's (its switches' QoS, the GID its fabric
    routes on): profile parameters that apply writes into the managed block of /etc/nccl.conf, where the
    audit then expects them; a GID index the profile names is not advice to remove it, one it does not
    name still is."""
    root = hw_root(tmp, 'hgx-h100-roce')
    write(root, '/etc/llmtune/profiles.d/site-h100.ini',
          '[profile]\nname = site-h100\ndescription = our HGX H100 on RoCE\ninherits = h100-sxm-8x\n\n'
          '[params]\nnccl_ib_tc = 106\nnccl_ib_sl = 3\nnccl_ib_gid_index = 3\n')
    write(root, '/etc/nccl.conf', 'NCCL_IB_GID_INDEX=5\n')
    rules = ('nccl-conf-keys', 'nccl-conf-gid-index', 'nccl-conf-advice')
    res = audit(root, 'site-h100', *rules)
    got = {r: res[r]['status'] for r in rules}
    check(got == {'nccl-conf-keys': 'fail', 'nccl-conf-gid-index': 'fail', 'nccl-conf-advice': 'pass'},
          'item 1: the site\'s TC, SL and GID index are missing, its own index 5 is not the profile\'s 3 (%r)' % got)
    rc, out, err = run(root, 'nccl', 'conf', '--profile', 'site-h100')
    block = out.split('# END llmtune managed')[0]
    for line in ('NCCL_IB_TC=106', 'NCCL_IB_SL=3', 'NCCL_IB_GID_INDEX=3'):
        check(('\n%s\n' % line) in block, 'item 1: %s in the managed block (%r)' % (line, block[-600:]))
    check('#llmtune-disabled# NCCL_IB_GID_INDEX=5' in out, 'item 1: the site\'s other index is disabled (%r)' % out[-300:])
    rc, out, err = run(root, 'apply', '--profile', 'site-h100', '--rule', 'nccl-conf-keys')
    check(rc == 0, 'item 1: apply writes /etc/nccl.conf (%d %r)' % (rc, err[-300:]))
    res = audit(root, 'site-h100', *rules)
    got = {r: res[r]['status'] for r in rules}
    check(got == dict.fromkeys(rules, 'pass'), 'item 1: after apply the site\'s values pass, not linted away (%r)' % got)
    r = audit(root, 'h100-sxm-8x', 'nccl-conf-gid-index')['nccl-conf-gid-index']
    check(r['status'] == 'fail' and 'NCCL_IB_GID_INDEX = 3' in (r['observed'] or ''),
          'item 1: an index the profile does not name still fails (%r)' % r)
    # the same index given in the profile's [nccl] section is the site's too (a profile written before
    # the parameter existed): once applied, no rule asks to remove it
    root = copy_root(tmp, 'hgx-h100', 'hgx-h100-conf')
    write(root, '/etc/llmtune/profiles.d/site-h100.ini',
          '[profile]\nname = site-h100\ndescription = our HGX H100 on RoCE\ninherits = h100-sxm-8x\n\n'
          '[nccl]\nNCCL_IB_GID_INDEX = 3\n')
    rc, out, err = run(root, 'apply', '--profile', 'site-h100', '--rule', 'nccl-conf-keys')
    check(rc == 0 and 'NCCL_IB_GID_INDEX=3' in (read(root, '/etc/nccl.conf') or ''),
          'item 1: apply writes the [nccl] index (%d %r)' % (rc, err[-300:]))
    res = audit_rc(root, 'site-h100')[1]
    got = {r: v['status'] for r, v in res.items() if r.startswith('nccl-conf')}
    check(not [r for r, v in got.items() if v not in ('pass', 'n/a')],
          'item 1: the site\'s [nccl] index fails no NCCL rule after apply (%r)' % got)


CASES = {
    'item1-roce': case_item1_roce,
    'item1-roce-nccl': case_item1_roce_nccl,
    'item1-roce-mtu': case_item1_roce_mtu,
    'item1-roce-ecn': case_item1_roce_ecn,
    'item1-roce-counters': case_item1_roce_counters,
    'item1-efa': case_item1_efa,
    'item2-h200': case_item2_h200,
    'item2-b200': case_item2_b200,
    'item2-b200-nvlink5': case_item2_b200_nvlink5,
    'nvlink-mgmt-roles': case_nvlink_mgmt_roles,
    'nvlink-mgmt-numa': case_nvlink_mgmt_numa,
    'nvlink-mgmt-baseline': case_nvlink_mgmt_baseline,
    'item3-storage-hca': case_item3_storage_hca,
    'item11-clocks': case_item11_clocks,
    'item7-fabricmanager-rpm': case_item7_fabricmanager_rpm,
    'item15-node-share': case_item15_node_share,
    'item14-capture-mismatch': case_item14_capture_mismatch,
    'item12-idle-link': case_item12_idle_link,
    'item13-mig-xid': case_item13_mig_xid,
    'item16-unknown-locality': case_item16_unknown_locality,
}


if __name__ == '__main__':
    sys.exit(adv.main(CASES))
