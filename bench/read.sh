#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Reader throughput: guestfrag's sequential read of each container format versus
# `qemu-img convert` of the same image, both from the page cache.
# Usage: bench/read.sh [BUILD_DIR] [SIZE] [REPEAT]
#   SIZE    virtual size of the generated NTFS disk (default 4GiB; its data fills ~60%)
#   REPEAT  timed runs per tool and format, best kept (default 3)
# Images go to $BENCH_DIR (default BUILD_DIR/bench-data). The raw source is kept for later
# runs; each converted image is deleted once measured (one at a time on disk, at most
# ~3 GiB beside the source) unless KEEP_IMAGES=1.
# Prints a Markdown table for docs/benchmarks.md; progress goes to stderr.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
size=${2:-4GiB}
repeat=${3:-3}
work=${BENCH_DIR:-$build/bench-data}
mkdir -p "$work"
cli=$build/app/cli/guestfrag
reader=$build/bench/guestfrag_bench_read
base=$work/read-$size

# The source disk: a fragmented NTFS volume whose files hold pseudo-random data
# (incompressible), written by mkimage as a sparse raw file.
if [ ! -f "$base.raw" ]; then
    start=$(date +%s)
    "$cli" mkimage "$base.raw" --size "$size" --files 20000 --seed 1 >/dev/null
    echo "mkimage: $(( $(date +%s) - start )) s" >&2
fi

# name, qemu format (-f), extension, qemu-img convert options
formats=(
    "raw|raw|raw|"
    "qcow2|qcow2|qcow2|-O qcow2"
    "qcow2 compressed|qcow2|c.qcow2|-O qcow2 -c"
    "vmdk monolithicSparse|vmdk|vmdk|-O vmdk -o subformat=monolithicSparse"
    "vmdk streamOptimized|vmdk|s.vmdk|-O vmdk -o subformat=streamOptimized"
    "vhd dynamic|vpc|vhd|-O vpc -o subformat=dynamic"
    "vhdx dynamic|vhdx|vhdx|-O vhdx -o subformat=dynamic"
)

# Best wall time of `repeat` runs of a command (after one untimed run), as "WALL CPU"
# seconds, CPU being user + system time of that run.
best_of() {
    "$@" >/dev/null
    local runs=""
    for _ in $(seq "$repeat"); do
        runs+=$(/usr/bin/time -f "%e %U %S" "$@" 2>&1 >/dev/null | tail -1)$'\n'
    done
    printf '%s' "$runs" | awk 'NF == 3 { print $1, $2 + $3 }' | sort -n | head -1
}

rows=()
for spec in "${formats[@]}"; do
    IFS='|' read -r name qfmt ext opts <<<"$spec"
    image=$base.$ext
    if [ "$ext" != raw ] && [ ! -f "$image" ]; then
        start=$(date +%s)
        # shellcheck disable=SC2086  # opts are words
        qemu-img convert -f raw $opts "$base.raw" "$image"
        echo "convert to $name: $(( $(date +%s) - start )) s" >&2
    fi
    cat "$image" >/dev/null  # into the page cache: we measure the readers, not the disk

    # 2 MiB reads: the request size qemu-img convert uses (IO_BUF_SIZE in qemu-img.c).
    ours=$("$reader" "$image" $((2 << 20)) 1 >/dev/null; "$reader" "$image" $((2 << 20)) "$repeat")
    # qemu-img's read path alone: the null-co target discards what it is given, so nothing
    # is written anywhere (a file on tmpfs would add qemu's write of the data to its time).
    # The target must be as large as the source, whose virtual size may differ from the
    # raw file's (VHD rounds it up to its CHS geometry).
    isize=$(qemu-img info -f "$qfmt" --output=json "$image" | python3 -c 'import json, sys; print(json.load(sys.stdin)["virtual-size"])')
    theirs=$(best_of qemu-img convert -n -f "$qfmt" "$image" --target-image-opts "driver=null-co,size=$isize")
    echo "$name: guestfrag $ours; qemu-img ${theirs} (wall, CPU s)" >&2
    rows+=("$name|$(stat -c %s "$image")|$ours|$theirs")
    if [ "$ext" != raw ] && [ "${KEEP_IMAGES:-0}" != 1 ]; then rm -f "$image"; fi
done

python3 - "${rows[@]}" <<'PY'
import json, sys
print("| format | file size | guestfrag s (open + read) | guestfrag MiB/s | guestfrag CPU s "
      "| qemu-img s | qemu-img MiB/s | qemu-img CPU s | time ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for row in sys.argv[1:]:
    name, file_size, ours, theirs = row.split("|")
    o = json.loads(ours)
    t, t_cpu = (float(x) for x in theirs.split())
    mib = o["virtual_size"] / 2**20
    print(f"| {name} | {int(file_size) / 2**30:.2f} GiB | {o['seconds']:.2f} ({o['open_seconds']:.2f} + {o['read_seconds']:.2f}) | "
          f"{o['mib_per_second']:.0f} | {o['cpu_seconds']:.2f} | {t:.2f} | {mib / t:.0f} | {t_cpu:.2f} | {o['seconds'] / t:.2f} |")
PY
