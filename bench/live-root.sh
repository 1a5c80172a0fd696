#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A bench tree as "/" (docs/PERFORMANCE.md, the live path of the issue 28 target): run as root under
#   unshare -m --propagation private bench/live-root.sh TREE DIR... -- COMMAND [ARG...]
# In the private mount namespace a tmpfs becomes the new root, with one bind of each top-level
# directory of TREE but /tmp (an empty one instead) and /dev (its entries and the host's /dev/null), the host's /usr (loader, libraries, python, lstopo; the tree's own /usr is
# left out), /lib/x86_64-linux-gnu and /lib64 as the loader looks for them, and each DIR (a build
# tree, the checkout) at its own path; then COMMAND runs chrooted there. Nothing is written into
# TREE, and the host's mounts are untouched (the namespace ends with COMMAND; its mount point,
# a directory under /tmp, is removed).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 TREE DIR... -- COMMAND [ARG...]" >&2; exit 2; }
tree=$(realpath "$1"); shift
dirs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do dirs+=("$(realpath "$1")"); shift; done
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "$0: no COMMAND" >&2; exit 2; }
top=$(mktemp -d /tmp/live-root.XXXXXX)
mount -t tmpfs tmpfs "$top"
multiarch=lib/x86_64-linux-gnu
for d in "$tree"/*; do
  name=$(basename "$d")
  [ -d "$d" ] || continue
  case $name in
    usr|tmp) continue ;;  # /tmp: scratch, left empty (a DIR under /tmp must not land in TREE)
    lib)  # the tree's /lib holds the modules; the loader's directory beside them is the host's
      mkdir -p "$top/$multiarch"
      mount --bind "/usr/$multiarch" "$top/$multiarch"
      for e in "$d"/*; do
        mkdir -p "$top/lib/$(basename "$e")"
        mount --bind "$e" "$top/lib/$(basename "$e")"
      done ;;
    dev)  # the tree's entries, and the host's /dev/null beside them (a tree has no device nodes;
          # python's subprocess and the shell need /dev/null), without writing into TREE
      mkdir -p "$top/dev"
      for e in "$d"/*; do
        [ -e "$e" ] || continue
        if [ -d "$e" ]; then mkdir -p "$top/dev/$(basename "$e")"; else : > "$top/dev/$(basename "$e")"; fi
        mount --bind "$e" "$top/dev/$(basename "$e")"
      done
      [ -e "$top/dev/null" ] || { : > "$top/dev/null"; mount --bind /dev/null "$top/dev/null"; } ;;
    *) mkdir -p "$top/$name"; mount --bind "$d" "$top/$name" ;;
  esac
done
mkdir -p "$top/usr" "$top/tmp"
chmod 1777 "$top/tmp"
mount --bind /usr "$top/usr"
[ -e "$top/lib64" ] || ln -s usr/lib64 "$top/lib64"
[ -e "$top/bin" ] || ln -s usr/bin "$top/bin"
for d in "${dirs[@]}"; do
  mkdir -p "$top$d"
  mount --bind "$d" "$top$d"
done
rc=0
chroot "$top" "$@" || rc=$?
umount -R "$top"
rmdir "$top"
exit $rc
