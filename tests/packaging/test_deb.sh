#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The packages, built from a copy of the source tree (the build directory of the suite is not
# touched):
#   1. Debian: packaging/debian copied to debian/, `dpkg-buildpackage -us -uc -b`; the .deb must
#      hold the binary, /usr/share/llmtune, the man pages, completions, units, the wrapper and the
#      docs; its binary, unpacked, must run. With LLMTUNE_PACKAGE_FULL=1 (default: the value of
#      LLMTUNE_PACKAGE_INSTALL, so CI does it once) the build is exactly README's, with its
#      build-time tests (debian/rules: suites unit and golden); otherwise with -Pnocheck (the suite
#      runs those tests already). Then `lintian` on the .changes and the .deb: no error or warning
#      (debian/llmtune.lintian-overrides justifies what is left); skipped without lintian unless
#      LLMTUNE_PACKAGE_INSTALL=1.
#   2. When LLMTUNE_PACKAGE_INSTALL=1 (CI, as root; .ci/run sets it): `dpkg -i` the .deb, run the
#      INSTALLED llmtune --version, `llmtune profiles` and `llmtune --root COPY-OF-dgx-a100 audit
#      --profile a100-8x` (exit 2 expected; the installed binary finds /usr/share/llmtune by
#      itself), the installed man page and wrapper, then `dpkg --purge llmtune` (also on failure).
#   3. RPM: when rpmbuild is installed, `rpmbuild -bb` of packaging/rpm/llmtune.spec; outside
#      Fedora/RHEL with --nodeps and tests/packaging/rpm-macros-compat for the Fedora macros.
#      The RPM must hold the same files as the .deb.
# Versions must agree: meson.build, debian/changelog, the spec, the man pages.
# Skips (77) without dpkg-buildpackage/debhelper, unless LLMTUNE_PACKAGE_INSTALL=1 (then a
# missing tool fails). Never runs inside a package build (LLMTUNE_IN_PACKAGE_BUILD).
# Usage: test_deb.sh SRCDIR BUILDDIR
set -u
src=$(realpath "$1") build=$(realpath "$2")
required=${LLMTUNE_PACKAGE_INSTALL:-0}
full=${LLMTUNE_PACKAGE_FULL:-$required}
if [ -n "${LLMTUNE_IN_PACKAGE_BUILD:-}" ]; then
        echo "skip: inside a package build"
        exit 77
fi
missing=""
for t in dpkg-buildpackage dpkg-deb dpkg-parsechangelog dh fakeroot; do
        command -v $t >/dev/null || missing="$missing $t"
done
have_deb=1
if [ -n "$missing" ]; then
        have_deb=0
        echo "missing:$missing (packaging/install-deps.sh installs dpkg-dev debhelper fakeroot): no Debian package"
        [ "$required" = 1 ] && exit 1
        command -v rpmbuild >/dev/null || exit 77
