#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: MIT
"""Ansible module wrapping the llmtune CLI's JSON output (audit, plan, apply, rollback)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: llmtune
short_description: Audit and tune a Linux host for LLM training with llmtune
version_added: "0.1.0"
description:
  - Runs C(llmtune audit), C(plan), C(apply) or C(rollback) on the target and returns their JSON as data.
  - C(state=applied) changes the host only where the audit fails and reports C(changed) exactly when
    llmtune changed something; a second run with the same profile is not changed.
  - In check mode C(state=applied) runs the dry run (C(llmtune plan --json)) and reports what would change.
  - In diff mode the per-file before/after contents (and the runtime values) are returned as the task's diff.
options:
  profile:
    description: Profile name (see C(llmtune profiles)) or path to a profile file on the target. Default is the
      profile llmtune detects for the host.
    type: str
  state:
    description:
      - C(audited) runs the audit and returns the findings; it never changes anything.
      - C(applied) fixes what the audit finds (C(llmtune apply)).
      - C(rolled_back) restores the state before the last apply run (C(llmtune rollback --last-run)).
    type: str
    choices: [audited, applied, rolled_back]
    default: audited
  rules:
    description: Only these rule ids (C(--rule)).
    type: list
    elements: str
  root:
    description: Work on the tree at this directory instead of the running system (C(--root)).
    type: path
    default: /
  binary:
    description: The llmtune executable (a name looked up in PATH, or a path).
    type: str
    default: llmtune
  fail_on_findings:
    description: With C(state=audited), fail the task when a rule fails or cannot be evaluated (the findings
      are still returned). Otherwise the findings are only returned.
    type: bool
    default: false
notes:
  - Supports check mode and diff mode. C(state=rolled_back) in check mode reads the change log
    (C(llmtune log --json)) to say whether the last run has changes to roll back.
author:
  - llmtune maintainers
'''

EXAMPLES = r'''
- name: Audit against the detected profile, keep the findings
  llmtune.llmtune.llmtune:
    state: audited
  register: audit

- name: Apply the a100-8x profile
  llmtune.llmtune.llmtune:
    profile: a100-8x
    state: applied
  register: tuned
  notify: reboot for llmtune

- name: Undo the last apply run
  llmtune.llmtune.llmtune:
    state: rolled_back
'''

RETURN = r'''
changed:
  description: True exactly when llmtune changed something (or, in check mode, would).
  type: bool
  returned: always
root:
  description: The root llmtune worked on.
  type: str
  returned: always
profile:
  description: The profile used (audited, applied).
  type: str
  returned: when state is audited or applied
host:
  description: The host name llmtune reported (audited).
  type: str
  returned: when state is audited
findings:
  description: The audit results whose status is fail or error, each with rule, title, severity, status,
    observed, expected, reason and remedy (the shape of C(llmtune audit --json) results).
  type: list
  elements: dict
  returned: when state is audited
results:
  description: Every audit result.
  type: list
  elements: dict
  returned: when state is audited
summary:
  description: Audit counts, keys pass, fail, na, error.
  type: dict
  returned: when state is audited
changes:
  description: The change records of C(llmtune apply --json) (or C(plan --json) in check mode) with rule,
    type, target, diff (files), before/after (values), status.
  type: list
  elements: dict
  returned: when state is applied
changes_count:
  description: How many changes were made (or would be in check mode).
  type: int
  returned: when state is applied
reboot_required:
  description: A change takes effect only after a reboot (for example a blacklisted module still loaded).
  type: bool
  returned: when state is applied
run:
  description: The change log's run id of this apply.
  type: str
  returned: when state is applied and not in check mode
rolled_back:
  description: How many changes were restored (or, in check mode, would be).
  type: int
  returned: when state is rolled_back
stdout:
  description: llmtune's standard output (rolled_back).
  type: str
  returned: when state is rolled_back
'''

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule


def parse_json(text):
    """The JSON document llmtune printed; None when there is none."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    # Be lenient about a stray line before the document (a helper program's banner).
    start = text.find('\n{')
    if start >= 0:
        try:
            return json.loads(text[start + 1:])
        except ValueError:
            pass
    return None


