#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Partial and unusual trees (issue 13): the roots made from tests/roots/partial/*.desc lack the
primary source of some facts, as a snapshot tool that copies files one by one leaves them, or have
a CPU layout the shipped roots do not (a multi-die package). Each check names the class of input
it keeps fixed: the second source is used, or the fact is absent with a reason naming the missing
path, never a wrong value and never "nothing there".

    test_partial.py --llmtune BIN --roots PARTIAL_ROOTS_DIR --fixtures FIXTURE_ROOTS_DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)


def run_json(llmtune, root, *args):
    p = subprocess.run([llmtune, '--root', root] + list(args) + ['--json'], capture_output=True, text=True,
                       timeout=120)
    if p.returncode not in (0, 2, 3):
        sys.exit('%s %s: exit %d\n%s' % (root, ' '.join(args), p.returncode, p.stderr))
    return json.loads(p.stdout)


def facts(llmtune, root):
    return run_json(llmtune, root, 'facts')['facts']


def results(llmtune, root):
    return {r['rule']: r for r in run_json(llmtune, root, 'audit')['results']}


def ok(f, name, value, source=None):
    x = f.get(name, {})
    good = x.get('status') == 'ok' and x.get('value') == value and (source is None or x.get('source') == source)
    return good, '%s = %r%s (got %r)' % (name, value, ' from %s' % source if source else '', x)


def absent(f, name, *words):
    x = f.get(name, {})
    good = x.get('status') == 'absent' and all(w in x.get('reason', '') for w in words)
    return good, '%s absent, reason naming %s (got %r)' % (name, ' and '.join(map(repr, words)), x)


def dgx_partial(llmtune, root):
    f = facts(llmtune, root)
    # 13.1: no /proc/swaps, but meminfo's SwapTotal says swap is on
    check(*ok(f, 'swap.active', True, '/proc/meminfo'))
    check(*ok(f, 'swap.total', 16777212 * 1024, '/proc/meminfo'))
    check(*absent(f, 'swap.active.count', 'no /proc/swaps in this tree', 'SwapTotal'))
    # 13.3 and 13.7: no cpu/online; the cpuN directories give it, the source says so, and the PCI
    # probe's GPU placement (one CPU topology reader) still works
    check(*ok(f, 'cpu.online', '0-255'))
    check(f['cpu.online'].get('source', '').endswith('/cpu*'),
          'cpu.online names the cpuN directories as its source, not the missing file (got %r)' % f['cpu.online'])
    check(*ok(f, 'gpu.per_socket', '4,4'))
    check(*ok(f, 'gpu.sockets_used', 2))
    check(*ok(f, 'gpu.0.socket', 0))
    # 13.2: HCAs of class 0x0207 on PCI but no /sys/class/infiniband: unknown, not zero
    check(*absent(f, 'ib.count', 'RDMA devices present on PCI but not in /sys/class/infiniband', '0x0207'))
    # 13.5: no /sys/class/iommu: the mode comes from the command line (iommu=pt)
    check(*ok(f, 'iommu.mode', 'passthrough', '/proc/cmdline'))
    # 13.8: /proc/self/mounts when the /proc/mounts link was not copied
    check(*ok(f, 'mount.count', 13, '/proc/self/mounts'))
    # 13.6: second sources and reasons that say what is missing
    check(*absent(f, 'thp.enabled', 'no /sys/kernel/mm/transparent_hugepage in this tree', 'AnonHugePages'))
    check(*ok(f, 'sysctl.vm.nr_hugepages', 0, '/proc/meminfo'))
    check(f.get('module.loaded', {}).get('status') == 'ok' and 'nouveau' in f['module.loaded'].get('value', ''),
          'module.loaded from /sys/module when /proc/modules is missing (got %r)' % f.get('module.loaded'))
    unreadable = sorted(k for k, v in f.items() if v.get('status') == 'unreadable')
    check(not unreadable, 'no fact is unreadable on a partial tree (got %s)' % unreadable[:5])

    r = results(llmtune, root)
    check(r['swap-active']['status'] == 'fail', 'swap-active fails on the meminfo evidence (got %r)' % r['swap-active'])
    check(r['ib-hca-count']['status'] == 'n/a' and 'infiniband' in r['ib-hca-count'].get('reason', ''),
          'ib-hca-count cannot judge and says why (got %r)' % r['ib-hca-count'])
    check(r['memlock-login']['status'] in ('n/a', 'fail'),
          'memlock-login does not pass on unknown HCAs (got %r)' % r['memlock-login']['status'])
    check(r['pcie-iommu-mode']['status'] == 'pass', 'pcie-iommu-mode judged from the command line')
    check(r['no-nobarrier']['status'] == 'pass', 'no-nobarrier judged from /proc/self/mounts')


