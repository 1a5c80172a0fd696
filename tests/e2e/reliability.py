#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Reliability on a busy, hostile or interrupted machine (docs/RELIABILITY.md), on copies of the
fixture roots. One part per run (meson test reliability-PART):

  renames   a process renames files in a loop (every rename on the host makes openat2's
            RESOLVE_IN_ROOT lookups through ".." fail with EAGAIN) while audits of every fixture
            must print byte-identical JSON and applies must write identical trees.
  backups   a planted backup of the right size is rewritten, not trusted; with its before backup
            missing or altered, rollback refuses (even --force) instead of deleting the target.
  lock      the lock file unlinked while an apply holds the lock: a second apply and a rollback are
            still refused (the directory is what is locked).
  debris    temporary files of killed runs in the backup store are removed by the next run; one
            beside a target with the very PID of the next apply does not make it fail.
  output    JSON of a tree holding non-UTF-8 bytes is valid UTF-8 and says what was replaced; a FIFO
            or socket at a managed path reads as "not a regular file" (no hang, no silent empty file).
  rootshape an empty directory (or one without the kernel's basic files) is refused as --root
            unless --root-force; apply and rollback also need etc/.
  metadata  xattrs (user.*, security.selinux, trusted.*, an ACL where setfacl exists) survive apply
            and rollback; backups of a 0600 file are 0600; created directories are 0755 under umask 077.
  logbound  a runtime value over 4 KiB (700 KiB here) is kept in the backup store, not in its
            record: the log stays small, rollback restores it byte for byte; a log within 16 MiB of
            its 256 MiB read-back limit takes no new change.
  longlog   rollback --all of a generated log of thousands of records (apply/rollback cycles, the
            last apply in force) restores the original tree; the log reads back clean.
  kills     LLMTUNE_KILL_RUNS (200) SIGKILLs of apply and rollback --all at random moments: every
            target before or after, the log read back, reruns equal to uninterrupted runs, the
            original tree restored.
  lostupdate  a line appended to /etc/fstab by another process between plan and rename: apply
            fails that change naming the file, keeps the line and undoes its run; a directory put
            in its place then is refused as unreadable (EISDIR), not as written by another process.
  head      the log's end is anchored: a log cut at its end or deleted is reported (verify exit 2,
            naming what is missing) and not continued by apply; verify --expect-head SEQ:HASH finds
            a cut even when the log and its head file were both rewritten; apply, verify and
            rollback --json report the head; a log from before the head file is accepted and gets one.
  runs      apply and rollback killed between two changes (after an outcome, before the next
            intent): verify and log report the run unfinished (run-begin without run-end); the next
            run recovers it and the tree equals an uninterrupted run's.
  rollback  its scope: an empty, non-numeric, signed or overflowing --to and two different scopes
            (--to 200 --all, --all --to 200) are usage errors that touch nothing; a dry run writes
            nothing (no var/lib/llmtune in a tree never applied, no debris swept).
  chattr    a file apply or rollback replaces keeps its chattr flags (A); an immutable or
            append-only target or directory is refused before anything is written (skipped, with
            the reason, where the filesystem has no flags or +i is not allowed).
  bytes     the hash covers the line's bytes: tests/e2e/logcheck.py (hashlib and byte slicing only)
            checks a real log and agrees with verify; a CRLF or a space added is an edit.
  bootswap  a swapoff made before a reboot, whose area the boot did not set up again (a zram device of
            a masked generator: swapon says EINVAL): rollback restores everything else, logs and
            reports the swap as back at the next boot, exits 0; in the boot it was made in, the same
            failure stops the rollback (exit 1, naming the area).
  acks      LLMTUNE_ACK_KILLS (100) SIGKILLs of `llmtune ack` (and of unack) at random moments, a new
            Xid logged before each: an ack is whole or absent (never half a record: verify reads the
            log back, every line a record), one whose command said it was made is never lost, and
            the audit agrees with the log every time (acked with that cycle's reason, or raised
            again by the new Xid).

    reliability.py --llmtune BIN --roots DIR --part PART
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)
from llmtunerun import LOG_DIR, Tool, copy_root, tree, wait_stopped  # noqa: E402  (tests/lib/llmtunerun.py)

FIXTURES = [('dgx-a100', 'a100-8x'), ('hgx-h100', 'h100-sxm-8x'), ('ws-4090', 'rtx4090-ws'), ('vm-nogpu', 'base')]

figures = {}


def untimed(out):
    """Audit JSON without its "time" line (issue 16 item 8: the run's time differs between runs) and
    each rule's "ms" (issue 31 item 10: likewise)."""
    out = re.sub(rb'\n  "time": "[^"]*",', b'', out, count=1)
    return re.sub(rb'\n *"ms": [0-9.]+,?', b'', out)


def tree_diff(a, b):
    ta, tb = tree(a), tree(b)
    return sorted(k for k in set(ta) | set(tb) if ta.get(k) != tb.get(k))


# --- renames ----------------------------------------------------------------------------------------

STORM = r'''
import os, sys
d = sys.argv[1]
a, b = os.path.join(d, 'a'), os.path.join(d, 'b')
open(a, 'w').close()
while True:
    os.rename(a, b)
    os.rename(b, a)
'''


def renames(tool, roots, tmp, args):
    refs = {}
    for name, profile in FIXTURES:
        root = copy_root(roots, name, os.path.join(tmp, name))
        refs[name] = untimed(tool.run(root, 'audit', '--json', binary=True)[1])
        check(refs[name].startswith(b'{'), f'{name}: reference audit (quiet machine)')
    # The reference apply: what an uninterrupted, undisturbed apply writes.
    # Compared: every file and link the apply manages (images in dev/ keep tune2fs's timestamps).
    ref_apply = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'apply-ref'))
    rc, out, err = tool.run(ref_apply, 'apply', '--profile', 'a100-8x', '--json')
    check(rc == 0, f'reference apply ({err.strip()[:200]})')
    targets = sorted({c['target'].lstrip('/') for c in json.loads(out)['changes'] if c['type'] in ('file', 'value')})
    check(any(t == 'etc/nccl.conf' for t in targets), f'the reference apply writes /etc/nccl.conf ({len(targets)} targets)')

    def written(top):
        out = {}
        for t in targets:
            p = os.path.join(top, t)
            out[t] = open(p, 'rb').read() if os.path.isfile(p) else None
        return out
    ref_written = written(ref_apply)

    storm_dir = os.path.join(tmp, 'storm')
    os.mkdir(storm_dir)
    storm = subprocess.Popen([sys.executable, '-c', STORM, storm_dir])
    t0 = time.monotonic()
    try:
        time.sleep(0.3)
        differ = total = 0
        for name, _ in FIXTURES:
            root = os.path.join(tmp, name)
            bad = 0
            for i in range(args.audits):
                out = untimed(tool.run(root, 'audit', '--json', binary=True)[1])
                bad += out != refs[name]
            total += args.audits
            differ += bad
            check(bad == 0, f'{name}: {args.audits} audits during a rename storm print the reference JSON '
                  f'({bad} differ)')
        figures['audits during the storm'] = total
        figures['audits that differ'] = differ
        wrong = 0
        for i in range(args.applies):
            work = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'apply-work'))
            rc, _, err = tool.run(work, 'apply', '--profile', 'a100-8x')
            now = written(work)
            d = [t for t in targets if now[t] != ref_written[t]]
            wrong += rc != 0 or bool(d)
            check(rc == 0 and not d, f'apply {i + 1} during the storm writes the reference tree (rc {rc}, differs: {d[:4]})')
        figures['applies during the storm'] = args.applies
        figures['applies that differ'] = wrong
    finally:
        storm.kill()
        storm.wait()
    check(storm.returncode is not None, 'the rename storm ran throughout')
    figures['storm seconds'] = round(time.monotonic() - t0, 1)


# --- lost updates -----------------------------------------------------------------------------------

def stop_at(tool, root, args, what, target):
    """The crash-point number where an apply of ARGS reaches WHAT for TARGET (a dry copy finds it)."""
    probe = root + '-points'
    shutil.rmtree(probe, ignore_errors=True)
    subprocess.run(['cp', '-a', root, probe], check=True)
    points = probe + '.txt'
    tool.run(probe, *args, env={'LLMTUNE_TEST_POINTS': points})
    shutil.rmtree(probe)
    for line in open(points).read().splitlines():
        n, w, t = line.split(' ', 2)
        if w == what and t == target:
            return int(n)
    return None


def lostupdate(tool, roots, tmp, args):
    """A line appended to /etc/fstab between the plan and the rename is never overwritten."""
    root = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'lost'))
    apply = ['apply', '--profile', 'a100-8x', '--rule', 'swap-fstab', '--rule', 'thp-enabled']
    n = stop_at(tool, root, apply, 'before-rename', '/etc/fstab')
    check(n is not None, f'the apply replaces /etc/fstab (crash point {n})')
    fstab = os.path.join(root, 'etc', 'fstab')
    before = open(fstab, 'rb').read()
    thp = os.path.join(root, 'sys', 'kernel', 'mm', 'transparent_hugepage', 'enabled')
    thp_before = open(thp, 'rb').read()
    p = tool.popen(root, *apply, env={'LLMTUNE_TEST_STOP_AT': str(n)})
    stopped = wait_stopped(p.pid)
    check(stopped, 'apply stopped right before renaming its new /etc/fstab')
    line = b'# appended by another process while apply ran\nserver:/data /data nfs defaults 0 0\n'
    with open(fstab, 'ab') as f:
        f.write(line)
    os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=120)
    check(p.returncode == 1 and '/etc/fstab' in err and 'changed since the plan' in err,
          f'apply fails naming /etc/fstab and why (rc {p.returncode}: {err.strip()[:300]})')
    check(open(fstab, 'rb').read() == before + line, 'the appended line is still in /etc/fstab (not overwritten)')
    check(open(thp, 'rb').read() == thp_before, 'the run\'s other change was undone')
    rc, out, err = tool.run(root, 'verify')
    check(rc == 0, f'verify is clean (nothing of the failed run is in force: rc {rc} {out.strip()[-200:]})')
    # And the next apply plans from the new content, keeping the appended line.
    rc, out, err = tool.run(root, *apply)
    check(rc == 0 and line in open(fstab, 'rb').read(), f'the next apply keeps the appended line (rc {rc})')
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0 and open(fstab, 'rb').read() == before + line,
          f'rollback brings back the fstab with the appended line (rc {rc})')

    # The same moment, but /etc/fstab made unreadable (a directory in its place, EISDIR even for
    # root): the refusal says that and the errno, not "another process wrote it" (issue 14 item 2).
    root = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'unreadable'))
    n = stop_at(tool, root, apply, 'before-rename', '/etc/fstab')
    fstab = os.path.join(root, 'etc', 'fstab')
    thp = os.path.join(root, 'sys', 'kernel', 'mm', 'transparent_hugepage', 'enabled')
    thp_before = open(thp, 'rb').read()
    p = tool.popen(root, *apply, env={'LLMTUNE_TEST_STOP_AT': str(n)})
    check(wait_stopped(p.pid), 'apply stopped right before renaming its new /etc/fstab (unreadable case)')
    os.rename(fstab, fstab + '.saved')
    os.mkdir(fstab)
    os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=120)
    check(p.returncode == 1 and '/etc/fstab' in err and 'cannot be read now (EISDIR' in err
          and 'nothing replaced' in err and 'another process' not in err,
          f'apply refuses /etc/fstab as unreadable, naming EISDIR (rc {p.returncode}: {err.strip()[:300]})')
    check(os.path.isdir(fstab) and not os.listdir(fstab) and open(thp, 'rb').read() == thp_before,
          'the directory at /etc/fstab is left as it was and the run\'s other change was undone')


