# SPDX-License-Identifier: GPL-2.0-or-later
"""The one check() of the Python test harnesses: every harness records a failed check the same way,
prints it the same way, and ends the same way (finish()), so a harness cannot lose a failure by
forgetting to look at its own list.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
    from checklib import check, failures, finish
"""
import sys

# Every failed check's message, in order (a harness may read it, e.g. to stop early).
failures = []


def check(cond, what):
    """Records WHAT as failed when COND is false; prints one line either way. Returns COND."""
    print(('ok    ' if cond else 'FAIL  ') + what, flush=True)
    if not cond:
        failures.append(what)
    return bool(cond)


def finish(note=''):
    """The exit status of the harness: 0 when no check failed, else 1, after a one-line summary."""
    print(f'{len(failures)} failed' + (f' ({note})' if note else ''), flush=True)
    if failures:
        print('failed checks:', file=sys.stderr)
        for f in failures:
            print('  ' + f, file=sys.stderr)
    return 1 if failures else 0
