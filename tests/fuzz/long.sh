#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Long fuzzing: every libFuzzer target (or those named) to at least $LLMTUNE_FUZZ_RUNS (10,000,000)
# executions each, one after the other, with the flags of the CI pass (tests/fuzz/run.sh: ASan +
# UBSan, -rss_limit_mb=2048 -max_len=65536) but -timeout=$LLMTUNE_FUZZ_TIMEOUT (30) s instead of 10:
# over an hour on a shared machine, a 10 s stall of the whole process (once, in ASan's madvise, at
# load 9) reads as a hang; no input of 64 KiB takes 30 s. From the seeds, the reproducers and, for
# profile and rules, the shipped files. A manual tool, not in CI: at a few thousand executions a
# second a target takes an hour or more (docs/RELIABILITY.md has the figures).
#
#   tests/fuzz/long.sh BUILD-FUZZ-DIR [TARGET...]
#
# BUILD-FUZZ-DIR is a build configured as tests/run-all.sh's fuzz pass does (CC=clang,
# -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false). Each target's corpus, log and
# artifacts go to BUILD-FUZZ-DIR/tests/fuzz-long/TARGET/; a crash stops that target with its
# reproducer in artifacts/ (copy it to tests/fuzz/regress/TARGET/) and makes the exit status 1.
# One line per target: executions, seconds, executions a second, coverage, peak RSS.
set -u
[ $# -ge 1 ] || { echo "usage: $0 BUILD-FUZZ-DIR [TARGET...]" >&2; exit 2; }
build=$1
shift
src=$(cd "$(dirname "$0")" && pwd)
runs=${LLMTUNE_FUZZ_RUNS:-10000000}
timeout=${LLMTUNE_FUZZ_TIMEOUT:-30}
targets=${*:-profile rules nccl-conf mdstat superblock values proc-swaps mounts changelog archive}
status=0
for t in $targets; do
        exe=$build/tests/fuzz-$t
        if ! "$exe" -help=1 2>&1 | grep -q libFuzzer; then
                echo "long.sh: $exe is not a libFuzzer binary (configure the build with -Dfuzzing=true)" >&2
                exit 2
        fi
        work=$build/tests/fuzz-long/$t
        rm -rf "$work"
        mkdir -p "$work/corpus" "$work/artifacts"
        dirs=$src/corpus/$t
        [ -d "$src/regress/$t" ] && dirs="$dirs $src/regress/$t"
        case $t in
        profile) dirs="$dirs $src/../../profiles" ;;
        rules) dirs="$dirs $src/../../rules" ;;
        esac
        start=$(date +%s)
        "$exe" -runs="$runs" -timeout="$timeout" -rss_limit_mb=2048 -max_len=65536 \
                -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
                "$work/corpus" $dirs 2>"$work/log"
        rc=$?
        secs=$(($(date +%s) - start))
        [ "$secs" -gt 0 ] || secs=1
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
        rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$work/log")
        cov=$(grep -o 'cov: [0-9]*' "$work/log" | tail -1)
        echo "fuzz-$t: ${execs:-?} executions in ${secs} s (${execs:+$((execs / secs))}/s), ${cov:-cov: ?}, peak RSS ${rss:-?} MB, exit $rc"
        if [ $rc -ne 0 ]; then
                tail -30 "$work/log"
                echo "fuzz-$t: crash; reproducer(s):" $(ls "$work/artifacts")
                status=1
        fi
done
exit $status
