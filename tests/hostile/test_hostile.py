#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Bad and hostile input, on copies of a fixture root (docs/RELIABILITY.md): a gigabyte-long sysfs
value and kernel tables, NUL bytes, binary garbage, unterminated and overlong lines in every file
llmtune parses from a machine, profile inheritance 1,000 levels deep, profiles and rule files with
10,000 entries, a gigabyte change log. Each command must end with its documented exit status (never
a signal), a clear message where it refuses, and within bounds of time and memory (measured per
process with wait4; printed as figures). As root, the trust checks on rule and profile files.

    test_hostile.py --llmtune BIN --roots DIR
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)

ROOT = 'vm-nogpu'
MAX_SECONDS = float(os.environ.get('LLMTUNE_HOSTILE_MAX_SECONDS', '60'))
MAX_RSS_MB = float(os.environ.get('LLMTUNE_HOSTILE_MAX_RSS_MB', '1024'))
GIB = 1 << 30

worst = {'seconds': 0.0, 'rss_mb': 0.0, 'runs': 0}


def measure(cmd, env=None):
    """Run CMD; returns (rc, stdout, stderr, seconds, max RSS in MiB) of that process alone."""
    e = dict(os.environ, NO_COLOR='1', LC_ALL='C')
    e.update(env or {})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=e)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        secs = time.monotonic() - t
        out.seek(0)
        err.seek(0)
        o = out.read(64 << 20).decode(errors='replace')
        r = err.read(1 << 20).decode(errors='replace')
    rss = ru.ru_maxrss / 1024.0
    worst['seconds'] = max(worst['seconds'], secs)
    worst['rss_mb'] = max(worst['rss_mb'], rss)
    worst['runs'] += 1
    return p.returncode, o, r, secs, rss


class Case:
    def __init__(self, bin_, roots, tmp):
        self.bin = bin_
        self.roots = roots
        self.tmp = tmp
        self.n = 0

    def root(self):
        self.n += 1
        r = os.path.join(self.tmp, f'r{self.n}')
        shutil.copytree(os.path.join(self.roots, ROOT), r, symlinks=True)
        return r

    def run(self, tag, root, args, ok_rc, env=None, say=None, json_out=False):
        rc, out, err, secs, rss = measure([self.bin, '--root', root, *args], env)
        good = rc in ok_rc
        if json_out and good and rc != 1:
            try:
                json.loads(out)
            except ValueError:
                good = False
        sanitizer = 'AddressSanitizer' in err or 'runtime error:' in err or 'LeakSanitizer' in err
        check(good and not sanitizer and (say is None or say in out + err),
              f'{tag}: {" ".join(args[:2])} exits {rc} (want {sorted(ok_rc)}){" saying " + repr(say) if say else ""}'
              f' [{secs:.2f} s, {rss:.0f} MiB] {(err.strip().splitlines() or [""])[-1][:160]}')
        check(secs < MAX_SECONDS and rss < MAX_RSS_MB, f'{tag}: bounded ({secs:.2f} s < {MAX_SECONDS}, '
              f'{rss:.0f} MiB < {MAX_RSS_MB})')
        return rc, out, err


def put(root, rel, data, mode=0o644):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if os.path.lexists(p):
        os.unlink(p)
    with open(p, 'wb') as f:
        f.write(data)
    os.chmod(p, mode)


def sparse(root, rel, size=GIB):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if os.path.lexists(p):
        os.unlink(p)
    with open(p, 'wb') as f:
        f.truncate(size)


MACHINE_FILES = ['sys/kernel/mm/transparent_hugepage/enabled', 'proc/swaps', 'proc/mdstat', 'proc/mounts',
                 'etc/fstab', 'etc/nccl.conf', 'proc/sys/vm/swappiness', 'proc/cmdline', 'proc/meminfo']
FACTS = (0,)
# audit: 0 clean, 2 findings, 3 nothing failed but a rule could not be evaluated (an unreadable fact:
# what garbage in every kernel table should give when no other rule fails)
AUDIT = (0, 2, 3)


