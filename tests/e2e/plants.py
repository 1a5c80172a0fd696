#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
A FIFO or a link out at every path llmtune or its libraries read (issue 28, "Done when";
docs/RELIABILITY.md, "Every path a run reads"). For each fixture root the paths a full `facts
--json` opens are taken from strace (llmtune's own openat2 through the root handle, hwloc's and
libkmod's opens in their sandbox child); then, one path at a time, that path is replaced by:

  fifo   a FIFO (nothing writes it),
  abs    an absolute link to the same path in a canary copy of the tree on the host,
  esc    a relative link climbing out with ".." through ROOT/esc, a link to that host copy,

and `llmtune --read-timeout 0.5 facts --json` is run on the tree. No run may hang (a bound of
HANG seconds, far past the deadline) or end by a signal, nothing of the canary copy may be opened
(inotify, tests/lib/hostwatch.py) and its marker may not appear in the output.

Paths are taken one per shape (digits and PCI addresses made alike: cpu0..cpu255 are one), on
the smallest fixture that reads a path of that shape; --all takes every path. --stride N takes
every Nth shape (the ASan pass). Needs strace (skipped without it, a failure with
LLMTUNE_REQUIRE_ALL=1).

    plants.py --llmtune BIN --roots DIR [--all] [--stride N] [--kinds fifo,abs,esc]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)
from hostwatch import HostWatch  # noqa: E402

FIXTURES = ('vm-nogpu', 'ws-4090', 'hgx-h100', 'dgx-a100')  # smallest first
CANARY = 'LLMTUNE-PLANT-CANARY-28'
HANG = 30
DEADLINE = '0.5'
OPEN_RE = re.compile(r'open(?:at2?)?\((?:\w+(?:<([^>]*)>)?, )?"([^"]*)"')


def run(bin_, root, *args, timeout=HANG):
    env = dict(os.environ, NO_COLOR='1', LC_ALL='C')
    t0 = time.monotonic()
    try:
        p = subprocess.run([bin_, '--root', root, *args], capture_output=True, text=True, env=env, timeout=timeout,
                           stdin=subprocess.DEVNULL, errors='replace')
        return p.returncode, p.stdout + p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return 'hang', '', time.monotonic() - t0


def paths_read(bin_, root, trace):
    """Every path under ROOT that a `facts --json` opens, relative to ROOT (strace -f -y: the
    directory of a relative open is printed with its descriptor)."""
    subprocess.run(['strace', '-f', '-qq', '-y', '-s', '4096', '-e', 'trace=open,openat,openat2', '-e', 'signal=none',
                    '-o', trace, bin_, '--root', root, 'facts', '--json'],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=600)
    real = os.path.realpath(root)
    out = set()
    with open(trace, errors='replace') as f:
        for line in f:
            m = OPEN_RE.search(line)
            if not m:
                continue
            base, p = m.groups()
            p = os.path.normpath(p if p.startswith('/') else os.path.join(base or os.getcwd(), p))
            if p.startswith(real + '/'):
                out.add(os.path.relpath(p, real))
    return out


def shape(p):
    p = re.sub(r'[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]', 'PCI', p)
    p = re.sub(r'[0-9a-f]{4}:[0-9a-f]{2}', 'BUS', p)
    return re.sub(r'\d+', 'N', p)


def canary_copy(src, dst):
    """The tree's layout with every file's content replaced by the canary: what a host holds at the
    same paths. Links are kept as they are (relative ones stay inside the copy)."""
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in dirnames + filenames:
            s, d = os.path.join(dirpath, name), os.path.join(dst, rel, name)
            if os.path.islink(s):
                os.symlink(os.readlink(s), d)
            elif name in filenames:
                with open(d, 'w') as f:
                    f.write(CANARY + '\n')


