#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Planning and estimation benchmark: wall time, user time and peak memory of
# `guestfrag plan` for every strategy and of `guestfrag estimate --plan` on the image that
# bench/run.sh generates. Usage: bench/plan.sh [BUILD_DIR] [IMAGE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
image=${2:-${BENCH_DIR:-$build/bench-data}/bench-200000.img}
cli=$build/app/cli/guestfrag
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -f "$image" ] || { echo "no $image: run bench/run.sh first" >&2; exit 1; }
cat "$image" >/dev/null  # page cache: measure planning, not the disk

echo "| command | wall s | user s | peak RSS |"
echo "|---|---|---|---|"
measure() {  # label, command...
    local label=$1
    shift
    /usr/bin/time -o "$work/time" -f "%e %U %M" "$@" >/dev/null
    read -r wall user kib <"$work/time"
    echo "| $label | $wall | $user | $((kib / 1024)) MiB |"
}
for strategy in defrag consolidate thin-safe shrink; do
    extra=()
    [ "$strategy" = shrink ] && extra=(--granule 1MiB)
    measure "plan --strategy $strategy" "$cli" plan "$image" --strategy "$strategy" "${extra[@]}" -o "$work/$strategy.json"
done
measure "estimate (scan)" "$cli" estimate "$image" --json
measure "estimate --plan defrag (scan)" "$cli" estimate "$image" --plan "$work/defrag.json" --json