# --- backups ----------------------------------------------------------------------------------------

def backups(tool, roots, tmp, args):
    """A planted backup is never trusted; a lost backup never makes rollback delete the target."""
    import hashlib
    apply = ['apply', '--profile', 'a100-8x', '--rule', 'swap-fstab']
    root = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'planted'))
    fstab = os.path.join(root, 'etc', 'fstab')
    original = open(fstab, 'rb').read()
    sha = hashlib.sha256(original).hexdigest()
    bdir = os.path.join(root, LOG_DIR, 'backups')
    os.makedirs(bdir)
    with open(os.path.join(bdir, sha), 'wb') as f:
        f.write(b'\0' * len(original))  # the right name and size, not the content
    rc, out, err = tool.run(root, *apply)
    check(rc == 0, f'apply with a planted backup of the right size ({err.strip()[:200]})')
    stored = open(os.path.join(bdir, sha), 'rb').read()
    check(hashlib.sha256(stored).hexdigest() == sha, 'the planted backup was rewritten with the original fstab')
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0 and open(fstab, 'rb').read() == original,
          f'rollback restores the original fstab (rc {rc}: {err.strip()[:200]})')

    for how in ('missing', 'altered'):
        root = copy_root(roots, 'dgx-a100', os.path.join(tmp, how))
        fstab = os.path.join(root, 'etc', 'fstab')
        rc, out, err = tool.run(root, *apply)
        after = open(fstab, 'rb').read()
        check(rc == 0 and after != original, f'{how}: apply changed /etc/fstab')
        b = os.path.join(root, LOG_DIR, 'backups', sha)
        if how == 'missing':
            os.unlink(b)
        else:
            with open(b, 'ab') as f:
                f.write(b'tampered\n')
        for force in ([], ['--force']):
            rc, out, err = tool.run(root, 'rollback', '--all', *force)
            # Without --force the broken log already refuses; --force must not get past a lost content.
            check(rc == 1 and (not force or ('before content cannot be loaded' in err and '/etc/fstab' in err)),
                  f'{how} backup: rollback --all {" ".join(force)} refuses, naming the target '
                  f'(rc {rc}: {err.strip()[-300:]})')
            check(os.path.isfile(fstab) and open(fstab, 'rb').read() == after,
                  f'{how} backup: rollback {" ".join(force)} left /etc/fstab in place (not removed)')


# --- lock -------------------------------------------------------------------------------------------

def lock(tool, roots, tmp, args):
    """Unlinking what looks like the lock while an apply holds it lets no second apply in."""
    root = copy_root(roots, 'ws-4090', os.path.join(tmp, 'lock'))
    apply = ['apply', '--profile', 'rtx4090-ws']
    p = tool.popen(root, *apply, env={'LLMTUNE_TEST_STOP_AT': '4'})
    check(wait_stopped(p.pid), 'the first apply is stopped in the middle of its run')
    removed = []
    for name in ('lock', 'changelog.lock'):
        path = os.path.join(root, LOG_DIR, name)
        if os.path.lexists(path):
            os.unlink(path)
            removed.append(name)
    print(f'      removed: {removed or "nothing named like a lock file"}')
    rc, out, err = tool.run(root, *apply)
    check(rc == 1 and 'another llmtune apply or rollback is running' in err,
          f'a second apply is refused while the first holds the lock (rc {rc}: {err.strip()[:200]})')
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 1 and 'is running' in err, f'a rollback is refused too (rc {rc}: {err.strip()[:200]})')
    os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=120)
    check(p.returncode == 0, f'the first apply completes (rc {p.returncode}: {err.strip()[:200]})')
    rc, out, err = tool.run(root, 'verify')
    check(rc == 0, f'verify is clean: the log is in order ({(out + err).strip()[-200:]})')
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0, f'rollback --all works from that log (rc {rc}: {err.strip()[:200]})')


# --- debris -----------------------------------------------------------------------------------------

def debris(tool, roots, tmp, args):
    """Temporary files of killed runs: removed from the backup store, and never in the way."""
    import hashlib
    root = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'debris'))
    apply = ['apply', '--profile', 'a100-8x', '--rule', 'swap-fstab']
    fstab = os.path.join(root, 'etc', 'fstab')
    original = open(fstab, 'rb').read()
    sha = hashlib.sha256(original).hexdigest()
    bdir = os.path.join(root, LOG_DIR, 'backups')
    os.makedirs(bdir)
    # What a run killed inside the backup store leaves (another PID than ours).
    stale = [f'.{sha}.llmtune-1', f'.{"0" * 64}.llmtune-4242']
    for name in stale:
        with open(os.path.join(bdir, name), 'wb') as f:
            f.write(original[:7])
    # And a stale temporary file beside /etc/fstab with the PID the next apply gets: a killed run
    # whose PID was reused. The next PIDs are predicted from the last one the kernel gave out.
    with open('/proc/sys/kernel/ns_last_pid') as f:
        last = int(f.read())
    planted = range(last + 1, last + 400)
    for pid in planted:
        with open(os.path.join(root, 'etc', f'.fstab.llmtune-{pid}'), 'wb') as f:
            f.write(b'half a file')
    p = tool.popen(root, *apply)
    out, err = p.communicate(timeout=120)
    hit = p.pid in planted
    print(f'      apply ran as PID {p.pid} ({"a" if hit else "no"} stale temporary file with its PID was there)')
    check(p.returncode == 0, f'apply succeeds past a stale temporary file with its own PID (rc {p.returncode}: '
          f'{err.strip()[:200]})')
    check(hit, 'the apply\'s PID was among the planted temporary files (the case was exercised)')
    check(open(fstab, 'rb').read() != original and b'half a file' not in open(fstab, 'rb').read(),
          'apply wrote /etc/fstab')
    left = [n for n in os.listdir(bdir) if n.startswith('.')]
    check(not left, f'no temporary file is left in the backup store ({left})')
    figures['stale backup temporaries removed'] = len(stale) - len(left)
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0 and open(fstab, 'rb').read() == original, f'rollback restores fstab (rc {rc})')


# --- output -----------------------------------------------------------------------------------------

def output(tool, roots, tmp, args):
    """JSON stays valid UTF-8 whatever bytes a tree holds; a FIFO or socket at a managed path is
    'not a regular file' (no hang, no 'Is a directory', no silent empty file)."""
    import socket
    root = copy_root(roots, 'ws-4090', os.path.join(tmp, 'bytes'))
    with open(os.path.join(root, 'etc', 'hostname'), 'wb') as f:
        f.write(b'gpu\xff\xfenode-\xc3\x28\n')
    with open(os.path.join(root, 'proc', 'cmdline'), 'wb') as f:
        f.write(b'BOOT_IMAGE=/vmlinuz-\xe9t\xe9 root=/dev/sda1 quiet \xed\xa0\x80 \xf5\x80\x80\x80\n')
    for cmd in (['audit', '--json'], ['facts', '--json']):
        rc, out, err = tool.run(root, *cmd, binary=True)
        try:
            doc = json.loads(out.decode('utf-8', errors='strict'))
            ok = True
        except (UnicodeDecodeError, ValueError) as e:
            doc, ok = {}, False
            print(f'      {e}')
        check(ok, f'{" ".join(cmd)} prints valid UTF-8 JSON for a tree with non-UTF-8 bytes (rc {rc})')
        check(doc.get('non_utf8_replaced', 0) >= 1,
              f'{" ".join(cmd)} says how many strings had bytes replaced ({doc.get("non_utf8_replaced")})')
        check('\ufffd' in out.decode('utf-8', errors='replace'), f'{" ".join(cmd)}: the replaced bytes show as U+FFFD')

    root = copy_root(roots, 'ws-4090', os.path.join(tmp, 'special'))
    os.makedirs(os.path.join(root, 'etc', 'llmtune'), exist_ok=True)
    fifo = os.path.join(root, 'etc', 'llmtune', 'gpu-affinity.conf')
    os.mkfifo(fifo)
    sock_path = os.path.join(root, 'etc', 'nccl.conf')
    if os.path.lexists(sock_path):
        os.unlink(sock_path)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(sock_path)
    try:
        for cmd in (['audit', '--json'], ['facts', '--json'], ['apply', '--profile', 'rtx4090-ws'], ['verify']):
            try:
                p = subprocess.run([tool.bin, '--root', root, *cmd], capture_output=True, text=True,
                                   env=tool.env(), timeout=60)
                rc, out, err = p.returncode, p.stdout, p.stderr
            except subprocess.TimeoutExpired:
                rc, out, err = 'hang', '', ''
            check(rc != 'hang', f'{" ".join(cmd)} with a FIFO and a socket at managed paths does not hang')
            text = out + err
            check('Is a directory' not in text, f'{" ".join(cmd)}: never "Is a directory" for a FIFO or socket')
            if cmd[0] == 'facts':
                check('not a regular file' in text, 'facts: a fact read from the FIFO or socket is "not a regular file"')
            if cmd[0] == 'audit':
                for path in ('/etc/llmtune/gpu-affinity.conf', '/etc/nccl.conf'):
                    said = any('not a regular file' in line and path in line for line in text.splitlines())
                    check(said, f'{cmd[0]}: {path} is "not a regular file"')
        check(stat.S_ISFIFO(os.lstat(fifo).st_mode) and stat.S_ISSOCK(os.lstat(sock_path).st_mode),
              'the FIFO and the socket are left as they were')
    finally:
        sock.close()


