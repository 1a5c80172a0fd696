#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Ansible collection's metadata, as Galaxy's tools judge it (issue 16 item 4).

In a copy of packaging/ansible laid out as ansible_collections/NAMESPACE/NAME (ansible-test works only
there), with HOME a temporary directory (ansible-test keeps virtual environments under ~/.ansible):

  1. galaxy.yml: namespace, name, a 1.x (or later) version, repository, license; the changelog
     (changelogs/changelog.yaml, antsibull-changelog's format) has a release for that version and it
     is the newest one.
  2. `ansible-lint --offline --profile production`: no violation, no warning.
  3. `ansible-test sanity --python X.Y` (X.Y of the Python ansible-test runs with): every test passes, except
     the ones that need the network, skipped by name with the reason printed: ansible-test installs
     each test's pinned requirements (ansible_test/_data/requirements/sanity.NAME.txt: pylint,
     voluptuous, antsibull-changelog, ...) with pip into a fresh virtual environment, after
     downloading pip's bootstrap script from ci-files.testing.ansible.com; a build machine without
     network cannot do that. LLMTUNE_ANSIBLE_TEST_NETWORK=1 runs them too. The ones that need docker
     or another host are not run at all (no --docker/--remote), so they are not named.
     For the skipped ansible-doc test the harness runs the system's `ansible-doc` of the module and
     the role (DOCUMENTATION and argument_specs parse and render); ansible-lint's yaml rule already
     runs yamllint on every YAML file.

Without ansible-lint or ansible-test it skips (exit 77), or fails when LLMTUNE_REQUIRE_ALL=1.
Usage: test_collection_lint.py --collection SRC/packaging/ansible
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

fails = 0


def ok(msg):
    print('ok: ' + msg)


def fail(msg):
    global fails
    fails += 1
    print('FAIL: ' + msg)


def check_metadata(col):
    with open(os.path.join(col, 'galaxy.yml'), encoding='utf-8') as f:
        g = yaml.safe_load(f)
    for key in ('namespace', 'name', 'version', 'readme', 'authors', 'description', 'license', 'repository'):
        if not g.get(key):
            fail('galaxy.yml has no %s' % key)
    version = str(g.get('version', ''))
    m = re.fullmatch(r'(\d+)\.(\d+)\.(\d+)', version)
    if m and int(m.group(1)) >= 1:
        ok('galaxy.yml version %s (1.x or later: a stable interface)' % version)
    else:
        fail('galaxy.yml version %r is not 1.x or later' % version)
    if not re.match(r'https://', str(g.get('repository', ''))):
        fail('galaxy.yml repository %r is not an https URL' % g.get('repository'))
    path = os.path.join(col, 'changelogs', 'changelog.yaml')
    try:
        with open(path, encoding='utf-8') as f:
            cl = yaml.safe_load(f)
        releases = cl.get('releases') or {}
    except (OSError, yaml.YAMLError, AttributeError) as e:
        fail('changelogs/changelog.yaml: %s' % e)
        return g
    key = lambda v: tuple(int(x) for x in re.findall(r'\d+', v))
    newest = max(releases, key=key) if releases else None
    if version in releases and newest == version and releases[version].get('changes'):
        ok('changelogs/changelog.yaml: %d releases, the newest is %s with its changes' % (len(releases), version))
    else:
        fail('changelogs/changelog.yaml: no release %s with changes as the newest (releases: %s)'
             % (version, ', '.join(releases)))
    return g


def run(cmd, env, cwd, timeout=300):
    t = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, time.monotonic() - t


def ansible_test_python():
    """The interpreter ansible-test runs with (its #! line): the installed Python it is tested with."""
    with open(shutil.which('ansible-test'), 'rb') as f:
        first = f.readline().decode(errors='replace')
    m = re.match(r'#!\s*(\S+)(?:\s+(\S+))?', first)
    if not m:
        return None
    cmd = [m.group(1)] + ([m.group(2)] if m.group(2) else [])
    if os.path.basename(cmd[0]) == 'env' and len(cmd) > 1:
        cmd = [shutil.which(cmd[1]) or cmd[1]]
    return cmd[0]


