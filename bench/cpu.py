#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
CPU time of a full audit against lstopo-no-graphics on the same root (docs/PERFORMANCE.md, the
issue 28 target): each command run in turn, RUNS times after one unmeasured round, CPU time (user +
system) from getrusage(RUSAGE_CHILDREN) around each run, so that figures stay comparable on a
machine other jobs share (wall time there measures the waiting). Reported per command: the median
and minimum CPU time, the medians of user and system time, the ratio to lstopo's median; for
llmtune, the medians of LLMTUNE_STATS's split: its own process (self_cpu_ms) and the sandbox
children it reaped (children_cpu_ms: hwloc's and libkmod's loads of a --root tree).

    cpu.py --llmtune NAME=BIN [--llmtune NAME=BIN ...] --root DIR [--runs N] [--rule ID]

--root / measures the live system (llmtune without --root, lstopo with its default components):
run it where the bench tree is "/", e.g. under bench/live-root.sh. Not a timed test: nothing is
compared with a threshold.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys

STATS = re.compile(r'self_cpu_ms=([\d.]+) children=\d+ children_cpu_ms=([\d.]+)')


def commands(a):
    live = a.root == '/'
    root = [] if live else ['--root', a.root]
    rule = ['--rule', a.rule] if a.rule else []
    out = []
    for spec in a.llmtune:
        name, _, binary = spec.rpartition('=')
        out.append((name or binary, [binary] + root + ['audit'] + rule, dict(os.environ, LLMTUNE_STATS='1')))
    lenv = dict(os.environ)
    if not live:
        # hwloc's Linux component alone on the tree: without "stop" this machine's CPUID leaks in
        lenv.update(HWLOC_FSROOT=a.root, HWLOC_COMPONENTS='linux,stop')
    out.append(('lstopo', ['lstopo-no-graphics', '--of', 'console'], lenv))
    return out


def measure(cmds, runs):
    res = {name: {'cpu': [], 'user': [], 'sys': [], 'self': [], 'children': []} for name, _, _ in cmds}
    for i in range(runs + 1):
        for name, argv, env in cmds:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if p.returncode not in (0, 2, 3):  # audit: 2 findings, 3 a fact unreadable (cli.h); 1 is an error
                sys.exit('%s: exit status %d: %s' % (' '.join(argv), p.returncode, p.stderr.strip()[-500:]))
            if i == 0:
                continue
            r = res[name]
            r['user'].append((after.ru_utime - before.ru_utime) * 1000)
            r['sys'].append((after.ru_stime - before.ru_stime) * 1000)
            r['cpu'].append(r['user'][-1] + r['sys'][-1])
            m = STATS.search(p.stderr)
            if m:
                r['self'].append(float(m.group(1)))
                r['children'].append(float(m.group(2)))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--llmtune', action='append', required=True, help='NAME=BIN (or BIN)')
    ap.add_argument('--root', required=True)
    ap.add_argument('--runs', type=int, default=21)
    ap.add_argument('--rule')
    a = ap.parse_args()
    cmds = commands(a)
    res = measure(cmds, a.runs)
    med = statistics.median
    base = med(res['lstopo']['cpu'])
    print('root %s, %d runs each, load average %s' % (a.root, a.runs, ' '.join('%.1f' % x for x in os.getloadavg())))
    print('| command | CPU ms (median / min) | user | system | / lstopo | self | children |')
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    for name, _, _ in cmds:
        r = res[name]
        split = ('%.1f | %.1f' % (med(r['self']), med(r['children']))) if r['self'] else ' | '
        print('| %s | %.1f / %.1f | %.1f | %.1f | %.2fx | %s |' % (name, med(r['cpu']), min(r['cpu']), med(r['user']),
                                                                 med(r['sys']), med(r['cpu']) / base if base else 0,
                                                                 split))
    return 0


if __name__ == '__main__':
    sys.exit(main())
