#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""llmtune's facts against the real-machine corpus (../shared/corpus).

Usage: test_corpus.py LLMTUNE_EXE CORPUS_DIR

Unpacks each snapshot into a temporary directory (hwloc .tar.bz2 with tarfile, checked member by
member; node_exporter's sys.ttar plus its proc/ folder; procfs's fixtures.ttar) and runs
`llmtune --root TREE facts --json` on it. The expected values come from each folder's
PROVENANCE.txt (what the machine is and what its files say), never from llmtune's own output.
Values the provenance does not spell out (per-node MemTotal, /proc/mounts line count) are read
from the unpacked files by this script, independently of llmtune.

Exit status: 0 all assertions hold; 1 a fact disagrees (each failure names tree, fact, expected
and actual); 77 (meson's "skipped") when the corpus is absent, unless LLMTUNE_REQUIRE_CORPUS=1,
which turns a missing corpus into a failure so CI can never pass by skipping.
"""

import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ttar  # noqa: E402  (the project's own .ttar reader, next to this file)

SKIP = 77
KIB = 1024

HWLOC_TARBALLS = {
    # tree name: (corpus folder, archive, top directory inside the archive)
    "32em64t": ("hwloc-linux-32em64t-2n8c-dax-nvme-mic-dimms", "32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2",
                "32em64t-2n8c+1mic"),
    "r910": ("hwloc-linux-40intel64-r910-pcilocality", "40intel64-2g2n4c+pcilocality.tar.bz2",
             "40intel64-2g2n4c+pci"),
    "power9": ("hwloc-linux-nvidiagpunumanodes-power9-v100", "nvidiagpunumanodes.tar.bz2", "nvidiagpunumanodes"),
}
NODE_EXPORTER = "node_exporter-collector-fixtures"
PROCFS = "procfs-testdata-fixtures"


# --------------------------------------------------------------------------- unpacking

class UnsafeArchive(Exception):
    pass


def _inside(name):
    """True when a relative archive path stays inside the extraction directory."""
    if name.startswith("/") or "\0" in name:
        return False
    norm = posixpath.normpath(name)
    return norm != ".." and not norm.startswith("../") and ".." not in name.split("/")


def safe_extract_tar(archive, dest):
    """Extract a tarball refusing absolute paths, '..', links that leave DEST, devices and FIFOs."""
    with tarfile.open(archive, "r:*") as tf:
        members = tf.getmembers()
        for m in members:
            if not _inside(m.name):
                raise UnsafeArchive(f"{archive}: member path escapes: {m.name!r}")
            if m.issym():
                target = posixpath.normpath(posixpath.join(posixpath.dirname(m.name), m.linkname))
                if m.linkname.startswith("/") or not _inside(target):
                    raise UnsafeArchive(f"{archive}: symlink {m.name!r} -> {m.linkname!r} leaves the tree")
            elif m.islnk():
                if not _inside(m.linkname):
                    raise UnsafeArchive(f"{archive}: hard link {m.name!r} -> {m.linkname!r} leaves the tree")
            elif not (m.isfile() or m.isdir()):
                raise UnsafeArchive(f"{archive}: refusing special file {m.name!r}")
        if hasattr(tarfile, "data_filter"):
            # Python >= 3.11.4 / 3.12: the stdlib's own 'data' filter on top of the checks above
            tf.extractall(dest, members=members, filter="data")
        else:
            tf.extractall(dest, members=members)


def unpack_all(corpus, tmp):
    """Return {tree name: root directory} for every snapshot; raises on a missing file."""
    trees = {}
    for name, (folder, archive, top) in HWLOC_TARBALLS.items():
        dest = os.path.join(tmp, name)
        os.mkdir(dest)
        safe_extract_tar(os.path.join(corpus, folder, archive), dest)
        root = os.path.join(dest, top)
        if not os.path.isdir(os.path.join(root, "sys")):
            raise UnsafeArchive(f"{archive}: no {top}/sys inside")
        trees[name] = root

    # node_exporter: sys/ from the ttar, proc/ from the plain files next to it
    root = os.path.join(tmp, "node_exporter")
    os.mkdir(root)
    ttar.extract(os.path.join(corpus, NODE_EXPORTER, "sys.ttar"), root)
    shutil.copytree(os.path.join(corpus, NODE_EXPORTER, "proc"), os.path.join(root, "proc"), symlinks=True)
    trees["node_exporter"] = root

    # procfs: one archive holding fixtures/proc and fixtures/sys; the root is fixtures/
    dest = os.path.join(tmp, "procfs")
    os.mkdir(dest)
    ttar.extract(os.path.join(corpus, PROCFS, "fixtures.ttar"), dest)
    trees["procfs"] = os.path.join(dest, "fixtures")
    return trees


# --------------------------------------------------------------------------- running llmtune

class Tree:
    def __init__(self, name, root, exe):
        self.name, self.root, self.exe = name, root, exe
        self.error = None
        self.facts = {}
        rc, out, err = self._run([])
        if rc != 0:
            self.error = f"llmtune --root {root} facts --json exited {rc}: {err.strip()[-2000:]}"
        else:
            try:
                self.facts = json.loads(out)["facts"]
            except (ValueError, KeyError) as e:
                self.error = f"bad JSON from llmtune facts --json: {e}"

    def _run(self, names):
        cmd = [self.exe, "--root", self.root, "facts", "--json"] + list(names)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, LC_ALL="C", NO_COLOR="1"))
        return p.returncode, p.stdout, p.stderr

    def lookup(self, names):
        """Facts asked for by name (on-demand facts such as module.NAME.loaded, any sysctl)."""
        rc, out, err = self._run(names)
        if rc < 0:
            raise RuntimeError(f"{self.name}: llmtune killed by signal {-rc} looking up {names}: {err}")
        try:
            return json.loads(out)["facts"]
        except (ValueError, KeyError):
            return {}

    def path(self, rel):
        return os.path.join(self.root, rel)

    def read(self, rel):
        with open(self.path(rel), "rb") as fh:
            return fh.read().decode("utf-8", "replace")

    def names_under(self, prefix):
        return sorted(n for n in self.facts if n.startswith(prefix))


# --------------------------------------------------------------------------- assertions

MISSING = object()


def show(fact):
    if fact is MISSING:
        return "<no such fact>"
    if fact.get("status") == "ok":
        return repr(fact.get("value"))
    return f"<{fact.get('status')}: {fact.get('reason', '')}>"


def as_number(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        s = v.strip()
        try:
            return int(s, 0)
        except ValueError:
            try:
                return float(s)
            except ValueError:
                return None
    return None


def cpuset(text):
    """Expand a kernel CPU list ('0-3,8,10-11') into a set; None when it is not one."""
    out = set()
    text = text.strip()
    if not text:
        return out
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not m:
            return None
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out.update(range(lo, hi + 1))
    return out


class Checker:
    def __init__(self):
        self.failures = []
        self.groups = 0
        self.checks = 0

    def group(self, tree, title):
        return Group(self, tree, title)


class Group:
    """One line of output: a set of related assertions on one tree."""

    def __init__(self, checker, tree, title):
        self.c, self.tree, self.title = checker, tree, title
        self.fail = []
        self.n = 0
        self.notes = []

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is not None:
            self._record("<assertion code>", "no exception", f"{et.__name__}: {ev}")
        self.c.groups += 1
        self.c.checks += self.n
        status = "ok  " if not self.fail else "FAIL"
        note = f"  [{'; '.join(self.notes)}]" if self.notes else ""
        print(f"{status} {self.tree.name:14} {self.title} ({self.n - len(self.fail)}/{self.n}){note}", flush=True)
        for line in self.fail:
            print(f"       {line}", flush=True)
        self.c.failures.extend(self.fail)
        return True  # an exception in one group must not hide the others

    def _record(self, fact, expected, actual):
        self.n += 1
        self.fail.append(f"tree={self.tree.name} fact={fact} expected={expected} actual={actual}")

    def _ok(self):
        self.n += 1

    def get(self, name):
        return self.tree.facts.get(name, MISSING)

    def check(self, cond, fact, expected, actual):
        if cond:
            self._ok()
        else:
            self._record(fact, expected, actual)

    def eq(self, name, expected, facts=None):
        """Fact NAME holds a value equal to EXPECTED (ints compare numerically, strings exactly)."""
        f = (facts if facts is not None else self.tree.facts).get(name, MISSING)
        ok = f is not MISSING and f.get("status") == "ok"
        if ok:
            v = f.get("value")
            if isinstance(expected, bool):
                ok = v is expected
            elif isinstance(expected, (int, float)):
                ok = as_number(v) is not None and as_number(v) == expected
            else:
                ok = v == expected
        self.check(ok, name, repr(expected), show(f))

    def one_of(self, name, allowed, desc=None):
        f = self.get(name)
        ok = f is not MISSING and f.get("status") == "ok" and f.get("value") in allowed
        self.check(ok, name, desc or f"one of {allowed!r}", show(f))

    def cpus(self, name, expected_list):
        f = self.get(name)
        ok = f is not MISSING and f.get("status") == "ok" and isinstance(f.get("value"), str) \
            and cpuset(f["value"]) == cpuset(expected_list)
        self.check(ok, name, f"CPU list {expected_list}", show(f))

    def absent(self, name, facts=None, why=""):
        """The fact is reported absent, with a reason (not missing, not a made-up value)."""
        f = (facts if facts is not None else self.tree.facts).get(name, MISSING)
        ok = f is not MISSING and f.get("status") == "absent" and bool(f.get("reason"))
        self.check(ok, name, f"absent with a reason{(' (' + why + ')') if why else ''}", show(f))

    def not_value(self, name, why, facts=None):
        """The fact is absent or unreadable: the data does not hold it."""
        f = (facts if facts is not None else self.tree.facts).get(name, MISSING)
        ok = f is not MISSING and f.get("status") in ("absent", "unreadable") and bool(f.get("reason"))
        self.check(ok, name, f"absent/unreadable with a reason ({why})", show(f))

    def zero_or_absent(self, name, why):
        """A count that is 0, or absent with a reason because its source file does not exist."""
        f = self.get(name)
        ok = f is not MISSING and ((f.get("status") == "ok" and as_number(f.get("value")) == 0) or
                                   (f.get("status") == "absent" and bool(f.get("reason"))))
        self.check(ok, name, f"0 or absent ({why})", show(f))

    def present_ok(self, name):
        f = self.get(name)
        self.check(f is not MISSING and f.get("status") == "ok", name, "a value", show(f))
        return f.get("value") if f is not MISSING else None


# --------------------------------------------------------------------------- helpers on facts

def indexed(tree, prefix, field):
    """{N: value} for facts PREFIX.N.FIELD with status ok."""
    out = {}
    rx = re.compile(re.escape(prefix) + r"\.(\d+)\." + re.escape(field) + r"$")
    for name, f in tree.facts.items():
        m = rx.match(name)
        if m and f.get("status") == "ok":
            out[int(m.group(1))] = f.get("value")
    return out


def keyed(tree, prefix):
    """Set of KEY in facts named PREFIX.KEY.FIELD (KEY being a kernel name: md0, mlx4_0, eth0)."""
    if prefix == "net":
        # an interface name may itself hold dots (eth0.1015): match the per-interface fields
        rx = re.compile(r"net\.(.+)\.(?:operstate|up|has_address|addresses)$")
    else:
        rx = re.compile(re.escape(prefix) + r"\.([^.]+)\..+$")
    return {m.group(1) for n in tree.facts for m in [rx.match(n)] if m}


def cpumask(text):
    """Expand a sysfs cpumask ('0000,0000ffff') into a set of CPU numbers."""
    bits = int(text.strip().replace(",", ""), 16)
    return {i for i in range(bits.bit_length()) if bits >> i & 1}


def gpu_index_by_address(tree, address):
    for n, v in indexed(tree, "gpu", "address").items():
        if v == address:
            return n
    return None


def nvme_index_by(tree, field, value):
    for n, v in indexed(tree, "nvme", field).items():
        if v == value:
            return n
    return None


def mdstat_names(text):
    return {m.group(1) for m in re.finditer(r"^(md\w+)\s*:", text, re.M)}


# --------------------------------------------------------------------------- the host, for leak checks

def host_values():
    h = {"release": os.uname().release}

    def rd(p):
        try:
            with open(p, "rb") as fh:
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return None

    cpuinfo = rd("/proc/cpuinfo") or ""
    m = re.search(r"^(?:model name|cpu|Processor)\s*:\s*(.*)$", cpuinfo, re.M)
    h["model"] = m.group(1).strip() if m else None
    h["cmdline"] = (rd("/proc/cmdline") or "").strip() or None
    mods = rd("/proc/modules")
    h["modules"] = [l.split()[0] for l in mods.splitlines() if l.strip()] if mods else []
    try:
        h["net"] = set(os.listdir("/sys/class/net"))
    except OSError:
        h["net"] = set()
    mi = rd("/proc/meminfo") or ""
    m = re.search(r"^MemTotal:\s+(\d+) kB", mi, re.M)
    h["mem_total"] = int(m.group(1)) * KIB if m else None
    sw = rd("/proc/swaps") or ""
    h["swaps"] = [l.split()[0] for l in sw.splitlines()[1:] if l.strip()]
    h["swappiness"] = (rd("/proc/sys/vm/swappiness") or "").strip() or None
    h["min_free_kbytes"] = (rd("/proc/sys/vm/min_free_kbytes") or "").strip() or None
    h["thp"] = os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled")
    # modprobe.d "options"/"blacklist" lines of this machine (modprobe.d(5) search path)
    h["modprobe_options"], h["modprobe_blacklist"] = {}, []
    for d in ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/lib/modprobe.d",
              "/usr/lib/modprobe.d"):
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            for line in (rd(os.path.join(d, n)) or "").splitlines():
                w = line.split()
                if len(w) >= 3 and w[0] == "options":
                    h["modprobe_options"].setdefault(w[1], " ".join(w[2:]))
                elif len(w) >= 2 and w[0] == "blacklist":
                    h["modprobe_blacklist"].append(w[1])
    return h


def check_host_baseline(c, exe, host):
    """Live llmtune sees this machine's values, so a tree that shows a different one proves no leak."""
    class Live:
        name = "(this host)"
    p = subprocess.run([exe, "facts", "--json"], capture_output=True, text=True, timeout=300)
    live = Live()
    try:
        live.facts = json.loads(p.stdout)["facts"]
    except (ValueError, KeyError):
        live.facts = {}
    with c.group(live, "baseline: live llmtune reads this machine's values") as g:
        g.check(p.returncode == 0, "<llmtune facts --json>", "exit 0", f"{p.returncode}: {p.stderr[-300:]}")
        g.eq("kernel.release", host["release"])
        if host["mem_total"]:
            g.eq("mem.total", host["mem_total"])
        names = sorted(host["modprobe_options"])[:4]
        if names:
            asked = subprocess.run([exe, "facts", "--json"] + [f"modprobe.{m}.options" for m in names],
                                   capture_output=True, text=True, timeout=300)
            try:
                got = json.loads(asked.stdout)["facts"]
            except (ValueError, KeyError):
                got = {}
            for m in names:
                g.eq(f"modprobe.{m}.options", host["modprobe_options"][m], facts=got)
        if not names:
            g.notes.append("no modprobe.d options on this host: modprobe leak check not conclusive")


# --------------------------------------------------------------------------- per-tree assertions

def check_32em64t(c, t):
    """Dell DCS8000Z: 2x E5-2680 (16 CPUs, HT off), 2 NUMA nodes, ConnectX-3 FDR on node 1, NVMe -1."""
    with c.group(t, "cpu topology and model") as g:
        g.eq("cpu.count", 16)
        g.cpus("cpu.online", "0-15")
        g.eq("cpu.sockets", 2)
        g.eq("cpu.cores", 16)
        g.eq("cpu.threads_per_core", 1)
        g.eq("cpu.model", "Intel(R) Xeon(R) CPU E5-2680 0 @ 2.70GHz")
    with c.group(t, "cpufreq acpi-cpufreq/performance on all 16 CPUs") as g:
        g.eq("cpu.cpufreq.driver", "acpi-cpufreq")
        govs = [n for n in t.facts if re.fullmatch(r"cpu\.policy\.\d+\.governor", n)]
        g.check(len(govs) == 16, "cpu.policy.*.governor", "16 policies", f"{len(govs)} policies")
        for n in sorted(govs):
            g.eq(n, "performance")
        for n in sorted(x for x in t.facts if re.fullmatch(r"cpu\.policy\.\d+\.available_governors", x)):
            g.eq(n, "ondemand userspace performance")
        g.absent("cpu.intel_pstate.status")
    with c.group(t, "NUMA: 2 nodes, per-node cpulists and MemTotal") as g:
        g.eq("numa.nodes", 2)
        g.eq("numa.cpu_nodes", 2)
        g.cpus("numa.node_list", "0-1")
        g.cpus("numa.node.0.cpus", t.read("sys/devices/system/node/node0/cpulist"))
        g.cpus("numa.node.1.cpus", t.read("sys/devices/system/node/node1/cpulist"))
        g.eq("numa.node.0.kind", "cpu")
        g.eq("numa.node.1.kind", "cpu")
        for node in (0, 1):
            kb = int(re.search(r"MemTotal:\s+(\d+) kB", t.read(f"sys/devices/system/node/node{node}/meminfo")).group(1))
            g.eq(f"numa.node.{node}.mem_total", kb * KIB)
    with c.group(t, "memory: MemTotal 32836008 kB, no THP, /dev/shm tmpfs default") as g:
        g.eq("mem.total", 32836008 * KIB)
        g.absent("mem.available", why="2.6-era meminfo has no MemAvailable line")
        g.absent("thp.enabled", why="no transparent_hugepage in the tarball")
        g.absent("thp.defrag", why="no transparent_hugepage in the tarball")
        g.eq("mem.shm.fstype", "tmpfs")
        g.eq("mem.shm.size", 32836008 * KIB // 2)  # tmpfs without size= gets half of RAM (tmpfs(5))
    with c.group(t, "InfiniBand mlx4_0 (ConnectX-3 15b3:1003) port 1 ACTIVE 56 Gb/s FDR on node 1") as g:
        g.eq("ib.mlx4_0.address", "0000:82:00.0")
        g.eq("ib.mlx4_0.numa_node", 1)
        g.eq("ib.mlx4_0.ports", 1)
        g.eq("ib.mlx4_0.port.1.state", "ACTIVE")
        g.eq("ib.mlx4_0.port.1.state_code", 4)
        g.eq("ib.mlx4_0.port.1.phys_state", "LinkUp")
        g.eq("ib.mlx4_0.port.1.rate", "56 Gb/sec (4X FDR)")
        g.eq("ib.mlx4_0.port.1.rate_gbps", 56)
        g.eq("ib.mlx4_0.port.1.link_layer", "InfiniBand")
    with c.group(t, "NVMe 8086:0953 at 0000:00:02.0 with numa_node -1 (provenance caveat)") as g:
        g.eq("nvme.count", 1)
        n = nvme_index_by(t, "address", "0000:00:02.0")
        g.check(n is not None, "nvme.N.address", "'0000:00:02.0'", repr(indexed(t, "nvme", "address")))
        if n is not None:
            g.eq(f"nvme.{n}.numa_node", -1)
            g.absent(f"nvme.{n}.name", why="no /sys/class/nvme on this old kernel (FACTS.md)")
    with c.group(t, "display: the ASPEED BMC VGA 1a03:2000 (class 0x030000) is not a GPU (issue 13 item 9)") as g:
        g.eq("gpu.count", 0)
        g.eq("gpu.nvidia_count", 0)
        g.eq("gpu.excluded", "0000:05:00.0 (ASPEED BMC display)")
    with c.group(t, "accel: the Xeon Phi coprocessor 8086:225c (class 0x0b4000, the tree's 'mic') on node 1") as g:
        g.eq("accel.count", 1)
        g.eq("accel.0.address", "0000:83:00.0")
        g.eq("accel.0.vendor_id", "8086")
        g.eq("accel.0.device_id", "225c")
        g.eq("accel.0.class", "0b40")
        g.eq("accel.0.numa_node", 1)
    with c.group(t, "net: operstate per interface") as g:
        g.eq("net.eth0.operstate", "up")
        g.eq("net.eth1.operstate", "down")
        g.eq("net.ib0.operstate", "up")
        g.eq("net.count", 7)  # br0 eth0 eth0.1015 eth1 ib0 lo mic0
        g.not_value("net.br0.operstate", "br0 links into devices/virtual, not in the tarball")
    with c.group(t, "storage: no md RAID, /proc/mounts as captured") as g:
        g.zero_or_absent("md.count", "no /proc/mdstat, no md in sys/block")
        g.check(not keyed(t, "md"), "md.NAME.*", "no md arrays", sorted(keyed(t, "md")))
        nlines = len([l for l in t.read("proc/mounts").splitlines() if l.strip()])
        g.eq("mount.count", nlines)
    with c.group(t, "sysctl/kernel/swap: nothing in the tarball") as g:
        for n in t.names_under("sysctl."):
            if n == "sysctl.vm.nr_hugepages":
                # the second source: /proc/meminfo's HugePages_Total (docs/FACTS.md)
                m = re.search(r"^HugePages_Total:\s+(\d+)", t.read("proc/meminfo"), re.M)
                g.eq(n, int(m.group(1))) if m else g.absent(n, why="no /proc/sys, no HugePages_Total")
                continue
            g.absent(n, why="no /proc/sys in the tarball")
        g.absent("kernel.cmdline", why="no /proc/cmdline in the tarball")


def check_r910(c, t):
    """Dell R910: 4x E7-4870 (40 CPUs), 4 NUMA nodes, QLogic qib0 on node 2, all else numa_node -1."""
    with c.group(t, "cpu topology and model") as g:
        g.eq("cpu.count", 40)
        g.cpus("cpu.online", "0-39")
        g.eq("cpu.sockets", 4)
        g.eq("cpu.cores", 40)
        g.eq("cpu.threads_per_core", 1)
        g.eq("cpu.model", "Intel(R) Xeon(R) CPU E7- 4870  @ 2.40GHz")
    with c.group(t, "cpufreq: none in the tarball") as g:
        g.absent("cpu.cpufreq.driver", why="no cpuN/cpufreq directories")
        g.eq("cpu.cpufreq.policies", 0)
        g.check(not t.names_under("cpu.policy."), "cpu.policy.*", "no policies", t.names_under("cpu.policy.")[:4])
    with c.group(t, "NUMA: 4 nodes of 10 CPUs (interleaved)") as g:
        g.eq("numa.nodes", 4)
        g.eq("numa.cpu_nodes", 4)
        g.cpus("numa.node_list", "0-3")
        for node in range(4):
            g.cpus(f"numa.node.{node}.cpus", ",".join(str(x) for x in range(node, 40, 4)))
            g.eq(f"numa.node.{node}.kind", "cpu")
    with c.group(t, "memory: MemTotal 529428392 kB, no THP") as g:
        g.eq("mem.total", 529428392 * KIB)
        g.absent("thp.enabled", why="no transparent_hugepage in the tarball")
    with c.group(t, "InfiniBand qib0 (QLogic 1077:7322) port 1 ACTIVE 40 Gb/s QDR, sysfs numa_node 2") as g:
        g.eq("ib.count", 1)
        g.eq("ib.qib0.address", "0000:43:00.0")
        g.eq("ib.qib0.numa_node", 2)
        g.eq("ib.qib0.ports", 1)
        g.eq("ib.qib0.port.1.state", "ACTIVE")
        g.eq("ib.qib0.port.1.state_code", 4)
        g.eq("ib.qib0.port.1.phys_state", "LinkUp")
        g.eq("ib.qib0.port.1.rate", "40 Gb/sec (4X QDR)")
        g.eq("ib.qib0.port.1.rate_gbps", 40)
        g.eq("ib.qib0.port.1.link_layer", "InfiniBand")
    with c.group(t, "display: the Matrox G200eW BMC VGA 102b:0532 (class 0x030000) is not a GPU (issue 13 item 9)") as g:
        g.eq("gpu.count", 0)
        g.eq("gpu.nvidia_count", 0)
        g.eq("gpu.excluded", "0000:09:03.0 (Matrox BMC display)")
    with c.group(t, "no NVMe, net operstate") as g:
        g.eq("nvme.count", 0)
        g.eq("net.eth0.operstate", "up")
        for i in (1, 2, 3):
            g.eq(f"net.eth{i}.operstate", "down")
        g.eq("net.ib0.operstate", "up")
        g.eq("net.count", 6)  # eth0-3 ib0 lo
    with c.group(t, "storage: no md, /proc/mounts as captured") as g:
        nlines = len([l for l in t.read("proc/mounts").splitlines() if l.strip()])
        g.eq("mount.count", nlines)
        g.check(not keyed(t, "md"), "md.NAME.*", "no md arrays", sorted(keyed(t, "md")))


def check_power9(c, t):
    """IBM AC922: 2 POWER9 sockets (32 CPUs kept), CPU nodes 0 and 8, V100 memory nodes 250-255."""
    gpus = {}
    base = t.path("proc/driver/nvidia/gpus")
    for bdf in sorted(os.listdir(base)):
        m = re.search(r"Node:\s+(\d+)", t.read(f"proc/driver/nvidia/gpus/{bdf}/numa_status"))
        gpus[bdf] = int(m.group(1))
    with c.group(t, "cpu: 2 sockets (not 8 nodes), 32 CPUs kept, SMT4") as g:
        g.eq("cpu.sockets", 2)
        g.eq("cpu.count", 32)
        g.cpus("cpu.online", "0-15,88-103")
        g.eq("cpu.cores", 8)
        g.eq("cpu.threads_per_core", 4)
        g.eq("cpu.model", "POWER9, altivec supported")
    with c.group(t, "cpufreq absent: cpu0/cpufreq is a dangling link") as g:
        g.absent("cpu.cpufreq.driver", why="cpu0/cpufreq -> ../cpufreq/policy0 which is not in the tarball")
        g.eq("cpu.cpufreq.policies", 0)
    with c.group(t, "NUMA: 8 nodes, 2 with CPUs, 250-255 GPU memory") as g:
        g.eq("numa.nodes", 8)
        g.eq("numa.cpu_nodes", 2)
        g.cpus("numa.node_list", "0,8,250-255")
        g.eq("numa.node.0.kind", "cpu")
        g.eq("numa.node.8.kind", "cpu")
        g.cpus("numa.node.0.cpus", "0-87")
        g.cpus("numa.node.8.cpus", "88-175")
        g.check(sorted(gpus.values()) == list(range(250, 256)), "numa_status files", "nodes 250-255",
                sorted(gpus.values()))
        for node in range(250, 256):
            g.eq(f"numa.node.{node}.kind", "gpu-memory")
            g.eq(f"numa.node.{node}.mem_total", 15728640 * KIB)
    with c.group(t, "memory: MemTotal, /dev/shm size= option, no THP") as g:
        g.eq("mem.total", 358162944 * KIB)
        g.eq("mem.shm.size", 131895552 * KIB)
        g.absent("thp.enabled", why="no transparent_hugepage in the tarball")
    with c.group(t, "GPUs: 6 V100 (class 0x030000, dirs hold only class+local_cpus)") as g:
        g.eq("gpu.count", 6)
        g.eq("gpu.nvidia_count", 6)  # the NVIDIA driver lists all six in /proc/driver/nvidia/gpus
        byaddr = {v: n for n, v in indexed(t, "gpu", "address").items()}
        g.check(set(byaddr) == set(gpus), "gpu.N.address", sorted(gpus), sorted(byaddr))
        # hwloc's expected output (.console): three GPUs per package, package 0 = node 0, 1 = node 8
        packages = ({"0004:05:00.0", "0004:06:00.0", "0006:00:00.0"}, {"0007:00:00.0", "0035:04:00.0", "0035:05:00.0"})
        sockets = indexed(t, "gpu", "socket")
        for (group, node), index in zip(zip(packages, (0, 8)), (0, 1)):
            got = {sockets.get(byaddr.get(a)) for a in group}
            g.check(len(got) == 1 and None not in got, "gpu.N.socket", f"one socket for {sorted(group)}",
                    {a: sockets.get(byaddr.get(a)) for a in sorted(group)})
            for a in sorted(group):
                if a in byaddr:
                    n = byaddr[a]
                    g.eq(f"gpu.{n}.hwloc_numa_node", node)
                    g.eq(f"gpu.{n}.socket", index)  # package index in physical_package_id order (0, 8)
                    g.eq(f"gpu.{n}.vendor_id", "10de")  # vendor file trimmed; the NVIDIA driver lists it
                    g.not_value(f"gpu.{n}.device_id", "no device file in the trimmed tree")
                    g.not_value(f"gpu.{n}.numa_node", "no numa_node file in the trimmed tree")
                    want = cpumask(t.read(f"sys/bus/pci/devices/{a}/local_cpus"))
                    f = g.get(f"gpu.{n}.local_cpus")
                    g.check(f is not MISSING and f.get("status") == "ok" and cpuset(f["value"]) == want,
                            f"gpu.{n}.local_cpus", f"{sorted(want)[:3]}.. from the local_cpus mask", show(f))
        s0 = {sockets.get(byaddr.get(a)) for a in packages[0]}
        s1 = {sockets.get(byaddr.get(a)) for a in packages[1]}
        g.check(s0.isdisjoint(s1), "gpu.N.socket", "two different sockets", f"{s0} vs {s1}")
        g.eq("gpu.sockets_used", 2)
        g.eq("gpu.per_socket", "3,3")
        g.eq("gpu.balanced", True)
    with c.group(t, "kernel: cmdline and release from this tree") as g:
        g.eq("kernel.cmdline", "root=/dev/mapper/system-root ro crashkernel=auto rd.lvm.lv=system/root LANG=en_US.UTF-8")
        f = g.get("kernel.release")
        rel = "4.14.0-49.el7a.bz1553205.page_fault_hang.ppc64le"
        ok = f is not MISSING and ((f.get("status") == "ok" and f.get("value") == rel) or
                                   (f.get("status") == "absent" and f.get("reason")))
        g.check(ok, "kernel.release", f"{rel!r} (from /proc/version) or absent (no osrelease)", show(f))
    with c.group(t, "no IB, no NVMe, /proc/mounts as captured") as g:
        g.check(not keyed(t, "ib"), "ib.DEV.*", "no InfiniBand devices", sorted(keyed(t, "ib")))
        nlines = len([l for l in t.read("proc/mounts").splitlines() if l.strip()])
        g.eq("mount.count", nlines)


def check_node_exporter(c, t):
    """node_exporter composite: md RAID in sysfs + mdstat, zram swap, intel_pstate, mlx4_0 + i40iw0."""
    with c.group(t, "md (sysfs): levels, chunk sizes, disks") as g:
        sysfs = {  # name: (level, chunk_size, raid_disks, data_disks or None)
            "md0": ("raid0", 524288, 2, 2),
            "md1": ("raid1", 0, 2, 1),
            "md4": ("raid4", 524288, 3, 2),
            "md5": ("raid5", 524288, 3, 2),
            "md6": ("raid6", 524288, 4, 2),
            "md10": ("raid10", 524288, 4, 2),  # FACTS.md: raid10 n/2, raid1 1
        }
        for name, (level, chunk, disks, data) in sysfs.items():
            g.eq(f"md.{name}.level", level)
            g.eq(f"md.{name}.chunk_size", chunk)
            g.eq(f"md.{name}.raid_disks", disks)
            if data is not None:
                g.eq(f"md.{name}.data_disks", data)
        for name, state in (("md0", "clean"), ("md1", "clean"), ("md5", "clean"), ("md6", "active")):
            g.eq(f"md.{name}.state", state)  # array_state
        m = g.get("md.md0.members")
        g.check(m is not MISSING and m.get("status") == "ok" and "sdg" in str(m.get("value")) and
                "sdh" in str(m.get("value")), "md.md0.members", "names sdg and sdh (dev-sdg, dev-sdh)", show(m))
    check_mdstat_only(c, t)
    with c.group(t, "swap: /dev/zram0 active, SwapTotal from meminfo") as g:
        g.eq("swap.active.count", 1)
        g.eq("swap.active.0.path", "/dev/zram0")
        g.eq("swap.active.0.type", "partition")
        g.eq("swap.active.0.size", 8388604 * KIB)
        g.eq("swap.active.0.used", 76 * KIB)
        g.eq("swap.active.0.priority", 100)
        f = g.get("swap.zram.active")
        ok = f is not MISSING and f.get("status") == "ok" and (f.get("value") is True or
                                                               (as_number(f.get("value")) or 0) >= 1)
        g.check(ok, "swap.zram.active", ">= 1 (or true)", show(f))
        g.eq("swap.total", 4194300 * KIB)
    with c.group(t, "cpufreq intel_pstate/powersave on cpu0-3") as g:
        g.eq("cpu.cpufreq.driver", "intel_pstate")
        govs = sorted(n for n in t.facts if re.fullmatch(r"cpu\.policy\.\d+\.governor", n))
        g.check(len(govs) == 4, "cpu.policy.*.governor", "4 policies", f"{len(govs)}: {govs}")
        for n in govs:
            g.eq(n, "powersave")
        for n in sorted(x for x in t.facts if re.fullmatch(r"cpu\.policy\.\d+\.available_governors", x)):
            g.eq(n, "performance powersave")
        g.eq("cpu.count", 4)
        g.eq("cpu.sockets", 2)
        g.eq("cpu.model", "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz")
    with c.group(t, "InfiniBand mlx4_0 (2 ports) and i40iw0, all ACTIVE") as g:
        g.eq("ib.count", 2)
        g.eq("ib.mlx4_0.ports", 2)
        for p in (1, 2):
            g.eq(f"ib.mlx4_0.port.{p}.state", "ACTIVE")
            g.eq(f"ib.mlx4_0.port.{p}.state_code", 4)
            g.eq(f"ib.mlx4_0.port.{p}.phys_state", "LinkUp")
            g.eq(f"ib.mlx4_0.port.{p}.rate", "40 Gb/sec (4X QDR)")
            g.eq(f"ib.mlx4_0.port.{p}.rate_gbps", 40)
            g.eq(f"ib.mlx4_0.port.{p}.link_layer", "InfiniBand")
        g.eq("ib.i40iw0.ports", 1)
        g.eq("ib.i40iw0.port.1.state", "ACTIVE")
        g.eq("ib.i40iw0.port.1.rate", "10 Gb/sec (4X)")
        g.eq("ib.i40iw0.port.1.rate_gbps", 10)
        g.not_value("ib.mlx4_0.numa_node", "no device link under mlx4_0")
    with c.group(t, "NUMA: 3 nodes, node2 without CPUs") as g:
        g.eq("numa.nodes", 3)
        g.eq("numa.cpu_nodes", 2)
        g.cpus("numa.node.0.cpus", "0-1")
        g.cpus("numa.node.1.cpus", "2-3")
        g.eq("numa.node.2.kind", "memory-only")
        g.eq("mem.total", 3742148 * KIB)
    with c.group(t, "NVMe, net, no GPU, no THP") as g:
        g.eq("nvme.count", 1)
        g.eq("nvme.0.name", "nvme0")
        g.eq("net.count", 4)  # bond0 dmz eth0 int; bonding_masters is a file, not an interface
        bm = t.names_under("net.bonding_masters.")
        g.check(not bm, "net.bonding_masters.*", "none (bonding driver's control file, not an interface)", bm)
        for ifname in ("bond0", "dmz", "eth0", "int"):
            g.eq(f"net.{ifname}.operstate", "up")
        g.eq("gpu.nvidia_count", 0)
        g.absent("thp.enabled", why="no transparent_hugepage in the fixture")


def check_mdstat_only(c, t):
    """Arrays that only /proc/mdstat knows (both composites share this mdstat)."""
    text = t.read("proc/mdstat")
    sysfs = {n for n in os.listdir(t.path("sys/block")) if n.startswith("md")}
    with c.group(t, "md (/proc/mdstat only): levels and chunk sizes, every array counted") as g:
        only = {  # name: (level, chunk_size bytes)
            "md3": ("raid6", 64 * KIB),
            "md12": ("raid0", 512 * KIB),
            "md126": ("raid0", 128 * KIB),
            "md00": ("raid0", 256 * KIB),
            "md101": ("raid0", 512 * KIB),
            "md127": ("raid1", None),
            "md120": ("linear", None),
        }
        for name, (level, chunk) in only.items():
            g.eq(f"md.{name}.level", level)
            if chunk is not None:
                g.eq(f"md.{name}.chunk_size", chunk)
        # an array in either list is an array of this machine
        g.eq("md.count", len(mdstat_names(text) | sysfs))


def check_procfs(c, t):
    """prometheus/procfs composite: vm sysctls, dm-2 swap, hfi1/mlx4/mlx5, md with reshape/container."""
    with c.group(t, "sysctl vm.* as in /proc/sys/vm") as g:
        g.eq("sysctl.vm.swappiness", 60)
        g.eq("sysctl.vm.overcommit_memory", 0)
        g.eq("sysctl.vm.zone_reclaim_mode", 0)
        g.eq("sysctl.vm.nr_hugepages", 0)
        g.eq("sysctl.vm.min_free_kbytes", 67584)
        g.eq("sysctl.vm.max_map_count", 65530)
        extra = t.lookup(["sysctl.vm.dirty_ratio", "sysctl.vm.vfs_cache_pressure", "sysctl.vm.no_such_knob"])
        g.eq("sysctl.vm.dirty_ratio", int(t.read("proc/sys/vm/dirty_ratio")), facts=extra)
        g.eq("sysctl.vm.vfs_cache_pressure", int(t.read("proc/sys/vm/vfs_cache_pressure")), facts=extra)
        g.absent("sysctl.vm.no_such_knob", facts=extra)
        g.absent("sysctl.kernel.shmmax", why="no proc/sys/kernel/shmmax in the fixture")
    with c.group(t, "InfiniBand hfi1_0 100G EDR, mlx4_0 2x40G QDR, mlx5_0 25G 1X EDR") as g:
        g.eq("ib.count", 3)
        g.eq("ib.hfi1_0.port.1.state", "ACTIVE")
        g.eq("ib.hfi1_0.port.1.rate", "100 Gb/sec (4X EDR)")
        g.eq("ib.hfi1_0.port.1.rate_gbps", 100)
        g.eq("ib.mlx4_0.ports", 2)
        for p in (1, 2):
            g.eq(f"ib.mlx4_0.port.{p}.state", "ACTIVE")
            g.eq(f"ib.mlx4_0.port.{p}.rate_gbps", 40)
        g.eq("ib.mlx5_0.port.1.state", "ACTIVE")
        g.eq("ib.mlx5_0.port.1.rate", "25 Gb/sec (1X EDR)")
        g.eq("ib.mlx5_0.port.1.rate_gbps", 25)
        g.eq("ib.mlx5_0.port.1.link_layer", "InfiniBand")
    with c.group(t, "swap: /dev/dm-2 partition") as g:
        g.eq("swap.active.count", 1)
        g.eq("swap.active.0.path", "/dev/dm-2")
        g.eq("swap.active.0.type", "partition")
        g.eq("swap.active.0.size", 131068 * KIB)
        g.eq("swap.active.0.used", 176 * KIB)
        g.eq("swap.active.0.priority", -2)
    with c.group(t, "md (sysfs): reshape raid5, container, raid levels") as g:
        for name, level in (("md0", "raid0"), ("md1", "raid1"), ("md4", "raid4"), ("md5", "raid5"),
                            ("md6", "raid6"), ("md10", "raid10"), ("md7", "container"), ("md8", "raid5")):
            g.eq(f"md.{name}.level", level)
        g.eq("md.md0.chunk_size", 524288)
        g.eq("md.md8.chunk_size", 524288)
        g.eq("md.md1.chunk_size", 0)
        # md.c raid_disks_show() prints "%d (%d)" (new, old) during a reshape: the array has 11 now
        g.eq("md.md8.raid_disks", 11)
        g.eq("md.md8.state", "active")
        g.eq("md.md7.state", "inactive")
    check_mdstat_only(c, t)
    with c.group(t, "cpu, kernel cmdline, memory, no NVIDIA GPU, no THP") as g:
        g.eq("cpu.cpufreq.driver", "intel_pstate")
        g.eq("cpu.policy.0.governor", "powersave")
        g.eq("cpu.model", "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz")
        g.eq("kernel.cmdline", "BOOT_IMAGE=/vmlinuz-5.11.0-22-generic root=UUID=456a0345-450d-4f7b-b7c9-43e3241d99ad "
                               "ro quiet splash vt.handoff=7")
        g.eq("mem.total", 15666184 * KIB)
        g.eq("gpu.nvidia_count", 0)  # card0 is an AMD 1002:687f
        g.absent("thp.enabled", why="no transparent_hugepage in the fixture")
        g.eq("nvme.count", 1)
        g.eq("net.eth0.operstate", "up")


# --------------------------------------------------------------------------- leaks from the build host

def check_no_leak(c, t, host):
    """Nothing in a foreign tree's facts may come from the machine running the test."""
    with c.group(t, "no build-host leak (cpu.model, kernel, modules, sysctl, names)") as g:
        f = g.get("cpu.model")
        if host["model"] and f is not MISSING and f.get("status") == "ok":
            g.check(f["value"] != host["model"], "cpu.model", f"not the host's {host['model']!r}", show(f))
            m = re.search(r"^(?:model name|cpu|Processor)\s*:\s*(.*)$", t.read("proc/cpuinfo"), re.M)
            g.check(m and f["value"] == m.group(1).strip(), "cpu.model", "the tree's cpuinfo", show(f))
        f = g.get("kernel.release")
        g.check(f is MISSING or f.get("status") != "ok" or f.get("value") != host["release"],
                "kernel.release", f"not the host's {host['release']!r}", show(f))
        if not os.path.exists(t.path("proc/sys/kernel/osrelease")) and not os.path.exists(t.path("proc/version")):
            g.not_value("kernel.release", "no osrelease or /proc/version in the tree")
        f = g.get("kernel.cmdline")
        g.check(f is MISSING or f.get("status") != "ok" or f.get("value") != host["cmdline"],
                "kernel.cmdline", "not the host's /proc/cmdline", show(f))
        # no tree carries /proc/modules or /sys/module: nothing may be reported loaded
        g.check(not os.path.exists(t.path("proc/modules")), "<tree>", "no proc/modules", "present")
        g.not_value("module.loaded", "no /proc/modules in the tree")
        names = list(dict.fromkeys(host["modules"][:8] + ["nvidia", "nouveau", "ib_core", "nvidia_peermem"]))
        asked = t.lookup([f"module.{m}.loaded" for m in names])
        for m in names:
            v = asked.get(f"module.{m}.loaded", MISSING)
            g.check(v is MISSING or v.get("status") != "ok" or v.get("value") is not True,
                    f"module.{m}.loaded", "not true (the tree has no module list)", show(v))
        leaked = [n for n in t.names_under("module.") if t.facts[n].get("status") == "ok" and
                  t.facts[n].get("value") not in (False, "", 0)]
        g.check(not leaked, "module.*", "no module facts with values", leaked[:5])
        # modprobe.d: the tree has none, so this machine's options/blacklist must not show up
        if not any(os.path.isdir(t.path(d)) for d in ("etc/modprobe.d", "lib/modprobe.d", "usr/lib/modprobe.d",
                                                        "run/modprobe.d", "usr/local/lib/modprobe.d")):
            mods = sorted(host["modprobe_options"])[:6]
            asked = t.lookup([f"modprobe.{m}.options" for m in mods] + ["modprobe.blacklist"] +
                             [f"modprobe.{m}.blacklisted" for m in host["modprobe_blacklist"][:6]])
            for m in mods:
                v = asked.get(f"modprobe.{m}.options", MISSING)
                g.check(v is MISSING or v.get("status") != "ok" or v.get("value") in ("", None),
                        f"modprobe.{m}.options", f"no options (host has {host['modprobe_options'][m]!r})", show(v))
            for m in host["modprobe_blacklist"][:6]:
                v = asked.get(f"modprobe.{m}.blacklisted", MISSING)
                g.check(v is MISSING or v.get("status") != "ok" or v.get("value") is not True,
                        f"modprobe.{m}.blacklisted", "not true (blacklisted only on this host)", show(v))
            v = asked.get("modprobe.blacklist", MISSING)
            g.check(v is MISSING or v.get("status") != "ok" or not v.get("value"),
                    "modprobe.blacklist", "empty (no modprobe.d in the tree)", show(v))
        if not os.path.exists(t.path("proc/driver/nvidia/version")):
            g.absent("nvidia.driver.version", why="no /proc/driver/nvidia/version in the tree")
        if not os.path.exists(t.path("etc/fstab")):
            g.zero_or_absent("swap.fstab.count", "no etc/fstab in the tree")
        # sysctls: only what proc/sys in the tree holds
        if not os.path.isdir(t.path("proc/sys")):
            asked = t.lookup(["sysctl.vm.swappiness", "sysctl.vm.min_free_kbytes", "sysctl.kernel.osrelease"])
            for n in ("sysctl.vm.swappiness", "sysctl.vm.min_free_kbytes", "sysctl.kernel.osrelease"):
                g.absent(n, facts=asked, why="no proc/sys in the tree")
        else:
            v = g.get("sysctl.vm.min_free_kbytes")
            want = t.read("proc/sys/vm/min_free_kbytes").strip()
            g.check(v is not MISSING and v.get("status") == "ok" and str(v.get("value")) == want,
                    "sysctl.vm.min_free_kbytes", f"{want} from the tree (host: {host['min_free_kbytes']})", show(v))
        # THP: the host has it (usually), no tree does
        g.absent("thp.enabled", why="no sys/kernel/mm/transparent_hugepage in the tree")
        m = re.search(r"^SwapTotal:\s+(\d+) kB", t.read("proc/meminfo"), re.M)
        g.eq("swap.total", int(m.group(1)) * KIB)
        # swap devices only from the tree's /proc/swaps
        tree_swaps = []
        if os.path.exists(t.path("proc/swaps")):
            tree_swaps = [l.split()[0] for l in t.read("proc/swaps").splitlines()[1:] if l.strip()]
        paths = [v for n, v in indexed(t, "swap.active", "path").items()]
        g.check(set(paths) == set(tree_swaps), "swap.active.N.path", sorted(tree_swaps),
                f"{sorted(paths)} (host swaps: {host['swaps']})")
        # every named thing must exist in the tree
        tree_net = set(os.listdir(t.path("sys/class/net"))) if os.path.isdir(t.path("sys/class/net")) else set()
        extra = keyed(t, "net") - tree_net
        g.check(not extra, "net.IF.*", f"interfaces of the tree {sorted(tree_net)}",
                f"extra {sorted(extra)} (host has {sorted(host['net'])})")
        ibdir = t.path("sys/class/infiniband")
        tree_ib = set(os.listdir(ibdir)) if os.path.isdir(ibdir) else set()
        g.check(keyed(t, "ib") <= tree_ib, "ib.DEV.*", f"devices of the tree {sorted(tree_ib)}",
                sorted(keyed(t, "ib") - tree_ib))
        pcidir = t.path("sys/bus/pci/devices")
        tree_pci = set(os.listdir(pcidir)) if os.path.isdir(pcidir) else set()
        for kind in ("gpu", "nvme", "nvswitch"):
            addrs = set(indexed(t, kind, "address").values())
            g.check(addrs <= tree_pci, f"{kind}.N.address", "PCI functions of the tree",
                    f"not in the tree: {sorted(addrs - tree_pci)}")
        nodedir = t.path("sys/devices/system/node")
        tree_nodes = {int(n[4:]) for n in os.listdir(nodedir) if re.fullmatch(r"node\d+", n)} \
            if os.path.isdir(nodedir) else set()
        fact_nodes = {int(m.group(1)) for n in t.facts for m in [re.match(r"numa\.node\.(\d+)\.", n)] if m}
        g.check(fact_nodes == tree_nodes, "numa.node.N.*", sorted(tree_nodes), sorted(fact_nodes))
        md_tree = set()
        if os.path.isdir(t.path("sys/block")):
            md_tree |= {n for n in os.listdir(t.path("sys/block")) if n.startswith("md")}
        if os.path.exists(t.path("proc/mdstat")):
            md_tree |= mdstat_names(t.read("proc/mdstat"))
        g.check(keyed(t, "md") <= md_tree, "md.NAME.*", f"arrays of the tree {sorted(md_tree)}",
                sorted(keyed(t, "md") - md_tree))
        if not os.path.exists(t.path("proc/mounts")):
            # this machine has plenty of mounts: none of them may appear
            g.zero_or_absent("mount.count", "no proc/mounts in the tree")
            g.not_value("mem.shm.size", "no proc/mounts in the tree")
        else:
            targets = {l.split()[1] for l in t.read("proc/mounts").splitlines() if len(l.split()) > 2}
            got = set(indexed(t, "mount", "target").values())
            g.check(got <= {mounts_unescape(x) for x in targets} | targets, "mount.N.target",
                    "mount points of the tree's /proc/mounts", sorted(got - targets)[:5])


def mounts_unescape(s):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def check_all_facts_sane(c, t):
    """Every fact has a known status; absent/unreadable ones carry a reason (no silent blanks)."""
    with c.group(t, "llmtune ran; every fact is ok/absent/unreadable with a reason") as g:
        g.check(t.error is None, "<llmtune facts --json>", "exit 0 and JSON", t.error)
        bad = [n for n, f in t.facts.items() if f.get("status") not in ("ok", "absent", "unreadable") or
               (f.get("status") != "ok" and not f.get("reason"))]
        g.check(not bad, "<every fact>", "status and reason", bad[:5])
        g.check(len(t.facts) > 20, "<fact count>", "> 20 facts", len(t.facts))
    # Real machines' files read cleanly: nothing in the corpus is unreadable (issue 13), and an
    # absent fact whose reason says "no /PATH" is absent because that path is really not there.
    with c.group(t, "no fact unreadable; every 'no /PATH' reason names a missing path") as g:
        # procfs's fixture holds an md7 whose sysfs raid_disks file is empty on purpose: unreadable
        known = {"procfs": {"md.md7.raid_disks", "md.md7.data_disks"}}.get(t.name, set())
        unreadable = sorted(n for n, f in t.facts.items() if f.get("status") == "unreadable" and n not in known)
        g.check(not unreadable, "<every fact>", "no unreadable fact",
                [f"{n}: {t.facts[n].get('reason')}" for n in unreadable[:5]])
        wrong = []
        for n, f in t.facts.items():
            if f.get("status") != "absent":
                continue
            for m in re.finditer(r"\bno (/[A-Za-z0-9_./-]+)", f.get("reason", "")):
                path = m.group(1).rstrip(".")
                if os.path.lexists(t.path(path.lstrip("/"))):
                    wrong.append(f"{n}: says no {path}, which exists")
        g.check(not wrong, "<absent reasons>", "paths really missing", wrong[:5])


# --------------------------------------------------------------------------- main

def main(argv):
    if len(argv) != 3:
        print("usage: test_corpus.py LLMTUNE_EXE CORPUS_DIR", file=sys.stderr)
        return 2
    exe, corpus = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    require = os.environ.get("LLMTUNE_REQUIRE_CORPUS") == "1"
    if not os.path.isdir(corpus):
        if require:
            print(f"FAIL: corpus not found at {corpus} and LLMTUNE_REQUIRE_CORPUS=1", flush=True)
            return 1
        print(f"SKIP: real-machine corpus not found at {corpus} (a checkout without ../shared); "
              "set LLMTUNE_REQUIRE_CORPUS=1 to make this a failure", flush=True)
        return SKIP
    if not os.access(exe, os.X_OK):
        print(f"FAIL: llmtune executable {exe} is missing", flush=True)
        return 1

    c = Checker()
    host = host_values()
    check_host_baseline(c, exe, host)
    with tempfile.TemporaryDirectory(prefix="llmtune-corpus-") as tmp:
        try:
            roots = unpack_all(corpus, tmp)
        except (OSError, UnsafeArchive, ttar.TtarError, tarfile.TarError) as e:
            # the corpus folder exists but is incomplete or unsafe: that is a failure, never a skip
            print(f"FAIL: cannot unpack the corpus: {e}", flush=True)
            return 1
        checks = {
            "32em64t": check_32em64t,
            "r910": check_r910,
            "power9": check_power9,
            "node_exporter": check_node_exporter,
            "procfs": check_procfs,
        }
        for name, fn in checks.items():
            t = Tree(name, roots[name], exe)
            check_all_facts_sane(c, t)
            if t.error:
                continue
            fn(c, t)
            check_no_leak(c, t, host)

    print(f"\n{c.groups} groups, {c.checks} checks, {len(c.failures)} failed", flush=True)
    if c.failures:
        print("FAILURES:")
        for f in c.failures:
            print(f"  {f}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