fi
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d /tmp/llmtune-pkg.XXXXXX)
installed=0
cleanup() {
        if [ "$installed" = 1 ]; then
                dpkg_locked --purge llmtune >/dev/null 2>&1 || echo "WARNING: dpkg --purge llmtune failed"
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT
# dpkg with the lock retried: another apt or dpkg run may hold it for a while.
dpkg_locked() {
        local i out
        for i in $(seq 1 60); do
                out=$(dpkg "$@" 2>&1) && { printf '%s\n' "$out"; return 0; }
                printf '%s' "$out" | grep -qi 'lock' || { printf '%s\n' "$out"; return 1; }
                sleep 5
        done
        printf '%s\n' "$out"
        return 1
}

version=$(sed -nE "s/^ *version *: *'([^']+)'.*/\1/p" "$src/meson.build" | head -1)
[ -n "$version" ] || { echo "no version in meson.build"; exit 1; }
tree=$tmp/llmtune-$version
mkdir -p "$tree"
# The source tree without build directories (any directory holding a build.ninja), VCS data or the
# debian/ directory of an earlier manual build (build-deb.sh makes the same copy for the package).
tar -C "$src" --exclude-tag-all=build.ninja --exclude=./.git --exclude=./debian --exclude=__pycache__ \
        -cf - . | tar -C "$tree" -xf - || { echo "cannot copy the source tree"; exit 1; }
cp -r "$tree/packaging/debian" "$tree/debian"

# --- versions in step -------------------------------------------------------------------------
deb_version=$(sed -nE '1s/^llmtune \(([^)]+)\).*/\1/p' "$tree/debian/changelog")
spec_version=$(sed -nE 's/^Version: *//p' "$tree/packaging/rpm/llmtune.spec")
[ "$deb_version" = "$version" ] || [ "${deb_version%-*}" = "$version" ] && ok "debian/changelog version $deb_version" ||
        fail "debian/changelog says $deb_version, meson.build $version"
[ "$spec_version" = "$version" ] && ok "spec version $spec_version" || fail "llmtune.spec says $spec_version, meson.build $version"

if [ "$have_deb" = 1 ]; then
# --- Debian package ---------------------------------------------------------------------------
# tests/packaging/build-deb.sh: the copy of the tree and the build, as the boot lab builds it too.
if [ "$full" = 1 ]; then
        # README's command as it stands, build-time tests included (the environment of a developer's
        # shell: none of the suite's LLMTUNE_* switches, DEB_BUILD_OPTIONS only for parallelism).
        how="dpkg-buildpackage -us -uc -b (with its tests)"
        nocheck=()
else
        how="dpkg-buildpackage -us -uc -b -Pnocheck"
        nocheck=(--nocheck)
fi
t0=$(date +%s)
if ! bash "$src/tests/packaging/build-deb.sh" "${nocheck[@]}" "$src" "$tmp" >/dev/null; then
        echo "FAIL: $how failed"
        exit 1
fi
ok "$how: $(($(date +%s) - t0)) s"
if [ "$full" = 1 ]; then
        # The build-time tests ran and passed (not skipped by a nocheck left in the environment).
        summary=$(sed -n 's/^Ok: *\([0-9]*\) *$/\1/p' "$tmp/deb-build.log" | tail -1)
        grep -q "meson test.*--suite unit --suite golden" "$tmp/deb-build.log" && [ "${summary:-0}" -gt 10 ] &&
                grep -q '^Fail: *0 *$' "$tmp/deb-build.log" && ok "the package build ran $summary tests (suites unit, golden)" ||
                fail "the package build did not run its tests (suites unit and golden)"
fi
deb=$(ls "$tmp"/llmtune_"$deb_version"_*.deb 2>/dev/null | head -1)
[ -f "$deb" ] || { echo "FAIL: no .deb built"; ls "$tmp"; exit 1; }
ok "built $(basename "$deb")"

# lintian on what the build made: the .changes (and through it the .deb and .buildinfo).
changes=$(ls "$tmp"/llmtune_"$deb_version"_*.changes 2>/dev/null | head -1)
if command -v lintian >/dev/null; then
        t0=$(date +%s)
        # Errors and warnings fail; info and pedantic tags are shown. Overrides in
        # debian/llmtune.lintian-overrides (installed with the .deb) say why each is there. Not
        # --show-overrides: lintian 2.116 then counts an overridden warning for --fail-on too
        # (Lintian/Pool.pm), so no warning could ever be overridden.
        out=$(lintian --fail-on error,warning --display-info "$changes" "$deb" 2>&1)
        rc=$?
        bad=$(printf '%s\n' "$out" | grep -E '^[EW]: ')
        [ $rc -eq 0 ] && [ -z "$bad" ] && ok "lintian: no error or warning ($(($(date +%s) - t0)) s)$(printf '%s\n' "$out" |
                grep -E '^[IO]: ' | sed 's/^/\n    /' | tr -d '\n')" || fail "lintian exited $rc: $out"