# --- a root must look like a machine ----------------------------------------------------------------

def rootshape(tool, roots, tmp, args):
    empty = os.path.join(tmp, 'empty')
    os.mkdir(empty)
    for cmd in (['audit'], ['facts'], ['apply', '--profile', 'a100-8x'], ['recommend']):
        rc, out, err = tool.run(empty, *cmd)
        check(rc == 1 and 'does not look like a Linux root' in err and '--root-force' in err,
              f'{cmd[0]} of an empty directory is refused, saying why (rc {rc}: {err.strip()[:200]})')
    check(os.listdir(empty) == [], f'nothing was written into the empty directory ({os.listdir(empty)})')
    rc, out, err = tool.run(empty, '--root-force', 'audit')
    check(rc in (0, 2) and 'rules' in out, f'--root-force audits it anyway (rc {rc})')
    # proc/ and sys/ without the kernel's basic files: a mistyped path, not a machine.
    odd = os.path.join(tmp, 'odd')
    os.makedirs(os.path.join(odd, 'proc', 'self'))
    os.makedirs(os.path.join(odd, 'etc'))
    rc, out, err = tool.run(odd, 'audit')
    check(rc == 1 and 'proc/cpuinfo' in err, f'a tree whose proc/ lacks the basic files is refused (rc {rc}: {err.strip()[:200]})')
    # A kernel view without etc/ (a capture): readable, but nothing to change.
    root = copy_root(roots, 'vm-nogpu', os.path.join(tmp, 'noetc'))
    shutil.rmtree(os.path.join(root, 'etc'))
    rc, out, err = tool.run(root, 'facts')
    check(rc == 0, f'facts of a tree without etc/ (rc {rc}: {err.strip()[:200]})')
    rc, out, err = tool.run(root, 'apply', '--profile', 'base')
    check(rc == 1 and 'no etc/' in err and not os.path.exists(os.path.join(root, 'etc')),
          f'apply into a tree without etc/ is refused and writes nothing (rc {rc}: {err.strip()[:200]})')
    for name, _ in FIXTURES:
        rc, out, err = tool.run(os.path.join(roots, name), 'facts', 'cpu.count')
        check(rc == 0, f'the fixture {name} is taken as a machine (rc {rc})')


# --- metadata -------------------------------------------------------------------------------------

def xattrs(path):
    return {n: os.getxattr(path, n, follow_symlinks=False) for n in os.listxattr(path, follow_symlinks=False)}


def metadata(tool, roots, tmp, args):
    """Extended attributes survive apply and rollback; backups are as private as their file;
    directories apply creates are 0755 whatever the umask."""
    root = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'xattr'))
    fstab = os.path.join(root, 'etc', 'fstab')
    os.chmod(fstab, 0o600)  # a CIFS password in it
    wanted = {'user.origin': b'site-config', 'security.selinux': b'system_u:object_r:etc_t:s0\0',
              'trusted.note': b'kept'}
    for name, value in list(wanted.items()):
        try:
            os.setxattr(fstab, name, value)
        except OSError as e:
            print(f'      {name}: cannot be set here ({e.strerror}); not checked')
            del wanted[name]
    check('user.origin' in wanted, f'the tree holds extended attributes ({sorted(wanted)})')
    acl = subprocess.run(['setfacl', '-m', 'u:65534:r', fstab], capture_output=True).returncode == 0 \
        if shutil.which('setfacl') else False
    before = xattrs(fstab)
    rc, out, err = tool.run(root, 'apply', '--profile', 'a100-8x', '--rule', 'swap-fstab')
    check(rc == 0, f'apply edits /etc/fstab (rc {rc}: {err.strip()[:200]})')
    now = xattrs(fstab)
    check(now == before, f'apply kept every extended attribute of /etc/fstab ({sorted(before)}{" + ACL" if acl else ""}'
          f' -> {sorted(now)})')
    check(stat.S_IMODE(os.stat(fstab).st_mode) == 0o600, 'apply kept the mode 0600')
    bdir = os.path.join(root, LOG_DIR, 'backups')
    modes = {n: stat.S_IMODE(os.stat(os.path.join(bdir, n)).st_mode) for n in os.listdir(bdir)}
    check(modes and all(m == 0o600 for m in modes.values()),
          f'the backups of a 0600 file are 0600 ({sorted(set(oct(m) for m in modes.values()))})')
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0 and xattrs(fstab) == before, f'rollback kept them too (rc {rc}, {sorted(xattrs(fstab))})')

    root = copy_root(roots, 'ws-4090', os.path.join(tmp, 'umask'))
    old = os.umask(0o077)
    try:
        rc, out, err = tool.run(root, 'apply', '--profile', 'rtx4090-ws')
    finally:
        os.umask(old)
    d = os.path.join(root, 'etc', 'llmtune')
    f = os.path.join(d, 'gpu-affinity.conf')
    check(rc == 0 and os.path.isfile(f), f'apply under umask 077 (rc {rc}: {err.strip()[:200]})')
    dm, fm = stat.S_IMODE(os.stat(d).st_mode), stat.S_IMODE(os.stat(f).st_mode)
    check(dm == 0o755 and fm == 0o644, f'/etc/llmtune is 0755 and gpu-affinity.conf 0644 under umask 077 '
          f'({oct(dm)}, {oct(fm)})')


# --- a log it can always read back -------------------------------------------------------------------

def logbound(tool, roots, tmp, args):
    """A big runtime value is kept in the backup store, not in its record: the log stays small and
    rollback puts the value back byte for byte. A change that would take the log past the size it
    can be read back at is refused before anything is changed."""
    import hashlib
    orig = copy_root(roots, 'ws-4090', os.path.join(tmp, 'bigvalue-orig'))
    root = copy_root(roots, 'ws-4090', os.path.join(tmp, 'bigvalue'))
    policy = os.path.join('sys', 'devices', 'system', 'cpu', 'cpufreq')
    # 700 KiB in one governor file (what the issue wrote into 256 of them: a 367 MB log), 5 KiB
    # (just over what a record holds inline) in another; the fixture copy the run starts from.
    values = {'policy3': b'x' * (700 << 10), 'policy5': b'y' * 5000}
    for t in (orig, root):
        for pol, v in values.items():
            with open(os.path.join(t, policy, pol, 'scaling_governor'), 'wb') as f:
                f.write(v + b'\n')
    rc, out, err = tool.run(root, 'apply', '--profile', 'rtx4090-ws')
    check(rc == 0, f'apply with a 700 KiB and a 5 KiB value succeeds (rc {rc}: {err.strip()[-300:]})')
    log = os.path.join(root, LOG_DIR, 'changelog.jsonl')
    with open(log, 'rb') as f:
        lines = f.read().splitlines()
    size = os.path.getsize(log)
    longest = max(len(line) for line in lines)
    check(size < 200000 and longest < 8192, f'the log stays small: {size} bytes, longest record {longest} bytes')
    for pol, v in values.items():
        sha = hashlib.sha256(v).hexdigest()
        recs = [json.loads(line) for line in lines if f'/{pol}/scaling_governor'.encode() in line]
        check(recs and all(r['before'] is None and r['before_sha256'] == sha and r['backup_before'] == 'backups/' + sha
                           for r in recs), f'{pol}: its records name the before value by SHA-256 ({len(recs)} records)')
        bk = os.path.join(root, LOG_DIR, 'backups', sha)
        stored = open(bk, 'rb').read() if os.path.exists(bk) else None
        check(stored == v and stat.S_IMODE(os.stat(bk).st_mode) == 0o600,
              f'{pol}: backups/{sha[:12]}... holds the {len(v)}-byte value, mode 0600')
        gov = open(os.path.join(root, policy, pol, 'scaling_governor'), 'rb').read()
        check(gov.strip() == b'performance', f'{pol}: the governor was set ({gov[:20]!r})')
    rc, out, err = tool.run(root, 'verify')
    check(rc == 0, f'verify reads the values back and is clean ({(out + err).strip()[-200:]})')
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0, f'rollback --all (rc {rc}: {err.strip()[-300:]})')
    d = tree_diff(orig, root)
    check(not d, f'rollback restored the tree exactly, the 700 KiB value included (differs: {d[:5]})')
    rc, out, err = tool.run(root, 'verify')
    check(rc == 0, f'verify is clean after the rollback ({(out + err).strip()[-200:]})')
    # A backup of a big value lost: rollback refuses to undo it, even with --force (it would
    # write nothing where the value was).
    root = copy_root(tmp, 'bigvalue-orig', os.path.join(tmp, 'lostvalue'))
    tool.run(root, 'apply', '--profile', 'rtx4090-ws')
    os.unlink(os.path.join(root, LOG_DIR, 'backups', hashlib.sha256(values['policy3']).hexdigest()))
    rc, out, err = tool.run(root, 'rollback', '--all', '--force')
    gov = open(os.path.join(root, policy, 'policy3', 'scaling_governor'), 'rb').read()
    check(rc == 1 and 'policy3/scaling_governor' in err and gov.strip() == b'performance',
          f'its backup lost, rollback --force refuses to undo the value (rc {rc}: {err.strip()[-200:]})')

    # A log 241 MiB long (sparse: unreadable filler, then one valid record): the next change
    # would take it within 16 MiB of the 256 MiB limit, so apply refuses before changing anything.
    root = copy_root(roots, 'ws-4090', os.path.join(tmp, 'fulllog'))
    r2 = copy_root(roots, 'ws-4090', os.path.join(tmp, 'donor'))
    tool.run(r2, 'apply', '--profile', 'rtx4090-ws')
    last = open(os.path.join(r2, LOG_DIR, 'changelog.jsonl'), 'rb').read().splitlines()[-1]
    os.makedirs(os.path.join(root, LOG_DIR), exist_ok=True)
    log = os.path.join(root, LOG_DIR, 'changelog.jsonl')
    with open(log, 'wb') as f:
        f.seek(241 << 20)
        f.write(b'\n' + last + b'\n')
    size = os.path.getsize(log)
    before = tree(root)
    rc, out, err = tool.run(root, 'apply', '--profile', 'rtx4090-ws')
    check(rc == 1 and 'would pass the size it can be read back at' in err,
          f'apply to a log near its limit is refused (rc {rc}: {err.strip()[-300:]})')
    check(os.path.getsize(log) == size and tree(root) == before, 'nothing was changed or logged')


