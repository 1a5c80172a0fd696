#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
llmtune health-check --slurm with a fake scontrol (first in PATH) that logs every call and answers
`show node` from a file, so what llmtune asks Slurm to do is seen exactly, without a cluster:

  - a node name is one host name: a hostlist expression (gpu[001-512], a,b) or a name that is not
    an RFC 1123 label, from --node, node= of the settings or $SLURMD_NODENAME, is refused (exit 2)
    before scontrol is run;
  - under --root (a tree, an archive) --slurm acts on no node unless --node is given: the tree's
    node= is not used, and scontrol is not run;
  - `show node` answering for more than one node, or for another one, changes nothing;
  - a healthy node is resumed only when its current reason is llmtune's, and then that node only.

    test_slurm_fake.py --llmtune BIN --roots DIR
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, failures  # noqa: E402  (tests/lib/checklib.py)

FAKE = r'''#!/usr/bin/env python3
import os, sys
d = os.environ['FAKE_SCONTROL_DIR']
with open(os.path.join(d, 'calls'), 'a') as f:
    f.write('\t'.join(sys.argv[1:]) + '\n')
if sys.argv[1:3] == ['show', 'node']:
    with open(os.path.join(d, 'show')) as f:
        sys.stdout.write(f.read())
'''


def record(name, state, reason=None):
    out = 'NodeName=%s Arch=x86_64 CoresPerSocket=1\n   State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1\n' % (name, state)
    if reason:
        out += '   Reason=%s [root@2026-11-30T08:00:00]\n' % reason
    return out + '\n'


class Fake:
    def __init__(self, top):
        self.dir = os.path.join(top, 'fake')
        os.makedirs(os.path.join(self.dir, 'bin'))
        with open(os.path.join(self.dir, 'bin', 'scontrol'), 'w') as f:
            f.write(FAKE)
        os.chmod(os.path.join(self.dir, 'bin', 'scontrol'), 0o755)
        self.answer(record('n1', 'IDLE'))

    def answer(self, text):
        with open(os.path.join(self.dir, 'show'), 'w') as f:
            f.write(text)
        if os.path.exists(os.path.join(self.dir, 'calls')):
            os.unlink(os.path.join(self.dir, 'calls'))

    def calls(self):
        p = os.path.join(self.dir, 'calls')
        if not os.path.exists(p):
            return []
        with open(p) as f:
            return [line.rstrip('\n').split('\t') for line in f]

    def env(self, **extra):
        e = dict(os.environ, PATH=os.path.join(self.dir, 'bin') + ':' + os.environ['PATH'],
                 FAKE_SCONTROL_DIR=self.dir, NO_COLOR='1', LC_ALL='C')
        e.pop('SLURMD_NODENAME', None)
        e.update(extra)
        return e


def set_thp(root, word):
    p = os.path.join(root, 'sys/kernel/mm/transparent_hugepage/enabled')
    with open(p, 'w') as f:
        f.write(' '.join('[%s]' % w if w == word else w for w in ('always', 'madvise', 'never')) + '\n')


def hc(a, fake, args, root=None, **env):
    cmd = [a.llmtune] + (['--root', root] if root else []) + ['health-check', '--profile', 'base'] + args
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=fake.env(**env),
                          timeout=120)


