#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One entry point for newcomers and CI:
#   packaging/setup.sh demo   install what is missing, build, generate demo.img, analyse it
#   packaging/setup.sh test   install what is missing, build, run the whole test suite
#   packaging/setup.sh asan   the same suite built with AddressSanitizer + UBSan
set -euo pipefail

mode=${1:-demo}
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)

install_deps() {
    mapfile -t wanted < <(grep -v '^\s*#' "$root/packaging/debian-build-deps.txt" | sed '/^\s*$/d')
    local missing=()
    for p in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {  # build DIR [cmake args...]
    local dir=$1
    shift
    cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
}

install_deps
case "$mode" in
    demo)
        build "$root/build"
        demo="$root/build/demo.img"
        [ -f "$demo" ] || "$root/build/app/cli/guestfrag" mkimage "$demo" --size 2GiB --files 20000 --seed 1
        "$root/build/app/cli/guestfrag" analyze "$demo"
        ;;
    test)
        build "$root/build" -DGUESTFRAG_WERROR=ON
        ctest --test-dir "$root/build" -j "$jobs" --output-on-failure
        ;;
    asan)
        build "$root/build-asan" -DGUESTFRAG_WERROR=ON -DGUESTFRAG_SANITIZE=address,undefined \
            -DCMAKE_BUILD_TYPE=Debug -DGUESTFRAG_BUILD_BENCH=OFF
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:suppressions=$root/tests/asan.supp \
            LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            ctest --test-dir "$root/build-asan" -j "$jobs" --output-on-failure
        ;;
    *)
        echo "usage: $0 demo|test|asan" >&2
        exit 1
        ;;
esac
