# SPDX-License-Identifier: GPL-2.0-or-later
"""The boot lab's scenarios (tests/bootlab/README.md). Each boots its own guest (qcow2 overlays of
the cached images) as often as it needs and checks what the guest left in the share.

A check whose feature has not landed yet is kept, marked with the issue item it waits for (XFAIL):
it prints "xfail" while it fails, and fails the pass once it passes, so the mark is removed then.
"""
import os
import threading

from checklib import check

HERE = os.path.dirname(os.path.abspath(__file__))
ALL = ['fresh', 'fights', 'cmdline', 'kill']
PROFILE = 'bootlab'  # site/profiles.d/bootlab.ini: base, swapoff allowed on a small guest
# site/profiles.d/bootlab-quick.ini: the same without the nouveau blacklist, whose initramfs rebuild
# takes minutes under TCG (fresh proves it); fights and kill use it.
QUICK = 'bootlab-quick'
# The value every changed rule should read after the reboot (profiles/base.ini).
THP = 'madvise'
_print = threading.Lock()


def xcheck(cond, what, waits_for):
    """A check that is expected to fail until WAITS_FOR (an issue item) lands. With
    LLMTUNE_BOOTLAB_STRICT=1 it is an ordinary check (what the pass says once the mark is gone)."""
    if os.environ.get('LLMTUNE_BOOTLAB_STRICT') == '1':
        return check(cond, f'{what} (expected to fail until {waits_for})')
    if cond:
        return check(False, f'{what}: passes now, so {waits_for} has landed: remove its XFAIL mark '
                            '(tests/bootlab/scenarios.py)')
    with _print:
        print(f'xfail {what} (waits for {waits_for})', flush=True)
    return False


def share_files(extra=None):
    files = {}
    for name in ('lab.sh', 'readings.py'):
        with open(os.path.join(HERE, 'guest', name)) as f:
            files[name] = f.read()
    files.update(extra or {})
    return files


def step(*lines):
    return 'set -u\n. ./lab.sh\n' + '\n'.join(lines) + '\n'


def apply_lines(profile):
    """Boot 1 of a scenario: the audit before, apply on the live guest, verify right after."""
    return [f'cmd audit-before.json llmtune audit --json --profile {profile}',
            f'cmd apply.json llmtune apply --json --profile {profile}',
            'cmd verify-apply.json llmtune verify --json']


def run_boots(lab, name, variant, plan, files=None):
    """Boots guest NAME (image VARIANT) once per (label, step lines, hard_off) of PLAN, FILES in the
    share each time; returns the boots. The overlays go, the times are kept, whatever happens."""
    g = lab.guest(name, variant)
    boots = []
    try:
        for label, lines, hard_off in plan:
            boots.append(g.boot(label, step(*lines), share_files(files), hard_off=hard_off))
    finally:
        lab.record(name, g)
        g.cleanup()
    return boots


def boot_ok(name, boot):
    """The boot reached multi-user.target with no failed unit and nothing queued but the lab's own
    step (while it runs systemd says "starting")."""
    failed = boot.text('failed-units')
    jobs = [l.split()[1] for l in (boot.text('jobs') or '').splitlines() if len(l.split()) > 1]
    return check(boot.text('system-state') == 'starting' and not failed and jobs == ['bootlab.service'],
                 f'{name}: boot {boot.label} is up, multi-user reached at {boot.multi_user_seconds()} s, '
                 f'systemd "{boot.text("system-state")}", failed units: {failed or "none"}, jobs: {jobs}')


def results(audit):
    return {r['rule']: r for r in (audit or {}).get('results', [])}


def changed_rules(apply_json):
    return sorted({c['rule'] for c in (apply_json or {}).get('changes', []) if c.get('status') == 'changed'})


def fact(facts_json, name):
    f = ((facts_json or {}).get('facts') or {}).get(name)
    return f.get('value') if f and f.get('status') == 'ok' else None


def etc_diff(before, after):
    """Lines naming every /etc entry that differs between two snapshots."""
    out = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        if a != b:
            out.append(f'{path}: {a} -> {b}')
    return out


# --- fresh node -------------------------------------------------------------------------------

