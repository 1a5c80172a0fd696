#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Benchmark llmtune against the tools an operator would otherwise run, on the same root.

    run.py --llmtune BIN --root DIR [--root DIR]... [--runs N] [--rule ID] [--live]
           [--json FILE] [--markdown FILE] [--check] [--no-strace]

For every root, each command runs --runs times (interleaved, so that load on the machine hits
every command alike); the report gives the median wall time, the median peak RSS (from the
rusage of wait4(2) as GNU /usr/bin/time reports it, "Maximum resident set size" of -v), and, from one
more run under `strace -f -y -e trace=open,openat,openat2`, the files opened for reading and
how many of them were opened more than once. llmtune runs with LLMTUNE_STATS=1, which makes it
print the files it read through its root handle and the library handles it set up.

Commands: llmtune audit (every rule, the profile detected), llmtune audit --rule RULE (a
sysfs-only rule), llmtune facts --json; lstopo-no-graphics with HWLOC_FSROOT=ROOT (hwloc's own
topology load, the floor for anything that uses hwloc) and lspci -vvv -A linux-sysfs on
ROOT/sys/bus/pci. With --live: the same on / and tuned-adm recommend / list when installed.

--check asserts the structural targets and exits 1 when one is missed: the sysfs-only rule
sets up neither libpci nor hwloc, and no file is opened twice by llmtune's own reads (files
hwloc opens again for its topology are reported, not failed: hwloc reads through its own
HWLOC_FSROOT descriptor), and no llmtune command gives heap memory back to the kernel (a brk
that lowers the break: src/cli/main.c keeps the heap). Timing targets are reported as ratios, never asserted.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

STRACE_RE = re.compile(r'^(?:\[pid\s+)?(\d+)\]?\s+(open|openat|openat2)\((.*)\)\s+=\s+(-?\d+)(?:<(.*)>)?')
BRK_RE = re.compile(r'^(?:\[pid\s+)?(\d+)\]?\s+brk\((\w+)\)\s+=\s+(0x[0-9a-f]+)')


GNU_TIME = '/usr/bin/time' if os.access('/usr/bin/time', os.X_OK) else None


