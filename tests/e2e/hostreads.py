#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Libraries that read a tree by host path (hwloc, libkmod) never reach the host and never hang a run
(issue 28; docs/RELIABILITY.md, "Threat model"). Each case on a fresh copy of a fixture root, once
for each confinement: the one this machine gives (Landlock where the kernel has it), and the
fallbacks forced with LLMTUNE_TEST_CONFINEMENT=chroot and =vet (the cases about confinement; the
deadline and the limits do not depend on it). Host canaries sit beside the tree and are watched
with inotify (tests/lib/hostwatch.py): nothing may open them.

    hostreads.py --llmtune BIN --roots DIR [--only NAME,...] [--modes default,chroot,vet]

  modprobe-fifo   a FIFO at etc/modprobe.d/evil.conf: facts, audit, plan, nccl conf, health-check
                  and apply answer; the modprobe facts are unreadable, "timed out" (or the vet
                  refuses the tree); apply lets the lock go, so the next apply is not refused
  modprobe-link   etc/modprobe.d/zz.conf -> a host file with options: never read, never shown
  esc-cpumap      ROOT/esc -> a host directory, node0/cpumap -> ../../../../../esc/fifo: apply and
                  facts answer; -> ../../../../../esc/cpumap (a host file): never read
  sparse-cpuinfo  a 1 TiB sparse proc/cpuinfo: cpu.model is unreadable (EFBIG), not absent, and
                  hwloc is stopped after a deadline of CPU instead of reading it all (20 GiB: 23-44 s)
  hung-file       a file whose reads never answer (a FUSE server that keeps quiet, tests/lib/hangfs.py,
                  in a private mount namespace; root and /dev/fuse needed, else skipped): at
                  proc/meminfo, which llmtune reads itself, facts and apply end with exit status 1
                  and say which file did not answer, and apply's lock goes with it; at a
                  modprobe.d file, which libkmod reads, the modprobe facts are "timed out"