# Rules a fresh guest fails under the lab's profile and apply fixes (issue 30 item 2): THP (Debian's
# kernel: always), swap (the swap file and Debian's zram device), memlock (the guest has a soft-RoCE adapter), the nouveau blacklist (site rule)
# with its initramfs, and the arrays' noatime and ext4 stride.
FRESH_EXPECTED = ['thp-enabled', 'swap-active', 'swap-fstab', 'swap-zram', 'memlock-login', 'memlock-services',
                  'lab-nouveau-blacklisted', 'raid-noatime', 'raid-ext4-stride']


def fresh(lab):
    b1, b2, b3 = run_boots(lab, 'fresh', 'fresh', [
        ('apply', ['readings before --etc'] + apply_lines(PROFILE) + [
            # The operator's next step (README, Packages): the boot unit re-applies at every boot.
            'cmd enable-apply-unit systemctl enable llmtune-apply.service'], False),
        ('check', [
            'readings after',
            f'cmd audit-after.json llmtune audit --json --profile {PROFILE}',
            'cmd facts.json llmtune facts --json',
            'cmd verify.json llmtune verify --json',
            # The package's verify unit under its sandbox, on a real systemd.
            'cmd verify-unit systemctl start llmtune-verify.service',
            'journalctl -b -u llmtune-verify.service --no-pager >"$out/verify-unit.journal" 2>&1',
            'cmd rollback.json llmtune rollback --all --json',
            'cmd disable-apply-unit systemctl disable llmtune-apply.service',
            'cmd verify-rollback.json llmtune verify --json'], False),
        ('after-rollback', ['readings final --etc',
                            f'cmd audit-final.json llmtune audit --json --profile {PROFILE}'], False)])
    fresh_checks('fresh', b1, b2, b3)


def fresh_checks(n, b1, b2, b3):
    for b in (b1, b2, b3):
        boot_ok(n, b)
    before, apply_json = results(b1.json('audit-before')), b1.json('apply')
    check(b1.rc('apply') == 0 and apply_json and not apply_json.get('failed'),
          f'{n}: apply on the live guest exits 0 (exit {b1.rc("apply")}: {b1.text("apply.err")})')
    changed = changed_rules(apply_json)
    for rule in FRESH_EXPECTED:
        check(before.get(rule, {}).get('status') == 'fail' and rule in changed,
              f'{n}: boot 1: {rule} fails and apply changes it (audit: {before.get(rule, {}).get("status")})')
    check(b1.rc('verify-apply') == 0, f'{n}: verify right after apply exits 0 ({b1.text("verify-apply.err")})')
    after = results(b2.json('audit-after'))
    for rule in changed:
        r = after.get(rule, {})
        check(r.get('status') == 'pass', f'{n}: boot 2: {rule}, changed by apply, passes after the reboot '
              f'({r.get("status")}: {r.get("observed")})')
    fresh_readings(n, b1, b2)
    check(b2.rc('verify') == 0, f'{n}: boot 2: verify exits 0 ({b2.text("verify.err")})')
    # Its sandbox shows every mount ro,nosuid: verify judges only the options a change set.
    check(b2.rc('verify-unit') == 0, f'{n}: boot 2: llmtune-verify.service (the package\'s unit) succeeds '
          f'(journal: {"; ".join(l.split(": ", 1)[-1] for l in (b2.text("verify-unit.journal") or "").splitlines() if "drift" in l)})')
    unit = (b2.json('readings-after') or {}).get('units', {}).get('llmtune-apply.service', '')
    props = dict(l.split('=', 1) for l in unit.splitlines() if '=' in l)
    check(props.get('Result') == 'success' and props.get('ExecMainStatus') == '0'
          and props.get('ExecMainStartTimestampMonotonic', '0') != '0',
          f'{n}: boot 2: llmtune-apply.service ran at boot and succeeded ({props})')
    rb = b2.json('rollback') or {}
    check(b2.rc('rollback') == 0 and rb.get('rolled_back', 0) > 0 and not rb.get('refused'),
          f'{n}: rollback --all exits 0 and restores ({b2.rc("rollback")}, {rb.get("rolled_back")} restored, '
          f'{b2.text("rollback.err")})')
    # The zram device swapped off in boot 1 is not set up in boot 2 (its generator was masked): the
    # rollback restores the generator and reports the device back at the next boot, and goes on.
    zram = [c for c in rb.get('changes', []) if c.get('type') == 'swap' and '/zram' in c.get('target', '')]
    check(zram and all(c.get('status') == 'next-boot' for c in zram),
          f'{n}: boot 2: rollback reports the zram swap device next-boot ({zram})')
    check(b2.rc('verify-rollback') == 0, f'{n}: verify after rollback exits 0')
    fresh_after_rollback(n, b1, b3)


