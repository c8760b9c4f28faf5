#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A real guest as the estimate's oracle (docs/estimate.md, "Against a real guest"): the
# libguestfs appliance, a Linux kernel under qemu, mounts a generated NTFS volume that nbdkit
# serves read-only with its log filter, so that every request the guest kernel sends to the
# virtual disk is recorded, as vscsiStats records them on ESXi. With the page cache dropped, the guest reads
# every file once (find . -type f -print0 | xargs -0 cat: the directory indexes' order); the
# log of that read alone is the trace. The same is done on the output of
# `plan --strategy optimize --order path` applied. guestfrag then estimates the same reads
# (the guest's file list as a trace:LIST workload, read by the guest profile of the same driver,
# read-ahead and reader: --guest linux-ntfs3g or linux-ntfs3, --reader) beside the trace
# (estimate --compare), both timed by the same device models, and this prints one row per
# run for docs/benchmarks.md.
#
# Usage: [PLANS="STRATEGY[:ORDER] ..."] bench/guest_trace.sh [BUILD_DIR] [DRIVER] [READ_AHEAD_KB...]
#   DRIVER is the guest's NTFS driver, ntfs-3g (default) or ntfs3 (a kernel that has it);
#   READ_AHEAD_KB the guest disk's read_ahead_kb for each run (default: 128, the kernel's);
#   PLANS the plans whose outputs are read after the volume itself (default: optimize:path);
#   VOLUME the volume's mkimage options (default: --size 1GiB --files 3000 --interleave 12
#   --seed 21); READER how the guest reads every file: cat (find | xargs cat, default) or
#   tar (tar cf - . | cat, the same files in the same directory order);
#   TRACE_DIR, when set, keeps each run's trace, file list and image there, named
#   DRIVER-READ_AHEAD_KB-SIDE.{log,list} and SIDE.img, for `estimate --compare` later;
#   TRACE_AT where the trace is taken: nbd (default; nbdkit's log, the requests qemu's NBD
#   client sends) or scsi (qemu's scsi_req_parsed trace events: the commands as the guest
#   sent them to its virtual disk, where vscsiStats sees them; kept as blkparse lines).
# Needs guestfish's appliance (libguestfs, supermin, a kernel in /boot) and nbdkit. Without a
# /dev/kvm that qemu can use the appliance runs under TCG (LIBGUESTFS_BACKEND_SETTINGS=
# force_tcg), about 30 s a run. ntfs3 needs a kernel that has it (Debian 12's 6.1 has not):
# GUEST_KERNEL names one unpacked with dpkg -x (packaging/setup.sh test unpacks Debian 12's
# 6.12 into .guest-kernel), which the appliance then boots, with its modules, from a cache
# of its own.
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup "${1:-}"
driver=${2:-ntfs-3g}
read_ahead=("${@:3}")
[ ${#read_ahead[@]} -gt 0 ] || read_ahead=(128)
export LIBGUESTFS_BACKEND=direct
if [ -n "${GUEST_KERNEL:-}" ]; then
    guest_version=$(basename "$(ls -d "$GUEST_KERNEL"/lib/modules/*)")
    export SUPERMIN_KERNEL=$GUEST_KERNEL/boot/vmlinuz-$guest_version SUPERMIN_KERNEL_VERSION=$guest_version
    export SUPERMIN_MODULES=$GUEST_KERNEL/lib/modules/$guest_version LIBGUESTFS_CACHEDIR=$GUEST_KERNEL/cache
    mkdir -p "$LIBGUESTFS_CACHEDIR"  # libguestfs does not make it
fi
command -v guestfish >/dev/null || { echo "guestfish is missing (apt install guestfish)" >&2; exit 1; }

# KVM where it works. A /dev/kvm that qemu cannot use is as good as none: on a nested host
# that refuses a vCPU's MSR, qemu aborts as it sets the vCPU up, and libguestfs, which tries
# KVM first, never falls back. A paused vCPU that is still there after 2 s was set up.
kvm_works() {
    local status=0
    [ -w /dev/kvm ] || return 1
    timeout 2 qemu-system-x86_64 -machine accel=kvm -cpu max -display none -nodefaults -no-user-config -S \
        >/dev/null 2>&1 || status=$?
    [ "$status" -eq 124 ]
}
# An appliance that failed or hung under KVM (launch) does so again on the same host: until
# it reboots, later runs (the other driver's test, the sanitized suite's) go straight to TCG
# rather than wait launch_limit seconds each.
kvm_failed=${TMPDIR:-/tmp}/guestfrag-kvm-failed.$(cat /proc/sys/kernel/random/boot_id)
accel=KVM
{ [ ! -e "$kvm_failed" ] && kvm_works; } || { accel=TCG; export LIBGUESTFS_BACKEND_SETTINGS=force_tcg; }
command -v nbdkit >/dev/null || { echo "nbdkit is missing" >&2; exit 1; }

# TRACE_AT=scsi: the trace is taken where the guest's requests enter the virtual disk
# (qemu's scsi_req_parsed trace events), not where qemu's NBD client sends them to nbdkit:
# the NBD client has at most 16 requests in flight and sends a longer burst of them out of
# order (in groups of 16, some descending), which no hypervisor's virtual disk sees.
case ${TRACE_AT:=nbd} in
    nbd) ;;
    scsi)
        printf '#!/bin/sh\nexec qemu-system-x86_64 -trace enable=scsi_req_parsed* -D %s "$@"\n' \
            "$work/qemu.log" >"$work/qemu"
        chmod +x "$work/qemu"
        export LIBGUESTFS_HV=$work/qemu
        ;;
    *) echo "TRACE_AT must be nbd or scsi" >&2; exit 1 ;;
