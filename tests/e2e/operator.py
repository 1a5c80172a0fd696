#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
What a fleet operator relies on (issue 16): profile detection that a site profile cannot hijack,
the pinned profile (/etc/llmtune/llmtune.conf, `llmtune profile`), exit codes for gating, JSON
output, and lint of shipped files. Every case runs llmtune on a temporary copy of a fixture root
and asserts the specific fact it is about.

    operator.py --llmtune BIN --roots DIR [--case NAME]...   run cases (all when none named)
    operator.py --list                                         print the case names
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from golden import snapshot  # noqa: E402  (names, types, modes, contents, link targets, mtimes)
SRC = os.path.dirname(os.path.dirname(HERE))
CASES = {}


def case(fn):
    CASES[fn.__name__.replace('_', '-')] = fn
    return fn


class Ctx:
    def __init__(self, llmtune, roots, tmp):
        self.llmtune, self.roots, self.tmp = llmtune, roots, tmp

    def root(self, name):
        """A fresh copy of fixture root NAME."""
        dst = tempfile.mkdtemp(prefix=name + '-', dir=self.tmp)
        shutil.rmtree(dst)
        shutil.copytree(os.path.join(self.roots, name), dst, symlinks=True)
        return dst

    def run(self, root, *argv, status=None, env=None):
        e = dict(os.environ, NO_COLOR='1', LC_ALL='C')
        e.update(env or {})
        cmd = [self.llmtune] + (['--root', root] if root else []) + list(argv)
        r = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if status is not None and r.returncode != status:
            raise AssertionError('%s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s' % (
                ' '.join(cmd), r.returncode, status, r.stdout[-3000:], r.stderr[-3000:]))
        return r


def put(root, rel, text):
    p = os.path.join(root, rel.lstrip('/'))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, 'w') as f:
        f.write(text)
    return p


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


# --- item 2: detection that cannot be hijacked ----------------------------------------------------

