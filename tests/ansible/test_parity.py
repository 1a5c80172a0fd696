#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Check mode is the truth of the real run (issue 31 item 1), and a failed run with params and pin
leaves neither behind (item 2). On copies of the ws-4090 fixture root, with Debian's ansible-core:

  parity: for every combination of pin (false, true), rules (all, two) and wait (unset, true,
    false), one copy of the root goes through a sequence of applies (no params, params A, params A
    again, params B) and rollbacks (a conflict planted: refused, then forced; then all), each step
    first in check mode and then for real, with --diff. The check-mode result equals the real one:
    changed, failed, changes_count, reboot_required, profile, pinned, the change records (status
    planned for changed) and the diff. Every step's real result is also what it must be (so two
    runs that both fail the same way do not pass as parity).
  failed: an apply with params and pin whose write fails (the tree's THP file does not offer the
    value) is not changed, and leaves the site profile and llmtune.conf as they were.

    test_parity.py --llmtune BIN --roots DIR [parity|failed]

Without ansible-playbook it skips (exit 77), or fails when LLMTUNE_REQUIRE_ALL=1.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
from checklib import check, failures  # noqa: E402  (tests/lib/checklib.py)
from test_ansible import Runner, tree, differences, without_ansible  # noqa: E402

ROOT = 'ws-4090'
PROFILE = 'rtx4090-ws'
SITE = 'etc/llmtune/profiles.d/ansible-%s.ini' % PROFILE
CONF = 'etc/llmtune/llmtune.conf'
GOV0 = 'sys/devices/system/cpu/cpufreq/policy0/scaling_governor'
PARAMS_A = {'thp_enabled': 'never'}
PARAMS_B = {'thp_enabled': 'always'}
COMPARED = ('changed', 'failed', 'msg', 'changes_count', 'reboot_required', 'profile', 'pinned', 'rolled_back',
            'targets', 'conflicts')


def combos():
    for pin in (False, True):
        for rules in (None, ['thp-enabled', 'cpu-governor']):
            for wait in (None, True, False):
                yield pin, rules, wait


def steps(pin, rules, wait, root):
    """(label, module args or a planting task, what the real result must show) in order."""
    base = dict(state='applied', profile=PROFILE, pin=pin)
    if rules:
        base['rules'] = rules
    if wait is not None:
        base['wait'] = wait
    out = []
    for label, params, want in (('apply', None, 'changed'), ('apply params A', PARAMS_A, 'changed'),
                                ('apply params A again', PARAMS_A, 'unchanged'),
                                ('apply params B', PARAMS_B, 'changed')):
        args = dict(base)
        if params:
            args['params'] = params
        out.append((label, args, want))
    rb = dict(state='rolled_back', rollback='last_run')
    if wait is not None:
        rb['wait'] = wait
    out.append(('plant a conflict', {'copy': os.path.join(root, GOV0), 'content': 'schedutil\n'}, None))
    out.append(('rollback over the conflict', dict(rb, rollback='all', force=False), 'refused'))
    out.append(('rollback forced', dict(rb, rollback='all', force=True), 'changed'))
    out.append(('rollback again', dict(rb, rollback='all', force=True), 'unchanged'))
    return out


def module_task(name, llmtune, root, args, check_mode):
    a = dict(binary=llmtune, root=root)
    a.update(args)
    return {'name': name, 'llmtune.llmtune.llmtune': a, 'check_mode': check_mode, 'diff': True,
            'ignore_errors': True}


def comparable(res, check_mode):
    """The result as the real run states it: check mode's planned is changed, would-restore is
    restored, 'would be refused' is 'failed'."""
    out = {k: res.get(k) for k in COMPARED}
    out['failed'] = bool(res.get('failed'))
    if out['msg'] and check_mode:
        out['msg'] = out['msg'].replace('would be refused', 'failed').replace('would fail at', 'failed at')
    if out['msg']:
        out['msg'] = out['msg'].split(' (nothing was changed)')[0].split(' (the changes of this run were undone)')[0]
    if not out['failed']:
        out['msg'] = None   # Ansible's own "All items completed" and the like
    real_status = {'planned': 'changed', 'would-restore': 'restored'} if check_mode else {}
    for key in ('changes', 'targets'):
        out[key] = [dict(c, status=real_status.get(c.get('status'), c.get('status'))) for c in res.get(key) or []]
    out['diff'] = res.get('diff')
    return out