def network_tests(python):
    """Sanity tests whose requirements ansible-test installs with pip (see the docstring)."""
    req = subprocess.run([python, '-c', 'import ansible_test, os; print(os.path.join(os.path.dirname('
                          'ansible_test.__file__), "_data", "requirements"))'],
                         stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    names = sorted(os.path.basename(p)[len('sanity.'):-len('.txt')] for p in glob.glob(os.path.join(req, 'sanity.*.txt')))
    if not names:
        raise RuntimeError('no sanity requirement files in %s' % req)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--collection', required=True)
    args = ap.parse_args()
    missing = [t for t in ('ansible-lint', 'ansible-test', 'ansible-doc') if not shutil.which(t)]
    if missing:
        msg = '%s not found (packaging/install-deps.sh installs ansible-core and ansible-lint)' % ', '.join(missing)
        if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1':
            print('FAIL: %s, and LLMTUNE_REQUIRE_ALL=1' % msg)
            return 1
        print('SKIP: ' + msg)
        return 77

    g = check_metadata(args.collection)
    top = tempfile.mkdtemp(prefix='llmtune-collection-')
    try:
        col = os.path.join(top, 'ansible_collections', g['namespace'], g['name'])
        shutil.copytree(args.collection, col, ignore=shutil.ignore_patterns('__pycache__', '*.tar.gz'))
        home = os.path.join(top, 'home')
        os.mkdir(home)
        env = dict(os.environ, HOME=home, ANSIBLE_COLLECTIONS_PATH=top, ANSIBLE_COLLECTIONS_PATHS=top,
                   NO_COLOR='1', ANSIBLE_NOCOLOR='1', LC_ALL='C.UTF-8')
        for k in ('ANSIBLE_CONFIG', 'ANSIBLE_LINT_CONFIG'):
            env.pop(k, None)

        # 2. ansible-lint, production profile. --offline: no Galaxy lookups for dependencies.
        rc, out, secs = run(['ansible-lint', '--offline', '--profile', 'production', '-p', '--nocolor'], env, col)
        passed = re.search(r'Passed with production profile: 0 failure\(s\), 0 warning\(s\) on (\d+) files', out)
        if rc == 0 and passed and int(passed.group(1)) >= 10:
            ok('ansible-lint --profile production: 0 failures, 0 warnings on %s files (%.1f s)' % (passed.group(1), secs))
        else:
            fail('ansible-lint --profile production exited %d:\n%s' % (rc, out[-3000:]))

        # 3. ansible-test sanity with the installed Python.
        interp = ansible_test_python()
        py = subprocess.run([interp, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
                            stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
        rc, out, secs = run(['ansible-test', 'sanity', '--list-tests'], env, col)
        known = set(re.findall(r'^[a-z][\w.-]*$', out, re.M))
        skips = [] if os.environ.get('LLMTUNE_ANSIBLE_TEST_NETWORK') == '1' else \
            [t for t in network_tests(interp) if t in known]
        if len(known) < 20 or (skips and len(skips) > len(known) // 2):
            fail('ansible-test sanity --list-tests: %d tests, %d of them needing the network:\n%s' % (len(known), len(skips), out))
        for t in skips:
            print('skip: ansible-test sanity --test %s: ansible-test pip-installs its pinned requirements '
                  '(sanity.%s.txt) into a new virtual environment, which needs the network' % (t, t))
        cmd = ['ansible-test', 'sanity', '--python', py, '--color', 'no']
        for t in skips:
            cmd += ['--skip-test', t]
        rc, out, secs = run(cmd, env, col, timeout=900)
        ran = re.findall(r'^Running sanity test "([^"]+)"', out, re.M)
        if rc == 0 and 'compile' in ran and 'shebang' in ran and 'no-smart-quotes' in ran and 'ERROR' not in out:
            ok('ansible-test sanity --python %s: %d tests passed (%s) (%.1f s)' % (py, len(ran), ' '.join(ran), secs))
        else:
            fail('ansible-test sanity --python %s exited %d (ran: %s):\n%s' % (py, rc, ' '.join(ran), out[-3000:]))

        # Stand-ins for the skipped ansible-doc test: the module's and the role's documentation render.
        fq = '%s.%s.llmtune' % (g['namespace'], g['name'])
        for kind, want in (('module', 'fail_on'), ('role', 'llmtune_profile')):
            rc, out, secs = run(['ansible-doc', '-t', kind, fq], env, col)
            if rc == 0 and want in out and 'WARNING' not in out and 'ERROR' not in out:
                ok('ansible-doc -t %s %s renders (names %s)' % (kind, fq, want))
            else:
                fail('ansible-doc -t %s %s exited %d:\n%s' % (kind, fq, rc, out[-2000:]))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print('%d failure(s)' % fails)
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