def fresh_readings(n, b1, b2):
    """Boot 2: the system's own tools agree with the profile and with llmtune's facts."""
    r = b2.json('readings-after') or {}
    facts = b2.json('facts')
    check(r.get('thp', {}).get('enabled') == THP == fact(facts, 'thp.enabled'),
          f'{n}: THP enabled: sysfs {r.get("thp", {}).get("enabled")}, llmtune {fact(facts, "thp.enabled")}, profile {THP}')
    check(r.get('thp', {}).get('defrag') == THP == fact(facts, 'thp.defrag'),
          f'{n}: THP defrag: sysfs {r.get("thp", {}).get("defrag")}, llmtune {fact(facts, "thp.defrag")}')
    check(r.get('swapon') == [] and fact(facts, 'swap.active') is False,
          f'{n}: no swap: swapon --show {r.get("swapon")}, llmtune swap.active {fact(facts, "swap.active")}')
    opts = r.get('mounts', {}).get('/data', '')
    check('noatime' in opts.split()[-1].split(',') if opts else False,
          f'{n}: /data mounted with noatime after the reboot (findmnt: {opts})')
    for user in ('root', 'labuser'):
        lim = r.get('ulimit_login', {}).get(user)
        check(lim == ['unlimited', 'unlimited'], f'{n}: ulimit -l (soft, hard) in a login shell of {user}: {lim}')
    check(fact(facts, 'limits.memlock.login.soft') in ('unlimited', 'infinity') or
          str(fact(facts, 'limits.memlock.login.soft')).startswith('18446744073709551615'),
          f'{n}: llmtune limits.memlock.login.soft agrees: {fact(facts, "limits.memlock.login.soft")}')
    check('DefaultLimitMEMLOCK=infinity' in r.get('systemd_default_memlock', ''),
          f'{n}: systemctl show DefaultLimitMEMLOCK: {r.get("systemd_default_memlock")}')
    check('LimitMEMLOCK=infinity' in r.get('service_memlock', '').split('\n'),
          f'{n}: llmtune-verify.service LimitMEMLOCK: {r.get("service_memlock")}')
    check(r.get('service_ulimit') == ['unlimited', 'unlimited'],
          f'{n}: a service started now gets ulimit -l {r.get("service_ulimit")}')
    check('blacklist nouveau' in r.get('modprobe_nouveau', []),
          f'{n}: modprobe -c blacklists nouveau: {r.get("modprobe_nouveau")}')
    check(any(l.endswith('modprobe.d/llmtune-blacklist-nouveau.conf') for l in r.get('initramfs_modprobe_d', [])),
          f'{n}: lsinitramfs shows the blacklist: {r.get("initramfs_modprobe_d")}')
    raid = r.get('md0_ext4_raid', [])
    check('RAID stride:              16' in raid and 'RAID stripe width:        64' in raid,
          f'{n}: dumpe2fs: md0 stride 16, stripe width 64 (the array: 64 KiB chunk, 4 disks): {raid}')


