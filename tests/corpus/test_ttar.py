#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Self-test of the corpus unpackers: tests/corpus/ttar.py (the format's corner cases) and the
tarball check in test_corpus.py, both with the refusals that keep an archive inside its
destination. Needs no corpus."""

import io
import os
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_corpus  # noqa: E402
import ttar  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check as expect, failures  # noqa: E402  (tests/lib/checklib.py)

SEP = "# ttar - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -\n"


def archive(tmp, text, name="a.ttar"):
    p = os.path.join(tmp, name)
    with open(p, "wb") as fh:
        fh.write(text.encode("utf-8") if isinstance(text, str) else text)
    return p


def refused(text, what):
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, "out")
        os.mkdir(dest)
        try:
            ttar.extract(archive(tmp, text), dest)
        except ttar.TtarError as e:
            expect(True, f"refused: {what} ({e})")
            return
        expect(False, f"refused: {what} (it was extracted)")


def make_tar(path, entries):
    """entries: (name, kind, payload) with kind 'file', 'dir', 'sym', 'hard' or 'chr'."""
    with tarfile.open(path, "w:bz2") as tf:
        for name, kind, payload in entries:
            ti = tarfile.TarInfo(name)
            data = None
            if kind == "file":
                data = payload.encode()
                ti.size = len(data)
            elif kind == "dir":
                ti.type = tarfile.DIRTYPE
            elif kind == "sym":
                ti.type, ti.linkname = tarfile.SYMTYPE, payload
            elif kind == "hard":
                ti.type, ti.linkname = tarfile.LNKTYPE, payload
            elif kind == "chr":
                ti.type = tarfile.CHRTYPE
            tf.addfile(ti, io.BytesIO(data) if data is not None else None)


def check_tarballs():
    base = [("top", "dir", None), ("top/sys", "dir", None), ("top/sys/a", "file", "1\n")]
    cases = {
        "a sysfs-style relative link": (base + [("top/sys/l", "sym", "a")], True),
        "link to a sibling tree": (base + [("top/sys/d", "dir", None), ("top/sys/d/l", "sym", "../a")], True),
        "'..' member": (base + [("top/../evil", "file", "x")], False),
        "absolute member": (base + [("/tmp/evil", "file", "x")], False),
        "absolute symlink": (base + [("top/sys/l", "sym", "/etc/passwd")], False),
        "symlink out of the tree": (base + [("top/sys/l", "sym", "../../../etc")], False),
        "hard link out of the tree": (base + [("top/sys/h", "hard", "../etc/passwd")], False),
        "character device": (base + [("top/sys/c", "chr", None)], False),
    }
    for what, (entries, ok) in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            tb = os.path.join(tmp, "t.tar.bz2")
            make_tar(tb, entries)
            dest = os.path.join(tmp, "out")
            os.mkdir(dest)
            try:
                test_corpus.safe_extract_tar(tb, dest)
                got = True
            except test_corpus.UnsafeArchive:
                got = False
            expect(got == ok, f"tarball {'accepted' if ok else 'refused'}: {what}")


def main():
    good = ("# Archive created by ttar -c -f x.ttar sys\n"
            "Directory: sys\nMode: 755\n" + SEP +
            "Path: sys/value\nLines: 1\n4: ACTIVE\nMode: 644\n" + SEP +
            "Path: sys/noeol\nLines: 1\nmpathAEOF\nMode: 444\n" + SEP +
            "Path: sys/empty\nLines: 0\nMode: 644\n" + SEP +
            "Path: sys/nul\nLines: 2\nabcNULLBYTEdef\nNULLBYTEEOF\nMode: 600\n" + SEP +
            "Path: sys/multi\nLines: 3\none\n\nthree\nMode: 644\n" + SEP +
            "Path: sys/link\nSymlinkTo: ../sys/value\n" + SEP +
            "Directory: sys/ro\nMode: 555\n" + SEP +
            "Path: sys/ro/inner\nLines: 1\nx\nMode: 444\n" + SEP)
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, "out")
        os.mkdir(dest)
        n = ttar.extract(archive(tmp, good), dest)
        expect(n == 9, f"9 entries extracted (got {n})")

        def rd(p):
            with open(os.path.join(dest, p), "rb") as fh:
                return fh.read()
        expect(rd("sys/value") == b"4: ACTIVE\n", "plain line keeps its newline")
        expect(rd("sys/noeol") == b"mpathA", "EOF marks a missing final newline")
        expect(rd("sys/empty") == b"", "Lines: 0 is an empty file")
        expect(rd("sys/nul") == b"abc\0def\n\0", "NULLBYTE is a NUL byte")
        expect(rd("sys/multi") == b"one\n\nthree\n", "empty content lines survive")
        expect(os.readlink(os.path.join(dest, "sys/link")) == "../sys/value", "symlink target kept")
        expect(oct(os.stat(os.path.join(dest, "sys/value")).st_mode & 0o777) == oct(0o644), "file mode applied")
        expect(os.stat(os.path.join(dest, "sys/ro")).st_mode & 0o500 == 0o500, "read-only directory filled")

    refused("Path: /etc/passwd\nLines: 1\nx\nMode: 644\n" + SEP, "absolute path")
    refused("Path: a/../../x\nLines: 1\nx\nMode: 644\n" + SEP, "'..' in a path")
    refused("Directory: ..\nMode: 755\n" + SEP, "'..' directory")
    refused("Path: a\nSymlinkTo: /tmp\n" + SEP + "Path: a/x\nLines: 1\nx\nMode: 644\n" + SEP,
            "writing through a symlink the archive made")
    refused("Path: a\nLines: 5\nx\nMode: 644\n" + SEP, "line count past the end")
    refused("Path: a\nLines: 1\nx\n" + SEP, "missing Mode line")
    refused("Path: a\nLines: 1\nx\nMode: 644\n" + SEP + "Path: a\nLines: 1\ny\nMode: 644\n" + SEP,
            "duplicate path")
    refused("Something: else\n", "unknown block")
    refused("Path: a\nLines: 1\nx\nMode: 4755\n" + SEP + "garbage\n", "trailing garbage")

    check_tarballs()
    if failures:
        print(f"{len(failures)} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