def multi_die(llmtune, root, threads):
    f = facts(llmtune, root)
    # 13.4: core_id repeats 0-7 in each of the 4 dies (no die_id file): 32 cores, not 8
    check(*ok(f, 'cpu.count', 32 * threads))
    check(*ok(f, 'cpu.cores', 32))
    check(*ok(f, 'cpu.threads_per_core', threads))
    check(*ok(f, 'cpu.sockets', 1))
    check(*ok(f, 'numa.nodes', 4))


def no_pci(llmtune, root, vm_nogpu):
    f = facts(llmtune, root)
    # 13.8: no PCI data at all is "unknown", a PCI tree without a GPU is 0
    for name in ('gpu.count', 'gpu.nvidia_count', 'gpu.balanced', 'gpu.ram_per_gpu'):
        check(*absent(f, name, 'no /sys/bus/pci/devices'))
    check(*ok(facts(llmtune, vm_nogpu), 'gpu.count', 0, '/sys/bus/pci/devices'))
    # 13.2: no mount table at all is not "no filesystem with nobarrier"
    check(f.get('mount.count', {}).get('status') == 'absent', 'mount.count absent without a mount table')
    r = results(llmtune, root)
    check(r['no-nobarrier']['status'] == 'n/a', 'no-nobarrier is n/a, not pass, without a mount table (got %r)'
          % r['no-nobarrier'])


# --- unreadable is never "nothing there" (issue 14 item 2) ----------------------------------------
# Each source below is made present but unreadable: a directory in place of a file (EISDIR) or a
# link to itself in place of a directory (ELOOP); root reads through permissions, so modes would not
# do. The facts it feeds must be unreadable and name it, not a default, 0, "not set" or absent.

def fact(llmtune, root, name):
    p = subprocess.run([llmtune, '--root', root, 'facts', name, '--json'], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:  # no such fact: the check that wanted it fails, and says what came instead
        return {'exit': p.returncode, 'stderr': p.stderr.strip()}
    return json.loads(p.stdout)['facts'].get(name, {})


def ok_now(llmtune, root, name, value, source):
    return ok({name: fact(llmtune, root, name)}, name, value, source)


def unreadable(llmtune, root, name, source, *words):
    x = fact(llmtune, root, name)
    good = x.get('status') == 'unreadable' and x.get('source') == source and all(w in x.get('reason', '')
                                                                                 for w in words)
    return good, '%s unreadable from %s%s (got %r)' % (name, source, ' naming %s' % (words,) if words else '', x)


class Broken:
    """PATH under ROOT unreadable for a while: a directory (kind 'dir') or a self link ('loop') in
    its place; what was there is put back afterwards."""

    def __init__(self, root, path, kind):
        self.h = os.path.join(root, path.lstrip('/'))
        self.kind = kind

    def __enter__(self):
        self.saved = self.h + '.saved'
        if os.path.lexists(self.h):
            os.rename(self.h, self.saved)
        os.makedirs(os.path.dirname(self.h), exist_ok=True)
        if self.kind == 'dir':
            os.mkdir(self.h)
        else:
            os.symlink(os.path.basename(self.h), self.h)
        return self

    def __exit__(self, *exc):
        if os.path.isdir(self.h) and not os.path.islink(self.h):
            os.rmdir(self.h)
        else:
            os.remove(self.h)
        if os.path.lexists(self.saved):
            os.rename(self.saved, self.h)


def write(root, path, text):
    h = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(h), exist_ok=True)
    with open(h, 'w') as f:
        f.write(text)


