#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the packages install besides the binary, checked from the build tree (fast; suite
# 'packaging'):
#   - the man pages format without a warning (groff -ww), carry the project's version, and name
#     every command and every option that `llmtune --help` and `llmtune COMMAND --help` list;
#   - the bash completion completes commands, options, profile names (site profiles under
#     --root too), rule ids and option values (compgen through the completion function);
#   - the zsh completion parses, names every command and option, and (when zsh/zpty works)
#     offers the same things in a real zsh;
#   - `meson install` puts man pages, completions, units, the re-apply wrapper and the docs
#     (/usr/share/doc/llmtune: README.md, docs/*.md; nothing they or the rules cite lies outside
#     the project) where the units expect them, and systemd-analyze accepts the units (when it is installed);
#   - llmtune-reapply, on a copy of a fixture root: nothing to do before any apply; after an
#     apply and a lost runtime value (a governor reset at boot) it writes it again and verify is
#     clean; after a rollback it does nothing.
# Usage: test_files.sh LLMTUNE SRCDIR BUILDDIR
set -u
llmtune=$1 src=$2 build=$3
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
skip() { echo "skip: $*"; }
man_dir=$src/packaging/man comp_dir=$src/packaging/completions
version=$("$llmtune" --version | awk '{ print $2 }')

# --- man pages -------------------------------------------------------------------------------
for page in llmtune.1 llmtune.profile.5 llmtune.rule.5; do
        f=$man_dir/$page
        grep -q "^\.TH .* \"llmtune $version\"" "$f" && ok "$page carries version $version" ||
                fail "$page: .TH does not say \"llmtune $version\" (meson.build's version)"
        if command -v groff >/dev/null; then
                w=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
                [ -z "$w" ] && ok "$page: groff -ww clean" || fail "$page: groff warnings: $w"
        else
                skip "groff not installed: $page not formatted"
        fi
done
# The option text of the page with roff escapes undone.
man_text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$man_dir/llmtune.1")
commands=$("$llmtune" --help | awk '/^Commands:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }')
[ -n "$commands" ] || fail "no commands in llmtune --help"
for c in $commands; do
        printf '%s\n' "$man_text" | grep -q "^\.SS \"llmtune $c\b" || fail "llmtune.1 has no section for '$c'"
        grep -q "commands=\".*\b$c\b" "$comp_dir/llmtune.bash" || fail "bash completion lacks command '$c'"
        grep -Eq "^ *['\"]$c:" "$comp_dir/_llmtune" || fail "zsh completion lacks command '$c'"
        # options: the lines of the usage text that define one ("  -x, --long ..." / "  --long ...")
        for o in $("$llmtune" "$c" --help | sed -nE 's/^ +(-[A-Za-z], )?(--[a-z][a-z-]*).*/\2/p' | sort -u); do
                printf '%s\n' "$man_text" | grep -qF -- "$o" || fail "llmtune.1 lacks $c $o"
                grep -qF -- "$o" "$comp_dir/llmtune.bash" || fail "bash completion lacks $c $o"
                grep -qF -- "$o" "$comp_dir/_llmtune" || fail "zsh completion lacks $c $o"
        done
done
ok "commands and options checked against --help: $(echo $commands)"

# --- fixture: a site profile under a root ------------------------------------------------------
mkdir -p "$tmp/root/etc/llmtune/profiles.d"
# A root must look like a machine (docs/RELIABILITY.md): completion runs `llmtune --root DIR profiles`.
mkdir -p "$tmp/root/sys/devices/system/cpu"
printf '[profile]\nname = site-test\ninherits = base\n' >"$tmp/root/etc/llmtune/profiles.d/site-test.ini"
bindir=$tmp/bin
mkdir -p "$bindir"
ln -s "$(realpath "$llmtune")" "$bindir/llmtune"

# --- bash completion -------------------------------------------------------------------------
out=$(PATH=$bindir:$PATH bash --norc --noprofile -c '
        . "$1" || exit 1
        complete -p llmtune || exit 1
        t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _llmtune
              echo "[$*] ${COMPREPLY[*]}"; }
        t llmtune au
        t llmtune ro
        t llmtune audit --pro
        t llmtune audit --profile ""
        t llmtune --root "$2" apply --profile site
        t llmtune --root = "$2" profiles show s
        t llmtune audit --rule cpu-gov
        t llmtune apply --rule cpu-governor thp-en
        t llmtune explain swap-ac
        t llmtune exec --policy share
        t llmtune exec --mem p
        t llmtune report --format c
        t llmtune nccl ""
        t llmtune help verif
        t llmtune plan --profile = a100-8
