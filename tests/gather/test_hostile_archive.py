#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Hostile archives as --root: each is refused with a message naming the flaw, exit 1, and leaves
no unpacked copy behind; a well-formed archive with the same shape is accepted (so each refusal is
about its flaw, not about the harness). Writes the archives with Python's tarfile.

Usage: test_hostile_archive.py LLMTUNE [OUTDIR_FOR_SEEDS]
With OUTDIR_FOR_SEEDS, also writes every archive there (the fuzz seed corpus, tests/fuzz/corpus/archive).
"""
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile

LLMTUNE = sys.argv[1]
SEEDS = sys.argv[2] if len(sys.argv) > 2 else None
failures = []


def entry(path, typ, data=b"", target=None):
    e = {"path": path, "type": typ}
    if typ == "file":
        e["size"] = len(data)
        e["sha256"] = hashlib.sha256(data).hexdigest()
    if typ == "link":
        e["target"] = target
    return e


def build(path, members, manifest=None, mode="w:gz", first=None, after_manifest=b""):
    """members: (name, kind, data_or_target[, manifest_override]); manifest: list of entries or None
    for one derived from the members under root/."""
    if manifest is None:
        manifest = []
        for m in members:
            name, kind, payload = m[0], m[1], m[2]
            if not name.startswith("root/") or kind in ("chr", "fifo", "hard"):
                continue
            rel = name[5:].rstrip("/")
            if any(e["path"] == rel for e in manifest):
                continue
            manifest.append(entry(rel, "file" if kind == "file" else kind, payload if kind == "file" else b"",
                                  payload if kind == "link" else None))
    mdata = json.dumps({"format": 1, "files": manifest, "left_out": []}).encode() + after_manifest
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT, **({"compresslevel": 1} if "gz" in mode else {})) as t:
        if first is None:
            ti = tarfile.TarInfo("MANIFEST")
            ti.size = len(mdata)
            t.addfile(ti, io.BytesIO(mdata))
        for m in members:
            name, kind, payload = m[0], m[1], m[2]
            ti = tarfile.TarInfo(name)
            if kind == "file":
                if isinstance(payload, int):  # a large run of zeros, written without holding it
                    ti.size = payload
                    t.addfile(ti, Zeros(payload))
                    continue
                ti.size = len(payload)
                t.addfile(ti, io.BytesIO(payload))
            elif kind == "dir":
                ti.type = tarfile.DIRTYPE
                t.addfile(ti)
            elif kind == "link":
                ti.type = tarfile.SYMTYPE
                ti.linkname = payload
                t.addfile(ti)
            elif kind == "hard":
                ti.type = tarfile.LNKTYPE
                ti.linkname = payload
                t.addfile(ti)
            elif kind == "chr":
                ti.type = tarfile.CHRTYPE
                ti.devmajor, ti.devminor = 1, 3
                t.addfile(ti)
            elif kind == "fifo":
                ti.type = tarfile.FIFOTYPE
                t.addfile(ti)


class Zeros(io.RawIOBase):
    def __init__(self, n):
        self.left = n

    def read(self, n=-1):
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return b"\0" * n


GOOD = [("root/etc/hostname", "file", b"node\n"), ("root/proc/sys/kernel/osrelease", "file", b"6.1.0\n")]

# name: (members, manifest override, expected text in the error)
CASES = {
    "absolute": (GOOD + [("/etc/passwd", "file", b"x")], None, "absolute names are not allowed"),
    "dotdot": (GOOD + [("root/../../../tmp/evil", "file", b"x")], None, "\"..\" component"),
    "outside-root-dir": (GOOD + [("etc/passwd", "file", b"x")], None, "not under root/"),
    "link-out": (GOOD + [("root/etc/evil", "link", "../../../../etc/passwd")], None, "points outside the root"),
    "under-link": (GOOD + [("root/d", "link", "etc"), ("root/d/x", "file", b"x")],
                   [entry("etc/hostname", "file", b"node\n"), entry("proc/sys/kernel/osrelease", "file", b"6.1.0\n"),
                    entry("d", "link", target="etc"), entry("d/x", "file", b"x")],
                   "which is a symbolic link or a file"),
    # The unpacker keeps each directory open for the members under it (archive-root.c): a link
    # or file that later stands where a member's directory should be is still refused, also when
    # members of other directories come between and the directory above it is already open.
    "under-link-later": (GOOD + [("root/a/", "dir", None), ("root/a/f", "file", b"f"), ("root/a/l", "link", "../etc"),
                                 ("root/b", "file", b"b"), ("root/a/l/x", "file", b"x")], None,
                         "lies under l, which is a symbolic link or a file"),
    "under-file-later": (GOOD + [("root/a/", "dir", None), ("root/a/f", "file", b"f"), ("root/b", "file", b"b"),
                                 ("root/a/f/x", "file", b"x")], None, "lies under f, which is a symbolic link or a file"),
    "duplicate": (GOOD + [("root/etc/hostname", "file", b"node\n")], None, "appears twice"),
    "hardlink": (GOOD + [("root/etc/h2", "hard", "root/etc/hostname")], None, "hard links are not allowed"),
    "device": (GOOD + [("root/dev/mem", "chr", None)], None, "is a character device"),
    "fifo": (GOOD + [("root/run/fifo", "fifo", None)], None, "is a FIFO"),
    "huge": (GOOD + [("root/big", "file", 9 << 20)],
             [entry("etc/hostname", "file", b"node\n"), entry("proc/sys/kernel/osrelease", "file", b"6.1.0\n"),
              {"path": "big", "type": "file", "size": 9 << 20, "sha256": "0" * 64}],
             "more than the 8388608 a root file may have"),
    "bomb": (GOOD + [("root/z%d" % i, "file", 8 << 20) for i in range(33)],
             [entry("etc/hostname", "file", b"node\n"), entry("proc/sys/kernel/osrelease", "file", b"6.1.0\n")] +
             [{"path": "z%d" % i, "type": "file", "size": 8 << 20, "sha256": "0" * 64} for i in range(33)],
             "a decompression bomb"),
    "lying-manifest": (GOOD + [("root/z", "file", 4 << 20)],
                       [entry("etc/hostname", "file", b"node\n"), entry("proc/sys/kernel/osrelease", "file", b"6.1.0\n"),
                        {"path": "z", "type": "file", "size": 10, "sha256": "0" * 64}],
                       "more than the 10 bytes its MANIFEST entry allows"),
    "not-listed": (GOOD + [("root/etc/extra", "file", b"x")],
                   [entry("etc/hostname", "file", b"node\n"), entry("proc/sys/kernel/osrelease", "file", b"6.1.0\n")],
                   "not listed in the MANIFEST"),
    "tampered": (GOOD, [entry("etc/hostname", "file", b"evil\n"), entry("proc/sys/kernel/osrelease", "file", b"6.1.0\n")],
                 "differs from the MANIFEST"),
    # gather records what it could not read or list with its errno; "not there" would read as absent
    "unlisted-enoent": (GOOD + [("root/m/", "dir", None)],
                        [entry("etc/hostname", "file", b"node\n"), entry("proc/sys/kernel/osrelease", "file", b"6.1.0\n"),
                         {"path": "m", "type": "unlisted", "errno": 2}], "which would read as absent"),
    "missing-member": (GOOD, [entry("etc/hostname", "file", b"node\n"), entry("proc/sys/kernel/osrelease", "file", b"6.1.0\n"),
                              entry("etc/gone", "file", b"x")], "archive lacks it"),
}


def run(arch, tmpdir):
    env = dict(os.environ, TMPDIR=tmpdir)
    return subprocess.run([LLMTUNE, "--root", arch, "facts", "--json", "kernel.release"], capture_output=True,
                          text=True, env=env, timeout=60)


with tempfile.TemporaryDirectory(prefix="llmtune-hostile-archive-") as tmp:
    unpack_dir = os.path.join(tmp, "unpack")
    os.mkdir(unpack_dir)
    good = os.path.join(tmp, "good.tar.gz")
    build(good, GOOD)
    p = run(good, unpack_dir)
    if p.returncode != 0 or '"6.1.0"' not in p.stdout:
        failures.append(f"the well-formed archive was not accepted: {p.returncode} {p.stderr}")
    for name, (members, man, want) in CASES.items():
        arch = os.path.join(tmp, name + ".tar.gz")
        build(arch, members, man)
        p = run(arch, unpack_dir)
        ok = p.returncode == 1 and want in p.stderr and "cannot open root" in p.stderr
        print(("ok  " if ok else "FAIL") + f" {name}: {p.stderr.strip()}")
        if not ok:
            failures.append(f"{name}: exit {p.returncode}, wanted '{want}' in: {p.stderr.strip()}")
        if SEEDS and name not in ("bomb", "huge", "lying-manifest"):
            os.makedirs(SEEDS, exist_ok=True)
            with open(arch, "rb") as src, open(os.path.join(SEEDS, name + ".tar.gz"), "wb") as dst:
                dst.write(src.read())
    # A MANIFEST is one JSON document: text after it is refused, white space is not.
    for name, tail, ok_wanted in (("manifest-trailing", b' {"files": []}', False), ("manifest-space", b"\n \n", True)):
        arch = os.path.join(tmp, name + ".tar.gz")
        build(arch, GOOD, after_manifest=tail)
        p = run(arch, unpack_dir)
        ok = (p.returncode == 0 and '"6.1.0"' in p.stdout) if ok_wanted else \
            (p.returncode == 1 and "MANIFEST is not valid JSON (text after the JSON document)" in p.stderr)
        print(("ok  " if ok else "FAIL") + f" {name}: {p.stderr.strip()}")
        if not ok:
            failures.append(f"{name}: exit {p.returncode}: {p.stderr.strip()}")
    # no manifest at all; a plain tar of a tree; a truncated archive; garbage
    plain = os.path.join(tmp, "plain.tar.gz")
    with tarfile.open(plain, "w:gz") as t:
        ti = tarfile.TarInfo("etc/hostname")
        ti.size = 2
        t.addfile(ti, io.BytesIO(b"x\n"))
    trunc = os.path.join(tmp, "trunc.tar.gz")
    with open(good, "rb") as f:
        data = f.read()
    with open(trunc, "wb") as f:
        f.write(data[: len(data) // 2])
    garbage = os.path.join(tmp, "garbage.tar.gz")
    with open(garbage, "wb") as f:
        f.write(b"\x1f\x8b" + os.urandom(300))
    for name, arch, want in (("no-manifest", plain, "first member is not MANIFEST"), ("truncated", trunc, ""),
                             ("garbage", garbage, "")):
        p = run(arch, unpack_dir)
        ok = p.returncode == 1 and want in p.stderr and "cannot open root" in p.stderr
        print(("ok  " if ok else "FAIL") + f" {name}: {p.stderr.strip()}")
        if not ok:
            failures.append(f"{name}: exit {p.returncode}: {p.stderr.strip()}")
    if SEEDS:
        with open(good, "rb") as src, open(os.path.join(SEEDS, "good.tar.gz"), "wb") as dst:
            dst.write(src.read())
    left = os.listdir(unpack_dir)
    if left:
        failures.append(f"unpacked copies left behind: {left}")
    # nothing escaped: no file was created next to the temporary directory
    if os.path.exists(os.path.join(tmp, "evil")):
        failures.append("a member was written outside the private directory")

if failures:
    print("\n".join(failures))
    sys.exit(1)
