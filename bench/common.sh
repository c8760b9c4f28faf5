# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the benchmark scripts: `bench_setup BUILD_DIR` sets root, build, cli, data (the
# kept images, $BENCH_DIR or BUILD_DIR/bench-data) and work (a scratch folder removed on exit);
# `impact_image PATH` generates the 4 GiB disk of bench/impact.sh and bench/host.sh once;
# `median` prints the median of the numbers on its input, one a line.

bench_setup() {
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    build=${1:-$root/build}
    cli=$build/app/cli/guestfrag
    data=${BENCH_DIR:-$build/bench-data}
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$data"
}

# A fragmented NTFS volume of 20,000 files of pseudo-random data filling ~60 % of 4 GiB.
impact_image() {
    [ -f "$1" ] || "$cli" mkimage "$1" --size 4GiB --files 20000 --seed 1 >/dev/null
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
