#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Advice that is right on real distributions (issue 12): each case copies a built fixture root,
changes what a real machine would have (a line appended to /etc/sysctl.conf, a vendor sysctl.d
file, an XFS made without alignment, ...), then runs audit / plan / apply / rollback on the copy
and checks the specific fact the item is about.

    test_advice.py --llmtune BIN --roots DIR [CASE...]

Exit 0 when every case passes, 1 otherwise. Each case is named after its issue item.
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

BIN = None
ROOTS = None


def run(root, *args):
    e = dict(os.environ, NO_COLOR='1', LC_ALL='C')
    p = subprocess.run([BIN, '--root', root, *args], capture_output=True, text=True, env=e, timeout=120)
    return p.returncode, p.stdout, p.stderr


def audit(root, profile, *rules):
    args = ['audit', '--json', '--profile', profile]
    for r in rules:
        args += ['--rule', r]
    rc, out, err = run(root, *args)
    if rc not in (0, 2, 3):
        raise RuntimeError('audit exit %d: %s' % (rc, err))
    return {r['rule']: r for r in json.loads(out)['results']}


def fact(root, name):
    rc, out, err = run(root, 'facts', '--json', name)
    return json.loads(out)['facts'].get(name, {}) if rc == 0 else {}


def copy_root(tmp, name, as_name=None):
    dst = os.path.join(tmp, as_name or name)
    shutil.copytree(os.path.join(ROOTS, name), dst, symlinks=True)
    return dst


def write(root, path, content, mode=0o644):
    h = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(h), exist_ok=True)
    with open(h, 'w') as f:
        f.write(content)
    os.chmod(h, mode)


def read(root, path):
    h = os.path.join(root, path.lstrip('/'))
    if not os.path.lexists(h):
        return None
    with open(h) as f:
        return f.read()


# --- item 1: sysctl.d / sysctl.conf overrides ------------------------------------------------------

def case_item1_sysctl_override(tmp):
    """A key appended to /etc/sysctl.conf (read last, through 99-sysctl.conf) and a vendor file in
    /usr/lib/sysctl.d beat an earlier drop-in: the audit says so although the runtime value is right,
    apply neutralises both behind the marker, rollback restores them."""
    root = copy_root(tmp, 'hgx-h100')
    conf_before = read(root, '/etc/sysctl.conf') + 'kernel.numa_balancing=1\n'
    write(root, '/etc/sysctl.conf', conf_before)
    write(root, '/usr/lib/sysctl.d/95-vendor.conf', 'kernel.numa_balancing = 1\nkernel.pid_max = 4194304\n')
    f = fact(root, 'sysctl.persistent.kernel.numa_balancing')
    check(f.get('value') == 1 and f.get('source') == '/etc/sysctl.d/99-sysctl.conf',
          'item 1: persistent numa_balancing is 1 from /etc/sysctl.d/99-sysctl.conf (got %r)' % f)
    res = audit(root, 'h100-sxm-8x', 'numa-balancing', 'numa-balancing-persistent')
    check(res['numa-balancing']['status'] == 'pass', 'item 1: runtime numa_balancing passes')
    check(res['numa-balancing-persistent']['status'] == 'fail',
          'item 1: numa-balancing-persistent fails though the runtime value is right')
    rc, out, err = run(root, 'apply', '--profile', 'h100-sxm-8x', '--rule', 'numa-balancing-persistent')
    check(rc == 0, 'item 1: apply exits 0 (%s)' % err.strip())
    check('#llmtune-disabled# kernel.numa_balancing=1\n' in (read(root, '/etc/sysctl.conf') or ''),
          'item 1: the /etc/sysctl.conf line is commented behind the marker, not deleted')
    shadow = read(root, '/etc/sysctl.d/95-vendor.conf') or ''
    check('#llmtune-disabled# kernel.numa_balancing = 1' in shadow and '\nkernel.pid_max = 4194304' in shadow,
          'item 1: /usr/lib/sysctl.d/95-vendor.conf is shadowed by an /etc copy with only that line disabled')
    check(read(root, '/usr/lib/sysctl.d/95-vendor.conf') == 'kernel.numa_balancing = 1\nkernel.pid_max = 4194304\n',
          'item 1: the vendor file itself is untouched')
    check(os.path.islink(os.path.join(root, 'etc/sysctl.d/99-sysctl.conf')), 'item 1: 99-sysctl.conf is still a link')
    f = fact(root, 'sysctl.persistent.kernel.numa_balancing')
    check(f.get('value') == 0, 'item 1: after apply the boot value is 0 (%r)' % f)
    res = audit(root, 'h100-sxm-8x', 'numa-balancing-persistent')
    check(res['numa-balancing-persistent']['status'] == 'pass', 'item 1: numa-balancing-persistent passes after apply')
    rc, out, err = run(root, 'rollback', '--last-run')
    check(rc == 0, 'item 1: rollback exits 0 (%s)' % err.strip())
    check(read(root, '/etc/sysctl.conf') == conf_before, 'item 1: rollback restores /etc/sysctl.conf')
    check(read(root, '/etc/sysctl.d/95-vendor.conf') is None, 'item 1: rollback removes the shadow copy')


def case_item13_shmmax_default(tmp):
    """shmmax lowered by a sysctl.d line: the fix disables that line and restores the kernel default at
    runtime; it never writes a fixed 64 GiB."""
    root = copy_root(tmp, 'hgx-h100')
    write(root, '/etc/sysctl.d/50-shm.conf', '# from a tuning guide\nkernel.shmmax = 1073741824\n')
    write(root, '/proc/sys/kernel/shmmax', '1073741824\n')
    res = audit(root, 'h100-sxm-8x', 'shmmax-minimum', 'shmmax-persistent')
    check(res['shmmax-minimum']['status'] == 'fail', 'item 13: shmmax 1 GiB fails the minimum')
    check(res['shmmax-persistent']['status'] == 'fail', 'item 13: the 1 GiB line fails shmmax-persistent')
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'shmmax-minimum', '--rule', 'shmmax-persistent')
    check('68719476736' not in out, 'item 13: the plan writes no fixed 64 GiB')
    rc, out, err = run(root, 'apply', '--profile', 'h100-sxm-8x', '--rule', 'shmmax-minimum', '--rule', 'shmmax-persistent')
    check(rc == 0, 'item 13: apply exits 0 (%s)' % err.strip())
    check((read(root, '/proc/sys/kernel/shmmax') or '').strip() == '18446744073692774399',
          'item 13: runtime shmmax is the kernel default again')
    check('#llmtune-disabled# kernel.shmmax = 1073741824' in (read(root, '/etc/sysctl.d/50-shm.conf') or ''),
          'item 13: the lowering line is disabled behind the marker')
    check(not any(n.startswith('90-llmtune-shm') for n in os.listdir(os.path.join(root, 'etc/sysctl.d'))),
          'item 13: no llmtune shmmax drop-in is written')
    res = audit(root, 'h100-sxm-8x', 'shmmax-minimum', 'shmmax-persistent')
    check(res['shmmax-minimum']['status'] == 'pass' and res['shmmax-persistent']['status'] == 'pass',
          'item 13: both shmmax rules pass after apply')
    rc, out, err = run(root, 'explain', 'shmmax-minimum')
    check('/dev/shm' in out and 'SysV' in out, 'item 13: the rationale says NCCL uses /dev/shm, not SysV')


# --- item 4: XFS alignment -------------------------------------------------------------------------

def set_xfs_geometry(root, sunit, swidth, agblocks):
    """Rewrite sb_unit, sb_width (filesystem blocks) and sb_agblocks of the fixture's XFS image."""
    import struct
    h = os.path.join(root, 'dev/md0')
    with open(h, 'r+b') as f:
        f.seek(0x54)
        f.write(struct.pack('>I', agblocks))
        f.seek(0xb8)
        f.write(struct.pack('>II', sunit, swidth))


def xfs_plan(root):
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'raid-xfs-alignment')
    return out + err


def case_item4_xfs_alignment(tmp):
    """The XFS fix is computed from the array (8 x 512 KiB chunks, 4 KiB blocks): mount options only on
    a filesystem made with a stripe unit and for a power-of-2 increase that divides the allocation
    group, as a full unmount; otherwise backup + mkfs.xfs -d su=512k,sw=8. Never placeholders."""
    root = copy_root(tmp, 'hgx-h100')
    res = audit(root, 'h100-sxm-8x', 'raid-xfs-alignment')
    check(res['raid-xfs-alignment']['status'] == 'pass', 'item 4: the aligned fixture passes')
    # made without alignment: no mount options, ever
    set_xfs_geometry(root, 0, 0, 128000)
    res = audit(root, 'h100-sxm-8x', 'raid-xfs-alignment')
    check(res['raid-xfs-alignment']['status'] == 'fail', 'item 4: sunit=0 fails')
    out = xfs_plan(root)
    check('sunit=0' in out and 'mkfs.xfs -f -d su=512k,sw=8 /dev/md0' in out,
          'item 4: sunit=0 gets backup + mkfs.xfs -d su=512k,sw=8')
    check('CHUNK' not in out and 'DISKS' not in out and 'sunit=1024' not in out,
          'item 4: no placeholder and no mount option for a filesystem made without alignment')
    fstab = read(root, '/etc/fstab')
    rc, o, err = run(root, 'apply', '--profile', 'h100-sxm-8x', '--rule', 'raid-xfs-alignment')
    check(rc == 0 and read(root, '/etc/fstab') == fstab, 'item 4: apply never writes sunit/swidth into fstab')
    # a power-of-2 increase (64 -> 128 blocks) that divides the allocation group: full unmount + options
    set_xfs_geometry(root, 64, 512, 128000)
    out = xfs_plan(root)
    check('sunit=1024,swidth=8192' in out and 'umount /raid && mount /raid' in out and 'not a remount' in out,
          'item 4: sunit 64 -> 128 blocks proposes sunit=1024,swidth=8192 with a full unmount')
    # an increase that is not a power-of-2 multiple (96 -> 128): mkfs only
    set_xfs_geometry(root, 96, 768, 128000)
    out = xfs_plan(root)
    check('mkfs.xfs -f -d su=512k,sw=8' in out and 'sunit=1024' not in out,
          'item 4: sunit 96 -> 128 (not a power-of-2 multiple) gets mkfs only')
    # a valid ratio that does not divide the allocation group: mkfs only
    set_xfs_geometry(root, 64, 512, 128000 + 64)
    out = xfs_plan(root)
    check('mkfs.xfs' in out and 'sunit=1024' not in out, 'item 4: sunit not dividing agblocks gets mkfs only')


def case_i29_item5_xfs_reshaped(tmp):
    """Issue 29 item 5: an array reshaped from 4 to 8 disks keeps its stripe unit; only the width is stale.
    Documentation/admin-guide/xfs.rst: swidth may be any integer multiple of sunit, and reshaping is what
    the mount options are for. So the fix is sunit=,swidth= at a full unmount, never mkfs; mkfs only where
    the options cannot work (a smaller stripe unit than mkfs set)."""
    root = copy_root(tmp, 'hgx-h100')
    set_xfs_geometry(root, 128, 512, 128000)   # 512 KiB chunk, width for 4 data disks; the array has 8
    res = audit(root, 'h100-sxm-8x', 'raid-xfs-alignment')
    check(res['raid-xfs-alignment']['status'] == 'fail', 'item 5: a stale swidth fails raid-xfs-alignment')
    out = xfs_plan(root)
    check('sunit=1024,swidth=8192' in out and 'umount /raid && mount /raid' in out,
          'item 5: a stale swidth gets sunit=1024,swidth=8192 at a full unmount (%s)' % out.strip()[-400:])
    check('mkfs.xfs -f' not in out and 'power-of-2' not in out,
          'item 5: no mkfs and no "power-of-2" message when only the width is stale')
    set_xfs_geometry(root, 256, 2048, 128000)  # made for 1 MiB chunks: the unit would have to shrink
    out = xfs_plan(root)
    check('mkfs.xfs -f -d su=512k,sw=8 /dev/md0' in out and 'smaller than the 256 mkfs set' in out
          and 'sunit=1024' not in out,
          'item 5: a stripe unit that would have to shrink gets mkfs, with that reason (%s)' % out.strip()[-300:])


SLURM_CONF = """# slurm.conf file generated by configurator.html.
ClusterName=gpu
SlurmctldHost=head01
ProctrackType=proctrack/cgroup
#PropagateResourceLimitsExcept=MEMLOCK
TaskPlugin=task/cgroup,task/affinity
NodeName=gpu[01-64] CPUs=224 RealMemory=2000000 Gres=gpu:8 State=UNKNOWN
PartitionName=batch Nodes=gpu[01-64] Default=YES MaxTime=INFINITE State=UP
"""


