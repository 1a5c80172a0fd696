#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Lists the functions in src/ whose body is longer than a limit (issue 17 item 5: functions a reader
can hold in their head). House style puts a function's opening brace alone in column 0 and its closing
brace alone in column 0, so a body is the lines between them; the name is the identifier before the
last '(' of the signature above the brace.

Usage: funclen.py [SRC] [--limit N] [--all]
  prints 'LINES file:line name' for each function over N lines (default 80), longest first;
  --all prints every function. Exits 1 when one is over the limit and --check is given."""
import os
import re
import sys

args = sys.argv[1:]
limit = 80
show_all = '--all' in args
check = '--check' in args
if '--limit' in args:
    limit = int(args[args.index('--limit') + 1])
pos = [a for i, a in enumerate(args)
       if not a.startswith('--') and (i == 0 or args[i - 1] != '--limit')]
src = pos[0] if pos else os.path.join(os.path.dirname(__file__), '..', '..', 'src')

name_re = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*\(')
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
                    rows.append((body, f'{rel}:{i + 1}', name))
                i = k
            i += 1

rows.sort(key=lambda r: (-r[0], r[1]))
over = [r for r in rows if r[0] > limit]
for body, where, name in (rows if show_all else over):
    print(f'{body:5d} {where} {name}')
if check and over:
    sys.exit(1)
