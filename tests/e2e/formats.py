#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Names from a tree that do not fit the format of the file they would be written to are refused,
with the path they came from (src/base/file-format.c), on copies of the fixture roots:

  ib-newline    an InfiniBand device named "mlx5_7\\nNCCL_NET_PLUGIN=evil" (a compute HCA, with
                a storage HCA beside it so that NCCL_IB_HCA is written): nccl conf, nccl env and
                apply write no NCCL_NET_PLUGIN line, say why naming /sys/class/infiniband/...,
                and verify is clean
  ib-comma      a device named "mlx5_7,mlx5_0": NCCL_IB_HCA is not written, with a note naming
                the device (before, the name split at its comma made the storage HCA mlx5_0 count
                as a compute one, and NCCL_IB_HCA was left unset for that reason)
  sysctl-name   a vendor sysctl.d file named "99-x\\nkernel.core_pattern=|evil.conf" that sets a key
                a rule fixes: it is not shadowed (the copy's name and the comment naming it would
                carry the newline), the plan says so, and no sysctl.d file sets kernel.core_pattern
  gpu-address   a PCI device link named "\\n0000:01:00.0": affinity refuses it naming the link (or the
                PCI probe already passes over it), apply
                writes no gpu-affinity.conf with a broken line
  site-rules    site rules whose remedies would write a limits.d line of three fields, a systemd
                value with a specifier, a tmpfiles.d argument with '%', a mount option with ','
                and a unit name with a blank: each refused as a manual step naming the format

    formats.py --llmtune BIN --roots DIR [--case NAME]...
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)

EVIL = 'NCCL_NET_PLUGIN=evil'


def run(a, root, *args):
    p = subprocess.run([a.llmtune, '--root', root, *args], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, NO_COLOR='1', LC_ALL='C'))
    return p.returncode, p.stdout, p.stderr


def copy(a, tmp, name, as_):
    dest = os.path.join(tmp, as_)
    subprocess.run(['cp', '-a', os.path.join(a.roots, name), dest], check=True)
    return dest


def rename_link(root, cls, old, new):
    """Give the class link CLS/OLD (and the device directory it points to) the name NEW."""
    link = os.path.join(root, cls, old)
    target = os.readlink(link)
    real = os.path.normpath(os.path.join(os.path.dirname(link), target))
    os.rename(real, os.path.join(os.path.dirname(real), new))
    os.unlink(link)
    os.symlink(os.path.join(os.path.dirname(target), new), os.path.join(root, cls, new))


def live_lines(text):
    """The lines a reader obeys (not comments, not blank)."""
    return [line for line in text.splitlines() if line.strip() and not line.startswith('#')]


def ib_tree(a, tmp, as_, name):
    """dgx-a100 with mlx5_7 renamed NAME and mlx5_0 moved to a NUMA node without a GPU (storage)."""
    root = copy(a, tmp, 'dgx-a100', as_)
    rename_link(root, 'sys/class/infiniband', 'mlx5_7', name)
    with open(os.path.join(root, 'sys/class/infiniband/mlx5_0/device/numa_node'), 'w') as f:
        f.write('0\n')
    return root


