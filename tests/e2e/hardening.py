#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Hardening of apply, on copies of a fixture root (docs/RELIABILITY.md):

  crash   SIGKILL at every crash point of a multi-change apply (LLMTUNE_TEST_KILL_AT=N: right after
          each intent record, between writing a temporary file and renaming it, after each change
          and before its outcome). After each kill: every file is wholly before or wholly after;
          verify reports the unfinished run (exit 2) with an intact chain; the next apply recovers
          it and completes the run (the tree then equals an uninterrupted apply's); verify is clean;
          rollback --all restores the original tree exactly.
  faults  every change of the run made to fail with ENOSPC, EROFS, EACCES and EIO
          (LLMTUNE_TEST_FAULT=TARGET:ERRNO): exit 1, the error names the target and the reason,
          the tree is as before, verify is clean.
  confine symbolic links planted at a managed path, in a parent directory and at the change log;
          a rule whose remedy points outside its kind's area; a read link that tries to leave the
          root; and every path a full apply changed is one its kinds may write.
  concur  two applies at once (the second fails cleanly, or waits with --wait), a rollback during
          an apply (refused), verify during an apply (waits, then sees the finished run).

    hardening.py --llmtune BIN --roots DIR [--only crash,faults,confine,concur]
"""
import argparse
import json
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)
from llmtunerun import LOG_DIR, Tool, wait_stopped  # noqa: E402  (tests/lib/llmtunerun.py)

ROOT = 'dgx-a100'
PROFILE = 'a100-8x'
# A multi-change run with every kind of change: files (new and edited twice), runtime values, a
# command on an image in the tree, a command skipped under --root, a remount, a swapoff.
RULES = ['thp-enabled', 'nouveau-blacklisted', 'nccl-conf-keys', 'numa-balancing', 'raid-ext4-stride',
         'raid-noatime', 'swap-active', 'swap-fstab']
TEMP_RE = re.compile(r'^\..+\.llmtune-\d+$')
ERRNOS = {'ENOSPC': 'No space left on device', 'EROFS': 'Read-only file system',
          'EACCES': 'Permission denied', 'EIO': 'Input/output error'}

figures = {}


def walk(top):
    """rel -> lstat result for every entry below TOP."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, top)] = os.lstat(p)
    return out


def read(top, rel):
    p = os.path.join(top, rel)
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode):
        return ('link', os.readlink(p))
    if stat.S_ISDIR(st.st_mode):
        return ('dir', stat.S_IMODE(st.st_mode))
    with open(p, 'rb') as f:
        return ('file', stat.S_IMODE(st.st_mode), f.read())


def ignored(rel, ignore):
    return any(rel == i or rel.startswith(i + os.sep) for i in ignore)


def tree_diff(a, b, ignore=()):
    """Paths whose kind, mode, content or link target differ between trees A and B (cheap: entries
    with equal size, mode and mtime are taken as equal; copies keep mtimes)."""
    wa, wb = walk(a), walk(b)
    diffs = []
    for rel in sorted(set(wa) | set(wb)):
        if ignored(rel, ignore):
            continue
        sa, sb = wa.get(rel), wb.get(rel)
        if sa is None or sb is None:
            diffs.append(rel)
            continue
        if (sa.st_mode, sa.st_size, sa.st_mtime_ns) == (sb.st_mode, sb.st_size, sb.st_mtime_ns):
            continue
        if stat.S_ISDIR(sa.st_mode) and stat.S_ISDIR(sb.st_mode) and sa.st_mode == sb.st_mode:
            continue
        if read(a, rel) != read(b, rel):
            diffs.append(rel)
    return diffs


