#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The fleet on PostgreSQL (docs/batch.md): 10,000 image results from 8 concurrent batches, and
# `fleet` over 100,000 images, on a server of its own (initdb in a scratch folder, a unix
# socket only, fsync on as a real server has it), against the anchor of one INSERT … SELECT of
# as many rows on the same server in the same run (guestfrag_bench_fleet).
# Usage: bench/fleet.sh [BUILD_DIR] [IMAGES] [SHARDS] [FLEET]
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
owner=()
if [ "$(id -u)" -eq 0 ]; then
    chown postgres "$work"
    owner=(runuser -u postgres --)
fi
"${owner[@]}" "$bin/initdb" -D "$work/data" -U guestfrag -A trust -E UTF8 --locale=C >/dev/null
"${owner[@]}" "$bin/pg_ctl" -D "$work/data" -l "$work/log" -w -o "-k $work -c listen_addresses=" start >/dev/null
trap '"${owner[@]}" "$bin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null; rm -rf "$work"' EXIT
echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}'), $(nproc) CPUs" >&2
# The PostgreSQL module is beside the programs in app/, not beside the benchmark.
GUESTFRAG_MODULE_DIR=$(dirname "$(find "$build/app/lib" -name postgresql.so)") "$build/bench/guestfrag_bench_fleet" "postgresql://guestfrag@/postgres?host=$work" "${2:-10000}" "${3:-8}" "${4:-100000}"
