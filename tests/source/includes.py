#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Every #include of a project header says where the header lives: its path under src/, the one
include directory the build gives (src/meson.build src_inc), so "facts/readers/mounts.h" and
"base/util.h", never "mounts.h". A bare name still compiles from a file beside the header (the
compiler looks in the including file's folder first), which is why this is checked and not left to
the build. Checked in src/ and in the C files of the test folders given after it (unit tests, fuzz
targets), where a header of the test folder itself (tmptree.h, fuzz.h) is included by its bare
name; config.h is generated into the build directory. Also fails on an include that names a path no
file under src/ has. Whether the header's layer may be included is layering.py's question.

Arguments: [--fix] SRC [TESTDIR...]. With --fix, each bare name that one header under src/ has is
rewritten in place to that header's path (how the tree was converted; run it after a rebase that
brings files written before the change)."""
import os
import re
import sys

GENERATED = {'config.h'}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def c_files(top):
    for folder, dirs, names in os.walk(top):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(('.c', '.h')):
                yield os.path.join(folder, name)


def fix_file(path, headers):
    """Rewrites the bare includes in PATH of headers that one file under src/ has; returns how many."""
    text = open(path, encoding='utf-8').read()
    count = 0

    def full(m):
        nonlocal count
        found = headers.get(m.group(2), [])
        if m.group(2) in GENERATED or len(found) != 1:
            return m.group(0)
        count += 1
        return m.group(1) + found[0] + m.group(3)
    text = re.sub(r'^(\s*#\s*include\s+")([^"/]+)(")', full, text, flags=re.M)
    if count:
        open(path, 'w', encoding='utf-8').write(text)
    return count


def main():
    args = sys.argv[1:]
    fix = '--fix' in args
    args = [a for a in args if a != '--fix']
    src, tests = args[0], args[1:]
    headers = {}
    for path in c_files(src):
        if path.endswith('.h'):
            rel = os.path.relpath(path, src)
            headers.setdefault(os.path.basename(rel), []).append(rel)
    if not headers:
        sys.exit(f'{src}: no headers found')
    if fix:
        fixed = sum(fix_file(path, headers) for top in [src] + tests for path in c_files(top))
        print(f'--fix: {fixed} includes rewritten to their path under {src}')
    errors, seen = [], 0
    for top in [src] + tests:
        for path in c_files(top):
            local = not os.path.abspath(path).startswith(os.path.abspath(src) + os.sep)
            for lineno, line in enumerate(open(path, encoding='utf-8').read().splitlines(), 1):
                m = include.match(line)
                if not m or m.group(1) in GENERATED:
                    continue
                header, where = m.group(1), f'{path}:{lineno}'
                seen += 1
                if os.path.isfile(os.path.join(src, header)):
                    continue
                if header in headers:
                    errors.append(f'{where}: includes "{header}" without its folder: '
                                  f'write "{" or ".join(headers[header])}"')
                elif not (local and os.path.isfile(os.path.join(os.path.dirname(path), header))):
                    errors.append(f'{where}: includes "{header}", which is no file under {src}')
    for e in errors:
        print(e)
    print(f'{seen} project includes in {src} and {len(tests)} test folders, {len(errors)} without their folder')
    if seen == 0:
        sys.exit('no #include "..." read: the parse is broken')
    sys.exit(1 if errors else 0)


main()
