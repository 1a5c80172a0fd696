#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-2.0-or-later
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
    description: With C(state=audited), fail the task when a rule at or above O(fail_on) fails or cannot be
      evaluated (the findings are still returned). Otherwise the findings are only returned.
    type: bool
    default: false
  fail_on:
    description: The lowest severity that counts as a finding for O(fail_on_findings) (C(llmtune audit --fail-on)).
    type: str
    choices: [critical, warning, info]
    default: warning
  wait:
    description: With C(state=applied) or C(rolled_back), wait for another llmtune apply or rollback on the
      host instead of failing (C(--wait); C(false) is C(--no-wait)). Unset, C(/etc/llmtune/llmtune.conf) decides.
    type: bool
  force:
    description: With C(state=rolled_back), restore even targets someone changed since llmtune set them
      (C(llmtune rollback --force)). Without it such a rollback is refused, in check mode too.
    type: bool
    default: false
  rollback:
    description: With C(state=rolled_back), what to restore. C(last_run) the last apply run, C(all) every change
      still in force, C(to) the changes logged after sequence number O(to).
    type: str
    choices: [last_run, all, to]
    default: last_run
  to:
    description: The sequence number for O(rollback=to) (see C(llmtune log)).
    type: int
  params:
    description:
      - Profile parameter overrides for this host (see C(llmtune profiles show PROFILE)), with O(profile).
      - The site profile C(/etc/llmtune/profiles.d/ansible-PROFILE.ini) (name C(ansible-PROFILE), inheriting
        PROFILE) holds them and is used (C(llmtune apply --param NAME=VALUE --site-profile ansible-PROFILE)).
        llmtune validates the values and writes the file in the same run as the changes, logged; a run
        that fails is undone with the file, and C(llmtune rollback) restores what was there.
      - Each parameter's type and allowed values are those declared in C(profiles/base.ini) (section
        C([types])), the declaration C(llmtune lint) and C(llmtune profiles show) use.
    type: dict
    suboptions:
      # BEGIN params suboptions (packaging/update-ansible-params.py from profiles/base.ini [types])
      aer_correctable_growth_max:
        description: "An integer (C(integer)); unset, the profile's value."
        type: int
      cpu_governor:
        description: "One of performance, powersave, schedutil, ondemand, conservative, userspace (C(enum performance powersave schedutil ondemand conservative userspace)); unset, the profile's value."
        type: str
        choices: ["performance", "powersave", "schedutil", "ondemand", "conservative", "userspace"]
      ecc_corrected_growth_max:
        description: "An integer (C(integer)); unset, the profile's value."
        type: int
      edac_ce_max:
        description: "An integer (C(integer)); unset, the profile's value."
        type: int
      gpu_count:
        description: "An integer of at least 0 or any (C(integer 0.. | any)); unset, the profile's value."
        type: str
      gpu_device_id:
        description: "A comma list of names or any (C(names | any)); unset, the profile's value."
        type: str
      gpu_ecc_required:
        description: "True or false (C(bool)); unset, the profile's value."
        type: bool
      gpu_mig:
        description: "True or false or any (C(bool | any)); unset, the profile's value."
        type: raw
        choices: [true, false, "any"]
      gpu_nic_affinity:
        description: "True or false (C(bool)); unset, the profile's value."
        type: bool
      gpu_pcie_speed:
        description: "An integer of at least 1 or any (C(integer 1.. | any)); unset, the profile's value."
        type: str
      gpu_pcie_width:
        description: "An integer from 1 to 32 or any (C(integer 1..32 | any)); unset, the profile's value."
        type: str
      gpu_per_socket:
        description: "A comma list of integers (4,4) or any (C(integers | any)); unset, the profile's value."
        type: str
      gpudirect_rdma:
        description: "True or false (C(bool)); unset, the profile's value."
        type: bool
      hca_fw_version:
        description: "A dotted version (535.104.05) or any (C(version | any)); unset, the profile's value."
        type: str
      hca_pcie_speed:
        description: "An integer of at least 1 or any (C(integer 1.. | any)); unset, the profile's value."
        type: str
      hca_pcie_width:
        description: "An integer from 1 to 32 or any (C(integer 1..32 | any)); unset, the profile's value."
        type: str
      ib_error_growth_max:
        description: "An integer (C(integer)); unset, the profile's value."
        type: int
      ib_error_max:
        description: "An integer or any (C(integer | any)); unset, the profile's value."
        type: str
      ib_hca_count:
        description: "An integer or any (C(integer | any)); unset, the profile's value."
        type: str
      ib_link_layer:
        description: "One of ib, roce, efa, any (C(enum ib roce efa any)); unset, the profile's value."
        type: str
        choices: ["ib", "roce", "efa", "any"]
      ib_rate_gbps:
        description: "An integer of at least 1 or any (C(integer 1.. | any)); unset, the profile's value."
        type: str
      iommu_modes:
        description: "A comma list of off, passthrough, translated (C(list off passthrough translated)); unset, the profile's value."
        type: str
      iommu_passthrough_arg:
        description: "One of iommu=pt, iommu.passthrough=1 (C(enum iommu=pt iommu.passthrough=1)); unset, the profile's value."
        type: str
        choices: ["iommu=pt", "iommu.passthrough=1"]
      memlock_min:
        description: "A size (bytes, or with K, M, G or T: 64G) or unlimited (C(size | unlimited)); unset, the profile's value."
        type: str
      nccl_debug_switches:
        description: "One of keep, remove (C(enum keep remove)); unset, the profile's value."
        type: str
        choices: ["keep", "remove"]
      nccl_ib_gid_index:
        description: "An integer from 0 to 255 or any (C(integer 0..255 | any)); unset, the profile's value."
        type: str
      nccl_ib_hca:
        description: "Auto or a comma list of names (C(auto | names)); unset, the profile's value."
        type: str
      nccl_ib_sl:
        description: "An integer from 0 to 15 or any (C(integer 0..15 | any)); unset, the profile's value."
        type: str
      nccl_ib_tc:
        description: "An integer from 0 to 255 or any (C(integer 0..255 | any)); unset, the profile's value."
        type: str
      nccl_socket_ifname:
        description: "One of auto, none (C(enum auto none)); unset, the profile's value."
        type: str
        choices: ["auto", "none"]
      numa_balancing:
        description: "An integer from 0 to 3 (C(integer 0..3)); unset, the profile's value."
        type: int
      numa_nodes:
        description: "An integer of at least 1 or any (C(integer 1.. | any)); unset, the profile's value."
        type: str
      nvidia_driver_min:
        description: "A dotted version (535.104.05) or any (C(version | any)); unset, the profile's value."
        type: str
      nvidia_driver_version:
        description: "A dotted version (535.104.05) or any (C(version | any)); unset, the profile's value."
        type: str
      nvlink_error_growth_max:
        description: "An integer (C(integer)); unset, the profile's value."
        type: int
      nvlink_error_max:
        description: "An integer or any (C(integer | any)); unset, the profile's value."
        type: str
      nvlink_per_gpu:
        description: "An integer or any (C(integer | any)); unset, the profile's value."
        type: str
      nvswitch_count:
        description: "An integer (C(integer)); unset, the profile's value."
        type: int
      pcie_link_severity:
        description: "One of critical, warning, info (C(enum critical warning info)); unset, the profile's value."
        type: str
        choices: ["critical", "warning", "info"]
      pcie_min_width:
        description: "An integer from 1 to 32 (C(integer 1..32)); unset, the profile's value."
        type: int
      pcie_mrrs_min:
        description: "An integer from 128 to 4096 (C(integer 128..4096)); unset, the profile's value."
        type: int
      prolog_gpu_memory_max:
        description: "A size (bytes, or with K, M, G or T: 64G) (C(size)); unset, the profile's value."
        type: str
      ram_per_gpu:
        description: "A size (bytes, or with K, M, G or T: 64G) or any (C(size | any)); unset, the profile's value."
        type: str
      roce_ecn_priority:
        description: "An integer from 0 to 7 or any (C(integer 0..7 | any)); unset, the profile's value."
        type: str
      roce_error_growth_max:
        description: "An integer (C(integer)); unset, the profile's value."
        type: int
      roce_mtu_min:
        description: "An integer from 256 to 4096 or any (C(integer 256..4096 | any)); unset, the profile's value."
        type: str
      shm_min:
        description: "A size (bytes, or with K, M, G or T: 64G) (C(size)); unset, the profile's value."
        type: str
      shmall_min:
        description: "An integer (C(integer)); unset, the profile's value."
        type: int
      shmmax_min:
        description: "A size (bytes, or with K, M, G or T: 64G) (C(size)); unset, the profile's value."
        type: str
      swap:
        description: "One of off, allow (C(enum off allow)); unset, the profile's value."
        type: str
        choices: ["off", "allow"]
      swapoff_min_free:
        description: "A size (bytes, or with K, M, G or T: 64G) (C(size)); unset, the profile's value."
        type: str
      thp_defrag:
        description: "One of always, defer, defer+madvise, madvise, never (C(enum always defer defer+madvise madvise never)); unset, the profile's value."
        type: str
        choices: ["always", "defer", "defer+madvise", "madvise", "never"]
      thp_enabled:
        description: "One of always, madvise, never (C(enum always madvise never)); unset, the profile's value."
        type: str
        choices: ["always", "madvise", "never"]
      xid_window:
        description: "A duration (with s, min, h, d or w: 24h) or unlimited (C(duration | unlimited)); unset, the profile's value."
        type: str
      # END params suboptions
  pin:
    description: Pin the profile used (O(profile), or the managed C(ansible-PROFILE) with O(params)) in
      C(/etc/llmtune/llmtune.conf) (C(llmtune apply --pin)), so the boot re-apply unit and later runs use it.
      The pin is part of the run like the site profile (undone when the run fails).
    type: bool
    default: false
