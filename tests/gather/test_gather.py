#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""llmtune gather and archive roots, end to end (docs/GATHER.md).

  roundtrip      for every fixture root: `gather --root DIR`, then audit --json and facts --json
                 of the archive equal those of the tree apart from the "root" field
  manifest       MANIFEST fields; every file member's size and SHA-256 match it; the /sys device
                 links are stored as links; a listed directory keeps its entries
  exclude        --exclude leaves a path out and the MANIFEST says why
  deny           /etc/nccl.conf -> /etc/shadow: the secret never enters the archive (deny list),
                 while ~/.nccl.conf does and the rest of /home does not
  readonly       apply and rollback refuse an archive root; plan and apply --dry-run work
  anonymize      --anonymize: no MAC, GUID, serial or host name of the tree is left in any member,
                 the same MAC maps to the same fake, and the audit is unchanged apart from "host"
  anonymize-scan every fixture root, one with the corpus's nvidia-smi capture and kernel log, and this
                 machine: each identifier the source held (serials, UUIDs, board ids, MACs in
                 any form, IPv4/IPv6 addresses, host names), found independently in a plain
                 gather, is in no member's content, name or link target of the anonymized one;
                 the audits are equal; dpkg's status and /proc/kallsyms hold only what is read
  unlisted       a directory gather cannot list (0000, gathered as nobody) is in the MANIFEST as
                 "unlisted" with its errno, and the archive's facts built on it are unreadable
  mode           the archive has the umask's mode, and 0600 when it holds a file that not every
                 user could read (an /etc/fstab of mode 0600)
  cleanup        SIGINT, SIGTERM, SIGHUP during an archive audit remove its private copy; a copy
                 left by a process that is gone is removed by the next run (only our naming, our
                 PID namespace and user, never through a link)
  kernel-links   a tree with the links the kernel makes in /proc (XFS's absolute /proc/fs/xfs/stat ->
                 /sys/fs/xfs/stats/stats, /proc/self, /proc/mounts -> self/mounts): gather keeps
                 hwloc's topology, stores the links as links, and the archive audits like the tree
  live           on this machine: gather, then the audit of the archive equals the live audit, and
                 every fact that did not change between two live runs is equal (facts the live
                 system takes from syscalls - getifaddrs, statvfs - are compared by status only)

Usage: test_gather.py LLMTUNE ROOTS_DIR [CASE...]
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import hashlib
import re
import signal
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, finish  # noqa: E402  (tests/lib/checklib.py)

LLMTUNE, ROOTS = sys.argv[1], sys.argv[2]
ONLY = sys.argv[3:]
FIXTURES = ["dgx-a100", "hgx-h100", "ws-4090", "vm-nogpu"]
# openat2(RESOLVE_IN_ROOT) may fail with EAGAIN while anything on the machine renames files; until
# the root handle retries (issue 14), the comparisons read through the fallback walk so that a
# transient error in one of the two runs cannot make them differ.
ENV = dict(os.environ, LLMTUNE_NO_OPENAT2="1", NO_COLOR="1")


