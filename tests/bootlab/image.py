# SPDX-License-Identifier: GPL-2.0-or-later
"""The boot lab's disk images (tests/bootlab/README.md), each cached under the build directory by
a key of everything it is made from, so an unchanged input is never built twice:

  rootfs-KEY.tar   mmdebstrap of the host's own Debian release from the host's Debian mirrors (the
                   package list below; the .deb built here installs there because it is the same
                   release), with a small initramfs (MODULES=list: under TCG the default
                   MODULES=most did not finish in 9 minutes)
  llmtune-KEY.deb  the package, built from the checkout by tests/packaging/build-deb.sh exactly as
                   the packaging test builds it
  root-KEY-fresh.raw, root-KEY-fights.raw
                   a partitioned disk (MBR, one ext4 partition from `mkfs.ext4 -d`, no loop mount)
                   that boots through GRUB from its own disk: GRUB's boot.img in the MBR and the
                   core.img grub-mkimage made in the gap after it, as grub-install lays them out.
                   The package is installed with dpkg in a chroot, so its maintainer scripts enable
                   its units. "fights" is "fresh" plus a distribution that fights back
  data-KEY/vd[b-e].raw
                   four disks of two partitions: md0 (RAID0 of the first partitions, ext4 made with
                   a wrong stride) and md1 (RAID0 of the second, XFS with a stale swidth), made by
                   one boot of the guest (mdadm and mkfs need its kernel)
Scenarios boot qcow2 overlays of these (0.1 s each); the bases are never written.
"""
import glob
import hashlib
import json
import os
import shutil
import struct
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# What the guest is made of (issue 30): a minimal Debian plus what the scenarios need. tuned and
# systemd-zram-generator are the distribution's tools that fight back; grub-pc boots the guest from
# its own disk; python3 runs the readings (tuned needs it anyway); iproute2 gives `rdma`; lz4 is not
# used by Debian's default initramfs but keeps `lsinitramfs` able to read any compression. The
# libraries are the package's dependencies (dpkg -i does not fetch them).
PACKAGES = ['systemd-sysv', 'udev', 'linux-image-amd64', 'initramfs-tools', 'kmod', 'procps', 'e2fsprogs',
            'mdadm', 'xfsprogs', 'util-linux', 'grub-pc', 'tuned', 'systemd-zram-generator', 'python3',
            'iproute2', 'libpci3', 'libhwloc15', 'libkmod2', 'libinih1', 'libjson-c5', 'libssl3',
            'libarchive13', 'libxml2', 'pci.ids', 'zstd']
# The modules the initramfs needs to find the root file system on a virtio disk (MODULES=list).
INITRAMFS_MODULES = ['virtio_pci', 'virtio_blk', 'ext4']
ROOT_UUID = '6b1c0e44-8a2f-4c1e-9f0b-000000b007a5'
ROOT_SIZE_MIB = 3072
# Data disks: md0 (ext4) and md1 (XFS: mkfs.xfs wants 300 MB at least) over four disks.
DATA_DISKS = ['vdb', 'vdc', 'vdd', 'vde']
DATA_DISK_MIB = 320
DATA_P1_MIB = 100
MD0_UUID, MD1_UUID = '0b00ba50:0000a11a:00000000:0000000d', '0b00ba50:0000a11a:00000000:0000000e'
DATA_FS_UUID, SCRATCH_FS_UUID = '6b1c0e44-8a2f-4c1e-9f0b-00000000da7a', '6b1c0e44-8a2f-4c1e-9f0b-0000005c7a7c'
MD_CHUNK_KIB = 64
# The recipe version: bump when what is built changes in a way the keys below cannot see.
RECIPE = 1


def log(msg):
    print(f'[bootlab] {msg}', flush=True)


# The processes the lab runs now (builds, QEMU), each in its own session: stop_all() ends them with
# their children (dpkg-buildpackage, mmdebstrap, a guest) when the harness is told to stop.
_running = set()


