# SPDX-License-Identifier: GPL-2.0-or-later
"""One guest of the boot lab (tests/bootlab/README.md): qcow2 overlays of the cached disks, booted
under QEMU as often as a scenario needs. Each boot runs one step: the host writes `share/step` (a
shell script) and the files it needs into the 9p share, the guest's bootlab.service runs it once the
boot is complete and powers off, and the host reads `share/out/`.

A boot is never judged by its time. A guest that drops to emergency mode, panics or falls to GRUB's
rescue prompt is stopped as soon as its serial console shows it; one that stops making progress is
stopped after LLMTUNE_BOOTLAB_BOUND seconds (default 1800, far beyond any boot seen here), and either
way the failure carries the end of the serial console log.
"""
import json
import os
import shutil
import signal
import subprocess
import time

import image

# What the serial console shows when a boot will not finish by itself.
STUCK = ['You are in emergency mode', 'Kernel panic - not syncing', 'grub rescue>',
         'Give root password for maintenance', 'Cannot open access to console, the root account is locked']


class BootFailed(Exception):
    pass


def accel_args():
    """TCG unless LLMTUNE_BOOTLAB_ACCEL says otherwise: /dev/kvm on the project's machines is a nested
    device a stock Debian kernel does not boot on (issue 30)."""
    accel = os.environ.get('LLMTUNE_BOOTLAB_ACCEL', 'tcg')
    if accel == 'kvm':
        return ['-accel', 'kvm', '-cpu', 'host']
    return ['-accel', 'tcg,thread=multi', '-cpu', 'qemu64']


class Boot:
    """What one boot left: the files of share/out by name (JSON ones parsed), times, the serial log."""

    def __init__(self, label, out_dir, serial, wall):
        self.label, self.serial, self.wall = label, serial, wall
        self.files = {}
        for name in sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []:
            with open(os.path.join(out_dir, name), errors='replace') as f:
                text = f.read()
            if name.endswith('.json'):
                try:
                    text = json.loads(text) if text.strip() else None
                except ValueError:
                    pass  # kept as text: the check that reads it says so
            self.files[name] = text

    def text(self, name):
        v = self.files.get(name)
        return v.strip() if isinstance(v, str) else v

    def rc(self, name):
        """The exit status a step recorded for command NAME (name.rc), None when it did not run."""
        v = self.text(name + '.rc')
        return int(v) if v not in (None, '') else None

    def json(self, name):
        v = self.files.get(name + '.json')
        return v if isinstance(v, (dict, list)) else None

    def multi_user_seconds(self):
        """Seconds from the kernel's start to multi-user.target (systemd's monotonic clock)."""
        v = (self.text('multi-user-reached') or '').partition('=')[2]
        return round(int(v) / 1e6, 1) if v.isdigit() and int(v) else None

    def step_seconds(self):
        """Seconds the step ran (the guest's uptime at its start and end)."""
        try:
            return round(float(self.text('uptime-at-end')) - float(self.text('uptime-at-step')))
        except (TypeError, ValueError):
            return None

    def boot_seconds(self):
        """Seconds from the kernel's start to the lab's step (the guest's own uptime then)."""
        try:
            return float(self.text('uptime-at-step'))
        except (TypeError, ValueError):
            return None

    def serial_tail(self, lines=60):
        try:
            with open(self.serial, errors='replace') as f:
                return ''.join(f.readlines()[-lines:])
        except OSError:
            return '(no serial log)'