# --- a long history rolled back ----------------------------------------------------------------------

def _record_hash(rec):
    """The chain hash: SHA-256 of the line without its "hash" (docs/RELIABILITY.md, changelog.c)."""
    import hashlib
    body = json.dumps({k: v for k, v in rec.items() if k != 'hash'}, separators=(',', ':'), ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()


def history_log(tool, root, records, profile='rtx4090-ws'):
    """Give ROOT (a fixture copy) a change log of about RECORDS records: a real apply, its records
    replayed as earlier history, the real apply last. Half the history is apply/rollback cycles
    (intent, done, ..., undo-intent, undone newest first: nothing of them in force), half is
    re-applies of the runtime values (the boot re-apply after something reset them: intent, done,
    every one still in force under the newer ones). What years of applies leave behind; the tree
    is in the apply's after state. Returns (records, "done" records rollback --all undoes)."""
    rc, out, err = tool.run(root, 'apply', '--profile', profile)
    if rc != 0:
        raise RuntimeError(f'apply: {err.strip()[-300:]}')
    path = os.path.join(root, LOG_DIR, 'changelog.jsonl')
    with open(path) as f:
        run = [json.loads(line) for line in f]
    # (the run's run-begin and run-end records stand around its pairs)
    pairs = [(run[k], run[k + 1]) for k in range(len(run) - 1)
             if run[k]['event'] == 'intent' and run[k + 1]['event'] == 'done']
    values = [p for p in pairs if p[1]['type'] == 'value']
    history = max(0, records - len(run))
    cycles = history // 2 // (4 * len(pairs))
    reapplies = (history - cycles * 4 * len(pairs)) // (2 * len(values))
    out_recs = []

    def emit(rec, **fields):
        out_recs.append(dict(rec, **fields))
        return len(out_recs)

    for c in range(cycles):
        run_id, undo_id = f'history-{c}', f'history-{c}-rollback'
        done_seq = []
        for intent, done in pairs:
            s = emit(intent, run=run_id, ref=None)
            done_seq.append(emit(done, run=run_id, ref=s))
        for (intent, done), ds in reversed(list(zip(pairs, done_seq))):
            emit(done, run=undo_id, event='undo-intent', ref=ds, detail='rollback')
            emit(done, run=undo_id, event='undone', ref=ds, detail=None)
    for c in range(reapplies):
        for intent, done in values:
            s = emit(intent, run=f'reapply-{c}', ref=None)
            emit(done, run=f'reapply-{c}', ref=s)
    base = len(out_recs)
    for rec in run:
        emit(rec, ref=rec['ref'] + base if rec['ref'] else None)
    prev = '0' * 64
    with open(path, 'w') as f:
        for seq, rec in enumerate(out_recs, 1):
            rec['seq'], rec['prev'] = seq, prev
            rec.pop('hash', None)
            rec['hash'] = prev = _record_hash(rec)
            f.write(json.dumps(rec, separators=(',', ':'), ensure_ascii=False) + '\n')
    with open(os.path.join(root, LOG_DIR, 'changelog.head'), 'w') as f:
        f.write(f'{len(out_recs)}:{prev}\n')  # the log's new end (see part head)
    return len(out_recs), len(pairs) + reapplies * len(values)


def longlog(tool, roots, tmp, args):
    """rollback --all of a log of thousands of records (apply/rollback cycles, re-applies, the last
    apply) restores the original tree, and the log reads back clean afterwards. Correctness only:
    bench/rollback_bench.py times it (docs/RELIABILITY.md)."""
    # tmpfs when there is one: each undone change appends two records, each fsync'ed (on a disk
    # that, not the log's analysis, is most of the time).
    base = '/dev/shm' if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK) else tmp
    with tempfile.TemporaryDirectory(prefix='llmtune-longlog-', dir=base) as t:
        _longlog(tool, roots, t, args)


def _longlog(tool, roots, tmp, args):
    orig = copy_root(roots, 'ws-4090', os.path.join(tmp, 'orig'))
    root = copy_root(roots, 'ws-4090', os.path.join(tmp, 'longlog'))
    n, in_force = history_log(tool, root, args.records)
    check(n >= args.records - 200, f'a log of {n} records ({in_force} changes to undo)')
    rc, out, err = tool.run(root, 'verify', '--json')
    v = json.loads(out) if rc == 0 else {}
    check(rc == 0 and v.get('records') == n, f'verify reads it back clean (rc {rc}: {err.strip()[-200:]})')
    t0 = time.monotonic()
    rc, out, err = tool.run(root, 'rollback', '--all')
    secs = time.monotonic() - t0
    check(rc == 0 and f'{in_force} rolled back' in out, f'rollback --all undoes the {in_force} changes '
          f'(rc {rc}: {(out + err).strip()[-300:]})')
    d = tree_diff(orig, root)
    check(not d, f'the tree equals the original (differs: {d[:5]})')
    rc, out, err = tool.run(root, 'verify', '--json')
    v = json.loads(out) if rc == 0 else {}
    # two records per change undone, and the rollback's run-begin and run-end
    check(rc == 0 and v.get('records') == n + 2 * in_force + 2 and v.get('status') == 'clean',
          f'verify: clean, {n + 2 * in_force + 2} records (rc {rc}: {out.strip()[-200:]} {err.strip()[-200:]})')
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0 and 'nothing to roll back' in out, f'a second rollback --all finds nothing ({out.strip()[-200:]})')
    figures['records'] = n
    figures['rollback --all seconds'] = round(secs, 2)


# --- kills ------------------------------------------------------------------------------------------

def kills(tool, roots, tmp, args):
    """SIGKILL at random moments of apply and of rollback --all, then recover: nothing torn, ever.

    One cycle: an apply killed after a random delay; every target is byte for byte in its before or
    its after state; verify reads the log back (chain intact, exit 0 or 2); a rerun of apply
    completes and leaves every target as an uninterrupted apply does; a rollback --all killed after
    a random delay; the same checks; a rerun of rollback --all completes and the whole tree (the
    change log aside) equals the original. The log is then removed, so it does not grow over the
    cycles. LLMTUNE_KILL_RUNS kills in all (default 200; two per cycle; up to twice as many while no
    kill has yet fallen among the changes of each command), LLMTUNE_KILL_MAX_MS the
    first window the delays are drawn from (default: how long an uninterrupted run took here).
    """
    _kill_loop('LLMTUNE_KILL_RUNS', 200, _kills, tool, roots, tmp)


def _kill_loop(var, default, body, tool, roots, tmp):
    """BODY(tool, roots, work, runs, rnd) with the number of kills from VAR (DEFAULT) and a seeded
    random source, in a work directory on tmpfs when there is one: fsync there costs nothing, so a
    run is short and the kills are many."""
    import random
    runs = int(os.environ.get(var, str(default)))
    seed = int(os.environ.get('LLMTUNE_KILL_SEED', str(int(time.time()))))
    rnd = random.Random(seed)
    print(f'      {runs} kills, seed {seed} (LLMTUNE_KILL_SEED to repeat)')
    base = '/dev/shm' if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK) else tmp
    work_tmp = tempfile.mkdtemp(prefix='llmtune-kills-', dir=base)
    try:
        body(tool, roots, work_tmp, runs, rnd)
    finally:
        shutil.rmtree(work_tmp, ignore_errors=True)


