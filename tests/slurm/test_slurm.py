#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
llmtune health-check --slurm against a real single-node Slurm (Debian's slurmctld, slurmd, munge).

    test_slurm.py --llmtune BIN --roots DIR --build BUILD

The test starts its own munged (own key and socket), slurmctld and slurmd (own slurm.conf, ports
on 127.0.0.1, state and spool directories), all under one temporary directory, and stops them
afterwards. On copies of a fixture root:
  - a root with a failing rule at the configured severity drains the node, with the reason
    "llmtune: RULE OBSERVED"; below the severity it does not;
  - the fixed root resumes it;
  - a rule that cannot be evaluated drains only with drain-on-error;
  - a node an operator drained for another reason is neither resumed nor re-labelled;
  - a hostlist as the node name, or --root without --node, is refused and drains nothing;
  - slurmd itself runs the wrapper as HealthCheckProgram and the node is drained;
  - a node drained for Xid 79 and the finding acknowledged (llmtune ack) is resumed, and drained
    again when a new Xid 79 is logged;
  - the check's run time is measured on the largest fixture root.
Skips (77) without the Slurm and munge programs unless LLMTUNE_REQUIRE_ALL=1. Bounded: every
wait has a deadline and the whole test gives up after 120 s.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, failures  # noqa: E402  (tests/lib/checklib.py)

SKIP = 77
NODE = 'llmtune-n1'


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Cluster:
    def __init__(self, top):
        self.top = top
        self.procs = []
        self.env = dict(os.environ, SLURM_CONF=os.path.join(top, 'slurm.conf'), NO_COLOR='1', LC_ALL='C')

    def path(self, *p):
        return os.path.join(self.top, *p)

    def start(self, health_program=None, interval=0):
        for d in ('munge', 'state', 'spool', 'log'):
            os.makedirs(self.path(d), mode=0o700, exist_ok=True)
        key = self.path('munge', 'munge.key')
        with open(key, 'wb') as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = self.path('munge', 'munge.socket')
        # munged daemonizes; --foreground keeps it our child so that it is stopped with the test.
        self.spawn(['munged', '--foreground', '--force', '--key-file=' + key, '--socket=' + sock,
                    '--pid-file=' + self.path('munge', 'munged.pid'), '--log-file=' + self.path('log', 'munged.log'),
                    '--seed-file=' + self.path('munge', 'munged.seed')])
        self.wait(lambda: os.path.exists(sock), 10, 'munged socket')
        host = socket.gethostname().split('.')[0]
        conf = [
            'ClusterName=llmtunetest',
            'SlurmctldHost=%s(127.0.0.1)' % host,
            'SlurmctldPort=%d' % free_port(),
            'SlurmdPort=%d' % free_port(),
            'SlurmUser=root',
            'SlurmdUser=root',
            'AuthType=auth/munge',
            'CredType=cred/munge',
            'AuthInfo=socket=%s' % sock,
            'StateSaveLocation=%s' % self.path('state'),
            'SlurmdSpoolDir=%s' % self.path('spool'),
            'SlurmctldPidFile=%s' % self.path('slurmctld.pid'),
            'SlurmdPidFile=%s' % self.path('slurmd.pid'),
            'SlurmctldLogFile=%s' % self.path('log', 'slurmctld.log'),
            'SlurmdLogFile=%s' % self.path('log', 'slurmd.log'),
            'SlurmctldDebug=info',
            'SlurmdDebug=info',
            'ProctrackType=proctrack/linuxproc',
            'TaskPlugin=task/none',
            'JobAcctGatherType=jobacct_gather/none',
            'AccountingStorageType=accounting_storage/none',
            'SchedulerType=sched/builtin',
            'SelectType=select/linear',
            'MpiDefault=none',
            'ReturnToService=2',
            'SlurmctldTimeout=30',
            'SlurmdTimeout=30',
            'NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 State=UNKNOWN' % (NODE, host),
            'PartitionName=test Nodes=%s Default=YES MaxTime=INFINITE State=UP' % NODE,
        ]
        if health_program:
            conf += ['HealthCheckProgram=%s' % health_program, 'HealthCheckInterval=%d' % interval,
                     'HealthCheckNodeState=ANY']
        with open(self.path('slurm.conf'), 'w') as f:
            f.write('\n'.join(conf) + '\n')
        self.spawn(['slurmctld', '-D', '-i', '-f', self.path('slurm.conf')])
        self.wait(lambda: self.scontrol('ping').returncode == 0 and 'UP' in self.scontrol('ping').stdout, 20,
                  'slurmctld answering')
        self.spawn(['slurmd', '-D', '-f', self.path('slurm.conf'), '-N', NODE])
        self.wait(lambda: re.search(r'State=(IDLE|MIXED)', self.scontrol('show', 'node', NODE).stdout), 30,
                  'node %s idle' % NODE)

    def spawn(self, argv):
        log = open(self.path('log', os.path.basename(argv[0]) + '.out'), 'w')
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))

    def wait(self, cond, secs, what):
        end = time.time() + secs
        while time.time() < end:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError('%s exited (%d) while waiting for %s:\n%s' % (p.args[0], p.returncode, what,
                                                                                    self.logs()))
            if cond():
                return
            time.sleep(0.2)
        raise RuntimeError('timed out after %d s waiting for %s:\n%s' % (secs, what, self.logs()))

    def logs(self):
        out = []
        for name in sorted(os.listdir(self.path('log'))):
            with open(self.path('log', name), errors='replace') as f:
                out.append('--- %s\n%s' % (name, ''.join(f.readlines()[-15:])))
        return '\n'.join(out)

    def scontrol(self, *args):
        return subprocess.run(['scontrol', *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=self.env, timeout=30)

    def node(self):
        out = self.scontrol('show', 'node', NODE).stdout
        state = re.search(r'\bState=(\S+)', out).group(1)
        m = re.search(r'^\s*Reason=(.*?)(?: \[[^]]*@[^]]*\])?$', out, re.M)
        return state, m.group(1) if m else None

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)