def fresh_after_rollback(n, b1, b3):
    r1, r3 = b1.json('readings-before') or {}, b3.json('readings-final') or {}
    diff = etc_diff(r1.get('etc', {}), r3.get('etc', {}))
    check(r1.get('etc') and not diff, f'{n}: boot 3: /etc is as before boot 1 ({len(r1.get("etc", {}))} entries: '
          'content, mode, owner)' + ('; differs: ' + '; '.join(diff[:20]) if diff else ''))
    for key in ('thp', 'sysctl', 'mounts', 'ulimit_login', 'systemd_default_memlock', 'service_memlock',
                'service_ulimit', 'modprobe_nouveau', 'md0_ext4_raid', 'cmdline'):
        check(r1.get(key) == r3.get(key), f'{n}: boot 3: {key} as before boot 1 ({r1.get(key)} / {r3.get(key)})')
    # swapon --show --raw --bytes: NAME TYPE SIZE USED PRIO; what is used differs from boot to boot
    s1, s3 = ([l.split()[:3] + l.split()[4:] for l in r.get('swapon', [])] for r in (r1, r3))
    check(s1 == s3 and any('/zram' in l[0] for l in s3),
          f'{n}: boot 3: the swap areas (the swap file, the zram device) as before boot 1 ({s1} / {s3})')
    # rollback regenerates the initramfs after the blacklist file is gone, not before
    check(r1.get('initramfs_modprobe_d') == r3.get('initramfs_modprobe_d'),
          f'{n}: boot 3: lsinitramfs as before boot 1 ({r3.get("initramfs_modprobe_d")})')
    check(r3.get('mounts', {}).get('/data', '').startswith('/dev/md') and
          r3.get('mounts', {}).get('/scratch', '').startswith('/dev/md'),
          f'{n}: boot 3: the md arrays are mounted ({r3.get("mounts")})')
    a1, a3 = results(b1.json('audit-before')), results(b3.json('audit-final'))
    moved = [f'{k}: {a1[k]["status"]} -> {a3.get(k, {}).get("status")}' for k in a1
             if a1[k]['status'] != a3.get(k, {}).get('status')]
    check(a1 and not moved, f'{n}: boot 3: the audit is as before boot 1' + (f' ({"; ".join(moved)})' if moved else ''))


# --- a distribution that fights back -------------------------------------------------------------

# Remedy kinds that leave the fix to the operator: a rule that still fails after apply and a reboot
# must have one of these, with the step spelled out.
OPERATOR_KINDS = {'manual', 'xfs-align', 'boot-tuner', 'reboot'}


def fights(lab):
    b1, b2 = run_boots(lab, 'fights', 'fights', [
        ('apply', ['readings before'] + apply_lines(QUICK), False),
        ('check', [
            'readings after',
            f'cmd audit-after.json llmtune audit --json --profile {QUICK}',
            'cmd facts.json llmtune facts --json',
            'cmd verify.json llmtune verify --json',
            # What systemd-tmpfiles itself sets for THP, with every tmpfiles.d file in its own order
            # (tuned, started later, sets THP again: this is the boot's tmpfiles verdict alone).
            'systemd-tmpfiles --create --prefix=/sys/kernel/mm/transparent_hugepage >/dev/null 2>&1',
            'cat /sys/kernel/mm/transparent_hugepage/enabled >"$out/tmpfiles-thp"'], False)])
    fights_checks('fights', b1, b2)


def fights_checks(n, b1, b2):
    for b in (b1, b2):
        boot_ok(n, b)
    apply_json = b1.json('apply') or {}
    check(b1.rc('apply') == 0 and not apply_json.get('failed'),
          f'{n}: apply exits 0 ({b1.rc("apply")}: {b1.text("apply.err")})')
    changed = changed_rules(apply_json)
    targets = [c.get('target', '') for c in apply_json.get('changes', []) if c.get('status') == 'changed']
    # tuned: reported, not fought over
    check(not [t for t in targets if 'tuned' in t], f'{n}: apply changes nothing of tuned\'s ({[t for t in targets if "tuned" in t]})')
    r1, r2 = b1.json('readings-before') or {}, b2.json('readings-after') or {}
    check('lab-hpc' in (r2.get('tuned_active') or '') and 'ActiveState=active' in r2.get('units', {}).get('tuned.service', ''),
          f'{n}: boot 2: tuned still runs its profile ({r2.get("tuned_active")})')
    after = results(b2.json('audit-after'))
    tuner = after.get('boot-tuner-thp', {})
    check(tuner.get('status') == 'fail' and 'tuned' in str(tuner.get('observed', '')) + str(tuner.get('remedy', '')),
          f'{n}: boot 2: the audit reports tuned setting THP (boot-tuner-thp {tuner.get("status")}: {tuner.get("observed")})')
    # After apply and a reboot, each rule passes or says what the operator must do.
    for rule, r in sorted(after.items()):
        if r['status'] not in ('fail', 'error'):
            continue
        kind = (r.get('remedy') or {}).get('kind')
        if rule in ('thp-enabled', 'thp-defrag') and tuner.get('status') == 'fail':
            continue  # tuned sets it after the boot, and boot-tuner-thp says so
        what = f'{n}: boot 2: {rule}, changed by apply, fails after the reboot ({r.get("observed")})'
        if rule in changed:
            check(False, what)
        else:
            check(kind in OPERATOR_KINDS and (r.get('remedy') or {}).get('summary'),
                  f'{n}: boot 2: {rule} fails and says what the operator must do ({kind}: '
                  f'{(r.get("remedy") or {}).get("summary")})')
    fights_readings(n, r1, r2, b2)


