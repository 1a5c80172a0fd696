#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Golden end-to-end tests: run llmtune on a temporary copy of a fixture root and compare its
stdout and exit status with tests/golden/CASE.out and the status in cases.ini.

    golden.py --llmtune BIN --roots DIR [--case NAME]...   run cases (all when none named)
    golden.py --list                                         print the case names
    LLMTUNE_UPDATE_GOLDEN=1 golden.py ...                    rewrite the golden files instead

cases.ini holds one section per case:
    [dgx-a100-facts]
    root = dgx-a100            ; a directory under --roots
    args = facts               ; split like a shell would (shlex)
    status = 0                 ; expected exit status
    env = FOO=1 BAR=2          ; optional extra environment
    readonly = yes             ; optional: assert the tree is byte-identical afterwards
                               ; (default: yes when the command is "facts")
NO_COLOR=1 and LC_ALL=C are always set. The temporary root's path is printed as @ROOT@, the time of an audit --json as @TIME@, each rule's
"ms" as "@MS@",
and root.confinement (landlock, chroot or vet: what this machine's kernel and user allow) as @CONFINEMENT@.
"""
import argparse
import configparser
import difflib
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, 'cases.ini')
GOLDEN = os.path.join(os.path.dirname(HERE), 'golden')
READONLY_COMMANDS = ('facts',)


def load_cases(path):
    cp = configparser.ConfigParser(interpolation=None, comment_prefixes=(';', '#'), inline_comment_prefixes=(';',))
    with open(path) as f:
        cp.read_file(f)
    return cp


def snapshot(top):
    """Everything a write could change: names, types, modes, contents, link targets, mtimes."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, top)
            if os.path.islink(p):
                snap[rel] = ('link', os.readlink(p))
            elif os.path.isdir(p):
                snap[rel] = ('dir', st.st_mode, st.st_mtime_ns)
            else:
                with open(p, 'rb') as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                snap[rel] = ('file', st.st_mode, st.st_size, st.st_mtime_ns, digest)
    st = os.lstat(top)
    snap['.'] = ('dir', st.st_mode, st.st_mtime_ns)
    return snap


def run_case(name, case, args):
    root_src = os.path.join(args.roots, case['root'])
    if not os.path.isdir(root_src):
        return ['fixture root %s does not exist (build the fixture-roots target)' % root_src]
    argv = shlex.split(case.get('args', ''))
    expect_status = case.getint('status', 0)
    readonly = case.getboolean('readonly', argv[:1] and argv[0] in READONLY_COMMANDS)
    env = dict(os.environ, NO_COLOR='1', LC_ALL='C')
    env.pop('LLMTUNE_UPDATE_GOLDEN', None)
    for kv in shlex.split(case.get('env', '')):
        k, _, v = kv.partition('=')
        env[k] = v
    problems = []
    tmp = tempfile.mkdtemp(prefix='llmtune-golden-')
    try:
        root = os.path.join(tmp, case['root'])
        shutil.copytree(root_src, root, symlinks=True)
        before = snapshot(root) if readonly else None
        r = subprocess.run([args.llmtune, '--root', root] + argv, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        out = r.stdout.decode('utf-8', 'backslashreplace').replace(root, '@ROOT@')
        # audit --json says when it ran: the one value that differs from run to run
        out = re.sub(r'"time": "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"', '"time": "@TIME@"', out)
        # ... and how long each rule took: a number of milliseconds, never the same twice
        out = re.sub(r'"ms": \d+\.\d{3}(?=[,\n }])', '"ms": "@MS@"', out)
        out = re.sub(r'^(root\.confinement +)(landlock|chroot|vet)$', r'\1@CONFINEMENT@', out, flags=re.M)
        out = re.sub(r'("root\.confinement": \{[^}]*"value": ")(landlock|chroot|vet)"', r'\1@CONFINEMENT@"', out)
        err = r.stderr.decode('utf-8', 'backslashreplace').replace(root, '@ROOT@')
        golden = os.path.join(args.golden, name + '.out')
        if os.environ.get('LLMTUNE_UPDATE_GOLDEN') == '1':
            with open(golden, 'w') as f:
                f.write(out)
            if r.returncode != expect_status:
                problems.append('exit status %d, cases.ini says %d (edit cases.ini if that is right)' % (
                    r.returncode, expect_status))
            print('%s: wrote %s' % (name, os.path.relpath(golden)))
        else:
            if r.returncode != expect_status:
                problems.append('exit status %d, expected %d' % (r.returncode, expect_status))
            try:
                with open(golden) as f:
                    want = f.read()
            except FileNotFoundError:
                want = None
                problems.append('no golden file %s (run with LLMTUNE_UPDATE_GOLDEN=1)' % golden)
            if want is not None and want != out:
                diff = difflib.unified_diff(want.splitlines(True), out.splitlines(True),
                                            'golden/%s.out' % name, 'actual', n=2)
                problems.append('stdout differs from the golden file:\n' + ''.join(diff))
        if problems and err:
            problems.append('stderr:\n' + err)
        if readonly:
            after = snapshot(root)
            if after != before:
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                problems.append('the command modified the root: ' + ', '.join(changed[:20]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return problems


def main():
    ap = argparse.ArgumentParser(description='golden end-to-end tests for llmtune')
    ap.add_argument('--llmtune', help='the llmtune binary')
    ap.add_argument('--roots', help='directory holding the generated fixture roots')
    ap.add_argument('--cases', default=CASES)
    ap.add_argument('--golden', default=GOLDEN)
    ap.add_argument('--case', action='append', help='run only this case (repeatable)')
    ap.add_argument('--list', action='store_true', help='print the case names and exit')
    args = ap.parse_args()
    cases = load_cases(args.cases)
    if args.list:
        print('\n'.join(cases.sections()))
        return 0
    if not args.llmtune or not args.roots:
        ap.error('--llmtune and --roots are required')
    names = args.case or cases.sections()
    failed = []
    for name in names:
        if not cases.has_section(name):
            print('%s: FAIL: no such case in %s' % (name, args.cases))
            failed.append(name)
            continue
        problems = run_case(name, cases[name], args)
        if problems:
            failed.append(name)
            print('%s: FAIL' % name)
            for p in problems:
                print('  ' + p.replace('\n', '\n  ').rstrip())
        else:
            print('%s: ok' % name)
    if failed:
        print('failed cases: %s' % ' '.join(failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
