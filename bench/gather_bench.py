#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Time `llmtune gather` of a root and `llmtune audit` of the tree against the archive
(docs/PERFORMANCE.md, "gather and archive roots").

Usage: gather_bench.py LLMTUNE ROOT [OUTDIR] [RUNS]
Prints wall medians/minima and median CPU time (user + system of the child) per command, and the
archive sizes.
"""
import os
import resource
import statistics
import subprocess
import sys
import time

llmtune, root = sys.argv[1], sys.argv[2]
outdir = sys.argv[3] if len(sys.argv) > 3 else "/tmp"
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 9


def timed(args):
    wall, cpu = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run([llmtune] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode not in (0, 2):
            sys.exit(f"llmtune {' '.join(args)}: exit {p.returncode}: {p.stderr.decode()}")
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return statistics.median(wall) * 1e3, min(wall) * 1e3, statistics.median(cpu) * 1e3


archives = {}
for ext in ("tar.zst", "tar.gz"):
    out = os.path.join(outdir, "gather-bench." + ext)
    w, m, c = timed(["--root", root, "gather", "-o", out])
    archives[ext] = out
    print(f"gather {ext}: cpu {c:.0f} ms, wall median {w:.0f} min {m:.0f} ms, {os.path.getsize(out)} bytes")
tw, tm, tc = timed(["--root", root, "audit"])
print(f"audit tree: cpu {tc:.0f} ms, wall median {tw:.0f} min {tm:.0f} ms")
for ext, out in archives.items():
    w, m, c = timed(["--root", out, "audit"])
    print(f"audit {ext}: cpu {c:.0f} ms ({c / tc:.2f}x), wall median {w:.0f} min {m:.0f} ms")