def fights_readings(n, r1, r2, b2):
    facts = b2.json('facts')
    # sysctl.conf lowered SysV shared memory: the default is back after the reboot
    for key, minimum in (('kernel.shmmax', 64 << 30), ('kernel.shmall', 16777216)):
        v = r2.get('sysctl', {}).get(key, '')
        check(v.isdigit() and int(v) >= minimum, f'{n}: boot 2: sysctl -n {key} = {v} (sysctl.conf said less)')
    check(r2.get('swapon') == [], f'{n}: boot 2: no swap (swap file and zram): swapon --show {r2.get("swapon")}')
    for m in ('/data', '/scratch'):
        opts = r2.get('mounts', {}).get(m, '')
        check(opts and 'noatime' in opts.split()[-1].split(','), f'{n}: boot 2: {m} mounted with noatime ({opts})')
    raid = r2.get('md0_ext4_raid', [])
    check('RAID stride:              16' in raid, f'{n}: boot 2: md0 ext4 stride fixed: {raid}')
    tmpfiles = b2.text('tmpfiles-thp') or ''
    word = next((w[1:-1] for w in tmpfiles.split() if w.startswith('[')), None)
    check(word == THP, f'{n}: boot 2: systemd-tmpfiles sets THP {word}, the profile wants {THP} '
          '(00-site-thp.conf sorts before llmtune\'s file: apply disables its line)')
    for user in ('root', 'labuser'):
        lim = r2.get('ulimit_login', {}).get(user)
        check(lim == ['unlimited', 'unlimited'],
              f'{n}: boot 2: ulimit -l in a login shell of {user} is unlimited despite limits.d/99-site.conf: {lim}')
    check('DefaultLimitMEMLOCK=infinity' in r2.get('systemd_default_memlock', ''),
          f'{n}: boot 2: DefaultLimitMEMLOCK despite system.conf.d/99-vendor.conf: '
          f'{r2.get("systemd_default_memlock")}')
    # The audit tells it as it is: memlock passes only if the login shell has it (before issue 29
    # item 4 it passed while limits.d/99-site.conf lowered the limit).
    lim = r2.get('ulimit_login', {}).get('labuser')
    said = results(b2.json('audit-after')).get('memlock-login', {}).get('status')
    check((said == 'pass') == (lim == ['unlimited', 'unlimited']),
          f'{n}: boot 2: the audit\'s memlock-login ({said}) agrees with the login shell ({lim})')
    lim_fact = fact(facts, 'limits.memlock.login.soft')
    check(lim_fact is not None, f'{n}: boot 2: llmtune reads the login memlock limit ({lim_fact})')


# --- kernel command line ----------------------------------------------------------------------------