def case_i29_item10_slurm_memlock(tmp):
    """Issue 29 item 10: without PropagateResourceLimitsExcept=MEMLOCK (or a PropagateResourceLimits that
    leaves MEMLOCK out), Slurm jobs run with the submit host's RLIMIT_MEMLOCK (slurm.conf(5)); the rule
    applies only where slurm.conf is present."""
    root = copy_root(tmp, 'hgx-h100')
    rule = 'memlock-slurm-propagation'
    res = audit(root, 'h100-sxm-8x', rule)
    check(res[rule]['status'] == 'n/a', 'item 10: no slurm.conf: not applicable')
    write(root, '/etc/slurm/slurm.conf', SLURM_CONF)
    res = audit(root, 'h100-sxm-8x', rule)
    check(res[rule]['status'] == 'fail' and res[rule]['severity'] == 'warning',
          'item 10: the default (ALL, the commented line does not count) fails (%r)' % res[rule].get('observed'))
    write(root, '/etc/slurm/slurm.conf', SLURM_CONF + 'propagateresourcelimitsexcept=NOFILE,MEMLOCK\n')
    res = audit(root, 'h100-sxm-8x', rule)
    check(res[rule]['status'] == 'pass', 'item 10: PropagateResourceLimitsExcept naming MEMLOCK passes (any case)')
    write(root, '/etc/slurm/slurm.conf', SLURM_CONF + 'PropagateResourceLimits=NOFILE,STACK\n')
    res = audit(root, 'h100-sxm-8x', rule)
    check(res[rule]['status'] == 'pass', 'item 10: PropagateResourceLimits without MEMLOCK passes')
    write(root, '/etc/slurm/slurm.conf', SLURM_CONF + 'PropagateResourceLimits=ALL\nInclude limits.conf\n')
    write(root, '/etc/slurm/limits.conf', 'PropagateResourceLimitsExcept=MEMLOCK\n')
    res = audit(root, 'h100-sxm-8x', rule)
    check(res[rule]['status'] == 'pass', 'item 10: an Except in an included file decides over PropagateResourceLimits')
    write(root, '/etc/slurm/limits.conf', 'PropagateResourceLimitsExcept=MEMLOK\n')
    res = audit(root, 'h100-sxm-8x', rule)
    check(res[rule]['status'] == 'error', 'item 10: a limit name Slurm refuses cannot be judged')
    os.unlink(os.path.join(root, 'etc/slurm/limits.conf'))
    res = audit(root, 'h100-sxm-8x', rule)
    check(res[rule]['status'] == 'error', 'item 10: a missing Include cannot be judged (slurmctld refuses it too)')
    write(root, '/etc/slurm/slurm.conf', SLURM_CONF)
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', rule)
    check('PropagateResourceLimitsExcept=MEMLOCK' in out and 'scontrol reconfigure' in out,
          'item 10: the plan names PropagateResourceLimitsExcept=MEMLOCK and scontrol reconfigure')


THP_PATH = '/sys/kernel/mm/transparent_hugepage/enabled'
GOV_CPU_GLOB = '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor'
GOV_POLICY_GLOB = '/sys/devices/system/cpu/cpufreq/policy*/scaling_governor'


def case_i29_item4_tmpfiles(tmp):
    """Issue 29 item 4, tmpfiles.d(5): for one path the lexicographically earliest file wins and later
    lines for it are dropped; lines with other paths that reach the same file (the governor's cpu* and
    policy* globs) are all written, the later path last. A site's disable-thp.conf writing never beats
    llmtune-thp-enabled.conf: audit judges the value at the next boot, and apply disables the line that
    beats its own."""
    root = copy_root(tmp, 'hgx-h100')
    write(root, '/etc/tmpfiles.d/disable-thp.conf', 'w %s - - - - never\n' % THP_PATH)
    write(root, THP_PATH, 'always [madvise] never\n')
    f = fact(root, 'thp.persistent.enabled')
    check(f.get('value') == 'never' and f.get('source') == '/etc/tmpfiles.d/disable-thp.conf:1',
          'item 4: the boot value of THP is never, from disable-thp.conf (%r)' % f)
    res = audit(root, 'h100-sxm-8x', 'thp-enabled', 'thp-enabled-persistent')
    check(res['thp-enabled']['status'] == 'pass' and res['thp-enabled-persistent']['status'] == 'fail',
          'item 4: the runtime value passes, the boot value fails (no false PASS)')
    rc, out, err = run(root, 'apply', '--profile', 'h100-sxm-8x', '--rule', 'thp-enabled-persistent')
    check(rc == 0, 'item 4: apply exits 0 (%s)' % err.strip())
    check(read(root, '/etc/tmpfiles.d/disable-thp.conf') == '#llmtune-disabled# w %s - - - - never\n' % THP_PATH,
          'item 4: the line of disable-thp.conf that beat llmtune\'s is disabled behind the marker')
    check('madvise' in (read(root, '/etc/tmpfiles.d/llmtune-thp-enabled.conf') or ''),
          'item 4: llmtune-thp-enabled.conf is written (the runtime twin\'s name)')
    res = audit(root, 'h100-sxm-8x', 'thp-enabled-persistent')
    check(res['thp-enabled-persistent']['status'] == 'pass', 'item 4: the boot value passes after apply')
    rc, out, err = run(root, 'verify')
    check(rc == 0, 'item 4: verify is clean after apply (%s)' % out.strip()[-200:])
    rc, out, err = run(root, 'rollback', '--last-run')
    check(read(root, '/etc/tmpfiles.d/disable-thp.conf') == 'w %s - - - - never\n' % THP_PATH,
          'item 4: rollback restores disable-thp.conf')
    # the governor: three lines with three paths reach every policy's scaling_governor
    root = copy_root(tmp, 'dgx-a100')
    write(root, '/etc/tmpfiles.d/aa-site.conf', 'w %s - - - - ondemand\n' % GOV_CPU_GLOB)
    write(root, '/etc/tmpfiles.d/zz-power.conf', 'w %s - - - - powersave\n' % GOV_CPU_GLOB.replace('cpu*', 'cpu[0-9]*'))
    write(root, '/usr/lib/tmpfiles.d/zz-vendor.conf', 'w %s - - - - schedutil\n' % GOV_POLICY_GLOB)
    f = fact(root, 'cpu.policy.7.persistent_governor')
    check(f.get('value') == 'schedutil' and f.get('source') == '/usr/lib/tmpfiles.d/zz-vendor.conf:1',
          'item 4: of three different paths reaching policy7, the one that appears last writes last (%r)' % f)
    rc, out, err = run(root, 'apply', '--profile', 'a100-8x', '--rule', 'cpu-governor', '--rule',
                       'cpu-governor-persistent')
    check(rc == 0, 'item 4: governor apply exits 0 (%s)' % err.strip())
    check(read(root, '/etc/tmpfiles.d/zz-power.conf').startswith('#llmtune-disabled# '),
          'item 4: zz-power.conf, whose cpu[0-9]* line is written after llmtune\'s policy* line, is disabled')
    check(read(root, '/etc/tmpfiles.d/aa-site.conf') == 'w %s - - - - ondemand\n' % GOV_CPU_GLOB,
          'item 4: aa-site.conf, written before llmtune\'s line, is left alone')
    check(read(root, '/etc/tmpfiles.d/zz-vendor.conf') is None,
          'item 4: zz-vendor.conf (policy*, the path of llmtune\'s line in a later file: dropped) is not shadowed')
    res = audit(root, 'a100-8x', 'cpu-governor-persistent')
    check(res['cpu-governor-persistent']['status'] == 'pass', 'item 4: every policy gets performance at boot')


def case_i29_item4_limits(tmp):
    """Issue 29 item 4, limits.conf(5) / pam_limits(8): limits.conf, then limits.d/*.conf in C order,
    the last line of a domain winning. A site's 99-site.conf lowering memlock beats
    90-llmtune-memlock.conf: before, apply said success, the audit still failed and plan said 0
    changes (it never converged). Now its lines are disabled and the next plan is empty."""
    root = copy_root(tmp, 'hgx-h100')
    site = '* soft memlock 65536\n* hard memlock 65536\nroot hard memlock 65536\n* soft nofile 4096\n'
    write(root, '/etc/security/limits.d/99-site.conf', site)
    f = fact(root, 'limits.memlock.login.soft')
    check(f.get('value') == 65536 * 1024 and f.get('source') == '/etc/security/limits.d/99-site.conf:1',
          'item 4: the login memlock at boot comes from 99-site.conf (%r)' % f)
    rc, out, err = run(root, 'apply', '--profile', 'h100-sxm-8x', '--rule', 'memlock-login')
    check(rc == 0, 'item 4: apply exits 0 (%s)' % err.strip())
    check(read(root, '/etc/security/limits.d/99-site.conf') ==
          '#llmtune-disabled# * soft memlock 65536\n#llmtune-disabled# * hard memlock 65536\n'
          '#llmtune-disabled# root hard memlock 65536\n* soft nofile 4096\n',
          'item 4: the memlock lines of 99-site.conf are disabled, its nofile line kept')
    res = audit(root, 'h100-sxm-8x', 'memlock-login')
    check(res['memlock-login']['status'] == 'pass', 'item 4: memlock-login passes after apply')
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'memlock-login')
    check('0 changes planned' in out, 'item 4: the next plan has nothing to do (it converges)')
    # verify judges precedence too: a file added since that wins over llmtune's is drift
    write(root, '/etc/security/limits.d/99-zz-late.conf', '* soft memlock 1024\n')
    rc, out, err = run(root, 'verify')
    check(rc == 2 and 'no longer decides at boot' in out and '99-zz-late.conf:1' in out,
          'item 4: verify reports llmtune\'s limits.d file overridden by a file added later (%s)' % out.strip()[-300:])
    os.unlink(os.path.join(root, 'etc/security/limits.d/99-zz-late.conf'))
    rc, out, err = run(root, 'rollback', '--last-run')
    check(read(root, '/etc/security/limits.d/99-site.conf') == site, 'item 4: rollback restores 99-site.conf')
    # a later line that gives at least the profile's minimum stays
    write(root, '/etc/security/limits.d/99-site.conf', '* soft memlock unlimited\n* hard memlock infinity\n')
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'memlock-login')
    check('99-site.conf' not in out, 'item 4: a later line at or above the minimum is left alone')


def case_i29_item4_system_conf(tmp):
    """Issue 29 item 4, systemd-system.conf(5): system.conf, then the system.conf.d drop-ins of /etc,
    /run, /usr/local/lib, /usr/lib by name (/etc hiding the same name), the last assignment winning.
    /usr/lib/systemd/system.conf.d/99-vendor.conf with DefaultLimitMEMLOCK=64M beats llmtune's
    90-llmtune-memlock.conf: it is shadowed by an /etc copy of the same name with that line disabled."""
    root = copy_root(tmp, 'hgx-h100')
    vendor = '[Manager]\nDefaultLimitMEMLOCK=64M\nDefaultLimitNOFILE=1024:524288\n'
    write(root, '/usr/lib/systemd/system.conf.d/99-vendor.conf', vendor)
    f = fact(root, 'limits.memlock.service.soft')
    check(f.get('value') == 64 << 20 and f.get('source') == '/usr/lib/systemd/system.conf.d/99-vendor.conf:2',
          'item 4: the services\' memlock at boot comes from the vendor drop-in (%r)' % f)
    rc, out, err = run(root, 'apply', '--profile', 'h100-sxm-8x', '--rule', 'memlock-services')
    check(rc == 0, 'item 4: apply exits 0 (%s)' % err.strip())
    shadow = read(root, '/etc/systemd/system.conf.d/99-vendor.conf') or ''
    check('#llmtune-disabled# DefaultLimitMEMLOCK=64M' in shadow and '\nDefaultLimitNOFILE=1024:524288' in shadow,
          'item 4: an /etc copy of 99-vendor.conf shadows it with only the memlock line disabled')
    check(read(root, '/usr/lib/systemd/system.conf.d/99-vendor.conf') == vendor, 'item 4: the vendor file is untouched')
    res = audit(root, 'h100-sxm-8x', 'memlock-services')
    check(res['memlock-services']['status'] == 'pass', 'item 4: memlock-services passes after apply')
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'memlock-services')
    check('0 changes planned' in out, 'item 4: the next plan has nothing to do')
    rc, out, err = run(root, 'rollback', '--last-run')
    check(read(root, '/etc/systemd/system.conf.d/99-vendor.conf') is None, 'item 4: rollback removes the shadow copy')


def case_i29_item4_modprobe(tmp):
    """Issue 29 item 4, modprobe.d(5) as kmod reads it: options add up and the last value of a parameter
    wins (a later file's modeset=1 beats llmtune's modeset=0); kmod runs the first install line instead
    of loading, and systemd-modules-load skips a blacklisted module, so either keeps llmtune's
    modules-load.d line from loading nvidia_peermem at boot."""
    root = copy_root(tmp, 'dgx-a100')
    write(root, '/etc/modprobe.d/zz-nouveau.conf', 'options nouveau modeset=1\n')
    rc, out, err = run(root, 'apply', '--profile', 'a100-8x', '--rule', 'nouveau-blacklisted')
    check(rc == 0, 'item 4: apply exits 0 (%s)' % err.strip())
    check(read(root, '/etc/modprobe.d/zz-nouveau.conf') == '#llmtune-disabled# options nouveau modeset=1\n',
          'item 4: the later options line that would set modeset=1 back is disabled')
    f = fact(root, 'modprobe.nouveau.options')
    check(f.get('value') == 'modeset=0', 'item 4: libkmod now gives nouveau modeset=0 only (%r)' % f)
    # OFED + proprietary module without nvidia_peermem, and a site that blacklists it
    root = copy_root(tmp, 'hgx-h100')
    drop_module(root, 'nvidia_peermem')
    write(root, '/usr/lib/modprobe.d/site-rdma.conf', 'blacklist nvidia_peermem\ninstall nvidia_peermem /bin/true\n')
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'driver-peermem-loaded')
    check('+++ b/etc/modprobe.d/site-rdma.conf' in out and '+#llmtune-disabled# blacklist nvidia_peermem' in out
          and '+#llmtune-disabled# install nvidia_peermem /bin/true' in out,
          'item 4: the blacklist and install lines that keep nvidia_peermem from loading at boot are disabled '
          'in an /etc copy (%s)' % out.strip()[:400])


