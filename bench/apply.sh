#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `apply` throughput: the bytes a defrag plan's moves copy divided by apply's wall time,
# beside `cp --sparse=always` of a file of the same number of bytes (pseudo-random data) in
# the same run, on the same file system. The ratio is apply's throughput as a share of cp's
# (goal: ≥ 50 %). apply makes OUT durable before renaming it, so the copy is also measured
# followed by an fsync of it; a raw output holds the whole disk, so its rows are put beside a
# third anchor, `cp --sparse=always` of the image itself and an fsync: the copy any raw output
# has to make. Output and temporary files live in one scratch folder; the image is in the
# page cache for every row alike.
# Usage: bench/apply.sh [BUILD_DIR] [IMAGE] [RUNS]
#   IMAGE  a raw disk to use (default: generated once as $BENCH_DIR/impact-4GiB.raw, the
#          disk of bench/impact.sh)
#   RUNS   timed runs per row, the best is kept (default 3)
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
image=${2:-$data/impact-4GiB.raw}
runs=${3:-3}
impact_image "$image"
"$cli" plan "$image" --strategy defrag -o "$work/plan.json" >/dev/null
"$cli" apply "$image" --plan "$work/plan.json" -o "$work/probe.img" --no-verify --json >"$work/probe.json"
moved=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes_written"]["moved"])' "$work/probe.json")
rm -f "$work/probe.img"
head -c "$moved" /dev/urandom >"$work/moved.bin"
size=$(stat -c %s "$image")
allocated=$(( $(stat -c %b "$image") * 512 ))

echo "image: $image ($((size >> 20)) MiB virtual, $((allocated >> 20)) MiB allocated), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "moves: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["moves"]; print(d["done"], "done of", d["planned"])' "$work/probe.json"), $((moved >> 20)) MiB moved"
echo
echo "| command | best wall s of $runs | MiB moved/s | share of cp | share of cp + fsync | share of image cp + fsync | peak RSS |"
echo "|---|---|---|---|---|---|---|"
cat "$image" "$work/moved.bin" >/dev/null
anchors=()  # the best times of the first three rows
measure() {  # label, output to remove between runs, command...
    local label=$1 out=$2 best="" kib=0
    shift 2
    for _ in $(seq "$runs"); do
        rm -f "$out"
        sync
        /usr/bin/time -o "$work/time" -f "%e %M" "$@" >/dev/null
        read -r wall k <"$work/time"
        if [ -z "$best" ] || awk -v a="$wall" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$wall; fi
        kib=$k
    done
    [ "${#anchors[@]}" -ge 3 ] || anchors+=("$best")
    awk -v l="$label" -v w="$best" -v m="$moved" -v k="$kib" -v a="${anchors[*]}" 'BEGIN {
        w2 = (w > 0 ? w : 0.005); n = split(a, t, " ")
        printf "| %s | %.2f | %.0f |", l, w, m / 1048576 / w2
        for (i = 1; i <= 3; i++) printf(i <= n ? " %.0f %% |" : " |", 100 * (t[i] > 0 ? t[i] : 0.005) / w2)
        printf " %d MiB |\n", k / 1024 }'
}
# apply makes OUT durable (fsync) before it renames it, so cp is measured with and without.
measure "cp --sparse=always (moved bytes)" "$work/copy.bin" cp --sparse=always "$work/moved.bin" "$work/copy.bin"
measure "cp --sparse=always + fsync (moved bytes)" "$work/copy.bin" \
    sh -c 'cp --sparse=always "$1" "$2" && sync "$2"' sh "$work/moved.bin" "$work/copy.bin"
measure "cp --sparse=always + fsync (image)" "$work/image.bin" \
    sh -c 'cp --sparse=always "$1" "$2" && sync "$2"' sh "$image" "$work/image.bin"
measure "apply -o qcow2 --no-verify" "$work/out.qcow2" \
    "$cli" apply "$image" --plan "$work/plan.json" -o "$work/out.qcow2" --output-format qcow2 --no-verify
measure "apply -o raw --no-verify" "$work/out.img" \
    "$cli" apply "$image" --plan "$work/plan.json" -o "$work/out.img" --no-verify
measure "apply -o qcow2 (verified)" "$work/out.qcow2" \
    "$cli" apply "$image" --plan "$work/plan.json" -o "$work/out.qcow2" --output-format qcow2
measure "apply -o raw (verified)" "$work/out.img" \
    "$cli" apply "$image" --plan "$work/plan.json" -o "$work/out.img"
measure "apply -o qcow2 --no-verify --rate 500MiB/s" "$work/out.qcow2" \
    "$cli" apply "$image" --plan "$work/plan.json" -o "$work/out.qcow2" --output-format qcow2 --no-verify --rate 500MiB/s
