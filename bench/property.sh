#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The long run of the property tests (tag [property]: tests/unit/apply_property_test.cpp,
# every strategy planned, applied with its proofs and analysed again; plan_property_test.cpp,
# optimize's promise in every order; the suite runs 2 and 3 cases of lists up to 6,000 runs):
# CASES volumes drawn from seeds SEED, SEED+1, ..., the attribute-list pair up to RUNS runs
# (60,000: lists of about two hundred entries). A failing case prints its seed and the
# mkimage line that makes its volume again.
# Usage: bench/property.sh [BUILD_DIR] [CASES] [SEED] [RUNS]
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
export GUESTFRAG_PROPERTY_CASES=${2:-200} GUESTFRAG_PROPERTY_SEED=${3:-1000} GUESTFRAG_PROPERTY_RUNS=${4:-60000}
start=$(date +%s)
"$build/tests/guestfrag_tests" "[property]"
echo "$GUESTFRAG_PROPERTY_CASES cases from seed $GUESTFRAG_PROPERTY_SEED, lists up to" \
    "$GUESTFRAG_PROPERTY_RUNS runs: $(($(date +%s) - start)) s"
