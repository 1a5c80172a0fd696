#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One naming rule for release functions (issue 17 item 4; docs/ARCHITECTURE.md, "Ownership"):

  X_free(p)  frees the object (or array) p points to, and returns NULL of p's type, so that a
             caller writes `p = X_free(p);` and keeps no dangling pointer;
  X_done(p)  releases what the struct p holds and leaves p itself to its owner (on the stack, in
             another struct): it returns nothing.

Checked on every function declared or defined at file level in the .h and .c files of src/'s layer
folders and their subfolders, static ones included: a name ending in `_free` returns a pointer and each
`return` in its body is `return NULL;`; a name ending in `_done` does not return a pointer; no function
is named `*_clear` or `free_*` (the two other spellings of an in-place release that src/ had). A reader
then knows from the name alone whether the pointer is dead after the call. EXCEPTIONS below are the
functions whose signature something else fixes, each with its reason. Fails, too, when it finds no
release function at all (a parse that matches nothing would otherwise pass)."""
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..', 'src')

# Functions named *_free that return void because their type is given to them.
FACTS_DESTROY = 'a facts handle destroy callback: facts_set_handle() takes void (*)(void *)'
EXCEPTIONS = {
    'lazy_xml_free': "stands in for libxml2's xmlFree (lazy-xml.h #defines it), void (*)(void *)",
    'topo_free': FACTS_DESTROY,
    'hwlib_free': FACTS_DESTROY,
    'vet_verdict_free': FACTS_DESTROY,
    'pcilib_free': FACTS_DESTROY,
    'ids_free': FACTS_DESTROY,
    'cpu_state_free': FACTS_DESTROY,
    'kstate_free': FACTS_DESTROY,
    'state_free': FACTS_DESTROY,
    'svc_free': FACTS_DESTROY,
    'catalog_free': FACTS_DESTROY,
    'cstate_free': FACTS_DESTROY,
}

# A declaration or definition starts in column 0 (house style): the return type, then the name.
# The type may not hold '(' ';' '{' '}' '=', so calls, statements and initialisers do not match.
sig = re.compile(r'^(?P<type>[A-Za-z_][^;{}()=\n]*?[\s*])(?P<name>[a-z_][a-z0-9_]*_(?:free|done))\s*\(',
                 re.M)

# Other spellings of a release function: a function so named is one of *_free or *_done.
other = re.compile(r'^(?P<type>[A-Za-z_][^;{}()=\n]*?[\s*])'
                   r'(?P<name>[a-z_][a-z0-9_]*_clear|free_[a-z0-9_]+)\s*\(', re.M)

errors = []
seen = {'free': 0, 'done': 0}
for folder, dirs, names in sorted(os.walk(src)):
    if folder == src:
        continue
    for fname in sorted(names):
        if not fname.endswith(('.c', '.h')):
            continue
        rel = 'src/' + os.path.relpath(os.path.join(folder, fname), src)
        text = open(os.path.join(folder, fname), encoding='utf-8').read()
        lines = text.split('\n')
        for m in other.finditer(text):
            if m.group('type').split()[0] in ('return', 'else', 'case', 'goto'):
                continue
            lineno = text.count('\n', 0, m.start()) + 1
            errors.append(f'{rel}:{lineno}: {m.group("name")}: a release function is named *_free (frees '
                          'the object, returns NULL) or *_done (clears in place)')
        for m in sig.finditer(text):
            name = m.group('name')
            rtype = re.sub(r'\b(static|inline|extern)\s+', '', m.group('type')).strip()
            if rtype.split()[0] in ('return', 'else', 'case', 'goto'):
                continue
            lineno = text.count('\n', 0, m.start()) + 1
            pointer = '*' in rtype
            kind = 'free' if name.endswith('_free') else 'done'
            seen[kind] += 1
            if kind == 'done':
                if pointer:
                    errors.append(f'{rel}:{lineno}: {name} returns {rtype}: a *_done clears in place '
                                  'and returns nothing (name it *_free if it frees the object)')
                continue
            if name in EXCEPTIONS:
                continue
            if not pointer:
                errors.append(f'{rel}:{lineno}: {name} returns {rtype}: a *_free frees the object and '
                              'returns NULL of its type; one that clears a struct in place is *_done')
                continue
            # A definition: its body runs from the '{' alone in column 0 to the '}' alone in column 0.
            i = lineno - 1
            while i < len(lines) and not lines[i].rstrip().endswith((';', '{')):
                i += 1
            if i >= len(lines) or lines[i].rstrip().endswith(';'):
                continue
            k = i + 1
            while k < len(lines) and lines[k] != '}':
                k += 1
            for j in range(i + 1, k):
                r = re.search(r'\breturn\b([^;]*);', lines[j])
                if r and r.group(1).strip() != 'NULL':
                    errors.append(f'{rel}:{j + 1}: {name} returns {r.group(1).strip()!r}: '
                                  'a *_free returns NULL')

for e in errors:
    print(e)
if not seen['free'] or not seen['done']:
    print(f'found {seen["free"]} *_free and {seen["done"]} *_done functions in {src}: the parse is broken')
    sys.exit(1)
if errors:
    sys.exit(1)
print(f'{seen["free"]} *_free and {seen["done"]} *_done declarations and definitions follow the rule '
      f'({len(EXCEPTIONS)} listed exceptions)')