def run(*args, rc=None):
    p = subprocess.run([LLMTUNE, *args], capture_output=True, text=True, env=ENV, timeout=120)
    if rc is not None and p.returncode not in (rc if isinstance(rc, tuple) else (rc,)):
        raise AssertionError(f"llmtune {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p


def without_root(out):
    d = json.loads(out)
    d.pop("root", None)
    d.pop("time", None)  # audit JSON's run time (issue 16 item 8): differs between any two runs
    for r in d.get("results", []):
        r.pop("ms", None)  # each rule's own time (issue 31 item 10): likewise
    return d


def manifest(path):
    with tarfile.open(path) as t:
        return json.load(t.extractfile("MANIFEST"))


def case_roundtrip(tmp):
    for name in FIXTURES:
        arch = os.path.join(tmp, name + ".tar.gz")
        run("--root", os.path.join(ROOTS, name), "gather", "-o", arch, rc=0)
        for cmd in (["audit", "--json"], ["facts", "--json"]):
            tree = run("--root", os.path.join(ROOTS, name), *cmd, rc=(0, 2))
            got = run("--root", arch, *cmd, rc=(0, 2))
            check(tree.returncode == got.returncode, f"{name} {cmd[0]}: exit {got.returncode} != {tree.returncode}")
            a, b = without_root(tree.stdout), without_root(got.stdout)
            if a != b:
                diff = [k for k in a.get("facts", {}) if a["facts"][k] != b.get("facts", {}).get(k)]
                check(False, f"{name} {cmd[0]}: archive differs from tree ({diff[:5] or 'results'})")
            else:
                n = len(a.get("facts", a.get("results", [])))
                print(f"ok {name} {cmd[0]}: {n} {'facts' if 'facts' in a else 'results'} equal")
        # the archive root names the archive
        check(json.loads(got.stdout)["root"] == arch, f"{name}: root field is not the archive path")


def case_manifest(tmp):
    arch = os.path.join(tmp, "m.tar.gz")
    run("--root", os.path.join(ROOTS, "dgx-a100"), "gather", "-o", arch, rc=0)
    m = manifest(arch)
    for k in ("host", "time", "version", "kernel", "command_line", "files", "left_out"):
        check(k in m, f"MANIFEST lacks {k}")
    check(m["host"] == "dgx-a100", f"host {m['host']}")
    check(m["kernel"].startswith("5.15"), f"kernel {m['kernel']}")
    check(m["command_line"][:2] == ["llmtune", "--root"] and "gather" in m["command_line"], f"{m['command_line']}")
    check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", m["time"]) is not None, f"time {m['time']}")
    byp = {f["path"]: f for f in m["files"]}
    with tarfile.open(arch) as t:
        names = t.getnames()
        check(names[0] == "MANIFEST", "MANIFEST is not the first member")
        nfiles = 0
        for mem in t.getmembers():
            if not mem.name.startswith("root/"):
                continue
            rel = mem.name[5:].rstrip("/")
            f = byp.get(rel)
            check(f is not None, f"{rel} not in MANIFEST")
            if f and f["type"] == "file":
                data = t.extractfile(mem).read()
                check(len(data) == f["size"] and hashlib.sha256(data).hexdigest() == f["sha256"],
                      f"{rel}: size/sha256 differ from MANIFEST")
                nfiles += 1
        check(nfiles == sum(1 for f in m["files"] if f["type"] == "file"), "file count")
        dev = t.getmember("root/sys/bus/pci/devices/0000:07:00.0")
        check(dev.issym() and "devices/pci" in dev.linkname, "PCI device link not stored as a link")
        real = "root/sys/devices/" + dev.linkname.split("devices/", 1)[1] + "/config"
        check(real in names, f"the device's config is not at its real path {real}")
        # /sys/bus/pci/devices was listed: every device is there, as a link
        listed = [n for n in names if n.startswith("root/sys/bus/pci/devices/") and n.count("/") == 5]
        tree = os.listdir(os.path.join(ROOTS, "dgx-a100", "sys/bus/pci/devices"))
        check(len(listed) == len(tree), f"listed dir has {len(listed)} of {len(tree)} entries")
        # a file nothing read is a name only, and the archive root refuses to make it up
        unread = [f for f in m["files"] if f["type"] == "unread"]
        print(f"ok manifest: {nfiles} files, {len(unread)} names only, {len(m['left_out'])} left out")
    if unread:
        p = run("--root", arch, "facts", "--json", rc=(0, 2))  # sanity: the archive opens


def case_exclude(tmp):
    arch = os.path.join(tmp, "x.tar.gz")
    run("--root", os.path.join(ROOTS, "dgx-a100"), "gather", "--exclude", "/etc/nccl.conf", "-o", arch, rc=0)
    m = manifest(arch)
    check(not any(f["path"] == "etc/nccl.conf" for f in m["files"]), "excluded file gathered")
    check({"path": "/etc/nccl.conf", "why": "--exclude /etc/nccl.conf"} in m["left_out"], f"left_out {m['left_out']}")
    facts = json.loads(run("--root", arch, "facts", "--json", "nccl.conf.present").stdout)["facts"]
    check(facts["nccl.conf.present"].get("value") is False, f"{facts}")
    print("ok exclude")


def case_deny(tmp):
    root = os.path.join(tmp, "deny-root")
    shutil.copytree(os.path.join(ROOTS, "vm-nogpu"), root, symlinks=True)
    secret = "root:$6$SECRET-HASH-THAT-MUST-NOT-LEAVE:19000:0:99999:7:::\n"
    with open(os.path.join(root, "etc/shadow"), "w") as f:
        f.write(secret)
    p = os.path.join(root, "etc/nccl.conf")
    if os.path.lexists(p):
        os.unlink(p)
    os.symlink("/etc/shadow", p)  # a path llmtune reads, pointing at a secret
    for home in ("home/alice", "root"):
        os.makedirs(os.path.join(root, home, ".ssh"), exist_ok=True)
        with open(os.path.join(root, home, ".nccl.conf"), "w") as f:
            f.write("NCCL_DEBUG=WARN\n")
        with open(os.path.join(root, home, ".ssh/id_rsa"), "w") as f:
            f.write("PRIVATE KEY MUST NOT LEAVE\n")
    arch = os.path.join(tmp, "deny.tar.gz")
    run("--root", root, "gather", "-o", arch, rc=0)
    m = manifest(arch)
    with tarfile.open(arch) as t:
        blob = b"".join(t.extractfile(x).read() for x in t.getmembers() if x.isfile())
        names = t.getnames()
    check(b"SECRET-HASH" not in blob and b"PRIVATE KEY" not in blob, "a secret entered the archive")
    check("root/etc/shadow" not in names, "etc/shadow in archive")
    check(any(l["path"] == "/etc/shadow" and "deny list" in l["why"] for l in m["left_out"]), f"{m['left_out']}")
    paths = {f["path"] for f in m["files"]}
    check("etc/nccl.conf" in paths, "the link itself is evidence and is kept")
    check("home/alice/.nccl.conf" in paths or "root/.nccl.conf" in paths, f"no .nccl.conf gathered: {sorted(p for p in paths if 'nccl' in p)}")
    check(not any(p.startswith(("home/alice/.ssh", "root/.ssh")) for p in paths), "ssh dir gathered")
    # the archive's audit reads the link and finds nothing behind it: unreadable, not empty
    fa = json.loads(run("--root", arch, "facts", "--json", "nccl.conf.present").stdout)["facts"]
    check(fa["nccl.conf.present"]["status"] != "ok" or fa["nccl.conf.present"]["value"] is False, f"{fa}")
    print("ok deny:", [l for l in m["left_out"] if "shadow" in l["path"]])


def case_readonly(tmp):
    arch = os.path.join(tmp, "ro.tar.gz")
    run("--root", os.path.join(ROOTS, "dgx-a100"), "gather", "-o", arch, rc=0)
    for cmd in (["apply"], ["rollback", "--all"]):
        p = run("--root", arch, *cmd)
        check(p.returncode == 1 and "gathered archive, which is read-only" in p.stderr,
              f"{cmd}: exit {p.returncode}: {p.stderr.strip()}")
    run("--root", arch, "plan", rc=(0, 2))
    run("--root", arch, "apply", "--dry-run", rc=(0, 2))
    print("ok readonly")


MAC = re.compile(r"\b[0-9a-f]{2}(?::[0-9a-f]{2}){5}\b")
GUID = re.compile(r"\b[0-9a-f]{4}(?::[0-9a-f]{4}){3}\b")


def case_anonymize(tmp):
    name = "hgx-h100"
    plain, anon = os.path.join(tmp, "p.tar.gz"), os.path.join(tmp, "a.tar.gz")
    run("--root", os.path.join(ROOTS, name), "gather", "-o", plain, rc=0)
    run("--root", os.path.join(ROOTS, name), "gather", "--anonymize", "-o", anon, rc=0)
    secrets = set()
    with tarfile.open(plain) as t:
        for x in t.getmembers():
            if not x.isfile() or x.name == "MANIFEST":
                continue
            text = t.extractfile(x).read().decode("latin-1")
            secrets |= {m for m in MAC.findall(text) if m not in ("00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff")}
            if "guid" in x.name:
                secrets |= set(GUID.findall(text))
            if "serial" in x.name:
                secrets.add(text.strip())
    check(len(secrets) >= 1, f"too few identifying values in {name} to test: {secrets}")
    with tarfile.open(anon) as t:
        blob = "".join(t.extractfile(x).read().decode("latin-1") for x in t.getmembers() if x.isfile())
        hostname = t.extractfile("root/etc/hostname").read().decode()
    left = [s for s in secrets if s in blob]
    check(not left, f"identifying values left: {left[:5]}")
    check(name not in blob, "host name left in the anonymized archive")
    check(re.fullmatch(r"host-[0-9a-f]{8}\n", hostname) is not None, f"hostname {hostname!r}")
    # consistency: a node GUID also appears inside the port GIDs; it must map the same way
    a = without_root(run("--root", plain, "audit", "--json", rc=(0, 2)).stdout)
    b = without_root(run("--root", anon, "audit", "--json", rc=(0, 2)).stdout)
    check(b["host"].startswith("host-"), f"host {b['host']}")
    a.pop("host"), b.pop("host")
    check(a == b, "the audit of the anonymized archive differs")
    print(f"ok anonymize: {len(secrets)} identifying values replaced, audit unchanged")


CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "corpus", "nvidia-smi")
UUID = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9a-fA-F])")
MAC_ANY = re.compile(r"(?<![0-9a-fA-F:-])[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(?:\1[0-9a-fA-F]{2}){4}(?![0-9a-fA-F:-])")
# What a UUID-shaped value says without naming anything: GPT partition types, the nil UUID.
NOT_IDS = {"0657fd6d-a4ab-43c4-84e5-0933c84b4f4f", "c12a7328-f81f-11d2-ba4b-00a0c93ec93b",
           "0fc63daf-8483-4772-8e79-3d69d8477de4", "00000000-0000-0000-0000-000000000000"}