def unreadable_sources(llmtune, root):
    # limits: the memlock decision never falls back to a default past a file it could not read
    with Broken(root, '/etc/security/limits.conf', 'dir'):
        for n in ('limits.memlock.login.soft', 'limits.memlock.root.hard'):
            check(*unreadable(llmtune, root, n, '/etc/security/limits.conf', 'EISDIR'))
        check(fact(llmtune, root, 'limits.memlock.service.soft').get('status') == 'ok',
              'limits.conf does not decide the services\' limit (still ok)')
    with Broken(root, '/etc/security/limits.d/zz-site.conf', 'dir'):
        check(*unreadable(llmtune, root, 'limits.memlock.login.hard', '/etc/security/limits.d/zz-site.conf'))
    with Broken(root, '/etc/security/limits.d', 'loop'):
        check(*unreadable(llmtune, root, 'limits.memlock.root.soft', '/etc/security/limits.d', 'ELOOP'))
    with Broken(root, '/etc/systemd/system.conf', 'dir'):
        for n in ('limits.memlock.service.hard', 'limits.memlock.login.soft'):
            check(*unreadable(llmtune, root, n, '/etc/systemd/system.conf', 'EISDIR'))
    with Broken(root, '/run/systemd/system.conf.d', 'loop'):
        check(*unreadable(llmtune, root, 'limits.memlock.service.soft', '/run/systemd/system.conf.d', 'ELOOP'))
    write(root, '/etc/security/limits.conf', '*  -  memlock  unlimited\n')
    with Broken(root, '/etc/systemd/system.conf', 'dir'):
        # a line of its own decides the session's limit whatever the services' is
        check(*ok_now(llmtune, root, 'limits.memlock.login.soft', 'unlimited', '/etc/security/limits.conf:1'))
    os.remove(os.path.join(root, 'etc/security/limits.conf'))

    # services: a .wants directory, a udev rules directory or file, a unit directory
    write(root, '/etc/systemd/system/multi-user.target.wants/sshd.service', '')
    check(fact(llmtune, root, 'service.foo.enabled').get('value') is False, 'service.foo.enabled false (control)')
    with Broken(root, '/etc/systemd/system/graphical.target.wants', 'loop'):
        check(*unreadable(llmtune, root, 'service.foo.enabled', '/etc/systemd/system/graphical.target.wants',
                          'ELOOP'))
        check(fact(llmtune, root, 'service.sshd.enabled').get('value') is True,
              'a unit found enabled stays enabled next to a directory that cannot be listed')
    with Broken(root, '/etc/udev/rules.d/99-site.rules', 'dir'):
        check(*unreadable(llmtune, root, 'service.foo.enabled', '/etc/udev/rules.d/99-site.rules', 'EISDIR'))
    with Broken(root, '/usr/lib/udev/rules.d', 'loop'):
        check(*unreadable(llmtune, root, 'service.foo.enabled', '/usr/lib/udev/rules.d', 'ELOOP'))
    with Broken(root, '/run/systemd/system', 'loop'):
        check(*unreadable(llmtune, root, 'service.foo.installed', '/run/systemd/system/foo.service', 'ELOOP'))
        check(fact(llmtune, root, 'fabricmanager.version').get('status') == 'unreadable',
              'fabric manager: a unit directory that cannot be read is not "not installed" (got %r)'
              % fact(llmtune, root, 'fabricmanager.version'))

    # boot: os-release precedence, the modprobe.d listing behind initramfs staleness
    with Broken(root, '/etc/os-release', 'dir'):
        check(*unreadable(llmtune, root, 'os.id', '/etc/os-release', 'EISDIR'))
    rel = fact(llmtune, root, 'kernel.release').get('value')
    write(root, '/boot/initrd.img-%s' % rel, '')
    check(fact(llmtune, root, 'boot.initramfs.stale').get('status') == 'ok', 'boot.initramfs.stale ok (control)')
    with Broken(root, '/etc/modprobe.d', 'loop'):
        check(*unreadable(llmtune, root, 'boot.initramfs.stale', '/etc/modprobe.d', 'ELOOP'))

    # kernel: the command line, the release's two sources, /sys/module without /proc/modules
    with Broken(root, '/proc/cmdline', 'dir'):
        for n in ('kernel.cmdline.module_blacklist', 'modprobe.nouveau.blacklisted', 'modprobe.nouveau.options'):
            check(*unreadable(llmtune, root, n, '/proc/cmdline', 'EISDIR'))
    with Broken(root, '/proc/sys/kernel/osrelease', 'dir'):
        check(*ok_now(llmtune, root, 'kernel.release', rel, '/proc/version'))
        with Broken(root, '/proc/version', 'dir'):
            check(*unreadable(llmtune, root, 'kernel.release', '/proc/sys/kernel/osrelease', 'EISDIR'))
    check(not os.path.lexists(os.path.join(root, 'proc/modules')), 'vm-nogpu has no /proc/modules')
    with Broken(root, '/sys/module', 'loop'):
        check(*unreadable(llmtune, root, 'module.loaded', '/sys/module', 'ELOOP'))

    # md arrays: an md/ directory that cannot be looked at is an array with unreadable members, not
    # no array; slaves/ is not read in its place; no /sys/block listing and no mdstat is not "0 arrays"
    write(root, '/sys/block/md0/slaves/nvme0n1', '')
    with Broken(root, '/sys/block/md0/md', 'loop'):
        check(*ok_now(llmtune, root, 'md.count', 1, '/sys/block'))
        check(*unreadable(llmtune, root, 'md.md0.members', '/sys/block/md0/md', 'ELOOP'))
    write(root, '/sys/block/md0/md/level', 'raid0\n')
    check(*ok_now(llmtune, root, 'md.md0.members', 'nvme0n1', '/sys/block/md0/slaves'))
    with Broken(root, '/sys/block/md0/slaves', 'loop'):
        check(*unreadable(llmtune, root, 'md.md0.members', '/sys/block/md0/slaves', 'ELOOP'))
    with Broken(root, '/sys/block/md0/md/array_state', 'loop'):
        check(*unreadable(llmtune, root, 'md.md0.state', '/sys/block/md0/md/array_state', 'ELOOP'))
    os.rename(os.path.join(root, 'proc/mdstat'), os.path.join(root, 'proc/mdstat.saved'))
    with Broken(root, '/sys/block', 'loop'):
        check(*unreadable(llmtune, root, 'md.count', '/sys/block', 'ELOOP'))
    os.rename(os.path.join(root, 'proc/mdstat.saved'), os.path.join(root, 'proc/mdstat'))
    shutil.rmtree(os.path.join(root, 'sys/block'))

    # systemd-gpt-auto: a command line that may turn it off, a udev database that cannot be read
    check(fact(llmtune, root, 'swap.gpt_auto.count').get('status') == 'absent', 'no /run/udev/data: absent (control)')
    with Broken(root, '/run/udev/data', 'loop'):
        check(*unreadable(llmtune, root, 'swap.gpt_auto.count', '/run/udev/data', 'ELOOP'))
    os.makedirs(os.path.join(root, 'run/udev/data'))
    with Broken(root, '/proc/cmdline', 'dir'):
        check(*unreadable(llmtune, root, 'swap.gpt_auto.devices', '/proc/cmdline', 'EISDIR'))

    # NCCL: the homes' ~/.nccl.conf when /home cannot be listed
    check(*ok_now(llmtune, root, 'nccl.user_conf.files', 'none', '/root, /home'))
    with Broken(root, '/home', 'loop'):
        for n in ('nccl.user_conf.files', 'nccl.user_conf.problems'):
            check(*unreadable(llmtune, root, n, '/home', 'ELOOP'))
        p = subprocess.run([llmtune, '--root', root, 'nccl', 'lint'], capture_output=True, text=True, timeout=60)
        check(p.returncode not in (0, 2) and '/home' in p.stderr,
              'nccl lint: a /home that cannot be listed is an error naming it, not "no NCCL configuration file" '
              '(exit %d, %r)' % (p.returncode, p.stderr + p.stdout))

    # IOMMU: groups that cannot be listed or read leave the mode unknown, not "not exported"
    os.makedirs(os.path.join(root, 'sys/class/iommu/dmar0'))
    write(root, '/sys/kernel/iommu_groups/0/type', 'DMA-FQ\n')
    check(*ok_now(llmtune, root, 'iommu.mode', 'translated', '/sys/kernel/iommu_groups/0/type'))
    with Broken(root, '/sys/kernel/iommu_groups/0/type', 'dir'):
        check(*unreadable(llmtune, root, 'iommu.mode', '/sys/kernel/iommu_groups/0/type', 'EISDIR'))
    with Broken(root, '/sys/kernel/iommu_groups', 'loop'):
        check(*unreadable(llmtune, root, 'iommu.mode', '/sys/kernel/iommu_groups', 'ELOOP'))
    shutil.rmtree(os.path.join(root, 'sys/class/iommu'))
    shutil.rmtree(os.path.join(root, 'sys/kernel/iommu_groups'))

    # the boot default of numa_balancing depends on the command line
    check(fact(llmtune, root, 'sysctl.persistent.kernel.numa_balancing').get('status') == 'ok',
          'sysctl.persistent.kernel.numa_balancing: the kernel default (control)')
    with Broken(root, '/proc/cmdline', 'dir'):
        check(*unreadable(llmtune, root, 'sysctl.persistent.kernel.numa_balancing', '/proc/cmdline', 'EISDIR'))

    # NUMA: a node whose cpulist cannot be read is not a memory-only node; a CPU-less node is not
    # "memory-only" when the driver's GPU list cannot be read
    node = '/sys/devices/system/node'
    check(*ok_now(llmtune, root, 'numa.node.0.kind', 'cpu', node))
    with Broken(root, node + '/node0/cpulist', 'dir'):
        check(*unreadable(llmtune, root, 'numa.node.0.kind', node + '/node0/cpulist', 'EISDIR'))
        check(*unreadable(llmtune, root, 'numa.cpu_nodes', node + '/node0/cpulist', 'EISDIR'))
    write(root, node + '/node1/cpulist', '\n')
    check(*ok_now(llmtune, root, 'numa.node.1.kind', 'memory-only', node))
    os.makedirs(os.path.join(root, 'proc/driver/nvidia'))
    with Broken(root, '/proc/driver/nvidia/gpus', 'loop'):
        check(*unreadable(llmtune, root, 'numa.node.1.kind', '/proc/driver/nvidia/gpus', 'ELOOP'))
    shutil.rmtree(os.path.join(root, 'proc/driver/nvidia'))
    shutil.rmtree(os.path.join(root, node.lstrip('/') + '/node1'))

    # CPUs: a cpufreq directory that cannot be listed is not "0 policies"; without cpu/online, a
    # CPU whose online file cannot be read is not counted online
    cpu = '/sys/devices/system/cpu'
    check(*ok_now(llmtune, root, 'cpu.cpufreq.policies', 0, cpu + '/cpufreq'))
    with Broken(root, cpu + '/cpufreq', 'loop'):
        for n in ('cpu.cpufreq.policies', 'cpu.cpufreq.driver'):
            check(*unreadable(llmtune, root, n, cpu + '/cpufreq', 'ELOOP'))
    os.rename(os.path.join(root, cpu.lstrip('/'), 'online'), os.path.join(root, cpu.lstrip('/'), 'online.saved'))
    check(*ok_now(llmtune, root, 'cpu.online', '0-1', cpu + '/cpu*'))
    with Broken(root, cpu + '/cpu1/online', 'dir'):
        check(*unreadable(llmtune, root, 'cpu.online', cpu + '/cpu*', 'EISDIR'))
    os.rename(os.path.join(root, cpu.lstrip('/'), 'online.saved'), os.path.join(root, cpu.lstrip('/'), 'online'))

    # AER: a device whose class cannot be read may be one AER matters for (a GPU, NIC, NVMe drive)
    check(*ok_now(llmtune, root, 'aer.count', 0, '/sys/bus/pci/devices'))
    cls = '/sys/devices/pci0000:00/0000:00:02.0/class'
    with Broken(root, cls, 'dir'):
        for n in ('aer.count', 'aer.fatal_devices'):
            check(*unreadable(llmtune, root, n, '/sys/bus/pci/devices/0000:00:02.0/class', 'EISDIR'))

    # site profiles: an /etc/llmtune/profiles.d that cannot be listed is an error, not "no site profiles"
    with Broken(root, '/etc/llmtune/profiles.d', 'loop'):
        p = subprocess.run([llmtune, '--root', root, 'profiles'], capture_output=True, text=True, timeout=60)
        check(p.returncode != 0 and '/etc/llmtune/profiles.d' in p.stderr,
              'profiles: an unlistable profiles.d is an error naming it (exit %d, %r)' % (p.returncode, p.stderr))


