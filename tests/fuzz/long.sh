#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Long fuzzing: every libFuzzer target (or those named) to at least $LLMTUNE_FUZZ_RUNS (10,000,000)
# executions each, one after the other, then (with -r) every input it kept replayed once through a
# second build. A manual tool, not in CI (docs/RELIABILITY.md has the figures and how long it takes).
#
#   tests/fuzz/long.sh [-r REPLAY-BUILD-DIR] BUILD-FUZZ-DIR [TARGET...]
#
# BUILD-FUZZ-DIR and REPLAY-BUILD-DIR are builds with -Dfuzzing=true (CC=clang). Two ways to use it:
#  - BUILD-FUZZ-DIR configured as tests/run-all.sh's fuzz pass is (-Db_sanitize=address,undefined
#    -Db_lundef=false): every execution under ASan and UBSan, a few thousand a second per core;
#  - BUILD-FUZZ-DIR with -Db_sanitize=undefined only (about ten times as many executions a second:
#    ASan's allocator and shadow checks are most of the cost) and -r the ASan + UBSan build: every
#    input that reached new coverage, the whole final corpus, is then run once under ASan too.
# Flags: those of the CI pass (tests/fuzz/run.sh: -rss_limit_mb=2048 -max_len=65536), but
# -timeout=$LLMTUNE_FUZZ_TIMEOUT (30) s instead of 10: over an hour on a shared machine, a 10 s
# stall of the whole process (once, in ASan's madvise, at load 9) reads as a hang, and no input of
# 64 KiB takes 30 s. Inputs: the seeds, the reproducers and, for profile and rules, the shipped
# files. Each target's corpus, log and artifacts go to BUILD-FUZZ-DIR/tests/fuzz-long/TARGET/; a
# crash stops that target with its reproducer in artifacts/ (copy it to tests/fuzz/regress/TARGET/)
# and makes the exit status 1. One line per target: executions, seconds, executions a second,
# coverage, peak RSS, and with -r the replay's inputs and exit status.
set -u
usage() { echo "usage: $0 [-r REPLAY-BUILD-DIR] BUILD-FUZZ-DIR [TARGET...]" >&2; exit 2; }
replay=
if [ "${1:-}" = -r ]; then
        [ $# -ge 2 ] || usage
        replay=$2
        shift 2
fi
[ $# -ge 1 ] || usage
build=$1
shift
src=$(cd "$(dirname "$0")" && pwd)
runs=${LLMTUNE_FUZZ_RUNS:-10000000}
timeout=${LLMTUNE_FUZZ_TIMEOUT:-30}
targets=${*:-profile rules nccl-conf mdstat superblock values proc-swaps mounts changelog archive}

is_fuzzer() {
        if ! "$1" -help=1 2>&1 | grep -q libFuzzer; then
                echo "long.sh: $1 is not a libFuzzer binary (configure the build with -Dfuzzing=true)" >&2
                exit 2
        fi
}

status=0
for t in $targets; do
        exe=$build/tests/fuzz-$t
        is_fuzzer "$exe"
        [ -z "$replay" ] || is_fuzzer "$replay/tests/fuzz-$t"
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
        line="fuzz-$t: ${execs:-?} executions in ${secs} s (${execs:+$((execs / secs))}/s), ${cov:-cov: ?}, peak RSS ${rss:-?} MB, exit $rc"
        if [ -n "$replay" ]; then
                # -runs=0: each input of the corpus once, nothing mutated
                "$replay/tests/fuzz-$t" -runs=0 -timeout="$timeout" -rss_limit_mb=2048 \
                        -artifact_prefix="$work/artifacts/replay-" "$work/corpus" 2>"$work/replay.log"
                rrc=$?
                n=$(ls "$work/corpus" | wc -l)
                line="$line; replayed $n inputs under $(basename "$replay"): exit $rrc"
                if [ $rrc -ne 0 ]; then
                        tail -30 "$work/replay.log"
                        rc=$rrc
                fi
        fi
        echo "$line"
        if [ $rc -ne 0 ]; then
                tail -30 "$work/log"
                echo "fuzz-$t: crash; reproducer(s):" $(ls "$work/artifacts")
                status=1
        fi
done
exit $status