esac

read -ra volume <<<"${VOLUME:---size 1GiB --files 3000 --interleave 12 --seed 21}"
case ${READER:=cat} in
    cat) reader="find . -type f -print0 | xargs -0 cat > /dev/null" ;;
    # Not into /dev/null: GNU tar does not read the files of an archive written there.
    tar) reader="tar cf - . | cat > /dev/null" ;;
    *) echo "READER must be cat or tar" >&2; exit 1 ;;
esac
before=$data/guest-$(echo "${volume[*]}" | md5sum | cut -c1-8).img
[ -f "$before" ] || "$cli" mkimage "$before" --table none "${volume[@]}" >/dev/null
# One output per plan, named for it: "after STRATEGY [--order ORDER]".
read -ra plans <<<"${PLANS:-optimize:path}"
for p in "${plans[@]}"; do
    args=(--strategy "${p%%:*}")
    [[ $p == *:* ]] && args+=(--order "${p#*:}")
    "$cli" plan "$before" "${args[@]}" -o "$work/plan-$p.json" >/dev/null
    "$cli" apply "$before" --plan "$work/plan-$p.json" -o "$work/after-$p.img" >/dev/null
done

server=
guest=
# kill_guest: the appliance's guestfish server and its children (qemu, libguestfs' recovery
# process) killed, for a server that no longer answers: a client's "exit" would wait for it.
kill_guest() {
    [ -n "$guest" ] || return 0
    pkill -KILL -P "$guest" 2>/dev/null || true  # none left when qemu aborted
    kill -KILL "$guest" 2>/dev/null || true
    guest=
}
stop() {
    [ -n "$guest" ] && { timeout 30 guestfish --remote="$guest" -- exit 2>/dev/null || kill_guest; }
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    guest= server=
    return 0
}
trap 'stop; rm -rf "$work"' EXIT