def case_i29_item4_udev(tmp):
    """Issue 29 item 4, udev(7): rules files of /etc, /run, /usr/local/lib, /usr/lib and /lib
    udev/rules.d merged by name, the earlier directory's file hiding a later one of the same name, a
    /dev/null link masking it (the same model as every other family, dropin-order.c)."""
    root = copy_root(tmp, 'hgx-h100')
    os.makedirs(os.path.join(root, 'etc/systemd/system/multi-user.target.wants'))
    write(root, '/usr/lib/systemd/system/nvidia-persistenced.service', '[Service]\nExecStart=/usr/bin/nvidia-persistenced\n')
    wants = 'ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", ENV{SYSTEMD_WANTS}="nvidia-persistenced.service"\n'
    write(root, '/usr/lib/udev/rules.d/71-nvidia.rules', wants)
    f = fact(root, 'service.nvidia-persistenced.enabled')
    check(f.get('value') is True and f.get('source') == '/usr/lib/udev/rules.d/71-nvidia.rules',
          'item 4: the vendor rule pulls nvidia-persistenced in (%r)' % f)
    write(root, '/run/udev/rules.d/71-nvidia.rules', '# overridden at runtime, no SYSTEMD_WANTS\n')
    f = fact(root, 'service.nvidia-persistenced.enabled')
    check(f.get('value') is False, 'item 4: a /run file of the same name hides the vendor rule (%r)' % f)
    write(root, '/etc/udev/rules.d/71-nvidia.rules', wants)
    f = fact(root, 'service.nvidia-persistenced.enabled')
    check(f.get('value') is True and f.get('source') == '/etc/udev/rules.d/71-nvidia.rules',
          'item 4: the /etc file of that name hides the /run one (%r)' % f)


def translated_iommu(root):
    """An IOMMU (dmar0) whose group's default domain translates DMA (Linux 5.11+ sysfs)."""
    os.makedirs(os.path.join(root, 'sys/class/iommu/dmar0'), exist_ok=True)
    write(root, '/sys/kernel/iommu_groups/0/type', 'DMA-FQ\n')


def debian_grub(root, linux='', default='quiet'):
    write(root, '/etc/default/grub', 'GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT="%s"\n'
          'GRUB_CMDLINE_LINUX="%s"\n' % (default, linux))
    write(root, '/usr/sbin/update-grub', '#!/bin/sh\nexec grub-mkconfig -o /boot/grub/grub.cfg "$@"\n', 0o755)


def case_i29_item6_iommu(tmp):
    """Issue 29 item 6: the IOMMU in translated mode is critical on the nvidia_peermem path (NVIDIA's
    GPUDirect RDMA documentation, "Supported Systems"), a warning where GPUDirect RDMA through DMA-BUF or
    PCIe peer-to-peer is in use (the CUDA Programming Guide), and only information otherwise; the fix is
    the kernel command line (item 9)."""
    root = copy_root(tmp, 'hgx-h100')       # OFED + nvidia_peermem loaded
    translated_iommu(root)
    rules = ('pcie-iommu-peermem', 'pcie-iommu-gpudirect', 'pcie-iommu-mode')
    res = audit(root, 'h100-sxm-8x', *rules)
    r = res['pcie-iommu-peermem']
    check(r['status'] == 'fail' and r['severity'] == 'critical' and r['remedy']['kind'] == 'cmdline'
          and r['remedy']['params']['param'] == 'iommu=pt',
          'item 6: nvidia_peermem with a translating IOMMU is critical, fixed by iommu=pt (%r)' % r)
    check(res['pcie-iommu-gpudirect']['status'] == 'n/a' and res['pcie-iommu-mode']['status'] == 'n/a',
          'item 6: one finding per node: the lower tiers do not apply on the peermem path')
    # DMA-BUF: the open module on Linux 5.14, no peer-memory module
    os.unlink(os.path.join(root, 'usr/bin/ofed_info'))
    drop_module(root, 'nvidia_peermem')
    write(root, '/proc/driver/nvidia/version', OPEN_535)
    res = audit(root, 'h100-sxm-8x', *rules)
    r = res['pcie-iommu-gpudirect']
    check(r['status'] == 'fail' and r['severity'] == 'warning' and res['pcie-iommu-peermem']['status'] == 'n/a',
          'item 6: GPUDirect RDMA through DMA-BUF with a translating IOMMU is a warning (%r)' % r)
    # two PCIe GPUs, no NVSwitch: peer-to-peer crosses PCIe
    ws = copy_root(tmp, 'ws-4090')
    translated_iommu(ws)
    res = audit(ws, 'rtx4090-ws', *rules)
    check(res['pcie-iommu-gpudirect']['status'] == 'fail', 'item 6: two PCIe GPUs (P2P) with a translating IOMMU warn')
    f = fact(ws, 'iommu.gpu_traffic')
    check(f.get('value') == 'p2p', 'item 6: the traffic is PCIe peer-to-peer (%r)' % f)


def case_i29_item9_cmdline(tmp):
    """Issue 29 item 9: a kernel command-line remedy goes through the distribution's own tool, logged and
    reversible, with "reboot required"; under --root the command is a step for the live system, never run;
    the audit tells the running command line from the next boot's."""
    root = copy_root(tmp, 'hgx-h100')
    translated_iommu(root)
    debian_grub(root, linux='iommu=nopt')
    f = fact(root, 'cmdline.next.iommu')
    check(f.get('value') == 'nopt', 'item 9: the next boot has iommu=nopt from /etc/default/grub (%r)' % f)
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'pcie-iommu-peermem')
    check('+++ b/etc/default/grub.d/zz-llmtune.cfg' in out
          and '+GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT iommu=pt"' in out
          and 'on the live system run: update-grub' in out and 'Reboot required' in out and 'grub.cfg\n' not in out,
          'item 9: Debian: a grub.d file, update-grub as a step for the live system, reboot required (%s)' % out)
    rc, out, err = run(root, 'apply', '--profile', 'h100-sxm-8x', '--rule', 'pcie-iommu-peermem')
    check(rc == 0 and os.path.exists(os.path.join(root, 'etc/default/grub.d/zz-llmtune.cfg')),
          'item 9: apply writes the grub.d file (%s)' % err)
    f = fact(root, 'cmdline.next.iommu')
    check(f.get('value') == 'pt', 'item 9: the next boot now has iommu=pt, the last value (%r)' % f)
    res = audit(root, 'h100-sxm-8x', 'pcie-iommu-peermem')
    r = res['pcie-iommu-peermem']
    check(r['status'] == 'fail' and 'set for the next boot' in (r['reason'] or '') and 'reboot required' in r['reason'],
          'item 9: the audit says the fix waits for a reboot, apart from "not set" (%r)' % r.get('reason'))
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'pcie-iommu-peermem')
    check('0 changes planned' in out and 'set for the next boot' in out, 'item 9: the next plan only asks for the reboot')
    rc, out, err = run(root, 'rollback', '--last-run')
    check(rc == 0 and not os.path.exists(os.path.join(root, 'etc/default/grub.d/zz-llmtune.cfg')),
          'item 9: rollback removes the grub.d file')
    # RHEL / Fedora: Boot Loader Specification entries and grubby, $kernelopts from grubenv (RHEL 8)
    rh = copy_root(tmp, 'hgx-h100', 'rhel')
    translated_iommu(rh)
    rel = read(rh, '/proc/sys/kernel/osrelease').strip()
    write(rh, '/boot/loader/entries/abc-%s.conf' % rel, 'title Red Hat\nversion %s\nlinux /vmlinuz-%s\n'
          'options $kernelopts iommu=nopt\n' % (rel, rel))
    write(rh, '/boot/grub2/grubenv', '# GRUB Environment Block\nkernelopts=root=/dev/sda2 ro quiet\n')
    write(rh, '/usr/sbin/grubby', '#!/bin/sh\n', 0o755)
    f = fact(rh, 'cmdline.next')
    check(f.get('value') == 'root=/dev/sda2 ro quiet iommu=nopt', 'item 9: the BLS entry with $kernelopts (%r)' % f)
    rc, out, err = run(rh, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'pcie-iommu-peermem')
    check('on the live system run: grubby --update-kernel=ALL --args=iommu=pt' in out and 'zz-llmtune' not in out,
          'item 9: RHEL: grubby --update-kernel=ALL --args=, never run under --root (%s)' % out)
    # Pop!_OS: kernelstub
    ks = copy_root(tmp, 'hgx-h100', 'popos')
    translated_iommu(ks)
    write(ks, '/etc/kernelstub/configuration', '{"default": {"kernel_options": ["quiet"]}, "user": '
          '{"kernel_options": ["quiet", "splash"], "esp_path": "/boot/efi"}}\n')
    write(ks, '/usr/bin/kernelstub', '#!/bin/sh\n', 0o755)
    rc, out, err = run(ks, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'pcie-iommu-peermem')
    check('on the live system run: kernelstub -a iommu=pt' in out, 'item 9: kernelstub -a where it is the tool (%s)' % out)
    # no tool llmtune knows: a manual step, nothing written
    none = copy_root(tmp, 'hgx-h100', 'none')
    translated_iommu(none)
    rc, out, err = run(none, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'pcie-iommu-peermem')
    check('0 changes planned' in out and 'add iommu=pt to the kernel command line' in out,
          'item 9: without a known boot loader tool the plan is a manual step (%s)' % out)


# --- item 3: the ext4 stripe in effect ---------------------------------------------------------------

EXT4_RULES = ('raid-ext4-stride', 'raid-ext4-stripe-fstab', 'raid-ext4-stripe-mounted')
RAID_LINE = '/dev/md0 /raid ext4 defaults,nofail 0 2\n'


def set_ext4_geometry(root, stride, stripe_width):
    """Rewrite s_raid_stride (le16) and s_raid_stripe_width (le32) of the fixture's ext4 image."""
    import struct
    with open(os.path.join(root, 'dev/md0'), 'r+b') as f:
        f.seek(1024 + 0x164)
        f.write(struct.pack('<H', stride))
        f.seek(1024 + 0x170)
        f.write(struct.pack('<I', stripe_width))


def set_mounted_stripe(root, value):
    """The stripe= /proc/mounts shows for /raid (None: none)."""
    mounts = read(root, '/proc/mounts')
    old = next(line for line in mounts.splitlines() if line.startswith('/dev/md0 /raid '))
    f = old.split(' ')
    opts = [o for o in f[3].split(',') if not o.startswith('stripe=')] + (['stripe=%d' % value] if value else [])
    f[3] = ','.join(opts)
    write(root, '/proc/mounts', mounts.replace(old, ' '.join(f)), 0o444)


def ext4_root(tmp, fstab_opts):
    """dgx-a100 (4 x 512 KiB chunks, 4 KiB blocks: stride 128, stripe width 512) with a right
    superblock and /raid's fstab options FSTAB_OPTS."""
    root = copy_root(tmp, 'dgx-a100')
    set_ext4_geometry(root, 128, 512)
    fstab = read(root, '/etc/fstab')
    check(RAID_LINE in fstab, 'item 3: the fixture\'s fstab has the /raid line')
    write(root, '/etc/fstab', fstab.replace(RAID_LINE, '/dev/md0 /raid ext4 %s 0 2\n' % fstab_opts))
    return root


