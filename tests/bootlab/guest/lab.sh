# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for the boot lab's steps (tests/bootlab), sourced by the step the host writes to the share.
out=/run/bootlab/out
share=/run/bootlab

# cmd NAME CMD...: runs CMD; its stdout goes to out/NAME (NAME.json is parsed by the host), its
# stderr to out/BASE.err, its exit status to out/BASE.rc and the uptime at its start and end to
# out/BASE.time (BASE: NAME without .json).
cmd() {
        name=$1
        shift
        base=${name%.json}
        start=$(cut -d' ' -f1 /proc/uptime)
        "$@" >"$out/$name" 2>"$out/$base.err"
        echo $? >"$out/$base.rc"
        echo "$start $(cut -d' ' -f1 /proc/uptime)" >"$out/$base.time"
}

# readings NAME [--etc]: the independent readings (readings.py) as out/readings-NAME.json.
readings() {
        name=$1
        shift
        python3 "$share/readings.py" "$@" >"$out/readings-$name.json" 2>"$out/readings-$name.err"
}

# hard_off: power off now, as a power cut would: no sync, no unmount, nothing stopped (sysrq o).
hard_off() {
        echo 1 >"$out/hard-off"
        umount "$share" 2>/dev/null
        echo 1 >/proc/sys/kernel/sysrq
        echo o >/proc/sysrq-trigger
        sleep 60
}
