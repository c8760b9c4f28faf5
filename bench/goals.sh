#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# apply's and compact's time goals in rounds (docs/benchmarks.md, "The goals in rounds"):
# on the 1M-file volume, the anchor `cp --sparse=always IMAGE COPY && sync`, `compact` and
# `apply` of the optimize plan in MFT order run one after the other in each round, so that
# each ratio is taken against the anchor of its own round while the host's speed drifts.
# Before each command the last outputs are removed, then sync and a second's rest.
# Usage: bench/goals.sh [BUILD_DIR] [ROUNDS] [PAUSE]
#   ROUNDS  rounds to run (default 3)
#   PAUSE   seconds of rest between rounds (default 0): spread over an hour, the rounds
#           meet the host's different states
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
rounds=${2:-3}
pause=${3:-0}
image=$data/scale-1250000.raw
[ -f "$image" ] || "$cli" mkimage "$image" --size 16GiB --files 1250000 --fill 0.15 --seed 3 >/dev/null
plan=$work/plan.json
"$cli" plan "$image" --strategy optimize --order mft -o "$plan" >/dev/null
# The input's data in the page cache, as in every round after the first.
cp --sparse=always "$image" "$work/out.cp"

timed() { # timed CMD: "wall user system peak_kib" of sh -c CMD into $work/time
    rm -f "$work"/out.*
    sync
    sleep 1
    /usr/bin/time -o "$work/time" -f "%e %U %S %M" sh -c "$1" >"$work/log" 2>&1 ||
        { echo "failed: $1" >&2; cat "$work/log" >&2; exit 1; }
}

ratio() { awk -v x="$1" -v y="$2" 'BEGIN {printf "%.2f", x / y}'; }

echo "$(nproc) cores; $image; goals: compact <= 1.5x the anchor, apply <= 2x"
echo
echo "| time | cp s | compact s (user, sys) | apply s (user, sys) | compact / cp | apply / cp |" \
    "compact, apply peak KiB |"
echo "|---|---|---|---|---|---|---|"
: >"$work/ratios"
for i in $(seq "$rounds"); do
    [ "$i" -eq 1 ] || sleep "$pause"
    timed "cp --sparse=always '$image' '$work/out.cp' && sync"
    read -r cw _ _ _ <"$work/time"
    timed "exec '$cli' compact '$image' -o '$work/out.c'"
    read -r kw ku ks km <"$work/time"
    timed "exec '$cli' apply '$image' --plan '$plan' -o '$work/out.a'"
    read -r aw au as am <"$work/time"
    rm -f "$work"/out.*
    kr=$(ratio "$kw" "$cw")
    ar=$(ratio "$aw" "$cw")
    echo "$kr $ar" >>"$work/ratios"
    echo "| $(date +%H:%M) | $cw | $kw ($ku, $ks) | $aw ($au, $as) | $kr | $ar | $km, $am |"
done

echo
echo "median compact / cp $(cut -d' ' -f1 "$work/ratios" | median)," \
    "apply / cp $(cut -d' ' -f2 "$work/ratios" | median);" \
    "rounds within both goals: $(awk '$1 <= 1.5 && $2 <= 2 {n++} END {print n + 0}' "$work/ratios") of $rounds"