def case_item3_ext4_stripe(tmp):
    """ext4's stripe= mount option overrides the superblock: the audit judges the stripe in effect now
    (/proc/mounts) and at the next mount (/etc/fstab's stripe=, else the superblock), a wrong fstab
    stripe= is removed behind the marker and restored by rollback, and nothing is remounted for it."""
    # a wrong stripe= in /etc/fstab with a right superblock and a right running mount
    root = ext4_root(os.path.join(tmp, 'fstab'), 'defaults,nofail,stripe=64')
    set_mounted_stripe(root, 512)
    f = fact(root, 'md.md0.fstab.stripe')
    check(f.get('value') == 64 and f.get('source') == '/etc/fstab:14',
          'item 3: md.md0.fstab.stripe is 64 from /etc/fstab:14 (%r)' % f)
    f = fact(root, 'md.md0.fs.stripe_next_mount')
    check(f.get('value') == 64 and f.get('source') == '/etc/fstab:14',
          'item 3: the next mount gets fstab\'s stripe 64 over the superblock\'s 512 (%r)' % f)
    res = audit(root, 'a100-8x', *EXT4_RULES)
    check(res['raid-ext4-stride']['status'] == 'pass', 'item 3: the right superblock passes')
    check(res['raid-ext4-stripe-mounted']['status'] == 'pass', 'item 3: the mount with stripe=512 passes')
    check(res['raid-ext4-stripe-fstab']['status'] == 'fail', 'item 3: a wrong fstab stripe=64 is its own finding')
    fstab = read(root, '/etc/fstab')
    mounts = read(root, '/proc/mounts')
    rc, out, err = run(root, 'plan', '--profile', 'a100-8x', *sum((['--rule', r] for r in EXT4_RULES), []))
    check('Remounts:' not in out and 'next mount' in out, 'item 3: the fstab fix plans no remount')
    rc, out, err = run(root, 'apply', '--profile', 'a100-8x', '--rule', 'raid-ext4-stripe-fstab')
    check(rc == 0, 'item 3: apply exits 0 (%s)' % err.strip())
    after = read(root, '/etc/fstab')
    check('#llmtune-disabled# /dev/md0 /raid ext4 defaults,nofail,stripe=64 0 2\n'
          '/dev/md0 /raid ext4 defaults,nofail 0 2\n' in after,
          'item 3: the stripe=64 line is kept behind the marker and the line follows without stripe=')
    check(read(root, '/proc/mounts') == mounts, 'item 3: apply did not remount')
    f = fact(root, 'md.md0.fs.stripe_next_mount')
    check(f.get('value') == 512, 'item 3: after apply the next mount gets the superblock\'s 512 (%r)' % f)
    res = audit(root, 'a100-8x', *EXT4_RULES)
    check(res['raid-ext4-stripe-fstab']['status'] == 'n/a' and res['raid-ext4-stride']['status'] == 'pass',
          'item 3: with no stripe= left the superblock decides (%r)' % res['raid-ext4-stripe-fstab'])
    rc, out, err = run(root, 'verify')
    check(rc == 0, 'item 3: verify is clean after apply (%s)' % err.strip())
    rc, out, err = run(root, 'rollback', '--last-run')
    check(rc == 0 and read(root, '/etc/fstab') == fstab, 'item 3: rollback restores /etc/fstab (%s)' % err.strip())

    # a wrong stripe= in effect (the mount from before tune2fs) with a right superblock and fstab
    root = ext4_root(os.path.join(tmp, 'mounted'), 'defaults,nofail')
    f = fact(root, 'md.md0.fs.stripe_in_effect')
    check(f.get('value') == 64 and f.get('source') == '/proc/mounts',
          'item 3: the stripe in effect is /proc/mounts\' 64 (%r)' % f)
    f = fact(root, 'md.md0.fs.stripe_next_mount')
    check(f.get('value') == 512 and (f.get('source') or '').startswith('/dev/md0: ext superblock'),
          'item 3: the next mount gets the superblock\'s 512 (%r)' % f)
    res = audit(root, 'a100-8x', *EXT4_RULES)
    r = res['raid-ext4-stripe-mounted']
    check(r['status'] == 'fail' and 'in effect until the next mount' in r.get('title', ''),
          'item 3: stripe=64 in effect fails "in effect until the next mount" (%r)' % r)
    check(res['raid-ext4-stride']['status'] == 'pass', 'item 3: the superblock passes')
    rc, out, err = run(root, 'plan', '--profile', 'a100-8x', *sum((['--rule', r] for r in EXT4_RULES), []))
    check('Remounts:' not in out and 'tune2fs' not in out and 'unmount and mount' in out,
          'item 3: no remount and no tune2fs, the next mount is the step')
    # a remount for another option is handed no stripe=, and the mount keeps its stripe
    rc, out, err = run(root, 'plan', '--profile', 'a100-8x', '--rule', 'raid-noatime')
    check('/raid: rw,relatime -> rw,noatime' in out and 'stripe=' not in out,
          'item 3: the noatime remount passes no stale stripe=')
    rc, out, err = run(root, 'apply', '--profile', 'a100-8x', '--rule', 'raid-noatime')
    line = next(x for x in read(root, '/proc/mounts').splitlines() if x.startswith('/dev/md0 /raid '))
    check(rc == 0 and 'noatime' in line and 'stripe=64' in line,
          'item 3: after the remount the kernel still shows stripe=64 (%s)' % line)
    rc, out, err = run(root, 'verify')
    check(rc == 0, 'item 3: verify is clean after the remount (%s)' % err.strip())

    # stripe= right in the mount and in fstab: every rule passes
    root = ext4_root(os.path.join(tmp, 'right'), 'defaults,nofail,stripe=512')
    set_mounted_stripe(root, 512)
    res = audit(root, 'a100-8x', *EXT4_RULES)
    check(all(res[r]['status'] == 'pass' for r in EXT4_RULES),
          'item 3: stripe=512 everywhere passes (%r)' % {r: res[r]['status'] for r in EXT4_RULES})


# --- item 5: GPUDirect RDMA: DMA-BUF vs nvidia_peermem ---------------------------------------------

OPEN_535 = ('NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build  '
            '(dvs-builder@U16-T02-35-3)  Sat Aug 19 01:13:40 UTC 2023\nGCC version:  gcc version 11.3.1\n')


def drop_module(root, name):
    h = os.path.join(root, 'proc/modules')
    with open(h) as f:
        lines = [l for l in f if l.split(' ', 1)[0] != name]
    with open(h, 'w') as f:
        f.writelines(lines)
    shutil.rmtree(os.path.join(root, 'sys/module', name), ignore_errors=True)


def case_item5_gpudirect(tmp):
    """DMA-BUF (open module, Linux >= 5.12) passes without nvidia_peermem; on the inbox stack (no OFED)
    nvidia_peermem is never planned; with OFED and the proprietary module it is; without the NVIDIA
    driver nothing is planned."""
    # inbox RDMA stack, open kernel module, kernel 5.14: DMA-BUF, no peermem needed
    root = copy_root(tmp, 'hgx-h100')
    os.unlink(os.path.join(root, 'usr/bin/ofed_info'))
    drop_module(root, 'nvidia_peermem')
    write(root, '/proc/driver/nvidia/version', OPEN_535)
    f = fact(root, 'gpudirect.mode')
    check(f.get('value') == 'dmabuf', 'item 5: open module on 5.14 gives gpudirect.mode = dmabuf (%r)' % f)
    res = audit(root, 'h100-sxm-8x', 'driver-gpudirect-dmabuf', 'driver-peermem-loaded')
    check(res['driver-gpudirect-dmabuf']['status'] == 'pass', 'item 5: DMA-BUF passes without nvidia_peermem')
    check(res['driver-peermem-loaded']['status'] == 'n/a', 'item 5: the peermem rule does not apply without OFED')
    # inbox stack, proprietary module: fails, and nvidia_peermem is never planned
    write(root, '/proc/driver/nvidia/version', OPEN_535.replace('Open Kernel Module for x86_64', 'x86_64 Kernel Module'))
    res = audit(root, 'h100-sxm-8x', 'driver-gpudirect-dmabuf')
    check(res['driver-gpudirect-dmabuf']['status'] == 'fail', 'item 5: proprietary module without OFED fails')
    rc, out, err = run(root, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'driver-gpudirect-dmabuf',
                       '--rule', 'driver-peermem-loaded')
    check('modules-load.d' not in out and 'open kernel modules' in out,
          'item 5: without OFED no modules-load.d line for nvidia_peermem; the step names the open modules')
    # open module but kernel 5.10: no DMA-BUF
    write(root, '/proc/driver/nvidia/version', OPEN_535)
    write(root, '/proc/sys/kernel/osrelease', '5.10.0-26-amd64\n')
    f = fact(root, 'gpudirect.dmabuf')
    check(f.get('value') is False, 'item 5: open module on 5.10 has no DMA-BUF (%r)' % f)
    # OFED + proprietary module without peermem: the module is planned
    root2 = os.path.join(tmp, 'ofed')
    shutil.copytree(os.path.join(ROOTS, 'hgx-h100'), root2, symlinks=True)
    drop_module(root2, 'nvidia_peermem')
    res = audit(root2, 'h100-sxm-8x', 'driver-gpudirect-dmabuf', 'driver-peermem-loaded')
    check(res['driver-peermem-loaded']['status'] == 'fail' and res['driver-gpudirect-dmabuf']['status'] == 'n/a',
          'item 5: OFED + proprietary module without nvidia_peermem fails driver-peermem-loaded')
    rc, out, err = run(root2, 'plan', '--profile', 'h100-sxm-8x', '--rule', 'driver-peermem-loaded')
    check('llmtune-nvidia_peermem.conf' in out, 'item 5: with OFED nvidia_peermem is planned in modules-load.d')
    # no NVIDIA driver (dgx-a100 runs nouveau): never planned
    root3 = copy_root(tmp, 'dgx-a100')
    res = audit(root3, 'a100-8x', 'driver-gpudirect-dmabuf', 'driver-peermem-loaded')
    check(res['driver-peermem-loaded']['status'] == 'n/a' and res['driver-gpudirect-dmabuf']['status'] == 'n/a',
          'item 5: without the NVIDIA driver neither rule applies')
    rc, out, err = run(root3, 'plan', '--profile', 'a100-8x')
    check('llmtune-nvidia_peermem.conf' not in out and 'modprobe nvidia_peermem' not in out,
          'item 5: the plan never loads nvidia_peermem without the NVIDIA driver')


# --- items 8 and 9: NCCL_IB_HCA from the compute HCAs, NCCL_SOCKET_IFNAME ---------------------------

def nccl_conf(root, profile):
    rc, out, err = run(root, 'nccl', 'conf', '--profile', profile)
    return out + err


def move_to_root_port(root, hca, port):
    """Move HCA's PCI function from behind its GPU's PCIe switch onto root port PORT (a new one on the
    same host bridge), as a storage adapter sits: its device directory and the two links to it."""
    cls = os.path.join(root, 'sys/class/infiniband', hca)
    addr = os.path.basename(os.readlink(os.path.join(cls, 'device')))
    bus_link = os.path.join(root, 'sys/bus/pci/devices', addr)
    old = os.readlink(bus_link)  # ../../../devices/pci0000:b0/0000:b0:01.1/.../ADDR
    parts = old.split('/')
    new_rel = '/'.join(parts[:5] + [port, addr])  # ../../../devices/pci0000:b0/PORT/ADDR
    old_dir = os.path.normpath(os.path.join(os.path.dirname(bus_link), old))
    new_dir = os.path.normpath(os.path.join(os.path.dirname(bus_link), new_rel))
    os.makedirs(os.path.dirname(new_dir))
    os.rename(old_dir, new_dir)
    os.unlink(bus_link)
    os.symlink(new_rel, bus_link)
    os.unlink(cls)
    os.symlink(os.path.relpath(os.path.join(new_dir, 'infiniband', hca), os.path.dirname(cls)), cls)


def case_item8_ib_hca(tmp):
    """NCCL_IB_HCA names the compute HCAs (those paired with a GPU, or the profile's list) whatever
    their port state, only when a storage HCA must be kept out; it is refused while a compute port is
    down; a stale generated value is an audit finding."""
    root = copy_root(tmp, 'dgx-a100')
    out = nccl_conf(root, 'a100-8x')
    check('\nNCCL_IB_HCA=' not in out and 'every one of the 8 HCAs is a compute HCA' in out,
          'item 8: every HCA is on a GPU node: NCCL_IB_HCA is left to NCCL (every active port)')
    # mlx5_7 moved onto a root port of its own, behind no GPU's switch: a storage HCA (issue 29 item 3)
    move_to_root_port(root, 'mlx5_7', '0000:b0:05.0')
    out = nccl_conf(root, 'a100-8x')
    check('\nNCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6\n' in out,
          'item 8: a storage HCA is kept out by naming the 7 compute HCAs (all ports, exact names)')
    # a compute port DOWN at apply time: refused, the port named
    state = '/sys/class/infiniband/mlx5_3/ports/1/state'
    good_state = read(root, state)
    write(root, state, '1: DOWN\n')
    out = nccl_conf(root, 'a100-8x')
    check('\nNCCL_IB_HCA=' not in out and 'mlx5_3:1 (DOWN)' in out,
          'item 8: NCCL_IB_HCA is refused while compute port mlx5_3:1 is DOWN, and the note says which')
    write(root, state, good_state)
    # the profile's explicit list wins over the derivation
    prof = os.path.join(tmp, 'site.ini')
    with open(prof, 'w') as f:
        f.write('[profile]\nname = site\ndescription = two rails\ninherits = a100-8x\n\n'
                '[params]\nnccl_ib_hca = mlx5_0,mlx5_1\n')
    out = nccl_conf(root, prof)
    check('\nNCCL_IB_HCA==mlx5_0,mlx5_1\n' in out, "item 8: the profile's nccl_ib_hca list is written as given")
    # written, then the hardware changes: the audit reports the stale key
    rc, o, err = run(root, 'apply', '--profile', 'a100-8x', '--rule', 'nccl-conf-keys')
    check(rc == 0 and 'NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6\n' in (read(root, '/etc/nccl.conf') or ''),
          'item 8: apply writes the compute-HCA list (%s)' % err.strip())
    res = audit(root, 'a100-8x', 'nccl-conf-hardware-current')
    check(res['nccl-conf-hardware-current']['status'] == 'pass', 'item 8: right after apply the generated keys are current')
    move_to_root_port(root, 'mlx5_6', '0000:b0:05.1')
    res = audit(root, 'a100-8x', 'nccl-conf-hardware-current')
    r = res['nccl-conf-hardware-current']
    check(r['status'] == 'fail' and 'mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5' in (r['observed'] or ''),
          'item 8: an HCA that left the compute set makes nccl-conf-hardware-current fail (%r)' % r['observed'])


