#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `impact --deep` throughput and memory on a 4 GiB disk, beside the speed of simply reading
# the same image (cat to /dev/null): the deep census should run at a large fraction of it.
# Usage: bench/impact.sh [BUILD_DIR] [IMAGE]
#   IMAGE  a raw disk to use (default: generated once as $BENCH_DIR/impact-4GiB.raw, a
#          fragmented NTFS volume of 20,000 files of pseudo-random data filling ~60 %)
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
image=${2:-$data/impact-4GiB.raw}
impact_image "$image"
"$cli" plan "$image" --strategy defrag -o "$work/plan.json" >/dev/null
size=$(stat -c %s "$image")
allocated=$(( $(stat -c %b "$image") * 512 ))

echo "image: $image ($((size >> 20)) MiB virtual, $((allocated >> 20)) MiB allocated), $(nproc) cores"
echo
echo "| command | wall s | MiB/s of disk | peak RSS |"
echo "|---|---|---|---|"
measure() {  # label, command...
    local label=$1
    shift
    /usr/bin/time -o "$work/time" -f "%e %M" "$@" >/dev/null
    read -r wall kib <"$work/time"
    echo "| $label | $wall | $(awk -v s="$size" -v w="$wall" 'BEGIN { printf "%.0f", (w > 0 ? s / 1048576 / w : 0) }') | $((kib / 1024)) MiB |"
}
cat "$image" >/dev/null  # warm the page cache for every row alike
measure "cat IMAGE > /dev/null" cat "$image"
measure "impact (without --deep)" "$cli" impact "$image" --plan "$work/plan.json" --json
measure "impact --deep (4K,8K,16K,32K)" "$cli" impact "$image" --plan "$work/plan.json" --deep --json
measure "impact --deep --dedup-chunk 4K" "$cli" impact "$image" --plan "$work/plan.json" --deep --dedup-chunk 4K --json
measure "impact --deep --read-rate 200MiB/s" "$cli" impact "$image" --plan "$work/plan.json" --deep --read-rate 200MiB/s --json