class Llmtune(object):
    def __init__(self, module):
        self.m = module
        p = module.params
        self.root = p['root'] or '/'
        binary = p['binary'] or 'llmtune'
        if '/' in binary:
            if not os.access(binary, os.X_OK):
                module.fail_json(msg='llmtune on %s: %s is not an executable file' % (self.root, binary), root=self.root)
            self.binary = binary
        else:
            self.binary = module.get_bin_path(binary, required=False)
            if not self.binary:
                module.fail_json(msg='llmtune on %s: %s not found in PATH (install the llmtune package or set binary)'
                                 % (self.root, binary), root=self.root)

    def selection(self):
        args = []
        if self.m.params['profile']:
            args += ['--profile', self.m.params['profile']]
        for r in self.m.params['rules'] or []:
            args += ['--rule', r]
        return args

    def run(self, args):
        cmd = [self.binary, '--root', self.root] + args
        rc, out, err = self.m.run_command(cmd, environ_update={'NO_COLOR': '1', 'LC_ALL': 'C'})
        return rc, out, err, cmd

    def fail(self, what, rc, err, cmd, **extra):
        reason = (err or '').strip().replace('llmtune: ', '') or 'exit status %d' % rc
        self.m.fail_json(msg='llmtune %s on %s failed: %s' % (what, self.root, reason), rc=rc, stderr=err,
                         cmd=cmd, root=self.root, **extra)

    def json_of(self, what, args, ok_codes=(0,)):
        rc, out, err, cmd = self.run(args)
        doc = parse_json(out) if out else None
        if rc not in ok_codes and not (doc and doc.get('failed')):
            self.fail(what, rc, err, cmd)
        if not isinstance(doc, (dict, list)):
            self.fail(what, rc, 'its output is not JSON: %s' % (out or err)[:500], cmd)
        return rc, doc, err, cmd

    # --- state=audited -------------------------------------------------------------------------

    def audited(self):
        rc, doc, err, cmd = self.json_of('audit', ['audit'] + self.selection() + ['--json'], ok_codes=(0, 2))
        results = doc.get('results', [])
        findings = [r for r in results if r.get('status') in ('fail', 'error')]
        profile = (doc.get('profile') or {}).get('name')
        res = dict(changed=False, root=self.root, host=doc.get('host'), profile=profile, findings=findings,
                   results=results, summary=doc.get('summary', {}))
        if findings and self.m.params['fail_on_findings']:
            ids = ', '.join('%s (%s)' % (f['rule'], f['status']) for f in findings)
            self.m.fail_json(msg='llmtune audit on %s: %d rule(s) of profile %s fail: %s' % (
                doc.get('host') or self.root, len(findings), profile, ids), **res)
        self.m.exit_json(**res)

    # --- state=applied -------------------------------------------------------------------------

    @staticmethod
    def diffs(plan):
        """Ansible diffs: one per file (first before to last after), one for the runtime values."""
        files, order, values = {}, [], []
        for c in plan.get('changes', []):
            if c.get('type') == 'file':
                t = c['target']
                if t not in files:
                    files[t] = [c.get('before'), c.get('after')]
                    order.append(t)
                else:
                    files[t][1] = c.get('after')
            elif c.get('type') in ('value', 'symlink', 'swap', 'mountopt'):
                values.append(c)
        out = []
        for t in order:
            before, after = files[t]
            out.append(dict(before=before or '', after=after or '',
                            before_header=t if before is not None else '%s (absent)' % t,
                            after_header=t if after is not None else '%s (removed)' % t))
        if values:
            def line(c, key):
                v = c.get(key)
                return '%s = %s\n' % (c['target'], '(none)' if v is None else v)
            out.append(dict(before=''.join(line(c, 'before') for c in values),
                            after=''.join(line(c, 'after') for c in values),
                            before_header='runtime values', after_header='runtime values'))
        return out

    def would_change(self, plan):
        """How many planned changes apply would make. Under a --root tree apply does not run
        commands (modprobe, update-initramfs: they act on the running system), so a plan of
        commands alone changes nothing there, and apply reports it unchanged."""
        n = 0
        for c in plan.get('changes', []):
            if c.get('type') == 'note':
                continue
            if c.get('type') == 'command' and os.path.realpath(self.root) != '/':
                continue
            n += 1
        return n

    def applied(self):
        sel = self.selection()
        plan = None
        if self.m.check_mode or self.m._diff:
            # The dry run carries the full before/after contents of files.
            rc, plan, err, cmd = self.json_of('plan', ['plan'] + sel + ['--json'])
        if self.m.check_mode:
            n = self.would_change(plan)
            res = dict(changed=n > 0, root=self.root, profile=plan.get('profile'), changes=plan.get('changes', []),
                       changes_count=n, reboot_required=bool(plan.get('reboot_required')))
            if self.m._diff:
                res['diff'] = self.diffs(plan)
            self.m.exit_json(**res)
        rc, doc, err, cmd = self.json_of('apply', ['apply'] + sel + ['--json'])
        n = int(doc.get('changed', 0))
        res = dict(changed=n > 0, root=self.root, profile=doc.get('profile'), run=doc.get('run'),
                   changes=doc.get('changes', []), changes_count=n, reboot_required=bool(doc.get('reboot_required')))
        if doc.get('failed') or rc != 0:
            # The error names the target, the rule and the reason; the run was undone.
            reason = doc.get('error') or (err or '').strip() or 'exit status %d' % rc
            res['changed'] = False
            self.m.fail_json(msg='llmtune apply on %s failed at %s (the changes of this run were undone)' % (
                self.root, reason), rc=rc, stderr=err, **res)
        if self.m._diff and plan is not None and n > 0:
            res['diff'] = self.diffs(plan)
        self.m.exit_json(**res)

    # --- state=rolled_back ---------------------------------------------------------------------

    def pending_rollback(self):
        """Changes of the last run still in force, read from the change log (for check mode)."""
        rc, log, err, cmd = self.json_of('log', ['log', '--json'])
        undone = set(r.get('ref') for r in log if r.get('event') == 'undone')
        done = [r for r in log if r.get('event') == 'done' and r.get('type') != 'note' and r.get('seq') not in undone]
        if not done:
            return []
        last = done[-1].get('run')
        return [r for r in done if r.get('run') == last]

    def rolled_back(self):
        if self.m.check_mode:
            pending = self.pending_rollback()
            self.m.exit_json(changed=bool(pending), root=self.root, rolled_back=len(pending),
                             targets=[r.get('target') for r in pending])
        rc, out, err, cmd = self.run(['rollback', '--last-run'])
        if rc != 0:
            self.fail('rollback', rc, err, cmd, stdout=out)
        # The last line is "N rolled back" or "nothing to roll back"; anything else is not
        # understood and reported as changed, never silently as unchanged.
        last = out.strip().splitlines()[-1] if out.strip() else ''
        m = re.match(r'^(\d+) rolled back$', last)
        if m:
            n = int(m.group(1))
        elif last == 'nothing to roll back':
            n = 0
        else:
            self.m.fail_json(msg='llmtune rollback on %s: unexpected output %r' % (self.root, last), stdout=out,
                             root=self.root, changed=True)
        self.m.exit_json(changed=n > 0, root=self.root, rolled_back=n, stdout=out)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            profile=dict(type='str'),
            state=dict(type='str', default='audited', choices=['audited', 'applied', 'rolled_back']),
            rules=dict(type='list', elements='str'),
            root=dict(type='path', default='/'),
            binary=dict(type='str', default='llmtune'),
            fail_on_findings=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    lt = Llmtune(module)
    state = module.params['state']
    if state == 'audited':
        lt.audited()
    elif state == 'applied':
        lt.applied()
    else:
        lt.rolled_back()


if __name__ == '__main__':
    main()