"""
import argparse
import os
import subprocess
import sys
import tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)
from confine import Tool, PROFILE, HANG  # noqa: E402
from hostwatch import HostWatch  # noqa: E402
import hangfs  # noqa: E402

CANARY = 'LLMTUNE-HOST-CANARY-28'
TIMED_OUT = 'timed out (a FIFO or a file that never answers?)'
LOCKED = 'another llmtune apply or rollback is running'
# A short deadline where the point is the answer, not the wait (each FIFO costs one deadline).
QUICK = ['--read-timeout', '1']


class Host:
    """Canary files beside the trees: options for a module, a cpumap, a FIFO."""
    def __init__(self, tmp):
        self.dir = os.path.join(tmp, 'host')
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, 'zz.conf'), 'w') as f:
            f.write(f'options secretmod leak={CANARY}\nblacklist {CANARY.lower().replace("-", "_")}\n')
        with open(os.path.join(self.dir, 'cpumap'), 'w') as f:
            f.write('ffffffff\n')
        os.mkfifo(os.path.join(self.dir, 'fifo'), 0o600)
        self.watch = HostWatch(self.dir)

    def untouched(self, tag, out=''):
        opened = self.watch.opened()
        check(not opened and CANARY not in out, f'{tag}: no host file opened ({opened[:3]}), no canary in the output')


def modprobe_fifo(t, host, env, mode):
    root = t.fresh()
    os.mkfifo(os.path.join(root, 'etc', 'modprobe.d', 'evil.conf'), 0o600)
    for args in (['facts', '--json'], ['audit', '--profile', PROFILE], ['plan', '--profile', PROFILE],
                 ['nccl', 'conf'], ['health-check']):
        rc, out, err = t.run(root, *QUICK, *args, env=env)
        check(rc != 'hang' and isinstance(rc, int) and rc >= 0,
              f'[{mode}] a FIFO in etc/modprobe.d: {args[0]} answers (rc {rc}: {(out + err).strip()[-120:]})')
    rc, out, err = t.run(root, *QUICK, 'facts', 'modprobe.blacklist', env=env)
    want = 'is a FIFO' if mode == 'vet' else TIMED_OUT
    check(rc == 0 and 'unreadable' in out and want in out,
          f'[{mode}] a FIFO in etc/modprobe.d: modprobe.blacklist is unreadable, "{want}" ({out.strip()[-160:]})')
    # The default deadline (no --read-timeout), as any run on a site would have it.
    rc, out, err = t.run(root, 'apply', '--profile', PROFILE, env=env)
    check(rc != 'hang' and LOCKED not in err, f'[{mode}] a FIFO in etc/modprobe.d: apply answers (rc {rc}: {err.strip()[-160:]})')
    rc, out, err = t.run(root, *QUICK, 'apply', '--profile', PROFILE, '--rule', 'numa-balancing', env=env)
    check(rc != 'hang' and LOCKED not in err,
          f'[{mode}] ... and lets the lock go: the next apply is not refused (rc {rc}: {err.strip()[-160:]})')
    host.untouched(f'[{mode}] a FIFO in etc/modprobe.d')


def modprobe_link(t, host, env, mode):
    root = t.fresh()
    os.symlink(os.path.join(host.dir, 'zz.conf'), os.path.join(root, 'etc', 'modprobe.d', 'zz.conf'))
    rc, out, err = t.run(root, 'facts', 'modprobe.secretmod.options', 'modprobe.blacklist', env=env)
    check(rc == 0 and 'leak=' not in out, f'[{mode}] zz.conf -> a host file: its options are not the tree\'s ({out.strip()[-160:]})')
    host.untouched(f'[{mode}] zz.conf -> a host file', out + err)


def esc_cpumap(t, host, env, mode):
    for target, tag in (('fifo', 'a host FIFO'), ('cpumap', 'a host file')):
        root = t.fresh()
        os.symlink(host.dir, os.path.join(root, 'esc'))
        cpumap = os.path.join(root, 'sys', 'devices', 'system', 'node', 'node0', 'cpumap')
        os.unlink(cpumap)
        os.symlink(f'../../../../../esc/{target}', cpumap)
        # The default deadline: hwloc used to block in hwloc_topology_load here, apply holding the lock.
        for args in (['apply', '--profile', PROFILE], ['facts', '--json', 'gpu', 'numa']):
            rc, out, err = t.run(root, *args, env=env)
            check(rc != 'hang' and isinstance(rc, int) and rc >= 0,
                  f'[{mode}] esc -> host dir, node0/cpumap -> ../../../../../esc/{target}: {args[0]} answers '
                  f'(rc {rc}: {(out + err).strip()[-120:]})')
            host.untouched(f'[{mode}] node0/cpumap -> {tag} through esc: {args[0]}', out + err)


def sparse_cpuinfo(t, host, env, mode):
    """The default deadline: hwloc gets 5 s of CPU, not the 23-44 s a 20 GiB file took to read on
    ext4. 1 TiB here, so that reading it takes more than that on any file system (tmpfs reads
    holes at memory speed: 20 GiB took under 5 s there)."""
    root = t.fresh()
    with open(os.path.join(root, 'proc', 'cpuinfo'), 'r+b') as f:
        f.truncate(1 << 40)
    rc, out, err = t.run(root, 'facts', 'cpu.model', 'gpu.0.hwloc_numa_node', env=env, timeout=120)
    lines = dict(ln.split(None, 1) for ln in out.splitlines() if ln.strip())
    check(rc == 0, f'[{mode}] a 1 TiB sparse proc/cpuinfo: facts answers (rc {rc}: {err.strip()[-160:]})')
    check('unreadable: EFBIG' in lines.get('cpu.model', ''),
          f'[{mode}] ... cpu.model is unreadable (EFBIG), not absent ({lines.get("cpu.model", "")})')
    hw = lines.get('gpu.0.hwloc_numa_node', '')
    check('unreadable' in hw and 'used more than 5 s of CPU' in hw,
          f'[{mode}] ... hwloc is stopped after a deadline of CPU, not left to read it all ({hw})')


def hung_file(t, host, env, mode):
    meminfo = os.path.join(t.fresh(), 'proc', 'meminfo')
    root = os.path.dirname(os.path.dirname(meminfo))
    try:
        hung = hangfs.HangFile(meminfo)
    except OSError as e:
        print(f'skip  [{mode}] a file that never answers: cannot mount one here ({e})')
        return
    try:
        rc, out, err = t.run(root, *QUICK, 'facts', 'mem.total', env=env)
        check(rc == 0 and TIMED_OUT in out, f'[{mode}] proc/meminfo never answers a read: mem.total is unreadable, '
              f'"timed out" (rc {rc}: {(out + err).strip()[-200:]})')
        for n in (1, 2):
            rc, out, err = t.run(root, *QUICK, 'apply', '--profile', PROFILE, env=env)
            check(rc != 'hang' and LOCKED not in err, f'[{mode}] ... apply {n} answers and holds no lock after it '
                  f'(rc {rc}: {err.strip()[-160:]})')
        check(hung.reads > 0, f'[{mode}] ... the reads did reach the file ({hung.reads} left unanswered)')
    finally:
        hung.close()
    hung_open(t, root, meminfo, env, mode)
    blacklist = os.path.join(root, 'etc', 'modprobe.d', 'blacklist.conf')
    hung = hangfs.HangFile(blacklist)
    try:
        rc, out, err = t.run(root, *QUICK, 'facts', 'modprobe.blacklist', env=env)
        check(rc == 0 and 'unreadable' in out and TIMED_OUT in out,
              f'[{mode}] a modprobe.d file never answers libkmod: modprobe.blacklist is unreadable, "timed out" '
              f'(rc {rc}: {(out + err).strip()[-200:]})')
    finally:
        hung.close()


def stderr_says(p, text, limit=HANG):
    """Read P's stderr until TEXT shows or LIMIT seconds pass (P may never end: see hung_open)."""
    import select
    import time
    got, end = b'', time.monotonic() + limit
    while text.encode() not in got and time.monotonic() < end:
        if select.select([p.stderr], [], [], 0.5)[0]:
            chunk = os.read(p.stderr.fileno(), 4096)
            if not chunk:
                break
            got += chunk
    return got.decode('utf-8', 'replace')