def need_tools():
    missing = [t for t in ('munged', 'slurmctld', 'slurmd', 'scontrol') if not shutil.which(t)]
    if not missing:
        return True
    if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1':
        sys.exit('missing %s and LLMTUNE_REQUIRE_ALL=1 (packaging/install-deps.sh installs slurmctld, slurmd, '
                 'slurm-client and munge)' % ', '.join(missing))
    print('SKIP: missing %s (packaging/install-deps.sh installs them)' % ', '.join(missing))
    sys.exit(SKIP)


def set_thp(root, word):
    """THP "enabled" of a fixture root copy: the kernel's choice list with WORD selected."""
    p = os.path.join(root, 'sys/kernel/mm/transparent_hugepage/enabled')
    if os.path.isdir(p):
        os.rmdir(p)
    elif os.path.lexists(p):
        os.unlink(p)
    if word is None:
        os.mkdir(p)  # a directory where the file should be: unreadable
        return
    with open(p, 'w') as f:
        f.write(' '.join('[%s]' % w if w == word else w for w in ('always', 'madvise', 'never')) + '\n')


def health_check(a, cl, root, *args):
    t0 = time.time()
    r = subprocess.run([a.llmtune, '--root', root, 'health-check', '--slurm', '--node', NODE, '--profile', 'base',
                        *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cl.env, timeout=60)
    return r, time.time() - t0


def scenarios(a, cl, tmp):
    root = os.path.join(tmp, 'vm')
    shutil.copytree(os.path.join(a.roots, 'vm-nogpu'), root, symlinks=True)
    set_thp(root, 'madvise')
    r, secs = health_check(a, cl, root)
    state, reason = cl.node()
    check(r.returncode == 0 and 'DRAIN' not in state and reason is None, 'a clean root: exit 0, node not drained '
          '(%d %r %s)' % (r.returncode, cl.node(), r.stderr))

    # thp-enabled is a warning: the default severity (critical) does not drain for it.
    set_thp(root, 'always')
    r, _ = health_check(a, cl, root)
    check(r.returncode == 0 and 'DRAIN' not in cl.node()[0], 'a warning below the severity: no drain (%d %r)' %
          (r.returncode, cl.node()))
    r, _ = health_check(a, cl, root, '--severity', 'warning')
    state, reason = cl.node()
    check(r.returncode == 1 and 'DRAIN' in state, 'failing at --severity warning: exit 1, drained (%d %s)' %
          (r.returncode, state))
    check(reason == 'llmtune: thp-enabled thp.enabled = always', 'drain reason names rule and observed: %r' % reason)
    check('ERROR:  llmtune:  Health check failed:  thp-enabled thp.enabled = always (warning)' in r.stderr,
          'NHC-style message on stderr: %r' % r.stderr)
    r, _ = health_check(a, cl, root, '--severity', 'warning')
    check(r.returncode == 1 and cl.node()[1] == reason and 'stays drained' in r.stderr,
          'a second run keeps the drain as it is (%r)' % r.stderr)

    # Fixed: resumed.
    set_thp(root, 'madvise')
    r, _ = health_check(a, cl, root, '--severity', 'warning')
    state, reason = cl.node()
    check(r.returncode == 0 and 'DRAIN' not in state and reason is None and 'resumed node' in r.stderr,
          'the fixed root resumes the node (%d %s %r)' % (r.returncode, state, reason))

    # Unreadable: never drains unless drain-on-error.
    set_thp(root, None)
    r, _ = health_check(a, cl, root, '--severity', 'warning')
    check(r.returncode == 0 and 'DRAIN' not in cl.node()[0] and 'thp-enabled cannot be evaluated' in r.stderr,
          'an unreadable fact does not drain by default, and says so (%d %r)' % (r.returncode, r.stderr))
    conf = os.path.join(tmp, 'hc.conf')
    with open(conf, 'w') as f:
        f.write('[health-check]\nseverity = warning\ndrain-on-error = true\n')
    r, _ = health_check(a, cl, root, '--config', conf)
    state, reason = cl.node()
    check(r.returncode == 1 and 'DRAIN' in state and reason and reason.startswith('llmtune: thp-enabled cannot be'),
          'with drain-on-error (config file) it drains (%d %s %r)' % (r.returncode, state, reason))
    set_thp(root, 'madvise')
    r, _ = health_check(a, cl, root, '--config', conf)
    check(r.returncode == 0 and 'DRAIN' not in cl.node()[0], 'readable again: resumed (%r)' % (cl.node(),))

    # An operator's drain is left alone: not resumed when healthy, not re-labelled when not.
    cl.scontrol('update', 'NodeName=' + NODE, 'State=DRAIN', 'Reason=disk replacement by operator')
    r, _ = health_check(a, cl, root, '--severity', 'warning')
    # (States compared by their DRAIN flag: a loaded machine may add NOT_RESPONDING for a while.)
    state, reason = cl.node()
    check(r.returncode == 0 and 'DRAIN' in state and reason == 'disk replacement by operator',
          'healthy: the operator\'s drain stays (%r)' % (cl.node(),))
    set_thp(root, 'always')
    r, _ = health_check(a, cl, root, '--severity', 'warning')
    state, reason = cl.node()
    check(r.returncode == 1 and 'DRAIN' in state and reason == 'disk replacement by operator' and
          'drained by someone else' in r.stderr, 'unhealthy: the operator\'s reason is kept (%r)' % (cl.node(),))
    cl.scontrol('update', 'NodeName=' + NODE, 'State=RESUME')

    # One host name, never a hostlist; under --root only a node given with --node.
    set_thp(root, 'always')
    for args, what in ((['--node', NODE[:-1] + '[1-512]'], 'a hostlist --node'),
                       (['--node', NODE + ',' + NODE], 'a comma list --node'), ([], 'no --node under --root')):
        r = subprocess.run([a.llmtune, '--root', root, 'health-check', '--slurm', '--profile', 'base', '--severity',
                            'warning', *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cl.env,
                           timeout=60)
        check(r.returncode == 2 and 'DRAIN' not in cl.node()[0], '%s: exit 2, the node not drained (%d %r %r)' %
              (what, r.returncode, cl.node(), r.stderr.strip()[-200:]))
    set_thp(root, 'madvise')
    print('ok: drain at/above severity with the reason, resume when fixed, unreadable only with drain-on-error, '
          'operator drains left alone, hostlists and --root without --node refused')


XID79 = '[ %d.0] NVRM: Xid (PCI:0000:c6:00): 79, pid=1, name=python, GPU has fallen off the bus.\n'


def xid_acked(a, cl, tmp):
    """Drained for Xid 79; acknowledged with a reason: resumed; a new Xid 79: drained again."""
    root = os.path.join(tmp, 'vm-xid')
    shutil.copytree(os.path.join(a.roots, 'vm-nogpu'), root, symlinks=True)
    set_thp(root, 'madvise')
    os.makedirs(os.path.join(root, 'var', 'log'), exist_ok=True)
    with open(os.path.join(root, 'proc', 'uptime'), 'w') as f:
        f.write('1000.0 1.0\n')
    dmesg = os.path.join(root, 'var', 'log', 'dmesg')
    with open(dmesg, 'w') as f:
        f.write(XID79 % 100)
    r, _ = health_check(a, cl, root)
    state, reason = cl.node()
    check(r.returncode == 1 and 'DRAIN' in state and reason and reason.startswith('llmtune: gpu-xid-critical '
          'xid.0000:c6:00.critical = 79'), 'Xid 79: drained (%d %s %r)' % (r.returncode, state, reason))
    ack = subprocess.run([a.llmtune, '--root', root, 'ack', 'gpu-xid-critical', '--profile', 'base', '--reason',
                          'GPU 0000:c6:00 fenced off, RMA 1234'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=cl.env, timeout=60)
    check(ack.returncode == 0, 'acknowledged with a reason (%d %r)' % (ack.returncode, ack.stderr))
    r, _ = health_check(a, cl, root)
    state, reason = cl.node()
    check(r.returncode == 0 and 'DRAIN' not in state and 'resumed node' in r.stderr and
          'NOTE:  llmtune:  gpu-xid-critical' in r.stderr and 'RMA 1234' in r.stderr,
          'acknowledged: resumed, the ack noted (%d %s %r)' % (r.returncode, state, r.stderr))
    with open(dmesg, 'a') as f:
        f.write(XID79 % 900)
    r, _ = health_check(a, cl, root)
    state, reason = cl.node()
    check(r.returncode == 1 and 'DRAIN' in state and reason and reason.startswith('llmtune: gpu-xid-critical'),
          'a new Xid 79: drained again (%d %s %r)' % (r.returncode, state, reason))
    cl.scontrol('update', 'NodeName=' + NODE, 'State=RESUME')
    print('ok: drained for Xid 79, acknowledged and resumed, drained again on a new Xid')


def runtime(a, cl, tmp):
    root = os.path.join(a.roots, 'dgx-a100')
    times = []
    for _ in range(3):
        r, secs = health_check(a, cl, root, '--profile', 'a100-8x')
        times.append(secs)
    state, reason = cl.node()
    check(r.returncode == 1 and 'DRAIN' in state and reason.startswith('llmtune: '),
          'dgx-a100 (critical failures): drained (%r)' % (cl.node(),))
    best = min(times)
    # HealthCheckInterval is typically minutes; slurmd runs the program synchronously. 10 s is
    # a generous bound for an 8-GPU, 256-CPU fixture even on a loaded CI machine.
    check(best < 10, 'health check of dgx-a100 took %.2f s' % best)
    cl.scontrol('update', 'NodeName=' + NODE, 'State=RESUME')
    print('ok: dgx-a100 health check with scontrol: %.3f s (best of 3; runs %s)' %
          (best, ', '.join('%.3f' % t for t in times)))
    return best


def slurmd_runs_it(a, tmp):
    """slurmd itself runs the shipped wrapper as HealthCheckProgram and the node gets drained."""
    root = os.path.join(tmp, 'vm-slurmd')
    shutil.copytree(os.path.join(a.roots, 'vm-nogpu'), root, symlinks=True)
    set_thp(root, 'always')
    conf = os.path.join(tmp, 'slurmd-hc.conf')
    with open(conf, 'w') as f:
        f.write('[health-check]\nseverity = warning\nprofile = base\n')
    top = os.path.join(tmp, 'cluster-slurmd')
    os.mkdir(top)
    prog = os.path.join(tmp, 'health-check-program')
    wrapper = os.path.join(a.build, 'packaging', 'slurm-health-check')
    with open(prog, 'w') as f:
        # HealthCheckProgram gets no arguments; this stands in for the installed wrapper, which
        # it runs with the fixture root added. The node name comes from SLURMD_NODENAME.
        # Under --root the node must be named on the command line (the tree's node= is not used).
        f.write('#!/bin/sh\nexport PATH=%s SLURM_CONF=%s LLMTUNE=%s\n'
                'exec sh %s --root %s --config %s --node "$SLURMD_NODENAME"\n' %
                (os.environ['PATH'], os.path.join(top, 'slurm.conf'), os.path.abspath(a.llmtune), wrapper, root, conf))
    os.chmod(prog, 0o755)
    cl = Cluster(top)
    try:
        t0 = time.time()
        cl.start(health_program=prog, interval=1)
        cl.wait(lambda: 'DRAIN' in cl.node()[0], 20, 'slurmd\'s health check to drain the node')
        state, reason = cl.node()
        check(reason == 'llmtune: thp-enabled thp.enabled = always', 'slurmd-run check: reason %r' % reason)
        set_thp(root, 'madvise')
        cl.wait(lambda: 'DRAIN' not in cl.node()[0], 20, 'slurmd\'s health check to resume the node')
        print('ok: slurmd ran the wrapper as HealthCheckProgram: drained, then resumed when fixed (%.1f s)' %
              (time.time() - t0))
    finally:
        cl.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--llmtune', required=True)
    ap.add_argument('--roots', required=True)
    ap.add_argument('--build', required=True)
    a = ap.parse_args()
    need_tools()
    if os.geteuid() != 0:
        if os.environ.get('LLMTUNE_REQUIRE_ALL') == '1':
            sys.exit('slurmd must run as root here (LLMTUNE_REQUIRE_ALL=1)')
        print('SKIP: slurmd and slurmctld run as root in this test')
        return SKIP

    def too_long(sig, frame):
        raise TimeoutError('the Slurm test ran longer than 120 s')
    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(120)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix='llmtune-slurm-') as tmp:
        slurmd_runs_it(a, tmp)
        top = os.path.join(tmp, 'cluster')
        os.mkdir(top)
        cl = Cluster(top)
        try:
            cl.start()
            print('ok: slurmctld, slurmd and munged up with their own configuration in %s' % top)
            scenarios(a, cl, tmp)
            xid_acked(a, cl, tmp)
            runtime(a, cl, tmp)
        except (RuntimeError, TimeoutError) as e:
            check(False, str(e))
        finally:
            cl.stop()
            left = [p.args[0] for p in cl.procs if p.poll() is None]
            check(not left, 'daemons stopped: %r left' % left)
    signal.alarm(0)
    print('total %.1f s' % (time.time() - t0))
    if failures:
        print('%d problem(s)' % len(failures))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
