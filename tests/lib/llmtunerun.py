# SPDX-License-Identifier: GPL-2.0-or-later
"""Running llmtune on a copy of a fixture root and comparing trees: the pieces the apply harnesses
(tests/e2e/lifecycle.py, reliability.py, hardening.py) share.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
    from llmtunerun import Tool, copy_root, tree, wait_stopped
"""
import os
import shutil
import stat
import subprocess
import time

LOG_DIR = os.path.join('var', 'lib', 'llmtune')


class Tool:
    """Runs llmtune; a run given an LLMTUNE_TEST_* variable (a fault, a crash point, a stop) runs
    llmtune-test, the same objects with the test hooks on, since the installed binary has none."""

    def __init__(self, bin_, test_bin=None):
        self.bin = bin_
        self.test_bin = test_bin or bin_

    def exe_for(self, extra):
        return self.test_bin if any(k.startswith('LLMTUNE_TEST_') for k in (extra or {})) else self.bin

    def env(self, extra=None):
        e = dict(os.environ, NO_COLOR='1', LC_ALL='C')
        for k in list(e):
            if k.startswith('LLMTUNE_TEST_'):
                del e[k]
        e.update(extra or {})
        return e

    def run(self, root, *args, env=None, binary=False):
        """(status, stdout, stderr) of llmtune --root ROOT ARGS."""
        p = subprocess.run([self.exe_for(env), '--root', root, *args], capture_output=True, text=not binary,
                           env=self.env(env))
        return p.returncode, p.stdout, p.stderr

    def popen(self, root, *args, env=None):
        return subprocess.Popen([self.exe_for(env), '--root', root, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env(env))


def copy_root(roots, name, dest):
    """A fresh copy of ROOTS/NAME at DEST (an older one there removed first); returns DEST."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    # cp(1) copies the 11,000 entries of a fixture several times faster than shutil.copytree.
    subprocess.run(['cp', '-a', os.path.join(roots, name), dest], check=True)
    return dest


def tree(top, skip_log=True, skip_log_parents=True):
    """rel -> (kind, mode, content or link target) for every entry below TOP; with SKIP_LOG, not the
    change log's directory, and with SKIP_LOG_PARENTS not those above it either (apply creates them)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, top)
        if skip_log and (rel_dir == LOG_DIR or rel_dir.startswith(LOG_DIR + os.sep)):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, top)
            st = os.lstat(p)
            if skip_log and skip_log_parents and LOG_DIR.startswith(rel) and (rel == LOG_DIR or LOG_DIR[len(rel)] == os.sep):
                continue
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ('link', None, os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ('dir', stat.S_IMODE(st.st_mode), None)
            elif stat.S_ISREG(st.st_mode):
                with open(p, 'rb') as f:
                    out[rel] = ('file', stat.S_IMODE(st.st_mode), f.read())
            else:
                out[rel] = ('other', stat.S_IFMT(st.st_mode), None)
    return out


def wait_stopped(pid, timeout=60):
    """Whether process PID reached the stopped state (SIGSTOP at a test hook) within TIMEOUT seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f'/proc/{pid}/stat') as f:
                if f.read().rsplit(')', 1)[1].split()[0] == 'T':
                    return True
        except FileNotFoundError:
            return False
        time.sleep(0.02)
    return False