class Fixture:
    """The pristine fixture, a final tree made by one uninterrupted apply, and the plan."""

    def __init__(self, tool, roots, tmp):
        self.tool = tool
        self.tmp = tmp
        self.pristine = os.path.join(tmp, 'pristine')
        shutil.copytree(os.path.join(roots, ROOT), self.pristine, symlinks=True)
        self.ignore = [LOG_DIR] + [os.sep.join(LOG_DIR.split(os.sep)[:i]) for i in range(1, 3)
                                   if not os.path.exists(os.path.join(self.pristine, *LOG_DIR.split(os.sep)[:i]))]
        self.images = [rel for rel in walk(self.pristine) if rel.startswith('dev' + os.sep + 'md')]
        rc, out, err = tool.run(self.pristine, 'plan', '--profile', PROFILE, '--json', '--rule', *RULES)
        check(rc == 0, f'plan of the multi-change run ({err.strip()[:200]})')
        self.plan = json.loads(out)['changes'] if rc == 0 else []
        self.changes = [c for c in self.plan if c['type'] != 'note']
        self.md_before = tool.run(self.pristine, 'facts', 'md')[1]
        self.final = os.path.join(tmp, 'final')
        shutil.copytree(self.pristine, self.final, symlinks=True)
        points = os.path.join(tmp, 'points')
        rc, out, err = tool.run(self.final, *self.apply_args(), env={'LLMTUNE_TEST_POINTS': points})
        check(rc == 0, f'uninterrupted apply ({err.strip()[:200]})')
        self.points = open(points).read().splitlines() if os.path.exists(points) else []
        self.md_after = tool.run(self.final, 'facts', 'md')[1]
        # States a path may be in while a run is under way: before, after, or what one change of
        # the run wrote (a file changed twice passes through its first change's after).
        self.allowed = {}
        for c in self.plan:
            if c['type'] == 'file' and c.get('after') is not None:
                self.allowed.setdefault(c['target'].lstrip('/'), []).append(c['after'].encode())
        self.work = os.path.join(tmp, 'work')
        self.fresh()

    def apply_args(self, *extra):
        return ['apply', '--profile', PROFILE, *extra, '--rule', *RULES]

    def fresh(self):
        if os.path.exists(self.work):
            shutil.rmtree(self.work)
        shutil.copytree(self.pristine, self.work, symlinks=True)

    def diff_from(self, ref):
        return tree_diff(ref, self.work, self.ignore + self.images)

    def torn(self):
        """Paths of the working tree in a state that is neither before, after nor a step's after."""
        bad, temps = [], []
        for rel in self.diff_from(self.pristine):
            if TEMP_RE.match(os.path.basename(rel)):
                temps.append(rel)
                continue
            p = os.path.join(self.work, rel)
            if not os.path.lexists(p):
                if os.path.lexists(os.path.join(self.final, rel)):
                    bad.append(rel + ' (missing)')
                continue
            now = read(self.work, rel)
            ok = os.path.lexists(os.path.join(self.final, rel)) and now == read(self.final, rel)
            if not ok and now[0] == 'file':
                ok = now[2] in self.allowed.get(rel, [])
            if not ok:
                bad.append(rel)
        return bad, temps


def sampled(n_points):
    """Crash points to kill at: every one, or with LLMTUNE_CRASH_STRIDE=K (tests/run-all.sh's ASan
    pass, where each run is several times slower) every K-th plus the last."""
    stride = max(1, int(os.environ.get('LLMTUNE_CRASH_STRIDE', '1')))
    picked = list(range(1, n_points + 1, stride))
    if n_points and picked[-1] != n_points:
        picked.append(n_points)
    return picked


