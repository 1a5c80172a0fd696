#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The boot lab (tests/bootlab/README.md, issue 30): llmtune installed as the Debian package on a
Debian guest under QEMU, `apply` run on the live system, the guest rebooted, and what the audit says
held up against the system's own tools.

    bootlab.py --source SRC --build BUILDDIR --llmtune BIN [--llmtune-test BIN] [--scenario NAME]... [--jobs N]

Scenarios (all by default): fresh, fights, cmdline, kill. Exit 0 when every check passed, 1 when one
failed, 77 when QEMU cannot run here (missing tools, not root, not Debian), which
LLMTUNE_REQUIRE_ALL=1 turns into a failure. The images are cached in BUILDDIR/bootlab.
"""
import argparse
import concurrent.futures
import os
import shutil
import signal
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
from checklib import check, failures  # noqa: E402
import image  # noqa: E402
import scenarios  # noqa: E402
import vm  # noqa: E402

TOOLS = {'qemu-system-x86_64': 'qemu-system-x86', 'qemu-img': 'qemu-utils', 'mmdebstrap': 'mmdebstrap',
         'mkfs.ext4': 'e2fsprogs', 'mkswap': 'util-linux', 'dpkg-buildpackage': 'dpkg-dev', 'dh': 'debhelper',
         'fakeroot': 'fakeroot', 'git': 'git'}


def cannot_run():
    """Why the lab cannot run here, or None."""
    missing = sorted({pkg for tool, pkg in TOOLS.items() if not shutil.which(tool)})
    if missing:
        return f'missing {", ".join(missing)} (packaging/install-deps.sh installs them)'
    if os.geteuid() != 0:
        return 'not root: mmdebstrap, the chroot that installs the package and 9p need root'
    if image.host_release() is None:
        return ('the host is not Debian with a Debian mirror: the guest is the host\'s own release, '
                'so that the package built here installs there')
    return None


class Lab:
    def __init__(self, args):
        self.args = args
        self.llmtune = os.path.abspath(args.llmtune)
        self.llmtune_test = args.llmtune_test and os.path.abspath(args.llmtune_test)
        self.work = os.path.join(os.path.abspath(args.build), 'bootlab')
        os.makedirs(self.work, exist_ok=True)
        self.lock = threading.Lock()
        self.times = []  # (scenario, boot number, label, wall seconds, seconds to the step)

    def images(self):
        release = image.host_release()
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            rootfs = pool.submit(image.build_rootfs, self.work, release)
            deb = pool.submit(image.build_deb, self.work, self.args.source)
            (tar, key), self.deb = rootfs.result(), deb.result()
        self.roots = image.build_root_images(self.work, tar, key, self.deb)
        self.data = image.build_data_disks(self.work, self.roots['fresh'])

    def guest(self, name, variant):
        return vm.Guest(name, self.work, self.roots[variant], self.data)

    def record(self, name, guest):
        with self.lock:
            for i, b in enumerate(guest.boots, 1):
                self.times.append((name, i, b.label, b.wall, b.multi_user_seconds(), b.step_seconds()))


def run_scenario(lab, name):
    t0 = time.time()
    try:
        getattr(scenarios, name)(lab)
    except vm.BootFailed as e:
        check(False, f'{name}: {e}')
    except Exception:  # a harness error is a failure of the pass, with its traceback
        check(False, f'{name}: the scenario stopped: {traceback.format_exc()}')
    print(f'[bootlab] scenario {name}: {time.time() - t0:.0f} s', flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--source', required=True, help='the checkout (the package is built from it)')
    ap.add_argument('--build', required=True, help='the build directory (images cached in BUILD/bootlab)')
    ap.add_argument('--llmtune', required=True, help='llmtune built from the checkout (lints the lab\'s rule files)')
    ap.add_argument('--llmtune-test', help='the test build of llmtune with its kill points (build/src/llmtune-test) for '
                    'scenario kill')
    ap.add_argument('--scenario', action='append', choices=scenarios.ALL, help='run only these (repeatable)')
    ap.add_argument('--jobs', type=int, default=int(os.environ.get('LLMTUNE_BOOTLAB_JOBS', '2')),
                    help='guests booted at once (LLMTUNE_BOOTLAB_JOBS, default 2)')
    args = ap.parse_args()
    why = cannot_run()
    if why:
        if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1':
            print(f'FAIL  the boot lab cannot run: {why} (required: LLMTUNE_REQUIRE_ALL=1)')
            return 1
        print(f'skip: the boot lab cannot run: {why}')
        return 77
    lab = Lab(args)
    # meson's timeout or ^C: no guest outlives the harness.
    def stop(signum, _frame):
        image.stop_all()
        os._exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    t0 = time.time()
    try:
        lab.images()
    except Exception as e:
        check(False, f'the images could not be built: {e}')
        return 1
    print(f'[bootlab] images ready after {time.time() - t0:.0f} s', flush=True)
    names = args.scenario or scenarios.ALL
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(lambda n: run_scenario(lab, n), names))
    print('\nboot times (wall: QEMU start to power-off; boot: kernel start to multi-user.target; step: the '
          'lab\'s commands in the guest):')
    for name, i, label, wall, boot, took in lab.times:
        print(f'  {name:8} boot {i} {label:22} wall {wall:5.0f} s   boot {boot or "?":>6} s   step {took or "?":>5} s')
    print(f'  (load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)')
    print(f'[bootlab] total {time.time() - t0:.0f} s', flush=True)
    print(f'{len(failures)} failed', flush=True)
    if failures:
        print('failed checks:', file=sys.stderr)
        for f in failures:
            print('  ' + f.splitlines()[0], file=sys.stderr)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