notes:
  - >-
    Supports check mode and diff mode. Check mode reports what the real run does, from llmtune's own dry
    runs with the same arguments (C(llmtune plan --json), C(llmtune rollback --dry-run --json)): the same
    change count, the same C(changes) records (status C(planned) where the real run says C(changed)), the
    site profile and pin files included, reboot and manual steps, and a rollback that would be refused
    fails in check mode too.
  - >-
    A run the real apply would refuse (a symbolic link where a file goes, a change log it would
    not trust) fails in check mode too, with the same reason (C(llmtune plan) runs apply's checks).
  - >-
    In diff mode each file has its own before/after; runtime values alike (a governor per CPU) are one
    line with a count, as C(llmtune plan) shows them; commands, reboots and manual steps are in a
    C(prepared) text.
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
  description: The audit results whose status is fail or error (every severity; O(fail_on) decides only what
    fails the task), each with rule, title, severity, status,
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
  description:
    - The change records of C(llmtune apply --json) (in check mode C(llmtune plan --json)), one schema for both.
    - C(rule) (C(profile.params) and C(profile.pin) for the files of O(params) and O(pin)), C(type) (file,
      symlink, value, swap, mountopt, command, note), C(target), C(diff) (files), C(before)/C(after) (values,
      file contents), C(command) (commands), C(text) and C(reboot) (notes), C(status).
    - C(status) is C(changed), C(skipped) (a command that does not run here), C(failed), C(undone), C(not-run),
      C(reboot-required) or C(manual); in check mode C(planned) stands for C(changed).
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
head:
  description:
    - The change log's last record after this apply or rollback, with keys seq, hash and anchor (C(SEQ:HASH)).
    - Keep the anchor off the machine (a fact cache, a fleet report); C(llmtune verify --expect-head ANCHOR)
      later proves that nothing up to that record was cut from the log, even if the log and its head file
      were both rewritten.
  type: dict
  returned: when state is applied or rolled_back, not in check mode, and the log has records
rolled_back:
  description: How many changes were restored (or, in check mode, would be).
  type: int
  returned: when state is rolled_back
targets:
  description: The records of C(llmtune rollback --json) (C(--dry-run) in check mode), each with seq, rule,
    type, target, status (C(restored), C(already), C(manual), C(next-boot), C(failed); C(would-restore) in check mode).
  type: list
  elements: dict
  returned: when state is rolled_back
conflicts:
  description: Targets changed by someone else since llmtune set them (why a rollback is refused), each with
    seq, rule, target, now, applied, before. The failure message is the C(error) of C(llmtune rollback --json).
  type: list
  elements: dict
  returned: when state is rolled_back
pinned:
  description: The profile pinned in C(/etc/llmtune/llmtune.conf) when O(pin) is set.
  type: str
  returned: when pin is true
'''

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule

# BEGIN PARAMS_SPEC (packaging/update-ansible-params.py from profiles/base.ini [types])
PARAMS_SPEC = dict(
    aer_correctable_growth_max=dict(type='int'),
    cpu_governor=dict(type='str', choices=['performance', 'powersave', 'schedutil', 'ondemand', 'conservative', 'userspace']),
    ecc_corrected_growth_max=dict(type='int'),
    edac_ce_max=dict(type='int'),
    gpu_count=dict(type='str'),
    gpu_device_id=dict(type='str'),
    gpu_ecc_required=dict(type='bool'),
    gpu_mig=dict(type='raw', choices=[True, False, 'any']),
    gpu_nic_affinity=dict(type='bool'),
    gpu_pcie_speed=dict(type='str'),
    gpu_pcie_width=dict(type='str'),
    gpu_per_socket=dict(type='str'),
    gpudirect_rdma=dict(type='bool'),
    hca_fw_version=dict(type='str'),
    hca_pcie_speed=dict(type='str'),
    hca_pcie_width=dict(type='str'),
    ib_error_growth_max=dict(type='int'),
    ib_error_max=dict(type='str'),
    ib_hca_count=dict(type='str'),
    ib_link_layer=dict(type='str', choices=['ib', 'roce', 'efa', 'any']),
    ib_rate_gbps=dict(type='str'),
    iommu_modes=dict(type='str'),
    iommu_passthrough_arg=dict(type='str', choices=['iommu=pt', 'iommu.passthrough=1']),
    memlock_min=dict(type='str'),
    nccl_debug_switches=dict(type='str', choices=['keep', 'remove']),
    nccl_ib_gid_index=dict(type='str'),
    nccl_ib_hca=dict(type='str'),
    nccl_ib_sl=dict(type='str'),
    nccl_ib_tc=dict(type='str'),
    nccl_socket_ifname=dict(type='str', choices=['auto', 'none']),
    numa_balancing=dict(type='int'),
    numa_nodes=dict(type='str'),
    nvidia_driver_min=dict(type='str'),
    nvidia_driver_version=dict(type='str'),
    nvlink_error_growth_max=dict(type='int'),
    nvlink_error_max=dict(type='str'),
    nvlink_per_gpu=dict(type='str'),
    nvswitch_count=dict(type='int'),
    pcie_link_severity=dict(type='str', choices=['critical', 'warning', 'info']),
    pcie_min_width=dict(type='int'),
    pcie_mrrs_min=dict(type='int'),
    prolog_gpu_memory_max=dict(type='str'),
    ram_per_gpu=dict(type='str'),
    roce_ecn_priority=dict(type='str'),
    roce_error_growth_max=dict(type='int'),
    roce_mtu_min=dict(type='str'),
    shm_min=dict(type='str'),
    shmall_min=dict(type='int'),
    shmmax_min=dict(type='str'),
    swap=dict(type='str', choices=['off', 'allow']),
    swapoff_min_free=dict(type='str'),
    thp_defrag=dict(type='str', choices=['always', 'defer', 'defer+madvise', 'madvise', 'never']),
    thp_enabled=dict(type='str', choices=['always', 'madvise', 'never']),
    xid_window=dict(type='str'),
)
# END PARAMS_SPEC


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
        self.profile = module.params['profile']

    # --- params (a managed site profile) and pin --------------------------------------------------

    def setup_args(self):
        """--param/--site-profile/--pin: llmtune writes the managed site profile ansible-PROFILE and the
        pin in the same run as the changes (logged, undone when the run fails), and its dry run shows
        the same files, so check mode and the real run cannot differ."""
        p = self.m.params
        args = []
        if p['params']:
            base = p['profile']
            if not base or '/' in base or base.endswith('.ini'):
                self.m.fail_json(msg='llmtune on %s: params needs profile set to a profile name' % self.root,
                                 root=self.root)
            given = dict((k, v) for k, v in p['params'].items() if v is not None)  # unset suboptions are None
            if not given:
                self.m.fail_json(msg='llmtune on %s: params sets no parameter' % self.root, root=self.root)
            for k in sorted(given):
                v = given[k]
                if isinstance(v, bool):
                    v = 'true' if v else 'false'
                v = str(v)
                if not re.match(r'^[a-z0-9_]+$', k) or '\n' in v:
                    self.m.fail_json(msg='llmtune on %s: params: %r = %r is not a parameter line' % (self.root, k, v),
                                     root=self.root)
                args += ['--param', '%s=%s' % (k, v)]
            args += ['--site-profile', 'ansible-' + base]
        if p['pin']:
            if not p['profile']:
                self.m.fail_json(msg='llmtune on %s: pin needs profile' % self.root, root=self.root)
            args.append('--pin')
        return args

    def wait_args(self):
        w = self.m.params['wait']
        return [] if w is None else ['--wait'] if w else ['--no-wait']

    def selection(self):
        args = []
        if self.profile:
            args += ['--profile', self.profile]
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
        rc, doc, err, cmd = self.json_of('audit', ['audit'] + self.selection() + ['--json', '--fail-on',
                                                                                   self.m.params['fail_on']],
                                         ok_codes=(0, 2, 3))
        results = doc.get('results', [])
        findings = [r for r in results if r.get('status') in ('fail', 'error')]
        profile = (doc.get('profile') or {}).get('name')
        res = dict(changed=False, root=self.root, host=doc.get('host'), profile=profile, findings=findings,
                   results=results, summary=doc.get('summary', {}))
        # the gate is llmtune's own: exit 2 or 3 means a finding at or above fail_on
        gating = [f for f in findings if {'info': 0, 'warning': 1, 'critical': 2}.get(f.get('severity'), 2) >=
                  {'info': 0, 'warning': 1, 'critical': 2}[self.m.params['fail_on']]]
        if rc in (2, 3) and gating and self.m.params['fail_on_findings']:
            findings_msg = gating
            ids = ', '.join('%s (%s)' % (f['rule'], f['status']) for f in findings_msg)
            self.m.fail_json(msg='llmtune audit on %s: %d rule(s) of profile %s fail: %s' % (
                doc.get('host') or self.root, len(findings_msg), profile, ids), **res)
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
            before, after = [], []
            i = 0
            while i < len(values):
                c = values[i]
                # values alike in a row (a governor per CPU): one line with a count, as plan shows them
                j = i + 1
                while (j < len(values) and c.get('type') == 'value' and values[j].get('type') == 'value' and
                       values[j].get('rule') == c.get('rule') and values[j].get('before') == c.get('before') and
                       values[j].get('after') == c.get('after')):
                    j += 1
                target = c['target'] if j - i <= 3 else '%s ... %s (%d files)' % (c['target'], values[j - 1]['target'],
                                                                                   j - i)
                if j - i <= 3:
                    j = i + 1
                for key, acc in (('before', before), ('after', after)):
                    v = c.get(key)
                    acc.append('%s = %s\n' % (target, '(none)' if v is None else v))
                i = j
            out.append(dict(before=''.join(before), after=''.join(after),
                            before_header='runtime values', after_header='runtime values'))
        prepared = []
        for c in plan.get('changes', []):
            if c.get('type') == 'command':
                st = c.get('status')
                prepared.append('command: %s   (%s)%s' % (c.get('command'), c.get('rule'),
                                                          ', not run here' if st == 'skipped' else ''))
            elif c.get('type') == 'note':
                prepared.append('%s: %s   (%s)' % ('reboot required' if c.get('reboot') else 'manual step',
                                                   c.get('text'), c.get('rule')))
        if prepared:
            out.append(dict(prepared='\n'.join(prepared) + '\n'))
        return out

    @staticmethod
    def would_change(plan):
        """How many changes apply would make: llmtune's dry run counts them as apply does (a command
        that would not run here, status skipped, is not one; tune2fs on an image file in a tree is)."""
        return int(plan.get('changed', 0))

    def applied(self):
        args = self.selection() + self.setup_args() + ['--json']
        if self.m.check_mode:
            # llmtune's dry run: the same records, statuses (planned for changed) and files as apply
            rc, doc, err, cmd = self.json_of('plan', ['plan'] + args)
            n = self.would_change(doc)
        else:
            rc, doc, err, cmd = self.json_of('apply', ['apply'] + args + self.wait_args())
            n = int(doc.get('changed', 0))
        res = dict(changed=n > 0, root=self.root, profile=doc.get('profile'), changes=doc.get('changes', []),
                   changes_count=n, reboot_required=bool(doc.get('reboot_required')))
        if doc.get('run'):
            res['run'] = doc['run']
        if doc.get('head'):
            res['head'] = doc['head']
        if doc.get('pinned'):
            res['pinned'] = doc['pinned']
        if doc.get('failed') or rc != 0:
            # The error names the target, the rule and the reason; the run was undone, the site
            # profile and the pin with it.
            reason = doc.get('error') or (err or '').strip() or 'exit status %d' % rc
            res['changed'] = False
            if self.m.check_mode:  # llmtune's dry run foresaw what the real run would refuse
                msg = 'llmtune apply on %s would fail at %s (nothing was changed)' % (self.root, reason)
            else:
                msg = 'llmtune apply on %s failed at %s (the changes of this run were undone)' % (self.root, reason)
            self.m.fail_json(msg=msg, rc=rc, stderr=err, **res)
        if self.m._diff and n > 0:
            res['diff'] = self.diffs(doc)
        self.m.exit_json(**res)

    # --- state=rolled_back ---------------------------------------------------------------------

    def rolled_back(self):
        p = self.m.params
        scope = {'last_run': ['--last-run'], 'all': ['--all']}.get(p['rollback'])
        if p['rollback'] == 'to':
            if p['to'] is None:
                self.m.fail_json(msg='llmtune on %s: rollback=to needs to (a sequence number)' % self.root)
            scope = ['--to', str(p['to'])]
        args = ['rollback'] + scope + ['--json'] + (['--force'] if p['force'] else []) + self.wait_args()
        if self.m.check_mode:
            args.append('--dry-run')  # llmtune's own answer: what it would restore, or that it would refuse
        rc, out, err, cmd = self.run(args)
        doc = parse_json(out) if out else None
        if not isinstance(doc, dict):
            self.fail('rollback', rc, err or out, cmd)
        res = dict(root=self.root, rolled_back=int(doc.get('rolled_back', 0)), targets=doc.get('changes', []),
                   conflicts=doc.get('conflicts', []))
        if doc.get('head') and not self.m.check_mode:
            res['head'] = doc['head']
        if rc != 0 or doc.get('refused'):
            # the reason as rollback --json states it ("error"), not scraped from stderr
            reason = doc.get('error') or 'exit status %d' % rc
            self.m.fail_json(msg='llmtune rollback on %s %s: %s' % (
                self.root, 'would be refused' if self.m.check_mode else 'failed', reason), rc=rc, stderr=err,
                changed=False, **res)
        self.m.exit_json(changed=res['rolled_back'] > 0, **res)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            profile=dict(type='str'),
            state=dict(type='str', default='audited', choices=['audited', 'applied', 'rolled_back']),
            rules=dict(type='list', elements='str'),
            root=dict(type='path', default='/'),
            binary=dict(type='str', default='llmtune'),
            fail_on_findings=dict(type='bool', default=False),
            fail_on=dict(type='str', default='warning', choices=['critical', 'warning', 'info']),
            wait=dict(type='bool'),
            force=dict(type='bool', default=False),
            rollback=dict(type='str', default='last_run', choices=['last_run', 'all', 'to']),
            to=dict(type='int'),
            params=dict(type='dict', options=PARAMS_SPEC),
            pin=dict(type='bool', default=False),
        ),
        required_if=[('rollback', 'to', ('to',))],
        supports_check_mode=True,
    )
    run_state(Llmtune(module), module.params['state'])


def run_state(lt, state):
    if state == 'audited':
        lt.audited()
    elif state == 'applied':
        lt.applied()
    else:
        lt.rolled_back()


if __name__ == '__main__':
    main()
