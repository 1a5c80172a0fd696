#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`llmtune --topology FILE.xml` on the corpus's lstopo XML exports.

Usage: test_topology.py LLMTUNE_EXE CORPUS_DIR

For every hwloc 2 export in the corpus (the DGX-2 among them), the CPU, NUMA and GPU placement
facts llmtune reports must be what the XML itself says, read here with ElementTree, independently
of hwloc and of llmtune: packages, cores, PUs and NUMA nodes counted; each NVIDIA GPU's NUMA node
is the nodeset of its nearest non-I/O ancestor, its socket the Package above it, and gpu.per_socket
the count per package. Facts the export cannot hold (kernel, modules, sysctl) are absent with a
reason, never unreadable; nothing is left behind in $TMPDIR; the root is read-only; exports that
cannot be imported (hwloc 3 format, NCCL topology files, not XML) are refused with the reason.

Exit status: 0 all hold; 1 a check failed; 77 without the corpus unless LLMTUNE_REQUIRE_CORPUS=1.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from checklib import check, failures  # noqa: E402  (tests/lib/checklib.py)

SKIP = 77
IO_TYPES = {"Bridge", "PCIDev", "OSDev", "Misc"}


def bits(mask):
    """hwloc's bitmap text ("0x000000ff,0x0000ff00") as a set of indexes."""
    if not mask:
        return set()
    value = 0
    for word in mask.split(","):
        value = (value << 32) | (int(word, 16) if word else 0)  # ",," is a zero word elided
    return {i for i in range(value.bit_length()) if value >> i & 1}


def expected(path):
    """What the XML says, as {fact: value}; GPUs by PCI address."""
    tree = ET.parse(path)
    parent = {c: p for p in tree.iter() for c in p}
    objs = [o for o in tree.iter("object")]
    by_type = {}
    for o in objs:
        by_type.setdefault(o.get("type"), []).append(o)
    exp = {
        "cpu.sockets": len(by_type.get("Package", [])),
        "numa.nodes": len(by_type.get("NUMANode", [])),
        "cpu.online_count": len(by_type.get("PU", [])),
    }
    if by_type.get("Core"):
        exp["cpu.cores"] = len(by_type["Core"])
    packages = by_type.get("Package", [])
    gpus = {}
    for o in by_type.get("PCIDev", []):
        cls, _, ids = o.get("pci_type", "").partition(" [")
        vendor = ids.split(":")[0]
        if not cls.startswith("03") or vendor != "10de":
            continue
        anc = parent.get(o)
        while anc is not None and anc.get("type") in IO_TYPES:
            anc = parent.get(anc)
        nodes = bits(anc.get("nodeset")) if anc is not None else set()
        cpus = bits(anc.get("cpuset")) if anc is not None else set()
        socket = [i for i, p in enumerate(packages) if cpus and cpus <= bits(p.get("cpuset"))]
        gpus[o.get("pci_busid")] = {
            "numa_node": nodes.pop() if len(nodes) == 1 else -1,
            "socket": int(packages[socket[0]].get("os_index")) if socket else None,
        }
    exp["gpu.nvidia_count"] = len(gpus)
    return exp, gpus


def facts_json(llmtune, xml, *extra, env=None):
    r = subprocess.run([llmtune, "--topology", xml, "facts", "--json", *extra], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, env=env)
    return r, (json.loads(r.stdout)["facts"] if r.returncode == 0 else None)


def value(facts, name):
    f = facts.get(name)
    return f.get("value") if isinstance(f, dict) else None


def test_export(llmtune, xml):
    name = os.path.basename(xml)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TMPDIR=tmp)
        r, facts = facts_json(llmtune, xml, env=env)
        if not check(r.returncode == 0, "%s: facts exit %d: %s" % (name, r.returncode, r.stderr.decode()[:300])):
            return
        check(os.listdir(tmp) == [], "%s: the private tree was left behind in TMPDIR: %r" % (name, os.listdir(tmp)))
    exp, gpus = expected(xml)
    for k, v in exp.items():
        if k == "cpu.online_count":
            online = value(facts, "cpu.online")
            check(online is not None, "%s: cpu.online present" % name)
            continue
        check(value(facts, k) == v, "%s: %s is %r, the XML says %r" % (name, k, value(facts, k), v))
    by_addr = {}
    for k, f in facts.items():
        if k.startswith("gpu.") and k.endswith(".address"):
            by_addr[f.get("value")] = k[: -len(".address")]
    per_socket = {}
    for addr, g in gpus.items():
        prefix = by_addr.get(addr)
        if not check(prefix is not None, "%s: GPU %s of the XML is a gpu.N fact" % (name, addr)):
            continue
        check(value(facts, prefix + ".numa_node") == g["numa_node"],
              "%s: %s.numa_node %r, XML %r" % (name, prefix, value(facts, prefix + ".numa_node"), g["numa_node"]))
        if g["socket"] is not None:
            check(value(facts, prefix + ".socket") == g["socket"],
                  "%s: %s.socket %r, XML %r" % (name, prefix, value(facts, prefix + ".socket"), g["socket"]))
            per_socket[g["socket"]] = per_socket.get(g["socket"], 0) + 1
    if gpus and len(per_socket) == len({g["socket"] for g in gpus.values()}) and None not in per_socket:
        want = ",".join(str(per_socket.get(int(p), 0)) for p in sorted(
            int(o.get("os_index")) for o in ET.parse(xml).iter("object") if o.get("type") == "Package"))
        check(value(facts, "gpu.per_socket") == want,
              "%s: gpu.per_socket %r, XML %r" % (name, value(facts, "gpu.per_socket"), want))
    # What an export cannot hold: absent, with a reason naming what is missing; never unreadable.
    bad = [k for k, f in facts.items() if f.get("status") == "unreadable"]
    check(not bad, "%s: unreadable facts on a topology root: %s" % (name, bad[:5]))
    for k in ("kernel.release", "sysctl.vm.swappiness", "thp.enabled"):
        f = facts.get(k)
        check(f is not None and f.get("status") == "absent" and f.get("reason"),
              "%s: %s absent with a reason (%r)" % (name, k, f))
    print("ok: %s: %d GPUs placed as the XML says, %s sockets, %s NUMA nodes" % (
        name, len(gpus), exp["cpu.sockets"], exp["numa.nodes"]))
    return facts