HOST_FILES = ("etc/hostname", "etc/hosts", "etc/mailname", "proc/sys/kernel/hostname", "var/lib/llmtune/captures/",
              "var/log/")


def member_text(v):
    return v[1].decode("latin-1") if v[0] == "file" else v[1]


def members(path):
    """name -> (kind, bytes or link target) of every member of an archive."""
    out = {}
    with tarfile.open(path) as t:
        for x in t.getmembers():
            out[x.name] = ("link", x.linkname) if x.issym() else ("file", t.extractfile(x).read()) if x.isfile() \
                else ("dir", "")
    return out


def mac_forms(mac):
    """A MAC as it may be written anywhere: colon or dash, either case, bare, and inside an
    EUI-64 interface identifier (RFC 4291 appendix A: the U/L bit inverted, ff:fe in the middle)."""
    b = bytes.fromhex(mac.replace(":", "").replace("-", ""))
    e = bytes([b[0] ^ 2]) + b[1:3] + b"\xff\xfe" + b[3:]
    return {mac.lower().replace("-", ":"), mac.lower().replace(":", "-"), b.hex(), e.hex(),
            ":".join(e[i:i + 2].hex() for i in range(0, 8, 2)), ":".join(("%x" % int.from_bytes(e[i:i + 2], "big"))
                                                                        for i in range(0, 8, 2))}


def identifiers(arch, extra_hosts=()):
    """Every identifier the plain archive ARCH holds, found here, by other means than llmtune's:
    {kind: set of strings to search for (lower case)}, and the host names (searched by word)."""
    import ipaddress
    ids = {"serial": set(), "uuid": set(), "mac": set(), "guid": set(), "ipv4": set(), "ipv6": set()}
    mem = members(arch)
    host = json.loads(mem["MANIFEST"][1])["host"]
    for name, (kind, data) in mem.items():
        text = member_text((kind, data))
        name_text = name + "\n" + (text if kind == "link" else "")
        for u in UUID.findall(text + "\n" + name_text):
            if u.lower() not in NOT_IDS:
                ids["uuid"].add(u.lower())
        for m in re.findall(r"UUID=([0-9A-Fa-f-]+)", text):
            ids["uuid"].add(m.lower())
        for m in MAC_ANY.finditer(text):
            if m.group(0).lower().replace("-", ":") not in ("00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"):
                ids["mac"] |= mac_forms(m.group(0))
        if "guid" in name:
            ids["guid"] |= {g.lower() for g in GUID.findall(text.lower()) if g != "0000:0000:0000:0000"}
        if kind == "file" and "serial" in os.path.basename(name) and text.strip():
            ids["serial"].add(text.strip().lower())
        for tag in ("serial", "board_id"):
            ids["serial"] |= {"<%s>%s</%s>" % (tag, v.lower(), tag) for v in re.findall(r"<%s>([^<]*)</%s>" % (tag, tag), text)
                              if v not in ("N/A", "")}
        ids["serial"] |= {v.lower() for v in re.findall(r"[Ss]erial ?[Nn]umber:? *([0-9A-Za-z-]{4,})", text)}
        if name.endswith("/net/route"):
            for line in text.splitlines()[1:]:
                f = line.split()
                if len(f) >= 3 and f[2] != "00000000":
                    ids["ipv4"].add(str(ipaddress.IPv4Address(bytes.fromhex(f[2])[::-1])))
                    ids["ipv4"].add(f[2].lower())
        if name.endswith("/net/if_inet6"):
            for line in text.splitlines():
                a = ipaddress.IPv6Address(bytes.fromhex(line.split()[0]))
                if not a.is_loopback:
                    ids["ipv6"] |= {line.split()[0].lower(), str(a)}
        # addresses in text (a binary file, a database, keeps its bytes' lengths: not searched)
        if kind == "file" and not name.startswith("root/sys/") and not name.startswith("root/proc/") and \
                b"\0" not in data:
            for m in re.finditer(r"(?<![0-9A-Za-z:.])([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})(?![0-9A-Za-z:])", text):
                try:
                    a6 = ipaddress.IPv6Address(m.group(1))
                except ValueError:
                    continue
                if not (a6.is_loopback or a6.is_unspecified):
                    ids["ipv6"] |= {m.group(1).lower(), str(a6)}
            for m in re.finditer(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d]|\.\d)", text):
                a = m.group(1)
                if all(int(x) <= 255 for x in a.split(".")) and not ipaddress.IPv4Address(a).is_loopback and \
                        not a.startswith(("0.", "255.")):
                    ids["ipv4"].add(a)
    hosts = {h for h in (host, *extra_hosts) if h and h != "localhost"}
    return ids, hosts, mem