@case
def detect_site_without_match(c):
    """The man page's own example: profiles.d/a100-8x.ini inheriting a100-8x, no [match]. On a
    GPU-less VM it must not be chosen (it keeps the shipped [match]); nor may a new site profile
    without [match]."""
    root = c.root('vm-nogpu')
    put(root, 'etc/llmtune/profiles.d/a100-8x.ini',
        '[profile]\nname = a100-8x\ninherits = a100-8x\n[params]\nib_rate_gbps = 400\n')
    put(root, 'etc/llmtune/profiles.d/aaa-site.ini',
        '[profile]\nname = aaa-site\ninherits = base\n[params]\nthp_enabled = always\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.split('\t')[0] == 'base', 'recommend chose %r, expected base' % r.stdout)
    r = c.run(root, 'plan', '--json', status=0)
    plan = json.loads(r.stdout)
    check(plan['profile'] == 'base', 'plan used profile %s' % plan['profile'])
    check(not any(ch['target'] == '/etc/nccl.conf' for ch in plan['changes']),
          'plan would write /etc/nccl.conf on a GPU-less VM')
    r = c.run(root, 'profiles', 'show', 'a100-8x', status=0)
    check('match (of the shipped profile it shadows):' in r.stdout and 'gpu.nvidia_count == 8' in r.stdout,
          'show does not list the inherited [match]:\n' + r.stdout)
    r = c.run(root, 'profiles', 'show', 'aaa-site', status=0)
    check('never chosen by detection' in r.stdout, 'show does not say aaa-site is never detected')
    # ... while on the A100 node the shadowing site profile is the one detected.
    root = c.root('dgx-a100')
    put(root, 'etc/llmtune/profiles.d/a100-8x.ini',
        '[profile]\nname = a100-8x\ninherits = a100-8x\n[params]\nib_rate_gbps = 200\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.startswith('a100-8x\t'), 'dgx-a100 no longer detected as a100-8x: %r %r' % (r.stdout, r.stderr))


@case
def detect_site_own_match(c):
    """A site profile with its own [match] takes part, and its [match] wins over the shadowed one."""
    root = c.root('vm-nogpu')
    put(root, 'etc/llmtune/profiles.d/vmsite.ini',
        '[profile]\nname = vmsite\ninherits = base\n[match]\nrequire = gpu.nvidia_count == 0\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.startswith('vmsite\t'), 'recommend: %r' % r.stdout)


@case
def detect_unreadable_fails(c):
    """A fact a [match] needs is unreadable: detection says which and fails (exit 3), it does
    not fall back to base; naming the profile still works."""
    root = c.root('vm-nogpu')
    put(root, 'etc/llmtune/profiles.d/swappy.ini',
        '[profile]\nname = swappy\ninherits = base\n[match]\nrequire = sysctl.vm.swappiness == 60\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.startswith('swappy\t'), 'recommend with a readable fact: %r' % r.stdout)
    p = os.path.join(root, 'proc/sys/vm/swappiness')
    os.unlink(p)
    os.mkdir(p)  # reading it fails with EISDIR: unreadable, not absent
    for argv in (['recommend'], ['audit'], ['plan']):
        r = c.run(root, *argv, status=3)
        check('sysctl.vm.swappiness' in r.stderr and 'swappy' in r.stderr,
              '%s does not name the unreadable requirement: %s' % (argv[0], r.stderr))
        check(r.stdout == '', '%s printed a result: %s' % (argv[0], r.stdout[:200]))
    c.run(root, 'audit', '--profile', 'base', '--rule', 'thp-enabled')
    # A requirement that is false rules a profile out even if another is unreadable.
    put(root, 'etc/llmtune/profiles.d/swappy.ini',
        '[profile]\nname = swappy\ninherits = base\n[match]\nrequire = cpu.count == 999\n'
        'require = sysctl.vm.swappiness == 60\n')
    r = c.run(root, 'recommend', status=0)
    check(r.stdout.startswith('base\t'), 'recommend: %r' % r.stdout)


# --- item 1: the pinned profile -------------------------------------------------------------------

CONF = 'etc/llmtune/llmtune.conf'


@case
def pin_profile(c):
    """`profile set` pins (keeping other lines), `profile` says where the profile comes from,
    audit and plan use the pin, `profile unset` gives detection back."""
    root = c.root('vm-nogpu')
    r = c.run(root, 'profile', '--json', status=0)
    j = json.loads(r.stdout)
    check((j['profile'], j['source']) == ('base', 'detected'), 'before pinning: %s' % j)
    put(root, CONF, '# site settings\n[audit]\nfail_on = warning\n')
    r = c.run(root, 'profile', 'set', 'rtx4090-ws', status=0)
    text = open(os.path.join(root, CONF)).read()
    check(text == 'profile = rtx4090-ws\n# site settings\n[audit]\nfail_on = warning\n' or
          text == '# site settings\nprofile = rtx4090-ws\n[audit]\nfail_on = warning\n', 'llmtune.conf: %r' % text)
    r = c.run(root, 'profile', status=0)
    check(r.stdout.startswith('rtx4090-ws\n') and 'from:  config (pinned in /etc/llmtune/llmtune.conf:' in r.stdout,
          'profile: %s' % r.stdout)
    r = c.run(root, 'profile', '--profile', 'base', '--json', status=0)
    check(json.loads(r.stdout)['source'] == 'option', 'profile --profile: %s' % r.stdout)
    r = c.run(root, 'audit', '--json')
    p = json.loads(r.stdout)['profile']
    check((p['name'], p['selected']) == ('rtx4090-ws', 'config'), 'audit profile: %s' % p)
    r = c.run(root, 'plan', '--json', status=0)
    check(json.loads(r.stdout)['profile'] == 'rtx4090-ws', 'plan does not use the pin')
    r = c.run(root, 'profile', 'set', 'no-such', status=1)
    check('no such profile' in r.stderr, 'set no-such: %s' % r.stderr)
    check('rtx4090-ws' in open(os.path.join(root, CONF)).read(), 'a refused pin changed the file')
    c.run(root, 'profile', 'unset', status=0)
    check('profile' not in open(os.path.join(root, CONF)).read().replace('# site', ''), 'unset left the pin')
    r = c.run(root, 'profile', '--json', status=0)
    check(json.loads(r.stdout)['source'] == 'detected', 'after unset: %s' % r.stdout)


@case
def pin_config_errors(c):
    """An unreadable or invalid llmtune.conf is an error, never detection instead of the pin."""
    root = c.root('vm-nogpu')
    put(root, CONF, 'profile = rtx4090-ws\n[audit]\nfail_on = sometimes\n')
    for argv in (['audit'], ['plan'], ['profile']):
        r = c.run(root, *argv, status=1)
        check('llmtune.conf:3: fail_on \'sometimes\'' in r.stderr, '%s: %s' % (argv, r.stderr))
    put(root, CONF, 'profil = base\n')
    r = c.run(root, 'audit', status=1)
    check("unknown key 'profil'" in r.stderr, r.stderr)
    os.unlink(os.path.join(root, CONF))
    os.mkdir(os.path.join(root, CONF))
    r = c.run(root, 'audit', status=1)
    check('llmtune.conf: cannot read' in r.stderr, r.stderr)
    r = c.run(root, 'audit', '--profile', 'base', status=1)  # the config has option defaults too


@case
def config_trust(c):
    """llmtune.conf and health-check.conf choose the profile and the node a check drains: each is
    taken as a profile is (one loader, judged on the file read), so one that every user can write is
    refused by its path, under --root and given by --config. Trust is judged only as root."""
    if os.geteuid() != 0:
        return
    root = c.root('vm-nogpu')
    conf = put(root, CONF, 'profile = base\n')
    os.chmod(conf, 0o666)
    r = c.run(root, 'audit', status=1)
    check('/etc/llmtune/llmtune.conf: refused: the file itself is writable by every user' in r.stderr, r.stderr)
    os.chmod(conf, 0o644)
    hc = put(root, 'etc/llmtune/health-check.conf', '[health-check]\nseverity = warning\n')
    os.chmod(hc, 0o666)
    r = c.run(root, 'health-check', '--profile', 'base', status=2)
    check('/etc/llmtune/health-check.conf: refused: the file itself is writable by every user' in r.stderr,
          r.stderr)
    r = c.run(root, 'health-check', '--profile', 'base', '--config', hc, status=2)
    check(hc + ': refused: the file itself is writable by every user' in r.stderr, r.stderr)
    os.chmod(hc, 0o644)
    c.run(root, 'health-check', '--profile', 'base', '--config', hc, status=0)


# --- item 6: exit codes for gating -----------------------------------------------------------------

@case
def audit_fail_on(c):
    """info findings pass the default gate (warning); --fail-on info and [audit] fail_on = info fail
    it; --fail-on critical lets warnings through."""
    root = c.root('hgx-h100')
    r = c.run(root, 'audit', '--profile', 'base', '--json', status=0)
    fails = [x for x in json.loads(r.stdout)['results'] if x['status'] == 'fail']
    check(fails and all(x['severity'] == 'info' for x in fails), 'expected only info findings: %s' % fails)
    c.run(root, 'audit', '--profile', 'base', '--fail-on', 'info', '--quiet', status=2)
    put(root, CONF, '[audit]\nfail_on = info\n')
    c.run(root, 'audit', '--profile', 'base', '--quiet', status=2)
    c.run(root, 'audit', '--profile', 'base', '--quiet', '--fail-on', 'warning', status=0)
    r = c.run(root, 'audit', '--fail-on', 'sometimes', status=1)
    check('critical, warning or info' in r.stderr, r.stderr)
    root = c.root('dgx-a100')
    r = c.run(root, 'audit', '--profile', 'a100-8x', '--json', status=2)
    sev = {x['severity'] for x in json.loads(r.stdout)['results'] if x['status'] == 'fail'}
    want = 2 if 'critical' in sev else 0
    c.run(root, 'audit', '--profile', 'a100-8x', '--quiet', '--fail-on', 'critical', status=want)


@case
def audit_could_not_evaluate(c):
    """An unreadable fact of a warning rule: exit 3, not 2 (a finding) and not 0."""
    root = c.root('vm-nogpu')
    p = os.path.join(root, 'sys/kernel/mm/transparent_hugepage/enabled')
    os.unlink(p)
    os.mkdir(p)
    r = c.run(root, 'audit', status=3)
    check('ERROR thp-enabled' in r.stdout, r.stdout)
    c.run(root, 'audit', '--fail-on', 'critical', '--quiet', status=0)


@case
def plan_exit_code(c):
    """plan --exit-code: 2 while changes are pending, 0 once applied; plain plan stays 0."""
    root = c.root('ws-4090')
    c.run(root, 'plan', status=0)
    r = c.run(root, 'plan', '--exit-code', status=2)
    check('planned' in r.stdout, r.stdout)
    c.run(root, 'apply', status=0)
    c.run(root, 'plan', '--exit-code', status=0)
    r = c.run(root, 'apply', '--exit-code', status=1)
    check('--exit-code goes with plan' in r.stderr, r.stderr)


# --- item 15: lint of shipped files ----------------------------------------------------------------

@case
def lint_shipped_files(c):
    """`llmtune lint rules/*.ini profiles/*.ini` in the source tree passes: a file that is one of the
    loaded shipped files is linted once, however it is named; a copy elsewhere that defines a
    shipped rule id again is still an error."""
    rules = sorted(f for f in os.listdir(os.path.join(SRC, 'rules')) if f.endswith('.ini'))
    profiles = sorted(f for f in os.listdir(os.path.join(SRC, 'profiles')) if f.endswith('.ini'))
    argv = ['rules/' + f for f in rules] + ['profiles/' + f for f in profiles]
    e = dict(os.environ, LLMTUNE_DATADIR=SRC, NO_COLOR='1')
    r = subprocess.run([c.llmtune, 'lint'] + argv, cwd=SRC, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    check(r.returncode == 0, 'lint of the shipped files: exit %d\n%s' % (r.returncode, r.stderr[-2000:]))
    check(r.stdout.count(': ok\n') == len(argv), 'not every file ok: %s' % r.stdout)
    copy = os.path.join(c.tmp, 'cpu.ini')
    shutil.copy(os.path.join(SRC, 'rules', 'cpu.ini'), copy)
    r = subprocess.run([c.llmtune, 'lint', copy], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    check(r.returncode == 1 and "rule 'cpu-governor' already defined at " in r.stderr,
          'a copy of rules/cpu.ini: exit %d %s' % (r.returncode, r.stderr[-1000:]))


# --- item 7: --json everywhere, --quiet/--only-failed, usage errors, singular ----------------------

@case
def json_outputs(c):
    """recommend, profiles, profiles show, explain and rollback speak JSON."""
    root = c.root('vm-nogpu')
    j = json.loads(c.run(root, 'recommend', '--json', status=0).stdout)
    check(j['profile'] == 'base' and j['requirements'] == [], 'recommend --json: %s' % j)
    j = json.loads(c.run(root, 'profiles', '--json', status=0).stdout)
    names = {p['name']: p for p in j['profiles']}
    check(set(names) >= {'base', 'a100-8x', 'h100-sxm-8x'} and names['a100-8x']['match'][0] == 'gpu.nvidia_count == 8',
          'profiles --json: %s' % sorted(names))
    j = json.loads(c.run(root, 'profiles', 'show', 'a100-8x', '--json', status=0).stdout)
    check(j['params']['ib_rate_gbps']['value'] == '200' and 'a100-8x.ini' in j['params']['ib_rate_gbps']['origin'] and
          len(j['hash']) == 64 and j['rules']['cpu-governor'] in ('critical', 'warning', 'info'), 'show --json: %s' % j)
    j = json.loads(c.run(root, 'explain', '--json', 'thp-enabled', status=0).stdout)
    check(j['checks'][0]['condition'] == 'thp.enabled == madvise' and '${thp_enabled}' in j['checks'][0]['text'],
          'explain --json: %s' % j['checks'])
    j = json.loads(c.run(root, 'explain', '--list', '--json', status=0).stdout)
    check(any(r['rule'] == 'thp-enabled' for r in j['rules']), 'explain --list --json')
    root = c.root('ws-4090')
    c.run(root, 'apply', status=0)
    j = json.loads(c.run(root, 'rollback', '--last-run', '--dry-run', '--json', status=0).stdout)
    check(j['dry_run'] and j['rolled_back'] > 0 and all(x['status'] in ('would-restore', 'manual', 'already')
                                                      for x in j['changes']), 'rollback --dry-run --json: %s' % j)
    gov = os.path.join(root, 'sys/devices/system/cpu/cpufreq/policy0/scaling_governor')
    with open(gov, 'w') as f:
        f.write('schedutil\n')  # someone else changed a target: check mode must say it would refuse
    r = c.run(root, 'rollback', '--last-run', '--dry-run', '--json', status=1)
    j = json.loads(r.stdout)
    check(j['refused'] and j['conflicts'][0]['target'].endswith('policy0/scaling_governor') and
          'rollback would refuse' in r.stderr, 'dry-run over a changed target: %s %s' % (j, r.stderr))
    r = c.run(root, 'rollback', '--last-run', '--json', '--force', status=0)
    j = json.loads(r.stdout)
    check(not j['dry_run'] and j['rolled_back'] > 0 and any(x['status'] == 'restored' for x in j['changes']),
          'rollback --json: %s' % j)


@case
def audit_quiet_only_failed(c):
    root = c.root('dgx-a100')
    r = c.run(root, 'audit', '--profile', 'a100-8x', '--quiet', status=2)
    check(r.stdout == '', 'audit --quiet printed %r' % r.stdout[:200])
    r = c.run(root, 'audit', '--profile', 'a100-8x', '--only-failed', status=2)
    check('  FAIL ' in r.stdout and '  PASS ' not in r.stdout and '  N/A ' not in r.stdout, r.stdout)
    j = json.loads(c.run(root, 'audit', '--profile', 'a100-8x', '--only-failed', '--json', status=2).stdout)
    check(j['results'] and all(x['status'] in ('fail', 'error') for x in j['results']) and j['summary']['pass'] > 0,
          'only-failed json')


@case
def usage_errors_and_singular(c):
    """A bad option names the command and points to its --help; one rule is '1 rule'."""
    root = c.root('vm-nogpu')
    for cmd in ('audit', 'plan', 'apply', 'log', 'rollback', 'facts', 'recommend', 'profiles', 'explain', 'profile'):
        r = c.run(root, cmd, '--no-such-option', status=1)
        check('see `llmtune %s --help`' % cmd in r.stderr and 'llmtune %s: unrecognized option' % cmd in r.stderr,
              '%s: %s' % (cmd, r.stderr))
    r = c.run(root, 'audit', '--rule', 'thp-enabled', status=0)
    check('\n1 rule: 1 passed, 0 failed, 0 not applicable, 0 errors\n' in r.stdout, r.stdout[-200:])


# --- item 8: audit JSON identity, report tells profile contents apart -------------------------------

@case
def audit_json_identity(c):
    root = c.root('vm-nogpu')
    j = json.loads(c.run(root, 'audit', '--json', status=0).stdout)
    ver = c.run(None, '--version', status=0).stdout.split()[1]
    with open(os.path.join(root, 'proc/sys/kernel/osrelease')) as f:
        rel = f.read().strip()
    check(j['llmtune_version'] == ver and j['kernel_release'] == rel and len(j['profile']['hash']) == 64,
          'audit identity: %s' % {k: j.get(k) for k in ('llmtune_version', 'kernel_release', 'time')})
    import re
    check(re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ', j['time']), 'time: %r' % j['time'])
    # two hosts on "base", one with a site change to base: the report shows two profiles
    a = os.path.join(c.tmp, 'a.json')
    with open(a, 'w') as f:
        json.dump(j, f)
    put(root, 'etc/llmtune/profiles.d/base.ini', '[profile]\nname = base\ninherits = base\n[params]\nthp_enabled = always\n')
    put(root, 'etc/hostname', 'other-host\n')
    j2 = json.loads(c.run(root, 'audit', '--json').stdout)
    check(j2['profile']['name'] == 'base' and j2['profile']['hash'] != j['profile']['hash'], 'site base hash')
    b = os.path.join(c.tmp, 'b.json')
    with open(b, 'w') as f:
        json.dump(j2, f)
    r = c.run(None, 'report', a, b)
    check('base (sha256:%s)' % j['profile']['hash'][:12] in r.stdout and
          'base (sha256:%s)' % j2['profile']['hash'][:12] in r.stdout, 'report: %s' % r.stdout[:600])
    r = c.run(None, 'report', a, a.replace('a.json', 'a.json'))
    check('sha256:' not in r.stdout, 'same hash shown as different: %s' % r.stdout[:400])


# --- item 11: a licence ---------------------------------------------------------------------------

SOURCE_SUFFIXES = ('.c', '.h', '.py', '.sh', '.build', '.yml', '.in', '.bash', '.spec', '.zsh', '.txt')


@case
def licence(c):
    """GPL-2.0-or-later: COPYING holds the GPL-2 text, every tracked source file the SPDX line,
    debian/copyright is machine-readable with a GPL-2+ licence, the RPM ships %license."""
    with open(os.path.join(SRC, 'COPYING')) as f:
        text = f.read()
    check('GNU GENERAL PUBLIC LICENSE' in text and 'Version 2, June 1991' in text, 'COPYING is not the GPL-2')
    files = subprocess.run(['git', 'ls-files'], cwd=SRC, stdout=subprocess.PIPE, text=True).stdout.split()
    names = ('meson.build', 'meson_options.txt', '_llmtune', 'run', 'rules', 'rpm-macros-compat')
    missing = []
    for f in files:
        base = os.path.basename(f)
        if f.startswith(('tests/golden/', 'tests/fuzz/corpus/', 'tests/corpus/data')) or \
                not (base.endswith(SOURCE_SUFFIXES) or base in names):
            continue
        with open(os.path.join(SRC, f), errors='replace') as fh:
            head = fh.read(600)
        if 'SPDX-License-Identifier: GPL-2.0-or-later' not in head:
            missing.append(f)
    check(not missing, 'no GPL-2.0-or-later SPDX line in: %s' % ' '.join(missing[:20]))
    with open(os.path.join(SRC, 'packaging/debian/copyright')) as f:
        cp = f.read()
    check(cp.startswith('Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/') and
          '\nFiles: *\n' in cp and '\nLicense: GPL-2+\n' in cp and '/usr/share/common-licenses/GPL-2' in cp and
          'MIT' not in cp, 'debian/copyright is not a GPL-2+ DEP-5 file')
    with open(os.path.join(SRC, 'packaging/rpm/llmtune.spec')) as f:
        spec = f.read()
    check('%license COPYING' in spec and 'License:        GPL-2.0-or-later' in spec, 'spec: no %license / License')


# --- item 9: explain resolved values (json-outputs), log --runs, grouped per-CPU lines -------------

@case
def log_runs_and_grouping(c):
    """log --runs lists the apply and the rollback; a run's 32 governor changes are one line with a
    count in `log` and in rollback's report, as plan shows them."""
    root = c.root('ws-4090')
    c.run(root, 'apply', '--profile', 'rtx4090-ws', status=0)
    r = c.run(root, 'log', status=0)
    check('policy0/scaling_governor ... ' in r.stdout and '(32 files)' in r.stdout, 'log not grouped:\n' + r.stdout[:1500])
    check(r.stdout.count('scaling_governor') < 6, 'log shows the governor files one by one')
    r = c.run(root, 'rollback', '--last-run', status=0)
    check('(32 files)' in r.stdout and r.stdout.count('scaling_governor') < 6, 'rollback not grouped:\n' + r.stdout[:1500])
    j = json.loads(c.run(root, 'log', '--runs', '--json', status=0).stdout)['runs']
    check([x['kind'] for x in j] == ['apply', 'rollback'] and j[0]['done'] > 32 and j[1]['undone'] == j[0]['done'] and
          j[0]['profile'] == 'rtx4090-ws', 'log --runs --json: %s' % j)
    r = c.run(root, 'log', '--runs', status=0)
    lines = r.stdout.splitlines()
    check(len(lines) == 3 and lines[1].split()[0] == j[0]['run'], 'log --runs: %s' % r.stdout)
    r = c.run(root, 'log', '--run', j[1]['run'], status=0)
    check('undone' in r.stdout and 'rollback' not in r.stdout.split('\n')[0], r.stdout[:300])


# --- issue 31 items 1, 2: the site profile and the pin are changes of the run -------------------

@case
def params_pin_in_the_run(c):
    """apply --param --pin writes the site profile and the pin as logged changes of the run; plan
    with the same options shows the same records (also when the site profile exists and the
    parameters change: no "already defined"); a failed run undoes both; rollback restores them."""
    root = c.root('ws-4090')
    site = os.path.join(root, 'etc/llmtune/profiles.d/ops-rtx.ini')
    conf = os.path.join(root, 'etc/llmtune/llmtune.conf')
    sel = ['--profile', 'rtx4090-ws', '--rule', 'thp-enabled', '--site-profile', 'ops-rtx', '--pin', '--json']

    def records(doc):
        return [dict(x, status='changed' if x['status'] == 'planned' else x['status']) for x in doc['changes']]
    for value in ('never', 'always'):
        plan = json.loads(c.run(root, 'plan', '--param', 'thp_enabled=' + value, *sel, status=0).stdout)
        done = json.loads(c.run(root, 'apply', '--param', 'thp_enabled=' + value, *sel, status=0).stdout)
        check(records(plan) == records(done), 'plan and apply records differ (%s)' % value)
        check([x['rule'] for x in done['changes']][:1] == ['profile.params'] and done['pinned'] == 'ops-rtx' and
              done['profile'] == 'ops-rtx', 'apply --param: %s' % [(x['rule'], x['target']) for x in done['changes']])
        check('thp_enabled = %s\n' % value in open(site).read() and 'profile = ops-rtx' in open(conf).read(),
              'the site profile or the pin was not written')
    log = c.run(root, 'log', '--json', status=0).stdout
    check('"profile.params"' in log and '"profile.pin"' in log, 'the change log lacks the setup records')
    # A failed run (the tree's THP file does not offer the value) undoes the site profile and pin.
    before_site, before_conf = open(site).read(), open(conf).read()
    put(root, 'sys/kernel/mm/transparent_hugepage/enabled', '[always] madvise\n')
    r = c.run(root, 'apply', '--param', 'thp_enabled=never', '--profile', 'rtx4090-ws', '--site-profile', 'ops-rtx',
              '--pin', '--json')
    doc = json.loads(r.stdout)
    check(r.returncode == 1 and doc['failed'] and doc['changed'] == 0, 'the failing run: exit %d' % r.returncode)
    check(open(site).read() == before_site and open(conf).read() == before_conf,
          'a failed run left its site profile or pin: %s' % open(site).read())
    # rollback --all restores what was there before llmtune: no site profile, no llmtune.conf.
    put(root, 'sys/kernel/mm/transparent_hugepage/enabled', 'always [madvise] never\n')
    c.run(root, 'rollback', '--all', '--force', status=0)
    check(not os.path.exists(site) and not os.path.exists(conf), 'rollback left the site profile or the pin')
    # --reapply does not take the setup records for rules.
    c.run(root, 'apply', '--param', 'thp_enabled=never', *sel, status=0)
    r = c.run(root, 'apply', '--reapply', status=0)
    check('no longer known' not in r.stderr, 'reapply took profile.params for a rule: %s' % r.stderr)
    # Values are validated before anything is written; --param needs a profile name.
    root2 = c.root('ws-4090')
    r = c.run(root2, 'apply', '--profile', 'rtx4090-ws', '--param', 'no_such_param=1', status=1)
    check('unknown parameter' in r.stderr and not os.path.exists(os.path.join(root2, 'etc/llmtune/profiles.d')),
          'an unknown parameter: %s' % r.stderr)
    r = c.run(root2, 'plan', '--param', 'thp_enabled=never', status=1)
    check('--param needs --profile NAME' in r.stderr, 'plan --param without --profile: %s' % r.stderr)


# --- issue 31 item 3: typed parameters ----------------------------------------------------------

@case
def typed_params(c):
    """Every parameter has a declared type (profiles/base.ini [types]): lint rejects a value of
    another type at its line, `profiles show` says what each allows (text and JSON), and apply
    --param refuses before writing anything."""
    root = c.root('vm-nogpu')
    p = put(root, 'etc/llmtune/profiles.d/site.ini', '[profile]\nname = site\ninherits = base\n[params]\n'
            'thp_enabled = sometimes\nib_hca_count = -1\nmemlock_min = 16G\nxid_window = 24\n')
    r = c.run(None, 'lint', p, status=1)
    check("site.ini:5: parameter 'thp_enabled' must be one of always, madvise, never" in r.stderr and
          "site.ini:6: parameter 'ib_hca_count' must be an integer or any" in r.stderr and
          "site.ini:8: parameter 'xid_window' must be a duration" in r.stderr and 'memlock_min' not in r.stderr,
          'lint of badly typed values:\n%s' % r.stderr)
    good = put(root, 'good.ini', '[profile]\nname = good\ninherits = base\n[params]\nthp_enabled = never\n')
    c.run(None, 'lint', good, status=0)
    out = c.run(None, 'profiles', 'show', 'base', status=0).stdout
    check('thp_enabled = madvise    # ' in out and out.split('thp_enabled = madvise')[1].split('\n')[0].endswith(
        '; one of always, madvise, never'), 'profiles show lacks the type: %s' % out[:600])
    j = json.loads(c.run(None, 'profiles', 'show', 'base', '--json', status=0).stdout)
    check(j['params']['thp_enabled']['type'] == {'declared': 'enum always madvise never',
                                                 'allowed': 'one of always, madvise, never',
                                                 'choices': ['always', 'madvise', 'never']} and
          all('type' in v for k, v in j['params'].items() if k != 'nccl_keys'),
          'profiles show --json types: %s' % j['params']['thp_enabled'])
    root2 = c.root('vm-nogpu')
    r = c.run(root2, 'apply', '--profile', 'base', '--param', 'thp_enabled=sometimes', status=1)
    check('must be one of always, madvise, never' in r.stderr and
          not os.path.exists(os.path.join(root2, 'etc/llmtune/profiles.d')), 'apply --param sometimes: %s' % r.stderr)


# --- issue 31 item 9: lint of the root's own site files --------------------------------------------

@case
def lint_site_files(c):
    """A site profile inside the root's profiles.d is linted as itself, not as its own duplicate
    (as rules.d files are); a bad rules.d file is reported, and the profile is still linted."""
    root = c.root('vm-nogpu')
    prof = put(root, 'etc/llmtune/profiles.d/s1.ini', '[profile]\nname = s1\ninherits = base\n[params]\n'
               'thp_enabled = never\n')
    rule = put(root, 'etc/llmtune/rules.d/site.ini', '[site-thp]\ntitle = t\narea = memory\nseverity = info\n'
               'rationale = r\nsource = s\ncheck = thp.enabled == never\n')
    r = c.run(root, 'lint', prof, rule, status=0)
    check(r.stdout == '%s: ok\n%s: ok\n' % (prof, rule) and not r.stderr, 'lint of the root\'s own site files:\n%s%s' % (
        r.stdout, r.stderr))
    # the profile's own problem is reported once, under the name given
    put(root, 'etc/llmtune/profiles.d/s1.ini', '[profile]\nname = s1\ninherits = base\n[params]\nthp_enabled = nope\n')
    r = c.run(root, 'lint', prof, status=1)
    lines = [x for x in r.stderr.splitlines() if 'thp_enabled' in x]
    check(len(lines) == 1 and lines[0].startswith('llmtune: %s:5: ' % prof), 'the profile\'s problem: %s' % r.stderr)
    put(root, 'etc/llmtune/profiles.d/s1.ini', '[profile]\nname = s1\ninherits = base\n[params]\nswap = sometimes\n')
    put(root, 'etc/llmtune/rules.d/bad.ini', '[bad-rule]\ntitle = x\n')
    r = c.run(root, 'lint', prof, status=1)
    check("/etc/llmtune/rules.d/bad.ini:1: rule 'bad-rule' has no area" in r.stderr and
          "%s:5: parameter 'swap' must be one of off, allow" % prof in r.stderr,
          'a bad rules.d file and a bad profile: both reported:\n%s' % r.stderr)


# --- issue 31 item 5: a dry run foresees what apply refuses -----------------------------------------

@case
def plan_foresees_refusals(c):
    """plan (and apply --dry-run) run the checks apply runs before writing: a symbolic link where
    a file goes or above it, a change log apply would not trust or continue. Each refusal is told
    in apply's words (plan --json "error" == apply --json "error") with exit 1, and nothing is
    written by either."""
    def error_of(root, *args):
        r = c.run(root, *args, '--json')
        return r.returncode, json.loads(r.stdout).get('error') if r.stdout.strip() else None, r.stderr

    def same_refusal(root, what, words):
        before = snapshot(root)
        prc, perr, pstderr = error_of(root, 'plan', '--profile', 'rtx4090-ws')
        drc, derr, _ = error_of(root, 'apply', '--dry-run', '--profile', 'rtx4090-ws')
        check(snapshot(root) == before, '%s: plan wrote something' % what)
        arc, aerr, _ = error_of(root, 'apply', '--profile', 'rtx4090-ws')
        check(prc == 1 and drc == 1 and arc == 1, '%s: exit plan %d, dry run %d, apply %d' % (what, prc, drc, arc))
        check(perr and perr == derr == aerr and words in perr, '%s: plan says %r, apply %r' % (what, perr, aerr))
        check('apply would fail at %s' % perr in pstderr, '%s: plan\'s message: %s' % (what, pstderr))

    root = c.root('ws-4090')
    outside = os.path.join(c.tmp, 'elsewhere')
    os.makedirs(outside, exist_ok=True)
    shutil.rmtree(os.path.join(root, 'etc/tmpfiles.d'), ignore_errors=True)
    os.symlink(outside, os.path.join(root, 'etc/tmpfiles.d'))
    same_refusal(root, 'tmpfiles.d a link', 'a symbolic link is at that path or in a directory above it')
    check(os.listdir(outside) == [], 'something was written through the link')
    root = c.root('ws-4090')
    put(root, 'etc/elsewhere.conf', 'kept\n')
    os.makedirs(os.path.join(root, 'etc/llmtune'), exist_ok=True)
    os.symlink('../elsewhere.conf', os.path.join(root, 'etc/llmtune/gpu-affinity.conf'))
    same_refusal(root, 'gpu-affinity.conf a link', 'a symbolic link is at that path')
    with open(os.path.join(root, 'etc/elsewhere.conf')) as f:
        check(f.read() == 'kept\n', 'the file the link points at was written')
    root = c.root('ws-4090')      # a runtime value's directory led out of /sys by a link
    policy = os.path.join(root, 'sys/devices/system/cpu/cpufreq/policy3')
    shutil.copytree(policy, os.path.join(root, 'etc/policy3'))
    shutil.rmtree(policy)
    os.symlink('../../../../../etc/policy3', policy)
    same_refusal(root, 'a value led out of /sys', 'a link on the way leads out of /sys and /proc/sys')
    root = c.root('ws-4090')
    log = put(root, 'var/lib/llmtune/changelog.jsonl', '')
    os.chmod(log, 0o666)
    same_refusal(root, 'a change log others can write', 'writable by every user')
    root = c.root('ws-4090')
    c.run(root, 'apply', '--profile', 'rtx4090-ws', '--rule', 'cpu-governor', status=0)
    c.run(root, 'rollback', '--last-run', status=0)
    with open(os.path.join(root, 'var/lib/llmtune/changelog.jsonl')) as f:
        lines = f.readlines()
    with open(os.path.join(root, 'var/lib/llmtune/changelog.jsonl'), 'w') as f:
        f.writelines(lines[:-3])     # cut: the head file names a record the log no longer has
    same_refusal(root, 'a cut change log', 'see `llmtune verify`')
    # nothing to refuse: exit 0 as before
    c.run(c.root('ws-4090'), 'plan', '--profile', 'rtx4090-ws', status=0)



# --- issue 31 item 11: the small ones ---------------------------------------------------------------

def on_terminal(c, root, env, *argv):
    """stdout of llmtune ARGV on a pseudo-terminal, with ENV (NO_COLOR removed)."""
    import pty
    master, slave = pty.openpty()
    e = {k: v for k, v in os.environ.items() if k not in ('NO_COLOR', 'TERM')}
    e.update(env, LC_ALL='C')
    p = subprocess.Popen([c.llmtune, '--root', root] + list(argv), stdout=slave, stderr=subprocess.DEVNULL, env=e)
    os.close(slave)
    out = b''
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:       # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    p.wait(timeout=120)
    return out.decode(errors='replace')


@case
def term_dumb_no_colour(c):
    """Colour only on a terminal that shows it: TERM=dumb (and no TERM) get none; xterm does."""
    root = c.root('vm-nogpu')
    argv = ('audit', '--profile', 'base')
    check('\033[' in on_terminal(c, root, {'TERM': 'xterm-256color'}, *argv), 'no colour on an xterm at all')
    check('\033[' not in on_terminal(c, root, {'TERM': 'dumb'}, *argv), 'TERM=dumb got colour')
    check('\033[' not in on_terminal(c, root, {}, *argv), 'no TERM got colour')
    check('\033[' not in on_terminal(c, root, {'TERM': 'xterm', 'NO_COLOR': '1'}, *argv), 'NO_COLOR got colour')


@case
def json_lists_have_format(c):
    """profiles --json, explain --list --json, log --json and log --runs --json are documents like
    every other: an object with "format" and the list under a name."""
    root = c.root('ws-4090')
    c.run(root, 'apply', '--profile', 'rtx4090-ws', '--rule', 'cpu-governor', status=0)
    for argv, key, field in ((('profiles', '--json'), 'profiles', 'name'), (('explain', '--list', '--json'), 'rules', 'rule'),
                             (('log', '--json'), 'records', 'seq'), (('log', '--runs', '--json'), 'runs', 'run')):
        j = json.loads(c.run(root, *argv, status=0).stdout)
        check(isinstance(j, dict) and j.get('format') == 1 and isinstance(j.get(key), list) and j[key] and
              field in j[key][0], '%s: %s' % (' '.join(argv), json.dumps(j)[:300]))


@case
def log_runs_rollback_profile(c):
    """A rollback's run shows the profile of the changes it undid, not "?" (its run-begin and
    run-end records name none), in log --runs, its --json and the run's header in log."""
    root = c.root('ws-4090')
    c.run(root, 'apply', '--profile', 'rtx4090-ws', '--rule', 'cpu-governor', status=0)
    c.run(root, 'rollback', '--last-run', status=0)
    runs = json.loads(c.run(root, 'log', '--runs', '--json', status=0).stdout)['runs']
    check([(r['kind'], r['profile']) for r in runs] == [('apply', 'rtx4090-ws'), ('rollback', 'rtx4090-ws')],
          'log --runs --json: %s' % runs)
    text = c.run(root, 'log', '--runs', status=0).stdout
    check('? (' not in text and text.count('rtx4090-ws (') == 2, 'log --runs:\n%s' % text)
    head = c.run(root, 'log', '--run', runs[1]['run'], status=0).stdout
    check('(profile rtx4090-ws, host' in head, 'log --run of the rollback:\n%s' % head[:400])


@case
def manual_step_said_once(c):
    """A manual remedy's note is the step itself: plan's "Manual steps:" section and its --json
    text do not begin it with "manual step:" again (the Ansible module adds that label)."""
    root = c.root('dgx-a100')
    text = c.run(root, 'plan', '--profile', 'a100-8x', status=0).stdout
    section = text.split('Manual steps:\n', 1)[1] if 'Manual steps:\n' in text else ''
    check(section and 'install the NVIDIA driver' in section and 'manual step:' not in section,
          'plan\'s manual steps:\n%s' % section[:800])
    notes = [x for x in json.loads(c.run(root, 'plan', '--profile', 'a100-8x', '--json', status=0).stdout)['changes']
             if x['type'] == 'note']
    check(notes and not any((x.get('text') or '').startswith('manual step:') for x in notes),
          'plan --json notes: %s' % [x.get('text') for x in notes][:5])


@case
def pin_misfit_warns(c):
    """profile set of a profile whose [match] does not hold here (the 80 GB A100 profile on the
    40 GB dgx-a100) pins it with a warning naming the failing requirement; one that fits, none."""
    root = c.root('dgx-a100')
    r = c.run(root, 'profile', 'set', 'a100-80gb-8x', status=0)
    # the requirement that fails: the 80 GB board's BAR1 (profiles match by capability since b34e7aa)
    check('warning: profile a100-80gb-8x does not fit this machine' in r.stderr and 'bar.1.size' in r.stderr,
          'no warning naming the failing requirement: %s' % r.stderr)
    check('profile = a100-80gb-8x' in open(os.path.join(root, 'etc/llmtune/llmtune.conf')).read(), 'not pinned')
    r = c.run(root, 'profile', 'set', 'a100-8x', status=0)
    check('warning' not in r.stderr, 'a fitting profile warned: %s' % r.stderr)
    # a site profile made from the 80 GB one has its requirements
    put(root, 'etc/llmtune/profiles.d/site-80.ini', '[profile]\nname = site-80\ninherits = a100-80gb-8x\n')
    r = c.run(root, 'profile', 'set', 'site-80', status=0)
    check('warning: profile site-80 does not fit' in r.stderr, 'site profile: %s' % r.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--llmtune')
    ap.add_argument('--roots')
    ap.add_argument('--case', action='append')
    ap.add_argument('--list', action='store_true')
    a = ap.parse_args()
    if a.list:
        print('\n'.join(CASES))
        return 0
    names = a.case or list(CASES)
    failed = 0
    tmp = tempfile.mkdtemp(prefix='llmtune-operator-')
    try:
        for n in names:
            try:
                CASES[n](Ctx(os.path.abspath(a.llmtune), a.roots, tmp))
                print('%s: ok' % n)
            except AssertionError as e:
                failed += 1
                print('%s: FAIL: %s' % (n, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