def crash(fx):
    tool = fx.tool
    n_points = len(fx.points)
    check(n_points >= 3 * len([c for c in fx.changes if c['type'] != 'command']),
          f'{n_points} crash points in a run of {len(fx.changes)} changes')
    survived = 0
    for n in sampled(n_points):
        what = fx.points[n - 1].split(' ', 1)[1]
        tag = f'kill at point {n} ({what})'
        rc, out, err = tool.run(fx.work, *fx.apply_args(), env={'LLMTUNE_TEST_KILL_AT': str(n)})
        if not check(rc == -signal.SIGKILL, f'{tag}: apply was killed (rc {rc})'):
            fx.fresh()
            continue
        bad, temps = fx.torn()
        ok = check(not bad, f'{tag}: every target wholly before or after (torn: {bad[:5]})')
        rc, out, err = tool.run(fx.work, 'verify', '--json')
        v = json.loads(out) if out.strip() else {}
        ok &= check(rc == 2 and v.get('status') == 'unfinished' and v.get('unfinished') and v['chain']['intact'],
                    f'{tag}: verify reports the unfinished run, chain intact (rc {rc}, {v.get("status")})')
        rc, out, err = tool.run(fx.work, *fx.apply_args())
        ok &= check(rc == 0 and 'recovered' in err, f'{tag}: the next apply recovers and completes the run '
                    f'(rc {rc}: {err.strip()[:200]})')
        left = [t for t in tree_diff(fx.pristine, fx.work, fx.ignore) if TEMP_RE.match(os.path.basename(t))]
        ok &= check(not left, f'{tag}: no temporary file is left ({left[:3]})')
        d = fx.diff_from(fx.final)
        ok &= check(not d and tool.run(fx.work, 'facts', 'md')[1] == fx.md_after,
                    f'{tag}: the tree equals an uninterrupted run\'s (differs: {d[:5]})')
        rc, out, err = tool.run(fx.work, 'verify')
        ok &= check(rc == 0, f'{tag}: verify is clean after recovery ({(out + err).strip()[-200:]})')
        rc, out, err = tool.run(fx.work, 'rollback', '--all')
        ok &= check(rc == 0, f'{tag}: rollback --all ({err.strip()[:200]})')
        d = fx.diff_from(fx.pristine)
        ok &= check(not d and tool.run(fx.work, 'facts', 'md')[1] == fx.md_before,
                    f'{tag}: after rollback the tree equals the original (differs: {d[:5]})')
        rc, out, err = tool.run(fx.work, 'verify')
        ok &= check(rc == 0, f'{tag}: verify is clean after rollback')
        survived += ok
        if not ok:
            fx.fresh()
    figures['kill points'] = n_points
    figures['kill points tried'] = len(sampled(n_points))
    figures['kill points survived'] = survived


    # Rollback: killed at each of its crash points, the next rollback recovers and completes it.
    rc, out, err = tool.run(fx.work, *fx.apply_args())
    points = os.path.join(fx.tmp, 'rollback-points')
    rc2, out, err = tool.run(fx.work, 'rollback', '--all', env={'LLMTUNE_TEST_POINTS': points})
    check(rc == 0 and rc2 == 0, 'apply and an uninterrupted rollback')
    rb_points = open(points).read().splitlines() if os.path.exists(points) else []
    survived_rb = 0
    for n in sampled(len(rb_points)):
        tag = f'rollback killed at point {n} ({rb_points[n - 1].split(" ", 1)[1]})'
        rc, out, err = tool.run(fx.work, *fx.apply_args())
        rc2, out, err = tool.run(fx.work, 'rollback', '--all', env={'LLMTUNE_TEST_KILL_AT': str(n)})
        ok = check(rc == 0 and rc2 == -signal.SIGKILL, f'{tag}: killed (rc {rc}, {rc2})')
        rc, out, err = tool.run(fx.work, 'verify', '--json')
        v = json.loads(out) if out.strip() else {}
        ok &= check(rc == 2 and v.get('unfinished') and v['chain']['intact'],
                    f'{tag}: verify reports the unfinished rollback (rc {rc}, {v.get("status")})')
        rc, out, err = tool.run(fx.work, 'rollback', '--all')
        ok &= check(rc == 0 and 'recovered' in err, f'{tag}: the next rollback recovers and completes '
                    f'(rc {rc}: {err.strip()[:200]})')
        d = fx.diff_from(fx.pristine)
        ok &= check(not d and tool.run(fx.work, 'facts', 'md')[1] == fx.md_before,
                    f'{tag}: the tree equals the original (differs: {d[:5]})')
        rc, out, err = tool.run(fx.work, 'verify')
        ok &= check(rc == 0, f'{tag}: verify is clean ({(out + err).strip()[-200:]})')
        survived_rb += ok
        if not ok:
            fx.fresh()
    figures['rollback kill points'] = len(rb_points)
    figures['rollback kill points tried'] = len(sampled(len(rb_points)))
    figures['rollback kill points survived'] = survived_rb