def scan(name, plain, anon, extra_hosts=(), live_addrs=()):
    ids, hosts, src = identifiers(plain, extra_hosts)
    ids["ipv4"] |= {a for a in live_addrs if ":" not in a}
    ids["ipv6"] |= {a for a in live_addrs if ":" in a}
    mem = members(anon)
    blob = "\n".join(k + "\n" + member_text(v) for k, v in mem.items()).lower()
    for kind, vals in ids.items():
        left = sorted(v for v in vals if (re.search(r"(?<![\d.])%s(?![\d]|\.\d)" % re.escape(v), blob) if kind == "ipv4"
                                          else v in blob))
        check(not left, f"anonymize-scan {name}: {kind} left in the anonymized archive: {left[:5]}")
    for h in hosts:
        # a short word (vm) only where a host is named: elsewhere it is /proc/sys/vm
        distinctive = len(h) >= 4 or re.search(r"[\d-]", h)
        where = mem if distinctive else {k: v for k, v in mem.items() if k[len("root/"):].startswith(HOST_FILES)}
        text = "\n".join(k + "\n" + member_text(v) for k, v in where.items())
        if not distinctive:  # the MANIFEST's own words about the machine (its paths name /proc/sys/vm)
            m = json.loads(mem["MANIFEST"][1])
            text += "\n" + json.dumps([m["host"], m["root"], m["command_line"]])
        found = re.search(r"(?<![A-Za-z0-9_-])%s(?![A-Za-z0-9_-])" % re.escape(h), text, re.I)
        check(found is None, f"anonymize-scan {name}: host name {h!r} left: ...{text[max(0, found.start() - 60):found.end() + 20]!r}"
              if found else "")
    a = without_root(run("--root", plain, "audit", "--json", rc=(0, 2, 3)).stdout)
    b = without_root(run("--root", anon, "audit", "--json", rc=(0, 2, 3)).stdout)
    a.pop("host"), b.pop("host")
    check(a == b, f"anonymize-scan {name}: the audit of the anonymized archive differs: " +
          str([x["rule"] for x, y in zip(a["results"], b["results"]) if x != y][:5]))
    return {k: len(v) for k, v in ids.items()}, hosts, src


def plant_identifiers(tree):
    """The corpus's nvidia-smi capture and kernel log (GPU serials, UUIDs, board ids), and text
    forms the fixtures lack: an FQDN, IPv4 and IPv6 addresses and a MAC in the kernel log and
    /etc/hosts, a MAC written with dashes."""
    cap = os.path.join(tree, "var/lib/llmtune/captures")
    os.makedirs(cap, exist_ok=True)
    shutil.copy(os.path.join(CORPUS, "a100-sxm4-80gb-mig-driver535-v12.xml"), os.path.join(cap, "nvidia-smi.xml"))
    with open(os.path.join(CORPUS, "dmesg-xid119-gsp-timeout-dell-xe9680.log")) as f:
        log = [re.sub(r"^\[[^]]*\] ", "", line) for line in f]
    with open(os.path.join(cap, "kmsg.txt"), "w") as f:
        for i, line in enumerate(log):
            f.write("[%9.6f] %s" % (10 + i, line))
        f.write("[  60.000000] mlx5_core 0000:18:00.0 ibp24s0: Link up, MAC 0c:42:a1:5e:77:01 (0C-42-A1-5E-77-02)\n"
                "[  61.000000] nfs: server 10.20.30.40 not responding, still trying\n"
                "[  62.000000] IPv6: eth0: address 2001:db8:1:2::17/64 of hgx-h100.cluster.example.com\n")
    with open(os.path.join(tree, "etc/hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n10.20.30.17 hgx-h100.cluster.example.com hgx-h100\n"
                "fd12:3456:789a::17 hgx-h100-v6\n")


def case_anonymize_scan(tmp):
    """Issue 31 item 4: an anonymized archive of each fixture root and of this machine holds
    none of the identifiers its source held."""
    trees = [(n, os.path.join(ROOTS, n)) for n in FIXTURES]
    if os.path.isdir(CORPUS):
        planted = os.path.join(tmp, "planted")
        shutil.copytree(os.path.join(ROOTS, "hgx-h100"), planted, symlinks=True)
        plant_identifiers(planted)
        trees.append(("hgx-h100+corpus", planted))
    elif os.environ.get("LLMTUNE_REQUIRE_CORPUS") == "1":
        check(False, f"anonymize-scan: no corpus at {CORPUS}")
    for name, tree in trees:
        plain, anon = os.path.join(tmp, f"s-{name}.tar.gz"), os.path.join(tmp, f"s-{name}-a.tar.gz")
        run("--root", tree, "gather", "-o", plain, rc=0)
        run("--root", tree, "gather", "--anonymize", "-o", anon, rc=0)
        counts, hosts, _ = scan(name, plain, anon)
        check(counts["mac"] and counts["ipv4"] and counts["ipv6"] and (counts["uuid"] or name == "vm-nogpu"),
              f"anonymize-scan {name}: too few identifiers to test: {counts}")
        if name.endswith("+corpus"):
            check(counts["serial"] >= 3 and counts["ipv6"] >= 4 and counts["ipv4"] >= 3,
                  f"anonymize-scan {name}: the planted identifiers were not all found: {counts}")
        print(f"ok anonymize-scan {name}: {counts} and host {sorted(hosts)} gone, audit equal")
    # this machine: its host names and live addresses too
    import socket
    plain, anon = os.path.join(tmp, "s-live.tar.gz"), os.path.join(tmp, "s-live-a.tar.gz")
    env = dict(os.environ, NO_COLOR="1")
    for out, extra in ((plain, []), (anon, ["--anonymize"])):
        g = subprocess.run([LLMTUNE, "gather", *extra, "-o", out], capture_output=True, text=True, env=env, timeout=300)
        check(g.returncode == 0, f"anonymize-scan live: gather {extra}: {g.stderr.strip()[:300]}")
    addrs = []
    ip = subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True) if shutil.which("ip") else None
    if ip and ip.returncode == 0:
        addrs = [a["local"] for i in json.loads(ip.stdout) for a in i.get("addr_info", [])
                 if a.get("local") and not a["local"].startswith(("127.", "::1"))]
    counts, hosts, src = scan("live", plain, anon, (socket.gethostname(), socket.getfqdn()), addrs)
    # Gather takes what the rules read: of dpkg's status only the fabric manager's paragraphs, of
    # /proc/kallsyms only the peer-memory symbol's lines.
    for path, keep in (("root/var/lib/dpkg/status", r"Package: nvidia-fabricmanager"),
                       ("root/proc/kallsyms", r" ib_register_peer_memory_client")):
        if path in src and src[path][0] == "file":
            text = src[path][1].decode("latin-1")
            paras = [p for p in text.split("\n\n" if "dpkg" in path else "\n") if p.strip()]
            check(all(re.search(keep, p) for p in paras), f"anonymize-scan live: {path} holds more than is read "
                  f"({len(text)} bytes, {len(paras)} parts)")
    print(f"ok anonymize-scan live: {counts}, addresses {addrs}, hosts {sorted(hosts)} gone, audit equal")


