#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One entry point for newcomers and CI:
#   packaging/setup.sh demo   install what is missing, build, generate demo.img, report its verdict
#   packaging/setup.sh test   install what is missing, build, run the whole test suite
#   packaging/setup.sh asan   the same suite built by clang with AddressSanitizer + UBSan, and the fuzzers
#   packaging/setup.sh fuzz   each parser (containers, partition tables, the NTFS scan) under libFuzzer for FUZZ_SECONDS (30),
#                             built in the asan build's tree (nothing more to build after `asan`)
#   packaging/setup.sh deb    build the .debs (CPack: guestfrag, guestfrag-gui) from build/, check them
#                             with lintian, install them with dpkg + apt, smoke-test them
set -euo pipefail

mode=${1:-demo}
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
sudo=""  # what runs apt-get and dpkg -i: nothing as root
[ "$(id -u)" -eq 0 ] || sudo=sudo

install_deps() {
    mapfile -t wanted < <(grep -v '^\s*#' "$root/packaging/debian-build-deps.txt" | sed '/^\s*$/d')
    install_packages "${wanted[@]}"
}

install_packages() {
    local wanted=("$@") missing=()
    for p in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing: ${missing[*]}"
    # A machine whose last dpkg run was cut off (a package half configured, triggers
    # pending) refuses every apt-get install until dpkg finishes that work; finishing it is
    # what apt asks for and is safe at any time.
    if [ -n "$(dpkg --audit)" ]; then
        echo "dpkg was interrupted on this machine: finishing its work (dpkg --configure -a)"
        $sudo dpkg --configure -a
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {  # build DIR [cmake args...]; $targets, when set, limits what is built
    local dir=$1
    shift
    cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
    # shellcheck disable=SC2086 # a list of target names
    cmake --build "$dir" -j "$jobs" ${targets:+--target $targets}
}

# release_build: build/, configured alike for every mode (the demo, the suite and the
# packages), so that `setup.sh test` after `setup.sh demo` builds nothing again: a flag
# changed between the two would recompile every target. With the hardening Debian builds
# its own packages with (dpkg-buildflags: fortify, stack protector, format checks, relro,
# bindnow); debug paths stay absolute, for a debugger in the tree.
debian_buildflag() {
    DEB_BUILD_MAINT_OPTIONS="hardening=+bindnow reproducible=-fixfilepath,-fixdebugpath" dpkg-buildflags --get "$1"
}
release_build() {
    local cflags cxxflags ldflags
    cflags="$(debian_buildflag CPPFLAGS) $(debian_buildflag CFLAGS)"
    cxxflags="$(debian_buildflag CPPFLAGS) $(debian_buildflag CXXFLAGS)"
    ldflags=$(debian_buildflag LDFLAGS)
    build "$root/build" -DGUESTFRAG_WERROR=ON -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cxxflags" \
        -DCMAKE_EXE_LINKER_FLAGS="$ldflags" -DCMAKE_SHARED_LINKER_FLAGS="$ldflags" \
        -DCMAKE_MODULE_LINKER_FLAGS="$ldflags"
}

# sanitized_build: build-asan, one clang build with AddressSanitizer + UBSan for both the suite
# and the fuzzers (everything instrumented for libFuzzer's coverage too, which the suite does
# not mind), so that CI compiles the project twice, not three times. -O1, as the sanitizers'
# authors advise for a usable speed; a Debug build's assertions stay on. Line tables are all
# the sanitizers' reports need; full debug info would only add compile and link time.
sanitized_build() {
    install_packages clang-14 libclang-rt-14-dev
    build "$root/build-asan" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
        -DGUESTFRAG_WERROR=ON -DGUESTFRAG_SANITIZE=address,undefined -DGUESTFRAG_BUILD_FUZZERS=ON \
        -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-gline-tables-only -O1" \
        -DCMAKE_CXX_FLAGS_DEBUG="-gline-tables-only -O1" \
        -DGUESTFRAG_BUILD_BENCH=OFF
}

# run_suite BUILD_DIR: the whole ctest suite. Every oracle is a build dependency, so a test
# that did not run (skipped or disabled) fails the run as a failed test would; the counts
# come from ctest's JUnit report.
run_suite() {
    local dir=$1 status=0
    local report="$dir/ctest-junit.xml"
    ctest --test-dir "$dir" -j "$jobs" --output-on-failure --output-junit "$report" || status=$?
    local total skipped disabled
    total=$(sed -n 's/^\s*tests="\([0-9]*\)".*/\1/p' "$report" | head -1)
    skipped=$(sed -n 's/^\s*skipped="\([0-9]*\)".*/\1/p' "$report" | head -1)
    disabled=$(sed -n 's/^\s*disabled="\([0-9]*\)".*/\1/p' "$report" | head -1)
    echo "ctest: ${total:-0} tests, ${skipped:-?} skipped, ${disabled:-?} disabled"
    [ "$status" -eq 0 ] || return "$status"
    if [ "${total:-0}" -eq 0 ] || [ "${skipped:-1}" -ne 0 ] || [ "${disabled:-1}" -ne 0 ]; then
        echo "error: every test must run: no test may be skipped or disabled" >&2
        return 1
    fi
}

# guest_kernel: the kernel tests/guest traces ntfs3 under. Debian 12's own 6.1 has no ntfs3
# (CONFIG_NTFS3_FS is not set); its 6.12 (linux-image-6.12.*-amd64-unsigned, from
# bookworm-security) is unpacked into .guest-kernel for supermin to boot, never installed.
guest_kernel() {
    local dir=$root/.guest-kernel
    compgen -G "$dir/boot/vmlinuz-*" >/dev/null && return 0
    local package tmp
    package=$(apt-cache pkgnames linux-image-6.12 | grep -E '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' |
        sort -V | tail -1)
    [ -n "$package" ] || {
        echo "error: apt knows no linux-image-6.12.*+deb12-amd64-unsigned (bookworm-security)" >&2
        return 1
    }
    echo "unpacking $package for the ntfs3 guest test"
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download -qq "$package" 2>/dev/null) || {
        $sudo apt-get update -qq
        (cd "$tmp" && apt-get download -qq "$package" 2>/dev/null)
    }
    rm -rf "$dir.new"
    dpkg -x "$tmp"/*.deb "$dir.new"
    rm -rf "$tmp"
    /sbin/depmod -b "$dir.new" "$(basename "$(ls -d "$dir.new"/lib/modules/*)")"
    mv "$dir.new" "$dir"
}

install_deps
case "$mode" in
    demo)
        release_build
        demo="$root/build/demo.img"
        [ -f "$demo" ] || "$root/build/app/cli/guestfrag" mkimage "$demo" --size 2GiB --table gpt --files 20000 --interleave 16 --delete-fraction 0.3 --seed 42
        "$root/build/app/cli/guestfrag" report "$demo"
        ;;
    test)
        guest_kernel
        release_build
        run_suite "$root/build"
        ;;
    asan)
        # libparted 3.5 reads out of bounds in its own constructor (strchr in
        # ped_disk_gpt_init) before any of our code runs: suppress that library's
        # interceptor reports only. Exported for the build too, since test discovery runs
        # the test binary. A 64 MB quarantine (the default is 256 MB of freed memory held
        # back) keeps a child's peak RSS close to what the code itself holds, so the
        # hostile-input tests' 256 MB bound means the same as in the release build.
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_strchr=0:quarantine_size_mb=64:suppressions=$root/tests/asan.supp
        export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0
        export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
        guest_kernel
        sanitized_build
        run_suite "$root/build-asan"
        ;;
    fuzz)
        install_packages fdisk python3
        # Only the fuzzers are built here (already, after `asan`). The NTFS seed volume is
        # made by the release build's guestfrag when there is one (CI's test stage made it),
        # else by the sanitized one.
        cli="$root/build/app/cli/guestfrag"
        targets=guestfrag_fuzzers
        [ -x "$cli" ] || { targets+=" guestfrag"; cli="$root/build-asan/app/cli/guestfrag"; }
        sanitized_build
        # UBSan reports and goes on by default, which libFuzzer does not see: a finding must
        # stop the run and keep its input, as the ntfs_fuzz ones read from a log did not.
        export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
        for fuzzer in "$root"/build-asan/tests/fuzz/*_fuzz; do
            name=$(basename "$fuzzer" _fuzz)
            corpus="$root/build-asan/corpus/$name"
            mkdir -p "$corpus"
            # Seeds: small valid images of the format, made by qemu-img (sfdisk for tables).
            case "$name" in
                partition)
                    # 128 KiB disks (sizes in sectors): small inputs keep the fuzzer fast.
                    truncate -s 128K "$corpus/mbr" "$corpus/gpt"
                    printf 'label: dos\n,32,7\n,,E\n,16,7\n,,7\n' | /usr/sbin/sfdisk -q "$corpus/mbr"
                    printf 'label: gpt\n,32\n,,\n' | /usr/sbin/sfdisk -q "$corpus/gpt" ;;
                qcow2) qemu-img create -q -f qcow2 "$corpus/seed" 4M ;;
                vhd) qemu-img create -q -f vpc "$corpus/seed" 4M ;;
                vhdx) qemu-img create -q -f vhdx "$corpus/seed" 4M ;;
                vmdk) qemu-img create -q -f vmdk "$corpus/seed" 4M ;;
                # The selector byte (tests/fuzz/trace_fuzz.cpp), then the file: every real
                # Prefetch sample, and a Layout.ini as Windows writes it (UTF-16LE, BOM, CRLF).
                trace)
                    for pf in "$root"/tests/data/prefetch/*.pf; do
                        { printf '\001'; cat "$pf"; } >"$corpus/$(basename "$pf")"
                    done
                    { printf '\000\377\376'
                      printf '[OptimalLayoutFile]\r\nVersion=1\r\nC:\\Windows\\System32\\ntdll.dll\r\n' |
                          iconv -f UTF-8 -t UTF-16LE; } >"$corpus/layout.ini" ;;
                # A whole device model as estimate --json prints it under device_models.
                device_model)
                    printf '%s\n' '{"hdd": {"rpm": 7200, "settle_seconds": 0.0005, "full_stroke_seconds": 0.015,' \
                        '"stroke_bytes": 1e12, "transfer_bytes_per_second": 150e6,' \
                        '"write_transfer_bytes_per_second": 150e6,' \
                        '"first_write": {"zero_bytes_per_second": 150e6, "allocate_seconds": 0.0129}},' \
                        '"ssd": {"io_latency_seconds": 8e-5, "transfer_bytes_per_second": 5e8,' \
                        '"write_latency_seconds": 4e-5, "write_transfer_bytes_per_second": 4.5e8},' \
                        '"array": {"random_io_seconds": 0.0003, "sequential_window_bytes": 1048576,' \
                        '"first_write": {"allocate_seconds": 0.002856}}}' >"$corpus/seed" ;;
                # fio's JSON output of a fresh write, reads and rewrites, cut to what
                # calibrate reads: enough jobs to fit every parameter.
                fio_calibrate)
                    printf '%s\n' '{"fio version": "fio-3.33", "global options": {"filename": "d", "size": "64k"},' \
                        '"jobs": [{"jobname": "fresh", "error": 0, "job options": {"rw": "randwrite", "bs": "4k"},' \
                        '"read": {"total_ios": 0}, "write": {"total_ios": 16, "lat_ns": {"mean": 90000.5}}},' \
                        '{"jobname": "read", "error": 0, "job options": {"rw": "read", "bs": "16k"},' \
                        '"read": {"total_ios": 4, "lat_ns": {"mean": 150000}}, "write": {"total_ios": 0}},' \
                        '{"jobname": "random", "error": 0, "job options": {"rw": "randread", "bs": "16k"},' \
                        '"read": {"total_ios": 4, "lat_ns": {"mean": 190000}}, "write": {"total_ios": 0}},' \
                        '{"jobname": "rewrite", "error": 0, "job options": {"rw": "write", "bs": "16k", "iodepth": "1"},' \
                        '"read": {"total_ios": 0}, "write": {"total_ios": 4, "lat_ns": {"mean": 110000}}},' \
                        '{"jobname": "mixed", "error": 0, "job options": {"rw": "randrw", "bs": "4k"},' \
                        '"read": {"total_ios": 9, "lat_ns": {"mean": 80000}}, "write": {"total_ios": 7, "lat_ns": {"mean": 70000}}}]}' \
                        >"$corpus/seed" ;;
                # A child on a server and the parent name it records, split at a NUL.
                nbd_uri) printf 'nbd+unix:///vms/clone.qcow2?socket=/run/nbd.sock&tls-psk-file=/k\0../base.qcow2' >"$corpus/seed" ;;
                # A real plan of a small volume (the release build's guestfrag, as for ntfs).
                plan)
                    export ASAN_OPTIONS=suppressions=$root/tests/asan.supp:intercept_strchr=0:detect_leaks=0
                    "$cli" mkimage "$corpus/volume.img" --size 8M --table none --files 20 --seed 1 >/dev/null
                    "$cli" plan "$corpus/volume.img" --strategy optimize -o "$corpus/seed" >/dev/null
                    unset ASAN_OPTIONS
                    rm "$corpus/volume.img" ;;
                # The smallest volume mkimage makes, as tests/fuzz/ntfs_fuzz.cpp's sector
                # records: every sector but those of zeros and the $LogFile's (all 0xFF).
                ntfs)
                    ASAN_OPTIONS=suppressions=$root/tests/asan.supp:intercept_strchr=0:detect_leaks=0 \
                        "$cli" mkimage "$corpus/volume.img" --size 6M --table none \
                        --cluster-size 512 --files 2 --dirs 1 --seed 1 >/dev/null
                    python3 -c 'import struct, sys
v = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb") as out:
    for s in range(len(v) // 512):
        c = v[s * 512:(s + 1) * 512]
        if any(c) and c != b"\xff" * 512: out.write(struct.pack("<H", s) + c)' "$corpus/volume.img" "$corpus/seed"
                    rm "$corpus/volume.img" ;;
            esac
            echo "fuzzing $name for ${FUZZ_SECONDS:-30} s"
            # Findings (crash-, leak-, timeout-, oom-, slow-unit- files) land beside the corpus;
            # docs/fuzzing.md says how to reproduce them and how longer runs are scheduled.
            artifacts="$root/build-asan/artifacts/$name"
            mkdir -p "$artifacts"
            ASAN_OPTIONS=suppressions=$root/tests/asan.supp:intercept_strchr=0:detect_leaks=0 \
                "$fuzzer" -max_total_time="${FUZZ_SECONDS:-30}" -rss_limit_mb=2048 -print_final_stats=1 \
                -artifact_prefix="$artifacts/" ${FUZZ_OPTIONS:-} "$corpus" 2>&1 | tail -3
        done
        ;;
    deb)
        release_build
        rm -f "$root"/build/guestfrag*_*.deb
        (cd "$root/build" && cpack -G DEB >/dev/null)
        cli_deb=$(ls "$root"/build/guestfrag_*.deb)
        pg_deb=$(ls "$root"/build/guestfrag-postgresql_*.deb)
        gui_deb=$(ls "$root"/build/guestfrag-gui_*.deb)
        debs=("$cli_deb" "$pg_deb" "$gui_deb")
        for deb in "${debs[@]}"; do dpkg-deb --field "$deb" Package Depends; done
        # A headless host installs the CLI without Qt, and without libpq unless a fleet
        # database asks for the PostgreSQL module.
        if dpkg-deb --field "$cli_deb" Depends | grep -Eq 'qt6|libpq'; then
            echo "error: $cli_deb depends on Qt or libpq" >&2
            exit 1
        fi
        dpkg-deb --field "$pg_deb" Depends | grep -q libpq5 || { echo "error: $pg_deb lacks libpq5" >&2; exit 1; }
        # lintian: an error or a warning fails the build.
        install_packages lintian
        lintian --fail-on error,warning "${debs[@]}"
        # dpkg -i leaves missing dependencies unconfigured; apt-get -f brings them in.
        $sudo dpkg -i "${debs[@]}" || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -f -y -qq
        for package in guestfrag guestfrag-postgresql guestfrag-gui; do
            dpkg-query -W -f='${Status}\n' "$package" | grep -q "install ok installed"
        done
        systemd-analyze verify /usr/lib/systemd/system/guestfrag-batch.service /usr/lib/systemd/system/guestfrag-batch.timer
        /usr/bin/guestfrag --version
        QT_QPA_PLATFORM=offscreen /usr/bin/guestfrag-gui --help | head -3
        # The man page is made from --help: it names the program, never the build directory,
        # and has the sections a reader looks for.
        man=/usr/share/man/man1/guestfrag.1.gz
        if zgrep -q "$root" "$man"; then echo "error: $man names the build directory" >&2; exit 1; fi
        for section in COMMANDS '"EXIT STATUS"' EXAMPLES; do
            zgrep -q "^\.SH $section\$" "$man" || { echo "error: $man has no $section section" >&2; exit 1; }
        done
        # ... and is read at 80 columns.
        wide=$(MANWIDTH=80 man -l "$man" 2>/dev/null | awk 'length > 80' | wc -l)
        [ "$wide" -eq 0 ] || { echo "error: $man has $wide lines over 80 columns" >&2; exit 1; }
        # The installed completion is the installed program's own.
        diff <(/usr/bin/guestfrag completion bash) /usr/share/bash-completion/completions/guestfrag
        check=$(mktemp -d)
        /usr/bin/guestfrag mkimage "$check/disk.img" --size 64MiB --files 100 >/dev/null
        # Whole, then its first lines: under pipefail, `| head` would end it with SIGPIPE.
        /usr/bin/guestfrag analyze "$check/disk.img" >"$check/analysis.txt"
        head -5 "$check/analysis.txt"
        # The installed program loads the installed PostgreSQL module: a server that is not
        # there is libpq's error, not a module that is missing.
        pg_error=$(/usr/bin/guestfrag history "$check/disk.img" --db "postgresql://guestfrag@/x?host=$check" 2>&1) &&
            { echo "error: history opened a database that is not there" >&2; exit 1; }
        echo "$pg_error"
        case $pg_error in *"connection to server"*) ;; *) exit 1 ;; esac
        rm -rf "$check"
        ;;
    *)
        echo "usage: $0 demo|test|asan|fuzz|deb" >&2
        exit 1
        ;;
esac
