#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
llmtune report --consistency: which hosts differ in facts that must agree across a job's nodes.

    test_consistency.py --llmtune BIN --roots DIR --source SRC

- The fixture roots (facts --json and audit --json of each): the report's groups per check equal
  those computed here independently from rules/consistency.conf (Python's configparser and
  fnmatch) and the same files.
- A generated fleet of 200 hosts made from the real facts of the hgx-h100 root, with planted
  outliers (another driver, a kernel, a slower port, a missing HCA, THP, an NCCL key, a renamed
  interface, an unreadable driver version, a missing GPU, another profile): each check names
  exactly the planted hosts, with the differing facts; the untouched checks are uniform.
- The checks are data: a rules file of one check gives a report of that check only.
- Bad input: duplicate hosts, an audit without facts, garbage, a bad rules file; --keep-going.
"""
import argparse
import configparser
import copy
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, failures  # noqa: E402  (tests/lib/checklib.py)

ROOTS = ['dgx-a100', 'hgx-h100', 'ws-4090', 'vm-nogpu']


def run(cmd, **kw):
    env = dict(os.environ, NO_COLOR='1', LC_ALL='C')
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120, **kw)


def load_checks(path):
    cp = configparser.ConfigParser(interpolation=None, comment_prefixes=('#',), inline_comment_prefixes=None)
    cp.optionxform = str
    cp.read(path)
    out = []
    for sec in cp.sections():
        split = lambda k: [p.strip() for p in cp[sec].get(k, '').replace('\n', ' ').split(',') if p.strip()]
        out.append((sec, split('facts'), split('ignore')))
    return out


def wants(pats, ign, name):
    return any(fnmatch.fnmatchcase(name, p) for p in pats) and not any(fnmatch.fnmatchcase(name, p) for p in ign)


def signature(facts, pats, ign):
    sig = []
    for name, f in facts.items():
        if wants(pats, ign, name):
            st = f['status']
            sig.append((name, st, str(f['value']).lower() if st == 'ok' and isinstance(f['value'], bool)
                        else str(f['value']) if st == 'ok' else ''))
    return tuple(sorted(sig))


def expected_groups(checks, hosts):
    """hosts: {name: facts dict (with 'profile' added)} -> {check: sorted list of host-name tuples}."""
    out = {}
    for cid, pats, ign in checks:
        groups = {}
        for h, facts in hosts.items():
            groups.setdefault(signature(facts, pats, ign), []).append(h)
        out[cid] = sorted(tuple(sorted(g)) for g in groups.values())
    return out


def report_groups(doc):
    return {c['id']: sorted(tuple(sorted(g['hosts'])) for g in c['groups']) for c in doc['checks']}


def consistency(a, files, *extra):
    t0 = time.time()
    r = run([a.llmtune, 'report', '--consistency', *extra, *files])
    return r, time.time() - t0


def test_fixture_roots(a, checks, tmp):
    files, hosts = [], {}
    for name in ROOTS:
        root = os.path.join(a.roots, name)
        f = run([a.llmtune, '--root', root, 'facts', '--json'])
        au = run([a.llmtune, '--root', root, 'audit', '--json'])
        check(f.returncode == 0 and au.returncode in (0, 2), '%s: facts and audit run' % name)
        for kind, r in (('facts', f), ('audit', au)):
            p = os.path.join(tmp, '%s-%s.json' % (name, kind))
            with open(p, 'wb') as fh:
                fh.write(r.stdout)
            files.append(p)
        doc = json.loads(f.stdout)
        check(doc.get('host') == name, '%s: facts --json names the host (%r)' % (name, doc.get('host')))
        facts = doc['facts']
        facts['profile'] = {'status': 'ok', 'value': json.loads(au.stdout)['profile']['name']}
        hosts[name] = facts
    r, secs = consistency(a, files, '--json')
    check(r.returncode == 2, 'fixture roots: exit 2 (they differ) (%d: %s)' % (r.returncode, r.stderr.decode()[:300]))
    doc = json.loads(r.stdout)
    got, want = report_groups(doc), expected_groups(checks, hosts)
    check(got == want, 'fixture roots: groups differ from the independent computation:\n%r\n%r' % (got, want))
    k = {c['id']: c for c in doc['checks']}
    check(k['profile']['groups'] and all(g['facts'].get('profile') for g in k['profile']['groups']),
          'the profile comes from the audit files')
    print('ok: fixture roots: %d checks, groups as computed independently, %d not uniform (%.2f s)' %
          (len(want), doc['not_uniform'], secs))


PLANTED = {
    # check id -> (host, what was done)
    'nvidia-driver': ['node-17', 'node-188'],
    'kernel': ['node-42'],
    'ib-hcas': ['node-99', 'node-123'],
    'thp': ['node-150'],
    'nccl-conf': ['node-160'],
    'socket-ifname': ['node-177'],
    'gpus': ['node-5'],
    'profile': ['node-200'],
}


def plant(name, facts):
    def ok(v):
        return {'status': 'ok', 'type': 'str' if isinstance(v, str) else 'int', 'value': v, 'source': 'planted'}
    if name == 'node-17':
        facts['nvidia.driver.version'] = ok('550.54.15')
    elif name == 'node-188':
        facts['nvidia.driver.version'] = {'status': 'unreadable', 'reason': 'EACCES (Permission denied)',
                                          'source': '/proc/driver/nvidia/version'}
    elif name == 'node-42':
        facts['kernel.release'] = ok('5.14.0-362.8.1.el9_3.x86_64')
    elif name == 'node-99':
        facts['ib.mlx5_3.port.1.rate_gbps'] = ok(200)
    elif name == 'node-123':
        for k in [k for k in facts if k.startswith('ib.mlx5_7.')]:
            del facts[k]
        facts['ib.count'] = ok(7)
    elif name == 'node-150':
        facts['thp.enabled'] = ok('always')
    elif name == 'node-160':
        facts['nccl.conf.present'] = {'status': 'ok', 'type': 'bool', 'value': True, 'source': 'planted'}
        facts['nccl.conf.key.NCCL_IB_HCA'] = ok('mlx5_0,mlx5_1')
    elif name == 'node-177':
        for k in [k for k in facts if k.startswith('net.eno1.')]:
            facts['net.eth0.' + k[len('net.eno1.'):]] = facts.pop(k)
    elif name == 'node-5':
        for k in [k for k in facts if k.startswith('gpu.7.')]:
            del facts[k]
        facts['gpu.count'] = ok(7)


def test_fleet(a, checks, tmp):
    base = json.loads(run([a.llmtune, '--root', os.path.join(a.roots, 'hgx-h100'), 'facts', '--json']).stdout)
    audit = json.loads(run([a.llmtune, '--root', os.path.join(a.roots, 'hgx-h100'), 'audit', '--json']).stdout)
    d = os.path.join(tmp, 'fleet')
    os.mkdir(d)
    files, hosts = [], {}
    for i in range(1, 201):
        name = 'node-%d' % i
        doc = copy.deepcopy(base)
        doc['host'] = name
        plant(name, doc['facts'])
        ad = {'format': 1, 'host': name, 'profile': dict(audit['profile']), 'results': audit['results'],
              'summary': audit['summary']}
        if name == 'node-200':
            ad['profile']['name'] = 'base'
        # Ansible's fetch layout: one directory per host, the same file names.
        os.mkdir(os.path.join(d, name))
        for kind, body in (('facts', doc), ('audit', ad)):
            p = os.path.join(d, name, 'llmtune-%s.json' % kind)
            with open(p, 'w') as fh:
                json.dump(body, fh)
            files.append(p)
        facts = doc['facts']
        facts['profile'] = {'status': 'ok', 'value': ad['profile']['name']}
        hosts[name] = facts
    r, secs = consistency(a, files, '--json')
    check(r.returncode == 2, 'fleet: exit 2 (%d: %s)' % (r.returncode, r.stderr.decode()[:300]))
    doc = json.loads(r.stdout)
    check(doc['hosts'] == 200, 'fleet: 200 hosts (%r)' % doc['hosts'])
    check(report_groups(doc) == expected_groups(checks, hosts), 'fleet: groups differ from the independent computation')
    for c in doc['checks']:
        odd = sorted(h for g in c['groups'][1:] for h in g['hosts'])
        want = sorted(PLANTED.get(c['id'], []))
        check(odd == want, 'fleet: %s names %r, planted %r' % (c['id'], odd, want))
        check(c['uniform'] == (not want), 'fleet: %s uniform is %r' % (c['id'], c['uniform']))
        if want:
            check(c['norm'] and len(c['groups'][0]['hosts']) == 200 - len(want), 'fleet: %s has a norm of %d hosts' %
                  (c['id'], 200 - len(want)))
    by = {c['id']: c for c in doc['checks']}
    diffs = {h: [x['fact'] for x in g['differences']] for c in doc['checks'] for g in c['groups'][1:] for h in g['hosts']}
    check(diffs.get('node-17') == ['nvidia.driver.version'], 'node-17 differs in the driver version: %r' % diffs.get('node-17'))
    g188 = [g for g in by['nvidia-driver']['groups'] if 'node-188' in g['hosts']]
    check(g188 and g188[0]['differences'][0]['here']['status'] == 'unreadable' and
          by['nvidia-driver']['unreadable_hosts'] == 1, 'node-188: the driver version is reported unreadable, not a value')
    check(diffs.get('node-99') == ['ib.mlx5_3.port.1.rate_gbps'], 'node-99: one slower port: %r' % diffs.get('node-99'))
    check(diffs.get('node-123') and 'ib.count' in diffs['node-123'] and
          all(x == 'ib.count' or x.startswith('ib.mlx5_7.') for x in diffs['node-123']),
          'node-123: the missing HCA mlx5_7: %r' % diffs.get('node-123'))
    check(diffs.get('node-177') == ['net.eno1.up', 'net.eth0.up'], 'node-177: eno1 renamed eth0: %r' % diffs.get('node-177'))
    check(diffs.get('node-200') == ['profile'], 'node-200: another profile: %r' % diffs.get('node-200'))
    # The table names the odd hosts too.
    r2, secs2 = consistency(a, files)
    t = r2.stdout.decode()
    check(r2.returncode == 2 and 'Fleet consistency: 200 hosts, 10 checks: 2 uniform, 8 not uniform' in t,
          'fleet table summary: %r' % t[:200])
    check('differ, 1 host: node-17\n    nvidia.driver.version: 550.54.15 (the others: 535.104.05)' in t,
          'the table names node-17 and its driver')
    check('differ, 1 host: node-99\n    ib.mlx5_3.port.1.rate_gbps: 200 (the others: 400)' in t,
          'the table names node-99 and its rate')
    print('ok: fleet of 200 hosts: every planted outlier named, nothing else; %.2f s (json), %.2f s (table)' %
          (secs, secs2))


def test_data(a, tmp, files):
    rules = os.path.join(tmp, 'one.conf')
    with open(rules, 'w') as fh:
        fh.write('[cpu-model]\ntitle = CPU model\nfacts = cpu.model\nwhy = test\n')
    r, _ = consistency(a, files, '--json', '--consistency-rules', rules)
    doc = json.loads(r.stdout)
    check([c['id'] for c in doc['checks']] == ['cpu-model'] and r.returncode == 2,
          'a rules file of one check reports that check only: %r' % [c['id'] for c in doc['checks']])
    with open(rules, 'w') as fh:
        fh.write('[cpu-model]\ntitle = CPU model\nfacts = cpu.model\nwhy = test\ncolour = red\n')
    r, _ = consistency(a, files, '--consistency-rules', rules)
    check(r.returncode == 1 and b'one.conf:5: unknown key' in r.stderr, 'a bad rules file: exit 1 with file:line (%r)' %
          r.stderr.decode()[:200])
    print('ok: which facts must agree is data (--consistency-rules)')


def test_bad_input(a, tmp, files):
    r, _ = consistency(a, files + [files[0]])
    check(r.returncode == 1 and b'is in both' in r.stderr, 'the same host twice: exit 1 (%r)' % r.stderr.decode()[:200])
    audits = [f for f in files if f.endswith('-audit.json')]
    r, _ = consistency(a, audits[:1] + [f for f in files if f.endswith('-facts.json')][1:])
    check(r.returncode == 1 and b'no facts file' in r.stderr, 'an audit without facts: exit 1 (%r)' % r.stderr.decode()[:200])
    junk = os.path.join(tmp, 'junk.json')
    with open(junk, 'wb') as fh:
        fh.write(b'\x00\xffnot json')
    r, _ = consistency(a, files + [junk])
    check(r.returncode == 1 and b'junk.json: not JSON' in r.stderr, 'garbage: exit 1 naming the file')
    r, _ = consistency(a, files + [junk], '--keep-going', '--json')
    check(r.returncode == 2 and b'skipped' in r.stderr and json.loads(r.stdout)['hosts'] == 4,
          '--keep-going skips the garbage and reports the 4 hosts')
    print('ok: bad input refused, --keep-going skips it')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--source', required=True)
    a = ap.parse_args()
    checks = load_checks(os.path.join(a.source, 'rules', 'consistency.conf'))
    with tempfile.TemporaryDirectory() as tmp:
        test_fixture_roots(a, checks, tmp)
        files = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith('.json'))
        test_data(a, tmp, files)
        test_bad_input(a, tmp, files)
        test_fleet(a, checks, tmp)
    if failures:
        print('%d problem(s)' % len(failures))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
