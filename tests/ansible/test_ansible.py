#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
The Ansible collection (packaging/ansible) against localhost (connection: local) on a temporary
copy of the dgx-a100 fixture root, with Debian's ansible-core:

  check mode reports what would change and changes nothing; --diff shows the file diffs; the
  first apply is changed, the second is not; state=audited returns the findings (and fails the
  task with fail_on_findings); rolled_back restores the tree; failures name the root and the
  reason; the role applies and notifies its reboot handler only on a changing run.

    test_ansible.py --llmtune BIN --roots DIR

Without ansible-playbook it skips (exit 77), or fails when LLMTUNE_REQUIRE_ALL=1.
"""
import argparse
import hashlib
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, failures  # noqa: E402  (tests/lib/checklib.py)

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTION = os.path.join(os.path.dirname(os.path.dirname(HERE)), 'packaging', 'ansible')
ROOT = 'dgx-a100'
PROFILE = 'a100-8x'
LOG_DIR = os.path.join('var', 'lib', 'llmtune')


def tree(top, skip_log=False):
    """Path -> (kind, content digest or link target) of every entry; the change log optional."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, top)
        if skip_log and (rel_dir == LOG_DIR or rel_dir.startswith(LOG_DIR + os.sep)):
            continue
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, top)
            if skip_log and rel == LOG_DIR:
                continue
            if os.path.islink(p):
                snap[rel] = ('link', os.readlink(p))
            elif os.path.isdir(p):
                snap[rel] = ('dir',)
            else:
                with open(p, 'rb') as f:
                    snap[rel] = ('file', hashlib.sha256(f.read()).hexdigest(), os.stat(p).st_mode & 0o7777)
    return snap


def differences(a, b):
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


class Runner:
    def __init__(self, top, llmtune):
        self.top, self.llmtune = top, llmtune
        cols = os.path.join(top, 'collections', 'ansible_collections', 'llmtune')
        os.makedirs(cols)
        os.symlink(COLLECTION, os.path.join(cols, 'llmtune'))
        cfg = os.path.join(top, 'ansible.cfg')   # never a stray ansible.cfg of the working directory
        with open(cfg, 'w') as f:
            f.write('[defaults]\n')
        self.inventory = os.path.join(top, 'inventory.ini')
        with open(self.inventory, 'w') as f:
            f.write('localhost ansible_connection=local ansible_python_interpreter=%s\n' % sys.executable)
        self.env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(top, 'collections'),
                        ANSIBLE_HOME=os.path.join(top, 'ansible-home'), ANSIBLE_LOCAL_TEMP=os.path.join(top, 'tmp-l'),
                        ANSIBLE_REMOTE_TEMP=os.path.join(top, 'tmp-r'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
                        ANSIBLE_RETRY_FILES_ENABLED='0', ANSIBLE_GATHERING='explicit', ANSIBLE_CONFIG=cfg,
                        ANSIBLE_CALLBACK_PLUGINS=os.path.join(HERE, 'callback_plugins'),
                        ANSIBLE_DEPRECATION_WARNINGS='0', ANSIBLE_LOCALHOST_WARNING='0', LC_ALL='C.UTF-8')
        self.n = 0

    def play(self, tasks, extra=(), callback='llmtune_json', roles=None):
        """Run one play on localhost; returns (exit status, parsed JSON or text output)."""
        self.n += 1
        path = os.path.join(self.top, 'play%d.yml' % self.n)
        play = {'hosts': 'localhost', 'gather_facts': False}
        if tasks:
            play['tasks'] = tasks
        if roles:
            play['roles'] = roles
        with open(path, 'w') as f:
            json.dump([play], f, indent=1)   # JSON is YAML
        env = dict(self.env, ANSIBLE_STDOUT_CALLBACK=callback)
        r = subprocess.run(['ansible-playbook', '-i', self.inventory, path] + list(extra), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1800)  # a hang guard only: a play of many tasks on a loaded 2-core machine takes minutes
        out = r.stdout.decode('utf-8', 'replace')
        if callback == 'llmtune_json':
            try:
                return r.returncode, json.loads(out)
            except ValueError:
                failures.append('ansible-playbook printed no JSON (exit %d): %s %s' % (
                    r.returncode, out[-2000:], r.stderr.decode()[-2000:]))
                return r.returncode, None
        return r.returncode, out + r.stderr.decode('utf-8', 'replace')

    def module(self, root, extra=(), **params):
        args = dict(binary=self.llmtune, root=root)
        args.update(params)
        rc, doc = self.play([{'name': 'llmtune', 'llmtune.llmtune.llmtune': args}], extra)
        return rc, results(doc).get('llmtune', {})