def case_ib_newline(a, tmp):
    name = 'mlx5_7\n' + EVIL
    root = ib_tree(a, tmp, 'ib-newline', name)
    rc, out, err = run(a, root, 'nccl', 'conf', '--profile', 'a100-8x')
    check(rc == 0 and not any(line.startswith('NCCL_NET_PLUGIN') for line in live_lines(out)),
          'ib-newline: nccl conf writes no NCCL_NET_PLUGIN line (%r)' % live_lines(out))
    check(not any(line.startswith('NCCL_IB_HCA') for line in live_lines(out)) and
          "NCCL_IB_HCA not written: the InfiniBand device name 'mlx5_7\\nNCCL_NET_PLUGIN=evil' (from "
          "/sys/class/infiniband/mlx5_7\\nNCCL_NET_PLUGIN=evil/" in out,
          'ib-newline: NCCL_IB_HCA is not written, and the comment names the device and its path')
    rc, out, err = run(a, root, 'nccl', 'env', '--profile', 'a100-8x')
    check(rc == 0 and not any('NCCL_NET_PLUGIN' in line for line in live_lines(out)),
          'ib-newline: nccl env exports no NCCL_NET_PLUGIN (%r)' % live_lines(out))
    rc, out, err = run(a, root, 'apply', '--profile', 'a100-8x')
    with open(os.path.join(root, 'etc', 'nccl.conf')) as f:
        conf = f.read()
    check(rc == 0 and not any(line.startswith('NCCL_NET_PLUGIN') for line in live_lines(conf)),
          'ib-newline: apply writes /etc/nccl.conf without it (rc %d: %s)' % (rc, err.strip()[-200:]))
    rc, out, err = run(a, root, 'verify')
    check(rc == 0, 'ib-newline: verify is clean (rc %d)' % rc)


def case_ib_comma(a, tmp):
    root = ib_tree(a, tmp, 'ib-comma', 'mlx5_7,mlx5_0')
    rc, out, err = run(a, root, 'nccl', 'conf', '--profile', 'a100-8x')
    check(rc == 0 and not any(line.startswith('NCCL_IB_HCA') for line in live_lines(out)) and
          "the InfiniBand device name 'mlx5_7,mlx5_0'" in out and "',' separates items" in out,
          'ib-comma: NCCL_IB_HCA is not written with a name that holds list syntax (%r)' % live_lines(out))


def case_sysctl_name(a, tmp):
    root = copy(a, tmp, 'dgx-a100', 'sysctl-name')
    vendor = os.path.join(root, 'usr', 'lib', 'sysctl.d')
    os.makedirs(vendor, exist_ok=True)
    name = '99-x\nkernel.core_pattern=|evil.conf'
    with open(os.path.join(vendor, name), 'w') as f:
        f.write('kernel.numa_balancing = 1\n')
    rc, out, err = run(a, root, 'plan', '--profile', 'a100-8x', '--rule', 'numa-balancing')
    check("the file name '99-x\\nkernel.core_pattern=|evil.conf' (from /usr/lib/sysctl.d/99-x\\n"
          "kernel.core_pattern=|evil.conf) cannot be written to sysctl.d" in out and 'not shadowed' in out,
          'sysctl-name: the plan refuses to shadow it, naming the file (%s)' % out.strip()[-300:])
    rc, out, err = run(a, root, 'apply', '--profile', 'a100-8x', '--rule', 'numa-balancing')
    d = os.path.join(root, 'etc', 'sysctl.d')
    setting = []
    for n in os.listdir(d):
        with open(os.path.join(d, n)) as f:
            setting += [(n, line) for line in live_lines(f.read()) if line.startswith('kernel.core_pattern')]
    check(rc == 0 and not setting and all('\n' not in n for n in os.listdir(d)),
          'sysctl-name: apply writes no sysctl.d line setting kernel.core_pattern (rc %d, %r)' % (rc, setting))


def case_gpu_address(a, tmp):
    root = copy(a, tmp, 'ws-4090', 'gpu-address')
    devs = os.path.join(root, 'sys', 'bus', 'pci', 'devices')
    target = os.readlink(os.path.join(devs, '0000:01:00.0'))
    os.unlink(os.path.join(devs, '0000:01:00.0'))
    os.symlink(target, os.path.join(devs, '\n0000:01:00.0'))
    # The PCI probe may already pass over a link that is not an address (then the GPU is not seen);
    # where it does not, the affinity map refuses it naming the link. Either way no broken line.
    good = re.compile(r'^\d+ [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] -?\d+ \S+ \S+ \S+$')
    rc, out, err = run(a, root, 'affinity')
    check((rc == 1 and "the GPU address '\\n0000:01:00.0' (from /sys/bus/pci/devices/\\n0000:01:00.0) cannot be "
           "written to gpu-affinity.conf" in err) or (rc == 0 and all(good.match(x) for x in live_lines(out))),
          'gpu-address: affinity refuses it naming the link, or prints only well-formed lines (rc %d: %s)' %
          (rc, (err or out).strip()[-300:]))
    rc, out, err = run(a, root, 'apply', '--profile', 'rtx4090-ws')
    conf = os.path.join(root, 'etc', 'llmtune', 'gpu-affinity.conf')
    lines = live_lines(open(conf).read()) if os.path.exists(conf) else []
    check(rc == 0 and all(good.match(line) for line in lines),
          'gpu-address: apply writes no broken gpu-affinity.conf line (rc %d, %r)' % (rc, lines))


