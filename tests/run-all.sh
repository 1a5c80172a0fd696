#!/bin/sh
# The whole test suite: configure (once), build with warnings as errors, run every test, and end
# with one summary line "N passed, N failed" (meson's own summary goes to its log).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
cd "$top" || exit 1
if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" -Dwerror=true -Dtests=enabled || exit 1
fi
meson compile -C "$build" || exit 1
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
status=$?
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif r == "SKIP":
        skipped += 1
    else:
        failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
exit $status