def results(doc):
    """Task name -> localhost's result, over every play (handlers included)."""
    out = {}
    for play in (doc or {}).get('plays', []):
        for t in play.get('tasks', []):
            # Role tasks are named "ROLE : NAME".
            out[t['task']['name'].split(' : ')[-1]] = t['hosts'].get('localhost', {})
    return out


def gathered_archive_checks(llmtune, arch, tree_root):
    """The archive the role fetched is a valid llmtune archive: a root whose facts are the tree's
    (but for the root field and the facts of the --exclude'd /etc/nccl.conf), which audits, and
    which `llmtune report` accepts and audits with the given profile."""
    def run_json(argv):
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        try:
            return r.returncode, json.loads(r.stdout)
        except ValueError:
            failures.append('role gather: %s printed no JSON (exit %d): %s' % (
                ' '.join(argv[1:]), r.returncode, r.stderr.decode('utf-8', 'replace')[-500:]))
            return r.returncode, None
    rc, fa = run_json([llmtune, '--root', arch, 'facts', '--json'])
    _, ft = run_json([llmtune, '--root', tree_root, 'facts', '--json'])
    if check(rc == 0 and fa is not None and ft is not None, 'role gather: facts of the fetched archive: exit %d' % rc):
        check(fa['root'] == arch and ft['root'] == tree_root, 'role gather: root fields %s %s' % (fa['root'], ft['root']))
        check({k: v for k, v in fa.items() if k not in ('root', 'facts')} ==
              {k: v for k, v in ft.items() if k not in ('root', 'facts')}, 'role gather: facts headers differ')
        # --exclude /etc/nccl.conf: the file is not in the archive, so its facts say so (and the
        # tree's say it is there: the comparison below would pass without the exclude otherwise).
        check(ft['facts']['nccl.conf.present'].get('value') is True and
              fa['facts']['nccl.conf.present'].get('value') is False,
              'role gather: --exclude not passed: %s' % fa['facts'].get('nccl.conf.present'))
        diff = sorted(k for k in set(fa['facts']) | set(ft['facts'])
                      if not k.startswith('nccl.conf.') and fa['facts'].get(k) != ft['facts'].get(k))
        check(len(fa['facts']) > 100 and not diff, 'role gather: archive facts differ from the tree: %s' % diff[:10])
    rc, audit = run_json([llmtune, '--root', arch, 'audit', '--json', '--profile', PROFILE])
    if check(audit is not None and audit['host'] == ROOT and rc == 2,
             'role gather: audit of the fetched archive: exit %d, host %s' % (rc, (audit or {}).get('host'))):
        rc, rep = run_json([llmtune, 'report', '--json', '--profile', PROFILE, arch])
        hosts = (rep or {}).get('hosts', [])
        if check(rc == 0 and len(hosts) == 1, 'role gather: llmtune report of the archive: exit %d, %d hosts' % (
                rc, len(hosts))):
            h = hosts[0]
            want = {r['rule']: r['status'] for r in audit['results']}
            check(h['host'] == ROOT and h['file'] == arch and h['profile'] == PROFILE and h['results'] == want,
                  'role gather: report of the archive is not its audit: %s' % {k: h[k] for k in h if k != 'results'})