class Plants:
    def __init__(self, a, tmp):
        self.bin, self.src, self.tmp = os.path.abspath(a.llmtune), a.roots, tmp
        self.host = os.path.join(tmp, 'host')
        self.n = 0
        self.slowest = (0.0, '')
        # A short deadline where the binary has one (a FIFO costs one deadline); a binary from before
        # the option runs with its own behaviour, so this test shows what it did.
        has = '--read-timeout' in subprocess.run([self.bin, '--help'], capture_output=True, text=True).stdout
        self.deadline = ['--read-timeout', DEADLINE] if has else []

    def prepare(self, fixture):
        work = os.path.join(self.tmp, 'work', fixture)
        shutil.copytree(os.path.join(self.src, fixture), work, symlinks=True)
        mirror = os.path.join(self.host, fixture)
        canary_copy(os.path.join(self.src, fixture), mirror)
        os.symlink(mirror, os.path.join(work, 'esc'))
        return work, mirror

    def plant(self, work, mirror, rel, kind):
        """Replace REL by KIND; returns how to put it back."""
        p = os.path.join(work, rel)
        saved = os.path.join(self.tmp, f'saved-{self.n}')
        self.n += 1
        os.rename(p, saved)
        if kind == 'fifo':
            os.mkfifo(p, 0o600)
        elif kind == 'abs':
            os.symlink(os.path.join(mirror, rel), p)
        else:
            os.symlink('../' * rel.count('/') + 'esc/' + rel, p)

        def restore():
            os.unlink(p)
            os.rename(saved, p)
        return restore

    def one(self, work, mirror, rel, kind, watch):
        restore = self.plant(work, mirror, rel, kind)
        try:
            rc, out, took = run(self.bin, work, *self.deadline, 'facts', '--json')
        finally:
            restore()
        opened = watch.opened()
        self.slowest = max(self.slowest, (took, f'{kind} at {rel}'))
        problems = []
        if rc == 'hang' or not isinstance(rc, int) or rc < 0:
            problems.append(f'rc {rc}')
        if opened:
            problems.append(f'opened {opened[:2]}')
        if CANARY in out:
            problems.append('canary in the output')
        return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--all', action='store_true')
    ap.add_argument('--stride', type=int, default=1)
    ap.add_argument('--kinds', default='fifo,abs,esc')
    a = ap.parse_args()
    if not shutil.which('strace'):
        print('skip  strace is not installed: the paths a run reads cannot be listed')
        return 1 if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1' else 77
    kinds = a.kinds.split(',')
    shm = '/dev/shm' if os.access('/dev/shm', os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix='llmtune-plants-', dir=shm) as tmp:
        t = Plants(a, tmp)
        seen, todo = set(), []
        for fx in FIXTURES:
            work, mirror = t.prepare(fx)
            # what is there (a probe also tries names that are not)
            read = sorted(p for p in paths_read(t.bin, work, os.path.join(tmp, f'trace-{fx}'))
                          if os.path.lexists(os.path.join(work, p)))
            mine = []
            for p in read:
                if a.all or shape(p) not in seen:
                    mine.append(p)
                seen.add(shape(p))
            todo.append((fx, work, mirror, mine[::a.stride], len(read)))
            print(f'figure: {fx}: {len(read)} paths read, {len(mine[::a.stride])} planted here', flush=True)
        watch = HostWatch(t.host)
        probe = os.path.join(t.host, todo[0][0], todo[0][3][0])
        probe = next((os.path.join(t.host, fx, p) for fx, _, _, ps, _ in todo for p in ps
                      if os.path.isfile(os.path.join(t.host, fx, p)) and not os.path.islink(os.path.join(t.host, fx, p))),
                     probe)
        open(probe).close()
        got = watch.opened()
        check(got == [probe], f'the watch sees an open of the canary copy (the test can fail): {got}')
        total, failed = 0, 0
        for fx, work, mirror, paths, _ in todo:
            for kind in kinds:
                bad = []
                for rel in paths:
                    problems = t.one(work, mirror, rel, kind, watch)
                    total += 1
                    if problems:
                        bad.append(f'{rel}: {", ".join(problems)}')
                        print(f'bad   {fx}: {kind} at {bad[-1]}', flush=True)
                failed += len(bad)
                check(not bad, f'{fx}: {kind} at each of {len(paths)} paths: no hang, no host file opened, no canary '
                      f'({len(bad)} bad: {bad[:4]})')
        print(f'figure: {total} runs, {failed} bad; slowest {t.slowest[0]:.2f} s ({t.slowest[1]})', flush=True)
    return finish()


if __name__ == '__main__':
    sys.exit(main())