def case_live(tmp):
    arch = os.path.join(tmp, "live.tar.gz")
    env = dict(os.environ, NO_COLOR="1")

    def live(*a):
        return subprocess.run([LLMTUNE, *a], capture_output=True, text=True, env=env, timeout=120)

    before = json.loads(live("facts", "--json").stdout)["facts"]
    audit_live = live("audit", "--json")
    g = live("gather", "-o", arch)
    check(g.returncode == 0, f"live gather: {g.stderr}")
    # On a kernel with XFS, /proc/fs/xfs/stat is an absolute link into /sys: hwloc's topology is
    # captured all the same (issue 31 item 6).
    check("not captured" not in g.stderr and
          any(e["path"] == "var/lib/llmtune/captures/topology.xml" for e in manifest(arch)["files"]),
          f"live gather lost the topology (XFS here: {os.path.lexists('/proc/fs/xfs/stat')}): {g.stderr.strip()[:300]}")
    with open("/proc/sys/kernel/dmesg_restrict") as f:
        restricted = f.read().strip() != "0"
    kmsg = any(e["path"] == "var/lib/llmtune/captures/kmsg.txt" for e in manifest(arch)["files"])
    if kmsg and restricted:
        mode = os.stat(arch).st_mode & 0o777
        check(mode == 0o600, f"live gather: the kernel log (dmesg_restrict=1) is in it, archive mode {oct(mode)}")
    after = json.loads(live("facts", "--json").stdout)["facts"]
    got = json.loads(live("--root", arch, "facts", "--json").stdout)["facts"]
    audit_arch = live("--root", arch, "audit", "--json")
    check(audit_live.returncode == audit_arch.returncode, "audit exit status differs")
    a, b = without_root(audit_live.stdout), without_root(audit_arch.stdout)

    # Why a fact is absent is worded for where it was read (docs/FACTS.md): live, llmtune may
    # explain the kernel ("kernel without loadable module support"); in a tree or an archive it
    # names what the tree lacks. Everything else about a result must be equal.
    def judged(r):
        if r["status"] != "n/a":
            return r
        return {k: v for k, v in r.items() if k not in ("observed", "reason")}

    check([judged(r) for r in a["results"]] == [judged(r) for r in b["results"]],
          "audit of the archive differs from the live audit: " +
          str([r["rule"] for r, s in zip(a["results"], b["results"]) if judged(r) != judged(s)][:5]))
    stable = [k for k in before if before[k] == after.get(k)]
    same = syscall = captured = 0
    for k in stable:
        src = before[k].get("source") or ""
        if src and not src.startswith("/"):
            # from a syscall live (getifaddrs, statvfs), from /proc under the archive
            syscall += 1
            check(got[k]["status"] == before[k]["status"], f"{k}: {got[k]} vs live {before[k]}")
            continue
        if got.get(k) == before[k]:
            same += 1
        elif src == "/dev/kmsg" and got.get(k, {}).get("source") == "/var/lib/llmtune/captures/kmsg.txt":
            # The kernel log is not a file: gather stores what /dev/kmsg said as a capture, so the
            # archive's source is the capture; the values must be the same (xid.source names it).
            want = {x: y for x, y in before[k].items() if x != "source"}
            have = {x: y for x, y in got[k].items() if x != "source"}
            if k == "xid.source":
                want.pop("value", None)
                have.pop("value", None)
            check(want == have, f"{k}: archive {got[k]} != live {before[k]} (other than the capture's name)")
            captured += 1
        elif before[k]["status"] == "absent" and got.get(k, {}).get("status") == "absent" and \
                got[k].get("source") == before[k].get("source"):
            same += 1  # the same missing source, its reason worded for a tree (see judged())
        else:
            check(False, f"{k}: archive {got.get(k)} != live {before[k]}")
    print(f"ok live: audit equal ({len(a['results'])} rules); {same} stable facts equal, "
          f"{syscall} syscall facts equal in status, "
          f"{captured} kernel-log facts equal from the capture, {len(before) - len(stable)} changed between live runs")