def hung_open(t, root, meminfo, env, mode):
    """An open the server never answers: the kernel keeps the opener waiting even through SIGKILL
    once the server has taken the request, so no read apart helps. The guard ends the run: it says
    which file, lets the apply lock go first, and the process is left to the kernel (it ends when
    the server goes). The next apply is not refused for the lock."""
    hung = hangfs.HangFile(meminfo, hang='open')
    procs = []
    try:
        for n in (1, 2):
            p = subprocess.Popen([t.bin, '--root', root, *QUICK, 'apply', '--profile', PROFILE],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 env=dict(os.environ, NO_COLOR='1', LC_ALL='C', **env))
            procs.append(p)
            err = stderr_says(p, 'giving up')
            check('proc/meminfo did not answer within 1.000 s' in err and LOCKED not in err,
                  f'[{mode}] an open of proc/meminfo never answers: apply {n} gives up, naming it, and is not '
                  f'refused for the lock ({err.strip()[-200:]})')
    finally:
        hung.close()  # the server goes: the kernel lets the openers go
        for p in procs:
            try:
                p.wait(timeout=HANG)
            except subprocess.TimeoutExpired:
                p.kill()
            p.stderr.close()


CASES = {'modprobe-fifo': modprobe_fifo, 'modprobe-link': modprobe_link, 'esc-cpumap': esc_cpumap,
         'sparse-cpuinfo': sparse_cpuinfo, 'hung-file': hung_file}
# What the confinement decides; the deadline and the limits are the same whatever it is, so the
# other cases run once, with the confinement this machine gives.
EVERY_MODE = ('modprobe-fifo', 'modprobe-link', 'esc-cpumap')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--only', default='')
    ap.add_argument('--modes', default='default,chroot,vet')
    a = ap.parse_args()
    only = [x for x in a.only.split(',') if x]
    try:
        hangfs.private_mounts()  # before any thread: the hung-file case mounts in a namespace of its own
    except OSError as e:
        print(f'note  no private mount namespace ({e}): hung-file will be skipped')
    # tmpfs where there is one: the trees are copied a few dozen times, and removing them from a disk
    # that discards took minutes on the development machine
    shm = '/dev/shm' if os.access('/dev/shm', os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix='llmtune-hostreads-', dir=shm) as tmp:
        t = Tool(a.llmtune, a.roots, tmp)
        host = Host(tmp)
        for mode in a.modes.split(','):
            env = {} if mode == 'default' else {'LLMTUNE_TEST_CONFINEMENT': mode}
            rc, out, err = t.run(t.fresh('vm-nogpu'), 'facts', 'root.confinement', env=env)
            got = out.split()[-1] if out.split() else '?'
            if mode != 'default' and got != mode:
                print(f'skip  [{mode}]: this machine confines with {got}')
                continue
            mode = got
            for name, fn in CASES.items():
                if (only and name not in only) or (env and name not in EVERY_MODE):
                    continue
                print(f'== {name} [{mode}]', flush=True)
                fn(t, host, env, mode)
    return finish()


if __name__ == '__main__':
    sys.exit(main())