def first_difference(a, b):
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            va, vb = a.get(k), b.get(k)
            if isinstance(va, list) and isinstance(vb, list):
                for i, (x, y) in enumerate(zip(va, vb)):
                    if x != y:
                        return '%s[%d]: check %s, real %s' % (k, i, json.dumps(x)[:400], json.dumps(y)[:400])
                return '%s: check has %d, real %d' % (k, len(va), len(vb))
            return '%s: check %s, real %s' % (k, json.dumps(va)[:400], json.dumps(vb)[:400])
    return None


def expect(label, want, real, pin, root):
    what = 'applied' if label.startswith('apply') else 'rolled_back'
    if want == 'changed':
        check(not real['failed'] and real['changed'] is True, '%s: %s must change: %s' % (root, label, real['msg']))
    elif want == 'unchanged':
        check(not real['failed'] and real['changed'] is False, '%s: %s must change nothing: changed %s, %s' % (
            root, label, real['changed'], real['msg']))
    elif want == 'refused':
        check(real['failed'] and GOV0.split('/', 1)[1] in json.dumps(real['conflicts']),
              '%s: %s must be refused naming the planted conflict: %s' % (root, label, real['msg']))
    if what == 'applied' and not real['failed']:
        profile = 'ansible-' + PROFILE if 'params' in label else PROFILE
        check(real['profile'] == profile and real['pinned'] == (profile if pin else None),
              '%s: %s: profile %s pinned %s' % (root, label, real['profile'], real['pinned']))
        rules = {c['rule'] for c in real['changes']}
        check(('profile.params' in rules) == (label in ('apply params A', 'apply params B')),
              '%s: %s: the site profile record: %s' % (root, label, sorted(rules)))


def parity(run, llmtune, roots, top):
    tasks, plan = [], []
    for n, (pin, rules, wait) in enumerate(combos()):
        root = os.path.join(top, 'root%d' % n)
        shutil.copytree(os.path.join(roots, ROOT), root, symlinks=True)
        for i, (label, args, want) in enumerate(steps(pin, rules, wait, root)):
            name = 'r%d s%d %s' % (n, i, label)
            if want is None:
                tasks.append({'name': name, 'ansible.builtin.copy': {'dest': args['copy'], 'content': args['content'],
                                                                      'mode': '0644'}})
                continue
            tasks.append(module_task(name + ' (check)', llmtune, root, args, True))
            tasks.append(module_task(name + ' (real)', llmtune, root, args, False))
            plan.append((name, label, want, pin, root))
    rc, doc = run.play(tasks)
    got = {}
    for play in (doc or {}).get('plays', []):
        for t in play.get('tasks', []):
            got[t['task']['name']] = t['hosts'].get('localhost', {})
    check(len(plan) == 12 * 7, 'parity: %d steps' % len(plan))
    for name, label, want, pin, root in plan:
        c, r = got.get(name + ' (check)'), got.get(name + ' (real)')
        if not check(c is not None and r is not None, 'parity: %s did not run' % name):
            continue
        cc, rr = comparable(c, True), comparable(r, False)
        diff = first_difference(cc, rr)
        check(diff is None, 'parity: %s (pin, rules, wait of %s): check mode differs from the real run: %s' % (
            name, os.path.basename(root), diff))
        expect(label, want, rr, pin, name)
    # What check mode reported was not done by check mode: the last real rollback restored the
    # tree (nothing was left behind by the check runs in between).
    for n in range(12):
        root = os.path.join(top, 'root%d' % n)
        left = [k for k in differences(tree(os.path.join(roots, ROOT), skip_log=True), tree(root, skip_log=True))
                if not os.path.isdir(os.path.join(root, k)) and k != GOV0]
        check(not left, 'parity: root%d after rolling everything back differs: %s' % (n, left[:5]))


