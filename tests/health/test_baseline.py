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
  - report --consistency --reference BASELINE: the baseline's [facts] are the host "reference" and
    its group the norm: the node agrees in every check, the twin differs in the driver only; with
    the twin alone (no majority without it) the twin is still the one that differs, and with two
    twins the reference wins over their majority; the profile check (from audits) keeps its
    majority;
  - a fact absent (vm-nogpu's driver) or unreadable (a garbled driver version) on the reference
    node is recorded so and agrees with the node; a value with " ;" and "%" reads back exactly
    (%XX), one too long for a line is recorded as unreadable, saying so;
  - a bad reference (missing, no [facts], a fact twice, a bad escape, a syntax error, a FIFO, an
    input host named reference, --reference without --consistency) is an error, exit 1;
  - an audit ignores [facts*]: wrong values there change no result; a misspelt section is still
    an error;
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

    consistency(a, tmp, root, twin, out)
    reference_states(a, tmp)
    bad_references(a, tmp, out, os.path.join(tmp, 'node.json'))
    audit_ignores_facts(a, tmp, root, out)

    out = os.path.join(tmp, 'vm-baseline.ini')
    root = os.path.join(a.roots, 'vm-nogpu')
    p = run(a.llmtune, root, 'baseline', '-o', out)
    text = open(out).read() if os.path.exists(out) else ''
    check(p.returncode == 0 and 'gpu_count = 0\n' in text and '\nhca_fw_version =' not in text and
          '# hca_fw_version not set: none on this node' in text, 'vm-nogpu: no GPU, no adapter parameter')
    p = run(a.llmtune, root, 'lint', out)
    check(p.returncode == 0, 'lint accepts the vm-nogpu baseline (%s)' % (p.stdout + p.stderr).strip()[-300:])


def facts_json(a, root, host, path, kind='facts'):
    p = run(a.llmtune, root, kind, '--json')
    doc = json.loads(p.stdout)
    doc['host'] = host
    with open(path, 'w') as f:
        json.dump(doc, f)
    return path


def report(a, *args):
    return run(a.llmtune, '/', 'report', '--consistency', *args)


def report_json(a, *args):
    p = report(a, '--json', *args)
    doc = json.loads(p.stdout) if p.stdout.startswith('{') else {}
    return p.returncode, {c['id']: c for c in doc.get('checks', [])}


def consistency(a, tmp, root, twin, baseline):
    node = facts_json(a, root, 'node', os.path.join(tmp, 'node.json'))
    drift = facts_json(a, twin, 'twin', os.path.join(tmp, 'twin.json'))
    rc, checks = report_json(a, '--reference', baseline, node, drift)
    check(rc == 2 and len(checks) > 5, 'report --consistency --reference: exit 2 (%d)' % rc)
    bad = sorted(c for c in checks if checks[c].get('uniform') is False)
    check(bad == ['nvidia-driver'], 'only the driver differs from the reference (%s)' % bad)
    p = report(a, '--reference', baseline, drift)
    check(p.returncode == 2 and 'differ, 1 host: twin' in p.stdout and
          'nvidia.driver.version: 535.129.03 (the reference: 535.104.05)' in p.stdout,
          'the twin alone differs from the reference (%d %r)' % (p.returncode, p.stdout[:600]))
    p = report(a, node, drift)
    check(p.returncode == 2 and 'no majority' in p.stdout, 'without the reference two hosts have no majority')

    # The reference wins over a majority: two drifted twins and the node.
    drift2 = facts_json(a, twin, 'twin2', os.path.join(tmp, 'twin2.json'))
    p = report(a, '--reference', baseline, node, drift, drift2)
    check(p.returncode == 2 and 'held to the reference' in p.stdout and
          'the reference and 1 of 3 hosts agree: nvidia.driver.version=535.104.05' in p.stdout and
          'differ, 2 hosts: twin, twin2' in p.stdout and 'differ, 1 host: node' not in p.stdout,
          'the reference wins over the majority of two twins (%d %r)' % (p.returncode, p.stdout[:900]))
    p = report(a, node, drift, drift2)
    check(p.returncode == 2 and '2 of 3 hosts agree: nvidia.driver.version=535.129.03' in p.stdout and
          'differ, 1 host: node' in p.stdout, 'without the reference the majority names the node')

    # The profile comes from audits, not from a baseline: that check keeps its majority.
    audits = [facts_json(a, r, h, os.path.join(tmp, h + '-audit.json'), 'audit')
              for r, h in ((root, 'node'), (twin, 'twin'))]
    rc, checks = report_json(a, '--reference', baseline, node, drift, *audits)
    prof = checks.get('profile', {})
    check(prof.get('uniform') is True and prof.get('compared') is True and
          [g['hosts'] for g in prof.get('groups', [])] == [['node', 'twin']],
          'the profile check compares the audits without the reference (%s)' % prof.get('groups'))


def reference_states(a, tmp):
    """A fact absent or unreadable on the reference node, and values an ini line cannot hold."""
    vm = os.path.join(a.roots, 'vm-nogpu')
    vm_base = os.path.join(tmp, 'vm-ref.ini')
    run(a.llmtune, vm, 'baseline', '-o', vm_base)
    text = open(vm_base).read()
    absent = text[text.find('\n[facts-absent]\n'):]
    check('\n[facts-absent]\n' in text and '\nnvidia.driver.version = no NVIDIA driver loaded' in absent,
          'the vm-nogpu baseline records the driver as absent (%r)' % absent)
    vm_facts = facts_json(a, vm, 'vm', os.path.join(tmp, 'vm.json'))
    h100 = facts_json(a, os.path.join(a.roots, 'hgx-h100'), 'h100', os.path.join(tmp, 'h100.json'))
    p = report(a, '--reference', vm_base, vm_facts)
    check(p.returncode == 0 and 'not uniform' in p.stdout and ', 0 not uniform' in p.stdout,
          'the node agrees with its baseline, driver absent on both (%d %r)' % (p.returncode, p.stdout[:300]))
    p = report(a, '--reference', vm_base, h100)
    check(p.returncode == 2 and 'nvidia.driver.version: 535.104.05 (the reference: (absent: no NVIDIA driver loaded'
          in p.stdout, 'a driver where the reference has none differs (%r)' % p.stdout[:600])

    # A copy of hgx-h100 with a garbled driver version and an nccl.conf of awkward values.
    odd = os.path.join(tmp, 'odd')
    shutil.copytree(os.path.join(a.roots, 'hgx-h100'), odd, symlinks=True)
    with open(os.path.join(odd, 'proc/driver/nvidia/version'), 'w') as f:
        f.write('garbage\n')
    with open(os.path.join(odd, 'etc/nccl.conf'), 'w') as f:
        f.write('NCCL_IB_HCA=mlx5_0 ;x%%\nNCCL_SOCKET_IFNAME=%s\nNCCL_DEBUG=WARN\n' % ('e' * 200))
    base = os.path.join(tmp, 'odd-ref.ini')
    run(a.llmtune, odd, 'baseline', '-o', base)
    text = open(base).read()
    unreadable = text[text.find('\n[facts-unreadable]\n'):]
    check('\nnvidia.driver.version = EBADMSG' in unreadable and
          '\nnccl.conf.key.NCCL_SOCKET_IFNAME = its value is longer than a line of a baseline holds (200 characters)'
          in unreadable, 'unreadable facts and a value too long for a line go to [facts-unreadable] (%r)' % unreadable)
    check('\nnccl.conf.key.NCCL_IB_HCA = mlx5_0 %3Bx%25\n' in text, 'a value with " ;" and "%" is written %XX')
    p = run(a.llmtune, odd, 'lint', base)
    check(p.returncode == 0, 'lint accepts it (%s)' % (p.stdout + p.stderr).strip()[-300:])
    odd_facts = facts_json(a, odd, 'odd', os.path.join(tmp, 'odd.json'))
    rc, checks = report_json(a, '--reference', base, odd_facts, h100)
    drv = checks.get('nvidia-driver', {}).get('groups', [])
    check(rc == 2 and [g['hosts'] for g in drv] == [['odd', 'reference'], ['h100']] and
          drv[0]['facts']['nvidia.driver.version']['status'] == 'unreadable',
          'the reference and the node agree on an unreadable driver, h100 differs (%s)' % drv)
    nccl = checks.get('nccl-conf', {}).get('groups', [])
    diffs = [d['fact'] for g in nccl if 'odd' in g['hosts'] for d in g.get('differences', [])]
    check(diffs == ['nccl.conf.key.NCCL_SOCKET_IFNAME'],
          'the escaped value reads back exactly; only the value too long differs (%s)' % diffs)


def bad_references(a, tmp, baseline, node):
    """A reference that cannot be used is an error, exit 1, saying why."""
    def expect(ref, want, what, *inputs):
        p = report(a, '--reference', ref, *(inputs or (node,)))
        check(p.returncode == 1 and want in p.stderr and not p.stdout,
              '%s: exit 1 with %r (%d %r)' % (what, want, p.returncode, p.stderr.strip()[-300:]))

    def written(name, text):
        path = os.path.join(tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    missing = os.path.join(tmp, 'no-such-baseline.ini')
    expect(missing, 'reference %s: cannot read: No such file or directory' % missing, 'a missing file')
    plain = written('plain.ini', '[profile]\nname = plain\ninherits = base\n\n[params]\ngpu_count = 8\n')
    expect(plain, 'no fact a check compares in [facts], [facts-absent] or [facts-unreadable]', 'a profile without facts')
    expect(written('twice.ini', '[facts]\ngpu.count = 8\n\n[facts-absent]\ngpu.count = none\n'),
           "twice.ini:5: fact 'gpu.count' given twice", 'a fact given twice')
    expect(written('escape.ini', '[facts]\nnvidia.driver.version = 535%G1\n'),
           "escape.ini:2: the value of 'nvidia.driver.version' holds a '%' that is not %XX", 'a bad escape')
    expect(written('syntax.ini', '[facts]\nthis line has no separator\n'), 'syntax.ini:2:', 'a syntax error')
    fifo = os.path.join(tmp, 'fifo.ini')
    os.mkfifo(fifo)
    expect(fifo, 'cannot read: not a regular file', 'a FIFO (not waited on)')
    named = os.path.join(tmp, 'named-reference.json')
    with open(node) as f:
        doc = json.load(f)
    doc['host'] = 'reference'
    with open(named, 'w') as f:
        json.dump(doc, f)
    expect(baseline, 'a host of the input is named reference too', 'an input host named reference', named)
    p = run(a.llmtune, '/', 'report', '--reference', baseline, node)
    check(p.returncode == 1 and '--reference apply to --consistency only' in p.stderr,
          '--reference without --consistency is refused (%d %r)' % (p.returncode, p.stderr))


def audit_ignores_facts(a, tmp, root, baseline):
    """[facts*] are for the report: an audit with the baseline judges its [params], never these."""
    text = open(baseline).read()
    check('\n[facts]\n' in text and '\nnvidia.driver.version = 535.104.05\n' in text, 'the baseline holds [facts]')
    wrong = text.replace('\nnvidia.driver.version = 535.104.05\n', '\nnvidia.driver.version = 1.0\n')
    wrong = wrong.replace('\ngpu.count = 8\n', '\ngpu.count = 3\nnot.a.fact = x\n')
    wrong += '\n[facts-absent]\nkernel.release = gone\n\n[facts-unreadable]\nos.id = ?\n'
    path = os.path.join(tmp, 'wrong-facts.ini')
    with open(path, 'w') as f:
        f.write(wrong)
    p = run(a.llmtune, root, 'lint', path)
    check(p.returncode == 0, 'lint accepts [facts] that do not match the node (%s)' % (p.stdout + p.stderr)[-300:])
    want = run(a.llmtune, root, 'audit', '--json', '--profile', baseline)
    got = run(a.llmtune, root, 'audit', '--json', '--profile', path)
    status = lambda p: {r: v['status'] for r, v in results(p).items()} if p.stdout.startswith('{') else p.stderr
    check(got.returncode == want.returncode and status(got) == status(want),
          'the audit ignores [facts]: the same results whatever they say (%d %s)' % (got.returncode,
                                                                                      str(status(got))[-300:]))
    typo = os.path.join(tmp, 'typo.ini')
    with open(typo, 'w') as f:
        f.write(text + '\n[fact]\ngpu.count = 8\n')
    p = run(a.llmtune, root, 'lint', typo)
    check(p.returncode != 0 and 'unknown section [fact]' in p.stdout + p.stderr,
          'a misspelt section is still an error (%r)' % (p.stdout + p.stderr)[-300:])


if __name__ == '__main__':
    main()
