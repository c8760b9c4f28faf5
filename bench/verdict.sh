#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The verdict on the disks of docs/verdict.md's goals (docs/benchmarks.md, "The verdict"):
# the demo disk of `packaging/setup.sh demo`, the README's mkimage disk with seed 5, a qcow2
# of each, a linked clone of that qcow2 with a guest write in it, a thick (fully allocated)
# copy, the 16 GiB 320,000-file disk of bench/apply_scale.sh and every NTFS image in
# tests/data. Per disk: the verdict, the chosen plan's seconds before and after on the
# device decided on (never worse, by the rule), the report's lines and widest line, and
# report's wall time and peak RSS.
# Usage: bench/verdict.sh [BUILD_DIR]
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
demo=$data/demo-42.img
seed5=$data/demo-5.img
big=$data/scale-400000.raw
[ -f "$demo" ] || "$cli" mkimage "$demo" --size 2GiB --table gpt --files 20000 --interleave 16 \
    --delete-fraction 0.3 --seed 42 >/dev/null
[ -f "$seed5" ] || "$cli" mkimage "$seed5" --size 2GiB --files 20000 --seed 5 >/dev/null
[ -f "$big" ] || "$cli" mkimage "$big" --size 16GiB --files 400000 --fill 0.15 --seed 3 >/dev/null
qemu-img convert -f raw -O qcow2 "$seed5" "$work/seed5.qcow2"
qemu-img convert -f raw -O qcow2 "$demo" "$work/demo.qcow2"
qemu-img create -q -f qcow2 -b seed5.qcow2 -F qcow2 "$work/clone.qcow2"
qemu-io -f qcow2 -c 'write -P 0x5a 64M 2M' "$work/clone.qcow2" >/dev/null
cp --sparse=never "$seed5" "$work/thick.img"
for f in dftt-10-ntfs-disk.dd.xz hyperv-dynamic.vhdx.gz hyperv-fixed.vhdx.gz; do
    case $f in
        *.xz) xz -dc "$root/tests/data/$f" >"$work/${f%.xz}" ;;
        *.gz) gzip -dc "$root/tests/data/$f" >"$work/${f%.gz}" ;;
    esac
done

echo "| disk | partition | verdict | scan now s | after s | lines | widest | s | peak MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
failed=0
for disk in "$demo" "$work/demo.qcow2" "$seed5" "$work/seed5.qcow2" "$work/clone.qcow2" "$work/thick.img" \
    "$big" "$work/dftt-10-ntfs-disk.dd" "$work/hyperv-dynamic.vhdx" "$work/hyperv-fixed.vhdx" \
    "$root/tests/data/windows_volume.qcow2"; do
    /usr/bin/time -o "$work/time" -f "%e %M" "$cli" report "$disk" >"$work/report.txt"
    read -r wall kib <"$work/time"
    lines=$(wc -l <"$work/report.txt")
    widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' "$work/report.txt")
    "$cli" report "$disk" --json >"$work/report.json"
    python3 - "$work/report.json" "$(basename "$disk")" "$lines" "$widest" "$wall" "$((kib / 1024))" <<'PY' || failed=1
import json, sys
doc = json.load(open(sys.argv[1]))
bad = False
for vol in doc["volumes"]:
    v = vol["verdict"]
    now = v["now_seconds"]
    if v["chosen"] is None:
        verdict, after = "no action: " + v["reason"], now
    else:
        p = v["plans"][v["chosen"]]
        after = now - p["seconds_saved"][v["device"]]
        verdict = p["strategy"] + (" --order " + p["order"] if p["order"] else "")
        bad |= after > now
    print(f"| {sys.argv[2]} | {vol['partition']} | {verdict} | {now:.2f} | {after:.2f} | {sys.argv[3]} | "
          f"{sys.argv[4]} | {sys.argv[5]} | {sys.argv[6]} |")
bad |= int(sys.argv[3]) > 40 * len(doc["volumes"]) or int(sys.argv[4]) > 100
sys.exit(1 if bad else 0)
PY
done
exit $failed
