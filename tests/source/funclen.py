#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The size and complexity of every function in src/ (issue 17 item 5, issue 32 item 8: functions a
reader can hold in their head). House style puts a function's opening brace alone in column 0 and
its closing brace alone in column 0, so a body is the lines between them; the name is the identifier
before the last '(' of the signature above the brace.

Complexity is McCabe's cyclomatic number as lizard and pmccabe count it: 1, plus one for each if,
for, while, case, '&&', '||' and '?' in the body (strings, character constants and comments left
out; 'else if' is one 'if').

Usage: funclen.py [SRC] [--limit N] [--complexity N] [--all] [--check]
  prints 'LINES CCN file:line name' for each function over N lines (default 80) or over the
  complexity limit (default 25), longest first; --all prints every function. With --check, exits 1
  when one is over either limit (the meson test 'funclen' in the unit suite)."""
import os
import re
import sys

args = sys.argv[1:]


def opt(name, default):
    return int(args[args.index(name) + 1]) if name in args else default


limit = opt('--limit', 80)
ccn_limit = opt('--complexity', 25)
show_all = '--all' in args
check = '--check' in args
pos = [a for i, a in enumerate(args)
       if not a.startswith('--') and (i == 0 or args[i - 1] not in ('--limit', '--complexity'))]
src = pos[0] if pos else os.path.join(os.path.dirname(__file__), '..', '..', 'src')

name_re = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(')
# A string, a character constant or a comment: blanked before counting.
noise_re = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)
branch_re = re.compile(r'\b(?:if|for|while|case)\b|&&|\|\||\?')


def complexity(body):
    return 1 + len(branch_re.findall(noise_re.sub(' ', body)))


rows = []
for folder, _, names in os.walk(src):
    for fname in sorted(names):
        if not fname.endswith('.c'):
            continue
        path = os.path.join(folder, fname)
        rel = os.path.relpath(path, src)
        lines = open(path, encoding='utf-8', errors='replace').read().split('\n')
        i = 0
        while i < len(lines):
            if lines[i] == '{':
                # The signature: the lines above back to a blank line or a comment end.
                j = i - 1
                sig = []
                while j >= 0 and lines[j].strip() and not lines[j].rstrip().endswith(('*/', ';', '}')):
                    sig.insert(0, lines[j])
                    j -= 1
                text = ' '.join(sig)
                head = text.split('(')[0] + '(' if '(' in text else ''
                m = list(name_re.finditer(head))
                name = m[-1].group(1) if m else '?'
                k = i + 1
                while k < len(lines) and lines[k] != '}':
                    k += 1
                body = k - i - 1
                if '(' in text:
                    rows.append((body, complexity('\n'.join(lines[i + 1:k])), f'{rel}:{i + 1}', name))
                i = k
            i += 1

rows.sort(key=lambda r: (-r[0], r[2]))
over = [r for r in rows if r[0] > limit or r[1] > ccn_limit]
for body, ccn, where, name in (rows if show_all else over):
    print(f'{body:5d} {ccn:3d} {where} {name}')
if check and over:
    print(f'funclen: {len(over)} function(s) over {limit} lines or complexity {ccn_limit}', file=sys.stderr)
    sys.exit(1)