def _kills(tool, roots, tmp, runs, rnd):
    name, profile = 'ws-4090', 'rtx4090-ws'
    apply = ['apply', '--profile', profile]
    orig = copy_root(roots, name, os.path.join(tmp, 'orig'))
    ref = copy_root(roots, name, os.path.join(tmp, 'ref'))
    t = time.monotonic()
    rc, out, err = tool.run(ref, *apply, '--json')
    apply_s = time.monotonic() - t
    check(rc == 0, f'the uninterrupted apply ({err.strip()[:200]})')
    changes = json.loads(out)['changes']
    targets = sorted({c['target'].lstrip('/') for c in changes if c['type'] in ('file', 'value')})
    check(len(targets) >= 10, f'the run has targets to tear ({len(targets)} files and values, {len(changes)} changes)')

    def state(top):
        out = {}
        for rel in targets:
            p = os.path.join(top, rel)
            out[rel] = open(p, 'rb').read() if os.path.isfile(p) else None
        return out
    before, after = state(orig), state(ref)
    check(sum(before[k] != after[k] for k in targets) == len(targets), 'the run changes every target')
    t = time.monotonic()
    rc, _, err = tool.run(ref, 'rollback', '--all')
    rollback_s = time.monotonic() - t
    check(rc == 0 and tree(ref) == tree(orig), f'the uninterrupted rollback --all restores the tree ({err.strip()[:200]})')
    max_ms = os.environ.get('LLMTUNE_KILL_MAX_MS')
    window = {'apply': float(max_ms) / 1000 if max_ms else apply_s,
              'rollback': float(max_ms) / 1000 if max_ms else rollback_s}
    print(f'      uninterrupted: apply {apply_s * 1000:.0f} ms, rollback --all {rollback_s * 1000:.0f} ms')
    orig_tree = tree(orig)

    root = copy_root(roots, name, os.path.join(tmp, 'work'))
    bad = []
    mid = {'apply': 0, 'rollback': 0}
    killed = {'apply': 0, 'rollback': 0}
    done = 0
    t0 = time.monotonic()

    def kill_one(what, args):
        nonlocal done
        # Most of a run is reading the machine; its changes come at the end, and how long a run
        # takes varies with the load. The window follows the runs: it shrinks when a run finished
        # before its kill and grows when a kill found no target changed, so the delays (drawn
        # between 40% and 100% of it) keep landing before, among and after the changes.
        delay = rnd.uniform(0.4, 1.0) * window[what]
        p = tool.popen(root, *args)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.communicate()
        done += 1
        killed[what] += p.returncode == -signal.SIGKILL
        now = state(root)
        start = before if what == 'apply' else after
        if p.returncode != -signal.SIGKILL:
            window[what] *= 0.85
        elif now == start:
            window[what] *= 1.1
        torn = [k for k in targets if now[k] not in (before[k], after[k])]
        if torn:
            bad.append(f'{what} killed at {delay * 1000:.0f} ms: torn {torn[:3]}')
        if any(now[k] != before[k] for k in targets) and any(now[k] != after[k] for k in targets):
            mid[what] += 1
        rc, out, err = tool.run(root, 'verify', '--json')
        try:
            v = json.loads(out)
            ok = rc in (0, 2) and v['chain']['intact']
        except (ValueError, KeyError):
            ok = False
        if not ok:
            bad.append(f'{what} killed at {delay * 1000:.0f} ms: verify rc {rc}: {(out + err).strip()[-200:]}')

    # A run's changes take a few milliseconds at its end, so a kill among them is a matter of chance
    # (under ASan on a loaded machine 16 apply kills once all missed). When the planned kills have
    # not yet fallen mid-run of both commands, go on, up to as many kills again, until they have.
    def more():
        return done < runs or (done < 2 * runs and not (mid['apply'] and mid['rollback']))

    while more():
        kill_one('apply', apply)
        rc, _, err = tool.run(root, *apply)
        if rc != 0 or state(root) != after:
            bad.append(f'cycle {done}: the rerun of apply (rc {rc}) differs from an uninterrupted run: {err.strip()[-200:]}')
        if more():
            kill_one('rollback', ['rollback', '--all'])
        rc, _, err = tool.run(root, 'rollback', '--all')
        rc2, out2, _ = tool.run(root, 'verify', '--json')
        cur = tree(root)
        if rc != 0 or rc2 != 0 or cur != orig_tree:
            diff = sorted(k for k in set(orig_tree) | set(cur) if orig_tree.get(k) != cur.get(k))
            bad.append(f'cycle {done}: rollback --all (rc {rc}, verify rc {rc2}) left the tree different: {diff[:4]}')
        shutil.rmtree(os.path.join(root, LOG_DIR))
        if len(bad) > 10:
            break
    secs = time.monotonic() - t0
    for b in bad[:10]:
        print('      ' + b)
    check(not bad, f'{done} kills ({done - sum(killed.values())} runs had finished first): nothing torn, verify read '
          f'every log back, every rerun equal to an uninterrupted run, every tree restored ({len(bad)} problems)')
    check(mid['apply'] > 0 and mid['rollback'] > 0,
          f'kills fell in the middle of runs (apply {mid["apply"]}, rollback {mid["rollback"]} left some targets '
          f'changed and some not)')
    figures['kills'] = done
    figures['kills of apply / rollback'] = f'{killed["apply"]} / {killed["rollback"]}'
    figures['kills mid-run (targets partly changed) apply / rollback'] = f'{mid["apply"]} / {mid["rollback"]}'
    figures['problems'] = len(bad)
    figures['seconds'] = round(secs, 1)


# --- head, runs, bytes: the log's end, run records, the bytes as written (issue 15 item 3) -------------

HEAD = os.path.join(LOG_DIR, 'changelog.head')
LOGFILE = os.path.join(LOG_DIR, 'changelog.jsonl')
WS = ('ws-4090', 'rtx4090-ws')


def jrun(tool, root, *args):
    rc, out, err = tool.run(root, *args)
    try:
        return rc, json.loads(out), err
    except ValueError:
        return rc, {}, err + out


def read(path, mode='rb'):
    with open(path, mode) as f:
        return f.read()


def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def head(tool, roots, tmp, args):
    """A cut or deleted log is found; --expect-head proves nothing was cut; old logs get a head."""
    root = copy_root(roots, WS[0], os.path.join(tmp, 'head'))
    ap = ['apply', '--profile', WS[1], '--json']
    rc, a1, err = jrun(tool, root, *ap, '--rule', 'gpu-affinity-map')
    check(rc == 0 and a1.get('head') and a1['changed'] == 1, f'first apply reports its head ({a1.get("head")}, {err.strip()[-200:]})')
    anchor1 = a1['head']['anchor']
    check(read(os.path.join(root, HEAD)).decode() == anchor1 + '\n', f'the head file holds the anchor {anchor1[:20]}...')
    rc, a2, err = jrun(tool, root, *ap, '--rule', 'cpu-governor')
    anchor2 = a2.get('head', {}).get('anchor', '')
    rc, v, err = jrun(tool, root, 'verify', '--json')
    check(rc == 0 and v['head']['anchor'] == anchor2 and v['head_file']['state'] == 'ok' and
          read(os.path.join(root, HEAD)).decode() == anchor2 + '\n',
          f'verify --json reports the same head as apply --json and the head file ({v.get("head")}, rc {rc})')
    rc, out, err = tool.run(root, 'verify', '--expect-head', anchor1)
    check(rc == 0 and 'expected head found' in out, f'verify --expect-head of an earlier record: found (rc {rc})')
    full, full_head = read(os.path.join(root, LOGFILE)), read(os.path.join(root, HEAD))
    lines = full.splitlines(keepends=True)
    seq1 = int(anchor1.split(':')[0])

    # 1. The log truncated at a record boundary (its chain stays valid): found by the head file.
    write(os.path.join(root, LOGFILE), b''.join(lines[:seq1]))
    rc, v, err = jrun(tool, root, 'verify', '--json')
    msgs = ' '.join(p['message'] for p in v.get('chain', {}).get('problems', []))
    check(rc == 2 and v['status'] == 'tampered' and v['head_file']['state'] == 'cut' and
          f'records {seq1 + 1} to {len(lines)} were cut off' in msgs,
          f'truncated log: verify exit 2, tampered, names the records cut off (rc {rc}: {msgs[:200]})')
    rc, out, err = tool.run(root, 'apply', '--profile', WS[1])
    check(rc == 1 and 'cut off' in err and read(os.path.join(root, LOGFILE)) == b''.join(lines[:seq1]),
          f'apply refuses to continue a cut log and writes nothing (rc {rc}: {err.strip()[-160:]})')
    # 2. The log deleted.
    os.unlink(os.path.join(root, LOGFILE))
    rc, out, err = tool.run(root, 'verify')
    check(rc == 2 and 'the log was deleted' in out and 'no changes recorded' not in out,
          f'deleted log: verify exit 2, says it was deleted (rc {rc}: {out.strip()[:200]})')
    # 3. Both files rewritten to an earlier end (the second apply's records cut, the head made to
    #    match): only the anchor kept off the machine tells.
    write(os.path.join(root, LOGFILE), b''.join(lines[:seq1]))
    write(os.path.join(root, HEAD), (anchor1 + '\n').encode())
    rc, out, err = tool.run(root, 'verify')
    check(rc == 0, f'log and head both cut back to the first apply: verify alone cannot tell (rc {rc})')
    rc, out, err = tool.run(root, 'verify', '--expect-head', anchor2)
    check(rc == 2 and 'cut off' in out and 'tampered' in out,
          f'verify --expect-head with the cut log: exit 2, says what was cut (rc {rc}: {out.strip()[:300]})')
    rc, v, err = jrun(tool, root, 'verify', '--json', '--expect-head', anchor2)
    check(rc == 2 and v['status'] == 'tampered' and v['expected_head']['found'] is False,
          f'verify --json --expect-head: status tampered, expected_head.found false (rc {rc})')
    bad = anchor2.split(':')[0] + ':' + '0' * 64
    write(os.path.join(root, LOGFILE), full)
    write(os.path.join(root, HEAD), full_head)
    rc, out, err = tool.run(root, 'verify', '--expect-head', bad)
    check(rc == 2 and 'not the expected' in out, f'--expect-head with another hash for the record: exit 2 (rc {rc})')
    rc, out, err = tool.run(root, 'verify', '--expect-head', 'nonsense')
    check(rc == 1 and 'SEQ:HASH' in err, f'--expect-head with a malformed anchor is a usage error (rc {rc})')
    # 4. rollback --json reports the head after its records.
    rc, rb, err = jrun(tool, root, 'rollback', '--all', '--json')
    rc2, v, err2 = jrun(tool, root, 'verify', '--json')
    check(rc == 0 and rb.get('head') and rb['head'] == v['head'] and rc2 == 0,
          f'rollback --json reports the head verify then finds (rc {rc}, {rb.get("head")})')

    # 5. A log written before the head file (no head, no run records, hashes by re-serialising):
    #    accepted, and the next apply creates the head and says so.
    old = copy_root(roots, WS[0], os.path.join(tmp, 'head-old'))
    rc, out, err = tool.run(old, 'apply', '--profile', WS[1], '--rule', 'gpu-affinity-map')
    recs = [json.loads(l) for l in read(os.path.join(old, LOGFILE)).splitlines()]
    recs = [r for r in recs if r['event'] not in ('run-begin', 'run-end')]
    prev, out_lines = '0' * 64, []
    renumber = {r['seq']: i for i, r in enumerate(recs, 1)}
    for i, r in enumerate(recs, 1):
        r = {k: v for k, v in r.items() if k != 'hash'}
        r['seq'], r['prev'] = i, prev
        if r['ref']:
            r['ref'] = renumber[r['ref']]
        r['hash'] = prev = hashlib.sha256(json.dumps(r, separators=(',', ':'), ensure_ascii=False).encode()).hexdigest()
        out_lines.append(json.dumps(r, separators=(',', ':'), ensure_ascii=False) + '\n')
    write(os.path.join(old, LOGFILE), ''.join(out_lines).encode())
    os.unlink(os.path.join(old, HEAD))
    rc, v, err = jrun(tool, old, 'verify', '--json')
    check(rc == 0 and v['status'] == 'clean' and v['head_file']['state'] == 'absent' and v['head_file']['note'],
          f'old log without a head file: verify clean, with a note (rc {rc}, {v.get("head_file")})')
    rc, out, err = tool.run(old, 'apply', '--profile', WS[1], '--rule', 'gpu-affinity-map')
    check(rc == 0 and 'created' in err and read(os.path.join(old, HEAD)).decode() == f'{len(recs)}:{prev}\n',
          f'the next apply creates the head file at the old log\'s end and says so (rc {rc}: {err.strip()[-200:]})')
    rc, v, err = jrun(tool, old, 'verify', '--json')
    check(rc == 0 and v['head_file']['state'] == 'ok', f'then verify checks the end (rc {rc})')


