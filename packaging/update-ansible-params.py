#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
The Ansible module's `params` suboptions, made from the parameter declarations ([types] of
profiles/base.ini) as `llmtune profiles show base --json` gives them: one suboption per parameter,
its Ansible type and choices from the declared type, its description the values the type allows.
Rewrites the generated blocks of packaging/ansible/plugins/modules/llmtune.py (DOCUMENTATION and
PARAMS_SPEC); with --check, exits 1 when they are not what the declarations give.

    update-ansible-params.py --llmtune BUILD/src/llmtune [--check]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.path.join(HERE, 'ansible', 'plugins', 'modules', 'llmtune.py')
DOC_BEGIN = '      # BEGIN params suboptions (packaging/update-ansible-params.py from profiles/base.ini [types])\n'
DOC_END = '      # END params suboptions\n'
SPEC_BEGIN = '# BEGIN PARAMS_SPEC (packaging/update-ansible-params.py from profiles/base.ini [types])\n'
SPEC_END = '# END PARAMS_SPEC\n'


def ansible_type(ty):
    """(Ansible type, choices or None) for a declared type."""
    choices = ty.get('choices')
    declared = [a.split()[0] for a in ty['declared'].split('|')]
    if choices is not None:
        words = [c for c in choices if c not in ('true', 'false')]
        if 'bool' in declared and not words:
            return 'bool', None
        if 'bool' in declared:
            return 'raw', [True, False] + words
        return 'str', choices
    if declared == ['integer']:
        return 'int', None
    return 'str', None


def blocks(params):
    doc, spec = [], []
    for name in sorted(params):
        ty = params[name].get('type')
        if not ty:
            continue
        t, choices = ansible_type(ty)
        doc.append('      %s:\n' % name)
        # a JSON string is a YAML string: the descriptions hold ': '
        doc.append('        description: %s\n' % json.dumps('%s%s (C(%s)); unset, the profile\'s value.' % (
            ty['allowed'][:1].upper(), ty['allowed'][1:], ty['declared'])))
        doc.append('        type: %s\n' % t)
        if choices is not None:
            doc.append('        choices: [%s]\n' % ', '.join(
                ('true' if c else 'false') if isinstance(c, bool) else json.dumps(c) for c in choices))
        args = ['type=%r' % t] + (['choices=%r' % (choices,)] if choices is not None else [])
        spec.append('    %s=dict(%s),\n' % (name, ', '.join(args)))
    return ''.join(doc), 'PARAMS_SPEC = dict(\n' + ''.join(spec) + ')\n'


def replace(text, begin, end, body):
    i, j = text.index(begin) + len(begin), text.index(end)
    return text[:i] + body + text[j:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--check', action='store_true')
    a = ap.parse_args()
    out = subprocess.run([a.llmtune, 'profiles', 'show', 'base', '--json'], check=True, stdout=subprocess.PIPE,
                         env=dict(os.environ, LLMTUNE_DATADIR=os.path.dirname(HERE))).stdout
    doc, spec = blocks(json.loads(out)['params'])
    with open(MODULE) as f:
        old = f.read()
    new = replace(replace(old, DOC_BEGIN, DOC_END, doc), SPEC_BEGIN, SPEC_END, spec)
    if a.check:
        if new != old:
            print('FAIL: %s: the params suboptions are not what profiles/base.ini [types] declares; '
                  'run packaging/update-ansible-params.py --llmtune BUILD/src/llmtune' % MODULE)
            return 1
        print('ok: the module\'s params suboptions follow profiles/base.ini [types]')
        return 0
    if new != old:
        with open(MODULE, 'w') as f:
            f.write(new)
    return 0


if __name__ == '__main__':
    sys.exit(main())