def add_netdev(root, name, route_lines, virtual=False, lower=None):
    """An interface like eth0 (up, carrier) named NAME, with the given /proc/net/route lines. A NIC
    sits beside eth0 under its bus device, with a device link, as the kernel puts it; a virtual one
    (bridge, bond, VLAN, tunnel) under /sys/devices/virtual/net without one, with a lower_NAME link to
    the interface it runs over, if any."""
    src = os.path.realpath(os.path.join(root, 'sys/class/net/eth0'))
    if virtual:
        dst = os.path.join(root, 'sys/devices/virtual/net', name)
        shutil.copytree(src, dst, symlinks=True)
        os.unlink(os.path.join(dst, 'device'))
        if lower:
            os.symlink('../' + lower, os.path.join(dst, 'lower_' + lower))
    else:
        dst = os.path.join(os.path.dirname(src), name)
        shutil.copytree(src, dst, symlinks=True)
    os.symlink(os.path.relpath(dst, os.path.join(root, 'sys/class/net')), os.path.join(root, 'sys/class/net', name))
    with open(os.path.join(root, 'proc/net/route'), 'a') as f:
        for l in route_lines:
            f.write(l + '\n')


def case_item9_socket_ifname(tmp):
    """A BMC's USB NIC with only a 169.254/16 address is not a job network; IPoIB (ib0) is kept; a
    single-node profile never pins NCCL_SOCKET_IFNAME (item 7)."""
    root = copy_root(tmp, 'vm-nogpu')
    add_netdev(root, 'usb0', ['usb0\t0000FEA9\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0'])
    add_netdev(root, 'ib0', ['ib0\t0000140A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0'])
    f = fact(root, 'net.usb0.has_address')
    check(f.get('value') is False, 'item 9: an interface with only a link-local route has no address (%r)' % f)
    out = nccl_conf(root, 'base')
    check('\nNCCL_SOCKET_IFNAME==eth0,ib0\n' in out,
          'item 9: NCCL_SOCKET_IFNAME keeps IPoIB ib0 and drops the link-local-only usb0')
    out = nccl_conf(root, 'rtx4090-ws')
    check('\nNCCL_SOCKET_IFNAME=' not in out and 'not pinned' in out,
          'item 7: the single-node workstation profile never pins NCCL_SOCKET_IFNAME')


def route(name, dest_hex):
    return '%s\t%s\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0' % (name, dest_hex)


def case_i29_item8_socket_ifname(tmp):
    """Issue 29 item 8: NCCL's socket transport uses every interface NCCL_SOCKET_IFNAME matches, so a
    container bridge, an overlay or a VPN tunnel in the list carries job traffic. Only interfaces on
    hardware are listed: a NIC, a bond or a VLAN over one. The comment says that NCCL fails only when
    no listed name matches."""
    root = copy_root(tmp, 'vm-nogpu')
    add_netdev(root, 'eth1', [])                                   # the bond's slave, no address
    add_netdev(root, 'bond0', [route('bond0', '0000140A')], virtual=True, lower='eth1')
    add_netdev(root, 'eth0.100', [route('eth0.100', '0000640A')], virtual=True, lower='eth0')
    add_netdev(root, 'veth3f2a', [], virtual=True)
    add_netdev(root, 'cni0', [route('cni0', '0001F40A')], virtual=True, lower='veth3f2a')
    add_netdev(root, 'flannel.1', [route('flannel.1', '0000F40A')], virtual=True)
    add_netdev(root, 'podman0', [route('podman0', '0058A8C0')], virtual=True)
    add_netdev(root, 'tailscale0', [route('tailscale0', '0000FD64')], virtual=True)
    add_netdev(root, 'gre7', [route('gre7', '0000C80A')], virtual=True)  # a tunnel no name list knows
    out = nccl_conf(root, 'base')
    check('\nNCCL_SOCKET_IFNAME==bond0,eth0.100,eth0\n' in out,
          'item 8: NCCL_SOCKET_IFNAME lists the bond, the VLAN and the NIC, no bridge, overlay or tunnel (%r)'
          % [l for l in out.splitlines() if 'SOCKET_IFNAME' in l])
    check('none of the names matches' in out and 'a missing one fails init' not in out,
          'item 8: the comment says NCCL fails only when no listed name matches')
    f = fact(root, 'net.cni0.hardware')
    check(f.get('value') is False, 'item 8: a bridge whose only port is a veth is not on hardware (%r)' % f)
    f = fact(root, 'net.bond0.hardware')
    check(f.get('value') is True and f.get('source') == '/sys/class/net/bond0/lower_eth1',
          'item 8: a bond over a NIC is on hardware, through its lower_ link (%r)' % f)


# --- item 10: nccl lint per NCCL 2.30 --------------------------------------------------------------

def lint(root):
    """nccl lint of the root's files: exit status, {line number: every finding of that line}."""
    rc, out, err = run(root, 'nccl', 'lint')
    lines = {}
    for l in out.splitlines():
        if l.startswith('/etc/nccl.conf:'):
            n = int(l.split(':')[1])
            lines[n] = lines.get(n, '') + l + '\n'
    return rc, lines, out


def case_item10_nccl_lint(tmp):
    """NCCL_ALGO/NCCL_PROTO tokens NCCL rejects are errors (init fails since 2.24); level names are
    case-sensitive and include P2C; a GID index, HCA prefixes and debugging settings left in the file
    are warnings; apply disables what NCCL rejects or ignores and keeps what acts as written."""
    root = copy_root(tmp, 'dgx-a100')
    conf = ('NCCL_ALGO=Ring,Rnig\n'              # 1 unknown algorithm: init fails
            'NCCL_PROTO=LL128;allreduce:^LL\n'    # 2 valid, but a debugging setting
            'NCCL_P2P_LEVEL=pxb\n'                # 3 lower case: ignored
            'NCCL_NET_GDR_LEVEL=P2C\n'            # 4 valid: ncclGetLevel knows P2C
            'NCCL_IB_GID_INDEX=3\n'               # 5 NCCL >= 2.21 chooses it
            'NCCL_IB_HCA=mlx5_1,mlx5_2:1\n'       # 6 prefixes
            'NCCL_DEBUG_SUBSYS=INIT,NET\n'        # 7 debugging
            'NCCL_GRAPH_FILE=/opt/graph.xml\n')   # 8 a stale graph breaks jobs
    write(root, '/etc/nccl.conf', conf)
    rc, lines, out = lint(root)
    check(rc == 2, 'item 10: nccl lint exits 2 on findings')
    check('error: init-failure: NCCL_ALGO=Ring,Rnig: unknown algorithm "Rnig"' in lines.get(1, ''),
          'item 10: an unknown NCCL_ALGO token is an init-failure error (%r)' % lines.get(1))
    check('init-failure' not in lines.get(2, '') and 'warning: debug-only: NCCL_PROTO' in lines.get(2, ''),
          'item 10: a valid NCCL_PROTO list is only a debugging-setting warning')
    check('error: bad-value: NCCL_P2P_LEVEL=pxb is ignored' in lines.get(3, '') and '(write PXB)' in lines.get(3, ''),
          'item 10: lower-case pxb is an error naming PXB (%r)' % lines.get(3))
    check(4 not in lines, 'item 10: NCCL_NET_GDR_LEVEL=P2C is valid (%r)' % lines.get(4))
    check('warning: advice: NCCL_IB_GID_INDEX=3' in lines.get(5, ''), 'item 10: NCCL_IB_GID_INDEX is a warning')
    check('warning: advice:' in lines.get(6, '') and 'NCCL_IB_HCA==mlx5_1,mlx5_2:1 names exactly' in lines.get(6, ''),
          'item 10: NCCL_IB_HCA without = is a warning giving the exact = form (%r)' % lines.get(6))
    check('warning: debug-only: NCCL_DEBUG_SUBSYS' in lines.get(7, ''), 'item 10: NCCL_DEBUG_SUBSYS is a warning')
    check('warning: debug-only: NCCL_GRAPH_FILE' in lines.get(8, ''), 'item 10: NCCL_GRAPH_FILE is a warning')
    rules = ['nccl-conf-init-failures', 'nccl-conf-values', 'nccl-conf-debug-settings', 'nccl-conf-advice']
    res = audit(root, 'a100-8x', *rules)
    for r in rules:
        check(res[r]['status'] == 'fail', 'item 10: %s fails (%r)' % (r, res[r].get('observed')))
    check(res['nccl-conf-init-failures']['severity'] == 'critical', 'item 10: an init failure is critical')
    rc, o, err = run(root, 'apply', '--profile', 'a100-8x', '--rule', 'nccl-conf-init-failures', '--rule', 'nccl-conf-values')
    after = read(root, '/etc/nccl.conf') or ''
    check(rc == 0, 'item 10: apply exits 0 (%s)' % err.strip())
    check('\n#llmtune-disabled# NCCL_ALGO=Ring,Rnig\n' in after and '\n#llmtune-disabled# NCCL_P2P_LEVEL=pxb\n' in after,
          'item 10: apply disables the NCCL_ALGO NCCL rejects and the level it ignores')
    for keep in ('NCCL_PROTO=LL128;allreduce:^LL', 'NCCL_NET_GDR_LEVEL=P2C', 'NCCL_IB_GID_INDEX=3',
                 'NCCL_IB_HCA=mlx5_1,mlx5_2:1', 'NCCL_DEBUG_SUBSYS=INIT,NET', 'NCCL_GRAPH_FILE=/opt/graph.xml'):
        check('\n' + keep + '\n' in after, 'item 10: apply keeps %s, which acts as written' % keep)
    res = audit(root, 'a100-8x', *rules)
    check(res['nccl-conf-init-failures']['status'] == 'pass' and res['nccl-conf-values']['status'] == 'pass',
          'item 10: after apply no init failure or ignored value is left')
    check(res['nccl-conf-debug-settings']['status'] == 'fail' and res['nccl-conf-advice']['status'] == 'fail',
          'item 10: the kept debugging settings and advice are still reported')
    # llmtune lint reads a profile's [nccl] values the same way
    prof = os.path.join(tmp, 'site.ini')
    with open(prof, 'w') as f:
        f.write('[profile]\nname = site\ndescription = x\ninherits = a100-8x\n\n'
                '[nccl]\nNCCL_PROTO = LL,Simpel\nNCCL_NET_GDR_LEVEL = P2C\n')
    rc, o, err = run(root, 'lint', prof)
    check(rc == 1 and 'site.ini:7: [nccl] NCCL_PROTO=LL,Simpel: unknown protocol "Simpel"' in err
          and 'site.ini:8' not in err, 'item 10: llmtune lint flags the profile\'s NCCL_PROTO, not P2C (%s)' % err.strip())


# --- item 6: a working workaround is never stripped -------------------------------------------------

def case_item6_debug_switches(tmp):
    """A site's NCCL_P2P_DISABLE=1 (the RTX 4090 workaround) is reported with the known cases and kept
    by apply; NCCL_SHM_DISABLE=0, which does nothing, is disabled; a profile with
    nccl_debug_switches = remove has apply disable the working switch too."""
    root = copy_root(tmp, 'ws-4090')
    write(root, '/etc/nccl.conf', 'NCCL_P2P_DISABLE=1\nNCCL_SHM_DISABLE=0\n')
    f = fact(root, 'nccl.conf.transports_disabled')
    check((f.get('value') or '').startswith('line 1: NCCL_P2P_DISABLE=1 is a debugging switch'),
          'item 6: NCCL_P2P_DISABLE=1 is a transport switch that acts (%r)' % f)
    f = fact(root, 'nccl.conf.noop_switches')
    check((f.get('value') or '').startswith('line 2: NCCL_SHM_DISABLE=0') and 'line 1' not in f.get('value', ''),
          'item 6: NCCL_SHM_DISABLE=0 is the switch that does nothing (%r)' % f)
    rules = ['nccl-conf-transport-off', 'nccl-conf-noop-switches', 'nccl-conf-debug-switches']
    res = audit(root, 'rtx4090-ws', *rules)
    r = res['nccl-conf-transport-off']
    check(r['status'] == 'fail' and r['severity'] == 'info', 'item 6: the kept switch is reported as information')
    check(res['nccl-conf-noop-switches']['status'] == 'fail', 'item 6: the =0 switch fails nccl-conf-noop-switches')
    check(res['nccl-conf-debug-switches']['status'] == 'n/a', 'item 6: the remove rule does not apply by default')
    rc, out, err = run(root, 'explain', 'nccl-conf-transport-off')
    check('RTX 4090' in out and 'nccl-tests/issues/117' in out and '/dev/shm' in out,
          'item 6: explain names the known cases where a switch is needed')
    rc, out, err = run(root, 'apply', '--profile', 'rtx4090-ws', '--rule', 'nccl-conf-noop-switches')
    conf = read(root, '/etc/nccl.conf') or ''
    check(rc == 0, 'item 6: apply exits 0 (%s)' % err.strip())
    check('\nNCCL_P2P_DISABLE=1\n' in conf and '#llmtune-disabled# NCCL_P2P_DISABLE' not in conf,
          'item 6: apply keeps the working NCCL_P2P_DISABLE=1')
    check('\n#llmtune-disabled# NCCL_SHM_DISABLE=0\n' in conf and
          '# disabled below: NCCL_SHM_DISABLE set to 0 does nothing (only 1 acts)\n' in conf,
          'item 6: apply disables NCCL_SHM_DISABLE=0 and says why')
    res = audit(root, 'rtx4090-ws', *rules)
    check(res['nccl-conf-noop-switches']['status'] == 'pass' and res['nccl-conf-transport-off']['status'] == 'fail',
          'item 6: after apply the no-op is gone and the workaround is still reported')
    # a site profile that removes them
    prof = os.path.join(tmp, 'site.ini')
    with open(prof, 'w') as f:
        f.write('[profile]\nname = site\ndescription = x\ninherits = rtx4090-ws\n\n'
                '[params]\nnccl_debug_switches = remove\n')
    rc, out, err = run(root, 'lint', prof)
    check(rc == 0, 'item 6: the site profile lints clean (%s)' % err.strip())
    res = audit(root, prof, *rules)
    check(res['nccl-conf-debug-switches']['status'] == 'fail' and res['nccl-conf-transport-off']['status'] == 'n/a',
          'item 6: with nccl_debug_switches = remove the switch fails nccl-conf-debug-switches')
    rc, out, err = run(root, 'apply', '--profile', prof, '--rule', 'nccl-conf-debug-switches')
    conf = read(root, '/etc/nccl.conf') or ''
    check(rc == 0 and '\n#llmtune-disabled# NCCL_P2P_DISABLE=1\n' in conf and
          '# disabled below: NCCL_P2P_DISABLE is a debugging switch and the profile removes them' in conf,
          'item 6: with remove, apply disables NCCL_P2P_DISABLE=1 and says why (%s)' % err.strip())
