#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The contract of `apply` at a size CI does not run: for each cluster size and strategy, a
# plan made by `plan` on a generated volume (the attribute-list pair, the sparse database,
# compressed logs up to 4 KiB clusters) is applied with verification into a raw disk, and
# every move must be done. Per row: moves planned and done, MFT records the moves changed
# and freed, fragments before and after, and apply's wall time beside the anchor measured
# in the same run: `cp --sparse=always` of the image followed by an fsync (the copy any raw
# output has to make).
# Usage: bench/apply_matrix.sh [BUILD_DIR] [SIZE] [FILES] [CLUSTERS]
#   SIZE      each volume's disk (default 1GiB); FILES its files (default 20000)
#   CLUSTERS  cluster sizes, comma-separated (default 512,4K,16K,64K)
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
size=${2:-1GiB}
files=${3:-20000}
IFS=, read -r -a clusters <<<"${4:-512,4K,16K,64K}"
strategies=(defrag consolidate optimize thin-safe shrink)

echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); volumes of $size with $files files, seed 1"
echo
echo "| cluster | strategy | moves planned | done | records changed / freed | fragments before → after | apply s | image cp + fsync s | ratio |"
echo "|---|---|---|---|---|---|---|---|---|"
failed=0
for cluster in "${clusters[@]}"; do
    image=$data/apply-matrix-$cluster-$size-$files.raw
    compressed=()
    case $cluster in 512 | 1K | 2K | 4K) compressed=(--compressed) ;; esac
    [ -f "$image" ] || "$cli" mkimage "$image" --size "$size" --files "$files" --cluster-size "$cluster" \
        --table none --seed 1 "${compressed[@]}" >/dev/null
    cat "$image" >/dev/null
    rm -f "$work/copy.img"
    sync
    anchor=$( { /usr/bin/time -f "%e" sh -c 'cp --sparse=always "$1" "$2" && sync "$2"' sh "$image" "$work/copy.img"; } 2>&1 )
    rm -f "$work/copy.img"
    for strategy in "${strategies[@]}"; do
        "$cli" plan "$image" --strategy "$strategy" -o "$work/plan.json" >/dev/null
        rm -f "$work/out.img"
        sync
        start=$(date +%s.%N)
        "$cli" apply "$image" --plan "$work/plan.json" -o "$work/out.img" --json >"$work/apply.json" || failed=1
        end=$(date +%s.%N)
        python3 - "$work/apply.json" "$cluster" "$strategy" "$start" "$end" "$anchor" <<'EOF' || failed=1
import json, sys
path, cluster, strategy, start, end, anchor = sys.argv[1:]
d = json.load(open(path))
m, v = d["moves"], d["verification"]
wall = float(end) - float(start)
print(f"| {cluster} | {strategy} | {m['planned']} | {m['done']} | {v['records']['changed']} / {v['records']['freed']} "
      f"| {v['fragments_before']} → {v['fragments_after']} | {wall:.2f} | {float(anchor):.2f} | {wall / max(float(anchor), 0.01):.2f} |")
sys.exit(0 if m["done"] == m["planned"] and v["passed"] else 1)
EOF
    done
done
exit "$failed"
