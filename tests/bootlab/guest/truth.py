# SPDX-License-Identifier: GPL-2.0-or-later
"""What the targets of `llmtune verify --json` hold, read without llmtune (tests/bootlab): for each
change verify reports, a file's SHA-256 (or that it is absent), a link's target, a runtime value's
text, a swap area's state (/proc/swaps), a mount point's options (/proc/mounts). The host compares
them with what verify says it found.

    python3 truth.py out/verify.json > out/truth.json
"""
import hashlib
import json
import os
import sys


def proc_table(path, key_field, value_field):
    """{field KEY_FIELD: field VALUE_FIELD} of the lines of /proc/swaps or /proc/mounts."""
    table = {}
    with open(path) as f:
        for line in f.readlines()[1 if path.endswith('swaps') else 0:]:
            fields = line.split()
            if len(fields) > max(key_field, value_field):
                table[fields[key_field].encode().decode('unicode_escape')] = fields[value_field]
    return table


def read_target(change):
    path = change.get('target', '')
    kind = change.get('type')
    if kind == 'swap':  # the state of a swap area: on while /proc/swaps lists it
        return {'swap': 'on' if path in proc_table('/proc/swaps', 0, 1) else 'off'}
    if kind == 'mountopt':  # the options the mount point has now
        opts = proc_table('/proc/mounts', 1, 3).get(path)
        return {'options': opts} if opts else {'absent': True}
    if kind not in ('file', 'symlink', 'value') or not path.startswith('/'):
        return None  # commands and notes are not a state that can be read
    try:
        if kind == 'link' or os.path.islink(path):
            return {'link': os.readlink(path)}
        with open(path, 'rb') as f:
            data = f.read()
        if kind == 'value':
            return {'value': data.decode(errors='replace').strip()}
        return {'sha256': hashlib.sha256(data).hexdigest()}
    except FileNotFoundError:
        return {'absent': True}
    except OSError as e:
        return {'error': e.strerror}


def main():
    try:
        with open(sys.argv[1]) as f:
            verify = json.load(f)
    except (OSError, ValueError) as e:
        json.dump({'error': str(e)}, sys.stdout)
        return
    out = []
    for c in verify.get('changes', []):
        out.append({'seq': c.get('seq'), 'type': c.get('type'), 'target': c.get('target'),
                    'verify_status': c.get('status'), 'verify_found': c.get('found'),
                    'verify_expected': c.get('expected'), 'now': read_target(c)})
    json.dump({'changes': out}, sys.stdout, indent=1)
    print()


if __name__ == '__main__':
    main()