# Site rules that never pass (cpu.count == 99999), each with a remedy whose value does not fit the
# format it would be written in: rule id, title, remedy kind, remedy parameters.
SITE_RULES = (
    ('site-limits', 'a limits.d line of three fields', 'dropin',
     {'path': '/etc/security/limits.d/90-llmtune-site.conf', 'content': '* soft memlock'}),
    ('site-unit-value', 'a systemd value with a specifier', 'dropin',
     {'path': '/etc/systemd/system.conf.d/90-llmtune-site.conf',
      'content': '[Manager]\\nDefaultEnvironment=X=%n'}),
    ('site-tmpfiles', 'a tmpfiles.d argument with a specifier', 'sysfs',
     {'path': '/sys/kernel/mm/transparent_hugepage/enabled', 'value': '100%'}),
    ('site-unit-name', 'a unit name with a blank', 'service-enable', {'unit': 'evil unit.service'}),
    ('site-mount-option', 'a mount option with a comma', 'mount-option', {'option': 'noatime,suid'}),
)


def site_rules_ini():
    text = ''
    for rid, title, kind, params in SITE_RULES:
        text += ('[%s]\ntitle = %s\narea = site\nseverity = warning\nrationale = test\nsource = test\n'
                 'check = cpu.count == 99999\nremedy = %s\n' % (rid, title, kind))
        text += ''.join('remedy.%s = %s\n' % kv for kv in params.items()) + '\n'
    return text


def case_site_rules(a, tmp):
    root = copy(a, tmp, 'vm-nogpu', 'site-rules')
    d = os.path.join(root, 'etc', 'llmtune', 'rules.d')
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'site.ini'), 'w') as f:
        f.write(site_rules_ini())
    rules = [r[0] for r in SITE_RULES]
    args = ['plan', '--profile', 'base', '--json'] + [x for r in rules for x in ('--rule', r)]
    rc, out, err = run(a, root, *args)
    try:
        plan = json.loads(out)
    except ValueError:
        check(False, 'site-rules: plan --json (rc %d: %s)' % (rc, err.strip()[-300:]))
        return
    changes = plan.get('changes', [])
    notes = ' | '.join(str(c.get('text') or c.get('detail') or c) for c in changes if c.get('type') == 'note')
    check(not [c for c in changes if c.get('type') in ('file', 'link')],
          'site-rules: no file or link planned (%r)' % [c.get('target') for c in changes if c.get('type') != 'note'])
    for rule, fmt in (('site-limits', 'limits.d'), ('site-unit-value', 'a systemd unit or drop-in'),
                      ('site-tmpfiles', 'tmpfiles.d'), ('site-unit-name', 'a systemd unit or drop-in'),
                      ('site-mount-option', 'fstab')):
        check('of rule %s' % rule in notes and 'cannot be written to %s' % fmt in notes,
              'site-rules: %s refused as not fitting %s' % (rule, fmt))


CASES = {'ib-newline': case_ib_newline, 'ib-comma': case_ib_comma,
         'sysctl-name': case_sysctl_name, 'gpu-address': case_gpu_address, 'site-rules': case_site_rules}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--case', action='append', choices=sorted(CASES))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix='llmtune-formats-') as tmp:
        for name in a.case or CASES:
            CASES[name](a, tmp)
    return finish()


if __name__ == '__main__':
    sys.exit(main())
