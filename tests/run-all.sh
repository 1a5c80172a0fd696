#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite, in up to four passes, each with its own build directory:
#   plain  the release-like build (hardening flags), warnings as errors: every test but the boot lab
#   bootlab the boot lab (tests/bootlab): the package of this checkout on a Debian guest under QEMU,
#          apply on the live guest, reboots (plain's build directory; skipped where QEMU cannot run,
#          unless LLMTUNE_REQUIRE_ALL=1)
#   asan   AddressSanitizer + UndefinedBehaviorSanitizer (leaks too): every test but the
#          packaging, Ansible, benchmark and boot lab suites (they test the packages, not the code) and
#          'walk' (unit and golden again with openat2 off; test-root runs both lookups under ASan)
#   fuzz   clang + libFuzzer + ASan/UBSan: every fuzz target for $LLMTUNE_FUZZ_SECONDS (20) from
#          its seeds, then the seeds and reproducers replayed (skipped when clang is missing,
#          unless LLMTUNE_REQUIRE_ALL=1)
# LLMTUNE_PASSES picks passes (default "plain bootlab asan fuzz"); arguments go to every `meson test`.
# Prints one line per pass, then the closing line "N passed, N failed" over all of them.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
passes=${LLMTUNE_PASSES:-plain bootlab asan fuzz}
cd "$top" || exit 1

# Sanitizer runtime options: any report aborts the process, so the test that ran it fails.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1:print_summary=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1}

status=0
logs=""
summary=""
for pass in $passes; do
        start=$(date +%s)
        case $pass in
        plain|bootlab)
                dir=$build
                [ -f "$dir/build.ninja" ] || meson setup "$dir" -Dwerror=true -Dtests=enabled || exit 1
                ;;
        asan)
                dir=$build-asan
                [ -f "$dir/build.ninja" ] || meson setup "$dir" -Dwerror=true -Dtests=enabled \
                        -Db_sanitize=address,undefined -Db_lundef=false || exit 1
                ;;
        fuzz)
                dir=$build-fuzz
                if ! command -v clang >/dev/null 2>&1; then
                        if [ "${LLMTUNE_REQUIRE_ALL:-0}" = 1 ]; then
                                echo "run-all.sh: clang is required for the fuzz pass" >&2
                                status=1
                                summary="$summary
fuzz: clang missing (required)"
                        else
                                summary="$summary
fuzz: skipped (no clang)"
                        fi
                        continue
                fi
                # Not -Dwerror: clang warns where gcc does not in library headers' callbacks.
                [ -f "$dir/build.ninja" ] || CC=clang meson setup "$dir" -Dtests=enabled -Dfuzzing=true \
                        -Db_sanitize=address,undefined -Db_lundef=false || exit 1
                ;;
        *)
                echo "run-all.sh: unknown pass '$pass' (plain, bootlab, asan, fuzz)" >&2
                exit 1
                ;;
        esac
        meson compile -C "$dir" || exit 1
        logbase=testlog
        case $pass in
        plain) meson test -C "$dir" --print-errorlogs --num-processes 2 --no-suite bootlab "$@" ;;
        # Its own log (meson-logs/testlog-bootlab.json), so the plain pass's is kept.
        bootlab) logbase=testlog-bootlab
                meson test -C "$dir" --print-errorlogs --suite bootlab --logbase "$logbase" "$@" ;;
        # The kill loop (reliability-kills) and the rename storm (reliability-renames) prove their
        # point in the plain pass (200 kills, 200 audits); under ASan each run is several times
        # slower, so fewer look for memory errors there (CI has 60 minutes).
        # Likewise the hardening test kills apply and rollback at every third crash point there.
        # Check's cases get UNIT_TIMEOUT (tests/unit/unit-main.h), three times that here: ASan +
        # UBSan on a loaded 2-core machine is 5-10x slower, and no case may fail on time alone.
        asan) CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-3} \
                LLMTUNE_KILL_RUNS=${LLMTUNE_KILL_RUNS_ASAN:-40} LLMTUNE_STORM_AUDITS=${LLMTUNE_STORM_AUDITS_ASAN:-10} \
                LLMTUNE_CRASH_STRIDE=${LLMTUNE_CRASH_STRIDE_ASAN:-3} \
                meson test -C "$dir" --print-errorlogs \
                --num-processes 2 --no-suite packaging --no-suite ansible --no-suite bench --no-suite walk \
                --no-suite bootlab "$@" ;;
        fuzz) meson test -C "$dir" --print-errorlogs --num-processes 2 --suite fuzz --suite fuzz-replay "$@" ;;
        esac
        rc=$?
        [ $rc -ne 0 ] && status=$rc
        logs="$logs $pass=$dir/meson-logs/$logbase.json"
        summary="$summary
$pass: $(( $(date +%s) - start )) s"
done

python3 - "$summary" $logs <<'PY'
import json, sys
notes = {}
for line in sys.argv[1].strip().splitlines():
    name, _, rest = line.partition(': ')
    notes[name] = rest
total_p = total_f = total_s = 0
for arg in sys.argv[2:]:
    name, _, path = arg.partition('=')
    p = f = s = 0
    try:
        for line in open(path):
            r = json.loads(line)["result"]
            if r in ("OK", "EXPECTEDFAIL"):
                p += 1
            elif r == "SKIP":
                s += 1
            else:
                f += 1
    except OSError:
        f += 1
    total_p, total_f, total_s = total_p + p, total_f + f, total_s + s
    print(f"{name}: {p} passed, {f} failed" + (f", {s} skipped" if s else "") + f" ({notes.pop(name, '')})")
for name, note in notes.items():
    print(f"{name}: {note}")
    total_f += "required" in note
print(f"{total_p} passed, {total_f} failed" + (f", {total_s} skipped" if total_s else ""))
PY
exit $status
