#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
A hung check never hangs the audit or the health check (issue 31 item 10): `--timeout SECONDS`
bounds the whole run and `--rule-timeout SECONDS` each rule; a rule that runs out is an error,
"timed out", that names itself, the other rules are judged as without the hang, an error never
drains a Slurm node unless --drain-on-error, and `audit --json` says how long each rule took
("ms"). The hang is a FUSE file whose reads (or opens) are never answered (tests/lib/hangfs.py, in
a private mount namespace: root and /dev/fuse needed; skipped with 77 without them unless
LLMTUNE_REQUIRE_ALL=1) at proc/sys/kernel/numa_balancing of a copy of dgx-a100, which the rules
numa-balancing and numa-balancing-persistent read. The read deadline is set long (--read-timeout
60), so only the new bounds can end the wait in time.

    timeouts.py --llmtune BIN --roots DIR [--only NAME,...]

  rule-timeout  audit --rule-timeout 1: numa-balancing is ERROR "timed out" (--rule-timeout) and
                took at least its second; numa-balancing-persistent, which needs the same fact, is
                an error too; every other rule as in the audit without the hang
  run-timeout   audit --timeout 2: the run ends long before the read deadline, numa-balancing is
                "timed out" (--timeout), the rules before it are as without the hang
  health-check  health-check --slurm (a fake scontrol) --rule-timeout 1: the rule is named
                "cannot be evaluated (timed out", nothing drains; with --drain-on-error the drain
                reason names it; the same settings from health-check.conf (timeout, rule-timeout)
  hung-open     an open that never answers (no read apart helps): the run gives up at the rule's
                time, not the read deadline's, naming the rule and the file; health-check exits 2
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'slurm'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)
from confine import Tool, PROFILE  # noqa: E402
import hangfs  # noqa: E402
from test_slurm_fake import Fake, record  # noqa: E402
from hostreads import stderr_says  # noqa: E402

HUNG = os.path.join('proc', 'sys', 'kernel', 'numa_balancing')
RULE = 'numa-balancing'
SAME_FACT = ('numa-balancing', 'numa-balancing-persistent')
SLOW = ['--read-timeout', '60']
LIMIT = 60  # the read deadline: a run that lasts this long was not bounded by the new options


def audit(t, root, *extra):
    start = time.monotonic()
    rc, out, err = t.run(root, *SLOW, 'audit', '--profile', PROFILE, '--json', *extra, timeout=2 * LIMIT)
    took = time.monotonic() - start
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {'results': []}
    return rc, {r['rule']: r for r in doc['results']}, err, took


def reference(t):
    rc, res, err, _ = audit(t, t.fresh())
    check(rc in (0, 2, 3) and res, f'the audit without a hang answers (rc {rc}: {err.strip()[-160:]})')
    check(all(isinstance(r.get('ms'), (int, float)) and r['ms'] >= 0 for r in res.values()),
          'audit --json: every rule has "ms", a number of milliseconds')
    return res


def same_as(res, ref, skip, tag):
    differ = [k for k in ref if k not in skip and (k not in res or res[k]['status'] != ref[k]['status']
                                                   or res[k]['observed'] != ref[k]['observed'])]
    check(not differ, f'{tag}: every other rule as without the hang ({differ[:5]})')


def hung_root(t, hang='read'):
    root = t.fresh()
    return root, hangfs.HangFile(os.path.join(root, HUNG), hang=hang)


def hung_audit(t, *extra):
    """audit with EXTRA on a root whose HUNG file never answers: (rc, results, stderr, seconds)."""
    root, hung = hung_root(t)
    try:
        return audit(t, root, *extra)
    finally:
        hung.close()


def rule_timeout(t, ref):
    rc, res, err, took = hung_audit(t, '--rule-timeout', '1')
    r = res.get(RULE, {})
    check(took < LIMIT, f'--rule-timeout 1: the audit ends in {took:.1f} s, before the read deadline ({LIMIT} s)')
    check(r.get('status') == 'error' and (r.get('reason') or '').startswith('timed out')
          and '--rule-timeout 1.000 s' in (r.get('reason') or ''),
          f'... {RULE} is an error, "timed out", naming --rule-timeout ({r.get("status")}: {r.get("reason")})')
    check(r.get('ms', 0) >= 1000, f'... its "ms" says it had its second ({r.get("ms")})')
    p = res.get('numa-balancing-persistent', {})
    check(p.get('status') == 'error' and 'timed out' in (p.get('reason') or ''),
          f'... numa-balancing-persistent, on the same fact, is an error "timed out" ({p.get("reason")})')
    check(rc == 3 or (rc == 2 and any(v['status'] == 'fail' for v in res.values())),
          f'... exit status 3 (could not evaluate) unless a rule failed (rc {rc})')
    same_as(res, ref, SAME_FACT, '--rule-timeout 1')


def run_timeout(t, ref):
    rc, res, err, took = hung_audit(t, '--timeout', '2')
    r = res.get(RULE, {})
    check(took < LIMIT, f'--timeout 2: the audit ends in {took:.1f} s, before the read deadline ({LIMIT} s)')
    check(r.get('status') == 'error' and "the run's time (--timeout 2.000 s) ran out" in (r.get('reason') or ''),
          f'... {RULE} is an error naming --timeout ({r.get("status")}: {r.get("reason")})')
    order = list(ref)
    before = order[:order.index(RULE)]
    same_as({k: v for k, v in res.items() if k in before}, {k: ref[k] for k in before}, (), '--timeout 2, the rules before it')
    check(len(res) == len(ref), f'... every rule is reported ({len(res)} of {len(ref)})')