def plan_unreadable_target(llmtune, root):
    """A file the plan would write that is there but cannot be read is left alone with a note,
    not planned as a new file (apply would replace what it holds; rollback would remove it)."""
    target = '/etc/modprobe.d/llmtune-blacklist-nouveau.conf'
    with Broken(root, target, 'dir'):
        changes = run_json(llmtune, root, 'plan', '--profile', 'base', '--rule', 'nouveau-blacklisted')['changes']
        files = [c for c in changes if c['type'] == 'file' and c['target'] == target]
        notes = [c.get('text', '') for c in changes if c['type'] == 'note']
        check(not files and any(target in n and 'EISDIR' in n for n in notes),
              'plan: %s unreadable: no change of it, a note naming it (got %r)' % (target, changes))
    changes = run_json(llmtune, root, 'plan', '--profile', 'base', '--rule', 'nouveau-blacklisted')['changes']
    check(any(c['type'] == 'file' and c['target'] == target and c.get('before') is None for c in changes),
          'plan: without it, the file is planned as new (control)')


def pci_unreadable_config(llmtune, root):
    """A bridge's config space that is there but cannot be read makes the GPU's ACS fact unreadable
    naming it, not absent."""
    cfg = '/sys/bus/pci/devices/0000:02:00.0/config'
    check(fact(llmtune, root, 'gpu.0.acs_redirect').get('status') == 'ok', 'gpu.0.acs_redirect ok (control)')
    with Broken(root, cfg, 'dir'):
        check(*unreadable(llmtune, root, 'gpu.0.acs_redirect', cfg, 'EISDIR'))