def case_kernel_links(tmp):
    """Links the kernel makes in /proc and /sys are evidence, never a reason to stop the topology
    capture (issue 31 item 6: /proc/fs/xfs/stat on any kernel with XFS)."""
    for name in FIXTURES:
        tree = os.path.join(tmp, "kl-" + name)
        shutil.copytree(os.path.join(ROOTS, name), tree, symlinks=True)
        os.makedirs(os.path.join(tree, "sys/fs/xfs/stats"), exist_ok=True)
        with open(os.path.join(tree, "sys/fs/xfs/stats/stats"), "w") as f:
            f.write("extent_alloc 4 4 4 4\n")
        os.makedirs(os.path.join(tree, "proc/fs/xfs"), exist_ok=True)
        os.symlink("/sys/fs/xfs/stats/stats", os.path.join(tree, "proc/fs/xfs/stat"))
        os.makedirs(os.path.join(tree, "proc/4242"), exist_ok=True)
        os.symlink("/", os.path.join(tree, "proc/4242/root"))            # absolute, as the kernel has it
        os.symlink("/usr/bin/llmtune", os.path.join(tree, "proc/4242/exe"))
        if not os.path.lexists(os.path.join(tree, "proc/self")):
            os.symlink("4242", os.path.join(tree, "proc/self"))
        mounts = os.path.join(tree, "proc/mounts")
        if os.path.isfile(mounts) and not os.path.islink(mounts):
            os.rename(mounts, os.path.join(tree, "proc/4242/mounts"))
            os.symlink("self/mounts", mounts)
        arch = os.path.join(tmp, "kl-" + name + ".tar.gz")
        g = run("--root", tree, "gather", "-o", arch)
        check(g.returncode == 0 and "not captured" not in g.stderr,
              f"kernel-links {name}: gather exit {g.returncode}: {g.stderr.strip()[:300]}")
        if g.returncode != 0:
            continue
        files = {e["path"]: e for e in manifest(arch)["files"]}
        check("var/lib/llmtune/captures/topology.xml" in files, f"kernel-links {name}: no topology.xml in the archive")
        if os.path.islink(mounts):
            check(files.get("proc/mounts", {}).get("type") == "link" and files["proc/mounts"].get("target") == "self/mounts"
                  and files.get("proc/self", {}).get("type") == "link",
                  f"kernel-links {name}: /proc/mounts and /proc/self not stored as links: "
                  f"{files.get('proc/mounts')} {files.get('proc/self')}")
        for cmd in (["audit", "--json"], ["facts", "--json"]):
            a = without_root(run("--root", tree, *cmd, rc=(0, 2)).stdout)
            b = without_root(run("--root", arch, *cmd, rc=(0, 2)).stdout)
            check(a == b, f"kernel-links {name}: {cmd[0]} of the archive differs from the tree's")
        print(f"ok kernel-links {name}: topology captured, links stored as links, audit and facts equal")


def case_report(tmp):
    """report takes archives (audited with --profile, or detected) alongside audit JSON files."""
    arch = os.path.join(tmp, "r.tar.gz")
    run("--root", os.path.join(ROOTS, "dgx-a100"), "gather", "-o", arch, rc=0)
    tree_json = os.path.join(tmp, "dgx.json")
    with open(tree_json, "w") as f:
        f.write(run("--root", os.path.join(ROOTS, "dgx-a100"), "audit", "--json", "--profile", "base", rc=(0, 2)).stdout)
    other = os.path.join(tmp, "hgx.json")
    with open(other, "w") as f:
        f.write(run("--root", os.path.join(ROOTS, "hgx-h100"), "audit", "--json", "--profile", "base", rc=(0, 2)).stdout)
    a = json.loads(run("report", "--json", "--profile", "base", arch, other, rc=0).stdout)
    b = json.loads(run("report", "--json", tree_json, other, rc=0).stdout)
    for h in a["hosts"] + b["hosts"]:
        h.pop("file", None)  # the input's name, archive or JSON
    check(a == b, "report of the archive differs from the report of the tree's audit")
    check(a["hosts_total"] == 2, f"hosts {a['hosts_total']}")
    bad = run("report", os.path.join(tmp, "missing.tar.gz"), other)
    check(bad.returncode == 1 and "audit of the archive failed" in bad.stderr, bad.stderr)
    print("ok report: archive reported like its audit JSON")


