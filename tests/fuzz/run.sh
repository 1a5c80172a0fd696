#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# One fuzz target as a test (tests/meson.build):
#   run.sh replay EXE NAME SRCDIR          run every seed and reproducer once
#   run.sh fuzz   EXE NAME SRCDIR WORKDIR  libFuzzer for $LLMTUNE_FUZZ_SECONDS (default 20) from
#                                          the seeds; a crash fails the test and leaves its
#                                          reproducer in WORKDIR/artifacts (copy it to
#                                          tests/fuzz/regress/NAME/ to make it a regression test)
set -u
mode=$1 exe=$2 name=$3 src=$4
seeds=$src/corpus/$name
regress=$src/regress/$name
dirs=$seeds
[ -d "$regress" ] && dirs="$dirs $regress"
# The shipped rules and profiles are seeds too (not copied, so they never go stale).
case $name in
profile) dirs="$dirs $src/../../profiles" ;;
rules) dirs="$dirs $src/../../rules" ;;
esac
case $mode in
replay)
        # libFuzzer binaries replay with -runs=0; replay-main binaries take the same arguments.
        if "$exe" -help=1 2>&1 | grep -q libFuzzer; then
                exec "$exe" -runs=0 $dirs
        fi
        exec "$exe" $dirs
        ;;
fuzz)
        work=$5/$name
        rm -rf "$work"
        mkdir -p "$work/corpus" "$work/artifacts"
        secs=${LLMTUNE_FUZZ_SECONDS:-20}
        # -rss_limit_mb and -timeout make a memory blow-up or a hang a failure like a crash.
        "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
                -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
                "$work/corpus" $dirs 2>"$work/log"
        rc=$?
        grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+.*DONE)" "$work/log"
        if [ $rc -ne 0 ]; then
                tail -50 "$work/log"
                echo "fuzz-$name: crash (libFuzzer exit $rc); reproducer(s):" $(ls "$work/artifacts")
                # libFuzzer's own exit status after a crash is 77, which meson reads as "skipped"
                exit 1
        fi
        exit 0
        ;;
esac
echo "run.sh: unknown mode $mode" >&2
exit 2