def machine_files(c):
    rnd = random.Random(8)
    garbage = bytes(rnd.randrange(256) for _ in range(64 << 10))
    kinds = {
        'a gigabyte (sparse)': None,
        'NUL bytes': b'madvise\0never\n\0\0\0',
        'binary garbage': garbage,
        'an unterminated line': b'Filename Type Size Used Priority\n/dev/sda2 partition 1024 0 -2',
        'a 2 MiB line': b'x' * (2 << 20),
        'only newlines': b'\n' * 100000,
    }
    for kind, data in kinds.items():
        r = c.root()
        for rel in MACHINE_FILES:
            if data is None:
                sparse(r, rel)
            else:
                put(r, rel, data)
        c.run(f'{kind} in every kernel table and config file', r, ['facts', '--json'], FACTS, json_out=True)
        c.run(f'{kind} in every kernel table and config file', r, ['audit', '--profile', 'base', '--json'], AUDIT,
              json_out=True)
        c.run(f'{kind} in every kernel table and config file', r, ['plan', '--profile', 'base'], (0,))
        shutil.rmtree(r)
    # The gigabyte value is reported, not read: unreadable with "too large".
    r = c.root()
    sparse(r, 'sys/kernel/mm/transparent_hugepage/enabled')
    rc, out, err = c.run('a gigabyte sysfs value', r, ['facts', '--json', 'thp.enabled'], FACTS, json_out=True)
    f = json.loads(out)['facts'].get('thp.enabled', {}) if rc == 0 else {}
    check(f.get('status') == 'unreadable', f'a gigabyte sysfs value is unreadable, with a reason ({f})')
    put(r, 'sys/kernel/mm/transparent_hugepage/enabled', b'always [mad\0vise] never\n')
    rc, out, err = c.run('a sysfs value with a NUL byte', r, ['facts', '--json', 'thp.enabled'], FACTS, json_out=True)
    f = json.loads(out)['facts'].get('thp.enabled', {}) if rc == 0 else {}
    check(f.get('status') == 'unreadable', f'a sysfs value with a NUL byte is unreadable ({f})')
    shutil.rmtree(r)


def change_log(c):
    r = c.root()
    log = os.path.join('var', 'lib', 'llmtune', 'changelog.jsonl')
    sparse(r, log)
    c.run('a gigabyte change log', r, ['verify'], (1,), say='too large')
    c.run('a gigabyte change log', r, ['apply', '--profile', 'base'], (1,))
    c.run('a gigabyte change log', r, ['log'], (1,))
    rnd = random.Random(9)
    for kind, data in {'binary garbage': bytes(rnd.randrange(256) for _ in range(1 << 16)),
                       'NUL bytes': b'{"seq":1}\n\0\0\0\n',
                       'deeply nested JSON': b'[' * 100000 + b'\n'}.items():
        put(r, log, data)
        c.run(f'{kind} as the change log', r, ['verify'], (2,))
        c.run(f'{kind} as the change log', r, ['apply', '--profile', 'base'], (1,))
        c.run(f'{kind} as the change log', r, ['rollback', '--all'], (1,))
        c.run(f'{kind} as the change log', r, ['log'], (0, 1, 2))
    # Half a first record and no head file is what a kill inside the very first append leaves
    # (SIGKILL can cut a write(2) between two pages): nothing was vouched for, so it is noted and
    # the next writer removes the half line (tests/unit/test-changelog.c); refusing would leave the
    # machine unable to apply or roll back.
    put(r, log, b'{"seq":1,"event":"intent"')
    c.run('half a first record as the change log', r, ['verify'], (0,), say='half a record')
    c.run('half a first record as the change log', r, ['rollback', '--all'], (0,))
    shutil.rmtree(r)