# --- item 2: boot-time tuners ----------------------------------------------------------------------

def enable_unit(root, unit, target='multi-user.target'):
    d = os.path.join(root, 'etc/systemd/system', target + '.wants')
    os.makedirs(d, exist_ok=True)
    os.symlink('/usr/lib/systemd/system/' + unit, os.path.join(d, unit))


def plan_notes(root, profile):
    rc, out, err = run(root, 'plan', '--json', '--profile', profile)
    if rc != 0:
        raise RuntimeError('plan exit %d: %s' % (rc, err))
    return [c for c in json.loads(out)['changes'] if c['type'] == 'note']


def case_item2_boot_tuners(tmp):
    """tuned (enabled, active profile including another), power-profiles-daemon, Ubuntu's ondemand,
    cpupower and cpufrequtils set the governor/THP after tmpfiles.d: facts for each with the file
    read, findings that name the service and what to do, and apply's governor change says it lasts
    only until tuned starts."""
    root = copy_root(tmp, 'hgx-h100')
    f = fact(root, 'tuner.count')
    check(f.get('status') == 'absent' and '/etc/systemd/system' in f.get('reason', ''),
          'item 2: without /etc/systemd/system the tuners are unknown (absent), not "none" (%r)' % f)
    res = audit(root, 'h100-sxm-8x', 'boot-tuner-governor')
    check(res['boot-tuner-governor']['status'] == 'n/a', 'item 2: boot-tuner-governor n/a without unit links')
    os.makedirs(os.path.join(root, 'etc/systemd/system'))
    f = fact(root, 'tuner.count')
    check(f.get('value') == 0, 'item 2: with the unit directory and no tuner, tuner.count is 0 (%r)' % f)
    res = audit(root, 'h100-sxm-8x', 'boot-tuner-governor', 'boot-tuner-thp')
    check(res['boot-tuner-governor']['status'] == 'pass', 'item 2: no tuner enabled: boot-tuner-governor passes')

    enable_unit(root, 'tuned.service')
    write(root, '/etc/tuned/active_profile', 'site-hpc\n')
    write(root, '/usr/lib/tuned/throughput-performance/tuned.conf',
          '[main]\nsummary=Broadly applicable tuning\n\n[cpu]\ngovernor=performance\n\n[vm]\ntransparent_hugepages=always\n')
    write(root, '/etc/tuned/site-hpc/tuned.conf',
          '[main]\ninclude=throughput-performance\n\n[site_cpu]\ntype=cpu\ngovernor=ondemand|powersave\n')
    g = fact(root, 'tuner.tuned.governor')
    check(g.get('value') == 'powersave' and g.get('source') == '/etc/tuned/site-hpc/tuned.conf',
          'item 2: tuned governor: the first offered of ondemand|powersave, from the site profile (%r)' % g)
    t = fact(root, 'tuner.tuned.thp')
    check(t.get('value') == 'always' and t.get('source') == '/usr/lib/tuned/throughput-performance/tuned.conf',
          'item 2: tuned THP from the included profile (%r)' % t)
    check(fact(root, 'tuner.tuned.profile').get('source') == '/etc/tuned/active_profile',
          'item 2: the tuned profile is read from /etc/tuned/active_profile')
    # the runtime governor is wrong too: apply would write it, and must say tuned undoes it
    for d in os.listdir(os.path.join(root, 'sys/devices/system/cpu/cpufreq')):
        write(root, '/sys/devices/system/cpu/cpufreq/%s/scaling_governor' % d, 'powersave\n')
    res = audit(root, 'h100-sxm-8x', 'boot-tuner-governor', 'boot-tuner-thp', 'cpu-governor')
    check(res['boot-tuner-governor']['status'] == 'fail' and 'tuner.tuned.governor' in res['boot-tuner-governor']['observed'],
          'item 2: boot-tuner-governor fails naming tuned (%s)' % res['boot-tuner-governor'].get('observed'))
    check(res['boot-tuner-thp']['status'] == 'fail', 'item 2: boot-tuner-thp fails (tuned sets always, profile madvise)')
    notes = plan_notes(root, 'h100-sxm-8x')
    gov = [n['text'] for n in notes if n['rule'] == 'cpu-governor']
    check(any('lasts only until the next boot' in n and 'tuned' in n for n in gov),
          'item 2: the governor change is planned with a note that tuned sets it back (%r)' % gov)
    adv = [n['text'] for n in notes if n['rule'] == 'boot-tuner-governor']
    check(any('include=site-hpc' in n and '[cpu] governor=performance' in n and 'systemctl disable --now tuned' in n
              for n in adv), 'item 2: the finding says how: a tuned profile with the governor, or disable tuned (%r)' % adv)

    enable_unit(root, 'power-profiles-daemon.service', 'graphical.target')
    enable_unit(root, 'ondemand.service')
    enable_unit(root, 'cpupower.service')
    write(root, '/etc/sysconfig/cpupower', 'CPUPOWER_START_OPTS="frequency-set -g performance"\nCPUPOWER_STOP_OPTS=""\n')
    write(root, '/etc/init.d/cpufrequtils', '#!/bin/sh\nENABLE="true"\nGOVERNOR="ondemand"\n')
    write(root, '/etc/default/cpufrequtils', 'GOVERNOR="conservative"\n')
    os.makedirs(os.path.join(root, 'etc/rc2.d'))
    os.symlink('../init.d/cpufrequtils', os.path.join(root, 'etc/rc2.d/S01cpufrequtils'))
    check(fact(root, 'tuner.enabled').get('value') == 'tuned power-profiles-daemon ondemand cpupower cpufrequtils',
          'item 2: all five tuners are found (%r)' % fact(root, 'tuner.enabled'))
    check(fact(root, 'tuner.power-profiles-daemon.governor').get('value') == 'powersave',
          'item 2: power-profiles-daemon writes powersave on intel_pstate')
    check(fact(root, 'tuner.ondemand.governor').get('value') == 'powersave',
          'item 2: ondemand.service: the first of interactive|ondemand|powersave intel_pstate offers')
    check(fact(root, 'tuner.cpupower.governor').get('value') == 'performance',
          'item 2: cpupower: -g performance in /etc/sysconfig/cpupower')
    c = fact(root, 'tuner.cpufrequtils.governor')
    check(c.get('value') == 'conservative' and c.get('source') == '/etc/default/cpufrequtils',
          'item 2: cpufrequtils: /etc/default overrides the script (%r)' % c)
    adv = ' '.join(n['text'] for n in plan_notes(root, 'h100-sxm-8x') if n['rule'] == 'boot-tuner-governor')
    for want in ('systemctl mask --now power-profiles-daemon', 'systemctl disable ondemand',
                 'GOVERNOR="performance" in /etc/default/cpufrequtils'):
        check(want in adv, 'item 2: the advice says %r' % want)
    check('cpupower.service' not in adv, 'item 2: cpupower already sets performance: no advice for it')
    write(root, '/etc/default/cpufrequtils', 'ENABLE="false"\n')
    check('cpufrequtils' not in fact(root, 'tuner.enabled').get('value', ''),
          'item 2: ENABLE="false" in /etc/default/cpufrequtils turns it off')
    os.remove(os.path.join(root, 'etc/tuned/active_profile'))
    rc, out, err = run(root, 'audit', '--json', '--profile', 'h100-sxm-8x', '--rule', 'boot-tuner-governor')
    st = [r['status'] for r in json.loads(out)['results']] if out else []
    check(rc == 3 and st == ['error'],
          'item 2: tuned enabled without an active_profile: cannot tell, an error and exit 3 (not a pass): %d %r' % (rc, st))

    # Unreadable is never "not set" (issue 14 item 2): each file below exists but cannot be read (a
    # directory in its place: EISDIR, or a link loop: ELOOP; root reads through permissions).
    write(root, '/etc/tuned/active_profile', 'site-hpc\n')
    os.makedirs(os.path.join(root, 'etc/tuned/throughput-performance/tuned.conf'))
    t = fact(root, 'tuner.tuned.thp')
    check(t.get('status') == 'unreadable' and t.get('source') == '/etc/tuned/throughput-performance/tuned.conf'
          and 'EISDIR' in t.get('reason', ''),
          'item 2: an unreadable /etc/tuned profile is not passed over for /usr/lib/tuned\'s (%r)' % t)
    write(root, '/etc/default/cpufrequtils', 'ENABLE="true"\n')
    init = os.path.join(root, 'etc/init.d/cpufrequtils')
    os.remove(init)
    os.makedirs(init)
    c = fact(root, 'tuner.cpufrequtils.governor')
    check(c.get('status') == 'unreadable' and c.get('source') == '/etc/init.d/cpufrequtils',
          'item 2: an unreadable cpufrequtils script: its GOVERNOR is unknown, not "none" (%r)' % c)
    conf = os.path.join(root, 'etc/default/cpufrequtils')
    os.remove(conf)
    os.makedirs(conf)
    for name in ('tuner.count', 'tuner.cpufrequtils.unit'):
        x = fact(root, name)
        check(x.get('status') == 'unreadable' and x.get('source') == '/etc/default/cpufrequtils',
              'item 2: ENABLE= unreadable: whether cpufrequtils runs is unknown, %s unreadable (%r)' % (name, x))
    os.rmdir(conf)
    shutil.rmtree(os.path.join(root, 'etc/rc2.d'))
    os.symlink('rc2.d', os.path.join(root, 'etc/rc2.d'))
    x = fact(root, 'tuner.count')
    check(x.get('status') == 'unreadable' and x.get('source') == '/etc/rc2.d',
          'item 2: an rc2.d that cannot be listed: tuner.count unreadable, not "cpufrequtils off" (%r)' % x)


# --- item 18: swapoff margin, zram drop-ins, gpt-auto swap, the installed initramfs tool -------------

def set_meminfo(root, key, kib):
    p = os.path.join(root, 'proc/meminfo')
    with open(p) as f:
        lines = f.read().splitlines(True)
    with open(p, 'w') as f:
        f.write(''.join('%s:%16d kB\n' % (key, kib) if l.startswith(key + ':') else l for l in lines))


def plan_json(root, profile, *rules):
    args = ['plan', '--json', '--profile', profile]
    for r in rules:
        args += ['--rule', r]
    rc, out, err = run(root, *args)
    if rc != 0:
        raise RuntimeError('plan exit %d: %s' % (rc, err))
    return json.loads(out)['changes']