def failed(run, llmtune, roots, top):
    """The write fails (the tree's THP file offers no 'never'): changed false, nothing left."""
    root = os.path.join(top, 'failroot')
    shutil.copytree(os.path.join(roots, ROOT), root, symlinks=True)
    # A pin and site profile from an earlier run that must survive the failed one unchanged.
    rc, res = run.module(root, state='applied', profile=PROFILE, params={'thp_enabled': 'always'}, pin=True)
    check(rc == 0 and res.get('changed') is True, 'failed: the first apply: %s' % res.get('msg'))
    with open(os.path.join(root, SITE)) as f:
        site_before = f.read()
    with open(os.path.join(root, CONF)) as f:
        conf_before = f.read()
    with open(os.path.join(root, 'sys/kernel/mm/transparent_hugepage/enabled'), 'w') as f:
        f.write('[always] madvise\n')
    before = tree(root, skip_log=True)
    rc, res = run.module(root, state='applied', profile=PROFILE, params={'thp_enabled': 'never'}, pin=True)
    with open(os.path.join(root, SITE)) as f:
        site_after = f.read()
    check(rc != 0 and res.get('failed') is True and res.get('changed') is False and 'Invalid argument' in res.get('msg', ''),
          'failed: the apply whose write fails: exit %d, changed %s, %s' % (rc, res.get('changed'), res.get('msg')))
    check(site_after == site_before and 'thp_enabled = always' in site_after,
          'failed: the site profile was left holding the failed run\'s value:\n%s' % site_after)
    with open(os.path.join(root, CONF)) as f:
        check(f.read() == conf_before, 'failed: llmtune.conf changed')
    check(tree(root, skip_log=True) == before, 'failed: the failed run left changes: %s' % differences(
        before, tree(root, skip_log=True))[:5])
    # On a fresh tree (no earlier site profile, no llmtune.conf) the failed run leaves neither.
    root = os.path.join(top, 'failroot2')
    shutil.copytree(os.path.join(roots, ROOT), root, symlinks=True)
    with open(os.path.join(root, 'sys/kernel/mm/transparent_hugepage/enabled'), 'w') as f:
        f.write('[always] madvise\n')
    rc, res = run.module(root, state='applied', profile=PROFILE, params={'thp_enabled': 'never'}, pin=True)
    check(rc != 0 and res.get('changed') is False and not os.path.exists(os.path.join(root, SITE)) and
          not os.path.exists(os.path.join(root, CONF)),
          'failed: on a fresh tree the failed run left %s' % [p for p in (SITE, CONF)
                                                              if os.path.exists(os.path.join(root, p))])
    audit = run.module(root, state='audited')[1]
    check(audit.get('profile') != 'ansible-' + PROFILE, 'failed: later audits use the failed run\'s profile')


def refused(run, llmtune, roots, top):
    """A run apply refuses before writing (etc/tmpfiles.d a symbolic link) fails in check mode
    too, with the reason the real run gives (issue 31 item 5)."""
    root = os.path.join(top, 'refroot')
    shutil.copytree(os.path.join(roots, ROOT), root, symlinks=True)
    outside = os.path.join(top, 'outside')
    os.makedirs(outside)
    shutil.rmtree(os.path.join(root, 'etc/tmpfiles.d'), ignore_errors=True)
    os.symlink(outside, os.path.join(root, 'etc/tmpfiles.d'))
    before = tree(root)
    args = dict(state='applied', profile=PROFILE, params={'thp_enabled': 'never'}, pin=True)
    rc, chk = run.module(root, ['--check'], **args)
    check(tree(root) == before, 'refused: check mode changed the tree')
    rc2, real = run.module(root, **args)
    words = 'a symbolic link is at that path or in a directory above it'
    check(rc != 0 and chk.get('failed') and words in chk.get('msg', '') and 'would fail at' in chk.get('msg', ''),
          'refused: check mode did not foresee the refusal: exit %d, %s' % (rc, chk.get('msg')))
    check(rc2 != 0 and real.get('failed') and real.get('changed') is False and words in real.get('msg', ''),
          'refused: the real run: exit %d, %s' % (rc2, real.get('msg')))
    c, r = comparable(chk, True), comparable(real, False)
    check(c['msg'] == r['msg'], 'refused: check mode says %r, the real run %r' % (c['msg'], r['msg']))
    check(os.listdir(outside) == [] and not os.path.exists(os.path.join(root, SITE)),
          'refused: something was written: %s' % os.listdir(outside))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('part', choices=['parity', 'failed', 'refused'])
    args = ap.parse_args()
    skip = without_ansible()
    if skip is not None:
        return skip
    llmtune = os.path.abspath(args.llmtune)
    top = tempfile.mkdtemp(prefix='llmtune-ansible-')
    try:
        run = Runner(top, llmtune)
        {'parity': parity, 'failed': failed, 'refused': refused}[args.part](run, llmtune, args.roots, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    for p in failures:
        print('FAIL: ' + p)
    if not failures:
        print('ok: ansible %s on copies of %s' % (args.part, ROOT))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