def spawn(cmd, **kw):
    """subprocess.Popen of CMD in a session of its own, known to stop_all() until forget()."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kw)
    _running.add(proc.pid)
    return proc


def forget(proc):
    _running.discard(proc.pid)


def stop_all():
    import signal
    for pid in list(_running):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run(cmd, stdout=None):
    """Runs CMD (a list), raising with its output when it fails; returns its stdout (or writes it
    to the open file STDOUT, stderr with it)."""
    proc = spawn(cmd, stdout=stdout or subprocess.PIPE, stderr=subprocess.STDOUT if stdout else subprocess.PIPE)
    try:
        out, err = proc.communicate()
    finally:
        forget(proc)
    out = out.decode(errors='replace') if out else ''
    err = err.decode(errors='replace') if err else ''
    if proc.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)} exited {proc.returncode}:\n{out[-3000:]}\n{err[-3000:]}')
    return out


def digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b'\0')
    return h.hexdigest()[:16]


def file_digest(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()


def host_release():
    """(codename, [apt source lines]) of the host's Debian release: the guest is the same release,
    from the same Debian mirrors, so the .deb built here installs there. None when the host is not
    Debian (or has no Debian mirror configured)."""
    rel = {}
    try:
        with open('/etc/os-release') as f:
            for line in f:
                k, _, v = line.strip().partition('=')
                rel[k] = v.strip('"')
    except OSError:
        return None
    code = rel.get('VERSION_CODENAME')
    if rel.get('ID') != 'debian' or not code:
        return None
    out = subprocess.run(['apt-get', 'indextargets', '--format', '$(REPO_URI) $(RELEASE) $(COMPONENT)',
                          'Created-By: Packages'], capture_output=True, text=True).stdout
    lines = sorted({f'deb {l.split()[0]} {l.split()[1]} main' for l in out.splitlines()
                    if len(l.split()) == 3 and l.split()[1] in (code, code + '-updates', code + '-security')})
    return (code, lines) if any(l.split()[2] == code for l in lines) else None


def build_rootfs(work, release):
    code, sources = release
    key = digest(RECIPE, code, sources, PACKAGES, INITRAMFS_MODULES)
    out = os.path.join(work, f'rootfs-{key}.tar')
    if os.path.exists(out):
        log(f'rootfs: cached {os.path.basename(out)}')
        return out, key
    for old in glob.glob(os.path.join(work, 'rootfs-*.tar')):
        os.unlink(old)
    cache = os.path.join(work, 'apt-cache')
    os.makedirs(cache, exist_ok=True)
    t0 = time.time()
    mods = '\\n'.join(INITRAMFS_MODULES)
    conf = ('printf "MODULES=list\\n" >"$1/etc/initramfs-tools/conf.d/bootlab.conf"; '
            f'printf "{mods}\\n" >>"$1/etc/initramfs-tools/modules"; '
            'chroot "$1" update-initramfs -u -k all')
    cmd = ['mmdebstrap', '--mode=root', '--variant=minbase', '--format=tar',
           '--aptopt=APT::Install-Recommends "false"', '--include=' + ','.join(PACKAGES),
           '--setup-hook=mkdir -p "$1"/var/cache/apt/archives',
           f'--setup-hook=sync-in {cache} /var/cache/apt/archives/',
           f'--customize-hook=sync-out /var/cache/apt/archives {cache}',
           f'--customize-hook={conf}',
           code, out + '.tmp'] + sources
    logf = os.path.join(work, 'mmdebstrap.log')
    try:
        with open(logf, 'w') as f:
            run(cmd, stdout=f)
    except RuntimeError:
        with open(logf, errors='replace') as f:
            raise RuntimeError('mmdebstrap failed:\n' + f.read()[-4000:])
    os.rename(out + '.tmp', out)
    log(f'rootfs: built in {time.time() - t0:.0f} s ({os.path.getsize(out) >> 20} MiB)')
    return out, key


def source_files(src):
    out = subprocess.run(['git', '-C', src, 'ls-files', '-co', '--exclude-standard', '-z'],
                         capture_output=True, check=True).stdout
    return sorted(f for f in out.decode().split('\0') if f and os.path.isfile(os.path.join(src, f)))


def build_deb(work, src):
    """The package of the checkout (tests/packaging/build-deb.sh), cached by the content of every
    file git knows or would add, but for tests/: a package built with -Pnocheck builds nothing there
    (so editing a test, this lab included, does not rebuild the package and the images)."""
    h = hashlib.sha256()
    for f in source_files(src):
        if f.startswith('tests/'):
            continue
        h.update(f.encode() + b'\0')
        with open(os.path.join(src, f), 'rb') as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    key = h.hexdigest()[:16]
    out = os.path.join(work, f'llmtune-{key}.deb')
    if os.path.exists(out):
        log(f'package: cached {os.path.basename(out)}')
        return out
    for old in glob.glob(os.path.join(work, 'llmtune-*.deb')):
        os.unlink(old)
    t0 = time.time()
    tmp = os.path.join(work, 'deb-build')
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    deb = run(['bash', os.path.join(src, 'tests', 'packaging', 'build-deb.sh'), '--nocheck', src, tmp]).strip().splitlines()[-1]
    shutil.copy(deb, out + '.tmp')
    os.rename(out + '.tmp', out)
    shutil.rmtree(tmp, ignore_errors=True)
    log(f'package: built {os.path.basename(deb)} in {time.time() - t0:.0f} s')
    return out


def write_mbr(path, parts):
    """An MBR partition table on the disk image PATH: PARTS is [(start_sector, sectors, type,
    bootable)]. The first 440 bytes (boot code) are left as they are."""
    with open(path, 'r+b') as f:
        mbr = bytearray(f.read(512).ljust(512, b'\0'))
        mbr[440:444] = hashlib.sha256(path.encode()).digest()[:4]  # disk signature
        mbr[446:510] = bytes(64)
        for i, (start, size, ptype, boot) in enumerate(parts):
            # CHS fields: 0xfe 0xff 0xff, "use LBA" (every BIOS since the 1990s)
            mbr[446 + 16 * i:462 + 16 * i] = struct.pack('<B3sB3sII', 0x80 if boot else 0, b'\xfe\xff\xff', ptype,
                                                         b'\xfe\xff\xff', start, size)
        mbr[510:512] = b'\x55\xaa'
        f.seek(0)
        f.write(mbr)


def grub_modules(tree):
    """GRUB's modules in /boot/grub/i386-pc of TREE, where core.img loads them from (grub-install
    copies them there too)."""
    lib = os.path.join(tree, 'usr', 'lib', 'grub', 'i386-pc')
    mods = os.path.join(tree, 'boot', 'grub', 'i386-pc')
    os.makedirs(mods, exist_ok=True)
    for f in glob.glob(os.path.join(lib, '*.mod')) + glob.glob(os.path.join(lib, '*.lst')):
        shutil.copy(f, mods)


def install_grub(tree, disk):
    """GRUB for BIOS on DISK as grub-install lays it out: boot.img's code in the MBR (its kernel
    sector, 1, and boot drive, 0xff = the drive the BIOS booted, are boot.img's defaults) and
    core.img from sector 1 in the gap before the partition (grub-mkimage's block list already says
    'the sectors after me'). grub-bios-setup would do the same but insists on guessing a root device
    from the host's own disks."""
    lib = os.path.join(tree, 'usr', 'lib', 'grub', 'i386-pc')
    core = disk + '.core.img'
    run(['chroot', tree, 'grub-mkimage', '-O', 'i386-pc', '-o', '/tmp/core.img', '-p', '(hd0,msdos1)/boot/grub',
         'biosdisk', 'part_msdos', 'ext2'])
    shutil.move(os.path.join(tree, 'tmp', 'core.img'), core)
    with open(os.path.join(lib, 'boot.img'), 'rb') as f:
        boot = f.read()
    with open(core, 'rb') as f:
        core_img = f.read()
    os.unlink(core)
    if len(core_img) > (2048 - 1) * 512:
        raise RuntimeError(f'core.img is {len(core_img)} bytes: it does not fit before the partition')
    with open(disk, 'r+b') as f:
        mbr = bytearray(f.read(512))
        mbr[0:440] = boot[0:440]
        mbr[0x66:0x68] = b'\x90\x90'  # as grub-bios-setup for a hard disk: no floppy drive check
        f.seek(0)
        f.write(mbr)
        f.seek(512)
        f.write(core_img)