def profiles(c):
    r = c.root()
    site = os.path.join('etc', 'llmtune', 'profiles.d')
    # inheritance 1,000 levels deep
    for i in range(1000):
        parent = 'base' if i == 0 else f'deep{i - 1}'
        put(r, os.path.join(site, f'deep{i}.ini'), f'[profile]\nname = deep{i}\ninherits = {parent}\n'.encode())
    c.run('inheritance 1,000 levels deep', r, ['audit', '--profile', 'deep999'], (1,), say='deeper than')
    c.run('inheritance 1,000 levels deep', r, ['profiles'], (0, 1))
    shutil.rmtree(os.path.join(r, site))
    # a cycle
    put(r, os.path.join(site, 'a.ini'), b'[profile]\nname = a\ninherits = b\n')
    put(r, os.path.join(site, 'b.ini'), b'[profile]\nname = b\ninherits = a\n')
    c.run('an inheritance cycle', r, ['audit', '--profile', 'a'], (1,), say='cycle')
    shutil.rmtree(os.path.join(r, site))
    # 10,000 rule switches, parameters and NCCL keys in one profile
    body = ['[profile]', 'name = wide', 'inherits = base', '[rules]']
    body += [f'nosuch-{i}-* = off' for i in range(10000)]
    body += ['[nccl]'] + [f'NCCL_X{i} = {i}' for i in range(10000)]
    put(r, os.path.join(site, 'wide.ini'), ('\n'.join(body) + '\n').encode())
    c.run('a profile with 20,000 entries', r, ['audit', '--profile', 'wide'], (0, 1, 2))
    body = ['[profile]', 'name = wideparams', 'inherits = base', '[params]']
    body += [f'p{i} = {i}' for i in range(10000)]
    put(r, os.path.join(site, 'wideparams.ini'), ('\n'.join(body) + '\n').encode())
    c.run('a profile with 10,000 unknown parameters', r, ['audit', '--profile', 'wideparams'], (1,), say='p9999')
    shutil.rmtree(os.path.join(r, site))
    # binary, NUL, gigabyte, unterminated site profiles
    rnd = random.Random(10)
    for kind, data in {'binary garbage': bytes(rnd.randrange(256) for _ in range(1 << 16)),
                       'NUL bytes': b'[profile]\nname = n\0ul\n',
                       'a 2 MiB line': b'[profile]\nname = ' + b'x' * (2 << 20) + b'\n',
                       'an unterminated last line': b'[profile]\nname = unterm\ninherits = base'}.items():
        put(r, os.path.join(site, 'x.ini'), data)
        want = (0, 2) if kind == 'an unterminated last line' else (1,)
        c.run(f'a site profile of {kind}', r, ['audit', '--profile', 'unterm' if want == (0, 2) else 'base'], want)
        put(c.tmp, 'lint.ini', data)
        c.run(f'a profile file of {kind}', os.path.join(c.roots, ROOT), ['lint', os.path.join(c.tmp, 'lint.ini')], (1,) if want == (1,) else (0,))
    sparse(r, os.path.join(site, 'x.ini'))
    c.run('a gigabyte site profile', r, ['audit', '--profile', 'base'], (1,), say='larger than 1 MiB: not a profile')
    shutil.rmtree(r)


def rule_files(c):
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = c.root()
    with tempfile.TemporaryDirectory(prefix='llmtune-data-') as data:
        shutil.copytree(os.path.join(src, 'rules'), os.path.join(data, 'rules'))
        shutil.copytree(os.path.join(src, 'profiles'), os.path.join(data, 'profiles'))
        env = {'LLMTUNE_DATADIR': data}
        many = os.path.join(data, 'rules', 'zz-many.ini')
        with open(many, 'w') as f:
            for i in range(10000):
                f.write(f'[m{i}]\ntitle=r{i}\narea=memory\nseverity=info\nrationale=x\nsource=x\n'
                        f'check=thp.enabled != x{i}\n')
        c.run('10,000 rules', r, ['audit', '--profile', 'base', '--json'], AUDIT, env=env, json_out=True)
        c.run('10,000 rules', r, ['lint', many], (0,), env=env)
        c.run('10,000 rules', r, ['explain', '--list'], (0,), env=env)
        os.unlink(many)
        rnd = random.Random(11)
        for kind, data_ in {'binary garbage': bytes(rnd.randrange(256) for _ in range(1 << 16)),
                            'NUL bytes': b'[r]\ntitle = a\0b\n',
                            'a 2 MiB file of one line': b'x' * (2 << 20),
                            'a condition nested 100,000 deep': b'[deep]\ntitle = t\narea = memory\nseverity = info\n'
                            b'rationale = x\nsource = x\ncheck = ' + b'(' * 100000 + b'\n'}.items():
            with open(many, 'wb') as f:
                f.write(data_)
            c.run(f'a rule file of {kind}', r, ['audit', '--profile', 'base'], (1,), env=env)
        os.unlink(many)
    shutil.rmtree(r)