def names(a, fake, root, tmp):
    conf = os.path.join(root, 'etc', 'llmtune', 'health-check.conf')
    os.makedirs(os.path.dirname(conf), exist_ok=True)
    with open(conf, 'w') as f:
        f.write('[health-check]\nseverity = warning\nnode = gpu[001-512]\n')
    set_thp(root, 'madvise')   # healthy: the old code resumed the whole hostlist
    r = hc(a, fake, ['--slurm'], root)
    check(r.returncode == 2 and 'acts on no node unless --node' in r.stderr and not fake.calls(),
          'under --root, the tree\'s node = gpu[001-512] is not used: exit 2, scontrol not run (%d, %r, %s)' %
          (r.returncode, r.stderr.strip(), fake.calls()))
    set_thp(root, 'always')    # unhealthy: the old code drained 512 nodes
    r = hc(a, fake, ['--slurm'], root)
    check(r.returncode == 2 and not fake.calls(), 'unhealthy tree without --node: nothing drained (%d, %s)' %
          (r.returncode, fake.calls()))
    for bad in ('gpu[001-512]', 'n1,n2', 'n1 n2', '-n1', 'n1-', 'n1.example.net', 'n' * 64, '', 'n\u00e9'):
        r = hc(a, fake, ['--slurm', '--node', bad], root)
        check(r.returncode == 2 and 'is not one host name' in r.stderr and not fake.calls(),
              '--node %r: refused before scontrol (%d, %r, %s)' % (bad, r.returncode, r.stderr.strip()[-200:],
                                                                 fake.calls()))
    fake.answer(record('n' * 63, 'IDLE'))
    r = hc(a, fake, ['--slurm', '--node', 'n' * 63], root)
    check(r.returncode == 1 and len(fake.calls()) == 2 and fake.calls()[0] == ['show', 'node', 'n' * 63] and
          fake.calls()[1][:2] == ['update', 'NodeName=' + 'n' * 63], 'a 63-character name is one host name (%d, %s)' % (r.returncode, fake.calls()))
    # The live system's own settings and slurmd's variable are checked the same way (an audit of
    # this machine: it only reads).
    live_conf = os.path.join(tmp, 'live-hc.conf')
    with open(live_conf, 'w') as f:
        f.write('[health-check]\nnode = gpu[001-512]\n')
    fake.answer(record('n1', 'IDLE'))
    r = hc(a, fake, ['--slurm', '--config', live_conf])
    check(r.returncode == 2 and 'node= in ' + live_conf in r.stderr and not fake.calls(),
          'live, node= gpu[001-512] in --config FILE: refused naming the file (%d, %r)' % (r.returncode, r.stderr.strip()[-300:]))
    r = hc(a, fake, ['--slurm'], SLURMD_NODENAME='n[1-2]')
    check(r.returncode == 2 and '$SLURMD_NODENAME' in r.stderr and not fake.calls(),
          'live, SLURMD_NODENAME=n[1-2]: refused (%d, %r)' % (r.returncode, r.stderr.strip()[-300:]))


def records(a, fake, root):
    set_thp(root, 'madvise')
    for text, what in ((record('n1', 'IDLE+DRAIN', 'llmtune: thp-enabled thp.enabled = always') +
                        record('n2', 'IDLE+DRAIN', 'disk swap by operator'), 'two records'),
                       (record('n2', 'IDLE+DRAIN', 'llmtune: thp-enabled thp.enabled = always'), 'another node'),
                       ('', 'no record')):
        fake.answer(text)
        r = hc(a, fake, ['--slurm', '--node', 'n1', '--severity', 'warning'], root)
        upd = [c for c in fake.calls() if c[:1] == ['update']]
        check(r.returncode == 2 and not upd, 'show node answering with %s: exit 2, no update (%d, %s, %r)' %
              (what, r.returncode, upd, r.stderr.strip()[-200:]))
    fake.answer(record('n1', 'IDLE+DRAIN', 'disk swap by operator'))
    r = hc(a, fake, ['--slurm', '--node', 'n1', '--severity', 'warning'], root)
    check(r.returncode == 0 and not [c for c in fake.calls() if c[:1] == ['update']],
          'healthy, drained by an operator: not resumed (%d, %s)' % (r.returncode, fake.calls()))
    fake.answer(record('n1', 'IDLE+DRAIN', 'llmtune: thp-enabled thp.enabled = always'))
    r = hc(a, fake, ['--slurm', '--node', 'n1', '--severity', 'warning'], root)
    check(r.returncode == 0 and fake.calls() == [['show', 'node', 'n1'], ['update', 'NodeName=n1', 'State=RESUME']],
          'healthy, drained by llmtune: that node resumed, nothing else (%d, %s)' % (r.returncode, fake.calls()))
    set_thp(root, 'always')
    fake.answer(record('n1', 'IDLE'))
    r = hc(a, fake, ['--slurm', '--node', 'n1', '--severity', 'warning'], root)
    check(r.returncode == 1 and fake.calls() == [['show', 'node', 'n1'],
                                                ['update', 'NodeName=n1', 'State=DRAIN',
                                                 'Reason=llmtune: thp-enabled thp.enabled = always']],
          'unhealthy: that node drained with the reason (%d, %s)' % (r.returncode, fake.calls()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix='llmtune-slurm-fake-') as tmp:
        fake = Fake(tmp)
        root = os.path.join(tmp, 'vm')
        shutil.copytree(os.path.join(a.roots, 'vm-nogpu'), root, symlinks=True)
        names(a, fake, root, tmp)
        records(a, fake, root)
    if failures:
        print('%d problem(s)' % len(failures))
        return 1
    print('ok: node names, --root without --node, show node records, resume only llmtune\'s drains')
    return 0


if __name__ == '__main__':
    sys.exit(main())
