# SPDX-License-Identifier: GPL-2.0-or-later
"""Watch a host directory for anything opening or reading what is in it (inotify(7), through ctypes:
Python has no binding of its own). The confinement tests put canary files beside a tree and point
links of the tree at them: whatever llmtune or a library it runs may follow, a successful open of
a canary is an IN_OPEN event here, even when what was read never shows in the output.

    w = HostWatch(top)          # every directory under TOP, as it is now
    w.drain()                   # forget what happened so far (the test's own setup)
    ... run llmtune ...
    w.opened()                  # ['top/sub/file', ...]: what was opened or read since
"""
import ctypes
import ctypes.util
import errno
import os
import struct

IN_ACCESS = 0x001
IN_OPEN = 0x020
_libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)


class HostWatch:
    def __init__(self, top):
        self.fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), 'inotify_init1')
        self.dirs = {}
        for dirpath, dirnames, _ in os.walk(top):
            wd = _libc.inotify_add_watch(self.fd, os.fsencode(dirpath), IN_OPEN | IN_ACCESS)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f'inotify_add_watch {dirpath}')
            self.dirs[wd] = dirpath
        self.drain()

    def _events(self):
        out = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            except OSError as e:
                if e.errno == errno.EAGAIN:
                    return out
                raise
            off = 0
            while off + 16 <= len(buf):
                wd, mask, _cookie, length = struct.unpack_from('iIII', buf, off)
                name = buf[off + 16:off + 16 + length].rstrip(b'\0').decode('utf-8', 'replace')
                off += 16 + length
                out.append(os.path.join(self.dirs.get(wd, '?'), name))

    def drain(self):
        self._events()

    def opened(self):
        """What in the watched directories was opened or read since the last call (sorted, once each)."""
        return sorted(set(self._events()))

    def close(self):
        os.close(self.fd)