def trust(c):
    if os.geteuid() != 0:
        print('skip  trust checks: not running as root')
        return
    r = c.root()
    with tempfile.TemporaryDirectory(prefix='llmtune-trust-') as d:
        os.chmod(d, 0o755)
        p = os.path.join(d, 'site.ini')
        put(d, 'site.ini', b'[profile]\nname = trusted\ninherits = base\n', 0o644)
        c.run('a root-owned 0644 profile in a 0755 directory', r, ['audit', '--profile', p], (0, 2))
        os.chmod(p, 0o666)
        c.run('a world-writable profile', r, ['audit', '--profile', p], (1,), say='writable by every user')
        os.chmod(p, 0o664)
        os.chown(p, 0, 4242)
        c.run('a group-writable profile', r, ['audit', '--profile', p], (1,), say='writable by group')
        os.chmod(p, 0o644)
        os.chown(p, 4242, 0)
        c.run('a profile owned by another user', r, ['audit', '--profile', p], (1,), say='owned by uid 4242')
        os.chown(p, 0, 0)
        os.chmod(d, 0o777)
        c.run('a profile in a world-writable directory', r, ['audit', '--profile', p], (1,), say='its directory')
        os.chmod(d, 0o1777)
        c.run('a profile in a sticky world-writable directory (like /tmp)', r, ['audit', '--profile', p], (0, 2))
        os.chmod(d, 0o755)
        os.chown(p, 4242, 0)
        c.run('a profile owned by the user who ran sudo (SUDO_UID)', r, ['audit', '--profile', p], (0, 2),
              env={'SUDO_UID': '4242'})
        os.chown(p, 0, 0)
    site = os.path.join(r, 'etc', 'llmtune', 'profiles.d')
    put(site, 'w.ini', b'[profile]\nname = w\ninherits = base\n', 0o666)
    c.run('a world-writable site profile in profiles.d', r, ['audit', '--profile', 'base'], (1,),
          say='writable by every user')
    os.chmod(os.path.join(site, 'w.ini'), 0o644)
    os.chmod(site, 0o777)
    c.run('a world-writable profiles.d', r, ['audit', '--profile', 'base'], (1,), say='its directory')
    os.chmod(site, 0o755)
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory(prefix='llmtune-data-') as data:
        os.chmod(data, 0o755)
        shutil.copytree(os.path.join(src, 'rules'), os.path.join(data, 'rules'))
        shutil.copytree(os.path.join(src, 'profiles'), os.path.join(data, 'profiles'))
        os.chmod(os.path.join(data, 'rules', 'memory.ini'), 0o666)
        c.run('a world-writable shipped rule file', r, ['audit', '--profile', 'base'], (1,),
              env={'LLMTUNE_DATADIR': data}, say='memory.ini')
    shutil.rmtree(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    a = ap.parse_args()
    start = time.time()
    with tempfile.TemporaryDirectory(prefix='llmtune-hostile-') as tmp:
        c = Case(os.path.abspath(a.llmtune), a.roots, tmp)
        for part in (machine_files, change_log, profiles, rule_files, trust):
            print(f'== {part.__name__}', flush=True)
            part(c)
    print(f'figure: hostile runs: {worst["runs"]}')
    print(f'figure: slowest run: {worst["seconds"]:.2f} s')
    print(f'figure: largest max RSS: {worst["rss_mb"]:.0f} MiB')
    return finish(f'{time.time() - start:.0f} s')


if __name__ == '__main__':
    sys.exit(main())