' _ "$comp_dir/llmtune.bash" "$tmp/root" 2>&1)
expect_bash() {
        printf '%s\n' "$out" | grep -qxF -- "$1" && ok "bash: $1" || fail "bash: expected '$1' in:
$out"
}
expect_bash "complete -F _llmtune llmtune"
expect_bash "[llmtune au] audit"
expect_bash "[llmtune ro] rollback"
expect_bash "[llmtune audit --pro] --profile"
expect_bash "[llmtune audit --profile ] a100-80gb-8x a100-8x a100-pcie-4x b200-8x base h100-sxm-8x h200-sxm-8x rtx4090-ws"
expect_bash "[llmtune --root $tmp/root apply --profile site] site-test"
expect_bash "[llmtune --root = $tmp/root profiles show s] site-test"
expect_bash "[llmtune audit --rule cpu-gov] cpu-governor cpu-governor-persistent cpu-governor-offered"
expect_bash "[llmtune apply --rule cpu-governor thp-en] thp-enabled thp-enabled-persistent"
expect_bash "[llmtune explain swap-ac] swap-active"
expect_bash "[llmtune exec --policy share] share share-nosmt"
expect_bash "[llmtune exec --mem p] preferred"
expect_bash "[llmtune report --format c] csv"
expect_bash "[llmtune nccl ] lint env conf"
expect_bash "[llmtune help verif] verify"
expect_bash "[llmtune plan --profile = a100-8] a100-80gb-8x a100-8x"

# --- zsh completion --------------------------------------------------------------------------
if command -v zsh >/dev/null; then
        zsh -n "$comp_dir/_llmtune" && ok "zsh: _llmtune parses" || fail "zsh: _llmtune has a syntax error"
        zc() { (cd "$tmp" && PATH=$bindir:$PATH timeout 30 zsh "$src/tests/packaging/zsh-complete.zsh" "$comp_dir" "$1" | sort -u | tr '\n' ' '); }
        if [ "$(zc 'llmtune au')" = "audit " ]; then
                expect_zsh() {
                        got=$(zc "$1")
                        for w in $2; do
                                case " $got" in *" $w "*) ;; *) fail "zsh: '$1' does not offer $w (got: $got)"; return ;; esac
                        done
                        ok "zsh: '$1' offers $2"
                }
                expect_zsh 'llmtune ' "facts audit rollback report help"
                expect_zsh 'llmtune audit --profile ' "a100-8x base rtx4090-ws"
                expect_zsh "llmtune --root $tmp/root audit --profile s" "site-test"
                expect_zsh "llmtune --root $tmp/root profiles show s" "site-test"
                expect_zsh 'llmtune apply --rule cpu-g' "cpu-governor cpu-governor-offered"
                expect_zsh 'llmtune explain swap-' "swap-active swap-fstab"
                expect_zsh 'llmtune rollback --' "--last-run --to --all --force --wait"
                expect_zsh 'llmtune exec --policy ' "node share share-nosmt"
                expect_zsh 'llmtune report --format ' "table csv json html"
                expect_zsh 'llmtune nccl ' "lint env conf"
        else
                skip "zsh completion not exercised: no zsh/zpty session here"
        fi
else
        skip "zsh not installed: zsh completion not checked"
fi

# --- meson install: files where the units expect them -----------------------------------------
dest=$tmp/dest
if DESTDIR=$dest meson install -C "$build" --no-rebuild --quiet >"$tmp/install.log" 2>&1; then
        # The directories the build was configured with (a Debian build sets systemdunitdir to
        # /lib/systemd/system and zshcompletiondir to vendor-completions): the defaults of
        # packaging/meson.build when an option is empty.
        eval "$(meson introspect "$build" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
p = o["prefix"]
def d(v):
    return v if v.startswith("/") else p + "/" + v
