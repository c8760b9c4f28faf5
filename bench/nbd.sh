#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Images on NBD servers (docs/nbd.md): `analyze --json` of the 1M-file volume of
# docs/benchmarks.md read through nbdkit's file plugin on a unix socket, through the same with
# its delay filter (1 ms per read), and through qemu-nbd, each against the anchor of the local
# analysis of the same file in the same run; and the bytes each read (--stats) against the
# local run's. Page cache warm: the server and the local run read the same cached file.
# Usage: bench/nbd.sh [BUILD_DIR] [ROUNDS]    The image is kept in $BENCH_DIR (default BUILD_DIR/bench-data).
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
rounds=${2:-3}

image=$data/scale-1000000.raw  # the image bench/scale.sh makes for 1M files
[ -f "$image" ] || "$cli" mkimage "$image" --size 16GiB --files 1250000 --fill 0.15 --seed 3 >&2
dir=$(dirname "$image")
name=$(basename "$image")
cat "$image" >/dev/null

pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT
serve() {  # socket, program and arguments...
    local socket=$1
    shift
    "$@" >"$work/server.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do [ -S "$socket" ] && return; sleep 0.1; done
    echo "server on $socket did not start: $(cat "$work/server.log")" >&2
    exit 1
}
serve "$work/file.sock" nbdkit --foreground --unix "$work/file.sock" file dir="$dir"
serve "$work/delay.sock" nbdkit --foreground --unix "$work/delay.sock" --filter=delay file dir="$dir" rdelay=1ms
serve "$work/qemu.sock" qemu-nbd --read-only --format=raw --persistent --shared=4 --socket="$work/qemu.sock" "$image"

run() {  # label, image; prints "label wall bytes"
    /usr/bin/time -o "$work/time" -f "%e %M" "$cli" analyze "$2" --json --stats >/dev/null 2>"$work/stats"
    local bytes
    bytes=$(awk '/^guestfrag: read/ {print $3 + $10}' "$work/stats")
    read -r wall kib <"$work/time"
    echo "$1 $wall $bytes $((kib / 1024))"
}

echo "nbdkit $(nbdkit --version | awk '{print $2}'), $(qemu-nbd --version | head -1), $(nproc) CPUs" >&2
printf '%-28s %8s %7s %14s %7s %8s\n' "read through" "wall s" "x local" "bytes read" "x local" "RSS MiB"
for round in $(seq "$rounds"); do
    read -r _ local_wall local_bytes local_rss < <(run local "$image")
    printf '%-28s %8s %7s %14s %7s %8s\n' "local file (anchor)" "$local_wall" 1.00 "$local_bytes" 1.000 "$local_rss"
    for via in "file:nbdkit file, unix socket" "delay:nbdkit delay rdelay=1ms" "qemu:qemu-nbd, unix socket"; do
        sock=${via%%:*}
        export_name=$name
        [ "$sock" = qemu ] && export_name=
        read -r _ wall bytes rss < <(run "$sock" "nbd+unix:///$export_name?socket=$work/$sock.sock")
        printf '%-28s %8s %7.2f %14s %7.3f %8s\n' "${via#*:}" "$wall" "$(awk "BEGIN {print $wall / $local_wall}")" \
            "$bytes" "$(awk "BEGIN {print $bytes / $local_bytes}")" "$rss"
    done
    [ "$round" -lt "$rounds" ] && echo
done
