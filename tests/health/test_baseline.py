#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""llmtune baseline (issue 33 item 4): a site profile from a node the operator trusts.

  - the baseline of hgx-h100 inherits its detected profile and holds what the node has (8 GPUs of
    device 2330, x16 Gen5 links, 8 adapters at 400 Gb/s InfiniBand with firmware 28.39.1002, driver
    535.104.05, 2 NUMA nodes); nvlink_per_gpu is left unset with the reason (no capture);
  - lint accepts it; an audit of the same node with it passes every baseline rule and fails no rule
    the audit with the detected profile passed;
  - a copy of the node with another firmware on one adapter and another driver fails
    baseline-hca-firmware (naming the adapter) and baseline-driver-version, and nothing else of it;
  - a node whose compute ports run two fabrics, or an unnamed one, gets no ib_link_layer, with the
    reason;
  - vm-nogpu: gpu_count = 0, no adapter parameter, and lint accepts it."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    print(('ok: ' if cond else 'FAIL: ') + what)
    if not cond:
        failures.append(what)


def run(llmtune, root, *args):
    return subprocess.run([llmtune, '--root', root] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=dict(os.environ, LC_ALL='C', NO_COLOR='1'), timeout=600)


def results(p):
    return {r['rule']: r for r in json.loads(p.stdout)['results']}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='llmtune-baseline-')
    try:
        body(a, tmp)
    finally:
        shutil.rmtree(tmp)
    if failures:
        sys.exit('%d failed' % len(failures))


def body(a, tmp):
    root = os.path.join(a.roots, 'hgx-h100')
    out = os.path.join(tmp, 'h100-baseline.ini')
    p = run(a.llmtune, root, 'baseline', '-o', out)
    check(p.returncode == 0, 'baseline exits 0 (%d %s)' % (p.returncode, p.stderr.strip()))
    text = open(out).read() if os.path.exists(out) else ''
    for line in ('inherits = h100-sxm-8x', 'gpu_count = 8', 'gpu_device_id = 2330', 'gpu_pcie_width = 16',
                 'gpu_pcie_speed = 32000', 'ib_hca_count = 8', 'ib_rate_gbps = 400', 'ib_link_layer = ib',
                 'hca_fw_version = 28.39.1002', 'nvidia_driver_version = 535.104.05', 'numa_nodes = 2',
                 'gpu_per_socket = 4,4', 'nvswitch_count = 4',
                 '# nvlink_per_gpu not set: nvml.count absent: no nvidia-smi capture'):
        check(line + '\n' in text or (line.startswith('#') and line in text), 'the baseline holds %r' % line)
    p = run(a.llmtune, root, 'lint', out)
    check(p.returncode == 0, 'lint accepts it (%d %s)' % (p.returncode, (p.stdout + p.stderr).strip()[-300:]))
    mine = results(run(a.llmtune, root, 'audit', '--json', '--profile', out))
    detected = results(run(a.llmtune, root, 'audit', '--json'))
    ours = [r for r in mine if r.startswith('baseline-')] + ['ib-link-layer']
    check(len(ours) == 8 and all(mine[r]['status'] == 'pass' for r in ours),
          'the same node passes every baseline rule and ib-link-layer (%s)' % {r: mine[r]['status'] for r in ours})
    worse = [r for r in detected if detected[r]['status'] != 'fail' and mine.get(r, {}).get('status') == 'fail']
    check(not worse, 'no rule fails with the baseline that passed with the detected profile (%s)' % worse)

    # A twin that drifted: another firmware on one adapter, another driver.
    twin = os.path.join(tmp, 'twin')
    shutil.copytree(root, twin, symlinks=True)
    with open(os.path.join(twin, 'sys/class/infiniband/mlx5_3', 'fw_ver'), 'w') as f:
        f.write('28.40.1000\n')
    ver = os.path.join(twin, 'proc/driver/nvidia/version')
    with open(ver) as f:
        v = f.read()
    with open(ver, 'w') as f:
        f.write(v.replace('535.104.05', '535.129.03'))
    got = results(run(a.llmtune, twin, 'audit', '--json', '--profile', out))
    for rule, text in (('baseline-hca-firmware', 'ib.mlx5_3.fw_ver = 28.40.1000'),
                       ('baseline-driver-version', '535.129.03'),
                       ('baseline-gpu-count', None), ('ib-link-layer', None)):
        r = got.get(rule, {})
        want = 'fail' if text else 'pass'
        check(r.get('status') == want and (not text or text in (r.get('observed') or '')),
              '%s %s on the drifted twin (%s %r)' % (rule, want, r.get('status'), r.get('observed')))

    # The fabric is one parameter (ib_link_layer, rules/infiniband.ini): a node whose compute ports
    # run two fabrics, or one no site can name, gives none, with the reason.
    for name, layers, want in (('mixed', {'mlx5_6': 'Ethernet'}, '# ib_link_layer not set: not the same on this node'),
                               ('unnamed', None, '# ib_link_layer not set: ib.mlx5_0.port.1.fabric = other, not one of')):
        odd = os.path.join(tmp, name)
        shutil.copytree(root, odd, symlinks=True)
        ibdir = os.path.join(odd, 'sys/class/infiniband')
        for dev in sorted(os.listdir(ibdir)):
            layer = (layers or {}).get(dev, 'Unspecified' if layers is None else None)
            if layer:
                with open(os.path.join(ibdir, dev, 'ports/1/link_layer'), 'w') as f:
                    f.write(layer + '\n')
        p = run(a.llmtune, odd, 'baseline')
        check(p.returncode == 0 and want in p.stdout and '\nib_link_layer =' not in p.stdout,
              '%s fabrics: %r (%s)' % (name, want, [l for l in p.stdout.splitlines() if 'ib_link_layer' in l]))

    out = os.path.join(tmp, 'vm-baseline.ini')
    root = os.path.join(a.roots, 'vm-nogpu')
    p = run(a.llmtune, root, 'baseline', '-o', out)
    text = open(out).read() if os.path.exists(out) else ''
    check(p.returncode == 0 and 'gpu_count = 0\n' in text and '\nhca_fw_version =' not in text and
          '# hca_fw_version not set: none on this node' in text, 'vm-nogpu: no GPU, no adapter parameter')
    p = run(a.llmtune, root, 'lint', out)
    check(p.returncode == 0, 'lint accepts the vm-nogpu baseline (%s)' % (p.stdout + p.stderr).strip()[-300:])


if __name__ == '__main__':
    main()