def case_item18_swap_initramfs(tmp):
    """swapoff only with the profile's margin left; zram-generator conf.d drop-ins and GPT-typed swap
    partitions are swap sources; the initramfs command follows the tool installed in the root."""
    root = copy_root(tmp, 'dgx-a100')
    write(root, '/proc/swaps', 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n'
          '/dev/nvme4n1p3                          partition\t16777212\t2097152\t\t-2\n')
    set_meminfo(root, 'MemAvailable', 5 * 1024 * 1024)   # 5 GiB available, 2 GiB swapped out: 3 GiB after
    ch = plan_json(root, 'a100-8x', 'swap-active')
    check(not [c for c in ch if c['type'] == 'swap'], 'item 18: no swapoff when 3 GiB would be left (margin 4 GiB)')
    check(any('below the margin' in (c.get('text') or '') and 'swapoff_min_free' in c['text'] for c in ch),
          'item 18: a note says swap stays on and why (%r)' % [c.get('text') for c in ch])
    set_meminfo(root, 'MemAvailable', 7 * 1024 * 1024)   # 5 GiB left: above the margin
    ch = plan_json(root, 'a100-8x', 'swap-active')
    check([c['target'] for c in ch if c['type'] == 'swap'] == ['/dev/nvme4n1p3'],
          'item 18: swapoff planned when 5 GiB stay available')
    write(root, '/etc/llmtune/profiles.d/site.ini',
          '[profile]\nname = site\ninherits = a100-8x\n[params]\nswapoff_min_free = 6G\n')
    ch = plan_json(root, 'site', 'swap-active')
    check(not [c for c in ch if c['type'] == 'swap'], 'item 18: the margin is the profile parameter swapoff_min_free')

    # zram-generator: a vendor drop-in with a device, an /etc drop-in without one
    write(root, '/usr/lib/systemd/zram-generator.conf.d/50-vendor.conf', '[zram0]\nzram-size = ram / 2\n')
    write(root, '/etc/systemd/zram-generator.conf.d/10-site.conf', '# compression only\n')
    g = fact(root, 'swap.zram.generator')
    check(g.get('value') == '/usr/lib/systemd/zram-generator.conf.d/50-vendor.conf',
          'item 18: a conf.d drop-in that defines [zram0] is a zram source (%r)' % g)
    check(fact(root, 'swap.zram.devices').get('value') == 'zram0', 'item 18: the device it defines')
    res = audit(root, 'a100-8x', 'swap-zram')
    check(res['swap-zram']['status'] == 'fail', 'item 18: swap-zram fails on the drop-in')
    rc, out, err = run(root, 'apply', '--profile', 'a100-8x', '--rule', 'swap-zram')
    check(rc == 0, 'item 18: apply swap-zram exits 0 (%s)' % err.strip())
    link = os.path.join(root, 'etc/systemd/zram-generator.conf.d/50-vendor.conf')
    check(os.path.islink(link) and os.readlink(link) == '/dev/null', 'item 18: the drop-in is masked by name in /etc')
    check(fact(root, 'swap.zram.generator').get('status') == 'absent', 'item 18: after apply no zram source is left')
    rc, out, err = run(root, 'rollback', '--last-run')
    check(rc == 0 and not os.path.lexists(link), 'item 18: rollback removes the mask')
    # a name's copy in an earlier directory hides the later one; drop-ins count in name order
    write(root, '/etc/systemd/zram-generator.conf.d/50-vendor.conf', '# the site turns the vendor device off\n')
    check(fact(root, 'swap.zram.generator').get('status') == 'absent',
          'item 18: an /etc drop-in of the same name hides the vendor one')
    write(root, '/run/systemd/zram-generator.conf.d/60-run.conf', '[zram1]\n')
    write(root, '/usr/lib/systemd/zram-generator.conf.d/05-early.conf', '[zram2]\n')
    check(fact(root, 'swap.zram.devices').get('value') == 'zram2 zram1',
          'item 18: drop-ins read in name order across directories')
    os.remove(os.path.join(root, 'etc/systemd/zram-generator.conf.d/50-vendor.conf'))
    os.remove(os.path.join(root, 'run/systemd/zram-generator.conf.d/60-run.conf'))
    os.remove(os.path.join(root, 'usr/lib/systemd/zram-generator.conf.d/05-early.conf'))

    # systemd-gpt-auto: the swap partition on the root's disk has the GPT swap type
    write(root, '/run/udev/data/b259:35', 'E:ID_PART_ENTRY_SCHEME=gpt\n'
          'E:ID_PART_ENTRY_TYPE=0657fd6d-a4ab-43c4-84e5-0933c84b4f4f\nE:ID_PART_ENTRY_FLAGS=0x0\n')
    check(fact(root, 'swap.gpt_auto.devices').get('value') == '/dev/nvme4n1p3',
          'item 18: the GPT swap partition of the root disk is a swap source')
    res = audit(root, 'a100-8x', 'swap-gpt-auto')
    check(res['swap-gpt-auto']['status'] == 'fail', 'item 18: swap-gpt-auto fails')
    write(root, '/run/udev/data/b259:35', 'E:ID_PART_ENTRY_SCHEME=gpt\n'
          'E:ID_PART_ENTRY_TYPE=0657fd6d-a4ab-43c4-84e5-0933c84b4f4f\nE:ID_PART_ENTRY_FLAGS=0x8000000000000000\n')
    check(fact(root, 'swap.gpt_auto.count').get('value') == 0, 'item 18: attribute 63 (no-auto) excludes it')
    os.remove(os.path.join(root, 'run/udev/data/b259:35'))

    # initramfs: the tool installed, whatever os-release says (this root is Ubuntu)
    def initramfs_cmd():
        ch = plan_json(root, 'a100-8x', 'nouveau-blacklisted')
        return ' '.join(c.get('text') or '' for c in ch if c['type'] == 'note')
    check('update-initramfs -u -k all' in initramfs_cmd(), 'item 18: Ubuntu with initramfs-tools: update-initramfs')
    os.remove(os.path.join(root, 'usr/sbin/update-initramfs'))
    write(root, '/usr/bin/dracut', '#!/bin/sh\n', 0o755)
    check('dracut -f --regenerate-all' in initramfs_cmd(), 'item 18: Ubuntu with dracut installed: dracut')
    os.remove(os.path.join(root, 'usr/bin/dracut'))
    write(root, '/usr/bin/mkinitcpio', '#!/bin/sh\n', 0o755)
    check('mkinitcpio -P' in initramfs_cmd(), 'item 18: mkinitcpio installed: mkinitcpio -P')
    os.remove(os.path.join(root, 'usr/bin/mkinitcpio'))
    t = fact(root, 'os.initramfs_tool')
    check(t.get('status') == 'absent', 'item 18: no tool installed: os.initramfs_tool absent (%r)' % t)
    check('by hand' in initramfs_cmd(), 'item 18: no tool: the plan says to regenerate by hand, names no command')



# --- item 11: memlock ------------------------------------------------------------------------------

def case_item11_memlock(tmp):
    """No configured limit is the kernel default and fails on an RDMA machine; a "*" line does not
    cover root; DefaultLimitMEMLOCK needs daemon-reexec and restarted launchers; the running
    manager's value is reported apart from the configured one."""
    root = copy_root(tmp, 'dgx-a100')          # Linux 5.15, no systemd configuration, no limits
    f = fact(root, 'limits.memlock.service.soft')
    check(f.get('value') == 65536 and 'MLOCK_LIMIT' in f.get('source', ''),
          'item 11: nothing configured on 5.15 is the kernel default 64 KiB (%r)' % f)
    res = audit(root, 'a100-8x', 'memlock-login', 'memlock-services')
    check(res['memlock-services']['status'] == 'fail', 'item 11: memlock-services fails (not n/a) with the default')
    check(res['memlock-login']['status'] == 'fail', 'item 11: memlock-login fails (not n/a) with the default')
    write(root, '/etc/systemd/system.conf', '[Manager]\n#DefaultLimitMEMLOCK=\n')
    f = fact(root, 'limits.memlock.service.soft')
    check(f.get('value') == 8 << 20, 'item 11: with systemd and no setting: its 8M default (%r)' % f)
    write(root, '/etc/security/limits.d/50-site.conf', '* soft memlock unlimited\n* hard memlock unlimited\n')
    check(fact(root, 'limits.memlock.login.soft').get('value') == 'unlimited', 'item 11: "*" lines set the users\' limit')
    r = fact(root, 'limits.memlock.root.soft')
    check(r.get('value') == 8 << 20 and 'does not apply to root' in r.get('source', ''),
          'item 11: a "*" line does not apply to root: root keeps the inherited limit (%r)' % r)
    res = audit(root, 'a100-8x', 'memlock-login')
    check(res['memlock-login']['status'] == 'fail' and 'root' in res['memlock-login']['observed'],
          'item 11: memlock-login fails on root (%s)' % res['memlock-login'].get('observed'))
    ch = plan_json(root, 'a100-8x', 'memlock-login', 'memlock-services')
    rc, out, err = run(root, 'apply', '--profile', 'a100-8x', '--rule', 'memlock-login', '--rule', 'memlock-services')
    check(rc == 0, 'item 11: apply exits 0 (%s)' % err.strip())
    lim = read(root, '/etc/security/limits.d/90-llmtune-memlock.conf') or ''
    check('root soft memlock unlimited' in lim and 'root hard memlock unlimited' in lim and '* hard memlock unlimited' in lim,
          'item 11: the drop-in has "*" and "root" lines')
    notes = ' '.join(c.get('text') or '' for c in ch if c['type'] == 'note' and c['rule'] == 'memlock-services')
    check('systemctl daemon-reexec' in notes and 'slurmd' in notes,
          'item 11: the plan says daemon-reexec and restarting the job launchers (%r)' % notes)
    res = audit(root, 'a100-8x', 'memlock-login', 'memlock-services', 'memlock-services-running')
    check(res['memlock-login']['status'] == 'pass' and res['memlock-services']['status'] == 'pass',
          'item 11: both configured limits pass after apply')
    check(res['memlock-services-running']['status'] == 'n/a', 'item 11: no /proc/1/limits in the tree: running value n/a')
    write(root, '/proc/1/limits', 'Limit                     Soft Limit           Hard Limit           Units     \n'
          'Max cpu time              unlimited            unlimited            seconds   \n'
          'Max locked memory         8388608              8388608              bytes     \n')
    m = fact(root, 'limits.memlock.manager.soft')
    check(m.get('value') == 8388608 and m.get('source') == '/proc/1/limits', 'item 11: the manager value from /proc/1/limits')
    res = audit(root, 'a100-8x', 'memlock-services', 'memlock-services-running')
    check(res['memlock-services']['status'] == 'pass' and res['memlock-services-running']['status'] == 'fail',
          'item 11: configured infinity but PID 1 still at 8 MiB: reported apart (daemon-reexec pending)')


# --- item 14: nvidia-persistenced through udev; fabric manager version ------------------------------

DPKG_FM = ('Package: nvidia-fabricmanager-dev-535\nStatus: install ok installed\nVersion: 535.104.05-1\n\n'
           'Package: nvidia-fabricmanager-535\nStatus: install ok installed\nVersion: %s\n\n'
           'Package: zlib1g\nStatus: install ok installed\nVersion: 1:1.2.13.dfsg-1\n')


def case_item14_persistenced_fabricmanager(tmp):
    """nvidia-persistenced pulled in by the driver package's udev rule (ENV{SYSTEMD_WANTS}) is enabled;
    a masked rules file is not. The fabric manager passes only when it is enabled and its dpkg version
    equals the loaded driver's (535.104.05); an unreadable version is an error, never a pass."""
    root = copy_root(tmp, 'hgx-h100')
    os.makedirs(os.path.join(root, 'etc/systemd/system/multi-user.target.wants'))
    write(root, '/usr/lib/systemd/system/nvidia-persistenced.service', '[Service]\nExecStart=/usr/bin/nvidia-persistenced\n')
    res = audit(root, 'h100-sxm-8x', 'driver-persistenced')
    check(res['driver-persistenced']['status'] == 'fail', 'item 14: no .wants link and no udev rule fails')
    rules = ('# Start nvidia-persistenced when the driver binds a GPU\n'
             '# ENV{SYSTEMD_WANTS}="nvidia-persistenced.service" in a comment does not count\n'
             'ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", TAG+="systemd", '
             'ENV{SYSTEMD_WANTS}="nvidia-persistenced.service"\n')
    write(root, '/lib/udev/rules.d/71-nvidia-persistenced.rules', rules)
    f = fact(root, 'service.nvidia-persistenced.enabled')
    check(f.get('value') is True and f.get('source') == '/lib/udev/rules.d/71-nvidia-persistenced.rules',
          'item 14: the udev rule makes nvidia-persistenced enabled, the rule file is the source (%r)' % f)
    res = audit(root, 'h100-sxm-8x', 'driver-persistenced')
    check(res['driver-persistenced']['status'] == 'pass', 'item 14: driver-persistenced passes through udev')
    os.makedirs(os.path.join(root, 'etc/udev/rules.d'), exist_ok=True)
    os.symlink('/dev/null', os.path.join(root, 'etc/udev/rules.d/71-nvidia-persistenced.rules'))
    f = fact(root, 'service.nvidia-persistenced.enabled')
    check(f.get('value') is False, 'item 14: a rules file masked in /etc/udev/rules.d does not count (%r)' % f)
    # fabric manager: enabled and the same version as the driver
    wants = os.path.join(root, 'etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service')
    os.symlink('/lib/systemd/system/nvidia-fabricmanager.service', wants)
    # no package database knows it (the fixture's rpm database taken away: issue 29 item 7 reads it)
    os.unlink(os.path.join(root, 'var/lib/rpm/rpmdb.sqlite'))
    fm = ['driver-fabricmanager', 'driver-fabricmgr-version']
    rc, out, err = run(root, 'audit', '--json', '--profile', 'h100-sxm-8x', '--rule', fm[0], '--rule', fm[1])
    check(rc == 3, 'item 14: an unreadable fabric manager version makes the audit exit 3 (%d)' % rc)
    res = {r['rule']: r for r in json.loads(out)['results']}
    r = res['driver-fabricmgr-version']
    check(res['driver-fabricmanager']['status'] == 'pass' and r['status'] == 'error',
          'item 14: without a dpkg record the version rule is an error, not a pass (%r)' % r['status'])
    f = fact(root, 'fabricmanager.driver_match')
    check(f.get('status') == 'unreadable' and 'no dpkg database' in (f.get('reason') or ''),
          'item 14: the reason says the version could not be read (%r)' % f)
    write(root, '/var/lib/dpkg/status', DPKG_FM % '535.86.10-0ubuntu0.22.04.1')
    f = fact(root, 'fabricmanager.version')
    check(f.get('value') == '535.86.10', 'item 14: the upstream version of nvidia-fabricmanager-535 (%r)' % f)
    res = audit(root, 'h100-sxm-8x', *fm)
    check(res['driver-fabricmgr-version']['status'] == 'fail' and res['driver-fabricmgr-version']['severity'] == 'critical',
          'item 14: fabric manager 535.86.10 with driver 535.104.05 fails')
    write(root, '/var/lib/dpkg/status', DPKG_FM % '535.104.05-1')
    res = audit(root, 'h100-sxm-8x', *fm)
    check(res['driver-fabricmgr-version']['status'] == 'pass', 'item 14: the same version passes')
    os.unlink(wants)
    res = audit(root, 'h100-sxm-8x', *fm)
    check(res['driver-fabricmanager']['status'] == 'fail' and res['driver-fabricmgr-version']['status'] == 'n/a',
          'item 14: the right version but not enabled fails driver-fabricmanager')


