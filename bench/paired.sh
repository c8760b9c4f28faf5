#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Paired timing: a command and its anchor run in turn (A B A B ...), each under
# /usr/bin/time, so that a ratio taken pair by pair holds while the host's speed drifts
# (docs/benchmarks.md quotes the medians). Each command is one shell string run by sh -c;
# its own output is kept in WORK/paired.log. PAIRED_BEFORE, when set, is a shell string run
# untimed before each of them, then sync: removing the last outputs there keeps the host's
# work of deleting them out of the times (on a file system mounted with `discard`, deleting
# a 4.6 GB output that had holes punched took 11 s here, more than the copy).
# Usage: [PAIRED_BEFORE='rm -f OUT...'] bench/paired.sh RUNS 'COMMAND' 'ANCHOR' [WORK]
# Prints each pair, then the medians: wall seconds and peak RSS of each, and A/B.
set -euo pipefail
source "$(dirname "$0")/common.sh"
runs=${1:?runs}
a=${2:?command}
b=${3:?anchor}
work=${4:-${TMPDIR:-/tmp}}
log=$work/paired.log
: >"$log"

timed() {  # timed CMD: "wall peak_kib" of sh -c CMD
    /usr/bin/time -o "$work/paired.time" -f "%e %M" sh -c "$1" >>"$log" 2>&1 ||
        { echo "failed: $1 (see $log)" >&2; exit 1; }
    cat "$work/paired.time"
}

: >"$work/paired.rows"
echo "pair | A s | A peak KiB | B s | B peak KiB | A/B"
settle() {
    [ -z "${PAIRED_BEFORE:-}" ] || sh -c "$PAIRED_BEFORE" >>"$log" 2>&1
    sync
}
for i in $(seq "$runs"); do
    settle
    read -r as am < <(timed "$a")
    settle
    read -r bs bm < <(timed "$b")
    ratio=$(awk -v x="$as" -v y="$bs" 'BEGIN {printf "%.2f", x / y}')
    echo "$i | $as | $am | $bs | $bm | $ratio"
    echo "$as $am $bs $bm $ratio" >>"$work/paired.rows"
done
col() { awk -v c="$1" '{print $c}' "$work/paired.rows" | median; }
echo "median | $(col 1) | $(col 2) | $(col 3) | $(col 4) | $(col 5)"
