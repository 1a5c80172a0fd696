#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Time `llmtune rollback --all` of long change logs (docs/RELIABILITY.md, "A log it can always read
back"; docs/PERFORMANCE.md). Not a test: a tool to measure, on a quiet machine if possible.

Usage: rollback_bench.py --llmtune BIN [--llmtune OTHER_BIN ...] --roots BUILD/tests/roots
                         [--records 27000 --records 108000] [--tmp DIR]

For each size, a copy of the ws-4090 fixture gets a generated log of about that many records (a
real apply replayed as apply/rollback cycles, the re-applies, the last apply: what tests/e2e/reliability.py
part longlog builds), then each binary rolls back a fresh copy of it: wall time and CPU time
(user + system) of the rollback, and whether the tree came back to the original.
"""
import argparse
import os
import resource
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'e2e'))
import reliability as rel  # noqa: E402  (history_log, copy_root, tree_diff, Tool)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', action='append', required=True, help='binary to time (repeat to compare)')
    ap.add_argument('--roots', required=True)
    ap.add_argument('--records', action='append', type=int, help='log sizes (default 27000 and 108000)')
    ap.add_argument('--tmp', default=None, help='where the trees go (default $TMPDIR)')
    args = ap.parse_args()
    sizes = args.records or [27000, 108000]
    roots = os.path.abspath(args.roots)
    gen = rel.Tool(os.path.abspath(args.llmtune[0]))
    print(f'load average before: {os.getloadavg()[0]:.2f} (CPUs: {os.cpu_count()})')
    print(f'{"records":>8} {"to undo":>8} {"log MB":>7}  {"binary":<40} {"wall s":>8} {"cpu s":>8}  tree')
    with tempfile.TemporaryDirectory(prefix='llmtune-rollback-bench-', dir=args.tmp) as tmp:
        orig = rel.copy_root(roots, 'ws-4090', os.path.join(tmp, 'orig'))
        for n in sizes:
            seed = rel.copy_root(roots, 'ws-4090', os.path.join(tmp, f'seed-{n}'))
            records, in_force = rel.history_log(gen, seed, n)
            mb = os.path.getsize(os.path.join(seed, rel.LOG_DIR, 'changelog.jsonl')) / 1e6
            for binary in args.llmtune:
                root = os.path.join(tmp, 'run')
                if os.path.exists(root):
                    shutil.rmtree(root)
                shutil.copytree(seed, root, symlinks=True)
                tool = rel.Tool(os.path.abspath(binary))
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                rc, out, err = tool.run(root, 'rollback', '--all')
                wall = time.perf_counter() - t0
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
                ok = rc == 0 and not rel.tree_diff(orig, root)
                print(f'{records:>8} {in_force:>8} {mb:>7.1f}  {binary:<40} {wall:>8.2f} {cpu:>8.2f}  '
                      f'{"restored" if ok else "NOT restored (rc %d: %s)" % (rc, err.strip()[-200:])}', flush=True)
            shutil.rmtree(seed)
    print(f'load average after: {os.getloadavg()[0]:.2f}')


if __name__ == '__main__':
    main()