def as_nobody():
    """Drop to nobody (65534) in the child when running as root: root lists a 0000 directory, and
    an unlistable one is what this case is about (EACCES, as a non-root gather meets it)."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)


def case_unlisted(tmp):
    """A directory that is there but cannot be listed is recorded ("unlisted", its errno), and the
    audit of the archive calls what depends on it unreadable, as on the machine, not absent."""
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "unlisted-root")
    shutil.copytree(os.path.join(ROOTS, "vm-nogpu"), root, symlinks=True)
    subprocess.run(["chmod", "-R", "a+rX", root], check=True)
    rel = json.loads(run("--root", root, "facts", "kernel.release", "--json", rc=0).stdout)["facts"]["kernel.release"]["value"]
    os.makedirs(os.path.join(root, "boot"), exist_ok=True)
    open(os.path.join(root, "boot", "initrd.img-" + rel), "w").close()
    out = os.path.join(tmp, "unlisted-out")
    os.mkdir(out)
    os.chmod(out, 0o777)

    def gather_and_read(name):
        arch = os.path.join(out, name)
        p = subprocess.run([LLMTUNE, "--root", root, "gather", "-o", arch], capture_output=True, text=True, env=ENV,
                           timeout=120, preexec_fn=as_nobody)
        check(p.returncode == 0, f"unlisted: gather as nobody exits 0 ({p.stderr.strip()[:200]})")
        f = json.loads(run("--root", arch, "facts", "boot.initramfs.stale", "--json", rc=0).stdout)["facts"]
        entry = [e for e in manifest(arch)["files"] if e["path"] == "etc/modprobe.d"]
        return f.get("boot.initramfs.stale", {}), entry

    fact, entry = gather_and_read("control.tar.gz")
    check(fact.get("status") == "ok" and entry and entry[0]["type"] == "dir",
          f"unlisted (control): listable /etc/modprobe.d is a dir and the fact ok ({fact}, {entry})")
    modprobe = os.path.join(root, "etc", "modprobe.d")
    os.chmod(modprobe, 0)
    try:
        fact, entry = gather_and_read("unlisted.tar.gz")
    finally:
        os.chmod(modprobe, 0o755)
    check(entry and entry[0]["type"] == "unlisted" and entry[0].get("errno") == 13,
          f"unlisted: MANIFEST records /etc/modprobe.d as unlisted with EACCES (got {entry})")
    check(fact.get("status") == "unreadable" and fact.get("source") == "/etc/modprobe.d"
          and "EACCES" in fact.get("reason", ""),
          f"unlisted: the archive's boot.initramfs.stale is unreadable from /etc/modprobe.d (EACCES) (got {fact})")
    print("ok unlisted: an unlistable directory is recorded and reads as unreadable in the archive")


def case_mode(tmp):
    """The archive is created with the umask's mode, and owner-only when it holds a file that not
    every user could read on the machine (never wider than its most private member)."""
    root = os.path.join(tmp, "mode-root")
    shutil.copytree(os.path.join(ROOTS, "vm-nogpu"), root, symlinks=True)
    subprocess.run(["chmod", "-R", "a+rX", root], check=True)

    def gather(name, mask):
        arch = os.path.join(tmp, name)
        p = subprocess.run([LLMTUNE, "--root", root, "gather", "-o", arch], capture_output=True, text=True, env=ENV,
                           timeout=120, preexec_fn=lambda: os.umask(mask))
        check(p.returncode == 0, f"mode: gather under umask {mask:03o} exits 0 ({p.stderr.strip()[:200]})")
        return os.stat(arch).st_mode & 0o7777 if os.path.exists(arch) else None, p.stdout

    for mask, want in ((0o022, 0o644), (0o077, 0o600), (0o027, 0o640)):
        mode, out = gather(f"open-{mask:03o}.tar.gz", mask)
        check(mode == want, f"mode: every file world-readable, umask {mask:03o}: archive {mode and oct(mode)}, want {oct(want)}")
    check("etc/fstab" in {f["path"] for f in manifest(os.path.join(tmp, "open-022.tar.gz"))["files"]},
          "mode: /etc/fstab is gathered")
    os.chmod(os.path.join(root, "etc", "fstab"), 0o600)
    for mask in (0o022, 0o027, 0o077):
        mode, out = gather(f"private-{mask:03o}.tar.gz", mask)
        check(mode == 0o600, f"mode: /etc/fstab 0600, umask {mask:03o}: archive {mode and oct(mode)}, want 0o600")
        check("mode 0600 (it holds /etc/fstab" in out, f"mode: the summary names the private member: {out!r}")
    print("ok mode: the umask's mode, owner-only with a private member")


def dead_pid():
    """A PID that no process has now (one that just exited, checked)."""
    while True:
        p = subprocess.Popen(["true"])
        p.wait()
        try:
            os.kill(p.pid, 0)
        except ProcessLookupError:
            return p.pid


def case_cleanup(tmp):
    """The private copy of an archive root is removed when SIGINT, SIGTERM or SIGHUP ends the run,
    and a copy whose process is gone (SIGKILL) is removed by the next run: only directories of our
    naming, of this PID namespace and user, whose PID is gone; nothing is followed through a link."""
    arch = os.path.join(tmp, "cleanup.tar.gz")
    run("--root", os.path.join(ROOTS, "dgx-a100"), "gather", "-o", arch, rc=0)
    shm = os.path.join(tmp, "shm")
    os.mkdir(shm)
    env = dict(ENV, TMPDIR=shm)

    def default_signals():  # a shell may start a background job with SIGINT ignored; nohup SIGHUP
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        # facts --json of dgx-a100 is ~430 KB: with nobody reading the pipe, the run blocks in
        # write(2) holding its copy, whatever the machine's speed.
        p = subprocess.Popen([LLMTUNE, "--root", arch, "facts", "--json"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env, preexec_fn=default_signals)
        try:
            deadline = time.time() + 120
            while not os.listdir(shm) and p.poll() is None and time.time() < deadline:
                time.sleep(0.02)
            made = os.listdir(shm)
            check(made and all(n.startswith(f"llmtune-archive-{os.stat('/proc/self/ns/pid').st_ino}-{p.pid}-")
                               for n in made), f"cleanup: the copy is named after its namespace and PID ({made})")
            p.send_signal(sig)
            rc = p.wait(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
        left = os.listdir(shm)
        check(rc == -sig and not left, f"cleanup: {signal.Signals(sig).name} ends the run by the signal ({rc}) and "
                                       f"removes its copy (left: {left})")

    ns = os.stat("/proc/self/ns/pid").st_ino
    dead = dead_pid()
    outside = os.path.join(tmp, "outside")
    os.makedirs(os.path.join(outside, "sub"))
    with open(os.path.join(outside, "sub", "keep"), "w") as f:
        f.write("keep\n")
    stale = {f"llmtune-archive-{ns}-{dead}-aB3dE9": True, f"llmtune-topology-{ns}-{dead}-Qw12er": True,
             f"llmtune-archive-{ns}-{os.getpid()}-alive1": False, f"llmtune-archive-{ns + 1}-{dead}-otherN": False,
             "llmtune-archive-Xy12ab": False, f"llmtune-other-{ns}-{dead}-abcdef": False,
             f"llmtune-archive-{ns}-{dead}-abcdefg": False, f"llmtune-archive-{ns}-+{dead}-abcdef": False}
    for name in stale:
        d = os.path.join(shm, name)
        os.makedirs(os.path.join(d, "root", "sys", "devices"))
        with open(os.path.join(d, "root", "sys", "devices", "f"), "w") as f:
            f.write("x\n")
        os.symlink(outside, os.path.join(d, "root", "escape"))            # a link out: never followed
        os.symlink(os.path.join(outside, "sub"), os.path.join(d, "sub"))
    linked = f"llmtune-archive-{ns}-{dead}-linked"                      # our naming, but a link
    os.symlink(outside, os.path.join(shm, linked))
    stale[linked] = False
    filed = f"llmtune-topology-{ns}-{dead}-a1b2c3"                      # our naming, but a file
    open(os.path.join(shm, filed), "w").close()
    stale[filed] = False
    if os.geteuid() == 0:
        foreign = f"llmtune-archive-{ns}-{dead}-nobody"                # another user's
        os.mkdir(os.path.join(shm, foreign))
        os.chown(os.path.join(shm, foreign), 65534, 65534)
        stale[foreign] = False
    p = subprocess.run([LLMTUNE, "--root", arch, "facts", "cpu.count"], capture_output=True, text=True, env=env,
                       timeout=120)
    check(p.returncode == 0, f"cleanup: an archive audit after the stale copies ({p.stderr.strip()[:200]})")
    now = set(os.listdir(shm))
    for name, removed in stale.items():
        check((name not in now) == removed, f"cleanup: {name!r} {'removed' if removed else 'kept'} "
                                            f"({'gone' if name not in now else 'there'})")
    check(os.path.exists(os.path.join(outside, "sub", "keep")), "cleanup: nothing outside was followed or removed")
    print("ok cleanup: copies removed on SIGINT/SIGTERM/SIGHUP, stale ones of dead processes by the next run")


def case_nvlink5_bridge(tmp):
    """An HGX B200 (tests/roots/hardware/hgx-b200): the VPD of its NVLink 5 switch bridges is gathered as
    the marker the probe looks for, not as the VPD, which holds the board's serial number; the
    archive answers the nvswitch facts and the fabric rules as the tree does."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(tmp, "hw")
    subprocess.run([sys.executable, os.path.join(here, "..", "roots", "mkroots.py"), "--out", out,
                    os.path.join(here, "..", "roots", "hardware", "hgx-b200.desc")], check=True, capture_output=True,
                   timeout=300)
    tree, arch = os.path.join(out, "hgx-b200"), os.path.join(tmp, "b200.tar.gz")
    run("--root", tree, "gather", "-o", arch, rc=0)
    got = members(arch)
    vpd = [k for k in got if k.endswith("/vpd")]
    check(len(vpd) == 4 and all(got[k] == ("file", b"SW_MNG") for k in vpd),
          f"nvlink5-bridge: the bridges' VPD is gathered as the marker only ({[(k, got[k]) for k in vpd]})")
    check(not any(v[0] == "file" and b"MT2412X00042" in v[1] for v in got.values()),
          "nvlink5-bridge: the bridge's serial number is in the archive")
    for cmd in (["facts", "--json", "nvswitch"], ["audit", "--json", "--profile", "base", "--rule",
                                                   "driver-fabricmanager", "--rule", "driver-nvlsm"]):
        a = without_root(run("--root", tree, *cmd, rc=(0, 2)).stdout)
        b = without_root(run("--root", arch, *cmd, rc=(0, 2)).stdout)
        check(a == b, f"nvlink5-bridge: {cmd[0]} of the archive differs from the tree's")
    print("ok nvlink5-bridge: marker only, no serial, facts and audit equal")