# --- item 17: llmtune exec: preferred memory, RAM per GPU, CUDA_VISIBLE_DEVICES by UUID ------------

NVSMI = ('<?xml version="1.0" ?>\n<nvidia_smi_log>\n<driver_version>535.104.05</driver_version>\n'
         '<attached_gpus>2</attached_gpus>\n%s</nvidia_smi_log>\n')
NVSMI_GPU = ('<gpu id="00000000:%s">\n<product_name>NVIDIA GeForce RTX 4090</product_name>\n<uuid>%s</uuid>\n'
             '<pci><pci_bus_id>00000000:%s</pci_bus_id></pci>\n</gpu>\n')
UUID0 = 'GPU-11111111-2222-3333-4444-555555555555'
UUID1 = 'GPU-9a8b7c6d-0000-1111-2222-333333333333'


def run_env(root, env, *args):
    e = dict(os.environ, NO_COLOR='1', LC_ALL='C', **env)
    for k in ('LOCAL_RANK', 'SLURM_LOCALID', 'CUDA_VISIBLE_DEVICES'):
        if k not in env:
            e.pop(k, None)
    p = subprocess.run([BIN, '--root', root, *args], capture_output=True, text=True, env=e, timeout=120)
    return p.returncode, p.stdout, p.stderr


def case_item17_exec(tmp):
    """exec prefers the GPU's node instead of binding to it, warns when the node's memory per GPU is
    below the profile's ram_per_gpu, and maps CUDA_VISIBLE_DEVICES UUIDs and R470 MIG names through
    the GPUs' UUIDs; what it cannot map runs unbound (exit 0) unless --strict."""
    root = copy_root(tmp, 'dgx-a100')
    rc, out, err = run_env(root, {}, 'exec', '--profile', 'a100-8x', '--gpu', '2', '--', 'python', 'train.py')
    check(rc == 0 and 'memory preferred on NUMA node 1' in out, 'item 17: the default memory policy is preferred (%r)' % out)
    # the node holds its share of the machine's memory (issue 29 item 15): no warning with memory preferred
    check('warning' not in err, 'item 17: no warning for a node that holds its share (%r)' % err)
    rc, out, err = run_env(root, {}, 'exec', '--profile', 'a100-8x', '--mem', 'bind', '--gpu', '2', '--', 'true')
    check('memory bound to NUMA node 1' in out and 'OOM-killed' in err and
          "NUMA node 1's 130816 MiB for its 2 GPUs, 65408 MiB per GPU, less than profile a100-8x's ram_per_gpu "
          '(122880 MiB)' in err,
          'item 17: --mem bind binds, and the warning says what it risks (%r)' % err)
    rc, out, err = run_env(root, {'LOCAL_RANK': '0', 'CUDA_VISIBLE_DEVICES': UUID1}, 'exec', '--local-rank', '--', 'true')
    check(rc == 0 and 'the GPUs\' UUIDs are unknown here' in out and 'would run unbound' in out,
          'item 17: without the GPUs\' UUIDs a UUID entry runs unbound, exit 0 (%d, %r)' % (rc, out + err))
    rc, out, err = run_env(root, {'LOCAL_RANK': '0', 'CUDA_VISIBLE_DEVICES': UUID1}, 'exec', '--strict', '--local-rank',
                           '--', 'true')
    check(rc == 1 and 'UUIDs are unknown' in err, 'item 17: with --strict it exits 1 (%d)' % rc)
    # the workstation with an nvidia-smi capture naming both GPUs
    root = copy_root(tmp, 'ws-4090')
    write(root, '/var/lib/llmtune/captures/nvidia-smi.xml',
          NVSMI % (NVSMI_GPU % ('01:00.0', UUID0, '01:00.0') + NVSMI_GPU % ('02:00.0', UUID1, '02:00.0')))
    rc, out, err = run_env(root, {'LOCAL_RANK': '0', 'CUDA_VISIBLE_DEVICES': UUID1}, 'exec', '--local-rank', '--', 'true')
    check(rc == 0 and out.startswith('GPU 1 (0000:02:00.0): CPUs'), 'item 17: a full GPU UUID maps to GPU 1 (%r)' % (out + err))
    rc, out, err = run_env(root, {'LOCAL_RANK': '1', 'CUDA_VISIBLE_DEVICES': '0,' + UUID1[:12]}, 'exec', '--local-rank',
                           '--', 'true')
    check(rc == 0 and out.startswith('GPU 1 (0000:02:00.0): CPUs'), 'item 17: a unique UUID prefix maps (%r)' % (out + err))
    rc, out, err = run_env(root, {'LOCAL_RANK': '0', 'CUDA_VISIBLE_DEVICES': 'MIG-' + UUID0 + '/1/0'}, 'exec',
                           '--local-rank', '--', 'true')
    check(rc == 0 and out.startswith('GPU 0 (0000:01:00.0): CPUs'), 'item 17: an R470 MIG name maps to its GPU (%r)' % (out + err))
    rc, out, err = run_env(root, {'LOCAL_RANK': '0', 'CUDA_VISIBLE_DEVICES': 'MIG-0d7f3a52-1111-2222-3333-444444444444'},
                           'exec', '--local-rank', '--', 'true')
    check(rc == 0 and 'is a MIG instance' in out and 'would run unbound' in out,
          'item 17: a MIG UUID cannot be mapped: unbound, exit 0 (%r)' % (out + err))
    rc, out, err = run_env(root, {'LOCAL_RANK': '0', 'CUDA_VISIBLE_DEVICES': 'GPU-ffff'}, 'exec', '--local-rank', '--', 'true')
    check(rc == 0 and 'no GPU has the UUID GPU-ffff' in out, 'item 17: an unknown UUID says so (%r)' % (out + err))


# --- item 16: host RAM per GPU from the shipped systems; A100 40 GB vs 80 GB by their memory ----------

def set_bar1(root, addr, size):
    """Give the function ADDR a BAR1 of SIZE bytes (line 1 of its sysfs resource file)."""
    path = os.path.join(root, 'sys/bus/pci/devices', addr, 'resource')
    with open(path) as f:
        lines = f.read().splitlines()
    start, _, flags = lines[1].split()
    lines[1] = '0x%016x 0x%016x %s' % (int(start, 16), int(start, 16) + size - 1, flags)
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def case_item16_ram_per_gpu(tmp):
    """The DGX A100 fixture (8x A100-SXM4-40GB, 10de:20b0, 64 GiB BAR1, 1 TB) is a100-8x and has the
    RAM per GPU of a DGX A100 320GB; the same node with 80 GB boards (10de:20b2, 128 GiB BAR1) is
    a100-80gb-8x and lacks half."""
    root = copy_root(tmp, 'dgx-a100')
    rc, out, err = run(root, 'recommend')
    check(out.startswith('a100-8x\t'), 'item 16: 20b0 boards are a100-8x (%r)' % out[:60])
    res = audit(root, 'a100-8x', 'host-ram-per-gpu')
    check(res['host-ram-per-gpu']['status'] == 'pass', 'item 16: 1 TB for 8x 40 GB passes')
    changed = 0
    devs = os.path.join(root, 'sys/bus/pci/devices')
    for d in os.listdir(devs):
        h = os.path.join(devs, d, 'device')
        if read(root, '/sys/bus/pci/devices/%s/device' % d) == '0x20b0\n':
            with open(h, 'w') as f:
                f.write('0x20b2\n')
            set_bar1(root, d, 128 << 30)
            changed += 1
    check(changed == 8, 'item 16: the 8 GPUs now say 10de:20b2 (%d)' % changed)
    rc, out, err = run(root, 'recommend')
    check(out.startswith('a100-80gb-8x\t'), 'item 16: 20b2 boards are a100-80gb-8x (%r)' % out[:60])
    res = audit(root, 'a100-80gb-8x', 'host-ram-per-gpu')
    r = res['host-ram-per-gpu']
    check(r['status'] == 'fail' and '240G' in (r.get('expected') or ''),
          'item 16: 1 TB for 8x 80 GB fails the DGX A100 640GB figure (%r)' % r.get('expected'))
    rc, out, err = run(root, 'explain', 'host-ram-per-gpu')
    check('DGX A100 User Guide' in out, 'item 16: the rule cites NVIDIA\'s DGX documentation')


def case_zram_mask_in_place(tmp):
    """Debian's systemd-zram-generator ships /etc/systemd/zram-generator.conf itself: zram-off masks
    it in place (the file removed and kept, a /dev/null link made at its path). The link is what
    the path holds afterwards, so verify is clean and rollback --all restores the file. Found by the
    boot lab (issue 30): verify reported the removal as drifted and rollback refused."""
    root = copy_root(tmp, 'vm-nogpu')
    conf = '[zram0]\nzram-size = min(ram / 2, 4096)\ncompression-algorithm = zstd\n'
    write(root, '/etc/systemd/zram-generator.conf', conf)
    rc, out, err = run(root, 'apply', '--profile', 'base', '--rule', 'swap-zram')
    path = os.path.join(root, 'etc/systemd/zram-generator.conf')
    check(rc == 0 and os.path.islink(path) and os.readlink(path) == '/dev/null',
          'zram mask: apply masks the /etc file in place (%d: %s)' % (rc, err.strip()))
    rc, out, err = run(root, 'verify', '--json')
    v = json.loads(out) if out.strip() else {}
    check(rc == 0 and v.get('status') == 'clean',
          'zram mask: verify is clean (%d, %s: %s)' % (rc, v.get('status'),
                                                       [(c['type'], c['status']) for c in v.get('changes', [])]))
    rc, out, err = run(root, 'rollback', '--all')
    restored = not os.path.islink(path) and os.path.isfile(path) and open(path).read() == conf
    check(rc == 0 and restored, 'zram mask: rollback --all restores the file (%d: %s)' % (rc, err.strip()))


CASES = {
    'item11-memlock': case_item11_memlock,
    'item18-swap-initramfs': case_item18_swap_initramfs,
    'item2-boot-tuners': case_item2_boot_tuners,
    'item1-sysctl-override': case_item1_sysctl_override,
    'item13-shmmax-default': case_item13_shmmax_default,
    'item3-ext4-stripe': case_item3_ext4_stripe,
    'item4-xfs-alignment': case_item4_xfs_alignment,
    'item5-gpudirect': case_item5_gpudirect,
    'item8-ib-hca': case_item8_ib_hca,
    'item9-socket-ifname': case_item9_socket_ifname,
    'item10-nccl-lint': case_item10_nccl_lint,
    'item6-debug-switches': case_item6_debug_switches,
    'item14-persistenced-fabricmanager': case_item14_persistenced_fabricmanager,
    'item16-ram-per-gpu': case_item16_ram_per_gpu,
    'item17-exec': case_item17_exec,
    'i29-item8-socket-ifname': case_i29_item8_socket_ifname,
    'i29-item5-xfs-reshaped': case_i29_item5_xfs_reshaped,
    'i29-item10-slurm-memlock': case_i29_item10_slurm_memlock,
    'zram-mask-in-place': case_zram_mask_in_place,
    'i29-item4-tmpfiles': case_i29_item4_tmpfiles,
    'i29-item4-limits': case_i29_item4_limits,
    'i29-item4-system-conf': case_i29_item4_system_conf,
    'i29-item4-modprobe': case_i29_item4_modprobe,
    'i29-item4-udev': case_i29_item4_udev,
    'i29-item6-iommu': case_i29_item6_iommu,
    'i29-item9-cmdline': case_i29_item9_cmdline,
}


def main(cases=None):
    """Run CASES (name: function(tmpdir)), this file's by default; test_hardware.py passes its own."""
    global BIN, ROOTS
    cases = cases or CASES
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('cases', nargs='*')
    a = ap.parse_args()
    BIN, ROOTS = os.path.abspath(a.llmtune), os.path.abspath(a.roots)
    names = a.cases or list(cases)
    tmp = tempfile.mkdtemp(prefix='llmtune-advice-')
    try:
        for n in names:
            print('== %s' % n)
            d = os.path.join(tmp, n)
            os.mkdir(d)
            try:
                cases[n](d)
            except Exception as e:  # a crash of the harness is a failure of that case
                check(False, '%s: %s: %s' % (n, type(e).__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == '__main__':
    sys.exit(main())
