#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian maintainer scripts (packaging/debian/llmtune.prerm, llmtune.postrm) on copies of a
# fixture root through DPKG_ROOT, as `dpkg --root` runs them: with changes in force, remove says
# so and names `llmtune rollback --all`, keeps the change log and backups; purge warns, then
# deletes them. Without changes in force both are silent. The RPM's %preun the same way: on erase
# (not upgrade) it says how many changes are in force and names `llmtune rollback --all`.
# Usage: test_maint.sh LLMTUNE SRCDIR BUILDDIR
set -u
llmtune=$(realpath "$1") src=$2 build=$3
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
prerm=$src/packaging/debian/llmtune.prerm postrm=$src/packaging/debian/llmtune.postrm

mkroot() { # NAME: a fixture copy with the binary where the package puts it
        cp -a "$build/tests/roots/ws-4090" "$tmp/$1"
        mkdir -p "$tmp/$1/usr/bin"
        ln -sf "$llmtune" "$tmp/$1/usr/bin/llmtune"
        printf '%s' "$tmp/$1"
}

r=$(mkroot applied)
"$llmtune" --root "$r" apply --profile rtx4090-ws >"$tmp/apply.log" 2>&1 || fail "apply on the fixture: $(tail -3 "$tmp/apply.log")"
out=$(DPKG_ROOT=$r sh "$prerm" remove 2>&1)
rc=$?
n=$(cat "$r/var/lib/llmtune/in-force-at-removal" 2>/dev/null)
[ $rc -eq 0 ] && printf '%s' "$out" | grep -q "change(s) made by llmtune are still in force" &&
        printf '%s' "$out" | grep -q "llmtune rollback --all" && [ "${n:-0}" -gt 0 ] &&
        ok "prerm remove: says $n changes are in force and names 'llmtune rollback --all'" || fail "prerm remove (rc $rc, n '$n'): $out"
out=$(DPKG_ROOT=$r sh "$postrm" remove 2>&1)
[ $? -eq 0 ] && [ -f "$r/var/lib/llmtune/changelog.jsonl" ] && [ -d "$r/var/lib/llmtune/backups" ] &&
        ok "postrm remove keeps the change log and backups" || fail "postrm remove: $out"
out=$(DPKG_ROOT=$r sh "$postrm" purge 2>&1)
[ $? -eq 0 ] && printf '%s' "$out" | grep -q "WARNING: $n change(s) llmtune made are still in force" &&
        [ ! -e "$r/var/lib/llmtune" ] && ok "postrm purge warns about the $n changes, then deletes /var/lib/llmtune" ||
        fail "postrm purge: $out"

r=$(mkroot clean)
"$llmtune" --root "$r" apply --profile rtx4090-ws >/dev/null 2>&1
"$llmtune" --root "$r" rollback --all --force >/dev/null 2>&1 || fail "rollback --all on the fixture"
out=$(DPKG_ROOT=$r sh "$prerm" remove 2>&1)
[ $? -eq 0 ] && [ -z "$out" ] && [ ! -e "$r/var/lib/llmtune/in-force-at-removal" ] && ok "prerm remove after a rollback: silent" ||
        fail "prerm remove after a rollback: $out"
out=$(DPKG_ROOT=$r sh "$postrm" purge 2>&1)
[ $? -eq 0 ] && [ -z "$out" ] && [ ! -e "$r/var/lib/llmtune" ] && ok "postrm purge after a rollback: silent" || fail "purge: $out"
out=$(DPKG_ROOT=$r sh "$prerm" upgrade 2>&1)
[ $? -eq 0 ] && [ -z "$out" ] && ok "prerm upgrade: silent" || fail "prerm upgrade: $out"

# --- the RPM's %preun (packaging/rpm/llmtune.spec) ---------------------------------------------
# rpm runs the scriptlet chrooted into --root with $1 = the llmtune packages left (0: erase,
# 1: upgrade). Its text as rpm has it (rpmspec --parse, the Fedora macros of rpm-macros-compat,
# so %systemd_preun is empty here; without rpmspec, the spec's lines), run by sh on a copy of a
# fixture root with only its root= line set to that copy.
spec=$src/packaging/rpm/llmtune.spec
if command -v rpmspec >/dev/null; then
        rpmspec --parse --load "$src/tests/packaging/rpm-macros-compat" "$spec" >"$tmp/spec" 2>"$tmp/spec.err" ||
                fail "rpmspec --parse: $(cat "$tmp/spec.err")"
        how="rpmspec --parse"
else
        grep -v '^%systemd_' "$spec" >"$tmp/spec"
        how="the spec's text"
fi
sed -n '/^%preun/,/^%[a-z]/{/^%/d;p}' "$tmp/spec" >"$tmp/preun"
preun() { # ROOT ARG: run the %preun text on ROOT
        [ "$(grep -c '^root=$' "$tmp/preun")" = 1 ] || { echo "no single 'root=' line in %preun"; return 9; }
        sed "s|^root=\$|root=$1|" "$tmp/preun" >"$tmp/preun.sh"
        sh "$tmp/preun.sh" "$2"
}
r=$(mkroot rpm-applied)
"$llmtune" --root "$r" apply --profile rtx4090-ws >"$tmp/apply.log" 2>&1 || fail "apply on the fixture: $(tail -3 "$tmp/apply.log")"
n=$("$llmtune" --root "$r" rollback --all --dry-run --json --force 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["rolled_back"])')
out=$(preun "$r" 0 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "${n:-0}" -gt 0 ] && printf '%s' "$out" | grep -q "^llmtune: $n change(s) made by llmtune are still in force" &&
        printf '%s' "$out" | grep -q "llmtune rollback --all" && [ -f "$r/var/lib/llmtune/changelog.jsonl" ] &&
        ok "RPM %preun on erase ($how): says $n changes are in force and names 'llmtune rollback --all'" ||
        fail "RPM %preun on erase ($how, rc $rc, $n in force): '$out'"
out=$(preun "$r" 1 2>&1)
[ $? -eq 0 ] && [ -z "$out" ] && ok "RPM %preun on upgrade: silent" || fail "RPM %preun on upgrade: '$out'"
"$llmtune" --root "$r" rollback --all --force >/dev/null 2>&1 || fail "rollback --all on the fixture"
out=$(preun "$r" 0 2>&1)
[ $? -eq 0 ] && [ -z "$out" ] && ok "RPM %preun on erase after a rollback: silent" || fail "RPM %preun after a rollback: '$out'"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
