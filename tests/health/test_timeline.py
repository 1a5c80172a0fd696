#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Health over time (issue 33): the rules that judge events and counters in time, on copies of a
fixture root with kernel logs, captures and state written by the test.

    test_timeline.py --llmtune BIN --roots BUILT_ROOTS [--corpus DIR]

Xid windows: an event counts while it is younger than the profile's xid_window and the driver has
not logged the GPU's reset since (Xid 154 back to "None"); a storm of one code is one finding; a
syslog line without a time cannot be judged. The corpus's real Xid 119 storm (dmesg -T) is judged
against the log's last line.

Acks: `llmtune ack` of an Xid finding makes audit, health-check, the Prometheus export and report
say "acked"; a new Xid of the GPU, another GPU's Xid (with --item), the expiry and unack raise it
again; verify checks the records, and an edited one makes every ack void.

Counters between runs: the InfiniBand and AER growth rules judge what rose since the reading the
last health check recorded (a read-only audit records nothing), across a reboot and a cleared
counter.

Prolog: `health-check --prolog` finds the compute processes and memory of a real desktop capture
(RTX 4000 Ada: python and chromium), passes an idle one (P100), and the prolog rules stay out of
every other audit.

NVLink from the hardware: on the DGX A100 fixture (NVSwitches), the corpus's real `nvidia-smi nvlink
-s` outputs given to an A100 capture: 12 of 12 up passes, one link down fails gpu-nvlink-up, "all
links are inActive" fails gpu-nvlink-fabric. Exit 0 pass, 1 fail.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)

XID_SEQ = (
    '[ 3600.100000] NVRM: Xid (PCI:0000:86:00): 48, pid=7, name=train, DBE (double bit error) ECC error\n'
    '[ 3600.200000] NVRM: Xid (PCI:0000:86:00): 63, pid=7, name=train, Row Remapper: New row marked for '
    'remapping, reset gpu to activate.\n'
    '[ 3600.300000] NVRM: Xid (PCI:0000:86:00): 94, pid=7, name=train, Contained: CE User Channel (0x9).\n'
    '[ 3600.400000] NVRM: Xid (PCI:0000:86:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 '
    '(GPU Reset Required)\n')
XID_RESET = ('[ 4000.000000] NVRM: Xid (PCI:0000:86:00): 154, GPU recovery action changed from 0x1 '
             '(GPU Reset Required) to 0x0 (None)\n')
XID_AGAIN = '[ 7000.000000] NVRM: Xid (PCI:0000:86:00): 94, pid=8, name=train, Contained: SM (0x1).\n'


class Tree:
    """A copy of a built fixture root the test may write into."""

    def __init__(self, a, tmp, src, name):
        self.a = a
        self.path = os.path.join(tmp, name)
        shutil.copytree(os.path.join(a.roots, src), self.path, symlinks=True)

    def write(self, rel, text):
        p = os.path.join(self.path, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'w') as f:
            f.write(text)

    def remove(self, rel):
        p = os.path.join(self.path, rel)
        if os.path.lexists(p):
            os.unlink(p)

    def run(self, *args):
        return subprocess.run([self.a.llmtune, '--root', self.path, *args], capture_output=True, text=True,
                              timeout=120, env=dict(os.environ, NO_COLOR='1'))

    def audit(self, profile, *rules):
        cmd = ['audit', '--json', '--profile', profile]
        for r in rules:
            cmd += ['--rule', r]
        p = self.run(*cmd)
        if p.returncode not in (0, 2, 3):
            raise RuntimeError('audit: exit %d: %s' % (p.returncode, p.stderr[-2000:]))
        return {r['rule']: r for r in json.loads(p.stdout)['results']}

    def facts(self, prefix):
        p = self.run('facts', '--json', prefix)
        return {k: v.get('value', v.get('status')) for k, v in json.loads(p.stdout)['facts'].items()}


def expect(tree, profile, rule, status, text, what):
    r = tree.audit(profile, rule)[rule]
    ok = r['status'] == status and (text is None or text in (r['observed'] or '') + (r['reason'] or ''))
    check(ok, '%s: %s %s (observed %r, reason %r)' % (what, rule, r['status'], r['observed'], r['reason']))


def xid_windows(a, tmp):
    t = Tree(a, tmp, 'vm-nogpu', 'xid')
    unlimited = os.path.join(tmp, 'since-boot.ini')
    with open(unlimited, 'w') as f:
        f.write('[profile]\nname = since-boot\ndescription = Xids count since boot\ninherits = base\n\n'
                '[params]\nxid_window = unlimited\n')
    t.write('var/log/dmesg', XID_SEQ)
    t.write('proc/uptime', '7200.00 100.00\n')
    expect(t, 'base', 'gpu-xid-critical', 'fail', 'xid.0000:86:00.critical = 48,63,94,154',
           'Xid 48 -> 63 -> 94 an hour ago, 24h window')
    t.write('proc/uptime', '%.2f 100.00\n' % (3600.4 + 86400 + 60))
    expect(t, 'base', 'gpu-xid-critical', 'pass', None, 'the same events a day and a minute ago')
    expect(t, unlimited, 'gpu-xid-critical', 'fail', '48,63,94,154', 'the same with xid_window = unlimited')
    t.write('var/log/dmesg', XID_SEQ + XID_RESET)
    t.write('proc/uptime', '4100.00 100.00\n')
    expect(t, unlimited, 'gpu-xid-critical', 'pass', None, 'the driver logged the GPU back to "None" (reset)')
    t.write('var/log/dmesg', XID_SEQ + XID_RESET + XID_AGAIN)
    t.write('proc/uptime', '7100.00 100.00\n')
    expect(t, 'base', 'gpu-xid-critical', 'fail', 'xid.0000:86:00.critical = 94 ', 'a new Xid 94 after the reset')
    f = t.facts('xid.0000:86:00')
    check(f.get('xid.0000:86:00.code.94.count') == 2 and f.get('xid.0000:86:00.critical_age') == 100,
          'Xid 94 collapsed over the reset, its age from /proc/uptime: %r' %
          {k: v for k, v in f.items() if 'code.94' in k or 'age' in k})

    # a storm of 629 identical Xid 13 in a /dev/kmsg capture: one warning finding
    t.remove('var/log/dmesg')
    t.write('var/lib/llmtune/captures/kmsg.txt', ''.join(
        '4,%d,%d,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python, Graphics SM Warp Exception\n' %
        (1000 + i, 5000000000 + i * 1000) for i in range(629)))
    t.write('proc/uptime', '6000.00 100.00\n')
    expect(t, 'base', 'gpu-xid-warning', 'fail', 'xid.0000:3b:00.warning = 13 (1 of 1 item)', '629 x Xid 13')
    f = t.facts('xid.0000:3b:00.code')
    check(f.get('xid.0000:3b:00.code.13.count') == 629 and f.get('xid.0000:3b:00.code.13.first') == 'boot+5000.0s',
          'the storm as one code with a count and first time: %r' % f)
    expect(t, 'base', 'gpu-xid-critical', 'pass', None, 'a storm of warnings is no critical finding')

    # a syslog line without a printk time: the age cannot be told
    t.remove('var/lib/llmtune/captures/kmsg.txt')
    t.write('var/log/kern.log', 'Nov 30 01:00:00 n1 kernel: NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the '
            'bus.\n')
    expect(t, 'base', 'gpu-xid-critical', 'error', 'no time', 'an Xid without a time')
    t.remove('var/log/kern.log')
    expect(t, 'base', 'gpu-xid-critical', 'n/a', 'no kernel log', 'no kernel log at all')
    print('ok: Xid windows, resets, storms and untimed lines')


def xid_corpus(a, tmp):
    src = os.path.join(a.corpus or '', 'nvidia-smi', 'dmesg-xid119-gsp-timeout-dell-xe9680.log')
    if not a.corpus or not os.path.exists(src):
        if os.environ.get('LLMTUNE_REQUIRE_CORPUS') == '1':
            check(False, 'corpus file %s missing and LLMTUNE_REQUIRE_CORPUS=1' % src)
        print('skipped: the corpus Xid 119 log (no corpus)')
        return
    t = Tree(a, tmp, 'vm-nogpu', 'xid-corpus')
    with open(src) as f:
        t.write('var/log/dmesg', f.read())
    expect(t, 'base', 'gpu-xid-critical', 'fail', 'xid.0000:9b:00.critical = 119', 'the real Xid 119 storm')
    f = t.facts('xid.0000:9b:00.code.119')
    check(f.get('xid.0000:9b:00.code.119.count') == 5 and f.get('xid.0000:9b:00.code.119.last') ==
          '2025-02-23T16:30:13Z', 'five Xid 119 lines, one code with its last time: %r' % f)
    print('ok: the corpus Xid 119 storm')


XID79 = '[ %d.0] NVRM: Xid (PCI:0000:c6:00): 79, pid=1, name=python, GPU has fallen off the bus.\n'


def status_of(tree, rule='gpu-xid-critical'):
    r = tree.audit('base', rule)[rule]
    return r['status'], (r.get('ack') or {}).get('note') or ''


def acks(a, tmp):
    t = Tree(a, tmp, 'vm-nogpu', 'ack')
    t.write('proc/uptime', '1000.00 1.00\n')
    t.write('var/log/dmesg', XID79 % 100)
    p = t.run('ack', 'gpu-xid-critical', '--profile', 'base')
    check(p.returncode == 1 and '--reason' in p.stderr, 'ack without a reason refused (%d %r)' % (p.returncode, p.stderr))
    p = t.run('ack', 'thp-enabled', '--reason', 'x', '--profile', 'base')
    check(p.returncode == 1 and 'no finding to acknowledge' in p.stderr, 'a passing rule cannot be acked (%r)' % p.stderr)
    p = t.run('ack', 'gpu-xid-critical', '--reason', 'x', '--item', 'mlx5_9', '--profile', 'base')
    check(p.returncode == 1 and 'no failing item' in p.stderr, 'an item that does not fail is refused (%r)' % p.stderr)
    p = t.run('ack', 'gpu-xid-critical', '--reason', 'x', '--until', '2001-01-01', '--profile', 'base')
    check(p.returncode == 1 and 'in the past' in p.stderr, '--until in the past refused (%r)' % p.stderr)
    p = t.run('ack', 'gpu-xid-critical', '--reason', 'RMA 1234 opened; GPU out of the pool', '--for', '7d',
              '--profile', 'base')
    check(p.returncode == 0 and 'change log record 1' in p.stdout, 'ack recorded (%d %r %r)' %
          (p.returncode, p.stdout, p.stderr))
    st, note = status_of(t)
    check(st == 'acked' and 'RMA 1234 opened' in note and 'by root' in note, 'audit: acked (%s %r)' % (st, note))
    p = t.run('audit', '--profile', 'base', '--rule', 'gpu-xid-critical')
    check(p.returncode == 0 and 'ACKED' in p.stdout and '1 acknowledged' in p.stdout,
          'audit exit 0, ACKED in the table (%d)' % p.returncode)
    p = t.run('health-check', '--profile', 'base')
    check(p.returncode == 0 and 'NOTE:  llmtune:  gpu-xid-critical' in p.stderr,
          'health-check: healthy, the ack noted (%d %r)' % (p.returncode, p.stderr))
    p = t.run('audit', '--format', 'prometheus', '--profile', 'base', '--rule', 'gpu-xid-critical')
    # the rule's series is not a finding (0) and its status, the stateset's value, is acked
    check(re.search(r'^llmtune_rule_result\{rule="gpu-xid-critical",[^}]*\} 0$', p.stdout, re.M) and
          'llmtune_rule_status{rule="gpu-xid-critical",status="acked"} 1' in p.stdout and
          'llmtune_audit_rules{status="acked",profile="base"} 1' in p.stdout,
          'prometheus: the rule acked (0, status acked), one acked rule')
    p = t.run('audit', '--json', '--profile', 'base')
    audit_json = os.path.join(tmp, 'ack-audit.json')
    with open(audit_json, 'w') as f:
        f.write(p.stdout)
    r = subprocess.run([a.llmtune, 'report', '--json', audit_json], capture_output=True, text=True)
    rep = json.loads(r.stdout) if r.returncode in (0, 2) else {}
    rule = [x for x in rep.get('rules', []) if x['rule'] == 'gpu-xid-critical']
    check(rule and rule[0]['hosts'].get('acked') == 1 and rule[0]['hosts'].get('fail') == 0,
          'report: the host counted as acked (%r)' % (rule and rule[0]['hosts']))
    p = t.run('verify')
    check(p.returncode == 0, 'verify: the ack record is in an intact chain (%d %r)' % (p.returncode, p.stdout[-300:]))

    # a new Xid 79 of the same GPU: raised again
    t.write('var/log/dmesg', XID79 % 100 + XID79 % 900)
    st, note = status_of(t)
    check(st == 'fail' and 'critical_events was 1 at ack 1, now 2' in note, 'a new Xid raises it (%s %r)' % (st, note))
    p = t.run('health-check', '--profile', 'base')
    check(p.returncode == 1, 'health-check: unhealthy again (%d)' % p.returncode)

    # an ack of one GPU does not cover another
    p = t.run('ack', 'gpu-xid-critical', '--item', '0000:c6:00', '--reason', 'same GPU, same RMA', '--profile', 'base')
    check(p.returncode == 0, 'ack --item 0000:c6:00 (%r)' % p.stderr)
    check(status_of(t)[0] == 'acked', 'acked again')
    t.write('var/log/dmesg', XID79 % 100 + XID79 % 900 +
            '[ 950.0] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python, DBE (double bit error)\n')
    st, note = status_of(t)
    check(st == 'fail' and 'xid.0000:3b:00.critical is new since ack' in note, 'another GPU is not covered (%r)' % note)
    t.write('var/log/dmesg', XID79 % 100 + XID79 % 900)

    # unack: withdrawn, recorded, the ack records stay
    p = t.run('unack', 'gpu-xid-critical', '--reason', 'GPU replaced')
    check(p.returncode == 0 and p.stdout.count('withdrew') == 2, 'unack withdraws both (%r)' % p.stdout)
    check(status_of(t)[0] == 'fail', 'after unack: fail')
    p = t.run('unack', 'gpu-xid-critical')
    check(p.returncode == 1 and 'no standing acknowledgement' in p.stderr, 'nothing left to withdraw (%r)' % p.stderr)
    p = t.run('ack', '--list', '--all', '--json')
    lst = json.loads(p.stdout)
    check([(x['seq'], x['state'], x['item']) for x in lst] == [(1, 'withdrawn', None), (2, 'withdrawn', '0000:c6:00')],
          'ack --list --all: both acks kept, withdrawn (%r)' % [(x['seq'], x['state']) for x in lst])
    p = t.run('ack', '--list')
    check(p.stdout.strip() == 'no active acknowledgements', 'ack --list: none active (%r)' % p.stdout[:200])

    # expiry
    p = t.run('ack', 'gpu-xid-critical', '--reason', 'short', '--for', '1s', '--profile', 'base')
    check(p.returncode == 0, 'ack --for 1s')
    time.sleep(2)  # the ack is older than its second: it has expired however slow the machine
    st, note = status_of(t)
    check(st == 'fail' and 'expired at' in note, 'the expired ack raises it (%s %r)' % (st, note))

    # an edited ack record: verify says so and no ack of that log is used
    p = t.run('ack', 'gpu-xid-critical', '--reason', 'honest reason', '--profile', 'base')
    log = os.path.join(t.path, 'var/lib/llmtune/changelog.jsonl')
    with open(log) as f:
        text = f.read()
    with open(log, 'w') as f:
        f.write(text.replace('honest reason', 'forged reason'))
    p = t.run('verify')
    check(p.returncode == 2, 'verify: the edited ack breaks the chain (%d)' % p.returncode)
    p = t.run('audit', '--json', '--profile', 'base', '--rule', 'gpu-xid-critical')
    r = json.loads(p.stdout)['results'][0]
    check(r['status'] == 'fail' and 'does not verify' in p.stderr, 'a log that does not verify: no ack used (%s %r)' %
          (r['status'], p.stderr))
    print('ok: acks recorded, shown, raised again by new evidence, items, unack, expiry and tampering')


def counters(a, tmp):
    t = Tree(a, tmp, 'hgx-h100', 'counters')
    prof = 'h100-sxm-8x'
    port = 'sys/class/infiniband/mlx5_0/ports/1/counters/'
    t.write('proc/sys/kernel/random/boot_id', '11111111-2222-3333-4444-555555555555\n')

    def ib(link_downed, symbol='0'):
        for name, v in (('link_downed', link_downed), ('symbol_error', symbol), ('port_rcv_errors', '0'),
                        ('link_error_recovery', '0')):
            t.write(port + name, v + '\n')
    gpu = os.path.realpath(os.path.join(t.path, 'sys/bus/pci/devices/0000:18:00.0'))

    def aer(nonfatal):
        for kind, key, v in (('correctable', 'TOTAL_ERR_COR', 0), ('nonfatal', 'TOTAL_ERR_NONFATAL', nonfatal),
                             ('fatal', 'TOTAL_ERR_FATAL', 0)):
            with open(os.path.join(gpu, 'aer_dev_' + kind), 'w') as f:
                f.write('Undefined 0\n%s %d\n' % (key, v))
    ib('3')
    aer(1)
    state = os.path.join(t.path, 'var/lib/llmtune/counters.state')
    r = t.audit(prof, 'ib-port-errors-growing', 'ib-port-symbol-errors')
    check(r['ib-port-errors-growing']['status'] == 'n/a' and 'no earlier reading' in r['ib-port-errors-growing']['reason'],
          'first run: no growth known (%r)' % r['ib-port-errors-growing']['reason'])
    check(r['ib-port-symbol-errors']['status'] == 'n/a', 'link_downed 3 since boot is no finding by itself (%s)' %
          r['ib-port-symbol-errors']['status'])
    check(not os.path.exists(state), 'a read-only audit under --root records nothing')
    p = t.run('health-check', '--profile', prof)
    check(not os.path.exists(state), 'a health check under --root only reads the tree')
    p = t.run('health-check', '--profile', prof, '--record-counters')
    check(os.path.exists(state) and os.stat(state).st_mode & 0o777 == 0o600,
          'health-check --record-counters recorded the counters, root-only (%r)' % p.stderr[-300:])
    ib('6')
    aer(2)
    for _ in range(2):  # an audit judges against the health check's reading and does not move it
        r = t.audit(prof, 'ib-port-errors-growing', 'pcie-aer-errors-growing')
        check(r['ib-port-errors-growing']['status'] == 'fail' and
              r['ib-port-errors-growing']['observed'].startswith('ib.mlx5_0.port.1.link_downed_growth = 3'),
              'link_downed rose by 3 since the last check: %r' % r['ib-port-errors-growing']['observed'])
        check(r['pcie-aer-errors-growing']['status'] == 'fail' and
              'aer.0000:18:00.0.nonfatal_growth = 1' in r['pcie-aer-errors-growing']['observed'],
              'a new non-fatal AER error on the GPU: %r' % r['pcie-aer-errors-growing']['observed'])
    p = t.run('health-check', '--profile', prof, '--severity', 'warning', '--record-counters')
    check(p.returncode == 1 and 'ib-port-errors-growing' in p.stderr, 'health-check at warning: unhealthy (%d)' %
          p.returncode)
    r = t.audit(prof, 'ib-port-errors-growing', 'pcie-aer-errors-growing')
    check(r['ib-port-errors-growing']['status'] == 'pass' and r['pcie-aer-errors-growing']['status'] == 'pass',
          'nothing rose since that check: pass (%s %s)' % (r['ib-port-errors-growing']['status'],
                                                            r['pcie-aer-errors-growing']['status']))
    t.write('proc/sys/kernel/random/boot_id', '99999999-2222-3333-4444-555555555555\n')
    ib('1')
    r = t.audit(prof, 'ib-port-errors-growing')['ib-port-errors-growing']
    check(r['status'] == 'fail' and r['observed'].startswith('ib.mlx5_0.port.1.link_downed_growth = 1'),
          'after a reboot the counter counts from zero: %r' % r['observed'])
    t.write('var/lib/llmtune/counters.state', 'garbage\n')
    r = t.audit(prof, 'ib-port-errors-growing')['ib-port-errors-growing']
    check(r['status'] == 'n/a' and 'not one llmtune writes' in r['reason'], 'a foreign state file: n/a (%r)' % r['reason'])
    p = t.run('health-check', '--profile', prof, '--record-counters')
    with open(state) as f:
        check(f.read().startswith('llmtune-counters 1\n'), 'the next health check replaces it')
    print('ok: counters judged by their growth since the last health check')


def corpus_dir(a, what):
    """The corpus's nvidia-smi folder, or None after saying WHAT is skipped (a failure when
    LLMTUNE_REQUIRE_CORPUS=1)."""
    src = os.path.join(a.corpus or '', 'nvidia-smi')
    if a.corpus and os.path.isdir(src):
        return src
    if os.environ.get('LLMTUNE_REQUIRE_CORPUS') == '1':
        check(False, 'corpus %s missing and LLMTUNE_REQUIRE_CORPUS=1' % src)
    print('skipped: %s (no corpus)' % what)
    return None


def prolog(a, tmp):
    src = corpus_dir(a, 'prolog on corpus captures')
    if not src:
        return
    t = Tree(a, tmp, 'vm-nogpu', 'prolog')
    with open(os.path.join(src, 'rtx-4000-sff-ada-driver595-v13.xml')) as f:
        t.write('var/lib/llmtune/captures/nvidia-smi.xml', f.read())
    p = t.run('health-check', '--profile', 'base', '--prolog')
    check(p.returncode == 1 and 'prolog-gpu-no-processes nvml.0.processes.compute = 2' in p.stderr and
          'prolog-gpu-memory-free nvml.0.memory.used = 3705667584' in p.stderr,
          'a GPU with python and chromium on it: not ready for a job (%d %r)' % (p.returncode, p.stderr[-600:]))
    p = t.run('health-check', '--profile', 'base')
    check('prolog-' not in p.stderr, 'without --prolog the GPUs in use are no finding (%r)' % p.stderr[-300:])
    r = t.audit('base')
    check(not [k for k in r if k.startswith('prolog-')], 'an audit leaves the prolog rules out')
    r = t.audit('base', 'prolog-gpu-no-processes')['prolog-gpu-no-processes']
    check(r['status'] == 'fail', 'audit --rule prolog-gpu-no-processes still judges it (%s)' % r['status'])
    with open(os.path.join(src, 'tesla-p100-pcie-16gb-gcp-driver510-v11.xml')) as f:
        t.write('var/lib/llmtune/captures/nvidia-smi.xml', f.read())
    p = t.run('health-check', '--profile', 'base', '--prolog')
    check('prolog-' not in p.stderr, 'an idle P100: ready (%r)' % p.stderr[-300:])
    print('ok: health-check --prolog on real captures')


def nvlink(a, tmp):
    src = corpus_dir(a, 'NVLink on corpus captures')
    if not src:
        return
    t = Tree(a, tmp, 'dgx-a100', 'nvlink')

    def read(name):
        with open(os.path.join(src, name)) as f:
            return f.read()
    xml = read('a100-sxm4-80gb-mig-driver535-v12.xml')
    x8 = read('nvlink-s-a100-sxm4-80gb-x8.txt')

    def capture(uuid, status):
        t.write('var/lib/llmtune/captures/nvidia-smi.xml', xml.replace('GPU-513536b6-7d19-9063-b049-1e69664bb298', uuid))
        t.write('var/lib/llmtune/captures/nvidia-smi-nvlink.txt', status)
    rules = ('gpu-nvlink-up', 'gpu-nvlink-fabric', 'gpu-nvlink-count')
    capture('GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4', x8)
    r = t.audit('a100-8x', *rules)
    check(all(r[k]['status'] == 'pass' for k in rules), '12 of 12 links up: %r' % {k: r[k]['status'] for k in rules})
    i = x8.index('Link 3: ', x8.index('GPU 1:'))
    capture('GPU-a7605225-d684-1f65-4ad4-ee2ab39338b4', x8[:i] + 'Link 3: <inactive>' + x8[i + len('Link 3: 25 GB/s'):])
    r = t.audit('a100-8x', *rules)
    check(r['gpu-nvlink-up']['status'] == 'fail' and 'nvml.0.nvlink.down = 1' in r['gpu-nvlink-up']['observed'],
          'one link down: %r' % r['gpu-nvlink-up']['observed'])
    r = t.audit('base', 'gpu-nvlink-up')['gpu-nvlink-up']
    check(r['status'] == 'fail', 'the same without a link count in the profile (base): %s' % r['status'])
    capture('GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44', read('nvlink-s-a100-sxm4-80gb-all-links-inactive-azure.txt'))
    r = t.audit('a100-8x', *rules)
    check(r['gpu-nvlink-fabric']['status'] == 'fail' and 'nvml.0.nvlink.up = 0' in r['gpu-nvlink-fabric']['observed'],
          'all links inactive on an NVSwitch board: %r' % r['gpu-nvlink-fabric']['observed'])
    print('ok: NVLink counted by the hardware')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--corpus')
    a = ap.parse_args()
    a.llmtune = os.path.abspath(a.llmtune)
    with tempfile.TemporaryDirectory(prefix='llmtune-timeline-') as tmp:
        xid_windows(a, tmp)
        xid_corpus(a, tmp)
        acks(a, tmp)
        counters(a, tmp)
        prolog(a, tmp)
        nvlink(a, tmp)
    return finish()


if __name__ == '__main__':
    sys.exit(main())
