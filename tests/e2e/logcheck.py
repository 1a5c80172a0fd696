#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Check an llmtune change log with nothing but hashlib and byte slicing (no JSON parser), by the rule
README.md ("The change log") states:

  * every line ends in exactly  ,"hash":"<64 lowercase hex digits>"}  and a newline;
  * that hash is the SHA-256 of the bytes before ,"hash":" followed by one "}";
  * the key before "hash" is "prev": the previous line's hash (64 zeros for the first line);
  * each line starts with {"seq":N, and N counts up from 1;
  * the head file beside the log holds "SEQ:HASH\\n" of the last line.

    logcheck.py LOG_DIR     (the directory holding changelog.jsonl and changelog.head)

Prints one line per problem and, last, "head SEQ:HASH" of the log's end; exits 1 when there is a
problem. The tests run it on real logs (tests/e2e/reliability.py, part bytes).
"""
import hashlib
import os
import sys

HASH_FIELD = b',"hash":"'
PREV_FIELD = b',"prev":"'
HEX = frozenset(b'0123456789abcdef')


def is_hex64(b):
    return len(b) == 64 and all(c in HEX for c in b)


def check(log, head):
    """Problems of LOG (bytes) against HEAD (bytes, or None when there is no head file), and the
    log's end as (seq, hash)."""
    problems = []
    if log and not log.endswith(b'\n'):
        problems.append('the last line is incomplete')
    lines = log.split(b'\n')[:-1] if log.endswith(b'\n') else log.split(b'\n')
    prev, end = b'0' * 64, (0, '')
    for n, line in enumerate(lines, 1):
        i = line.rfind(HASH_FIELD)
        tail = line[i + len(HASH_FIELD):] if i >= 0 else b''
        stored = tail[:64]
        if i < 0 or len(tail) != 66 or tail[64:] != b'"}' or not is_hex64(stored):
            problems.append(f'line {n}: does not end in ,"hash":"<64 hex digits>"}} (bytes added or changed)')
            prev = None
            continue
        body = line[:i]
        if hashlib.sha256(body + b'}').hexdigest().encode() != stored:
            problems.append(f'line {n}: its hash does not match its bytes (edited)')
        if body[-74:-65] != PREV_FIELD or body[-1:] != b'"' or not is_hex64(body[-65:-1]):
            problems.append(f'line {n}: "prev" is not the key before "hash"')
        elif prev is not None and body[-65:-1] != prev:
            problems.append(f'line {n}: does not chain to the line before it')
        seq = body[len(b'{"seq":'):body.find(b',')] if body.startswith(b'{"seq":') else b''
        if not seq.isdigit() or int(seq) != n:
            problems.append(f'line {n}: seq is {seq!r}, not {n}')
        prev = stored
        end = (n, stored.decode())
    if head is None:
        if end[0]:
            problems.append('no head file: the log\'s end cannot be checked')
    elif head != f'{end[0]}:{end[1]}\n'.encode():
        problems.append(f'the head file says {head.strip().decode(errors="replace")}, the log ends at '
                        f'{end[0]}:{end[1]} (cut, or the head is one record behind after a crash)')
    return problems, end


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = sys.argv[1]
    try:
        with open(os.path.join(d, 'changelog.jsonl'), 'rb') as f:
            log = f.read()
    except FileNotFoundError:
        log = b''
    try:
        with open(os.path.join(d, 'changelog.head'), 'rb') as f:
            head = f.read()
    except FileNotFoundError:
        head = None
    problems, end = check(log, head)
    for p in problems:
        print(p)
    print(f'head {end[0]}:{end[1]}')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