# libkmod's modprobe.d search path (libkmod.c default_config_paths), highest precedence first: written
# out here on purpose, so that the one list in src/facts/readers/dropin-order.c is checked against it.
KMOD_DIRS = ["/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d",
             "/lib/modprobe.d"]


def case_modprobe_dirs(tmp):
    """libkmod reads modprobe.d by host path, so gather records its directories itself: a file in each
    of them (a blacklist line of its own) is in the archive, and the archive answers modprobe.* as the
    tree does, each blacklisted module included."""
    tree, arch = os.path.join(tmp, "modprobe-tree"), os.path.join(tmp, "modprobe.tar.gz")
    shutil.copytree(os.path.join(ROOTS, "vm-nogpu"), tree, symlinks=True)
    for i, d in enumerate(KMOD_DIRS):
        os.makedirs(tree + d, exist_ok=True)
        with open(os.path.join(tree + d, f"{i}-gather.conf"), "w") as f:
            f.write(f"blacklist gathermod{i}\n")
    run("--root", tree, "gather", "-o", arch, rc=0)
    got = members(arch)
    for i, d in enumerate(KMOD_DIRS):
        name = f"root{d}/{i}-gather.conf"
        check(got.get(name) == ("file", f"blacklist gathermod{i}\n".encode()),
              f"modprobe-dirs: {d}/{i}-gather.conf is in the archive as it is in the tree ({got.get(name)})")
    a = without_root(run("--root", tree, "facts", "--json", "modprobe", rc=0).stdout)
    b = without_root(run("--root", arch, "facts", "--json", "modprobe", rc=0).stdout)
    listed = (a["facts"].get("modprobe.blacklist") or {}).get("value") or ""
    check(all(f"gathermod{i}" in listed for i in range(len(KMOD_DIRS))),
          f"modprobe-dirs: the tree's blacklist has a module from each directory ({listed!r})")
    check(a == b, "modprobe-dirs: the archive's modprobe facts differ from the tree's")
    print("ok modprobe-dirs: each of the five directories gathered, facts equal")


CASES = {"roundtrip": case_roundtrip, "nvlink5-bridge": case_nvlink5_bridge, "modprobe-dirs": case_modprobe_dirs, "manifest": case_manifest, "exclude": case_exclude, "deny": case_deny,
         "readonly": case_readonly, "anonymize": case_anonymize, "live": case_live, "kernel-links": case_kernel_links,
         "anonymize-scan": case_anonymize_scan,
         "report": case_report, "unlisted": case_unlisted, "mode": case_mode, "cleanup": case_cleanup}

with tempfile.TemporaryDirectory(prefix="llmtune-gather-") as tmp:
    for n, fn in CASES.items():
        if ONLY and n not in ONLY:
            continue
        try:
            fn(tmp)
        except AssertionError as e:
            check(False, f"{n}: {e}")
sys.exit(finish())