def faults(fx):
    tool = fx.tool
    targets = []
    for c in fx.changes:
        t = c['command'].split()[0] if c['type'] == 'command' else c['target']
        if t not in targets:
            targets.append(t)
    injected = 0
    for t in targets:
        for name, text in ERRNOS.items():
            tag = f'{name} on {t}'
            rc, out, err = tool.run(fx.work, *fx.apply_args(), env={'LLMTUNE_TEST_FAULT': f'{t}:{name}'})
            injected += 1
            ok = check(rc == 1 and t in err and text in err, f'{tag}: exit 1 naming the target and the reason '
                       f'(rc {rc}: {err.strip()[:160]})')
            d = fx.diff_from(fx.pristine)
            ok &= check(not d and tool.run(fx.work, 'facts', 'md')[1] == fx.md_before,
                        f'{tag}: every change of the run undone (differs: {d[:5]})')
            rc, out, err = tool.run(fx.work, 'verify', '--json')
            v = json.loads(out) if out.strip() else {}
            ok &= check(rc == 0 and v.get('status') == 'clean' and v['chain']['intact'],
                        f'{tag}: the log is consistent and nothing is in force (rc {rc}, {v.get("status")})')
            if not ok:
                fx.fresh()
    figures['faults injected'] = injected
    figures['fault targets'] = len(targets)


