#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Scan benchmark: guestfrag's full analysis versus The Sleuth Kit's tsk_loaddb on the same
# generated image. Usage: bench/run.sh [BUILD_DIR] [FILES]
# Prints a Markdown table row set for docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
files=${2:-200000}
work=${BENCH_DIR:-$build/bench-data}
mkdir -p "$work"
image=$work/bench-$files.img
cli=$build/app/cli/guestfrag

if [ ! -f "$image" ]; then
    start=$(date +%s)
    "$cli" mkimage "$image" --size 8GiB --files "$files" --seed 1 >/dev/null
    echo "mkimage: $(( $(date +%s) - start )) s for $files files" >&2
fi

# Warm the page cache so both tools read from memory: we measure parsing, not the disk.
cat "$image" >/dev/null

ours=$("$build/bench/guestfrag_bench_scan" "$image" 3)
echo "guestfrag: $ours" >&2

db=$work/tsk.db
rm -f "$db"
/usr/bin/time -o "$work/tsk.time" -f "%e %M" tsk_loaddb -d "$db" "$image" >/dev/null 2>&1
tsk_time=$(tail -1 "$work/tsk.time")
echo "tsk_loaddb: $tsk_time (seconds, peak KiB)" >&2

python3 - "$ours" "$tsk_time" <<'PY'
import json, sys
o = json.loads(sys.argv[1]); t_s, t_kib = sys.argv[2].split()
t_s = float(t_s)
print(f"| image | records in use | extents | guestfrag s | records/s | peak RSS | bytes/extent | tsk_loaddb s | tsk peak RSS | speed-up |")
print(f"|---|---|---|---|---|---|---|---|---|---|")
print(f"| {o['image'].split('/')[-1]} | {o['records_in_use']} | {o['extents']} | {o['best_seconds']:.2f} | "
      f"{o['records_per_second']:.0f} | {o['peak_rss_bytes']/2**20:.0f} MiB | {o['bytes_per_extent']:.0f} | "
      f"{t_s:.2f} | {int(t_kib)/1024:.0f} MiB | {t_s/o['best_seconds']:.1f}x |")
PY