def make_disk(tree, out, size_mib, label):
    """TREE as an ext4 partition (mkfs.ext4 -d) at 1 MiB of a disk image OUT with GRUB."""
    grub_modules(tree)
    part = out + '.part'
    if os.path.exists(part):
        os.unlink(part)
    run(['mkfs.ext4', '-q', '-F', '-L', label, '-U', ROOT_UUID, '-E', 'root_owner=0:0', '-d', tree, part,
         f'{size_mib}M'])
    with open(out, 'wb') as f:
        f.truncate((size_mib + 1) << 20)
    write_mbr(out, [(2048, size_mib * 2048, 0x83, True)])
    run(['dd', f'if={part}', f'of={out}', 'bs=1M', 'seek=1', 'conv=notrunc,sparse', 'status=none'])
    os.unlink(part)
    install_grub(tree, out)


def write(tree, path, text, mode=0o644):
    full = os.path.join(tree, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as f:
        f.write(text)
    os.chmod(full, mode)


def link(tree, path, target):
    full = os.path.join(tree, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if os.path.lexists(full):
        os.unlink(full)
    os.symlink(target, full)


def unlink(tree, path):
    full = os.path.join(tree, path.lstrip('/'))
    if os.path.lexists(full):
        os.unlink(full)


def fstab(swapfile=True):
    lines = [f'UUID={ROOT_UUID} / ext4 errors=remount-ro 0 1']
    if swapfile:
        lines.append('/swapfile none swap sw 0 0')
    # The arrays, as an installer writes them: defaults, no noatime; no nofail, so an array that
    # does not come up stops the boot where the lab sees it. systemd waits 90 s for a mount's device
    # by default: under TCG on a loaded host the arrays took longer to assemble (boot 1 of fights
    # went to emergency mode at a load average of 34), so the wait is 10 minutes
    # (x-systemd.device-timeout=, systemd.mount(5)), within the lab's bound.
    wait = 'x-systemd.device-timeout=10min'
    lines.append(f'UUID={DATA_FS_UUID} /data ext4 defaults,{wait} 0 2')
    lines.append(f'UUID={SCRATCH_FS_UUID} /scratch xfs defaults,{wait} 0 2')
    return '\n'.join(lines) + '\n'


def customize_common(tree, deb, kver):
    """What every variant's guest has: the lab's runner and soft-RoCE units, a login user, the
    arrays and a swap file in fstab, GRUB's configuration, the package, the site profile and rule."""
    write(tree, '/etc/hostname', 'bootlab\n')
    write(tree, '/etc/hosts', '127.0.0.1 localhost\n127.0.1.1 bootlab\n')
    unlink(tree, '/etc/machine-id')
    run(['chroot', tree, 'systemd-machine-id-setup'])  # mmdebstrap leaves it empty
    run(['chroot', tree, 'useradd', '-m', '-s', '/bin/bash', 'labuser'])
    write(tree, '/etc/fstab', fstab())
    swap = os.path.join(tree, 'swapfile')
    with open(swap, 'wb') as f:
        for _ in range(64):
            # not zeros: mkfs.ext4 -d leaves zero blocks out, and swapon refuses a file with holes
            f.write(b'\x5a' * (1 << 20))
    os.chmod(swap, 0o600)
    run(['mkswap', '-q', swap])
    os.makedirs(os.path.join(tree, 'data'), exist_ok=True)
    os.makedirs(os.path.join(tree, 'scratch'), exist_ok=True)
    with open(os.path.join(tree, 'etc/mdadm/mdadm.conf'), 'a') as f:
        f.write(f'ARRAY /dev/md0 metadata=1.2 UUID={MD0_UUID}\nARRAY /dev/md1 metadata=1.2 UUID={MD1_UUID}\n')
    # The initramfs assembles the arrays with its copy of mdadm.conf (mdadm's postinst updates it
    # the same way): without the ARRAY lines they come up as md127 and md126.
    run(['chroot', tree, 'update-initramfs', '-u', '-k', kver])
    guest = os.path.join(HERE, 'guest')
    for name, dest, mode in (('bootlab-run', '/usr/local/sbin/bootlab-run', 0o755),
                             ('bootlab-rxe', '/usr/local/sbin/bootlab-rxe', 0o755),
                             ('bootlab.service', '/etc/systemd/system/bootlab.service', 0o644),
                             ('bootlab-rxe.service', '/etc/systemd/system/bootlab-rxe.service', 0o644)):
        with open(os.path.join(guest, name)) as f:
            write(tree, dest, f.read(), mode)
        if name.endswith('.service'):
            link(tree, f'/etc/systemd/system/multi-user.target.wants/{name}', f'/etc/systemd/system/{name}')
    # Timers that would run apt, e2scrub or fstrim during a step: not part of what is tested.
    for unit in ('apt-daily.timer', 'apt-daily-upgrade.timer', 'e2scrub_all.timer', 'fstrim.timer',
                 'dpkg-db-backup.timer'):
        unlink(tree, f'/etc/systemd/system/timers.target.wants/{unit}')
    # tuned's package enables it; a fresh node has it installed but not running.
    unlink(tree, '/etc/systemd/system/multi-user.target.wants/tuned.service')
    # GRUB: the serial console, no menu wait; update-grub in the guest makes grub.cfg from this.
    write(tree, '/etc/default/grub.d/bootlab.cfg',
          '# The boot lab (tests/bootlab): serial console, no menu, no OS prober.\n'
          'GRUB_TIMEOUT=0\nGRUB_TERMINAL=serial\nGRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"\n'
          'GRUB_CMDLINE_LINUX_DEFAULT=""\nGRUB_CMDLINE_LINUX="console=ttyS0,115200 mitigations=off"\n'
          'GRUB_DISABLE_OS_PROBER=true\n')
    # The first grub.cfg, until the guest's own update-grub replaces it: the same entry it makes.
    write(tree, '/boot/grub/grub.cfg',
          '# The boot lab\'s first grub.cfg (tests/bootlab/image.py); update-grub in the guest replaces it.\n'
          'serial --unit=0 --speed=115200\nterminal_input serial\nterminal_output serial\nset timeout=0\n'
          f'menuentry "Debian GNU/Linux" {{\n  search --no-floppy --fs-uuid --set=root {ROOT_UUID}\n'
          f'  linux /boot/vmlinuz-{kver} root=UUID={ROOT_UUID} ro console=ttyS0,115200 mitigations=off\n'
          f'  initrd /boot/initrd.img-{kver}\n}}\n')
    shutil.copy(deb, os.path.join(tree, 'tmp', 'llmtune.deb'))
    run(['chroot', tree, 'dpkg', '-i', '/tmp/llmtune.deb'])
    os.unlink(os.path.join(tree, 'tmp', 'llmtune.deb'))
    for sub in ('profiles.d', 'rules.d'):
        for f in glob.glob(os.path.join(HERE, 'site', sub, '*.ini')):
            with open(f) as fh:
                write(tree, f'/etc/llmtune/{sub}/{os.path.basename(f)}', fh.read())


def customize_fights(tree):
    """A distribution that fights back (fights/README.md): the overlay, and tuned enabled."""
    top = os.path.join(HERE, 'fights', 'root')
    for d, _, files in os.walk(top):
        for name in files:
            src = os.path.join(d, name)
            with open(src) as f:
                write(tree, '/' + os.path.relpath(src, top), f.read())
    link(tree, '/etc/systemd/system/multi-user.target.wants/tuned.service', '/lib/systemd/system/tuned.service')


def inputs_digest(*dirs):
    h = hashlib.sha256()
    for top in dirs:
        for d, subdirs, files in sorted(os.walk(os.path.join(HERE, top))):
            subdirs.sort()
            for name in sorted(files):
                p = os.path.join(d, name)
                h.update(os.path.relpath(p, HERE).encode() + b'\0')
                with open(p, 'rb') as f:
                    h.update(f.read())
    with open(os.path.abspath(__file__), 'rb') as f:
        h.update(f.read())
    return h.hexdigest()[:16]


def build_root_images(work, rootfs, rootfs_key, deb):
    """{variant: disk image} for 'fresh' and 'fights', from one extraction of the rootfs."""
    key = digest(rootfs_key, file_digest(deb), inputs_digest('guest', 'site', 'fights'), fstab())
    out = {v: os.path.join(work, f'root-{key}-{v}.raw') for v in ('fresh', 'fights')}
    if all(os.path.exists(p) for p in out.values()):
        log(f'root disks: cached root-{key}-*.raw')
        return out
    for old in glob.glob(os.path.join(work, 'root-*.raw')) + glob.glob(os.path.join(work, 'vmlinuz-*')) + \
            glob.glob(os.path.join(work, 'initrd.img-*')):
        os.unlink(old)
    t0 = time.time()
    tree = os.path.join(work, 'tree')
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    run(['tar', '-C', tree, '--numeric-owner', '-xpf', rootfs])
    kvers = os.listdir(os.path.join(tree, 'lib', 'modules'))
    if len(kvers) != 1:
        raise RuntimeError(f'expected one kernel in the image, found {kvers}')
    customize_common(tree, deb, kvers[0])
    fights = tree + '-fights'
    shutil.rmtree(fights, ignore_errors=True)
    run(['cp', '-a', tree, fights])
    customize_fights(fights)
    make_disk(fights, out['fights'] + '.tmp', ROOT_SIZE_MIB, 'bootlab-root')
    shutil.rmtree(fights)
    # The fresh node keeps Debian's systemd-zram-generator and its default zram swap device: apply
    # masks the generator and swaps the device off, and after the reboot the device is not there to
    # swap on again: the rollback reports it `next-boot` and goes on, and boot 3 has it back.
    make_disk(tree, out['fresh'] + '.tmp', ROOT_SIZE_MIB, 'bootlab-root')
    for p in out.values():
        os.rename(p + '.tmp', p)
    # The kernel and initramfs of the image, for the one boot that makes the data disks (it cannot
    # boot through GRUB with an fstab whose arrays do not exist yet).
    for name in ('vmlinuz', 'initrd.img'):
        shutil.copy(os.path.join(tree, 'boot', f'{name}-{kvers[0]}'), os.path.join(work, f'{name}-{key}'))
    shutil.rmtree(tree)
    log(f'root disks: built in {time.time() - t0:.0f} s')
    return out


def kernel_of(work, disk):
    key = os.path.basename(disk).split('-')[1]
    return os.path.join(work, f'vmlinuz-{key}'), os.path.join(work, f'initrd.img-{key}')


DATA_STEP = f'''set -eux
# md0: RAID0 of the first partitions, ext4 made with a wrong stride. The array's chunk is
# {MD_CHUNK_KIB} KiB = 16 blocks of 4 KiB over 4 data disks, so stride 16 and stripe width 64 are right.
mdadm --create /dev/md0 --run --level=0 --chunk={MD_CHUNK_KIB} --raid-devices=4 --metadata=1.2 \\
        --uuid={MD0_UUID} --homehost=bootlab --name=data /dev/vdb1 /dev/vdc1 /dev/vdd1 /dev/vde1
mkfs.ext4 -q -F -b 4096 -U {DATA_FS_UUID} -E stride=8,stripe_width=16 /dev/md0
# md1: RAID0 of the second partitions, XFS with a stale stripe width (made for 2 data disks, not 4).
mdadm --create /dev/md1 --run --level=0 --chunk={MD_CHUNK_KIB} --raid-devices=4 --metadata=1.2 \\
        --uuid={MD1_UUID} --homehost=bootlab --name=scratch /dev/vdb2 /dev/vdc2 /dev/vdd2 /dev/vde2
mkfs.xfs -q -f -m uuid={SCRATCH_FS_UUID} -d su={MD_CHUNK_KIB}k,sw=2 /dev/md1
cat /proc/mdstat
sync
mdadm --stop /dev/md0 /dev/md1
'''


def build_data_disks(work, root_disk):
    """The four data disks (md0 ext4, md1 XFS), made by one boot of ROOT_DISK's kernel with fstab
    ignored (its arrays are what this boot makes)."""
    import vm
    key = digest(RECIPE, DATA_DISKS, DATA_DISK_MIB, DATA_P1_MIB, DATA_STEP)
    out_dir = os.path.join(work, f'data-{key}')
    disks = [os.path.join(out_dir, f'{d}.raw') for d in DATA_DISKS]
    if os.path.isdir(out_dir):
        log(f'data disks: cached {os.path.basename(out_dir)}')
        return disks
    for old in glob.glob(os.path.join(work, 'data-*')):
        shutil.rmtree(old)
    t0 = time.time()
    tmp = out_dir + '.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    p1 = DATA_P1_MIB * 2048
    for d in DATA_DISKS:
        p = os.path.join(tmp, f'{d}.raw')
        with open(p, 'wb') as f:
            f.truncate(DATA_DISK_MIB << 20)
        write_mbr(p, [(2048, p1, 0xfd, False), (2048 + p1, (DATA_DISK_MIB << 11) - 2048 - p1, 0xfd, False)])
    vmlinuz, initrd = kernel_of(work, root_disk)
    g = vm.Guest('data-disks', work, root_disk, [os.path.join(tmp, f'{d}.raw') for d in DATA_DISKS])
    append = f'root=UUID={ROOT_UUID} ro console=ttyS0,115200 mitigations=off fstab=no'
    boot = g.boot('make-arrays', DATA_STEP, kernel=(vmlinuz, initrd, append))
    if boot.text('step.rc') != '0':
        raise RuntimeError(f'the data disks were not made:\n{boot.text("step.log")}')
    for overlay in g.disks[1:]:
        run(['qemu-img', 'commit', '-q', overlay])
    g.cleanup()
    shutil.rmtree(g.dir)
    os.rename(tmp, out_dir)
    log(f'data disks: built in {time.time() - t0:.0f} s')
    return disks