def confine(fx):
    tool = fx.tool
    cases = 0
    # A FILE change target: the sysctl drop-in of numa-balancing.
    dropin = next(c['target'] for c in fx.changes if c['type'] == 'file' and '/sysctl.d/' in c['target'])
    rel = dropin.lstrip('/')
    w = fx.work
    shadow = os.path.join(w, 'etc', 'shadow')
    with open(shadow, 'w') as f:
        f.write('root:*:19000:0:99999:7:::\n')
    os.chmod(shadow, 0o640)
    shadow_before = open(shadow).read()
    base_ignore = fx.ignore + fx.images + ['etc/shadow']
    parent = os.path.dirname(rel)
    if not os.path.isdir(os.path.join(w, parent)):
        os.makedirs(os.path.join(w, parent))
        base_ignore.append(parent)

    def refused(tag, must_say='symbolic link', extra_ignore=()):
        nonlocal cases
        cases += 1
        rc, out, err = tool.run(w, *fx.apply_args())
        check(rc == 1 and must_say in err, f'{tag}: refused with a clear error (rc {rc}: {err.strip()[:200]})')
        check(open(shadow).read() == shadow_before, f'{tag}: /etc/shadow untouched')
        d = tree_diff(fx.pristine, w, base_ignore + list(extra_ignore))
        check(not d, f'{tag}: nothing else changed (differs: {d[:5]})')
        rc, out, err = tool.run(w, 'verify')
        check(rc == 0, f'{tag}: the log is consistent ({(out + err).strip()[-200:]})')

    # 1. a link at the managed path, to the tree's /etc/shadow (absolute: resolved in the root)
    os.symlink('/etc/shadow', os.path.join(w, rel))
    refused('link at the sysctl drop-in -> /etc/shadow', extra_ignore=[rel])
    check(dropin in tool.run(w, *fx.apply_args())[2], 'the error names the drop-in')
    os.unlink(os.path.join(w, rel))
    # 2. the same, relative
    os.symlink('../shadow', os.path.join(w, rel))
    refused('link at the sysctl drop-in -> ../shadow', extra_ignore=[rel])
    os.unlink(os.path.join(w, rel))
    # 3. a parent directory replaced by a link to another directory of the tree
    d = os.path.dirname(os.path.join(w, rel))
    os.rename(d, d + '.real')
    os.makedirs(os.path.join(w, 'elsewhere'), exist_ok=True)
    os.symlink('/elsewhere', d)
    drel = os.path.relpath(d, w)
    refused('parent directory etc/sysctl.d -> /elsewhere', extra_ignore=[drel, drel + '.real', 'elsewhere'])
    check(os.listdir(os.path.join(w, 'elsewhere')) == [], 'nothing was written through the parent link')
    # 4. the same link trying to leave the root
    os.unlink(d)
    os.symlink('/../../../../../../tmp', d)
    refused('parent directory -> /../../../tmp (escape)', extra_ignore=[drel, drel + '.real', 'elsewhere'])
    os.unlink(d)
    os.rename(d + '.real', d)
    shutil.rmtree(os.path.join(w, 'elsewhere'))
    # 5. the change log's directory planted as a link
    logdir = os.path.join(w, LOG_DIR)
    if os.path.isdir(logdir):
        shutil.rmtree(logdir)
    os.makedirs(os.path.join(w, 'elsewhere'))
    os.makedirs(os.path.dirname(logdir), exist_ok=True)
    os.symlink('/elsewhere', logdir)
    cases += 1
    rc, out, err = tool.run(w, *fx.apply_args())
    check(rc == 1 and 'symbolic link' in err and os.listdir(os.path.join(w, 'elsewhere')) == [],
          f'change log directory planted as a link: refused, nothing written ({err.strip()[:200]})')
    os.unlink(logdir)
    shutil.rmtree(os.path.join(w, 'elsewhere'))
    # 6. a read that tries to leave the root through a link: it is resolved inside the tree
    cases += 1
    with tempfile.TemporaryDirectory(prefix='llmtune-outside-') as outside:
        with open(os.path.join(outside, 'enabled'), 'w') as f:
            f.write('[always] ESCAPED never\n')
        thp = os.path.join(w, 'sys/kernel/mm/transparent_hugepage/enabled')
        saved = read(w, 'sys/kernel/mm/transparent_hugepage/enabled')
        os.unlink(thp)
        os.symlink('../../../../../../../..' + outside + '/enabled', thp)
        rc, out, err = tool.run(w, 'facts', '--json', 'thp')
        check('ESCAPED' not in out + err and '"thp.enabled"' in out,
              f'a link out of the root is resolved inside it (thp.enabled: {out.strip()[:160]})')
        os.unlink(thp)
        with open(thp, 'wb') as f:
            f.write(saved[2])
        os.chmod(thp, saved[1])
    # 7. a rule whose remedy writes outside its kind's area (a "sysfs" value at /etc/shadow)
    cases += 1
    with tempfile.TemporaryDirectory(prefix='llmtune-data-') as data:
        src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        shutil.copytree(os.path.join(src, 'rules'), os.path.join(data, 'rules'))
        shutil.copytree(os.path.join(src, 'profiles'), os.path.join(data, 'profiles'))
        with open(os.path.join(data, 'rules', 'zz-hostile.ini'), 'w') as f:
            f.write('[hostile-shadow]\ntitle = hostile\narea = memory\nseverity = warning\nrationale = x\n'
                    'source = x\ncheck = thp.enabled == nonsense\nremedy = sysfs\n'
                    'remedy.path = /etc/shadow\nremedy.value = pwned\n')
        rc, out, err = tool.run(w, 'apply', '--profile', PROFILE, '--rule', 'hostile-shadow',
                                env={'LLMTUNE_DATADIR': data})
        check(rc == 1 and open(shadow).read() == shadow_before and ('/etc/shadow' in err),
              f'a sysfs remedy aimed at /etc/shadow is refused (rc {rc}: {err.strip()[:200]})')
        d = tree_diff(fx.pristine, w, base_ignore)
        check(not d, f'hostile remedy: nothing changed (differs: {d[:5]})')
    os.unlink(shadow)
    if parent in base_ignore:
        os.rmdir(os.path.join(w, parent))
    # 8. what a full apply changed is what its kinds may write
    cases += 1
    allowed = ('etc' + os.sep, 'sys' + os.sep, os.path.join('proc', 'sys') + os.sep)
    tables = (os.path.join('proc', 'swaps'), os.path.join('proc', 'mounts'))
    changed = tree_diff(fx.pristine, fx.final, fx.ignore + fx.images)
    outside = [c for c in changed if not c.startswith(allowed) and c not in tables]
    check(not outside, f'a full apply writes only under /etc, /sys, /proc/sys and the tree\'s kernel tables '
          f'({len(changed)} paths changed; outside: {outside[:5]})')
    figures['confinement cases'] = cases
    fx.fresh()