def first_point(tool, root, args, what, skip=0):
    """The number of the first crash point WHAT (after SKIP of them) of ARGS, found on a copy."""
    probe = root + '-points'
    shutil.rmtree(probe, ignore_errors=True)
    subprocess.run(['cp', '-a', root, probe], check=True)
    points = probe + '.txt'
    tool.run(probe, *args, env={'LLMTUNE_TEST_POINTS': points})
    shutil.rmtree(probe)
    found = [int(l.split(' ', 2)[0]) for l in open(points).read().splitlines() if l.split(' ', 2)[1] == what]
    os.unlink(points)
    return found[skip] if len(found) > skip else None


def runs(tool, roots, tmp, args):
    """A run killed between two changes is unfinished until the next run closes it."""
    orig = copy_root(roots, WS[0], os.path.join(tmp, 'runs-orig'))
    ref = copy_root(roots, WS[0], os.path.join(tmp, 'runs-ref'))
    apply = ['apply', '--profile', WS[1], '--rule', 'cpu-governor']
    rc, out, err = tool.run(ref, *apply)
    root = copy_root(roots, WS[0], os.path.join(tmp, 'runs'))
    n = first_point(tool, root, apply, 'outcome-logged')
    check(n is not None, f'apply has a crash point after its first outcome (point {n})')
    rc, out, err = tool.run(root, *apply, env={'LLMTUNE_TEST_KILL_AT': str(n)})
    check(rc == -signal.SIGKILL, f'apply killed after its first change\'s outcome (rc {rc})')
    recs = [json.loads(l) for l in read(os.path.join(root, LOGFILE)).splitlines()]
    check([r['event'] for r in recs] == ['run-begin', 'intent', 'done'],
          f'the log holds the run-begin and one whole change, no open step ({[r["event"] for r in recs]})')
    rc, v, err = jrun(tool, root, 'verify', '--json')
    unf = v.get('unfinished', [])
    check(rc == 2 and v['status'] == 'unfinished' and len(unf) == 1 and unf[0]['event'] == 'run-begin' and
          v['chain']['intact'], f'verify: exit 2, the run is unfinished (rc {rc}, {v.get("status")}, {unf})')
    rc, out, err = tool.run(root, 'log')
    check(rc == 0 and 'unfinished: no run-end' in out, f'log shows the run unfinished (rc {rc})')
    rc, lr, err = jrun(tool, root, 'log', '--runs', '--json')
    lr = lr.get('runs', []) if isinstance(lr, dict) else lr
    check(rc == 0 and len(lr) == 1 and lr[0]['finished'] is False, f'log --runs --json: finished false ({lr})')
    rc, out, err = tool.run(root, *apply)
    check(rc == 0 and 'recovered' in err and 'run-end' in err, f'the next apply closes the run ({err.strip()[-200:]})')
    rc, out, err = tool.run(root, 'verify')
    check(rc == 0, f'verify is clean after recovery (rc {rc}: {out.strip()[-200:]})')
    check(tree_diff(root, ref) == [], f'the tree equals an uninterrupted apply\'s ({tree_diff(root, ref)[:5]})')
    rc, lr, err = jrun(tool, root, 'log', '--runs', '--json')
    lr = lr.get('runs', []) if isinstance(lr, dict) else lr
    check(rc == 0 and lr and all(r['finished'] for r in lr), f'log --runs: every run finished ({lr})')

    # Rollback killed between two undos.
    rb = ['rollback', '--all']
    n = first_point(tool, root, rb, 'outcome-logged')
    check(n is not None, f'rollback has a crash point after its first outcome (point {n})')
    rc, out, err = tool.run(root, *rb, env={'LLMTUNE_TEST_KILL_AT': str(n)})
    check(rc == -signal.SIGKILL, f'rollback killed after its first undo (rc {rc})')
    rc, v, err = jrun(tool, root, 'verify', '--json')
    unf = v.get('unfinished', [])
    check(rc == 2 and v['status'] == 'unfinished' and len(unf) == 1 and unf[0]['event'] == 'run-begin',
          f'verify: the rollback is unfinished (rc {rc}, {unf})')
    rc, out, err = tool.run(root, *rb)
    check(rc == 0 and 'run-end' in err, f'the next rollback closes it and completes (rc {rc}: {err.strip()[-200:]})')
    rc, out, err = tool.run(root, 'verify')
    check(rc == 0, f'verify is clean (rc {rc})')
    check(tree_diff(root, orig) == [], f'the tree is the original again ({tree_diff(root, orig)[:5]})')

    # An apply killed after a change's intent, its target then made unreadable (a directory in its
    # place, EISDIR even for root): recovery says the target cannot be read, not that a command's
    # outcome is unknown (changelog.c recovered_outcome).
    root = copy_root(roots, WS[0], os.path.join(tmp, 'runs-unreadable'))
    n = first_point(tool, root, apply, 'intent-logged')
    rc, out, err = tool.run(root, *apply, env={'LLMTUNE_TEST_KILL_AT': str(n)})
    recs = [json.loads(l) for l in read(os.path.join(root, LOGFILE)).splitlines()]
    target = recs[-1].get('target', '') if recs and recs[-1]['event'] == 'intent' else ''
    check(rc == -signal.SIGKILL and target, f'apply killed after an intent (rc {rc}, target {target!r})')
    path = os.path.join(root, target.lstrip('/'))
    if target:
        if os.path.lexists(path):
            os.unlink(path)
        os.makedirs(path)
    rc, out, err = tool.run(root, *apply)
    check('the target cannot be read, so whether the change was made is unknown' in err and
          'whether the command ran is unknown' not in err,
          f'recovery says the target cannot be read ({err.strip()[-300:]})')


def bytes_(tool, roots, tmp, args):
    """logcheck.py checks a real log with hashlib and slicing; a CR or a space is an edit."""
    root = copy_root(roots, WS[0], os.path.join(tmp, 'bytes'))
    tool.run(root, 'apply', '--profile', WS[1])
    tool.run(root, 'rollback', '--last-run')
    checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'logcheck.py')
    logdir = os.path.join(root, LOG_DIR)

    def logcheck():
        p = subprocess.run([sys.executable, checker, logdir], capture_output=True, text=True)
        return p.returncode, p.stdout

    rc, out = logcheck()
    rc2, v, err = jrun(tool, root, 'verify', '--json')
    check(rc == 0 and out.strip().splitlines()[-1] == 'head ' + v['head']['anchor'] and rc2 == 0,
          f'logcheck.py passes a real log of an apply and a rollback and finds verify\'s head (rc {rc}: {out.strip()[-200:]})')
    full = read(os.path.join(root, LOGFILE))
    lines = full.splitlines(keepends=True)
    k = 3  # line 4: a record in the middle
    edits = {
        'CRLF': lines[k][:-1] + b'\r\n',
        'space after a colon': lines[k].replace(b'"event":', b'"event": ', 1),
        'space at the end': lines[k][:-1] + b' \n',
        'escaped slash': lines[k].replace(b'/', b'\\/', 1),
    }
    for what, line in edits.items():
        check(line != lines[k] and json.loads(line) == json.loads(lines[k]), f'{what}: the record means the same JSON')
        write(os.path.join(root, LOGFILE), b''.join(lines[:k] + [line] + lines[k + 1:]))
        rc, v, err = jrun(tool, root, 'verify', '--json')
        probs = v.get('chain', {}).get('problems', [])
        check(rc == 2 and v['status'] == 'tampered' and any(p['seq'] == k + 1 and 'edited' in p['message'] for p in probs),
              f'{what}: verify exit 2, record {k + 1} edited (rc {rc}: {probs[:1]})')
        rc, out = logcheck()
        check(rc == 1 and f'line {k + 1}:' in out, f'{what}: logcheck.py finds it too ({out.strip()[:120]})')
    write(os.path.join(root, LOGFILE), full)
    rc, out = logcheck()
    check(rc == 0, 'the log put back passes again')


FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602   # linux/fs.h (an int, on x86-64 and arm64 alike)
FLAG = {'A': 0x80, 'i': 0x10, 'a': 0x20}


def iflags(path, add=0, remove=0):
    """The chattr(1) flags of PATH, changed first when ADD or REMOVE is given (OSError if the
    filesystem or our capabilities do not allow it)."""
    import array
    import fcntl
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        buf = array.array('i', [0])
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, buf, True)
        if add or remove:
            buf[0] = (buf[0] | add) & ~remove
            fcntl.ioctl(fd, FS_IOC_SETFLAGS, buf, False)
            fcntl.ioctl(fd, FS_IOC_GETFLAGS, buf, True)
        return buf[0]
    finally:
        os.close(fd)


