#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Giving the space back (docs/compact.md), side by side with its peers on the same images:
#   - guestfrag compact, without and with packing (1 MiB granules for raw, the format's own
#     block for containers);
#   - "zero the free clusters, then convert": ntfswipe --unused on the NTFS partition (cut
#     out with dd and put back), then qemu-img convert into the input's format;
#   - virt-sparsify (guestfs-tools), when its appliance runs on this machine (where KVM
#     cannot start it, LIBGUESTFS_BACKEND_SETTINGS=force_tcg runs it under TCG, slower).
# Per run: wall time (and as a multiple of the anchor, `cp --sparse=always` of the input
# measured in the same run), peak RSS, the bytes the output holds on the host, and the 1 MiB
# granules it stores data in (`qemu-img map`).
# Usage: bench/compact.sh [BUILD_DIR]; COMPACT_1M=1 adds the 1M-file volume (slow to make).
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"

demo=$data/compact-demo.raw
[ -f "$demo" ] || "$cli" mkimage "$demo" --size 2GiB --table gpt --files 20000 --interleave 16 \
    --delete-fraction 0.3 --seed 42 >/dev/null
[ -f "$data/compact-demo.qcow2" ] || qemu-img convert -f raw -O qcow2 "$demo" "$data/compact-demo.qcow2"
[ -f "$data/compact-demo.vmdk" ] || qemu-img convert -f raw -O vmdk "$demo" "$data/compact-demo.vmdk"
images=("$demo" "$data/compact-demo.qcow2" "$data/compact-demo.vmdk")
if [ "${COMPACT_1M:-0}" = 1 ]; then
    big=$data/compact-1m.raw
    [ -f "$big" ] || "$cli" mkimage "$big" --size 16GiB --files 1250000 --fill 0.15 --seed 3 >/dev/null
    images+=("$big")
fi

granules() {  # granules FILE FORMAT: 1 MiB granules qemu-img map reports data in
    qemu-img map --output=json -f "$2" "$1" | python3 -c '
import json, sys
g = set()
for e in json.load(sys.stdin):
    if e["data"]:
        g.update(range(e["start"] >> 20, (e["start"] + e["length"] + (1 << 20) - 1) >> 20))
print(len(g))'
}

held() { echo $(( $(stat -L -c %b "$1") * 512 )); }

# Every run starts from the same page cache: the last output gone and written out, and, where
# this user may drop the cache, nothing cached but the input, read back whole. Writing gigabytes
# costs what the kernel must reclaim to cache them, so without this a run that follows another
# one's output measured up to four times slower (cp of the 1M-file volume: 2.3 s to 9.4 s).
settle() {  # settle FILE...: removes FILEs, then leaves only $image cached
    rm -f "$@"
    sync
    if [ -w /proc/sys/vm/drop_caches ]; then echo 1 >/proc/sys/vm/drop_caches; fi
    cat "$image" >/dev/null
    sleep 2
}

measure() {  # measure NAME OUTPUT FORMAT COMMAND...: runs COMMAND, prints a row
    local name=$1 out=$2 format=$3 measured
    shift 3
    settle "$out"
    /usr/bin/time -o "$work/time" -f "%e %M" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; return 1; }
    measured=$(tail -1 "$work/time")
    local wall=${measured% *} rss=${measured#* }
    printf '| %s | %s | %.1f (%.2fx) | %d MiB | %.2f GiB | %s |\n' "$(basename "$image")" "$name" "$wall" \
        "$(echo "$wall / $anchor" | bc -l)" $((rss / 1024)) "$(echo "$(held "$out") / 2^30" | bc -l)" "$(granules "$out" "$format")"
}

echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), page cache $([ -w /proc/sys/vm/drop_caches ] && echo "dropped" || echo "not dropped (not root)") before each run"
echo
echo "| image | method | wall s (x anchor) | peak RSS | host bytes of the output | 1 MiB granules with data |"
echo "|---|---|---|---|---|---|"
for image in "${images[@]}"; do
    format=$(qemu-img info --output=json "$image" | python3 -c 'import json,sys; print(json.load(sys.stdin)["format"])')
    settle "$work/out"
    anchor=$( { /usr/bin/time -f "%e" cp --sparse=always "$image" "$work/anchor" >/dev/null; } 2>&1 | tail -1)
    rm -f "$work/anchor"
    printf '| %s | input (anchor: cp --sparse=always %.1f s) | | | %.2f GiB | %s |\n' "$(basename "$image")" "$anchor" \
        "$(echo "$(held "$image") / 2^30" | bc -l)" "$(granules "$image" "$format")"
    out_format=$format
    [ "$format" = raw ] || [ "$format" = qcow2 ] || [ "$format" = vmdk ] || out_format=qcow2
    measure "guestfrag compact --no-pack" "$work/out" "$out_format" \
        "$cli" compact "$image" -o "$work/out" --output-format "$out_format" --no-pack
    measure "guestfrag compact" "$work/out" "$out_format" \
        "$cli" compact "$image" -o "$work/out" --output-format "$out_format"
    if [ "$out_format" = raw ]; then
        measure "guestfrag compact --granule 64K" "$work/out" raw "$cli" compact "$image" -o "$work/out" --granule 64K
    fi

    # The peer path: zero the free clusters of the partition, then convert.
    start=$(date +%s.%N)
    qemu-img convert -f "$format" -O raw "$image" "$work/zeroed.raw"
    offset=$("$cli" analyze "$image" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["volumes"][0]["offset"])')
    length=$("$cli" analyze "$image" --json | python3 -c 'import json,sys; v=json.load(sys.stdin)["volumes"][0]; print(v["cluster_size"] * v["total_clusters"])')
    dd if="$work/zeroed.raw" of="$work/part" bs=1M iflag=skip_bytes,count_bytes skip="$offset" count="$length" conv=sparse status=none
    ntfswipe --unused --force --quiet "$work/part" >/dev/null
    dd if="$work/part" of="$work/zeroed.raw" bs=1M oflag=seek_bytes seek="$offset" conv=notrunc,sparse status=none
    rm -f "$work/part"
    measure "zero free clusters (ntfswipe) + qemu-img convert" "$work/out" "$out_format" \
        qemu-img convert -f raw -O "$out_format" "$work/zeroed.raw" "$work/out"
    printf '| | (that path in all: raw copy, ntfswipe of the partition, convert: %.1f s, %.2fx) | | | | |\n' \
        "$(echo "$(date +%s.%N) - $start" | bc -l)" "$(echo "($(date +%s.%N) - $start) / $anchor" | bc -l)"
    rm -f "$work/zeroed.raw"

    if command -v virt-sparsify >/dev/null && [ "${NO_VIRT_SPARSIFY:-0}" != 1 ]; then
        measure "virt-sparsify" "$work/out" "$out_format" \
            virt-sparsify --quiet --format "$format" --convert "$out_format" "$image" "$work/out" ||
            echo "| | virt-sparsify failed: $(grep -m1 'error:' "$work/err" || tail -1 "$work/err") | | | | |"
    fi
    rm -f "$work/out"
done