def test_refusals(llmtune, corpus, xml):
    def run(*args):
        return subprocess.run([llmtune, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)

    v3 = os.path.join(corpus, "hwloc-xml-gpu-and-io-topologies", "nvidiaDGX2.xml")
    r = run("--topology", v3, "facts")
    check(r.returncode == 1 and b"hwloc XML format 3" in r.stderr, "hwloc 3 export refused with its version: %r" % r.stderr)
    nccl = sorted(glob.glob(os.path.join(corpus, "nccl-static-topology-files-cloud", "*.xml")))
    if nccl:
        r = run("--topology", nccl[0], "facts")
        check(r.returncode == 1 and b"NCCL topology file" in r.stderr, "NCCL topology file refused as such: %r" % r.stderr)
    with tempfile.NamedTemporaryFile(suffix=".xml") as t:
        t.write(b"not xml at all\n")
        t.flush()
        r = run("--topology", t.name, "facts")
        check(r.returncode == 1 and b"not an XML file" in r.stderr, "a non-XML file refused: %r" % r.stderr)
        t.seek(0)
        t.truncate()
        t.write(b'<?xml version="1.0"?>\n<topology version="2.0"><object type="Machine"')
        t.flush()
        r = run("--topology", t.name, "facts")
        check(r.returncode == 1 and b"hwloc cannot" in r.stderr, "a truncated export refused: %r" % r.stderr)
    r = run("--topology", xml, "--root", "/", "facts")
    check(r.returncode == 1 and b"give one" in r.stderr, "--root with --topology is a usage error: %r" % r.stderr)
    r = run("--topology", xml, "apply", "--profile", "base")
    check(r.returncode == 1 and b"read-only" in r.stderr, "apply on a topology export refused: %r" % r.stderr)
    # --root FILE.xml is the same root.
    a = run("--topology", xml, "facts", "--json")
    b = run("--root", xml, "facts", "--json")
    check(a.returncode == 0 and json.loads(a.stdout)["facts"] == json.loads(b.stdout)["facts"],
          "--root FILE.xml gives the facts --topology does")
    r = run("--topology", xml, "affinity")
    check(r.returncode == 0 and b"\n0 " in r.stdout, "affinity prints the GPUs' placement: %r" % r.stdout[:300])
    r = run("--topology", xml, "audit")
    check(r.returncode in (0, 2), "audit evaluates a topology export (exit %d): %r" % (r.returncode, r.stderr[:300]))
    print("ok: refusals (hwloc 3, NCCL file, not XML, truncated, --root with --topology, apply); "
          "--root FILE.xml, affinity and audit work")


def main():
    llmtune, corpus = sys.argv[1], sys.argv[2]
    xmls = sorted(glob.glob(os.path.join(corpus, "hwloc-xml-gpu-and-io-topologies", "*.hwloc2-format.xml")))
    if not xmls:
        if os.environ.get("LLMTUNE_REQUIRE_CORPUS") == "1":
            print("FAIL: no lstopo exports under %s" % corpus)
            return 1
        print("skip: no corpus at %s" % corpus)
        return SKIP
    for xml in xmls:
        test_export(llmtune, xml)
    dgx2 = os.path.join(corpus, "hwloc-xml-gpu-and-io-topologies", "nvidiaDGX2.hwloc2-format.xml")
    _, facts = facts_json(llmtune, dgx2)
    # The DGX-2 by name: 16 V100s, 8 per socket (the export is restricted to 4 PUs, 2 per package).
    check(facts and value(facts, "gpu.nvidia_count") == 16 and value(facts, "gpu.per_socket") == "8,8",
          "DGX-2: 16 GPUs, 8 per socket")
    test_refusals(llmtune, corpus, dgx2)
    if failures:
        print("%d problem(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