elif [ "$required" = 1 ]; then
        fail "lintian not installed (packaging/install-deps.sh installs it)"
else
        echo "skip: lintian not installed: the package was not linted"
fi

# What every package must hold (paths after the distribution's unit and zsh directories).
expect_files() { # LISTING UNITDIR ZSHDIR
        local f
        for f in /usr/bin/llmtune /usr/libexec/llmtune/llmtune-reapply /usr/libexec/llmtune/slurm-health-check \
                /usr/share/llmtune/rules/cpu.ini \
                /usr/share/llmtune/rules/nccl-catalog.tsv /usr/share/llmtune/profiles/base.ini \
                /usr/share/llmtune/profiles/a100-8x.ini /usr/share/man/man1/llmtune.1 \
                /usr/share/man/man5/llmtune.profile.5 /usr/share/man/man5/llmtune.rule.5 \
                /usr/share/bash-completion/completions/llmtune "$3/_llmtune" "$2/llmtune-apply.service" \
                /usr/share/doc/llmtune/README.md /usr/share/doc/llmtune/docs/FACTS.md \
                /usr/share/doc/llmtune/docs/ARCHITECTURE.md /usr/share/doc/llmtune/docs/PERFORMANCE.md \
                /usr/share/llmtune/prometheus/llmtune-alerts.yml /usr/share/llmtune/kubernetes/llmtune-nfd.yaml \
                /usr/share/llmtune/kubernetes/llmtune-npd.yaml \
                /usr/share/llmtune/ansible/plugins/modules/llmtune.py \
                "$2/llmtune-verify.service" "$2/llmtune-verify.timer" "$2/llmtune-metrics.service" \
                "$2/llmtune-metrics.timer"; do
                grep -Eq "^$f(\.gz)?$" "$1" || fail "$(basename "$1"): no $f"
        done
}
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's,^\.,,' >"$tmp/deb.list"
expect_files "$tmp/deb.list" /lib/systemd/system /usr/share/zsh/vendor-completions
n_rules=$(ls "$src"/rules/*.ini | wc -l)
[ "$(grep -c '^/usr/share/llmtune/rules/.*\.ini$' "$tmp/deb.list")" -eq "$n_rules" ] && ok ".deb holds the $n_rules rule files" ||
        fail ".deb rule files differ from rules/*.ini"
dpkg-deb -f "$deb" Depends | grep -q 'libhwloc' && ok ".deb Depends: $(dpkg-deb -f "$deb" Depends)" || fail ".deb Depends lacks the libraries"
# libarchive and libxml2 are opened with dlopen(3), not linked: debian/rules names their packages.
for lib in libarchive libxml2; do
        dpkg-deb -f "$deb" Depends | grep -q "$lib" && ok ".deb Depends names $lib (opened with dlopen)" ||
                fail ".deb Depends lacks $lib, which llmtune opens with dlopen"
done
# dh_installsystemd: the timer enabled on install, llmtune-apply.service not.
dpkg-deb -e "$deb" "$tmp/deb-control"
grep -q "deb-systemd-helper enable 'llmtune-verify.timer'" "$tmp/deb-control/postinst" && ok "postinst enables llmtune-verify.timer" ||
        fail "postinst does not enable llmtune-verify.timer"
grep -q "deb-systemd-helper enable 'llmtune-metrics.timer'" "$tmp/deb-control/postinst" && ok "postinst enables llmtune-metrics.timer" ||
        fail "postinst does not enable llmtune-metrics.timer"
grep -q "deb-systemd-helper --quiet was-enabled 'llmtune-apply.service'" "$tmp/deb-control/postinst" &&
        ! grep -q "deb-systemd-invoke.*start.*llmtune-apply" "$tmp/deb-control/postinst" &&
        ok "postinst leaves llmtune-apply.service disabled" || fail "postinst enables or starts llmtune-apply.service"

# The binary of the package, unpacked (no root needed), with its data directory.
dpkg-deb -x "$deb" "$tmp/x"
fixture=$tmp/dgx-a100
cp -a "$build/tests/roots/dgx-a100" "$fixture"
run_checks() { # LABEL LLMTUNE [ENV...]
        local label=$1 bin=$2 out rc
        shift 2
        out=$(env "$@" "$bin" --version 2>&1)
        [ "$out" = "llmtune $version" ] && ok "$label: --version = $out" || fail "$label: --version said: $out"
        out=$(env "$@" "$bin" profiles 2>&1)
        printf '%s\n' "$out" | grep -q '^a100-8x ' && printf '%s\n' "$out" | grep -q '^base ' &&
                ok "$label: profiles lists a100-8x and base" || fail "$label: profiles: $out"
        out=$(env "$@" "$bin" --root "$fixture" audit --profile a100-8x 2>&1)
        rc=$?
        [ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q 'FAIL' && ok "$label: audit of dgx-a100 exits 2 with findings" ||
                fail "$label: audit of dgx-a100 exited $rc: $(printf '%s\n' "$out" | tail -5)"
}
run_checks "unpacked .deb" "$tmp/x/usr/bin/llmtune" LLMTUNE_DATADIR="$tmp/x/usr/share/llmtune"
# No test hooks in the package: no LLMTUNE_TEST_ variable named in its binary, no test program.
n=$(grep -a -c 'LLMTUNE_TEST_' "$tmp/x/usr/bin/llmtune")
[ "$n" -eq 0 ] && ok ".deb: /usr/bin/llmtune names no LLMTUNE_TEST_ variable (no test hooks)" ||
        fail ".deb: /usr/bin/llmtune holds LLMTUNE_TEST_ names ($n lines): the test hooks are packaged"
grep -q 'llmtune-test' "$tmp/deb.list" && fail ".deb holds llmtune-test" || ok ".deb holds no llmtune-test"

# --- installed --------------------------------------------------------------------------------
if [ "$required" = 1 ]; then
        if [ "$(id -u)" -ne 0 ]; then
                fail "LLMTUNE_PACKAGE_INSTALL=1 needs root (dpkg -i)"
        elif dpkg-query -W -f '${Status}' llmtune 2>/dev/null | grep -q 'install ok installed'; then
                fail "a llmtune package is already installed here; not replacing it"
        elif out=$(dpkg_locked -i "$deb"); then
                installed=1
                ok "dpkg -i $(basename "$deb")"
                # The binary falls back to its source tree when the data directory has no rules:
                # move the copy it was built from away, so only /usr/share/llmtune can serve.
                mv "$tree" "$tree.away"
                [ "$(command -v llmtune)" = /usr/bin/llmtune ] || fail "llmtune on PATH is $(command -v llmtune), not /usr/bin/llmtune"
                run_checks "installed" /usr/bin/llmtune -u LLMTUNE_DATADIR
                if command -v man >/dev/null; then
                        man -w llmtune >/dev/null 2>&1 && man -w 5 llmtune.profile >/dev/null 2>&1 && ok "man finds llmtune(1) and llmtune.profile(5)" ||
                                fail "man cannot find the installed pages"
                fi
                out=$(env -u LLMTUNE /usr/libexec/llmtune/llmtune-reapply --root "$fixture" 2>&1)
                [ $? -eq 0 ] && printf '%s' "$out" | grep -q 'nothing to re-apply' && ok "installed llmtune-reapply runs" ||
                        fail "installed llmtune-reapply: $out"
                out=$(dpkg_locked --purge llmtune)
                if [ $? -eq 0 ] && [ ! -e /usr/bin/llmtune ] && [ ! -e /usr/share/llmtune ]; then
                        installed=0
                        ok "dpkg --purge llmtune removed it"
                else
                        fail "dpkg --purge llmtune: $out"
                fi
                mv "$tree.away" "$tree"
        else
                fail "dpkg -i: $out"
        fi
else
        echo "skip: not installed (LLMTUNE_PACKAGE_INSTALL=1 as root installs, checks and purges it)"
fi

fi # have_deb

# --- RPM --------------------------------------------------------------------------------------
if command -v rpmbuild >/dev/null; then
        top=$tmp/rpm
        mkdir -p "$top/SOURCES"
        tar -C "$tree" --exclude=./debian --exclude='./obj-*' --transform "s,^\\.,llmtune-$version," \
                -czf "$top/SOURCES/llmtune-$version.tar.gz" .
        extra=()
        if [ -z "$(rpm --eval '%{?meson}')" ] || [ -z "$(rpm --eval '%{?systemd_post}')" ]; then
                # Not Fedora/RHEL: their macros come from the compat file, BuildRequires cannot resolve.
                extra=(--nodeps --load "$src/tests/packaging/rpm-macros-compat")
        fi
        if env -u LLMTUNE_REQUIRE_CORPUS rpmbuild -bb --nocheck "${extra[@]}" --define "_topdir $top" \
                "$tree/packaging/rpm/llmtune.spec" >"$tmp/rpm-build.log" 2>&1; then
                rpmfile=$(find "$top/RPMS" -name "llmtune-$version-*.rpm" ! -name '*debug*' | head -1)
                ok "rpmbuild: $(basename "$rpmfile")"
                rpm -qlp "$rpmfile" 2>/dev/null >"$tmp/rpm.list"
                expect_files "$tmp/rpm.list" /usr/lib/systemd/system /usr/share/zsh/site-functions
                # Same regular files as the .deb (docs included), but for the distributions' own directories,
                # Debian's changelog and copyright, licence files and lintian overrides.
                norm() { sed -e 's,^/lib/systemd/,/usr/lib/systemd/,' -e 's,/zsh/vendor-completions/,/zsh/site-functions/,' \
                        -e 's,\.gz$,,' | grep -v -e '^/usr/share/doc/llmtune/changelog\(\.Debian\)\{0,1\}$' -e '^/usr/share/doc/llmtune/copyright$' \
                        -e '^/usr/share/licenses/' -e '^/usr/share/lintian/overrides/' -e '^/usr/lib/\.build-id/' | sort -u; }
                [ "$have_deb" = 1 ] && d=$(diff <(dpkg-deb -c "$deb" | awk '$1 ~ /^-/ { print $6 }' | sed 's,^\.,,' | norm) \
                        <(rpm -qlvp "$rpmfile" 2>/dev/null | awk '$1 ~ /^-/ { print $NF }' | norm))
                n=$(rpm -qlvp "$rpmfile" 2>/dev/null | awk '$1 ~ /^-/' | wc -l)
                [ "$have_deb" = 1 ] && { [ -z "$d" ] && [ "$n" -gt 20 ] && ok "the RPM and the .deb install the same $n files" || fail "RPM and .deb differ: $d"; }
                # The removal warning of the .deb's prerm is the RPM's too (test_maint.sh runs it).
                rpm -qp --scripts "$rpmfile" 2>/dev/null | sed -n '/^preuninstall scriptlet/,/^[a-z]* *scriptlet/p' |
                        grep -q "still in force and stay after removal" && ok "the RPM's %preun warns of changes still in force" ||
                        fail "the RPM's preuninstall scriptlet has no 'still in force' warning"
                if command -v rpm2cpio >/dev/null && command -v cpio >/dev/null; then
                        mkdir -p "$tmp/rx" && (cd "$tmp/rx" && rpm2cpio "$rpmfile" | cpio -idm --quiet)
                        out=$("$tmp/rx/usr/bin/llmtune" --version 2>&1)
                        [ "$out" = "llmtune $version" ] && ok "unpacked RPM: --version = $out" || fail "unpacked RPM: --version said $out"
                fi
        else
                tail -30 "$tmp/rpm-build.log"
                fail "rpmbuild of packaging/rpm/llmtune.spec failed"
        fi
else
        echo "skip: rpmbuild not installed (Debian: package rpm; Fedora: rpm-build): the spec was not built"
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