def without_ansible():
    """None when ansible-playbook is there, else the exit status: skip (77), or fail with
    LLMTUNE_REQUIRE_ALL=1."""
    if shutil.which('ansible-playbook'):
        return None
    msg = 'ansible-playbook not found (install ansible-core: packaging/install-deps.sh)'
    if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1':
        print('FAIL: %s, and LLMTUNE_REQUIRE_ALL=1' % msg)
        return 1
    print('SKIP: ' + msg)
    return 77


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    args = ap.parse_args()
    skip = without_ansible()
    if skip is not None:
        return skip
    llmtune = os.path.abspath(args.llmtune)
    top = tempfile.mkdtemp(prefix='llmtune-ansible-')
    try:
        run = Runner(top, llmtune)
        root = os.path.join(top, 'root')
        shutil.copytree(os.path.join(args.roots, ROOT), root, symlinks=True)
        pristine = tree(root)

        # Check mode + diff: what would change, nothing written.
        rc, res = run.module(root, ['--check', '--diff'], state='applied', profile=PROFILE)
        check(rc == 0 and res.get('changed') is True and res.get('changes_count', 0) > 0,
              'check mode: exit %d, result %s' % (rc, {k: res.get(k) for k in ('changed', 'changes_count', 'msg')}))
        check(res.get('reboot_required') is True, 'check mode: reboot_required not reported')
        diffs = res.get('diff') or []
        files = [d for d in diffs if d.get('after_header', '').startswith('/etc/')]
        check(files and any(d['after'] for d in files), 'check mode --diff: no file before/after in %s' % [
            d.get('after_header') for d in diffs])
        check(tree(root) == pristine, 'check mode changed the tree: %s' % differences(pristine, tree(root))[:10])
        check_count, check_changes = res.get('changes_count'), res.get('changes') or []
        # 256 governors are one line with a count (as plan shows them); commands, reboots and
        # manual steps are in the prepared text.
        values = [d for d in diffs if d.get('after_header') == 'runtime values']
        check(values and '(256 files)' in values[0]['after'] and values[0]['after'].count('scaling_governor') < 5,
              'check mode --diff: runtime values not grouped: %s' % (values[0]['after'][:500] if values else None))
        prepared = [d['prepared'] for d in diffs if 'prepared' in d]
        check(prepared and 'reboot required' in prepared[0], 'check mode --diff: no prepared text: %s' % diffs[-1:])
        # a manual step is labelled once (issue 31 item 11: it said "manual step: manual step:")
        check('manual step: ' in prepared[0] and 'manual step: manual step:' not in prepared[0],
              'check mode --diff: the manual steps: %s' % prepared[0][-600:])
        # The same through the default callback: the diff is shown.
        rc, text = run.play([{'name': 'llmtune', 'llmtune.llmtune.llmtune': dict(
            binary=llmtune, root=root, state='applied', profile=PROFILE)}], ['--check', '--diff'], callback='default')
        target = files[0]['after_header'] if files else '/etc/'
        check(rc == 0 and ('+++ after: ' + target) in text and '\n+' in text,
              '--diff output lacks the diff of %s:\n%s' % (target, text[-3000:]))
        check(tree(root) == pristine, 'check mode (default callback) changed the tree')

        # Audit: findings as data, nothing changed; fail_on_findings fails the task.
        rc, res = run.module(root, state='audited', profile=PROFILE)
        failing = [f['rule'] for f in res.get('findings', [])]
        check(rc == 0 and res.get('changed') is False and 'thp-enabled' in failing and res.get('summary', {}).get('fail')
              == len([f for f in res.get('findings', []) if f['status'] == 'fail']),
              'audited: exit %d, changed %s, findings %s' % (rc, res.get('changed'), failing))
        check(res.get('host') == ROOT and res.get('profile') == PROFILE, 'audited: host %r profile %r' % (
            res.get('host'), res.get('profile')))
        rc, res = run.module(root, state='audited', profile=PROFILE, fail_on_findings=True)
        check(rc != 0 and res.get('failed') is True and 'thp-enabled' in res.get('msg', '') and res.get('findings'),
              'audited with fail_on_findings: exit %d, %s' % (rc, res.get('msg')))
        check(tree(root) == pristine, 'audit changed the tree')

        # Apply: changed, then idempotent.
        rc, res = run.module(root, ['--diff'], state='applied', profile=PROFILE)
        check(rc == 0 and res.get('changed') is True and res.get('changes') and res.get('run'),
              'first apply: exit %d, changed %s, msg %s' % (rc, res.get('changed'), res.get('msg')))
        # Check mode said what the real run did: the same count, the same records and statuses.
        check(res.get('changes_count') == check_count, 'check mode counted %s changes, the real run %s' % (
            check_count, res.get('changes_count')))
        real = [(c.get('rule'), c.get('type'), c.get('target'), c.get('status')) for c in res.get('changes') or []]
        dry = [(c.get('rule'), c.get('type'), c.get('target'), 'changed' if c.get('status') == 'planned'
                else c.get('status')) for c in check_changes]
        check(real == dry, 'check mode and real changes differ: %s' % [x for x in zip(dry, real) if x[0] != x[1]][:5])
        check(res.get('reboot_required') is True, 'first apply: reboot_required not true')
        # The change log's head comes back, for the playbook to keep off the machine; verify
        # --expect-head with it passes on the machine as it is.
        anchor = (res.get('head') or {}).get('anchor', '')
        v = subprocess.run([llmtune, '--root', root, 'verify', '--expect-head', anchor], capture_output=True, text=True)
        check(re.fullmatch(r'[0-9]+:[0-9a-f]{64}', anchor) is not None and v.returncode == 0,
              'first apply: head %s, verify --expect-head rc %d' % (res.get('head'), v.returncode))
        check(any(d.get('after_header', '').startswith('/etc/') for d in res.get('diff') or []), 'first apply: no diff')
        applied = tree(root, skip_log=True)
        check(applied != tree(os.path.join(args.roots, ROOT), skip_log=True), 'first apply changed nothing on disk')
        rc, res = run.module(root, state='applied', profile=PROFILE)
        check(rc == 0 and res.get('changed') is False and res.get('changes_count') == 0,
              'second apply: exit %d, changed %s, count %s' % (rc, res.get('changed'), res.get('changes_count')))
        check(tree(root, skip_log=True) == applied, 'second apply changed the tree')
        rc, res = run.module(root, ['--check'], state='applied', profile=PROFILE)
        check(rc == 0 and res.get('changed') is False, 'check mode after apply: changed %s' % res.get('changed'))

        # Failures name the root and the reason.
        rc, res = run.module(root, state='applied', profile='no-such-profile')
        msg = res.get('msg', '')
        check(rc != 0 and res.get('failed') and root in msg and 'no-such-profile' in msg,
              'unknown profile: exit %d, msg %r' % (rc, msg))
        rc, res = run.module(root, state='audited', binary=os.path.join(top, 'missing-llmtune'))
        check(rc != 0 and root in res.get('msg', '') and 'missing-llmtune' in res.get('msg', ''),
              'missing binary: msg %r' % res.get('msg'))

        # Rollback, on a fresh copy: apply, then check mode says it would roll back, then it does,
        # then nothing is left. (After a second apply, the last run is that one: rollback --last-run
        # undoes the last run, not the last run that changed something.)
        root = os.path.join(top, 'root3')
        shutil.copytree(os.path.join(args.roots, ROOT), root, symlinks=True)
        pristine = tree(root)
        rc, res = run.module(root, state='applied', profile=PROFILE)
        check(rc == 0 and res.get('changed') is True, 'apply before rollback: %s' % res.get('msg'))
        before = tree(root)
        # Someone else changed a target: the rollback is refused, and check mode says so too.
        gov = os.path.join(root, 'sys/devices/system/cpu/cpufreq/policy0/scaling_governor')
        with open(gov) as f:
            was = f.read()
        with open(gov, 'w') as f:
            f.write('schedutil\n')
        for extra in (['--check'], []):
            rc, res = run.module(root, extra, state='rolled_back')
            check(rc != 0 and res.get('failed') and 'policy0/scaling_governor' in str(res.get('conflicts')) and
                  ('would be refused' in res.get('msg', '')) == bool(extra) and
                  res.get('msg', '').endswith('targets were changed by someone else (--force to restore anyway)'),
                  'rollback %s over a changed target: exit %d, %s' % (extra, rc, res.get('msg')))
        with open(gov, 'w') as f:
            f.write(was)
        check(tree(root) == before, 'a refused rollback changed the tree')
        rc, res = run.module(root, ['--check'], state='rolled_back')
        check(rc == 0 and res.get('changed') is True and res.get('rolled_back', 0) > 0 and tree(root) == before,
              'rollback check mode: exit %d, %s' % (rc, {k: res.get(k) for k in ('changed', 'rolled_back', 'msg')}))
        rc, res = run.module(root, state='rolled_back')
        check(rc == 0 and res.get('changed') is True and res.get('rolled_back', 0) > 0,
              'rollback: exit %d, %s' % (rc, {k: res.get(k) for k in ('changed', 'rolled_back', 'msg')}))
        restored = tree(root, skip_log=True)
        orig = {k: v for k, v in pristine.items() if not (k == LOG_DIR or k.startswith(LOG_DIR + os.sep))}
        left = [k for k in differences(orig, restored)
                if not (k not in orig and restored[k] == ('dir',))]   # directories apply made may stay
        # A filesystem image tune2fs changed and changed back differs in its superblock's times
        # and checksum: compare what was tuned.
        for img in [k for k in left if k.startswith('dev/')]:
            if shutil.which('dumpe2fs'):
                def raid(path):
                    out = subprocess.run(['dumpe2fs', '-h', path], stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL).stdout.decode()
                    return [l for l in out.splitlines() if l.startswith('RAID')]
                if raid(os.path.join(root, img)) == raid(os.path.join(args.roots, ROOT, img)):
                    left.remove(img)
        check(not left, 'rollback left differences: %s' % left[:10])
        rc, res = run.module(root, state='rolled_back')
        check(rc == 0 and res.get('changed') is False, 'second rollback: changed %s' % res.get('changed'))

        # params: a managed site profile; pin: llmtune.conf. Check mode writes neither.
        root4 = os.path.join(top, 'root4')
        shutil.copytree(os.path.join(args.roots, ROOT), root4, symlinks=True)
        site = os.path.join(root4, 'etc/llmtune/profiles.d/ansible-%s.ini' % PROFILE)
        conf = os.path.join(root4, 'etc/llmtune/llmtune.conf')
        opts = dict(state='applied', profile=PROFILE, params={'thp_enabled': 'never'}, pin=True)
        rc, res = run.module(root4, ['--check'], **opts)
        check(rc == 0 and res.get('changed') is True and res.get('profile') == 'ansible-' + PROFILE and
              not os.path.exists(site) and not os.path.exists(conf) and
              any(c.get('target') == '/sys/kernel/mm/transparent_hugepage/enabled' and c.get('after') == 'never'
                  for c in res.get('changes') or []),
              'params+pin check mode: exit %d, %s' % (rc, {k: res.get(k) for k in ('changed', 'profile', 'msg')}))
        rc, res = run.module(root4, **opts)
        with open(os.path.join(root4, 'sys/kernel/mm/transparent_hugepage/enabled')) as f:
            thp = f.read()
        check(rc == 0 and res.get('pinned') == 'ansible-' + PROFILE and os.path.exists(site) and
              'profile = ansible-%s' % PROFILE in open(conf).read() and ('[never]' in thp or thp.strip() == 'never'),
              'params+pin: exit %d, %s, thp %r' % (rc, res.get('msg'), thp))
        rc, res = run.module(root4, **opts)
        check(rc == 0 and res.get('changed') is False, 'params+pin, second run: changed %s' % res.get('changed'))
        # The module's argument spec holds each parameter's declared type: a value outside it is
        # refused by Ansible before llmtune runs (and an unknown parameter too).
        for bad, word in (({'thp_enabled': 'sometimes'}, 'thp_enabled'), ({'no_such_param': 1}, 'no_such_param')):
            rc, res = run.module(root4, ['--check'], state='applied', profile=PROFILE, params=bad)
            check(rc != 0 and word in res.get('msg', '') and ('always, madvise, never' in res.get('msg', '') or
                                                              'Unsupported' in res.get('msg', '')),
                  'params %s: exit %d, %s' % (bad, rc, res.get('msg')))

        # The role: apply, handler notified on the changing run only (and skipped: not the live root).
        root2 = os.path.join(top, 'root2')
        shutil.copytree(os.path.join(args.roots, ROOT), root2, symlinks=True)
        role = {'role': 'llmtune.llmtune.llmtune', 'vars': {
            'llmtune_install': False, 'llmtune_binary': llmtune, 'llmtune_root': root2, 'llmtune_profile': PROFILE}}
        rc, doc = run.play(None, roles=[role])
        res = results(doc)
        check(rc == 0 and res.get('Apply the llmtune profile', {}).get('changed') is True,
              'role, first run: exit %d, apply %s' % (rc, res.get('Apply the llmtune profile', {}).get('msg')))
        handler = res.get('Reboot for llmtune')
        check(handler is not None and handler.get('skipped') is True,
              'role, first run: the reboot handler was not notified (or not skipped for a --root tree): %s' % handler)
        rc, doc = run.play(None, roles=[role])
        res = results(doc)
        check(rc == 0 and res.get('Apply the llmtune profile', {}).get('changed') is False,
              'role, second run: apply changed')
        check('Reboot for llmtune' not in res, 'role, second run: the reboot handler was notified')

        # The role's gather task: the archive lands on the controller and audits like the tree.
        dest = os.path.join(top, 'gathered')
        role = {'role': 'llmtune.llmtune.llmtune', 'vars': {
            'llmtune_install': False, 'llmtune_binary': llmtune, 'llmtune_root': os.path.join(args.roots, ROOT),
            'llmtune_apply_profile': False, 'llmtune_gather': True, 'llmtune_gather_dest': dest,
            'llmtune_gather_tmp': top, 'llmtune_gather_exclude': ['/etc/nccl.conf']}}
        rc, doc = run.play(None, roles=[role])
        res = results(doc)
        arch = os.path.join(dest, 'llmtune-localhost.tar.gz')
        check(rc == 0 and os.path.isfile(arch), 'role gather: exit %d, no %s: %s' % (
            rc, arch, res.get('Gather llmtune\'s evidence into one archive', {}).get('msg')))
        check(res.get('Apply the llmtune profile', {}).get('skipped') is True, 'role gather: apply was not skipped')
        check(not os.path.exists(os.path.join(top, 'llmtune-localhost.tar.gz')), 'role gather: archive left on the node')
        if os.path.isfile(arch):
            gathered_archive_checks(llmtune, arch, os.path.join(args.roots, ROOT))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    for p in failures:
        print('FAIL: ' + p)
    if not failures:
        print('ok: ansible collection on a copy of %s' % ROOT)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
