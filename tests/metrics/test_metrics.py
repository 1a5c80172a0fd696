#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
llmtune's exports for the systems that watch a fleet, checked against the real consumers' tools.

    test_metrics.py --llmtune BIN --roots DIR --source SRC --build BUILD prometheus
        `llmtune audit --format prometheus` on every fixture root: accepted by `promtool check
        metrics`; parsed here (an independent parser of the text format) and compared with
        `audit --json`; hostile rule text escaped (promtool accepts it, the label reads back);
        the change log's state after apply, drift and tampering, as `verify --json` says;
        --output atomic (a reader never sees half a file); the metrics unit's command line run;
        the example alerting rules accepted by `promtool check rules` and their unit tests
        (`promtool test rules`). Skips (77) without promtool unless LLMTUNE_REQUIRE_ALL=1.

    test_metrics.py ... nfd
        `llmtune audit --format nfd` on every fixture root: every line a valid
        node-feature-discovery feature (Kubernetes label name and value syntax), the values the
        facts hold (GPU model and count, IB rate), unreadable facts give no label; the DaemonSets
        (packaging/kubernetes/) pass `yamllint --strict` with its default settings and have the
        fields the apps/v1 schema requires; each fixture root audited through the pod's mounts
        (a directory laid out as the container sees it, from the volumes and volumeMounts, and
        llmtune run with the arguments the container's command gives) gives the direct audit's
        results rule by rule; the node-problem-detector plugin's configuration holds together and
        its script exits 0/1/2 (OK/NonOK/Unknown) with a one-line message. Skips (77) without
        yamllint unless LLMTUNE_REQUIRE_ALL=1.
"""
import argparse
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, failures  # noqa: E402  (tests/lib/checklib.py)

SKIP = 77
ROOTS = {'dgx-a100': 'a100-8x', 'hgx-h100': 'h100-sxm-8x', 'ws-4090': 'rtx4090-ws', 'vm-nogpu': 'base'}


def run(cmd, env=None, **kw):
    e = dict(os.environ, NO_COLOR='1', LC_ALL='C')
    e.update(env or {})
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, timeout=120, **kw)


def need(tool):
    path = shutil.which(tool)
    if path:
        return path
    if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1':
        sys.exit('%s not found and LLMTUNE_REQUIRE_ALL=1 (packaging/install-deps.sh installs it)' % tool)
    print('SKIP: %s not found (packaging/install-deps.sh installs it)' % tool)
    sys.exit(SKIP)


# --- Prometheus text format, parsed here -----------------------------------------------------

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')


def parse_labels(s):
    """'a="x\\"y",b="z"' -> {'a': 'x"y', 'b': 'z'}; raises on bad syntax."""
    out, i = {}, 0
    while i < len(s):
        m = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)="', s[i:])
        if not m:
            raise ValueError('bad label at %r' % s[i:])
        name, i = m.group(1), i + m.end()
        val = []
        while s[i] != '"':
            if s[i] == '\\':
                nxt = s[i + 1]
                val.append({'\\': '\\', '"': '"', 'n': '\n'}[nxt])
                i += 2
            else:
                val.append(s[i])
                i += 1
        out[name] = ''.join(val)
        i += 1
        if i < len(s):
            if s[i] != ',':
                raise ValueError('expected , at %r' % s[i:])
            i += 1
    return out


def parse_prom(text):
    """-> list of (name, labels, value) and {name: type}."""
    series, types = [], {}
    for line in text.splitlines():
        if line.startswith('# TYPE '):
            _, _, name, typ = line.split(' ', 3)
            types[name] = typ
            continue
        if line.startswith('#') or not line:
            continue
        m = LINE.match(line)
        if not m:
            raise ValueError('bad line %r' % line)
        series.append((m.group(1), parse_labels(m.group(3) or ''), float(m.group(4))))
    return series, types


def one(series, name, **labels):
    got = [v for n, lab, v in series if n == name and all(lab.get(k) == w for k, w in labels.items())]
    if len(got) != 1:
        raise KeyError('%s%r: %d series' % (name, labels, len(got)))
    return got[0]


def promtool_metrics(promtool, text, what):
    r = subprocess.run([promtool, 'check', 'metrics'], input=text.encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    return check(r.returncode == 0, '%s: promtool check metrics rejects it: %s' % (what, r.stdout.decode()[:600]))


def prom_audit(a, root, *extra, env=None):
    t0 = time.time()
    r = run([a.llmtune, '--root', root, 'audit', '--format', 'prometheus', *extra], env=env)
    t1 = time.time()
    return r, t0, t1


def test_roots(a, promtool):
    for name, profile in ROOTS.items():
        root = os.path.join(a.roots, name)
        # Until openat2's EAGAIN (a rename anywhere on a busy machine) is retried by the root
        # reader, one read in a few hundred can fail on a loaded machine: the pair is taken
        # again (at most 5 times) when the two audits' results differ, and must agree then.
        for attempt in range(5):
            r, t0, t1 = prom_audit(a, root, '--profile', profile)
            j = run([a.llmtune, '--root', root, 'audit', '--profile', profile, '--json'])
            statuses = {lab['rule']: lab['status'] for n, lab, v in parse_prom(r.stdout.decode())[0]
                        if n == 'llmtune_rule_status' and v == 1}
            if statuses == {x['rule']: x['status'] for x in json.loads(j.stdout)['results']}:
                break
            print('note: %s: prometheus and json audits differ (attempt %d); again' % (name, attempt + 1))
        check(r.returncode == j.returncode, '%s: prometheus exit %d, json exit %d' % (name, r.returncode, j.returncode))
        text = r.stdout.decode()
        if not promtool_metrics(promtool, text, name):
            continue
        series, types = parse_prom(text)
        doc = json.loads(j.stdout)
        check(all(t == 'gauge' for t in types.values()), '%s: every metric is a gauge: %r' % (name, types))
        rules = {lab['rule']: (lab, v) for n, lab, v in series if n == 'llmtune_rule_result'}
        check(len(rules) == len(doc['results']) == len([s for s in series if s[0] == 'llmtune_rule_result']),
              '%s: one series per rule (%d series, %d rules)' % (name, len(rules), len(doc['results'])))
        info = {lab['rule']: lab for n, lab, v in series if n == 'llmtune_rule_info' and v == 1}
        for res in doc['results']:
            lab, v = rules.get(res['rule'], ({}, None))
            # identity: no label that changes with the status (issue 31 item 11)
            want = {'rule': res['rule'], 'area': res['area'], 'severity': res['severity'],
                    'profile': doc['profile']['name']}
            check(lab == want, '%s: %s labels %r, want exactly %r' % (name, res['rule'], lab, want))
            check(v == (1 if res['status'] in ('fail', 'error') else 0), '%s: %s value %r' % (name, res['rule'], v))
            states = {lab2['status']: v2 for n, lab2, v2 in series
                      if n == 'llmtune_rule_status' and lab2['rule'] == res['rule']}
            check(set(states) == {'pass', 'fail', 'n/a', 'error', 'acked'} and
                  [s for s, v2 in states.items() if v2 == 1] == [res['status']],
                  '%s: %s status stateset %r, audit --json says %s' % (name, res['rule'], states, res['status']))
            check(info.get(res['rule']) == {'rule': res['rule'], 'title': res['title'], 'area': res['area']},
                  '%s: %s info %r' % (name, res['rule'], info.get(res['rule'])))
        for st, key in (('pass', 'pass'), ('fail', 'fail'), ('n/a', 'na'), ('error', 'error')):
            check(one(series, 'llmtune_audit_rules', status=st) == doc['summary'][key],
                  '%s: llmtune_audit_rules{status=%s}' % (name, st))
        for sev in ('info', 'warning', 'critical'):
            for st in ('fail', 'error'):
                want = sum(1 for x in doc['results'] if x['severity'] == sev and x['status'] == st)
                check(one(series, 'llmtune_audit_findings', severity=sev, status=st) == want,
                      '%s: findings %s/%s = %d' % (name, sev, st, want))
        ts = one(series, 'llmtune_audit_timestamp_seconds')
        check(t0 - 1 <= ts <= t1 + 1, '%s: audit timestamp %f outside [%f, %f]' % (name, ts, t0, t1))
        dur = one(series, 'llmtune_audit_duration_seconds')
        check(0 < dur <= t1 - t0, '%s: duration %f not in (0, %f]' % (name, dur, t1 - t0))
        check(one(series, 'llmtune_changelog_verify_status', status='clean') == 1 and
              one(series, 'llmtune_changelog_records') == 0, '%s: a fixture root has an empty, clean change log' % name)
        check(not [s for s in series if s[0] == 'llmtune_changelog_last_apply_timestamp_seconds'],
              '%s: no last-apply series when nothing was applied' % name)
        print('ok: %s: %d rule series, promtool accepts, values as audit --json, took %.3f s' % (name, len(rules), dur))


HOSTILE_TITLE = (b'quote " backslash \\ {brace="x"} \\n not a newline, comma, equals= '
                 b'utf8 \xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac bad \xff\xfe \xc0\xaf overlong \x01ctl end')
HOSTILE_READ_BACK = ('quote " backslash \\ {brace="x"} \\n not a newline, comma, equals= '
                     'utf8 \u00e9 \u65e5\u672c bad ?? ?? overlong ?ctl end')


def test_hostile(a, promtool, tmp):
    data = os.path.join(tmp, 'data')
    shutil.copytree(os.path.join(a.source, 'rules'), os.path.join(data, 'rules'))
    shutil.copytree(os.path.join(a.source, 'profiles'), os.path.join(data, 'profiles'))
    with open(os.path.join(data, 'rules', 'zz-hostile.ini'), 'wb') as f:
        f.write(b'[zz-hostile]\ntitle = ' + HOSTILE_TITLE + b'\narea = memory\nseverity = critical\n'
                b'rationale = escaping test\nsource = tests/metrics\ncheck = thp.enabled == never\n')
    r, _, _ = prom_audit(a, os.path.join(a.roots, 'ws-4090'), '--profile', 'rtx4090-ws', env={'LLMTUNE_DATADIR': data})
    text = r.stdout.decode('utf-8')  # must be valid UTF-8
    if not check(r.returncode == 2, 'hostile: audit exits 2 (%s)' % r.stderr.decode()[:300]):
        return
    promtool_metrics(promtool, text, 'hostile rule text')
    series, _ = parse_prom(text)
    lab = [lab for n, lab, v in series if n == 'llmtune_rule_info' and lab['rule'] == 'zz-hostile']
    check(len(lab) == 1 and lab[0]['title'] == HOSTILE_READ_BACK,
          'hostile: title reads back as %r, expected %r' % (lab and lab[0].get('title'), HOSTILE_READ_BACK))
    res = [(lab, v) for n, lab, v in series if n == 'llmtune_rule_result' and lab['rule'] == 'zz-hostile']
    st = [lab['status'] for n, lab, v in series if n == 'llmtune_rule_status' and lab['rule'] == 'zz-hostile' and v == 1]
    check(len(res) == 1 and res[0][1] == 1 and res[0][0]['severity'] == 'critical' and st == ['fail'],
          'hostile: the rule is a critical failure: %r %r' % (res, st))
    print('ok: hostile rule title escaped, promtool accepts, reads back as written (bad bytes as ?)')


def test_changelog(a, promtool, tmp):
    root = os.path.join(tmp, 'ws')
    shutil.copytree(os.path.join(a.roots, 'ws-4090'), root, symlinks=True)
    t0 = time.time()
    r = run([a.llmtune, '--root', root, 'apply', '--profile', 'rtx4090-ws', '--json'])
    t1 = time.time()
    if not check(r.returncode == 0, 'apply on a copy of ws-4090: %s' % r.stderr.decode()[:300]):
        return

    def state():
        r, _, _ = prom_audit(a, root, '--profile', 'rtx4090-ws')
        promtool_metrics(promtool, r.stdout.decode(), 'change log')
        series, _ = parse_prom(r.stdout.decode())
        v = json.loads(run([a.llmtune, '--root', root, 'verify', '--json']).stdout)
        cur = [lab['status'] for n, lab, val in series if n == 'llmtune_changelog_verify_status' and val == 1]
        return series, v, cur

    series, v, cur = state()
    check(cur == ['clean'] and v['status'] == 'clean', 'after apply: state %r, verify says %s' % (cur, v['status']))
    check(one(series, 'llmtune_changelog_records') == v['records'] > 0, 'after apply: records as verify')
    check(one(series, 'llmtune_changelog_changes_in_force') == len(v['changes']) > 0, 'after apply: changes in force')
    last = one(series, 'llmtune_changelog_last_apply_timestamp_seconds')
    check(int(t0) <= last <= t1 + 1, 'last apply %f outside the apply [%f, %f]' % (last, t0, t1))
    # Drift: a file apply wrote, changed behind llmtune's back.
    f = [c for c in v['changes'] if c['type'] == 'file' and c['status'] == 'ok']
    if check(f, 'apply wrote at least one file'):
        with open(root + f[0]['target'], 'a') as fh:
            fh.write('# edited by hand\n')
        series, v, cur = state()
        check(cur == ['drift'] and v['status'] == 'drift', 'after an edit: state %r, verify %s' % (cur, v['status']))
        check(one(series, 'llmtune_changelog_drifted_changes') == 1, 'after an edit: one drifted change')
    # Tampering: a record of the log edited.
    log = os.path.join(root, 'var/lib/llmtune/changelog.jsonl')
    with open(log) as fh:
        lines = fh.readlines()
    edited = re.sub(r'"time":"(\d{4})', lambda m: '"time":"%d' % (int(m.group(1)) - 1), lines[0], count=1)
    check(edited != lines[0], 'the first record has a time to edit')
    lines[0] = edited
    with open(log, 'w') as fh:
        fh.writelines(lines)
    series, v, cur = state()
    check(cur == ['tampered'] and v['status'] == 'tampered', 'after tampering: state %r, verify %s' % (cur, v['status']))
    check(one(series, 'llmtune_changelog_chain_problems') >= 1, 'after tampering: chain failures counted')
    print('ok: change log state clean -> drift -> tampered as verify says; last apply within the apply')


def test_output(a, promtool, tmp):
    d = os.path.join(tmp, 'textfile')
    os.mkdir(d)
    out = os.path.join(d, 'llmtune.prom')
    root = os.path.join(a.roots, 'dgx-a100')
    # The profile is given: detection, which fails when a fact it needs cannot be read, is not
    # what is tested here.
    r, _, _ = prom_audit(a, root, '--profile', 'a100-8x', '--output', out)
    check(r.returncode == 2 and r.stdout == b'', 'audit --output: exit 2 (findings), nothing on stdout (%d)' % r.returncode)
    check(os.path.isfile(out) and stat.S_IMODE(os.stat(out).st_mode) == 0o644, '--output: file with mode 0644')
    check(sorted(os.listdir(d)) == ['llmtune.prom'], '--output leaves no temporary file: %r' % os.listdir(d))
    with open(out) as fh:
        promtool_metrics(promtool, fh.read(), '--output file')
    # A reader polling the file while it is rewritten must only ever see whole files.
    stop, torn, reads = threading.Event(), [], [0]

    def reader():
        while not stop.is_set():
            with open(out) as fh:
                t = fh.read()
            reads[0] += 1
            if not t.rstrip().endswith('llmtune_changelog_chain_problems 0'):
                torn.append(t[-80:])
            # A short pause: a reader spinning flat out takes a whole core (and the GIL) from the
            # writer, which under ASan on a 2-core machine pushed this test past its time limit.
            time.sleep(0.001)

    th = threading.Thread(target=reader)
    th.start()
    for _ in range(15):
        prom_audit(a, root, '--profile', 'a100-8x', '--output', out)
    stop.set()
    th.join()
    check(not torn and reads[0] > 0, '--output: %d of %d reads saw a partial file' % (len(torn), reads[0]))
    check(sorted(os.listdir(d)) == ['llmtune.prom'], 'no temporary file after 15 rewrites: %r' % os.listdir(d))
    r, _, _ = prom_audit(a, root, '--profile', 'a100-8x', '--output', os.path.join(tmp, 'missing', 'x.prom'))
    check(r.returncode == 1 and b'missing/x.prom' in r.stderr, '--output into a missing directory: exit 1 naming it')
    r = run([a.llmtune, '--root', root, 'audit', '--output', out])
    check(r.returncode == 1, '--output without --format prometheus|nfd is a usage error')
    print('ok: --output atomic: %d concurrent reads during 15 rewrites, none partial; mode 0644' % reads[0])

    # The unit's command line, as installed, run against a fixture root into a temporary directory.
    unit = os.path.join(a.build, 'packaging', 'llmtune-metrics.service')
    with open(unit) as fh:
        text = fh.read()
    cond = re.search(r'^ConditionPathIsDirectory=(.*)$', text, re.M)
    exe = re.search(r'^ExecStart=(\S+) (.*)$', text, re.M)
    check(cond and cond.group(1) == '/var/lib/prometheus/node-exporter',
          'llmtune-metrics.service runs only when node_exporter\'s textfile directory exists')
    ok = re.search(r'^SuccessExitStatus=(.*)$', text, re.M)
    check(ok and set(ok.group(1).split()) == {'2', '3'},
          'llmtune-metrics.service: findings (exit 2) and rules not evaluated (exit 3) are success: the file is written')
    if check(exe and '--output /var/lib/prometheus/node-exporter/llmtune.prom' in exe.group(2),
             'llmtune-metrics.service writes llmtune.prom into the textfile directory'):
        args = exe.group(2).replace('/var/lib/prometheus/node-exporter', d).split()
        os.unlink(out)
        r = run([a.llmtune, '--root', root] + args + ['--profile', 'a100-8x'])
        check(r.returncode in (0, 2) and os.path.exists(out), 'the unit\'s ExecStart writes the file (%d)' % r.returncode)
    print('ok: llmtune-metrics.service command line writes the textfile')


def test_rules(a, promtool):
    rules = os.path.join(a.source, 'packaging', 'prometheus', 'llmtune-alerts.yml')
    r = run([promtool, 'check', 'rules', rules])
    check(r.returncode == 0, 'promtool check rules: %s' % (r.stdout + r.stderr).decode()[:600])
    tests = os.path.join(a.source, 'tests', 'metrics', 'llmtune-alerts.test.yml')
    r = run([promtool, 'test', 'rules', os.path.basename(tests)], cwd=os.path.dirname(tests))
    check(r.returncode == 0, 'promtool test rules: %s' % (r.stdout + r.stderr).decode()[:900])
    print('ok: alerting rules accepted and their unit tests pass')


def prometheus(a):
    promtool = need('promtool')
    with tempfile.TemporaryDirectory() as tmp:
        test_roots(a, promtool)
        test_hostile(a, promtool, tmp)
        test_changelog(a, promtool, tmp)
        test_output(a, promtool, tmp)
        test_rules(a, promtool)


# --- node-feature-discovery ------------------------------------------------------------------

# Kubernetes label syntax (k8s.io/apimachinery validation: qualified names and label values).
LABEL_NAME = re.compile(r'^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')
LABEL_VALUE = re.compile(r'^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$')


def parse_nfd(text, what):
    labels = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        name, eq, value = line.partition('=')
        check(eq and LABEL_NAME.match(name) and LABEL_VALUE.match(value),
              '%s: %r is not a valid NFD feature line (label name=value)' % (what, line))
        check(name not in labels, '%s: %s twice' % (what, name))
        labels[name] = value
    return labels


def facts_json(a, root):
    return json.loads(run([a.llmtune, '--root', root, 'facts', '--json']).stdout)['facts']


def fact_value(facts, name):
    v = facts.get(name) if isinstance(facts, dict) else None
    if isinstance(v, dict):
        return v.get('value') if v.get('status') == 'ok' else None
    return v


def expected_labels(facts, doc):
    """The labels computed here from facts --json and audit --json."""
    want = {'llmtune-profile': doc['profile']['name']}
    res = [x['status'] for x in doc['results']]
    want['llmtune-audit'] = 'fail' if 'fail' in res else 'error' if 'error' in res else 'pass'
    want['llmtune-audit-failed'] = str(res.count('fail'))
    want['llmtune-audit-critical'] = str(sum(1 for x in doc['results']
                                             if x['status'] == 'fail' and x['severity'] == 'critical'))
    n = fact_value(facts, 'gpu.count')
    want['llmtune-gpu-count'] = str(n)
    models = set()
    for i in range(n):
        name = fact_value(facts, 'gpu.%d.name' % i)
        m = re.search(r'\[([^\]]+)\]', name)
        models.add(re.sub(r'[^A-Za-z0-9]+', '-', m.group(1) if m else name).strip('-'))
    if models:
        want['llmtune-gpu-model'] = models.pop() if len(models) == 1 else 'mixed'
    rates = []
    for k in facts:
        m = re.match(r'^(ib\.[^.]+\.port\.\d+\.)rate_gbps$', k)
        if m and fact_value(facts, m.group(1) + 'state') == 'ACTIVE':
            rates.append(fact_value(facts, k))
    want['llmtune-ib-active-ports'] = str(len(rates))
    if rates:
        low = min(float(r) for r in rates)
        want['llmtune-ib-rate'] = '%d' % low if low == int(low) else str(low)
    return want


def test_nfd_roots(a):
    figures = {'dgx-a100': ('8', 'A100-SXM4-40GB', '200'), 'hgx-h100': ('8', 'H100-SXM5-80GB', '400'),
               'ws-4090': ('2', 'GeForce-RTX-4090', None), 'vm-nogpu': ('0', None, None)}
    for name, profile in ROOTS.items():
        root = os.path.join(a.roots, name)
        for attempt in range(5):  # see test_roots: a read failing under load gives another audit
            r = run([a.llmtune, '--root', root, 'audit', '--format', 'nfd'])
            j = run([a.llmtune, '--root', root, 'audit', '--json'])
            facts = facts_json(a, root)
            labels = parse_nfd(r.stdout.decode(), name)
            want = expected_labels(facts, json.loads(j.stdout))
            if labels == want:
                break
            print('note: %s: labels and facts differ (attempt %d); again' % (name, attempt + 1))
        check(r.returncode == j.returncode, '%s: nfd exit %d, json exit %d' % (name, r.returncode, j.returncode))
        check(labels == want, '%s: labels %r, expected from facts and audit %r' % (name, labels, want))
        cnt, model, rate = figures[name]
        check(labels.get('llmtune-gpu-count') == cnt and labels.get('llmtune-gpu-model') == model and
              labels.get('llmtune-ib-rate') == rate and labels.get('llmtune-profile') == profile,
              '%s: GPU %s x %s, IB %s Gb/s, profile %s expected: %r' % (name, cnt, model, rate, profile, labels))
        print('ok: %s: %s' % (name, ' '.join('%s=%s' % kv for kv in sorted(labels.items()))))


def test_nfd_unreadable(a, tmp):
    """An IB port rate that cannot be read gives no rate label, never a guess."""
    root = os.path.join(tmp, 'h100')
    shutil.copytree(os.path.join(a.roots, 'hgx-h100'), root, symlinks=True)
    ports = sorted(glob.glob(root + '/sys/class/infiniband/*/ports/1/rate'))
    if not check(ports, 'hgx-h100 has InfiniBand port rate files'):
        return
    real = os.path.realpath(ports[0])
    os.unlink(real)
    os.mkdir(real)  # a directory where the rate file should be: unreadable
    r = run([a.llmtune, '--root', root, 'audit', '--format', 'nfd'])
    labels = parse_nfd(r.stdout.decode(), 'unreadable rate')
    check('llmtune-ib-rate' not in labels and 'llmtune-ib-active-ports' not in labels and
          b'# llmtune-ib-rate: not labelled' in r.stdout,
          'an unreadable IB rate gives no IB label and says why: %r' % r.stdout.decode())
    print('ok: unreadable IB rate: no IB label, a comment says why')


def test_nfd_output(a, tmp):
    d = os.path.join(tmp, 'features.d')
    os.mkdir(d)
    out = os.path.join(d, 'llmtune')
    r = run([a.llmtune, '--root', os.path.join(a.roots, 'ws-4090'), 'audit', '--format', 'nfd', '--output', out])
    check(r.returncode == 2 and os.path.isfile(out) and os.listdir(d) == ['llmtune'],
          'nfd --output writes the feature file and nothing else (%d, %r)' % (r.returncode, os.listdir(d)))


# --- Kubernetes: the pods' view of the host, built from the manifests ---------------------------

WRAPPER = r"""#!/bin/sh
# llmtune as the pod runs it: a path at, under or above a volume's mountPath is the view's
# (the runtime makes the directories above a mount); argv is logged.
printf '%s\n' "$*" >> "$VIEW_LOG"
view="$VIEW"
set -- $(for arg in "$@"; do
  for m in $VIEW_MOUNTS; do
    case $arg in "$m"|"$m"/*) arg="$view$arg"; break ;; /*) case $m in "$arg"/*) arg="$view$arg"; break ;; esac ;; esac
  done
  printf '%s\n' "$arg"
done)
exec "$REAL_LLMTUNE" "$@"
"""


def manifests(a, name):
    import yaml
    path = os.path.join(a.source, 'packaging', 'kubernetes', name)
    with open(path) as fh:
        return path, [d for d in yaml.safe_load_all(fh) if d]


def container_view(pod, c, host, view):
    """The container's file system as its volumeMounts lay it out, the host being the tree HOST:
    a hostPath volume is the host's directory (a recursive bind: what is mounted below it comes
    with it), a configMap volume its keys as files; deeper mounts over shallower ones. Returns the
    mounts whose host path the tree lacks and that the pod could not start without."""
    vols = {v['name']: v for v in pod['volumes']}
    missing = []
    os.makedirs(view, exist_ok=True)
    for m in sorted(c['volumeMounts'], key=lambda m: m['mountPath'].count('/')):
        v = vols[m['name']]
        dest = view + m['mountPath']
        if os.path.isdir(dest) and not os.path.islink(dest):
            shutil.rmtree(dest)
        if 'hostPath' in v:
            src = host + v['hostPath']['path'].rstrip('/')
            if os.path.isdir(src):
                shutil.copytree(src, dest, symlinks=True)
            elif v['hostPath'].get('type') == 'DirectoryOrCreate':
                os.makedirs(dest)
            else:
                missing.append(m['mountPath'])
        elif 'configMap' in v:
            os.makedirs(dest)
            for key, text in v['data'].items():
                with open(os.path.join(dest, key), 'w') as fh:
                    fh.write(text)
                os.chmod(os.path.join(dest, key), v['configMap'].get('defaultMode', 0o644))
    return missing


def pod_env(a, tmp, c, view):
    """PATH with llmtune as the pod would run it (WRAPPER), the container's env, the view."""
    bindir = os.path.join(tmp, 'bin')
    if not os.path.isdir(bindir):
        os.mkdir(bindir)
        with open(os.path.join(bindir, 'llmtune'), 'w') as fh:
            fh.write(WRAPPER)
        os.chmod(os.path.join(bindir, 'llmtune'), 0o755)
    env = dict(os.environ, PATH=bindir + ':' + os.environ['PATH'], REAL_LLMTUNE=os.path.abspath(a.llmtune),
               VIEW=view, VIEW_LOG=os.path.join(view, '.argv'),
               VIEW_MOUNTS=' '.join(m['mountPath'] for m in c['volumeMounts']))
    env.update({e['name']: e['value'] for e in c.get('env', []) if 'value' in e})
    return env


def results(out, root):
    doc = json.loads(out)
    return {r['rule']: (r['status'], r['observed'], r['expected'],
                        (r['reason'] or '').replace(root, '@ROOT@') if root else (r['reason'] or ''))
            for r in doc['results']}


def check_manifest_fields(ds):
    """The fields the apps/v1 DaemonSet schema requires and the API server checks."""
    check(ds.get('apiVersion') == 'apps/v1' and ds.get('kind') == 'DaemonSet', 'apps/v1 DaemonSet')
    check(LABEL_NAME.match(ds['metadata']['name'].replace('.', '-')), 'metadata.name')
    sel = ds['spec']['selector']['matchLabels']
    tpl = ds['spec']['template']
    check(all(tpl['metadata']['labels'].get(k) == v for k, v in sel.items()),
          'spec.selector.matchLabels selects the template\'s labels (the API server refuses otherwise)')
    pod = tpl['spec']
    vols = {v['name']: v for v in pod['volumes']}
    check(len(vols) == len(pod['volumes']), 'volume names unique')
    (c,) = pod['containers']
    check(c.get('name') and c.get('image'), 'container name and image')
    check(all(m['name'] in vols for m in c['volumeMounts']), 'every volumeMount names a volume')
    root = [m for m in c['volumeMounts'] if vols[m['name']].get('hostPath', {}).get('path') == '/']
    check(len(root) == 1 and root[0].get('readOnly') is True and root[0]['mountPath'] == '/host',
          'the host\'s root mounted read-only at /host')
    sc = c.get('securityContext', {})
    check(sc.get('readOnlyRootFilesystem') is True and sc.get('privileged') is True
          and 'allowPrivilegeEscalation' not in sc,
          'read-only, privileged for block devices and /dev/kmsg (allowPrivilegeEscalation: false is refused then)')
    envs = {e['name']: e.get('value') for e in c.get('env', [])}
    check(pod.get('runtimeClassName') == 'nvidia' and envs.get('NVIDIA_DRIVER_CAPABILITIES') in ('utility', 'all'),
          'the nvidia runtime class with the utility capability: NVML in the container')
    check(pod.get('hostNetwork') is True, 'the host\'s network namespace: /proc/net is the reader\'s')
    return pod, c


def yamllint_default(path):
    yamllint = need('yamllint')
    r = run([yamllint, '--strict', path])
    check(r.returncode == 0, 'yamllint --strict (default settings) %s: %s' % (os.path.basename(path),
                                                                             r.stdout.decode()[:600]))


def test_daemonset(a, tmp):
    """Each fixture root audited through the pod's mounts gives the direct audit's results, rule
    by rule, and the pod's script writes the feature file a direct run writes."""
    path, docs = manifests(a, 'llmtune-nfd.yaml')
    yamllint_default(path)
    check(len(docs) == 1, 'one document')
    pod, c = check_manifest_fields(docs[0])
    vols = {v['name']: v for v in pod['volumes']}
    feat = [m for m in c['volumeMounts']
            if vols[m['name']].get('hostPath', {}).get('path') == '/etc/kubernetes/node-feature-discovery/features.d']
    check(len(feat) == 1 and not feat[0].get('readOnly'), 'NFD features.d mounted writable')
    script = c['args'][0]
    check(c['command'] == ['/bin/sh', '-c'] and '--root /host' in script and '--format nfd' in script,
          'the container runs llmtune --root /host audit --format nfd')
    for name in ROOTS:
        host = os.path.join(tmp, 'host-' + name)
        shutil.copytree(os.path.join(a.roots, name), host, symlinks=True)
        view = os.path.join(tmp, 'view-' + name)
        missing = container_view(pod, c, host, view)
        check(not missing, '%s: every hostPath the pod mounts is in the tree (%s)' % (name, missing))
        env = pod_env(a, tmp, c, view)
        r = subprocess.run(['/bin/sh', '-c', 'sleep() { exit 0; }\n' + script], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env, timeout=120)
        with open(env['VIEW_LOG']) as fh:
            argv = fh.read().split()
        pod_file = view + feat[0]['mountPath'] + '/llmtune'
        direct_file = os.path.join(tmp, 'direct-' + name)
        d = run([a.llmtune] + [host if x == '/host' else direct_file if x.startswith(feat[0]['mountPath']) else x
                               for x in argv])
        same = os.path.exists(pod_file) and open(pod_file).read() == open(direct_file).read()
        check(r.returncode == 0 and same, '%s: the pod writes the feature file a run on the host writes (%s)' %
              (name, r.stderr.decode()[-300:]))
        # The same arguments, as --json: every rule's status, values and reason.
        args = [x for x in argv]
        i = args.index('--format')
        args[i:i + 2] = ['--json']
        if '--output' in args:
            j = args.index('--output')
            del args[j:j + 2]
        pv = run([a.llmtune] + [view + x if x == '/host' else x for x in args])
        dv = run([a.llmtune] + [host if x == '/host' else x for x in args])
        got, want = results(pv.stdout, view + '/host'), results(dv.stdout, host)
        differ = sorted(k for k in want if got.get(k) != want[k])
        check(pv.returncode == dv.returncode and got and not differ,
              '%s: the audit through the pod\'s mounts gives the direct audit\'s results (exit %d/%d; %s)' %
              (name, pv.returncode, dv.returncode,
               ', '.join('%s %s/%s' % (k, got.get(k, ('-',))[0], want[k][0]) for k in differ[:6])))
    print('ok: DaemonSet: yamllint, apps/v1 fields, the host\'s view, the same audit as on the host')


HOST_VIEW = r"""
set -e
T=$1 OUT=$2 B=$3
mount --make-rprivate /
mount -t tmpfs tmpfs "$T"
for e in /*; do
  n=${e#/}
  if [ -L "$e" ]; then cp -P "$e" "$T/$n"; continue; fi
  [ -d "$e" ] || continue
  mkdir "$T/$n"
  case $n in proc|tmp) continue ;; esac
  mount --rbind "$e" "$T/$n"
done
mount -t proc proc "$T/proc"
"$B" audit --json --profile base > "$OUT/live" || true
"$B" --root "$T" audit --json --profile base > "$OUT/tree" || true
"""


def test_host_view(a, tmp):
    """This machine as the pod sees its host: a directory holding the host's own directories
    (recursive binds of each one under /, a procfs of this kernel), in a private mount namespace,
    audited with --root gives, rule by rule with the reasons, the audit of this machine without
    --root: the kernel log from /dev/kmsg and NVML, not a fixture's captures."""
    view, out = os.path.join(tmp, 'hostview'), os.path.join(tmp, 'hostview-out')
    os.mkdir(view)
    os.mkdir(out)
    r = subprocess.run(['unshare', '-m', '/bin/sh', '-c', HOST_VIEW, 'host-view', view, out,
                        os.path.abspath(a.llmtune)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if r.returncode != 0:
        if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1':
            check(False, 'the host\'s view could not be built (%s)' % r.stderr.decode()[-200:])
        else:
            print('SKIP: the host\'s view needs root and a mount namespace (%s)' % r.stderr.decode()[-200:])
        return
    live = results(open(os.path.join(out, 'live')).read(), None)
    tree = results(open(os.path.join(out, 'tree')).read(), view)
    differ = sorted(k for k in live if tree.get(k) != live[k])
    check(live and not differ, 'this machine audited through a pod\'s view of it gives the live audit, reasons '
          'included (%s)' % '; '.join('%s: %s / %s' % (k, tree.get(k), live[k]) for k in differ[:3]))


def test_npd(a, tmp):
    """node-problem-detector's custom plugin: its configuration, and the script's exit statuses
    (0 OK, 1 NonOK, 2 Unknown) and messages on fixture roots through the pod's mounts."""
    path, docs = manifests(a, 'llmtune-npd.yaml')
    yamllint_default(path)
    kinds = {d['kind']: d for d in docs}
    check(set(kinds) == {'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'DaemonSet'},
          'NPD: service account, its role and binding, the plugin ConfigMap, the DaemonSet (%s)' % sorted(kinds))
    pod, c = check_manifest_fields(kinds['DaemonSet'])
    check(pod.get('serviceAccountName') == kinds['ServiceAccount']['metadata']['name'],
          'the pod runs as the service account the role is bound to')
    vol = {v['name']: v for v in pod['volumes']}
    rw = [m for m in c['volumeMounts'] if not m.get('readOnly')]
    check([m['mountPath'] for m in rw] == ['/host/var/lib/llmtune']
          and vol[rw[0]['name']].get('hostPath', {}).get('path') == '/var/lib/llmtune',
          'the one writable mount is the host\'s /var/lib/llmtune (the counters\' baseline): %s' %
          [m['mountPath'] for m in rw])
    verbs = {(r['resources'][0], v) for r in kinds['ClusterRole']['rules'] for v in r['verbs']}
    check(('nodes/status', 'patch') in verbs and ('events', 'create') in verbs,
          'NPD may patch the node\'s status and create events')
    cm = kinds['ConfigMap']
    vols = [v for v in pod['volumes'] if v.get('configMap', {}).get('name') == cm['metadata']['name']]
    check(len(vols) == 1, 'the ConfigMap is a volume of the pod')
    vols[0]['data'] = cm['data']
    mount = [m for m in c['volumeMounts'] if m['name'] == vols[0]['name']][0]['mountPath']
    flag = [x for x in c['command'] if x.startswith('--config.custom-plugin-monitor=')]
    check(len(flag) == 1 and flag[0].split('=', 1)[1].startswith(mount + '/'),
          'NPD reads the plugin configuration from the ConfigMap')
    mon = json.loads(cm['data'][os.path.basename(flag[0].split('=', 1)[1])])
    pc = mon['pluginConfig']
    secs = lambda t: float(t.rstrip('s'))  # noqa: E731
    conds = {x['type'] for x in mon['conditions']}
    rules = mon['rules']
    check(mon['plugin'] == 'custom' and rules and all(secs(r.get('timeout', pc['timeout'])) <= secs(pc['timeout'])
                                                      for r in rules),
          'a custom plugin; no rule\'s timeout above the plugin\'s (NPD refuses it)')
    check(all(r['type'] == 'temporary' or r.get('condition') in conds for r in rules),
          'every permanent rule sets a condition the config declares')
    script_key = os.path.relpath(rules[0]['path'], mount)
    script = cm['data'].get(script_key, '')
    m = re.search(r'--timeout (\d+)', script)
    check(m and int(m.group(1)) < secs(rules[0].get('timeout', pc['timeout'])),
          'llmtune\'s own --timeout ends the check before NPD kills the plugin')
    cases = [('hgx-h100', 0, None), ('dgx-a100', 1, 'driver-nvidia-loaded'), ('vm-nogpu', 2, None)]
    for name, want, rule in cases:
        host = os.path.join(tmp, 'npd-host-' + name)
        shutil.copytree(os.path.join(a.roots, name), host, symlinks=True)
        if want == 2:  # settings the check must not run without
            os.makedirs(os.path.join(host, 'etc', 'llmtune'), exist_ok=True)
            with open(os.path.join(host, 'etc', 'llmtune', 'health-check.conf'), 'w') as fh:
                fh.write('[health-check]\nseverity = sometimes\n')
        view = os.path.join(tmp, 'npd-view-' + name)
        container_view(pod, c, host, view)
        env = pod_env(a, os.path.join(tmp, 'npd'), c, view) if os.path.isdir(os.path.join(tmp, 'npd')) else None
        if env is None:
            os.mkdir(os.path.join(tmp, 'npd'))
            env = pod_env(a, os.path.join(tmp, 'npd'), c, view)
        env['LLMTUNE_HOST_ROOT'] = '/host'  # the default, as in the pod; the wrapper maps it into the view
        r = subprocess.run([view + rules[0]['path']], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=120)
        msg = r.stdout.decode().strip()
        check(r.returncode == want and msg and len(msg.splitlines()) == 1,
              'NPD plugin on %s: exit %d (%s), one line for the condition: %r' %
              (name, r.returncode, {0: 'OK', 1: 'NonOK', 2: 'Unknown'}[want], msg))
        if want == 0:
            check(os.path.isfile(view + '/host/var/lib/llmtune/counters.state'),
                  '... the error counters recorded as on the host, in the host\'s /var/lib/llmtune')
        if rule:
            check(msg.startswith(rule + ' '), '... the message names the failing rule first (%r)' % msg)
        if want == 2:
            check('sometimes' in msg, '... and says why the check could not run (%r)' % msg)
    print('ok: node-problem-detector: plugin configuration, exit statuses 0/1/2 and messages')


def nfd(a):
    need('yamllint')
    with tempfile.TemporaryDirectory() as tmp:
        test_nfd_roots(a)
        test_nfd_unreadable(a, tmp)
        test_nfd_output(a, tmp)
        test_daemonset(a, tmp)
        test_host_view(a, tmp)
        test_npd(a, tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--source', required=True)
    ap.add_argument('--build', required=True)
    ap.add_argument('what', choices=['prometheus', 'nfd'])
    a = ap.parse_args()
    {'prometheus': prometheus, 'nfd': nfd}[a.what](a)
    if failures:
        print('%d problem(s)' % len(failures))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