# launch SOCKET: an appliance (pid in $guest) with the NBD disk at SOCKET, started.
# A KVM appliance that has not started within launch_limit seconds hung in its kernel's
# boot (seen on a fresh host: a vCPU spinning after the disk's first SCSI commands, for as
# long as it was let run), and the run goes under TCG instead.
launch_limit=60
launch() {
    eval "$(guestfish --listen)"
    guest=$GUESTFISH_PID
    guestfish --remote -- add-drive "" protocol:nbd server:unix:"$1" format:raw readonly:true
    local bound=()
    [ "$accel" = KVM ] && bound=(timeout "$launch_limit")
    "${bound[@]}" guestfish --remote -- run
}

# trace IMAGE READ_AHEAD_KB LOG LIST: the requests of the guest's read of every file of IMAGE
# into LOG (nbdkit's log format), the files it read, in order, into LIST (volume paths).
trace() {
    local image=$1 kb=$2 log=$3 list=$4 socket=$work/nbd.sock
    rm -f "$socket" "$log.all"
    nbdkit --foreground --readonly --unix "$socket" --filter=log file "$image" logfile="$log.all" &
    server=$!
    for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
    if ! launch "$socket"; then
        [ "$accel" = KVM ] || { echo "the appliance did not start under TCG either" >&2; exit 1; }
        # The probe's 2 s can end before a loaded host's qemu sets its vCPU up, and pass a
        # KVM that then aborts qemu, or the guest hangs (launch): this run and the rest go
        # under TCG.
        kill_guest
        echo "the appliance failed or hung under KVM: it runs under TCG (until $kvm_failed goes)" >&2
        : >"$kvm_failed"
        accel=TCG
        export LIBGUESTFS_BACKEND_SETTINGS=force_tcg
        launch "$socket"
    fi
    # Before the mount: a file opened on the disk (ntfs-3g's) keeps the read-ahead it was
    # opened with. The appliance's own shell (debug sh) is outside the guest's root, /sysroot.
    guestfish --remote -- debug sh "echo $kb > /sys/block/sda/queue/read_ahead_kb" >/dev/null
    guestfish --remote -- mount-vfs ro "$driver" /dev/sda /
    # Again after the mount, for ntfs3, whose files take it when opened: the appliance's udev
    # may have set the default back while the mount ran (once in about 40 runs a guest read
    # as if it had never been set).
    guestfish --remote -- debug sh "echo $kb > /sys/block/sda/queue/read_ahead_kb" >/dev/null
    guestfish --remote -- debug sh "cd /sysroot && find . -type f > /tmp/list && sync && \
        echo 3 > /proc/sys/vm/drop_caches" >/dev/null
    local first qemu_first
    first=$(wc -l <"$log.all")
    qemu_first=$(wc -l <"$work/qemu.log" 2>/dev/null || echo 0)
    # find (and tar) meet the files as find did for /tmp/list: the directory indexes' order.
    # read_ahead_kb once more in the same shell, right before the files are opened.
    guestfish --remote -- debug sh "echo $kb > /sys/block/sda/queue/read_ahead_kb && cd /sysroot && \
        $reader" >/dev/null
    local last qemu_last
    last=$(wc -l <"$log.all")
    qemu_last=$(wc -l <"$work/qemu.log" 2>/dev/null || echo 0)
    local read_ahead_now
    read_ahead_now=$(guestfish --remote -- debug sh "cat /sys/block/sda/queue/read_ahead_kb")
    [ "$read_ahead_now" = "$kb" ] || {
        echo "the guest's read_ahead_kb became $read_ahead_now while it read, not $kb" >&2
        exit 1
    }
    guestfish --remote -- debug sh "cat /tmp/list" | sed -e 's|^\./||' -e 's|/|\\|g' -e 's|^|\\|' >"$list"
    stop
    sed -n "$((first + 1)),${last}p" "$log.all" >"$log"
    rm -f "$log.all"
    [ "$TRACE_AT" = scsi ] || return 0
    # The SCSI commands the guest sent its disk (target 0; the appliance's own disk is 1),
    # as blkparse lines: READ(10), (12), (16), with the length scsi_req_parsed gave each tag.
    sed -n "$((qemu_first + 1)),${qemu_last}p" "$work/qemu.log" | awk '
        $1 == "scsi_req_parsed" && $3 == 0 { length_of[$7] = $NF }
        $1 == "scsi_req_parsed_lba" && $3 == 0 && ($9 == 40 || $9 == 168 || $9 == 136) {
            printf "8,0 0 %d 0.000000000 0 D R %s + %d [guest]\n", ++n, $11, length_of[$7] / 512
        }' >"$log"
}