def run_once(argv, env):
    """Wall seconds, peak RSS KiB, CPU seconds (user + system), exit status, stderr text. The peak
    RSS and CPU time come from GNU time's %M %U %S (wait4 rusage of a child forked from the small
    time process): a child forked from this Python would inherit Python's RSS as its high-water
    mark. CPU time is the figure to compare on a shared machine, where wall time includes waiting
    for a core."""
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile(suffix='.time') as tf:
        wrap = [GNU_TIME, '-f', '%M %U %S', '-o', tf.name] if GNU_TIME else []
        t0 = time.perf_counter()
        p = subprocess.Popen(wrap + argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        rss, cpu = ru.ru_maxrss, ru.ru_utime + ru.ru_stime
        if GNU_TIME:
            tail = open(tf.name).read().strip().splitlines()
            f = tail[-1].split() if tail else []
            if len(f) == 3 and f[0].isdigit():
                rss, cpu = int(f[0]), float(f[1]) + float(f[2])
        err.seek(0)
        return wall, rss, cpu, rc, err.read().decode(errors='replace')


def strace_opens(argv, env, root):
    """Files opened for reading (not O_PATH/O_DIRECTORY), resolved by strace -y; and how often the
    heap was given back to the kernel (a brk that lowers a process's break)."""
    with tempfile.NamedTemporaryFile(suffix='.strace') as out:
        subprocess.run(['strace', '-f', '-y', '-qq', '-e', 'trace=open,openat,openat2,brk', '-o', out.name] + argv,
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lines = open(out.name, errors='replace').read().splitlines()
    opens = {}
    failed = 0
    brk, shrinks = {}, 0
    for line in lines:
        b = BRK_RE.match(line)
        if b:
            pid, top = b.group(1), int(b.group(3), 16)
            shrinks += pid in brk and top < brk[pid]
            brk[pid] = top
            continue
        m = STRACE_RE.match(line)
        if not m:
            continue
        call, args, ret, path = m.group(2), m.group(3), int(m.group(4)), m.group(5)
        if ret < 0 or not path:
            failed += ret < 0
            continue
        if 'O_PATH' in args or 'O_DIRECTORY' in args:
            continue
        opens.setdefault(path, []).append(call)
    rootp = os.path.realpath(root)
    under = {p: c for p, c in opens.items() if p == rootp or p.startswith(rootp + '/')}
    twice = {p: c for p, c in under.items() if len(c) > 1}
    # openat2 is llmtune's root handle; a path it opened twice is a cache miss of llmtune's own.
    own_twice = [p for p, c in twice.items() if c.count('openat2') > 1]
    return {
        'opened': sum(len(c) for c in under.values()),
        'unique': len(under),
        'twice': len(twice),
        'own_twice': own_twice,
        'twice_sample': sorted(twice)[:5],
        'outside_root': sum(len(c) for p, c in opens.items() if p not in under),
        'failed_opens': failed,
        'heap_shrinks': shrinks,
    }


def stats_line(stderr):
    m = re.search(r'llmtune-stats: files_opened=(\d+) handles=(\S*)', stderr)
    if not m:
        return None
    return {'files_opened': int(m.group(1)), 'handles': [h for h in m.group(2).split(',') if h]}


def root_shape(llmtune, root):
    """CPUs, NUMA nodes, GPUs and PCI functions of a root (for the scaling ratios)."""
    out = subprocess.run([llmtune, '--root', root, 'facts', '--json', 'cpu.count', 'numa.nodes', 'gpu.count'],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    facts = json.loads(out or b'{}').get('facts', {})

    def val(k):
        v = facts.get(k, {})
        return v.get('value') if v.get('status') == 'ok' else None
    pci = os.path.join(root, 'sys/bus/pci/devices')
    return {'cpus': val('cpu.count'), 'nodes': val('numa.nodes'), 'gpus': val('gpu.count'),
            'pci': len(os.listdir(pci)) if os.path.isdir(pci) else 0}


def commands(a, root, live):
    env = dict(os.environ, LLMTUNE_STATS='1', NO_COLOR='1')
    rootargs = [] if live else ['--root', root]
    out = [
        ('llmtune audit', [a.llmtune] + rootargs + ['audit'], env),
        ('llmtune audit --rule %s' % a.rule, [a.llmtune] + rootargs + ['audit', '--rule', a.rule], env),
        ('llmtune facts --json', [a.llmtune] + rootargs + ['facts', '--json'], env),
    ]
    lstopo = shutil.which('lstopo-no-graphics')
    if lstopo:
        henv = dict(os.environ)
        if not live:
            henv.update(HWLOC_FSROOT=root, HWLOC_COMPONENTS='linux,stop')
        out.append(('lstopo-no-graphics', [lstopo, '--of', 'console'], henv))
    lspci = shutil.which('lspci') or shutil.which('lspci', path='/sbin:/usr/sbin')
    if lspci:
        sysfs = os.path.join(root, 'sys/bus/pci')
        out.append(('lspci -vvv', [lspci, '-vvv', '-A', 'linux-sysfs', '-O', 'sysfs.path=' + sysfs],
                    dict(os.environ)))
    tuned = shutil.which('tuned-adm')
    if live and tuned:
        out.append(('tuned-adm recommend', [tuned, 'recommend'], dict(os.environ)))
        out.append(('tuned-adm list', [tuned, 'list'], dict(os.environ)))
    return out


def bench_root(a, root, live=False):
    cmds = commands(a, root, live)
    samples = {name: [] for name, _, _ in cmds}
    stats = {}
    for name, argv, env in cmds:  # warm the page cache once, unmeasured
        run_once(argv, env)
    for _ in range(a.runs):
        for name, argv, env in cmds:
            wall, rss, cpu, rc, err = run_once(argv, env)
            samples[name].append((wall, rss, cpu))
            if name.startswith('llmtune'):
                stats[name] = stats_line(err)
                if rc not in (0, 2):
                    raise SystemExit('bench: %s failed (%d): %s' % (' '.join(argv), rc, err.strip()[-500:]))
    res = []
    for name, argv, env in cmds:
        walls = [w for w, _, _ in samples[name]]
        rsss = [r for _, r, _ in samples[name]]
        cpus = [c for _, _, c in samples[name]]
        row = {'command': name, 'runs': len(walls), 'wall_ms': statistics.median(walls) * 1000,
               'wall_min_ms': min(walls) * 1000, 'cpu_ms': statistics.median(cpus) * 1000,
               'rss_kib': statistics.median(rsss), 'stats': stats.get(name)}
        if a.strace:
            row['strace'] = strace_opens(argv, env, '/' if live else root)
        res.append(row)
    by = {r['command']: r for r in res}
    audit, lst = by['llmtune audit'], by.get('lstopo-no-graphics')
    ratios = {}
    if lst:
        ratios['audit_time_vs_lstopo'] = audit['wall_ms'] / lst['wall_ms']
        ratios['audit_cpu_vs_lstopo'] = audit['cpu_ms'] / lst['cpu_ms'] if lst['cpu_ms'] else float('nan')
        ratios['audit_rss_vs_lstopo'] = audit['rss_kib'] / lst['rss_kib']
        ratios['rule_time_vs_lstopo'] = by['llmtune audit --rule %s' % a.rule]['wall_ms'] / lst['wall_ms']
    return {'root': root, 'live': live, 'shape': root_shape(a.llmtune, root) if not live else None,
            'results': res, 'ratios': ratios}


def check(a, report):
    problems = []
    for rb in report['roots']:
        by = {r['command']: r for r in rb['results']}
        rule = by['llmtune audit --rule %s' % a.rule]
        st = rule['stats']
        if not st:
            problems.append('%s: no llmtune-stats line (LLMTUNE_STATS)' % rb['root'])
        elif {'libpci', 'hwloc'} & set(st['handles']):
            problems.append('%s: audit --rule %s set up %s' % (rb['root'], a.rule, ','.join(st['handles'])))
        for name, r in by.items():
            s = r.get('strace')
            if not name.startswith('llmtune') or not s:
                continue
            if s['own_twice']:
                problems.append('%s: %s opened through the root handle twice: %s' % (
                    rb['root'], name, ', '.join(s['own_twice'][:5])))
            if s['heap_shrinks']:
                # main.c keeps the heap it grew (mallopt): a short-lived command gains nothing by
                # returning memory, and a full audit on a 384-CPU tree did so ~380 times.
                problems.append('%s: %s gave heap memory back to the kernel %d times (brk)' % (
                    rb['root'], name, s['heap_shrinks']))
            if name.startswith('llmtune audit --rule') and s['twice']:
                problems.append('%s: %s opened %d files twice: %s' % (
                    rb['root'], name, s['twice'], ', '.join(s['twice_sample'])))
    return problems


def fmt_table(report, rule):
    lines = []
    for rb in report['roots']:
        sh = rb['shape'] or {}
        title = 'live machine (/)' if rb['live'] else os.path.basename(rb['root'].rstrip('/'))
        lines.append('### %s%s\n' % (title, ' — %s CPUs, %s NUMA nodes, %s GPUs, %s PCI functions' % (
            sh.get('cpus'), sh.get('nodes'), sh.get('gpus'), sh.get('pci')) if sh else ''))
        lines.append('| command | median ms | min ms | median CPU ms | peak RSS MiB | files opened (unique) | '
                     'opened twice | libraries set up |')
        lines.append('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
        for r in rb['results']:
            s = r.get('strace') or {}
            st = r.get('stats')
            libs = ','.join(h for h in st['handles'] if h in ('libpci', 'hwloc', 'kmod')) if st else ''
            lines.append('| `%s` | %.1f | %.1f | %.1f | %.1f | %s | %s | %s |' % (
                r['command'], r['wall_ms'], r['wall_min_ms'], r['cpu_ms'], r['rss_kib'] / 1024.0,
                '%d (%d)' % (s['opened'], s['unique']) if s else '-', s.get('twice', '-') if s else '-',
                libs if st else ''))
        ra = rb['ratios']
        if ra:
            lines.append('\nRatios: full audit / lstopo time **%.2fx** (CPU time **%.2fx**), peak RSS **%.2fx**; '
                         '`audit --rule %s` / lstopo time %.2fx.\n' % (
                             ra['audit_time_vs_lstopo'], ra['audit_cpu_vs_lstopo'], ra['audit_rss_vs_lstopo'], rule,
                             ra['rule_time_vs_lstopo']))
        else:
            lines.append('')
    sc = report.get('scaling')
    if sc:
        lines.append('Scaling (%s -> %s): CPUs x%.1f, GPUs x%.1f, PCI functions x%.1f; full audit time x%.2f, '
                     'lstopo time x%.2f, files opened by the audit x%.2f.\n' % (
                         sc['from'], sc['to'], sc['cpus'], sc['gpus'], sc['pci'], sc['audit_time'], sc['lstopo_time'],
                         sc['audit_files']))
    return '\n'.join(lines)


def scaling(report):
    roots = [rb for rb in report['roots'] if rb['shape'] and rb['shape'].get('cpus')]
    if len(roots) < 2:
        return None
    roots.sort(key=lambda rb: rb['shape']['cpus'])
    lo, hi = roots[0], roots[-1]

    def cmd(rb, name):
        return {r['command']: r for r in rb['results']}.get(name)

    def ratio(x, y):
        return x / y if x and y else float('nan')
    a_lo, a_hi = cmd(lo, 'llmtune audit'), cmd(hi, 'llmtune audit')
    l_lo, l_hi = cmd(lo, 'lstopo-no-graphics'), cmd(hi, 'lstopo-no-graphics')
    return {
        'from': os.path.basename(lo['root'].rstrip('/')), 'to': os.path.basename(hi['root'].rstrip('/')),
        'cpus': ratio(hi['shape']['cpus'], lo['shape']['cpus']),
        'gpus': ratio(hi['shape']['gpus'], lo['shape']['gpus']),
        'pci': ratio(hi['shape']['pci'], lo['shape']['pci']),
        'audit_time': ratio(a_hi['wall_ms'], a_lo['wall_ms']),
        'lstopo_time': ratio(l_hi['wall_ms'], l_lo['wall_ms']) if l_lo and l_hi else float('nan'),
        'audit_files': ratio((a_hi.get('strace') or {}).get('opened'), (a_lo.get('strace') or {}).get('opened')),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--root', action='append', default=[], help='a machine root (repeatable)')
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument('--rule', default='thp-enabled', help='a rule that reads only sysfs (default thp-enabled)')
    ap.add_argument('--live', action='store_true', help='also run on this machine (/), with tuned-adm if present')
    ap.add_argument('--json', help='write the full report here')
    ap.add_argument('--markdown', help='write the tables here')
    ap.add_argument('--check', action='store_true', help='exit 1 when a structural target is missed')
    ap.add_argument('--no-strace', dest='strace', action='store_false', help='skip the strace run')
    a = ap.parse_args()
    if not a.root and not a.live:
        ap.error('give --root DIR and/or --live')
    if a.strace and not shutil.which('strace'):
        sys.stderr.write('bench: strace not found, files opened are not counted\n')
        a.strace = False
    a.llmtune = os.path.abspath(a.llmtune)
    report = {'runs': a.runs, 'rule': a.rule, 'uname': ' '.join(os.uname()), 'cpus_here': os.cpu_count(),
              'roots': []}
    for root in a.root:
        report['roots'].append(bench_root(a, os.path.abspath(root)))
    if a.live:
        report['roots'].append(bench_root(a, '/', live=True))
    report['scaling'] = scaling(report)
    text = fmt_table(report, a.rule)
    print(text)
    if a.markdown:
        with open(a.markdown, 'w') as f:
            f.write(text + '\n')
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(report, f, indent=1)
    if a.check:
        problems = check(a, report)
        for p in problems:
            print('bench: target missed: ' + p, file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == '__main__':
    sys.exit(main())
