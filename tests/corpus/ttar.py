#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Extract a .ttar text archive (the format of prometheus node_exporter's and procfs's fixtures).

The format, as those archives use it, is a sequence of blocks, each ended by a separator line
starting with "# ttar - - -" (lines starting with "#" outside a file's content are comments):

    Path: P           a regular file:
    Lines: N          N lines of content follow; NUL bytes are spelled NULLBYTE and a
    <N lines>         last line ending in EOF had no final newline
    Mode: NNN

    Path: P           a symbolic link (no Mode line)
    SymlinkTo: T

    Directory: P      a directory
    Mode: NNN

This is llmtune's own reader (the corpus rules forbid vendoring the Go/shell ttar tool). It refuses
absolute paths and any path with a ".." component, and never writes through a symlink that the
archive itself created, so nothing lands outside the destination directory.

Usage as a program: ttar.py ARCHIVE DESTDIR
"""

import os
import stat
import sys

SEPARATOR = b"# ttar - - -"


class TtarError(Exception):
    pass


def _safe_relpath(raw, lineno):
    try:
        p = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TtarError(f"line {lineno}: path is not UTF-8: {raw!r}")
    if not p or "\0" in p:
        raise TtarError(f"line {lineno}: empty or NUL-bearing path")
    if p.startswith("/"):
        raise TtarError(f"line {lineno}: absolute path refused: {p}")
    parts = p.split("/")
    if ".." in parts:
        raise TtarError(f"line {lineno}: path with '..' refused: {p}")
    parts = [c for c in parts if c not in ("", ".")]
    if not parts:
        raise TtarError(f"line {lineno}: path names the archive root: {p}")
    return parts


def _parse_mode(raw, lineno):
    try:
        mode = int(raw.decode("ascii"), 8)
    except (UnicodeDecodeError, ValueError):
        raise TtarError(f"line {lineno}: bad mode {raw!r}")
    if mode & ~0o7777:
        raise TtarError(f"line {lineno}: mode out of range {raw!r}")
    # setuid/setgid/sticky bits have no business in a test tree
    return mode & 0o777


def parse(data):
    """Yield (kind, parts, payload, mode) for each entry; kind is 'file', 'dir' or 'symlink'."""
    lines = data.split(b"\n")
    # a final newline leaves one empty element that is not a line
    if lines and lines[-1] == b"":
        lines.pop()
    i = 0
    n = len(lines)

    def field(idx, key):
        if idx >= n or not lines[idx].startswith(key + b": "):
            got = lines[idx][:60] if idx < n else b"<end of archive>"
            raise TtarError(f"line {idx + 1}: expected '{key.decode()}:', got {got!r}")
        return lines[idx][len(key) + 2:]

    def separator(idx):
        if idx < n and not lines[idx].startswith(SEPARATOR):
            raise TtarError(f"line {idx + 1}: expected separator, got {lines[idx][:60]!r}")
        return idx + 1

    while i < n:
        line = lines[i]
        if line.startswith(b"#") or line == b"":
            i += 1
            continue
        if line.startswith(b"Directory: "):
            parts = _safe_relpath(line[len(b"Directory: "):], i + 1)
            mode = _parse_mode(field(i + 1, b"Mode"), i + 2)
            i = separator(i + 2)
            yield ("dir", parts, None, mode)
        elif line.startswith(b"Path: "):
            parts = _safe_relpath(line[len(b"Path: "):], i + 1)
            if i + 1 < n and lines[i + 1].startswith(b"SymlinkTo: "):
                target = lines[i + 1][len(b"SymlinkTo: "):]
                if not target or b"\0" in target:
                    raise TtarError(f"line {i + 2}: bad symlink target")
                i = separator(i + 2)
                yield ("symlink", parts, target, None)
                continue
            raw = field(i + 1, b"Lines")
            try:
                count = int(raw.decode("ascii"))
            except (UnicodeDecodeError, ValueError):
                raise TtarError(f"line {i + 2}: bad line count {raw!r}")
            if count < 0 or i + 2 + count > n:
                raise TtarError(f"line {i + 2}: line count {count} runs past the archive")
            body = lines[i + 2:i + 2 + count]
            content = b"".join(l + b"\n" for l in body)
            if body and body[-1].endswith(b"EOF"):
                content = content[:-len(b"EOF\n")]
            content = content.replace(b"NULLBYTE", b"\0")
            mode = _parse_mode(field(i + 2 + count, b"Mode"), i + 3 + count)
            i = separator(i + 3 + count)
            yield ("file", parts, content, mode)
        else:
            raise TtarError(f"line {i + 1}: unexpected {line[:60]!r}")


def _check_no_symlink_above(dest, parts):
    """Refuse to write below a symlink: an archive link 'a -> /etc' plus a file 'a/x' would escape."""
    cur = dest
    for c in parts[:-1]:
        cur = os.path.join(cur, c)
        if os.path.islink(cur):
            raise TtarError(f"refusing to write through symlink {cur}")


def extract(archive, dest):
    """Unpack ARCHIVE (a path) into the existing directory DEST. Returns the number of entries."""
    with open(archive, "rb") as fh:
        data = fh.read()
    dest = os.path.abspath(dest)
    dirs = []
    count = 0
    for kind, parts, payload, mode in parse(data):
        _check_no_symlink_above(dest, parts)
        path = os.path.join(dest, *parts)
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        if os.path.lexists(path) and (kind != "dir" or not os.path.isdir(path) or os.path.islink(path)):
            raise TtarError(f"duplicate entry {'/'.join(parts)}")
        if kind == "dir":
            os.makedirs(path, exist_ok=True)
            # directory modes are applied last: a 555 directory must still take its children
            dirs.append((path, mode))
        elif kind == "symlink":
            os.symlink(payload, path)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(payload)
            # keep files readable by the test (some fixtures are mode 000 or 200 on purpose; the
            # probes under test run unprivileged here, so honour the mode as given)
            os.chmod(path, mode)
        count += 1
    for path, mode in reversed(dirs):
        # the test must be able to delete its temp tree: keep the owner's rwx on directories
        os.chmod(path, mode | stat.S_IRWXU)
    return count


def main(argv):
    if len(argv) != 3:
        print("usage: ttar.py ARCHIVE DESTDIR", file=sys.stderr)
        return 2
    try:
        n = extract(argv[1], argv[2])
    except (TtarError, OSError) as e:
        print(f"ttar.py: {argv[1]}: {e}", file=sys.stderr)
        return 1
    print(f"{n} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
