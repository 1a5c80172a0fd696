#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Confinement and trust (docs/RELIABILITY.md, "Threat model"): attacks from inside a foreign tree
and from its change log, each on a fresh copy of a fixture root through --root. Nothing a tree or
its log holds may run a program on this machine, write outside the tree or outside the area of its
change kind, or hang llmtune.

    confine.py --llmtune BIN --roots DIR [--only NAME,...]
"""
import argparse
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)

ROOT = 'dgx-a100'
PROFILE = 'a100-8x'
LOG_DIR = os.path.join('var', 'lib', 'llmtune')
LOG = os.path.join(LOG_DIR, 'changelog.jsonl')
HANG = 20  # seconds: a command that takes longer than this on a fixture is hanging


class Tool:
    def __init__(self, bin_, roots, tmp):
        self.bin = os.path.abspath(bin_)  # trust-bypass runs it from another directory
        self.roots = os.path.abspath(roots)
        self.tmp = tmp
        self.n = 0

    def fresh(self, name=ROOT):
        self.n += 1
        r = os.path.join(self.tmp, f'r{self.n}')
        shutil.copytree(os.path.join(self.roots, name), r, symlinks=True)
        return r

    def run(self, root, *args, env=None, timeout=HANG):
        e = dict(os.environ, NO_COLOR='1', LC_ALL='C')
        e.update(env or {})
        try:
            p = subprocess.run([self.bin, '--root', root, *args], capture_output=True, text=True, env=e,
                               timeout=timeout, stdin=subprocess.DEVNULL)
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            return 'hang', '', f'no answer within {timeout} s'


def sha(data):
    return hashlib.sha256(data).hexdigest()


def read_log(root):
    with open(os.path.join(root, LOG)) as f:
        return [json.loads(line) for line in f.read().splitlines()]


def record_hash(rec):
    """The chain hash of a record, as docs/RELIABILITY.md says a script computes it."""
    body = {k: v for k, v in rec.items() if k != 'hash'}
    return sha(json.dumps(body, separators=(',', ':'), ensure_ascii=False).encode())


def forge(root, recs):
    """Append RECS (dicts in the log's key order) with seq, prev and hash recomputed: what anyone
    who can write the log can do to an unkeyed hash chain."""
    log = read_log(root)
    seq, prev = log[-1]['seq'], log[-1]['hash']
    with open(os.path.join(root, LOG), 'a') as f:
        for r in recs:
            seq += 1
            r = dict(r)
            r['seq'] = seq
            r['prev'] = prev
            r.pop('hash', None)
            r['hash'] = prev = record_hash(r)
            f.write(json.dumps(r, separators=(',', ':'), ensure_ascii=False) + '\n')
    # Whoever can write the log can write its head file too (only an anchor kept off the machine,
    # verify --expect-head, tells a rewritten end).
    with open(os.path.join(root, LOG_DIR, 'changelog.head'), 'w') as f:
        f.write(f'{seq}:{prev}\n')
    return seq


def pair(template, run, **fields):
    """An intent and its done record made from TEMPLATE with FIELDS changed."""
    intent = dict(template, run=run, event='intent', ref=None, detail=None, **fields)
    done = dict(intent, event='done')
    return intent, done


# --- 1. rollback never runs argv from the log; file targets only where a remedy writes ---------------

def forged_log(t):
    root = t.fresh()
    rc, out, err = t.run(root, 'apply', '--profile', PROFILE, '--rule', 'raid-ext4-stride', 'numa-balancing')
    check(rc == 0, f'apply of a command and a file change ({err.strip()[-200:]})')
    log = read_log(root)
    cmd = next(r for r in log if r['type'] == 'command' and r['event'] == 'done')
    marker = os.path.join(t.tmp, 'pwned-by-rollback')
    dev = cmd['argv'][-1]
    intent, done = pair(cmd, 'forged-1', undo=['sh', '-c', f'id > {marker}', dev])
    seq = forge(root, [intent, done])
    done_seq = seq
    rc, out, err = t.run(root, 'verify')
    check(rc == 2 and f'record {done_seq - 1}' in out + err and 'fails validation' in out + err,
          f'forged command undo: verify reports the record, chain "intact" or not (rc {rc}: {(out + err).strip()[:200]})')
    rc, out, err = t.run(root, 'rollback', '--all')
    check(rc == 1 and not os.path.exists(marker), f'forged command undo: rollback refuses (rc {rc}: {err.strip()[-200:]})')
    rc, out, err = t.run(root, 'rollback', '--all', '--force')
    check(rc == 1 and not os.path.exists(marker) and f'stops at seq {done_seq}' in err,
          f'forged command undo: rollback --force stops at seq {done_seq}, runs nothing (rc {rc}: {err.strip()[-200:]})')

    # A file record aimed at /etc/shadow with a planted backup: the target is no remedy's.
    root = t.fresh()
    rc, out, err = t.run(root, 'apply', '--profile', PROFILE, '--rule', 'numa-balancing')
    shadow = os.path.join(root, 'etc', 'shadow')
    with open(shadow, 'w') as f:
        f.write('root:*:19000:0:99999:7:::\n')
    good = open(shadow, 'rb').read()
    evil = b'root::0:0:99999:7:::\n'
    with open(os.path.join(root, LOG_DIR, 'backups', sha(evil)), 'wb') as f:
        f.write(evil)
    with open(os.path.join(root, LOG_DIR, 'backups', sha(good)), 'wb') as f:
        f.write(good)
    tpl = next(r for r in read_log(root) if r['type'] == 'file' and r['event'] == 'done')
    intent, done = pair(tpl, 'forged-2', target='/etc/shadow', before_sha256=sha(evil), after_sha256=sha(good),
                        backup_before='backups/' + sha(evil), backup_after='backups/' + sha(good), mkdirs=[])
    seq = forge(root, [intent, done])
    rc, out, err = t.run(root, 'rollback', '--all', '--force')
    check(rc == 1 and open(shadow, 'rb').read() == good and f'stops at seq {seq}' in err,
          f'forged /etc/shadow record: rollback --force leaves the tree\'s shadow alone (rc {rc}: {err.strip()[-200:]})')


# --- 4. commands on images: the image is opened through the root handle -----------------------------

def images(t):
    def attempt(tag, plant):
        root = t.fresh()
        out_dir = os.path.join(t.tmp, f'outside-{t.n}')
        os.makedirs(out_dir)
        outside = os.path.join(out_dir, 'md0')
        shutil.copyfile(os.path.join(root, 'dev', 'md0'), outside)
        before = open(outside, 'rb').read()
        plant(root, out_dir)
        rc, out, err = t.run(root, 'apply', '--profile', PROFILE, '--rule', 'raid-ext4-stride')
        check(rc in (0, 1) and open(outside, 'rb').read() == before,
              f'{tag}: apply leaves the image outside the tree unchanged (rc {rc}: {(out + err).strip()[-160:]})')
        rc, out, err = t.run(root, 'rollback', '--all')
        check(open(outside, 'rb').read() == before, f'{tag}: rollback leaves it unchanged too (rc {rc})')

    def hard_link(root, out_dir):
        os.unlink(os.path.join(root, 'dev', 'md0'))
        os.link(os.path.join(out_dir, 'md0'), os.path.join(root, 'dev', 'md0'))

    def proc_self_root(root, out_dir):
        # A decoy under the tree's proc/self/root passes every check made through the root handle;
        # the host kernel resolving ROOT/dev/md0 follows its own /proc/self/root to OUT_DIR/md0.
        decoy = os.path.join(root, 'proc', 'self', 'root', out_dir.lstrip('/'))
        os.makedirs(decoy)
        shutil.copyfile(os.path.join(out_dir, 'md0'), os.path.join(decoy, 'md0'))
        shutil.rmtree(os.path.join(root, 'dev'))
        os.symlink('/proc/self/root' + out_dir, os.path.join(root, 'dev'))

    attempt('dev/md0 hard-linked to a file outside the tree', hard_link)
    attempt('dev -> /proc/self/root/OUTSIDE', proc_self_root)


# --- 5. runtime values stay under /sys and /proc/sys -------------------------------------------------

def values(t):
    root = t.fresh()
    pol = os.path.join(root, 'sys', 'devices', 'system', 'cpu', 'cpufreq', 'policy0')
    cron = os.path.join(root, 'etc', 'cron.d')
    os.makedirs(cron, exist_ok=True)
    shutil.copytree(pol, os.path.join(cron), dirs_exist_ok=True)
    shutil.rmtree(pol)
    os.symlink('/etc/cron.d', pol)
    planted = {n: open(os.path.join(cron, n), 'rb').read() for n in os.listdir(cron)}
    rc, out, err = t.run(root, 'apply', '--profile', PROFILE, '--rule', 'cpu-governor')
    now = {n: open(os.path.join(cron, n), 'rb').read() for n in os.listdir(cron)}
    check(now == planted and rc == 1 and 'leads out of /sys' in err,
          f'policy0 -> /etc/cron.d: no value written into etc/cron.d (rc {rc}: {err.strip()[-200:]})')


# --- 7. profile values are data, never syntax ---------------------------------------------------------

def profile_values(t):
    def site_profile(root, value):
        d = os.path.join(root, 'etc', 'llmtune', 'profiles.d')
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, 'evil.ini'), 'wb') as f:
            f.write(b'[profile]\nname = evil\ninherits = ' + PROFILE.encode() + b'\n\n[params]\ncpu_governor = ' +
                    value + b'\n')
        os.chmod(os.path.join(d, 'evil.ini'), 0o644)

    def tmpfiles(root):
        d = os.path.join(root, 'etc', 'tmpfiles.d')
        return {n: open(os.path.join(d, n), 'rb').read() for n in os.listdir(d)} if os.path.isdir(d) else {}

    root = t.fresh()
    site_profile(root, b'performance\rf /etc/cron.d/evil 0644 root root - * * * * * root id')
    before = tmpfiles(root)
    rc, out, err = t.run(root, 'apply', '--profile', 'evil', '--rule', 'cpu-governor')
    check(rc == 1 and tmpfiles(root) == before and 'evil.ini:6' in err and 'control character' in err,
          f'a CR in a profile parameter is refused with file:line (rc {rc}: {err.strip()[-200:]})')
    # The parameter's declared type (an enum of governors) refuses the value at its line; a literal
    # in a site rule, which no type guards, is refused by the planner, naming the rule's line.
    site_profile(root, b'performance%h')
    before = tmpfiles(root)
    rc, out, err = t.run(root, 'apply', '--profile', 'evil', '--rule', 'cpu-governor')
    check(rc == 1 and tmpfiles(root) == before and "evil.ini:6: parameter 'cpu_governor' must be one of" in err,
          f'a tmpfiles.d specifier in a profile value is refused by its type, naming the profile line (rc {rc}: '
          f'{(out + err).strip()[-200:]})')
    rules_d = os.path.join(root, 'etc', 'llmtune', 'rules.d')
    os.makedirs(rules_d, exist_ok=True)
    with open(os.path.join(rules_d, 'evil.ini'), 'w') as f:
        f.write('[evil-governor]\ntitle = t\narea = cpu\nseverity = warning\nrationale = r\nsource = s\n'
                'check = all cpu.policy.*.governor == evil\nremedy = sysfs\n'
                'remedy.path = /sys/devices/system/cpu/cpufreq/policy*/scaling_governor\nremedy.value = performance%h\n')
    os.chmod(os.path.join(rules_d, 'evil.ini'), 0o644)
    rc, out, err = t.run(root, 'apply', '--profile', PROFILE, '--rule', 'evil-governor')
    check(tmpfiles(root) == before and 'refused' in out + err and 'evil.ini:1' in out + err,
          f'a tmpfiles.d specifier in a site rule\'s sysfs value is refused, naming the rule line (rc {rc}: '
          f'{(out + err).strip()[-200:]})')


# --- 6. no hang on special files --------------------------------------------------------------------

def special_files(t):
    """One tree: each special file is planted, tried and taken away again (copies are slow)."""
    root = t.fresh()

    def fifo(rel):
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        saved = open(p, 'rb').read() if os.path.isfile(p) else None
        if os.path.lexists(p):
            os.unlink(p)
        os.mkfifo(p, 0o600)
        return p, saved

    def restore(p, saved):
        os.unlink(p)
        if saved is not None:
            with open(p, 'wb') as f:
                f.write(saved)

    def answers(tag, args, want_rc, say=None):
        # hwloc, in its sandbox, waits out the deadline on a FIFO it opens: a short one
        rc, out, err = t.run(root, '--read-timeout', '1', *args)
        check(rc != 'hang' and rc in want_rc and (say is None or say in out + err),
              f'{tag}: {" ".join(args[:1])} answers (rc {rc}, want {sorted(want_rc)}): {(out + err).strip()[-160:]}')

    p, saved = fifo(LOG)
    for args in (['apply', '--profile', PROFILE, '--rule', 'numa-balancing'], ['verify'], ['rollback', '--all'],
                 ['log']):
        answers('a FIFO at the change log', args, (1,), 'not a regular file')
    restore(p, saved)
    # The lock is the log's directory itself (flock(2) on it); a FIFO where older versions kept a
    # lock file is opened by nothing, so every command answers (no hang) as if it were not there.
    p, saved = fifo(os.path.join(LOG_DIR, 'lock'))
    for args in (['verify'], ['apply', '--profile', PROFILE, '--rule', 'numa-balancing'], ['rollback', '--all']):
        answers('a FIFO where a lock file used to be', args, (0,))
    restore(p, saved)
    for rel in ('proc/mounts', 'proc/cpuinfo', 'sys/devices/system/node/node0/meminfo'):
        p, saved = fifo(rel)
        answers(f'a FIFO at {rel}', ['facts', '--json'], (0,))
        answers(f'a FIFO at {rel}', ['audit', '--profile', PROFILE], (0, 2))
        answers(f'a FIFO at {rel}', ['plan', '--profile', PROFILE], (0,))
        restore(p, saved)
    p = os.path.join(root, 'proc', 'mounts')
    saved = open(p, 'rb').read()
    try:
        os.unlink(p)
        os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero
    except OSError as e:
        print(f'skip  a character device at proc/mounts: cannot make one here ({e})')
        return
    answers('/dev/zero at proc/mounts', ['facts', '--json'], (0,))
    answers('/dev/zero at proc/mounts', ['apply', '--profile', PROFILE, '--rule', 'numa-balancing'], (0, 1))
    restore(p, saved)


# --- 2. the log and backups get the trust checks profiles get ---------------------------------------

def log_trust(t):
    root = t.fresh()
    rc, out, err = t.run(root, 'apply', '--profile', PROFILE, '--rule', 'numa-balancing')
    check(rc == 0, f'apply ({err.strip()[-160:]})')
    log = os.path.join(root, LOG)
    good = open(log, 'rb').read()
    outside = os.path.join(t.tmp, 'outside-log')
    shutil.copyfile(log, outside)
    os.unlink(log)
    os.link(outside, log)
    rc, out, err = t.run(root, 'apply', '--profile', PROFILE, '--rule', 'thp-enabled')
    check(rc == 1 and open(outside, 'rb').read() == good and 'hard links' in err,
          f'a hard-linked change log: apply appends nothing to the file outside (rc {rc}: {err.strip()[-160:]})')
    rc, out, err = t.run(root, 'rollback', '--all')
    check(rc == 1 and 'hard links' in err, f'a hard-linked change log: rollback refuses (rc {rc}: {err.strip()[-160:]})')
    os.unlink(log)
    with open(log, 'wb') as f:
        f.write(good)

    for mode, tag in ((0o666, 'world-writable'), (0o664, 'group-writable')):
        os.chmod(log, mode)
        for args in (['verify'], ['rollback', '--all'], ['apply', '--profile', PROFILE]):
            rc, out, err = t.run(root, *args)
            check(rc == 1 and 'writable' in err, f'a {tag} change log: {args[0]} refuses (rc {rc}: {err.strip()[-160:]})')
    os.chmod(log, 0o644)
    os.chown(log, 4242, 4242)
    rc, out, err = t.run(root, 'rollback', '--all')
    check(rc == 1 and 'uid 4242' in err, f'a change log owned by another user: rollback refuses (rc {rc}: {err.strip()[-160:]})')
    os.chown(log, 0, 0)
    os.chmod(os.path.join(root, LOG_DIR), 0o777)
    rc, out, err = t.run(root, 'rollback', '--all')
    check(rc == 1 and 'writable' in err, f'a world-writable log directory: rollback refuses (rc {rc}: {err.strip()[-160:]})')
    os.chmod(os.path.join(root, LOG_DIR), 0o755)
    # A backup writable by others is not trusted: its record is reported and rollback refuses.
    bdir = os.path.join(root, LOG_DIR, 'backups')
    name = sorted(os.listdir(bdir))[0]
    os.chmod(os.path.join(bdir, name), 0o666)
    rc, out, err = t.run(root, 'verify')
    check(rc == 2 and 'writable' in out + err, f'a world-writable backup: verify reports it (rc {rc}: {(out + err).strip()[-160:]})')
    rc, out, err = t.run(root, 'rollback', '--all')
    check(rc == 1, f'a world-writable backup: rollback refuses (rc {rc}: {err.strip()[-160:]})')
    os.chmod(os.path.join(bdir, name), 0o644)
    rc, out, err = t.run(root, 'rollback', '--all')
    check(rc == 0, f'all put back: rollback works again (rc {rc}: {err.strip()[-160:]})')


# --- 8. no silent trust bypass --------------------------------------------------------------------

def trust_bypass(t):
    """A 0666 profile whose full path is over PATH_MAX, given relative to a deep working directory."""
    root = t.fresh('vm-nogpu')
    saved = os.getcwd()
    top = os.path.join(t.tmp, 'deep')
    os.mkdir(top)
    os.chdir(top)
    try:
        for _ in range(24):
            os.mkdir('d' * 200)
            os.chdir('d' * 200)
        with open('evil.ini', 'w') as f:
            f.write(f'[profile]\nname = evil\ninherits = {PROFILE}\n')
        os.chmod('evil.ini', 0o666)
        rc, out, err = t.run(root, 'audit', '--profile', './evil.ini')
    finally:
        os.chdir(saved)
    check(rc == 1 and 'cannot be checked' in err,
          f'a 0666 profile whose path is over PATH_MAX is refused (rc {rc}: {err.strip()[-200:]})')
    shutil.rmtree(top)


CASES = {'forged-log': forged_log, 'images': images, 'values': values, 'profile-values': profile_values, 'special-files': special_files,
         'log-trust': log_trust, 'trust-bypass': trust_bypass}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--only', default='')
    a = ap.parse_args()
    only = [x for x in a.only.split(',') if x]
    with tempfile.TemporaryDirectory(prefix='llmtune-confine-') as tmp:
        t = Tool(a.llmtune, a.roots, tmp)
        for name, fn in CASES.items():
            if only and name not in only:
                continue
            print(f'== {name}', flush=True)
            fn(t)
    return finish()


if __name__ == '__main__':
    sys.exit(main())
