#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
What a fleet operator relies on (issue 16): profile detection that a site profile cannot hijack,
the pinned profile (/etc/llmtune/llmtune.conf, `llmtune profile`), exit codes for gating, JSON
output, and lint of shipped files. Every case runs llmtune on a temporary copy of a fixture root
and asserts the specific fact it is about.

    operator.py --llmtune BIN --roots DIR [--case NAME]...   run cases (all when none named)
    operator.py --list                                         print the case names
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
CASES = {}


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


class Ctx:
    def __init__(self, llmtune, roots, tmp):
        self.llmtune, self.roots, self.tmp = llmtune, roots, tmp

    def root(self, name):
        """A fresh copy of fixture root NAME."""
        dst = tempfile.mkdtemp(prefix=name + '-', dir=self.tmp)
        shutil.rmtree(dst)
        shutil.copytree(os.path.join(self.roots, name), dst, symlinks=True)
        return dst

    def run(self, root, *argv, status=None, env=None):
        e = dict(os.environ, NO_COLOR='1', LC_ALL='C')
        e.update(env or {})
        cmd = [self.llmtune] + (['--root', root] if root else []) + list(argv)
        r = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if status is not None and r.returncode != status:
            raise AssertionError('%s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s' % (
                ' '.join(cmd), r.returncode, status, r.stdout[-3000:], r.stderr[-3000:]))
        return r


def put(root, rel, text):
    p = os.path.join(root, rel.lstrip('/'))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, 'w') as f:
        f.write(text)
    return p


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


# --- item 2: detection that cannot be hijacked ----------------------------------------------------

@case
def detect_site_without_match(c):
    """The man page's own example: profiles.d/a100-8x.ini inheriting a100-8x, no [match]. On a
    GPU-less VM it must not be chosen (it keeps the shipped [match]); nor may a new site profile
    without [match]."""
    root = c.root('vm-nogpu')
    put(root, 'etc/llmtune/profiles.d/a100-8x.ini',
        '[profile]\nname = a100-8x\ninherits = a100-8x\n[params]\nib_rate_gbps = 400\n')
    put(root, 'etc/llmtune/profiles.d/aaa-site.ini',
        '[profile]\nname = aaa-site\ninherits = base\n[params]\nthp_enabled = always\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.split('\t')[0] == 'base', 'recommend chose %r, expected base' % r.stdout)
    r = c.run(root, 'plan', '--json', status=0)
    plan = json.loads(r.stdout)
    check(plan['profile'] == 'base', 'plan used profile %s' % plan['profile'])
    check(not any(ch['target'] == '/etc/nccl.conf' for ch in plan['changes']),
          'plan would write /etc/nccl.conf on a GPU-less VM')
    r = c.run(root, 'profiles', 'show', 'a100-8x', status=0)
    check('match (of the shipped profile it shadows):' in r.stdout and 'gpu.nvidia_count == 8' in r.stdout,
          'show does not list the inherited [match]:\n' + r.stdout)
    r = c.run(root, 'profiles', 'show', 'aaa-site', status=0)
    check('never chosen by detection' in r.stdout, 'show does not say aaa-site is never detected')
    # ... while on the A100 node the shadowing site profile is the one detected.
    root = c.root('dgx-a100')
    put(root, 'etc/llmtune/profiles.d/a100-8x.ini',
        '[profile]\nname = a100-8x\ninherits = a100-8x\n[params]\nib_rate_gbps = 200\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.startswith('a100-8x\t'), 'dgx-a100 no longer detected as a100-8x: %r %r' % (r.stdout, r.stderr))


@case
def detect_site_own_match(c):
    """A site profile with its own [match] takes part, and its [match] wins over the shadowed one."""
    root = c.root('vm-nogpu')
    put(root, 'etc/llmtune/profiles.d/vmsite.ini',
        '[profile]\nname = vmsite\ninherits = base\n[match]\nrequire = gpu.nvidia_count == 0\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.startswith('vmsite\t'), 'recommend: %r' % r.stdout)


@case
def detect_unreadable_fails(c):
    """A fact a [match] needs is unreadable: detection says which and fails (exit 3), it does
    not fall back to base; naming the profile still works."""
    root = c.root('vm-nogpu')
    put(root, 'etc/llmtune/profiles.d/swappy.ini',
        '[profile]\nname = swappy\ninherits = base\n[match]\nrequire = sysctl.vm.swappiness == 60\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.startswith('swappy\t'), 'recommend with a readable fact: %r' % r.stdout)
    p = os.path.join(root, 'proc/sys/vm/swappiness')
    os.unlink(p)
    os.mkdir(p)  # reading it fails with EISDIR: unreadable, not absent
    for argv in (['recommend'], ['audit'], ['plan']):
        r = c.run(root, *argv, status=3)
        check('sysctl.vm.swappiness' in r.stderr and 'swappy' in r.stderr,
              '%s does not name the unreadable requirement: %s' % (argv[0], r.stderr))
        check(r.stdout == '', '%s printed a result: %s' % (argv[0], r.stdout[:200]))
    c.run(root, 'audit', '--profile', 'base', '--rule', 'thp-enabled')
    # A requirement that is false rules a profile out even if another is unreadable.
    put(root, 'etc/llmtune/profiles.d/swappy.ini',
        '[profile]\nname = swappy\ninherits = base\n[match]\nrequire = cpu.count == 999\n'
        'require = sysctl.vm.swappiness == 60\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.startswith('base\t'), 'recommend: %r' % r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--llmtune')
    ap.add_argument('--roots')
    ap.add_argument('--case', action='append')
    ap.add_argument('--list', action='store_true')
    a = ap.parse_args()
    if a.list:
        print('\n'.join(CASES))
        return 0
    names = a.case or list(CASES)
    failed = 0
    tmp = tempfile.mkdtemp(prefix='llmtune-operator-')
    try:
        for n in names:
            try:
                CASES[n](Ctx(os.path.abspath(a.llmtune), a.roots, tmp))
                print('%s: ok' % n)
            except AssertionError as e:
                failed += 1
                print('%s: FAIL: %s' % (n, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