def hc(t, fake, root, *args):
    start = time.monotonic()
    try:
        p = subprocess.run([t.bin, '--root', root, *SLOW, 'health-check', '--slurm', '--node', 'n1',
                            '--profile', PROFILE, '--severity', 'info', *args],
                           capture_output=True, text=True, env=fake.env(), timeout=2 * LIMIT, stdin=subprocess.DEVNULL)
        return p.returncode, p.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired:
        return 'hang', '', time.monotonic() - start


def drains(fake):
    return [c for c in fake.calls() if 'State=DRAIN' in c]


def counted(err):
    """The rules a health check counted (its NHC-style ERROR lines)."""
    return {ln.split('Health check failed:')[1].split()[0] for ln in err.splitlines() if 'Health check failed:' in ln}


def health_check(t, ref, tmp):
    fake = Fake(tmp)
    rc, err, took = hc(t, fake, t.fresh())
    plain = counted(err)
    check(rc in (0, 1) and RULE in plain, f'health-check without a hang answers, counting {RULE} (rc {rc}: {sorted(plain)[:6]})')
    for how, args in (('--rule-timeout 1', ['--rule-timeout', '1']), ('health-check.conf', None)):
        root, hung = hung_root(t)
        if args is None:
            conf = os.path.join(root, 'etc', 'llmtune', 'health-check.conf')
            os.makedirs(os.path.dirname(conf), exist_ok=True)
            with open(conf, 'w') as f:
                f.write('[health-check]\ntimeout = 30\nrule-timeout = 1\n')
            args = []
        try:
            fake.answer(record('n1', 'IDLE'))
            rc, err, took = hc(t, fake, root, *args)
            check(took < LIMIT and rc in (0, 1),
                  f'health-check {how}: answers in {took:.1f} s (rc {rc}: {err.strip()[-160:]})')
            check(f'{RULE} cannot be evaluated (timed out: its time (--rule-timeout 1.000 s) ran out' in err,
                  f'... names {RULE} as timed out on stderr ({err.strip()[-300:]})')
            got = counted(err)
            check(got == plain - set(SAME_FACT) and not any(RULE in ' '.join(c) for c in drains(fake)),
                  f'... the rules that timed out are not counted and drain nothing: the others are counted as '
                  f'without the hang ({sorted(got ^ plain)}; {drains(fake)})')
            if how != '--rule-timeout 1':
                continue
            fake.answer(record('n1', 'IDLE'))
            rc, err, took = hc(t, fake, root, *args, '--drain-on-error')
            check(rc == 1 and drains(fake) and f'Health check failed:  {RULE} cannot be evaluated' in err,
                  f'... with --drain-on-error it counts and drains (rc {rc}: {drains(fake)})')
        finally:
            hung.close()


def hung_open(t, ref, tmp):
    """The opener waits in the kernel even through SIGKILL: the guard gives up for the run, at the
    rule's time rather than the read deadline; the process ends once the server goes."""
    fake = Fake(tmp)
    for cmd, status in ((['audit', '--profile', PROFILE, '--rule-timeout', '1'], 1),
                        (['health-check', '--slurm', '--node', 'n1', '--profile', PROFILE, '--rule-timeout', '1'], 2)):
        root, hung = hung_root(t, hang='open')
        p = subprocess.Popen([t.bin, '--root', root, *SLOW, *cmd], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=fake.env())
        start = time.monotonic()
        try:
            err = stderr_says(p, 'giving up', LIMIT)
            took = time.monotonic() - start
        finally:
            hung.close()
            try:
                p.wait(timeout=LIMIT)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stderr.close()
        check(took < LIMIT and f'rule {RULE}: reading {HUNG} did not answer within 1.000 s' in err,
              f'an open that never answers, {cmd[0]}: gives up in {took:.1f} s naming the rule and the file '
              f'({err.strip()[-200:]})')
        check(p.returncode == status, f'... exit status {status} ({p.returncode})')


CASES = {'rule-timeout': rule_timeout, 'run-timeout': run_timeout, 'health-check': health_check,
         'hung-open': hung_open}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--only', default='')
    a = ap.parse_args()
    only = [x for x in a.only.split(',') if x]
    try:
        hangfs.private_mounts()
        open('/dev/fuse', 'rb').close()
    except OSError as e:
        print(f'skip: no FUSE file can be mounted here ({e})')
        return 1 if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1' else 77
    shm = '/dev/shm' if os.access('/dev/shm', os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix='llmtune-timeouts-', dir=shm) as tmp:
        t = Tool(a.llmtune, a.roots, tmp)
        ref = reference(t)
        for name, fn in CASES.items():
            if only and name not in only:
                continue
            print(f'== {name}', flush=True)
            if fn in (health_check, hung_open):
                fn(t, ref, tempfile.mkdtemp(dir=tmp))
            else:
                fn(t, ref)
    return finish()


if __name__ == '__main__':
    sys.exit(main())
