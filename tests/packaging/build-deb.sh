#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the Debian package from a copy of the source tree, as README's "Packages" says:
#     cp -r packaging/debian debian && dpkg-buildpackage -us -uc -b
# with the package's build-time tests unless --nocheck (then -Pnocheck and DEB_BUILD_OPTIONS=nocheck:
# the suite runs those tests itself). The copy leaves out build directories (any directory holding a
# build.ninja), VCS data and the debian/ directory of an earlier manual build. The environment is a
# developer's shell: none of the suite's LLMTUNE_* switches reach the build.
# tests/packaging/test_deb.sh and the boot lab (tests/bootlab) build the package with this.
# Usage: build-deb.sh [--nocheck] SRCDIR OUTDIR
#   OUTDIR/llmtune-VERSION/ is the copy; the .deb, .changes and .buildinfo land in OUTDIR, the build
#   log in OUTDIR/deb-build.log. Prints the .deb's path on its last line; exits 1 when the build fails.
set -u
check=1
if [ "${1:-}" = --nocheck ]; then
        check=0
        shift
fi
src=$(realpath "$1") out=$(realpath "$2")
version=$(sed -nE "s/^ *version *: *'([^']+)'.*/\1/p" "$src/meson.build" | head -1)
[ -n "$version" ] || { echo "no version in meson.build" >&2; exit 1; }
tree=$out/llmtune-$version
rm -rf "$tree"
mkdir -p "$tree"
tar -C "$src" --exclude-tag-all=build.ninja --exclude=./.git --exclude=./debian --exclude=__pycache__ \
        -cf - . | tar -C "$tree" -xf - || { echo "cannot copy the source tree" >&2; exit 1; }
cp -r "$tree/packaging/debian" "$tree/debian"
jobs=$(nproc 2>/dev/null || echo 2)
if [ "$check" = 1 ]; then
        build_cmd=(env -u LLMTUNE_REQUIRE_CORPUS -u LLMTUNE_PACKAGE_INSTALL -u LLMTUNE_REQUIRE_ALL -u LLMTUNE_PACKAGE_FULL
                DEB_BUILD_OPTIONS="parallel=$jobs" dpkg-buildpackage -us -uc -b)
else
        build_cmd=(env -u LLMTUNE_REQUIRE_CORPUS -u LLMTUNE_PACKAGE_INSTALL DEB_BUILD_OPTIONS="nocheck parallel=$jobs"
                dpkg-buildpackage -us -uc -b -Pnocheck)
fi
if ! (cd "$tree" && "${build_cmd[@]}") >"$out/deb-build.log" 2>&1; then
        tail -60 "$out/deb-build.log" >&2
        echo "dpkg-buildpackage failed (log: $out/deb-build.log)" >&2
        exit 1
fi
deb_version=$(sed -nE '1s/^llmtune \(([^)]+)\).*/\1/p' "$tree/debian/changelog")
deb=$(ls "$out"/llmtune_"$deb_version"_*.deb 2>/dev/null | head -1)
[ -f "$deb" ] || { echo "no .deb built in $out" >&2; exit 1; }
echo "$deb"
