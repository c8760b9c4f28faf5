#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Cost against size: wall time and peak RSS of each command on generated volumes of 0.25M,
# 0.5M, 1M and 2M files (SCALE_MAX=10M adds 5M and 10M), each against the anchor measured on
# the same image in the same run: The Sleuth Kit's `icat` of $MFT, the bytes every command
# must read. Ends with the slope per million files (least squares over the sizes run).
# SCALE_FILES="1000000 10000000" runs just those sizes: the 10M image needs about 50 GB of
# disk, more than beside the 5M one on a small machine.
# Usage: bench/scale.sh [BUILD_DIR]      Images are kept in $BENCH_DIR (default BUILD_DIR/bench-data).
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
gui=$build/app/gui/guestfrag-gui

counts=(250000 500000 1000000 2000000)
case ${SCALE_MAX:-2M} in
    2M) ;;
    10M) counts+=(5000000 10000000) ;;
    *) echo "SCALE_MAX is 2M or 10M" >&2; exit 2 ;;
esac
if [ -n "${SCALE_FILES:-}" ]; then
    read -r -a counts <<<"$SCALE_FILES"
    for files in "${counts[@]}"; do
        [[ $files =~ ^[1-9][0-9]*$ ]] || { echo "SCALE_FILES holds file counts, e.g. \"1000000 10000000\"" >&2; exit 2; }
    done
fi

results=$work/results.tsv
measure() {  # files, label, command...
    local files=$1 label=$2
    shift 2
    /usr/bin/time -o "$work/time" -f "%e %M" "$@" >/dev/null 2>"$work/stderr" ||
        { cat "$work/stderr" >&2; exit 1; }
    read -r wall kib <"$work/time"
    printf '%s\t%s\t%s\t%s\n' "$files" "$label" "$wall" "$kib" >>"$results"
    echo "$files files: $label $wall s $((kib / 1024)) MiB" >&2
}

for files in "${counts[@]}"; do
    # The 1M-file volume of docs/benchmarks.md (16 GiB, 15 % full, seed 3) scaled: a quarter
    # more files are made and deleted again, so `files` is the count kept.
    gib=$(( (files * 16 + 999999) / 1000000 ))
    [ "$gib" -ge 4 ] || gib=4
    image=$data/scale-$files.raw
    if [ ! -f "$image" ]; then
        start=$(date +%s)
        "$cli" mkimage "$image" --size "${gib}GiB" --files $((files * 5 / 4)) --fill 0.15 --seed 3 >&2
        echo "mkimage: $(( $(date +%s) - start )) s" >&2
    fi
    offset=$("$cli" analyze "$image" --json | python3 -c \
        'import json,sys; print(json.load(sys.stdin)["volumes"][0]["offset"] // 512)')
    icat -o "$offset" "$image" 0 >/dev/null  # page cache warm: we measure parsing, not the disk
    measure "$files" "icat \$MFT (anchor)" icat -o "$offset" "$image" 0
    measure "$files" "analyze --json" "$cli" analyze "$image" --json
    measure "$files" "analyze --json --files" "$cli" analyze "$image" --json --files
    measure "$files" "plan --strategy defrag" "$cli" plan "$image" --strategy defrag -o "$work/defrag.json"
    measure "$files" "plan --strategy optimize" "$cli" plan "$image" --strategy optimize -o "$work/optimize.json"
    measure "$files" "estimate --plan (optimize)" "$cli" estimate "$image" --plan "$work/optimize.json"
    measure "$files" "report" "$cli" report "$image"
    if [ -x "$gui" ]; then
        measure "$files" "guestfrag-gui --strategy defrag --screenshot" \
            env QT_QPA_PLATFORM=offscreen "$gui" "$image" --strategy defrag --screenshot "$work/gui.png"
    fi
done

python3 - "$results" <<'PY'
import collections, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
by = collections.defaultdict(dict)
for files, label, wall, kib in rows:
    by[label][int(files)] = (float(wall), int(kib) / 1024)
counts = sorted({int(r[0]) for r in rows})
anchor = by["icat $MFT (anchor)"]
print("| command | " + " | ".join(f"{c / 1e6:g}M files: s, MiB, x anchor" for c in counts)
      + " | slope per 1M files: s, MiB |")
print("|---|" + "---|" * (len(counts) + 1))
def slope(points):  # least squares y = a + b x, x in millions of files
    xs = [x / 1e6 for x, _ in points]; ys = [y for _, y in points]
    n = len(xs); mx = sum(xs) / n; my = sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else float("nan")
for label, m in by.items():
    cells = [f"{m[c][0]:.2f}, {m[c][1]:.0f}, {m[c][0] / anchor[c][0]:.1f}x" if c in m else "—" for c in counts]
    pts = sorted(m.items())
    print(f"| `{label}` | " + " | ".join(cells)
          + f" | {slope([(c, v[0]) for c, v in pts]):.2f}, {slope([(c, v[1]) for c, v in pts]):.0f} |")
PY
