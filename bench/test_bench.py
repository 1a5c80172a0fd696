#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
The benchmark kept working (meson test --suite bench): generate the small synthetic root, run
bench/run.py on it and on one fixture root with two runs each and --check (the structural
targets: a sysfs-only rule sets up neither libpci nor hwloc, no file read twice through the root
handle), and bench/cpu.py with one run on the small root. Not a timed test: the figures are printed, never compared.

    test_bench.py --llmtune BIN --out DIR [--fixture-root DIR]
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def check_cpu(llmtune, root):
    """bench/cpu.py runs, and llmtune's row splits its CPU time into its own and its children's."""
    p = subprocess.run([sys.executable, os.path.join(HERE, 'cpu.py'), '--llmtune', 'audit=' + llmtune, '--root', root,
                        '--runs', '1'], stdout=subprocess.PIPE, text=True)
    print(p.stdout, end='')
    rows = [l.split('|') for l in p.stdout.splitlines() if l.startswith('| audit |')]
    if p.returncode != 0 or len(rows) != 1 or not rows[0][6].strip() or not rows[0][7].strip():
        print('bench/cpu.py: no audit row with self and children CPU time (LLMTUNE_STATS)', file=sys.stderr)
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--fixture-root', action='append', default=[])
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(HERE, 'mkbench.py'), '--out', a.out, '--preset', 'small'],
                   check=True, stdout=subprocess.DEVNULL)
    roots = [os.path.join(a.out, 'bench-small')] + a.fixture_root
    argv = [sys.executable, os.path.join(HERE, 'run.py'), '--llmtune', a.llmtune, '--runs', '2', '--check',
            '--json', os.path.join(a.out, 'report.json')]
    for r in roots:
        argv += ['--root', r]
    rc = subprocess.run(argv).returncode
    if rc == 0:
        rc = check_cpu(a.llmtune, roots[0])
    if rc == 0:
        shutil.rmtree(os.path.join(a.out, 'bench-small'), ignore_errors=True)
    return rc


if __name__ == '__main__':
    sys.exit(main())
