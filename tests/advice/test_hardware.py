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


CASES = {
    'item16-unknown-locality': case_item16_unknown_locality,
}


if __name__ == '__main__':
    sys.exit(adv.main(CASES))
