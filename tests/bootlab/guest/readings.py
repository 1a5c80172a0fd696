# SPDX-License-Identifier: GPL-2.0-or-later
"""The boot lab's readings of the live guest, taken with the system's own tools and never through
llmtune, so that they can contradict it (tests/bootlab). Prints one JSON object.

    python3 readings.py [--etc] > out/readings-NAME.json

--etc adds a snapshot of /etc: every entry's type, mode, owner and group, a regular file's SHA-256
and a link's target (the "byte-identical after rollback" check compares two of them).
"""
import hashlib
import json
import os
import stat
import subprocess
import sys

SYSCTLS = ['kernel.shmmax', 'kernel.shmall', 'kernel.numa_balancing', 'vm.swappiness']
MOUNTS = ['/data', '/scratch']


def sh(cmd):
    """stdout of a shell command (stripped), its status and stderr."""
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True, errors='replace')
    return {'out': p.stdout.strip(), 'rc': p.returncode, 'err': p.stderr.strip()[-400:]}


def read(path):
    try:
        with open(path, errors='replace') as f:
            return f.read().strip()
    except OSError as e:
        return f'<unreadable: {e.strerror}>'


def bracketed(text):
    """The active word of a sysfs choice list ("always [madvise] never" -> madvise)."""
    for word in text.split():
        if word.startswith('[') and word.endswith(']'):
            return word[1:-1]
    return None


def etc_snapshot():
    entries = {}
    for top, dirs, files in os.walk('/etc'):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(top, name)
            st = os.lstat(path)
            e = {'mode': oct(stat.S_IMODE(st.st_mode)), 'uid': st.st_uid, 'gid': st.st_gid}
            if stat.S_ISLNK(st.st_mode):
                e['type'] = 'link'
                e['target'] = os.readlink(path)
            elif stat.S_ISDIR(st.st_mode):
                e['type'] = 'dir'
            elif stat.S_ISREG(st.st_mode):
                e['type'] = 'file'
                with open(path, 'rb') as f:
                    e['sha256'] = hashlib.sha256(f.read()).hexdigest()
            else:
                e['type'] = 'other'
            entries[path] = e
    return entries


def main():
    r = {}
    kver = os.uname().release
    r['kernel'] = kver
    r['cmdline'] = read('/proc/cmdline')
    r['thp'] = {k: bracketed(read(f'/sys/kernel/mm/transparent_hugepage/{k}')) for k in ('enabled', 'defrag')}
    r['sysctl'] = {k: sh(f'sysctl -n {k}')['out'] for k in SYSCTLS}
    r['swapon'] = sh('swapon --show --noheadings --raw --bytes')['out'].splitlines()
    r['mounts'] = {m: sh(f'findmnt -n -o SOURCE,FSTYPE,OPTIONS --mountpoint {m}')['out'] for m in MOUNTS}
    r['mdstat'] = read('/proc/mdstat')
    data_dev = sh('findmnt -n -o SOURCE --mountpoint /data')['out'] or '/dev/md0'
    r['md0_ext4_raid'] = [l for l in sh(f'dumpe2fs -h {data_dev}')['out'].splitlines() if l.startswith('RAID ')]
    r['md1_xfs_info'] = sh('xfs_info /scratch')['out']
    # Limits in a login shell (su -l runs PAM's pam_limits, as a login does), for root and a user.
    r['ulimit_login'] = {u: sh(f"su -l {u} -s /bin/sh -c 'ulimit -Sl; ulimit -Hl'")['out'].split()
                         for u in ('root', 'labuser')}
    r['systemd_default_memlock'] = sh('systemctl show -p DefaultLimitMEMLOCK -p DefaultLimitMEMLOCKSoft')['out']
    r['service_memlock'] = sh('systemctl show -p LimitMEMLOCK -p LimitMEMLOCKSoft llmtune-verify.service')['out']
    # What a service started now really gets (its process's limits, read by the process itself).
    r['service_ulimit'] = sh("systemd-run --wait --pipe --quiet sh -c 'ulimit -Sl; ulimit -Hl'")['out'].split()
    r['modprobe_nouveau'] = [l for l in sh('modprobe -c')['out'].splitlines()
                             if l.split()[1:2] == ['nouveau'] and l.split()[0] in ('blacklist', 'options')]
    initrd = f'/boot/initrd.img-{kver}'
    r['initramfs_modprobe_d'] = [l for l in sh(f'lsinitramfs {initrd}')['out'].splitlines()
                                 if 'modprobe.d/' in l]
    r['initramfs_mtime'] = os.stat(initrd).st_mtime if os.path.exists(initrd) else None
    r['tuned_active'] = sh('tuned-adm active')['out'] if os.path.exists('/usr/sbin/tuned-adm') else None
    r['system_state'] = sh('systemctl is-system-running')['out']
    r['failed_units'] = sh('systemctl --failed --no-legend --plain')['out'].splitlines()
    r['units'] = {u: sh(f'systemctl show -p ActiveState -p Result -p ExecMainStatus -p ExecMainStartTimestampMonotonic {u}')['out']
                  for u in ('llmtune-verify.timer', 'llmtune-apply.service', 'llmtune-verify.service',
                            'tuned.service', 'bootlab-rxe.service')}
    r['rdma'] = sorted(os.listdir('/sys/class/infiniband')) if os.path.isdir('/sys/class/infiniband') else []
    if '--etc' in sys.argv[1:]:
        r['etc'] = etc_snapshot()
    json.dump(r, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == '__main__':
    main()