def lint_host(lab, path):
    """(exit status, message) of `llmtune lint PATH` with the checkout's own build: the same code
    the package holds, so a rule file it refuses would be refused in the guest too."""
    import subprocess
    p = subprocess.run([lab.llmtune, 'lint', path], capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


CMDLINE_PARAM = 'bootlab.marker=1'


def cmdline(lab):
    n = 'cmdline'
    rule = os.path.join(HERE, 'cmdline', 'lab-cmdline.ini')
    rc, msg = lint_host(lab, rule)
    checks = ['apply puts the parameter in /etc/default/grub.d and runs update-grub',
              f'boot 2: /proc/cmdline (GRUB from the guest\'s disk) has {CMDLINE_PARAM}',
              'boot 2: the audit passes lab-cmdline', 'rollback --all exits 0',
              f'boot 3: /proc/cmdline has no {CMDLINE_PARAM} after rollback', 'boot 3: /etc as before boot 1']
    if not check(rc == 0, f'{n}: llmtune lint accepts {os.path.basename(rule)} ({msg.splitlines()[:1]})'):
        # the guest would refuse every command with this rule installed: nothing to boot
        for c in checks:
            check(False, f'{n}: {c} (not run: lint refused the rule)')
        return
    files = {}
    for name in ('lab-cmdline.ini', 'bootlab-cmdline.ini'):
        with open(os.path.join(HERE, 'cmdline', name)) as f:
            files[name] = f.read()
    b1, b2, b3 = run_boots(lab, n, 'fresh', [
        ('apply', ['install -m 0644 lab-cmdline.ini /etc/llmtune/rules.d/lab-cmdline.ini',
                   'install -m 0644 bootlab-cmdline.ini /etc/llmtune/profiles.d/bootlab-cmdline.ini',
                   'readings before --etc',
                   'cmd apply.json llmtune apply --json --profile bootlab-cmdline',
                   'cp /boot/grub/grub.cfg "$out/grub.cfg-after-apply"'], False),
        ('check', ['readings after',
                   'cmd audit-after.json llmtune audit --json --profile bootlab-cmdline',
                   'cmd verify.json llmtune verify --json',
                   'cmd rollback.json llmtune rollback --all --json'], False),
        ('after-rollback', ['readings final --etc'], False)], files)
    for b in (b1, b2, b3):
        boot_ok(n, b)
    changes = (b1.json('apply') or {}).get('changes', [])
    check(b1.rc('apply') == 0 and any(c.get('target', '').startswith('/etc/default/grub') for c in changes)
          and CMDLINE_PARAM in (b1.text('grub.cfg-after-apply') or ''),
          f'{n}: {checks[0]} (exit {b1.rc("apply")}; grub.cfg has it: {CMDLINE_PARAM in (b1.text("grub.cfg-after-apply") or "")})')
    r1, r2, r3 = (b.json(k) or {} for b, k in ((b1, 'readings-before'), (b2, 'readings-after'), (b3, 'readings-final')))
    check(CMDLINE_PARAM in r2.get('cmdline', '').split(), f'{n}: {checks[1]}: {r2.get("cmdline")}')
    check(results(b2.json('audit-after')).get('lab-cmdline', {}).get('status') == 'pass', f'{n}: {checks[2]}')
    check(b2.rc('verify') == 0, f'{n}: boot 2: verify exits 0')
    check(b2.rc('rollback') == 0, f'{n}: {checks[3]} ({b2.text("rollback.err")})')
    check(CMDLINE_PARAM not in r3.get('cmdline', '').split() and r3.get('cmdline') == r1.get('cmdline'),
          f'{n}: {checks[4]}: {r3.get("cmdline")}')
    diff = etc_diff(r1.get('etc', {}), r3.get('etc', {}))
    check(r1.get('etc') and not diff, f'{n}: {checks[5]}' + ('; differs: ' + '; '.join(diff[:20]) if diff else ''))


# --- kill during apply, then boot -------------------------------------------------------------------

# The kill points (the test build's LLMTUNE_TEST_KILL_AT: the Nth hook apply passes, in order
# intent-logged, before-rename, changed, outcome-logged for each change). The plan on the fresh guest
# is the same every time, so each number is the same place of the same run; the trace of each run
# names it in the output.
KILL_AT = [2, 9, 23]


def kill_lines(k, first):
    lines = [] if first else [
        # After the power cut: verify must tell what is true, and a rerun converges.
        'cmd verify.json llmtune verify --json',
        'python3 truth.py "$out/verify.json" >"$out/truth.json" 2>"$out/truth.err"',
        f'cmd rerun.json llmtune apply --json --profile {QUICK}',
        f'cmd rerun2.json llmtune apply --json --profile {QUICK}',
        'cmd verify-rerun.json llmtune verify --json',
        f'cmd audit-rerun.json llmtune audit --json --profile {QUICK}']
    if k is None:
        return lines
    lines += [
        # Back to the distribution's state, so that the next run has every change to make.
        *([] if first else ['cmd rollback.json llmtune rollback --all --json']),
        # /run is mounted noexec: the test build goes where a site's own tools do.
        'install -D -m 0755 llmtune-test /usr/local/libexec/llmtune-test',
        f'LLMTUNE_DATADIR=/usr/share/llmtune LLMTUNE_TEST_POINTS="$out/points" LLMTUNE_TEST_KILL_AT={k} '
        f'/usr/local/libexec/llmtune-test apply --profile {QUICK} >"$out/killed.out" 2>&1',
        'echo $? >"$out/killed.rc"',
        'hard_off']
    return lines


def kill(lab):
    n = 'kill'
    if not lab.llmtune_test:
        check(False, f'{n}: no test build of llmtune (--llmtune-test): the kill points need it')
        return
    with open(lab.llmtune_test, 'rb') as f:
        files = {'llmtune-test': f.read()}
    with open(os.path.join(HERE, 'guest', 'truth.py')) as f:
        files['truth.py'] = f.read()
    plan = [(f'kill-at-{k}' if k else 'check', kill_lines(k, i == 0), k is not None)
            for i, k in enumerate(KILL_AT + [None])]
    boots = run_boots(lab, n, 'fresh', plan, files)
    for i, b in enumerate(boots):
        if i > 0:
            kill_checks(n, KILL_AT[i - 1], b)
        if i < len(KILL_AT):
            points = (b.text('points') or '').splitlines()
            check(b.text('killed.rc') == '137' and len(points) == KILL_AT[i],
                  f'{n}: apply killed at point {KILL_AT[i]}: {points[-1] if points else "no point reached"} '
                  f'(exit {b.text("killed.rc")})')


def kill_checks(n, k, b):
    """The boot after a kill at point K and a power cut."""
    boot_ok(n, b)
    v = b.json('verify') or {}
    check(b.rc('verify') == 2 and v.get('unfinished'),
          f'{n}: after the kill at {k} and the power cut, verify exits 2 and names the unfinished run '
          f'(exit {b.rc("verify")}, status {v.get("status")}, {len(v.get("unfinished") or [])} unfinished)')
    lies = []
    for c in (b.json('truth') or {}).get('changes', []):
        now, found = c.get('now'), c.get('verify_found')
        if not now or 'error' in now:
            continue
        if 'sha256' in now:
            ok = found == 'sha256:' + now['sha256']
        elif 'value' in now:
            word = next((w[1:-1] for w in now['value'].split() if w.startswith('[')), now['value'])
            ok = found in (now['value'], word)
        elif 'link' in now:
            ok = found == now['link'] or found == 'link:' + now['link']
        elif 'swap' in now:
            ok = found == now['swap']
        elif 'options' in now:
            ok = set(str(found).split(',')) == set(now['options'].split(','))
        else:
            ok = found in (None, '', 'absent') or 'absent' in str(found)
        if not ok:
            lies.append(f'{c.get("target")}: verify found {found}, the file holds {now}')
    check(b.json('truth') is not None and not lies, f'{n}: after the kill at {k}: what verify found is what the '
          f'targets hold' + (': ' + '; '.join(lies[:5]) if lies else ''))
    r1, r2 = b.json('rerun') or {}, b.json('rerun2') or {}
    check(b.rc('rerun') == 0 and b.rc('rerun2') == 0 and r2.get('changed') == 0,
          f'{n}: after the kill at {k}: a rerun converges (exit {b.rc("rerun")}, then {b.rc("rerun2")} '
          f'changing {r2.get("changed")}) ({b.text("rerun.err")})')
    check(b.rc('verify-rerun') == 0, f'{n}: after the kill at {k}: verify after the rerun exits 0 '
          f'({b.text("verify-rerun.err")})')
    del r1