# largest_kib LOG: the largest request of the trace, in KiB.
largest_kib() {
    if [ "$TRACE_AT" = scsi ]; then
        awk 'BEGIN { m = 0 } $10 > m { m = $10 } END { printf "%d\n", m / 2 }' "$1"
    else
        grep ' Read ' "$1" | grep -o 'count=0x[0-9a-f]*' | sort -u |
            while read -r count; do echo $((16#${count#count=0x} / 1024)); done | sort -n | tail -1
    fi
}

# traced IMAGE READ_AHEAD_KB LOG LIST: trace, and trace again (twice at most) when the
# guest read as if read_ahead_kb were the kernel's default 128 though it read back as set
# before and after the read (about one run in eight of the ntfs3 guest, at 0 and at 1024;
# the cause is not known): at 0 a request larger than a page, above 256 none larger than
# 256 KiB (the generated volumes hold files of megabytes, read in windows of read_ahead_kb).
traced() {
    local attempt largest
    for attempt in 1 2 3; do
        trace "$@"
        largest=$(largest_kib "$3")
        if [ "$2" = 0 ]; then
            [ "$largest" -gt 4 ] || return 0
        elif [ "$2" -gt 256 ]; then
            [ "$largest" -le 256 ] || return 0
        else
            return 0
        fi
        echo "the guest's largest request was $largest KiB at read_ahead_kb $2 (run $attempt); tracing again" >&2
    done
    echo "the guest kept reading as if read_ahead_kb were not $2" >&2
    exit 1
}

echo "$(guestfish --version), $(nbdkit --version | head -1), guest driver $driver, $accel" >&2
echo "| volume | read_ahead_kb | source | IOs | mean IO | sequential (+1) | near-seq. (+1..+8) | HDD s | array s |"
echo "|---|---|---|---|---|---|---|---|---|"
for kb in "${read_ahead[@]}"; do
    for side in before "${plans[@]}"; do
        image=$before label="before any plan"
        if [ "$side" != before ]; then
            image=$work/after-$side.img label="after ${side%%:*}"
            [[ $side == *:* ]] && label+=" --order ${side#*:}"
        fi
        traced "$image" "$kb" "$work/$side.log" "$work/$side.list"
        "$cli" estimate "$image" --workload "trace:$work/$side.list" --compare "$work/$side.log" \
            --guest "linux-${driver//-/}" --read-ahead "${kb}KiB" --reader "$READER" --json \
            >"$work/$side.json"
        if [ -n "${TRACE_DIR:-}" ]; then
            mkdir -p "$TRACE_DIR"
            cp "$work/$side.log" "$TRACE_DIR/$driver-$kb-$side.log"
            cp "$work/$side.list" "$TRACE_DIR/$driver-$kb-$side.list"
            [ -f "$TRACE_DIR/$side.img" ] || cp --sparse=always "$image" "$TRACE_DIR/$side.img"
        fi
        python3 - "$work/$side.json" "$label" "$kb" <<'PY'
import json, sys
doc, label, kb = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
volume = doc["volumes"][0]
for source, s in (("real guest (traced)", volume["traced"]), ("estimate", volume["before"])):
    d = s["device_seconds"]
    print(f"| {label} | {kb} | {source} | {s['ios']:,} | {s['mean_io_bytes'] / 1024:.1f} KiB | "
          f"{s['sequential_percent']:.1f} % | {s['near_sequential_percent']:.1f} % | "
          f"{d['hdd']:.2f} | {d['array']:.2f} |")
PY
    done
done
