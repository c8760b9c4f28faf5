#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# apply and compact at scale (docs/benchmarks.md, "apply and compact at scale"): on one
# generated volume, every strategy's plan (optimize in each order) applied whole into a raw
# disk and a qcow2 overlay, and compact into each output format. A row passes when every
# move was done, the verification passed, `ntfsfix -n` calls the output clean and a new
# `analyze` of the output gives the plan's predicted fragments and free extents. Each row's
# wall time and peak RSS (/usr/bin/time) stand beside the anchor measured in the same run:
# `cp --sparse=always IMAGE COPY && sync`.
# Usage: bench/apply_scale.sh [BUILD_DIR] [FILES]
#   FILES  mkimage --files on a 16 GiB disk, --fill 0.15 --seed 3 (default 400000: 320,000
#          files kept; 1250000 makes the 1M-file volume)
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
files=${2:-400000}
image=$data/scale-$files.raw
[ -f "$image" ] || "$cli" mkimage "$image" --size 16GiB --files "$files" --fill 0.15 --seed 3 >/dev/null
flat=$work/flat.raw

settle() {  # the last output gone and written back, the input in the page cache
    rm -f "$work"/out.* "$flat"
    sync
    cat "$image" >/dev/null
}

timed() {  # timed CMD...: "wall peak_kib" of the command into $work/time, its status returned
    /usr/bin/time -o "$work/time" -f "%e %M" "$@"
}

settle
timed sh -c 'cp --sparse=always "$1" "$2" && sync' sh "$image" "$work/out.cp"
read -r anchor _ <"$work/time"
echo "$(nproc) cores; $image ($files files made); anchor cp --sparse=always && sync: ${anchor} s"
echo
echo "| command | output | moves planned / done | verified | ntfsfix | analyze = plan | s | peak MiB | x anchor |"
echo "|---|---|---|---|---|---|---|---|---|"
failed=0

# The output as a raw disk for ntfsfix and analyze (a qcow2 overlay names the image).
flatten() {
    case $1 in
        *.raw) flat=$1 ;;
        *) flat=$work/flat.raw; qemu-img convert -O raw "$1" "$flat" ;;
    esac
}

check_output() {  # check_output OUT PLAN|-: "ntfsfix analyze" words
    flatten "$1"
    local fix=no same=- dev start
    "$cli" analyze "$flat" --json >"$work/after.json"
    start=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["partitions"][0]["start"])' \
        "$work/after.json")
    # ntfsfix opens its device read-write even with -n, and reads the volume's boot sector
    # at the device's start: the partition through a loop device.
    dev=$(losetup --find --show --read-only --offset "$start" "$flat" 2>/dev/null || true)
    if [ -n "$dev" ]; then
        ntfsfix -n "$dev" 2>&1 | grep -q "processed successfully" && fix=yes
        losetup -d "$dev"
    fi
    if [ "$2" != - ]; then
        same=$(python3 - "$work/after.json" "$2" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["volumes"][0]
s = json.load(open(sys.argv[2]))["summary"]
ok = (v["files"]["fragments"] == s["fragments_after"] and v["free_space"]["extents"] == s["free_extents_after"]
      and v["free_space"]["largest_extent_clusters"] == s["largest_free_extent_clusters_after"])
print("yes" if ok else "NO")
PY
)
    fi
    echo "$fix $same"
}

row() {  # row COMMAND OUTPUT MOVES VERIFIED CHECKS
    read -r wall kib <"$work/time"
    local fix same
    read -r fix same <<<"$5"
    echo "| $1 | $2 | $3 | $4 | $fix | $same | $wall | $((kib / 1024)) | $(python3 -c "print(f'{$wall / $anchor:.2f}')") |"
    [ "$4" = yes ] && [ "$fix" = yes ] && [ "$same" != NO ] || failed=1
}

for strategy in defrag consolidate optimize:mft optimize:size optimize:path thin-safe shrink; do
    order=()
    [[ $strategy == optimize:* ]] && order=(--order "${strategy#optimize:}")
    "$cli" plan "$image" --strategy "${strategy%%:*}" "${order[@]}" -o "$work/plan.json" >/dev/null
    for format in raw qcow2; do
        settle
        status=0
        timed "$cli" apply "$image" --plan "$work/plan.json" -o "$work/out.$format" --output-format "$format" \
            --json >"$work/apply.json" 2>"$work/err" || status=$?
        if [ "$status" -ne 0 ]; then
            echo "| apply $strategy | $format | exit $status: $(head -c 200 "$work/err") | no | | | | | |"
            failed=1
            continue
        fi
        read -r moves verified < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); m = d["moves"]
print(str(m["planned"]) + "/" + str(m["done"]), "yes" if d["verification"]["passed"] and m["planned"] == m["done"] else "no")' \
            "$work/apply.json")
        row "apply $strategy" "$format" "$moves" "$verified" "$(check_output "$work/out.$format" "$work/plan.json")"
    done
done

for format in raw qcow2 vmdk vhdx; do
    settle
    status=0
    timed "$cli" compact "$image" -o "$work/out.$format" --output-format "$format" --json >"$work/compact.json" \
        2>"$work/err" || status=$?
    if [ "$status" -ne 0 ]; then
        echo "| compact | $format | exit $status: $(head -c 200 "$work/err") | no | | | | | |"
        failed=1
        continue
    fi
    verified=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ok = all(v["verification"]["passed"] and v["moves"]["done"] == v["moves"]["planned"] for v in d["volumes"])
print("yes" if ok else "no")' "$work/compact.json")
    row compact "$format" - "$verified" "$(check_output "$work/out.$format" -)"
done
exit "$failed"
