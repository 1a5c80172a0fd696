#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Install what llmtune needs to build and test: Debian/Ubuntu (apt-get) or Fedora/RHEL (dnf).
# Runs the package manager through sudo when not already root.
set -eu

as_root() {
        if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        as_root apt-get update -qq
        as_root apt-get install -y -qq --no-install-recommends \
                build-essential meson ninja-build pkg-config python3 \
                libpci-dev pciutils pci.ids libhwloc-dev hwloc-nox libkmod-dev libinih-dev \
                libjson-c-dev libssl-dev libarchive-dev libxml2-dev libsqlite3-dev check e2fsprogs strace time \
                clang libclang-rt-dev xfsprogs \
                ansible-core ansible-lint chromium \
                dpkg-dev debhelper fakeroot lintian rpm groff-base zsh \
                prometheus yamllint python3-yaml \
                slurmctld slurmd slurm-client munge \
                qemu-system-x86 qemu-utils mmdebstrap
elif command -v dnf >/dev/null 2>&1; then
        as_root dnf install -y -q \
                gcc meson ninja-build pkgconf-pkg-config python3 \
                pciutils-devel pciutils hwloc-devel hwloc kmod-devel inih-devel \
                json-c-devel openssl-devel libarchive-devel libxml2-devel sqlite-devel check-devel e2fsprogs strace time \
                clang compiler-rt libasan libubsan xfsprogs \
                ansible-core ansible-lint chromium \
                rpm-build systemd-rpm-macros groff-base zsh \
                golang-github-prometheus yamllint python3-pyyaml \
                slurm slurm-slurmctld slurm-slurmd munge
else
        echo "install-deps.sh: neither apt-get nor dnf found; install the packages listed in README.md" >&2
        exit 1
fi
