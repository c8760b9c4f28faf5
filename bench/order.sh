#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What a placement order buys (docs/planner.md §14), on the volume of the free-space issue
# and, with a Layout.ini of LAYOUT files, its boot trace: per strategy and order, the data
# moved, the free space left, and the workload the order serves replayed before and after
# the plan (`estimate --plan`): IOs, sequential share, HDD and array seconds. Planning's
# wall time and peak RSS stand beside the anchor measured in the same run: `guestfrag
# analyze --no-verdict` of the image (the volume map every plan starts from).
# ORDER_1M=1 adds the issue's 1,002,519-file volume (mkimage --size 16GiB --files 1250000
# --fill 0.15 --seed 3; minutes to make): optimize --order path against scan:path.
# Usage: bench/order.sh [BUILD_DIR] [LAYOUT]   (LAYOUT default 2000)
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
layout=${2:-2000}
image=$data/order-issue-$layout.raw
[ -f "$image" ] || "$cli" mkimage "$image" --size 2GiB --table gpt --files 20000 --interleave 16 \
    --delete-fraction 0.3 --seed 42 --layout-ini "$layout" >/dev/null
cat "$image" >/dev/null
anchor=$( { /usr/bin/time -f "%e %M" "$cli" analyze "$image" --no-verdict >/dev/null; } 2>&1 )

echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); anchor: analyze ${anchor% *} s, ${anchor#* } KB"
echo
echo "| strategy, order | workload | plan s (x analyze) | plan peak RSS | moved | fragmented streams after | free-space frag. after | IOs before → after | sequential % | forward ≤ 8 sectors % | HDD s before → after | array s before → after |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
run() {  # run STRATEGY ORDER WORKLOAD
    local measured
    measured=$( { /usr/bin/time -f "%e %M" "$cli" plan "$image" --strategy "$1" --order "$2" -o "$work/plan.json" >/dev/null; } 2>&1 )
    "$cli" estimate "$image" --plan "$work/plan.json" --workload "$3" --json >"$work/estimate.json"
    python3 - "$work/plan.json" "$work/estimate.json" "$1, $2" "$3" "$measured" "$anchor" <<'PY'
import json, sys
plan, estimate, name, workload, measured, anchor = sys.argv[1:]
p = json.load(open(plan))["summary"]
v = json.load(open(estimate))["volumes"][0]
b, a = v["before"], v["after"]
def near(r):  # IOs at seek distance +1 … +8: the next file a few sectors on (vscsiStats buckets 1, 2, 4, 6, 8)
    h = r["histograms"]["seekDistance"]
    n = sum(c for limit, c in zip(h["limits"], h["counts"]) if 1 <= limit <= 8)
    return 100 * n / max(r["ios"] - 1, 1)
wall, rss = measured.split()
base = float(anchor.split()[0])
print(f"| {name} | {workload} | {float(wall):.2f} ({float(wall) / max(base, 0.01):.1f}x) | {int(rss) // 1024} MiB "
      f"| {p['moved_bytes'] / 2**30:.2f} GiB | {p['fragmented_streams_after']} "
      f"| {p['free_space_fragmentation_percent_after']:.2f} % | {b['ios']} → {a['ios']} "
      f"| {b['sequential_percent']:.1f} → {a['sequential_percent']:.1f} "
      f"| {near(b):.1f} → {near(a):.1f} "
      f"| {b['device_seconds']['hdd']:.1f} → {a['device_seconds']['hdd']:.1f} "
      f"| {b['device_seconds']['array']:.2f} → {a['device_seconds']['array']:.2f} |")
PY
}
for order in size mft path; do run optimize "$order" scan:path; done
run optimize mft scan:mft
run optimize trace:@layout trace:@layout
for strategy in defrag consolidate; do
    for order in size path; do run "$strategy" "$order" scan:path; done
done
if [ "${ORDER_1M:-0}" = 1 ]; then
    image=$data/order-1m.raw
    [ -f "$image" ] || "$cli" mkimage "$image" --size 16GiB --files 1250000 --fill 0.15 --seed 3 >/dev/null
    cat "$image" >/dev/null
    anchor=$( { /usr/bin/time -f "%e %M" "$cli" analyze "$image" --no-verdict >/dev/null; } 2>&1 )
    echo
    echo "1M-file volume; anchor: analyze ${anchor% *} s, ${anchor#* } KB"
    run optimize path scan:path
fi