print("prefix=%s" % p)
print("bindir=%s" % d(o["bindir"]))
print("libexecdir=%s" % d(o["libexecdir"]))
print("datadir=%s" % d(o["datadir"]))
print("mandir=%s" % d(o["mandir"]))
print("unitdir=%s" % (o.get("systemdunitdir") or p + "/lib/systemd/system"))
print("bashdir=%s" % (o.get("bashcompletiondir") or d(o["datadir"]) + "/bash-completion/completions"))
print("zshdir=%s" % (o.get("zshcompletiondir") or d(o["datadir"]) + "/zsh/site-functions"))
')"
        for f in "$bindir/llmtune" "$mandir/man1/llmtune.1" "$mandir/man5/llmtune.profile.5" "$mandir/man5/llmtune.rule.5" \
                "$bashdir/llmtune" "$zshdir/_llmtune" \
                "$unitdir/llmtune-apply.service" "$unitdir/llmtune-verify.service" \
                "$unitdir/llmtune-verify.timer" "$libexecdir/llmtune/llmtune-reapply" \
                "$unitdir/llmtune-metrics.service" "$unitdir/llmtune-metrics.timer" \
                "$datadir/llmtune/rules/cpu.ini" "$datadir/llmtune/profiles/base.ini"; do
                [ -e "$dest$f" ] || fail "meson install: no $f"
        done
        [ -x "$dest$libexecdir/llmtune/llmtune-reapply" ] || fail "llmtune-reapply is not executable"
        [ -x "$dest$libexecdir/llmtune/slurm-health-check" ] &&
                grep -q "^exec \"\${LLMTUNE:-$bindir/llmtune}\" health-check --slurm" "$dest$libexecdir/llmtune/slurm-health-check" ||
                fail "slurm-health-check is not installed executable, running the installed llmtune health-check --slurm"
        grep -qx "ExecStart=$libexecdir/llmtune/llmtune-reapply" "$dest$unitdir/llmtune-apply.service" ||
                fail "llmtune-apply.service does not run the installed wrapper"
        grep -qx "ExecStart=$bindir/llmtune verify" "$dest$unitdir/llmtune-verify.service" ||
                fail "llmtune-verify.service does not run the installed binary"
        grep -qx "ExecStart=$bindir/llmtune audit --format prometheus --output /var/lib/prometheus/node-exporter/llmtune.prom" \
                "$dest$unitdir/llmtune-metrics.service" ||
                fail "llmtune-metrics.service does not run the installed binary into node_exporter's directory"
        ok "meson install: man pages, completions, units, wrapper under $prefix"
        # The installed binary has no test hooks (only the uninstalled llmtune-test does): no
        # LLMTUNE_TEST_ name in it, none of them acted on, and no test program installed.
        inst=$dest$bindir/llmtune
        n=$(grep -a -c 'LLMTUNE_TEST_' "$inst")
        [ "$n" -eq 0 ] && ok "meson install: $bindir/llmtune names no LLMTUNE_TEST_ variable" ||
                fail "meson install: $bindir/llmtune holds LLMTUNE_TEST_ names ($n lines): test hooks are installed"
        [ -z "$(find "$dest" -name 'llmtune-test*' -o -name 'test-*' | head -1)" ] &&
                ok "meson install: no test program installed" || fail "meson install: installed $(find "$dest" -name 'llmtune-test*' -o -name 'test-*')"
        hooked=$tmp/hooked
        cp -a "$build/tests/roots/ws-4090" "$hooked"
        LLMTUNE_TEST_KILL_AT=1 LLMTUNE_TEST_POINTS=$tmp/points LLMTUNE_TEST_FAULT=/etc/tmpfiles.d/llmtune-cpu-governor.conf:EIO \
                "$inst" --root "$hooked" apply --profile rtx4090-ws >"$tmp/hooked.log" 2>&1
        rc=$?
        [ $rc -eq 0 ] && [ ! -e "$tmp/points" ] && ok "meson install: the installed llmtune ignores LLMTUNE_TEST_KILL_AT, _FAULT, _POINTS (apply exits 0)" ||
                fail "meson install: the installed llmtune acted on a test hook (apply exit $rc, trace file: $([ -e "$tmp/points" ] && echo yes || echo no)): $(tail -3 "$tmp/hooked.log")"
        # The docs ship (issue 16 item 12), and neither they nor what `explain` prints (each installed
        # rule's source, explained through the installed data directory) cite a file outside the
        # project: the maintainers' notes (KNOBS.md, ../nccl/NOTES.md), the shared corpus, /work.
        docdir=$datadir/doc/llmtune
        for f in README.md docs/FACTS.md docs/RELIABILITY.md docs/GATHER.md docs/TUNING.md docs/ARCHITECTURE.md \
                docs/PERFORMANCE.md; do
                cmp -s "$src/$f" "$dest$docdir/$f" || fail "meson install: $docdir/$f is not $f"
        done
        # What the README points operators at is in the package too (issue 31 item 11).
        for f in prometheus/llmtune-alerts.yml kubernetes/llmtune-nfd.yaml kubernetes/llmtune-npd.yaml ansible/galaxy.yml \
                ansible/plugins/modules/llmtune.py ansible/roles/llmtune/tasks/main.yml; do
                cmp -s "$src/packaging/$f" "$dest$datadir/llmtune/$f" || fail "meson install: $datadir/llmtune/$f is not packaging/$f"
        done
        if out=$(python3 - "$llmtune" "$dest$datadir/llmtune" "$dest$docdir" "$src" <<'PY'
import json, os, re, subprocess, sys
llmtune, data, docdir, src = sys.argv[1:]
# Citations of files outside the repository: the maintainers' notes, a data set of the corpus. (The
# README may say where the optional test corpus lives, ../shared/corpus: that names no source.)
outside = re.compile(r"KNOBS\.md|NOTES\.md|nccl-env\.tsv|\.\./nccl/|\.\./docs\b|\.\./shared/(docs|nccl)|/work/|"
                     r"(^|[^/\w])corpus/[\w-]")
bad = []
env = dict(os.environ, LLMTUNE_DATADIR=data)
ids = [r["rule"] for r in json.loads(subprocess.run([llmtune, "explain", "--list", "--json"], env=env,
                                                    capture_output=True, text=True, check=True).stdout)["rules"]]
if len(ids) < 50:
    bad.append("explain --list names only %d rules" % len(ids))
for rid in ids:
    e = json.loads(subprocess.run([llmtune, "explain", "--json", rid], env=env, capture_output=True,
                                  text=True, check=True).stdout)
    if not e["file"].startswith(data + "/"):
        bad.append("%s: explained from %s, not the installed rules" % (rid, e["file"]))
    text = "%s %s" % (e.get("source") or "", e.get("note") or "")
    if not (e.get("source") or "").strip():
        bad.append("%s: no source" % rid)
    if outside.search(text):
        bad.append("%s cites outside the project: %s" % (rid, text))
    for md in re.findall(r"[\w./-]+\.md\b", text):  # a document it names must be installed
        if not os.path.exists(os.path.join(docdir, md)):
            bad.append("%s cites %s, which is not in the installed docs" % (rid, md))
files = [os.path.join(d, f) for top in (data, docdir) for d, _, fs in os.walk(top) for f in fs]
for path in files:
    for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        if outside.search(line):
            bad.append("%s:%d cites outside the project: %s" % (path[len(os.path.dirname(data)):], n, line.strip()))
    if path.endswith(".md") and path.startswith(docdir + "/"):  # the docs' links name files of the source tree
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", open(path, encoding="utf-8").read()):
            rel = os.path.relpath(os.path.join(os.path.dirname(path), target), docdir)
            if rel.startswith("..") or not os.path.exists(os.path.join(src, rel)):
                bad.append("%s links %s, outside the source tree" % (path[len(docdir) + 1:], target))
    elif path.endswith(".md"):  # the collection's README links its own installed files
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", open(path, encoding="utf-8").read()):
            if not os.path.exists(os.path.join(os.path.dirname(path), target)):
                bad.append("%s links %s, which is not installed" % (path[len(data) + 1:], target))
print("\n".join(bad) if bad else "%d rules, %d installed files" % (len(ids), len(files)))
sys.exit(1 if bad else 0)
PY
        ); then
                ok "docs in $docdir; explain and the installed rules, profiles and docs cite nothing outside the project ($out)"
        else
                fail "citations: $out"
        fi
        if command -v systemd-analyze >/dev/null; then
                # The units name installed paths, which do not exist outside the DESTDIR: that
                # complaint is expected; any other (unknown key, bad value, no ExecStart) fails.
                # A directory that is not there must fail the check, not make it pass silently.
                if ! cd "$dest$unitdir" 2>/dev/null; then
                        fail "systemd-analyze verify: no unit directory $unitdir in the installed tree"
                else
                        v=$(systemd-analyze verify --man=no ./llmtune-apply.service ./llmtune-verify.service \
                                ./llmtune-verify.timer ./llmtune-metrics.service ./llmtune-metrics.timer 2>&1 |
                                grep -v "Command /[a-z/-]* is not executable: No such file or directory")
                        cd - >/dev/null || fail "cd back"
                        [ -z "$v" ] && ok "systemd-analyze verify: units accepted" || fail "systemd-analyze verify: $v"
                fi
                # The sandboxing (exposure 0 best .. 10 worst; both were 9.6 without it): verify only
                # reads and must stay near the top; the re-apply unit writes /etc, /sys, /boot; the
                # metrics unit reads like verify and writes one file (it was 9.0 UNSAFE).
                for u in verify:2.5 apply:7.0 metrics:2.5; do
                        unit=llmtune-${u%%:*}.service max=${u#*:}
                        score=$(systemd-analyze security --offline=true "$dest$unitdir/$unit" 2>/dev/null |
                                sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p')
                        if [ -z "$score" ]; then
                                skip "systemd-analyze security --offline does not work here: $unit not scored"
                        elif awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }'; then
                                ok "$unit: systemd-analyze security exposure $score (at most $max)"
                        else
                                fail "$unit: systemd-analyze security exposure $score, more than $max"
                        fi
                done
        fi
else
        fail "meson install failed: $(cat "$tmp/install.log")"
fi

# --- the metrics unit has the read-only unit's sandbox (issue 31 item 8), whatever systemd is here:
# every directive of llmtune-verify.service's sandbox, with the value it has there, except the ones
# the audit needs otherwise (devices, the kernel log, PID 1's limits, netlink, a readable file).
sandbox_keys() { sed -n '/^# Sandbox/,$p' "$1" | grep -E '^[A-Z][A-Za-z]+=' ; }
needs_otherwise='^(PrivateDevices|ProtectKernelLogs|ProtectProc|CapabilityBoundingSet|RestrictAddressFamilies|UMask)='
missing=$(sandbox_keys "$src/packaging/systemd/llmtune-verify.service.in" | grep -Ev "$needs_otherwise" |
        while read -r line; do
                grep -qxF "$line" "$src/packaging/systemd/llmtune-metrics.service.in" || echo "$line"
        done)
[ -z "$missing" ] && ok "llmtune-metrics.service has llmtune-verify.service's sandbox" ||
        fail "llmtune-metrics.service lacks: $(echo $missing)"
for want in 'DevicePolicy=closed' 'CapabilityBoundingSet=CAP_DAC_READ_SEARCH CAP_SYSLOG' \
        'RestrictAddressFamilies=AF_UNIX AF_NETLINK'; do
        grep -qxF "$want" "$src/packaging/systemd/llmtune-metrics.service.in" || fail "llmtune-metrics.service lacks $want"
done

# --- llmtune-reapply on a copy of a fixture root ----------------------------------------------
reapply() { sh "$build/packaging/llmtune-reapply" "$@"; } # configure_file drops the x bit
root=$tmp/dgx
cp -a "$build/tests/roots/dgx-a100" "$root"
export LLMTUNE=$llmtune
out=$(reapply --root "$root" 2>&1)
[ $? -eq 0 ] && printf '%s' "$out" | grep -q 'nothing to re-apply' && ok "reapply: nothing to do before any apply" ||
        fail "reapply before any apply: $out"
"$llmtune" --root "$root" apply --profile a100-8x >"$tmp/apply.log" 2>&1 || fail "apply a100-8x on the fixture: $(tail -3 "$tmp/apply.log")"
out=$(reapply --root "$root" 2>&1)
[ $? -eq 0 ] && printf '%s' "$out" | grep -q '"changed": 0' && ok "reapply right after apply changes nothing" ||
        fail "reapply after apply: $out"
gov=$root/sys/devices/system/cpu/cpufreq/policy0/scaling_governor
want=$(cat "$gov")
echo powersave >"$gov" # what a cpufreq driver loaded after systemd-tmpfiles leaves behind
"$llmtune" --root "$root" verify >/dev/null 2>&1
[ $? -eq 2 ] && ok "verify sees the lost governor (exit 2)" || fail "verify did not report the lost governor"
out=$(reapply --root "$root" 2>&1)
rc=$?
[ $rc -eq 0 ] && printf '%s' "$out" | grep -q 're-applying with profile a100-8x (.*):.* cpu-governor' &&
        printf '%s' "$out" | grep -q '"changed": [1-9]' && [ "$(cat "$gov")" = "$want" ] &&
        ok "reapply writes the governor again ($want)" || fail "reapply after a lost governor (rc $rc): $out"
"$llmtune" --root "$root" verify >/dev/null 2>&1
[ $? -eq 0 ] && ok "verify clean after reapply" || fail "verify not clean after reapply"
# The pinned profile is the one re-applied (llmtune.conf), not one the wrapper reads from the log.
"$llmtune" --root "$root" profile set a100-8x >/dev/null || fail "profile set a100-8x"
echo powersave >"$gov"
out=$(reapply --root "$root" 2>&1)
printf '%s' "$out" | grep -q 're-applying with profile a100-8x (pinned in /etc/llmtune/llmtune.conf:[0-9]*)' &&
        [ "$(cat "$gov")" = "$want" ] && ok "reapply uses the pinned profile" || fail "reapply with a pin: $out"
grep -v '^#' "$build/packaging/llmtune-reapply" | grep -q 'awk\|log --json' &&
        fail "llmtune-reapply parses the change log itself" || ok "llmtune-reapply leaves the change log to llmtune"
"$llmtune" --root "$root" rollback --all >/dev/null 2>&1 || fail "rollback --all on the fixture"
out=$(reapply --root "$root" 2>&1)
[ $? -eq 0 ] && printf '%s' "$out" | grep -q 'nothing to re-apply' && ok "reapply after rollback: nothing" ||
        fail "reapply after rollback: $out"
out=$(reapply --bogus 2>&1)
[ $? -eq 1 ] && ok "reapply rejects an unknown argument" || fail "reapply --bogus: $out"

# --- the Slurm wrapper passes slurmd's slurm.conf through --------------------------------------
# slurmd runs HealthCheckProgram with SLURMD_NODENAME alone; a stand-in named slurmd does the same.
# The file slurmd runs with (SLURM_CONF, or -f FILE, which wins) reaches llmtune and so scontrol.
hc=$build/packaging/slurm-health-check
mkdir -p "$tmp/hc"
printf '#!/bin/sh\nprintf "%%s\\n" "${SLURM_CONF:-unset}" >"$OUT"\n' >"$tmp/hc/llmtune"
printf '#!/bin/sh\n/usr/bin/env -i SLURMD_NODENAME=n1 LLMTUNE=%s OUT="$OUTFILE" /bin/sh %s\n' "$tmp/hc/llmtune" "$hc" >"$tmp/hc/slurmd"
cp "$tmp/hc/slurmd" "$tmp/hc/cron"
chmod +x "$tmp/hc/llmtune" "$tmp/hc/slurmd" "$tmp/hc/cron"
hc_conf() { # ENV... PROGRAM [ARGS]: the SLURM_CONF llmtune got
        env OUTFILE="$tmp/hc/out" "$@" && cat "$tmp/hc/out"
}
[ "$(hc_conf SLURM_CONF=/opt/site/slurm.conf "$tmp/hc/slurmd")" = /opt/site/slurm.conf ] &&
        [ "$(hc_conf SLURM_CONF=/opt/site/slurm.conf "$tmp/hc/slurmd" -D -f /etc/other/slurm.conf)" = /etc/other/slurm.conf ] &&
        [ "$(hc_conf "$tmp/hc/slurmd" -f/srv/slurm.conf)" = /srv/slurm.conf ] &&
        [ "$(hc_conf "$tmp/hc/slurmd")" = unset ] && [ "$(hc_conf SLURM_CONF=/opt/site/slurm.conf "$tmp/hc/cron")" = unset ] &&
        ok "slurm-health-check passes slurmd's SLURM_CONF or -f FILE through (and nothing from another parent)" ||
        fail "slurm-health-check: slurmd's slurm.conf not passed through: $(hc_conf SLURM_CONF=/opt/site/slurm.conf "$tmp/hc/slurmd")"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