def conf_present_unreadable(llmtune, root):
    """A configuration file that is there but cannot be read is not a file that is not there: its
    .present fact is unreadable naming it (gpu-affinity.conf's was missing altogether, so a rule
    asking for it saw no such fact; nccl.conf's was unreadable already, now through the same
    reader)."""
    for name, conf, there in (('affinity.conf.present', '/etc/llmtune/gpu-affinity.conf', False),
                              ('nccl.conf.present', '/etc/nccl.conf', True)):
        check(*ok_now(llmtune, root, name, there, conf))
        with Broken(root, conf, 'dir'):
            check(*unreadable(llmtune, root, name, conf, 'EISDIR'))
    with Broken(root, '/etc/llmtune/gpu-affinity.conf', 'dir'):
        check(*unreadable(llmtune, root, 'affinity.conf.current', '/etc/llmtune/gpu-affinity.conf', 'EISDIR'))


def vpd_unreadable_before_nvlink5(llmtune, root):
    """A ConnectX function's VPD that cannot be read (root's only: every unprivileged run) says nothing
    about an A100 box: NVLink switch management bridges exist only with NVLink 5 GPUs, so the HCAs
    are still counted, none is taken for a bridge, and the NVLink 5 rules do not apply (before, both
    ib.hca_count and nvswitch.bridge_count were unreadable, and driver-nvlsm an error)."""
    vpd = '/sys/bus/pci/devices/0000:0c:00.0/vpd'
    with Broken(root, vpd, 'dir'):
        check(*ok_now(llmtune, root, 'ib.hca_count', 8, '/sys/class/infiniband'))
        check(*ok_now(llmtune, root, 'ib.mlx5_0.nvlink_bridge', False, vpd))
        check(*ok_now(llmtune, root, 'ib.mlx5_0.port.1.role', 'compute', None))
        check(*ok_now(llmtune, root, 'nvswitch.bridge_count', 0, None))
        check(*ok_now(llmtune, root, 'nvswitch.present', True, None))
        res = {r['rule']: r for r in run_json(llmtune, root, 'audit', '--profile', 'a100-8x')['results']}
        check(all(res[r]['status'] == 'n/a' for r in ('driver-nvlsm', 'driver-nvlsm-umad')),
              'driver-nvlsm and driver-nvlsm-umad n/a (got %r)' % [(r, res[r]['status']) for r in
                                                                   ('driver-nvlsm', 'driver-nvlsm-umad')])


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True, help='directory with the roots of tests/roots/partial/*.desc')
    ap.add_argument('--fixtures', required=True, help='directory with the fixture roots (vm-nogpu)')
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix='llmtune-partial-')
    try:
        def copy(base, name, as_name=None):
            # read-only commands only, but tests work on copies all the same
            dst = os.path.join(work, as_name or name)
            shutil.copytree(os.path.join(base, name), dst, symlinks=True)
            return dst
        dgx_partial(a.llmtune, copy(a.roots, 'dgx-a100-partial'))
        multi_die(a.llmtune, copy(a.roots, 'tr-2990wx'), 2)
        multi_die(a.llmtune, copy(a.roots, 'tr-2990wx-smtoff'), 1)
        no_pci(a.llmtune, copy(a.roots, 'vm-nopci'), copy(a.fixtures, 'vm-nogpu'))
        unreadable_sources(a.llmtune, copy(a.fixtures, 'vm-nogpu', 'vm-nogpu-unreadable'))
        dgx = copy(a.fixtures, 'dgx-a100')
        plan_unreadable_target(a.llmtune, dgx)
        pci_unreadable_config(a.llmtune, dgx)
        conf_present_unreadable(a.llmtune, dgx)
        vpd_unreadable_before_nvlink5(a.llmtune, dgx)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return finish()


if __name__ == '__main__':
    sys.exit(main())
