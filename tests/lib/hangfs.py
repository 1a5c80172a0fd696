# SPDX-License-Identifier: GPL-2.0-or-later
"""A file that never answers: a FUSE file system of one regular file whose every read is left
unanswered, as a hung FUSE or NFS server leaves it. The reader waits in the kernel in a wait that
only a fatal signal ends, which is what the read deadline (src/base/deadline.h) must bound.

Spoken straight to /dev/fuse (Documentation/filesystems/fuse.rst; include/uapi/linux/fuse.h for
the structures), with no libfuse: INIT and GETATTR are answered, READ never is (and with
hang='open', OPEN neither: the reader then waits in the open itself). Mounted on
a regular file (rootmode is a regular file's: FUSE mounts a file on a file) inside a private mount
namespace, so the host's mounts are never touched:

    private_mounts()            # once, before any thread: unshare(CLONE_NEWNS), mounts private
    h = HangFile('/tmp/x/root/proc/meminfo')
    ... read it: blocks ...
    h.close()                   # unmounted (lazily) and the server stopped
"""
import ctypes
import ctypes.util
import errno
import os
import select
import stat
import struct
import threading

_libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 0x4000, 0x40000
MNT_DETACH = 2

FUSE_GETATTR, FUSE_OPEN, FUSE_READ, FUSE_RELEASE, FUSE_FLUSH, FUSE_INIT, FUSE_INTERRUPT = 3, 14, 15, 18, 25, 26, 36
FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_DESTROY = 2, 42, 38
FOPEN_DIRECT_IO = 1
IN_HEADER = struct.Struct('<IIQQIIIHH')  # len, opcode, unique, nodeid, uid, gid, pid, total_extlen, padding
OUT_HEADER = struct.Struct('<IiQ')       # len, error, unique


def private_mounts():
    """This process (and what it starts) in a mount namespace of its own: mounts made here leave the
    host's alone. Raises OSError where that is not allowed (not root)."""
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), 'unshare(CLONE_NEWNS)')
    if _libc.mount(b'none', b'/', None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), 'mount --make-rprivate /')


class HangFile:
    def __init__(self, target, size=4096, hang='read'):
        self.target = target
        self.size = size
        self.hang = hang
        self.fd = os.open('/dev/fuse', os.O_RDWR | os.O_CLOEXEC)
        opts = f'fd={self.fd},rootmode={stat.S_IFREG | 0o444:o},user_id=0,group_id=0,allow_other'
        if _libc.mount(b'llmtune-hangfs', os.fsencode(target), b'fuse', MS_NOSUID | MS_NODEV, opts.encode()) != 0:
            e = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(e, f'mount fuse on {target}')
        self.reads = 0  # requests left unanswered
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _reply(self, unique, error=0, body=b''):
        try:
            os.write(self.fd, OUT_HEADER.pack(OUT_HEADER.size + len(body), -error, unique) + body)
        except OSError:
            pass  # the request was interrupted (the reader died): nothing to answer

    def _attr(self):
        now = 0
        # ino size blocks atime mtime ctime atimensec mtimensec ctimensec mode nlink uid gid rdev blksize flags
        return struct.pack('<QQQQQQIIIIIIIIII', 1, self.size, 8, now, now, now, 0, 0, 0,
                           stat.S_IFREG | 0o444, 1, 0, 0, 0, 4096, 0)

    def _serve(self):
        # Polled, not a blocking read: close() must be able to stop the thread, since the
        # connection is aborted (the readers let go) only when nothing holds the device any more.
        while not self.stop:
            if not select.select([self.fd], [], [], 0.2)[0]:
                continue
            try:
                req = os.read(self.fd, 1 << 17)
            except OSError as e:
                if e.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
                    continue
                return  # ENODEV: unmounted
            _len, op, unique, _node, *_ = IN_HEADER.unpack_from(req)
            body = req[IN_HEADER.size:]
            if op == FUSE_INIT:
                major, minor, readahead, _flags = struct.unpack_from('<IIII', body)
                # fuse_init_out, 64 bytes: major minor max_readahead flags max_background
                # congestion_threshold max_write time_gran max_pages map_alignment flags2 ...
                out = struct.pack('<IIIIHHIIHHI', 7, 31, readahead, 0, 16, 12, 65536, 1, 0, 0, 0)
                self._reply(unique, 0, out + b'\0' * (64 - len(out)))
            elif op == FUSE_GETATTR:
                self._reply(unique, 0, struct.pack('<QII', 3600, 0, 0) + self._attr())
            elif op == FUSE_OPEN and self.hang == 'open':
                self.reads += 1  # never answered
            elif op == FUSE_OPEN:
                self._reply(unique, 0, struct.pack('<QIi', 1, FOPEN_DIRECT_IO, 0))
            elif op == FUSE_READ:
                self.reads += 1  # never answered
            elif op in (FUSE_RELEASE, FUSE_FLUSH):
                self._reply(unique)
            elif op in (FUSE_INTERRUPT, FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_DESTROY):
                pass  # no answer is expected (an interrupted READ stays unanswered)
            else:
                self._reply(unique, errno.ENOSYS)

    def close(self):
        """The server goes: the mount is detached and the connection aborted, so whoever still
        waits on it gets an error (ENOTCONN) and can end."""
        self.stop = True
        self.thread.join()
        _libc.umount2(os.fsencode(self.target), MNT_DETACH)
        os.close(self.fd)
