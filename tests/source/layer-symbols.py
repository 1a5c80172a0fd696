#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The layers as the linker sees them (docs/ARCHITECTURE.md): every symbol an object of layer L
leaves undefined is defined in L, in a layer below it, or in no layer at all (the C library and the
third-party libraries). One defined by a layer above is an upward call, which layering.py cannot see
when no header of the higher layer is included (a prototype written by hand, an extern).

Arguments: NM, then LAYER=ARCHIVE... lowest layer first; a layer may be named more than once
(base's test hooks are an archive of their own)."""
import subprocess
import sys

DEFINED = set('TDBRCVWGSIiu')


def symbols(nm, archive):
    """(object, type, name) of each global symbol in ARCHIVE (POSIX format: "ARCHIVE[OBJECT]: NAME TYPE ...")."""
    out = subprocess.run([nm, '-A', '-g', '-P', archive], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        where, sep, rest = line.partition(']: ')
        fields = rest.split()
        if not sep or len(fields) < 2:
            continue
        yield where.rpartition('[')[2].rpartition('/')[2], fields[1], fields[0]


def main():
    nm, pairs = sys.argv[1], [a.split('=', 1) for a in sys.argv[2:]]
    order = []
    for layer, _ in pairs:
        if layer not in order:
            order.append(layer)
    rank = {layer: i for i, layer in enumerate(order)}
    owner, wanted = {}, []
    for layer, archive in pairs:
        for obj, kind, name in symbols(nm, archive):
            if kind in DEFINED:
                owner.setdefault(name, layer)
            elif kind == 'U':
                wanted.append((layer, obj, name))
    errors = sorted({f'{layer}: {obj} uses {name}, defined in {owner[name]}, a layer above '
                     f'({" < ".join(order)})'
                     for layer, obj, name in wanted if name in owner and rank[owner[name]] > rank[layer]})
    for e in errors:
        print(e)
    seen = len(wanted)
    print(f'{len(pairs)} archives, {seen} undefined references, {len(errors)} upward')
    if seen == 0:
        sys.exit('no undefined references read: nm found nothing in the archives')
    sys.exit(1 if errors else 0)


main()