class Guest:
    def __init__(self, name, work, root, data, memory=1536):
        self.name = name
        self.dir = os.path.join(work, 'vm-' + name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.share = os.path.join(self.dir, 'share')
        os.makedirs(self.share)
        self.memory = memory
        self.disks = []
        for i, base in enumerate([root] + list(data)):
            overlay = os.path.join(self.dir, f'vd{chr(ord("a") + i)}.qcow2')
            subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', '-b', base, '-F', 'raw', overlay], check=True)
            self.disks.append(overlay)
        self.boots = []

    def qemu_cmd(self, serial, kernel=None):
        cmd = ['qemu-system-x86_64', '-nodefaults', '-machine', 'q35'] + accel_args() + [
            '-smp', '2', '-m', str(self.memory), '-display', 'none', '-no-reboot', '-monitor', 'none',
            '-serial', f'file:{serial}', '-device', 'virtio-rng-pci',
            '-nic', 'user,model=virtio-net-pci,restrict=on',
            '-virtfs', f'local,path={self.share},mount_tag=host0,security_model=none,id=host0']
        for d in self.disks:
            # cache=unsafe: guest flushes are not passed on to the host's disk. QEMU still writes all
            # it was given when the guest powers off (even a hard power-off), which is what the guest
            # would find after a power loss; only the host crashing would lose more.
            cmd += ['-drive', f'file={d},if=virtio,format=qcow2,cache=unsafe']
        if kernel:
            cmd += ['-kernel', kernel[0], '-initrd', kernel[1], '-append', kernel[2]]
        return cmd

    def boot(self, label, step, files=None, kernel=None, hard_off=False):
        """Boots once and runs STEP (shell text) in the guest; FILES ({name: text or bytes}) go into
        the share beside it. Returns the Boot; raises BootFailed when the guest did not run the step
        to its end and power off (HARD_OFF: the step powers the guest off itself, mid-way, and
        leaves `out/hard-off` just before)."""
        out = os.path.join(self.share, 'out')
        shutil.rmtree(out, ignore_errors=True)
        for name in os.listdir(self.share):
            p = os.path.join(self.share, name)
            os.unlink(p) if not os.path.isdir(p) else shutil.rmtree(p)
        with open(os.path.join(self.share, 'step'), 'w') as f:
            f.write(step)
        for name, content in (files or {}).items():
            with open(os.path.join(self.share, name), 'wb' if isinstance(content, bytes) else 'w') as f:
                f.write(content)
        serial = os.path.join(self.dir, f'serial-{len(self.boots) + 1}-{label}.log')
        bound = float(os.environ.get('LLMTUNE_BOOTLAB_BOUND', '1800'))
        t0 = time.time()
        proc = image.spawn(self.qemu_cmd(serial, kernel), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        stuck = None
        while proc.poll() is None:
            time.sleep(2)
            if time.time() - t0 > bound:
                stuck = f'no power-off after {bound:.0f} s (LLMTUNE_BOOTLAB_BOUND)'
            else:
                try:
                    with open(serial, errors='replace') as f:
                        log = f.read()
                    stuck = next((f'the serial console shows "{s}"' for s in STUCK if s in log), None)
                except OSError:
                    pass
            if stuck:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
        image.forget(proc)
        qemu_out = proc.stdout.read().decode(errors='replace')
        # Kept beside the serial log for whoever reads a failure later.
        kept = os.path.join(self.dir, f'out-{len(self.boots) + 1}-{label}')
        shutil.rmtree(kept, ignore_errors=True)
        if os.path.isdir(out):
            shutil.move(out, kept)
        boot = Boot(label, kept, serial, time.time() - t0)
        self.boots.append(boot)
        print(f'[bootlab] {self.name} boot {len(self.boots)} ({label}): {boot.wall:.0f} s, multi-user reached '
              f'{boot.multi_user_seconds() or "?"} s after the kernel started', flush=True)
        finished = boot.text('hard-off') is not None if hard_off else boot.text('step.rc') is not None
        if stuck or proc.returncode != 0 or not finished:
            why = stuck or (f'QEMU exited {proc.returncode}: {qemu_out[-2000:]}' if proc.returncode
                            else 'the guest powered off without running the step to its end')
            raise BootFailed(f'{self.name} boot {len(self.boots)} ({label}): {why}\n'
                             f'--- serial console ({serial}), last lines ---\n{boot.serial_tail()}'
                             f'--- step log ---\n{boot.text("step.log") or "(none)"}')
        return boot

    def cleanup(self):
        for d in self.disks:
            if os.path.exists(d):
                os.unlink(d)