def chattr(tool, roots, tmp, args):
    """A file apply or rollback replaces keeps its chattr flags (A: no atime updates); an
    immutable (i) or append-only (a) target, or one in such a directory, is refused before
    anything is written, by apply and by rollback (even --force), naming the file and the flag."""
    root = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'chattr'))
    fstab = os.path.join(root, 'etc', 'fstab')
    apply = ('apply', '--profile', 'a100-8x', '--rule', 'swap-fstab')
    try:
        iflags(fstab, add=FLAG['A'])
    except OSError as e:
        print(f'SKIP  chattr: {tmp} is on a filesystem without chattr flags ({e.strerror}); nothing checked')
        return
    original = open(fstab, 'rb').read()
    rc, out, err = tool.run(root, *apply)
    check(rc == 0 and open(fstab, 'rb').read() != original, f'apply replaces /etc/fstab (rc {rc}: {err.strip()[:200]})')
    check(iflags(fstab) & FLAG['A'], f'the new /etc/fstab keeps A (flags {iflags(fstab):#x})')
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0 and open(fstab, 'rb').read() == original and iflags(fstab) & FLAG['A'],
          f'rollback restores it, A kept (rc {rc}, flags {iflags(fstab):#x})')
    iflags(fstab, remove=FLAG['A'])
    try:
        iflags(fstab, add=FLAG['i'])
        iflags(fstab, remove=FLAG['i'])
    except OSError as e:
        print(f'SKIP  chattr +i/+a: not allowed here ({e.strerror}: CAP_LINUX_IMMUTABLE); not checked')
        return
    log = os.path.join(root, LOG_DIR, 'changelog.jsonl')
    for letter, word in (('i', 'immutable'), ('a', 'append-only')):
        for where, path in (('the file', fstab), ('its directory', os.path.dirname(fstab))):
            logged = open(log, 'rb').read()
            before = tree(root)
            iflags(path, add=FLAG[letter])
            try:
                rc, out, err = tool.run(root, *apply)
            finally:
                iflags(path, remove=FLAG[letter])
            check(rc == 1 and '/etc/fstab' in err and f'{word} (chattr +{letter})' in err,
                  f'apply with {where} +{letter}: refused, naming the file and the flag (rc {rc}: {err.strip()[:300]})')
            check(tree(root) == before and open(log, 'rb').read() == logged,
                  f'apply with {where} +{letter}: nothing written, not even to the change log')
    rc, out, err = tool.run(root, *apply)
    check(rc == 0, f'apply once the flags are gone (rc {rc}: {err.strip()[:200]})')
    logged, before = open(log, 'rb').read(), tree(root)
    iflags(fstab, add=FLAG['i'])
    try:
        results = [tool.run(root, 'rollback', '--all', *extra) for extra in ((), ('--force',), ('--dry-run',))]
    finally:
        iflags(fstab, remove=FLAG['i'])
    for (rc, out, err), extra in zip(results, ('', ' --force', ' --dry-run')):
        check(rc == 1 and 'immutable (chattr +i)' in err and '/etc/fstab' in err,
              f'rollback --all{extra} with /etc/fstab +i: refused (rc {rc}: {err.strip()[:300]})')
    check(tree(root) == before and open(log, 'rb').read() == logged, 'the refused rollbacks wrote nothing')
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0 and open(fstab, 'rb').read() == original, f'rollback once the flag is gone (rc {rc}: {err.strip()[:200]})')


