#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""README documents the time semantics of every health rule (issue 33): each rule of
rules/gpu-health.ini and rules/prolog.ini is named in the first column of the table under
"Health over time" (| rule | judges | time |), and every rule the table names exists in rules/*.ini
(the table also holds health rules kept beside their area's configuration: EDAC, InfiniBand ports).
Fails, too, when it finds no such table or no rule (a parse that matches nothing would pass)."""
import os
import re
import sys

HEALTH_RULES = ('rules/gpu-health.ini', 'rules/prolog.ini')


def rules(top, files):
    ids = []
    for rel in files:
        with open(os.path.join(top, rel)) as f:
            ids += re.findall(r'^\[([a-z0-9-]+)\]\s*$', f.read(), re.M)
    return ids


def table(top):
    with open(os.path.join(top, 'README.md')) as f:
        lines = f.read().split('\n')
    try:
        start = lines.index('| rule | judges | time |')
    except ValueError:
        return None
    named = set()
    for line in lines[start + 2:]:
        if not line.startswith('|'):
            break
        first = line.split('|')[1]
        named.update(re.findall(r'`([a-z0-9-]+)`', first))
    return named


def main():
    top = sys.argv[1]
    ids, named = rules(top, HEALTH_RULES), table(top)
    every = rules(top, ['rules/' + n for n in os.listdir(os.path.join(top, 'rules')) if n.endswith('.ini')])
    if not ids or not named:
        sys.exit('FAIL: no health rules (%d) or no time table in README.md (%r)' % (len(ids), named))
    missing = [r for r in ids if r not in named]
    unknown = sorted(named - set(every))
    for r in missing:
        print('FAIL: README.md time table lacks %s' % r)
    for r in unknown:
        print('FAIL: README.md time table names %s, which is no rule' % r)
    if missing or unknown:
        sys.exit(1)
    print('ok: %d health rules, each with its time in README.md' % len(ids))


if __name__ == '__main__':
    main()