def concur(fx):
    tool = fx.tool
    w = fx.work
    first = tool.popen(w, *fx.apply_args(), env={'LLMTUNE_TEST_STOP_AT': '4'})
    if not check(wait_stopped(first.pid), 'the first apply is stopped in the middle of its run'):
        first.kill()
        first.communicate()
        fx.fresh()
        return
    rc, out, err = tool.run(w, *fx.apply_args())
    check(rc == 1 and 'another llmtune apply or rollback is running' in err,
          f'a second apply fails cleanly (rc {rc}: {err.strip()[:160]})')
    rc, out, err = tool.run(w, 'rollback', '--all')
    check(rc == 1 and 'another llmtune apply or rollback is running' in err,
          f'a rollback during the apply is refused (rc {rc}: {err.strip()[:160]})')
    verify = tool.popen(w, 'verify', '--json')
    waiter = tool.popen(w, *fx.apply_args('--wait'))
    time.sleep(1.0)
    check(verify.poll() is None and waiter.poll() is None, 'verify and apply --wait wait for the running apply')
    os.kill(first.pid, signal.SIGCONT)
    out, err = first.communicate(timeout=120)
    check(first.returncode == 0, f'the first apply completes after SIGCONT ({err.strip()[:160]})')
    out, err = verify.communicate(timeout=120)
    v = json.loads(out) if out.strip() else {}
    check(verify.returncode == 0 and v.get('status') == 'clean' and not v.get('unfinished'),
          f'verify during the apply sees the finished run: consistent and clean ({v.get("status")})')
    out, err = waiter.communicate(timeout=120)
    check(waiter.returncode == 0 and '0 changed' in out,
          f'apply --wait then finds nothing to do ({waiter.returncode}: {(out + err).strip()[-160:]})')
    d = fx.diff_from(fx.final)
    check(not d, f'the tree equals one uninterrupted run\'s (differs: {d[:5]})')
    rc, out, err = tool.run(w, 'rollback', '--all')
    check(rc == 0 and not fx.diff_from(fx.pristine), 'rollback --all after the concurrent runs restores the tree')
    figures['concurrency cases'] = 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--llmtune-test', required=True, help='llmtune-test: the runs with a crash point or a fault')
    ap.add_argument('--roots', required=True)
    ap.add_argument('--only', default='crash,faults,confine,concur')
    a = ap.parse_args()
    tool = Tool(os.path.abspath(a.llmtune), os.path.abspath(a.llmtune_test))
    start = time.time()
    with tempfile.TemporaryDirectory(prefix='llmtune-hard-') as tmp:
        fx = Fixture(tool, a.roots, tmp)
        for part in a.only.split(','):
            t = time.time()
            print(f'== {part}', flush=True)
            {'crash': crash, 'faults': faults, 'confine': confine, 'concur': concur}[part](fx)
            figures[f'seconds ({part})'] = round(time.time() - t, 1)
    for k, v in figures.items():
        print(f'figure: {k}: {v}')
    return finish(f'{time.time() - start:.0f} s')


if __name__ == '__main__':
    sys.exit(main())