def whole_tree(top):
    """Every entry of TOP, the change log included: (kind, mode, content or target, mtime)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [''] + dirnames + filenames:
            p = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(p)
            data = None
            if stat.S_ISREG(st.st_mode):
                with open(p, 'rb') as f:
                    data = f.read()
            elif stat.S_ISLNK(st.st_mode):
                data = os.readlink(p)
            out[os.path.relpath(p, top)] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), data, st.st_mtime_ns)
    return out


def rollback(tool, roots, tmp, args):
    """rollback's scope is one of --last-run, --to SEQ, --all: an empty, non-numeric, signed or
    overflowing SEQ and two different scopes in either order are usage errors (exit 1) that touch
    nothing; a dry run writes nothing at all (no change log directory in a tree that never had
    one, no recovery records, no debris swept)."""
    fresh = copy_root(roots, 'ws-4090', os.path.join(tmp, 'fresh'))
    before = whole_tree(fresh)
    rc, out, err = tool.run(fresh, 'rollback', '--all', '--dry-run')
    check(rc == 0 and '0 would be rolled back' in out, f'rollback --all --dry-run on a tree never applied (rc {rc}: {err.strip()[:200]})')
    after = whole_tree(fresh)
    check(after == before, f'the dry run wrote nothing (new or changed: {sorted(k for k in after if after.get(k) != before.get(k))[:5]})')

    root = copy_root(roots, 'ws-4090', os.path.join(tmp, 'applied'))
    rc, out, err = tool.run(root, 'apply', '--profile', 'rtx4090-ws')
    check(rc == 0, f'apply (rc {rc}: {err.strip()[:200]})')
    log = os.path.join(root, LOG_DIR)
    # A temporary file a killed run left (write_head's), which a real rollback sweeps under the lock.
    debris = os.path.join(log, '.changelog.head.llmtune-999999')
    with open(debris, 'w') as f:
        f.write('0:' + '0' * 64 + '\n')
    before = whole_tree(root)
    for bad, what in ((['--to='], "not ''"), (['--to', ''], "not ''"), (['--to', '1x'], "not '1x'"),
                      (['--to', '-1'], "not '-1'"), (['--to', '+3'], "not '+3'"), (['--to', ' 3'], "not ' 3'"),
                      (['--to', '0x10'], "not '0x10'"),
                      (['--to', '9' * 20], 'out of range'), (['--to', str(2**63)], 'out of range'),
                      (['--to', '200', '--all'], '--to 200 and --all'), (['--all', '--to', '200'], '--all and --to 200'),
                      (['--all', '--last-run'], '--all and --last-run'), (['--to', '3', '--to', '4'], '--to 3 and --to 4'),
                      (['--last-run', '--to', '0', '--dry-run'], '--last-run and --to 0')):
        rc, out, err = tool.run(root, 'rollback', *bad)
        check(rc == 1 and what in err and whole_tree(root) == before,
              f'rollback {" ".join(repr(a) for a in bad)}: exit 1 ({rc}), says {what!r} ({err.strip()[:160]}), touches nothing')
    rc, out, err = tool.run(root, 'rollback', '--all', '--all', '--dry-run')
    check(rc == 0 and 'would restore' in out, f'the same scope twice is one scope (rc {rc}: {err.strip()[:200]})')
    rc, out, err = tool.run(root, 'rollback', '--to', '0', '--dry-run', '--json')
    n_to0 = json.loads(out)['changes'] if rc == 0 else None
    rc, out, err = tool.run(root, 'rollback', '--all', '--dry-run', '--json')
    n_all = json.loads(out)['changes'] if rc == 0 else None
    check(n_to0 and n_to0 == n_all, f'--to 0 selects what --all does ({len(n_to0 or [])}, {len(n_all or [])})')
    check(whole_tree(root) == before, 'the dry runs wrote nothing: the log, its head, the debris are as they were')

    # An interrupted step (an apply killed right after its first intent): the dry run says a real
    # run recovers it first, and still writes nothing; the real rollback recovers and sweeps.
    rc, out, err = tool.run(root, 'rollback', '--all')
    check(rc == 0 and not os.path.exists(debris), f'the real rollback sweeps the debris (rc {rc}: {err.strip()[:200]})')
    rc, out, err = tool.run(root, 'apply', '--profile', 'rtx4090-ws', env={'LLMTUNE_TEST_KILL_AT': '1'})
    if check(rc == -signal.SIGKILL, f'apply killed after its first intent (rc {rc})'):
        before = whole_tree(root)
        rc, out, err = tool.run(root, 'rollback', '--all', '--dry-run')
        check(rc == 0 and re.search(r'unfinished steps?: a real run first reads', err),
              f'the dry run names the open step (rc {rc}: {err.strip()[:300]})')
        check(whole_tree(root) == before, 'the dry run recovered nothing: the log is as the kill left it')
        rc, out, err = tool.run(root, 'rollback', '--all')
        check(rc == 0 and 'recovered' in err, f'the real rollback recovers it (rc {rc}: {err.strip()[:300]})')


# --- bootswap: a runtime state the boot sets up from a source (issue 30, the boot lab's zram) --------

def set_btime(root, btime):
    path = os.path.join(root, 'proc', 'stat')
    with open(path) as f:
        text = f.read()
    os.chmod(path, 0o644)
    with open(path, 'w') as f:
        f.write(re.sub(r'(?m)^btime \d+$', 'btime %d' % btime, text))


def bootswap(tool, roots, tmp, args):
    """dgx-a100's swap partition swapped off by apply; the rollback's swapon then fails with EINVAL
    (LLMTUNE_TEST_FAULT) as it does for a zram device the masked generator did not set up at boot."""
    area = '/dev/nvme4n1p3'
    for rebooted in (True, False):
        root = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'rebooted' if rebooted else 'same-boot'))
        rc, out, err = tool.run(root, 'apply', '--profile', 'a100-8x')
        check(rc == 0 and b'#llmtune-disabled#' in read(os.path.join(root, 'etc', 'fstab')),
              f'apply disables the fstab swap line (rc {rc}: {err.strip()[:200]})')
        if rebooted:  # the machine booted after the apply: its boot time is later than every record
            set_btime(root, int(time.time()) + 3600)
        rc, out, err = tool.run(root, 'rollback', '--all', '--json', env={'LLMTUNE_TEST_FAULT': area + ':EINVAL'})
        doc = json.loads(out) if out.strip() else {}
        swap = [c for c in doc.get('changes', []) if c['type'] == 'swap']
        fstab = read(os.path.join(root, 'etc', 'fstab'))
        if rebooted:
            check(rc == 0 and doc.get('error') is None, f'after a reboot the rollback finishes (rc {rc}: {err.strip()[:300]})')
            check([c['status'] for c in swap] == ['next-boot'], f'the swap area is reported back at the next boot: {swap}')
            check(area in err and 'next boot' in err, f'a note names the area and the next boot: {err.strip()[:300]}')
            check(b'#llmtune-disabled#' not in fstab, 'the rest of the rollback ran: the fstab swap line is back')
            rc, out, err = tool.run(root, 'log', '--json')
            doc = json.loads(out) if rc == 0 and out.strip() else []
            recs = doc if isinstance(doc, list) else next((v for v in doc.values() if isinstance(v, list)), [])
            undone = [r for r in recs if r.get('event') == 'undone' and r.get('target') == area]
            check(undone and 'not set up in this boot' in (undone[-1].get('detail') or ''),
                  f'the change log records the undo with its reason: {undone[-1:]}')
            rc, out, err = tool.run(root, 'verify')
            check(rc == 0, f'verify is clean after the rollback (rc {rc}: {(out + err).strip()[:300]})')
        else:
            check(rc != 0 and doc.get('error') and area in doc['error'],
                  f'in the boot it was made in, the failed swapon stops the rollback (rc {rc}: {doc.get("error")})')
            check([c['status'] for c in swap] == ['failed'], f'the swap area is reported failed: {swap}')


# --- found: what verify says it found is what the target holds (the boot lab's truth.py) -----------

def found(tool, roots, tmp, args):
    found_link(tool, roots, tmp)
    found_mount(tool, roots, tmp)


def found_mount(tool, roots, tmp):
    """A remount leaves ext4's stripe= as it is and the kernel shows it: verify's found is the options
    /proc/mounts has, stripe= and all, and the change (noatime) is judged by the options it touched."""
    root = copy_root(roots, 'dgx-a100', os.path.join(tmp, 'mount'))
    rc, out, err = tool.run(root, 'apply', '--profile', 'a100-8x')
    check(rc == 0, f'apply (rc {rc}: {err.strip()[:200]})')
    opts = next(l.split()[3] for l in read(os.path.join(root, 'proc', 'mounts'), 'r').splitlines()
                if l.split()[1] == '/raid')
    rc, doc, err = jrun(tool, root, 'verify', '--json')
    mine = [c for c in doc.get('changes', []) if c.get('type') == 'mountopt' and c.get('target') == '/raid']
    check(rc == 0 and 'stripe=64' in opts and mine and all(c['status'] == 'ok' and
          set(c['found'].split(',')) == set(opts.split(',')) for c in mine),
          f'verify found /raid with {opts}: {[(c.get("status"), c.get("found")) for c in mine]} (rc {rc})')


def found_link(tool, roots, tmp):
    """Debian ships /etc/systemd/zram-generator.conf as a file; masking the generator removes it (one
    change) and links the name to /dev/null (the next). Killed after the link is made but before its
    outcome is logged, verify must say what is there, a link (found by the boot lab, kill at point 9)."""
    root = copy_root(roots, 'vm-nogpu', os.path.join(tmp, 'filelink'))
    write(os.path.join(root, 'proc', 'swaps'), b'Filename\tType\tSize\tUsed\tPriority\n'
          b'/dev/zram0                              partition\t748540\t0\t100\n')
    conf = os.path.join(root, 'etc', 'systemd', 'zram-generator.conf')
    os.makedirs(os.path.dirname(conf), exist_ok=True)
    write(conf, b'[zram0]\nzram-size = min(ram / 2, 4096)\n')
    apply = ('apply', '--profile', 'base')
    n = first_point(tool, root, apply, 'changed', skip=1)
    check(n is not None, 'apply removes the file and then links its name: two changes')
    rc, out, err = tool.run(root, *apply, env={'LLMTUNE_TEST_KILL_AT': str(n)})
    check(rc == -signal.SIGKILL or rc == 137, f'apply killed at point {n} (rc {rc})')
    check(os.readlink(conf) == '/dev/null', 'the link was made before the kill')
    rc, doc, err = jrun(tool, root, 'verify', '--json')
    mine = [c for c in doc.get('changes', []) if c.get('target') == '/etc/systemd/zram-generator.conf']
    check(rc == 2 and doc.get('unfinished'), f'verify exits 2 and names the unfinished step (rc {rc})')
    check(mine and all(c.get('found') == 'link:/dev/null' for c in mine),
          f'verify found the link that is there, not a file: {[c.get("found") for c in mine]}')
    check(mine and all('symbolic link to /dev/null' in c.get('message', '') and 'did not finish' in c.get('message', '')
                       for c in mine if c.get('status') == 'drift'),
          f'the drift names the link and the unfinished change on the same target: {[c.get("message") for c in mine]}')
    rc, out, err = tool.run(root, *apply)
    rc2, out2, err2 = tool.run(root, 'verify')
    check(rc == 0 and rc2 == 0, f'a rerun completes it and verify is clean (rc {rc}, then {rc2}: {(out2 + err2).strip()[:300]})')


# --- acks: an acknowledgement is whole or absent, never lost (issue 33) ------------------------------

def acks(tool, roots, tmp, args):
    """SIGKILL `llmtune ack` at random moments; after each kill the log and the audit must agree."""
    _kill_loop('LLMTUNE_ACK_KILLS', 100, _acks, tool, roots, tmp)


def _ack_records(root):
    """The ack and unack records of the log (each line must be a whole JSON record), and whether
    the last line is torn (half a record from a kill, which the next writer removes)."""
    path = os.path.join(root, LOG_DIR, 'changelog.jsonl')
    data = read(path) if os.path.exists(path) else b''
    lines = data.split(b'\n')
    torn = lines[-1] != b''
    recs = [json.loads(l) for l in lines[:-1]]
    return [r for r in recs if r['event'] in ('ack', 'unack')], torn


def _acks(tool, roots, tmp, runs, rnd):
    root = copy_root(roots, 'vm-nogpu', os.path.join(tmp, 'work'))
    dmesg = os.path.join(root, 'var', 'log', 'dmesg')
    os.makedirs(os.path.dirname(dmesg), exist_ok=True)
    write(os.path.join(root, 'proc', 'uptime'), b'100000.0 1.0\n')
    xid = '[ %d.0] NVRM: Xid (PCI:0000:c6:00): 79, pid=1, name=python, GPU has fallen off the bus.\n'
    write(dmesg, (xid % 90000).encode())
    audit = ['audit', '--json', '--profile', 'base', '--rule', 'gpu-xid-critical']
    t = time.monotonic()
    rc, out, err = tool.run(root, 'ack', 'gpu-xid-critical', '--reason', 'cycle 0', '--profile', 'base')
    window = time.monotonic() - t
    check(rc == 0, f'an uninterrupted ack ({err.strip()[:200]})')
    bad, killed, whole, absent = [], 0, 0, 0
    standing = True  # an ack stands (withdrawn by an unack record, made again by an ack record)
    for k in range(1, runs + 1):
        with open(dmesg, 'a') as f:  # a new Xid: the standing acks no longer cover the finding
            f.write(xid % (90000 + k))
        unack = k % 10 == 0
        argv = ['unack', 'gpu-xid-critical'] if unack else ['ack', 'gpu-xid-critical', '--reason', f'cycle {k}',
                                                            '--profile', 'base']
        before, _ = _ack_records(root)
        delay = rnd.uniform(0.3, 1.1) * window
        p = tool.popen(root, *argv)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.communicate()
        was_killed = p.returncode == -signal.SIGKILL
        killed += was_killed
        window *= 1.1 if was_killed else 0.9
        try:
            after, torn = _ack_records(root)
        except (ValueError, KeyError) as e:
            bad.append(f'cycle {k}: a line of the log is not a record: {e}')
            break
        new = after[len(before):]
        if not was_killed and p.returncode == 0 and not new:
            bad.append(f'cycle {k}: {argv[0]} said it was made, the log has no record of it (lost)')
        rc, out, err = tool.run(root, 'verify', '--json')
        try:
            intact = rc == 0 and json.loads(out)['chain']['intact']
        except (ValueError, KeyError):
            intact = False
        if not intact:
            bad.append(f'cycle {k}: verify rc {rc} after the kill: {(out + err).strip()[-200:]}')
        rc, out, err = tool.run(root, *audit)
        res = json.loads(out)['results'][0] if rc in (0, 2) else {}
        acked = res.get('status') == 'acked'
        made = any(r['event'] == 'ack' and r['detail'] == f'cycle {k}' for r in new)
        standing = made or (standing and not any(r['event'] == 'unack' for r in new))
        whole += bool(new)
        absent += not new
        if unack and res.get('status') != 'fail':
            bad.append(f'cycle {k}: after an unack the audit says {res.get("status")}')
        elif not unack and made != acked:
            bad.append(f'cycle {k}: the log {"has" if made else "lacks"} the ack, the audit says {res.get("status")}')
        elif not unack and acked and f'cycle {k}' not in res['ack']['note']:
            bad.append(f'cycle {k}: acked by another record: {res["ack"]["note"]}')
        elif not acked and standing and 'raised again' not in ((res.get('ack') or {}).get('note') or ''):
            bad.append(f'cycle {k}: the new Xid did not raise the finding again: {res.get("ack")}')
        if len(bad) > 10:
            break
    for b in bad[:10]:
        print('      ' + b)
    check(not bad, f'{runs} kills of ack and unack ({killed} killed before they finished): every log read back '
          f'whole, no ack lost, the audit agreeing with the log each time ({len(bad)} problems)')
    check(whole and absent, f'kills fell before and after the record was written ({whole} written, {absent} not)')
    figures['ack kills'] = runs
    figures['killed before finishing'] = killed
    figures['records written / not'] = f'{whole} / {absent}'


PARTS = {'acks': acks, 'found': found, 'bootswap': bootswap, 'rollback': rollback, 'chattr': chattr, 'head': head, 'runs': runs, 'bytes': bytes_, 'longlog': longlog, 'logbound': logbound, 'metadata': metadata, 'rootshape': rootshape, 'output': output, 'renames': renames, 'lostupdate': lostupdate, 'backups': backups, 'lock': lock, 'debris': debris, 'kills': kills}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--llmtune-test', help='llmtune-test, for the runs with a crash point (default: --llmtune)')
    ap.add_argument('--roots', required=True)
    ap.add_argument('--part', required=True, choices=sorted(PARTS))
    # LLMTUNE_STORM_AUDITS: the ASan pass of tests/run-all.sh asks for fewer (each audit is slower there).
    ap.add_argument('--audits', type=int, default=int(os.environ.get('LLMTUNE_STORM_AUDITS', '50')),
                    help='audits per fixture during the rename storm (default $LLMTUNE_STORM_AUDITS or 50)')
    ap.add_argument('--applies', type=int, default=5, help='applies during the rename storm')
    ap.add_argument('--records', type=int, default=4000, help='records of the generated log (part longlog)')
    args = ap.parse_args()
    tool = Tool(os.path.abspath(args.llmtune), args.llmtune_test and os.path.abspath(args.llmtune_test))
    roots = os.path.abspath(args.roots)
    with tempfile.TemporaryDirectory(prefix='llmtune-reliability-') as tmp:
        PARTS[args.part](tool, roots, tmp, args)
    for k, v in figures.items():
        print(f'figure: {k}: {v}')
    return finish()


if __name__ == '__main__':
    sys.exit(main())
