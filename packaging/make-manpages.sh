#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Generates the man pages from the programs' own --help, so they never drift from the
# code: guestfrag.1 (with one section per subcommand) and, when given, guestfrag-gui.1.
# Usage: make-manpages.sh GUESTFRAG OUTDIR [GUESTFRAG_GUI]
set -eu
cli=$1
# Help wrapped for the man page: its sections indent the text by 7 columns of 80.
export COLUMNS=72
out=$2
gui=${3:-}
mkdir -p "$out"
include=$out/commands.h2m
{
    echo "[COMMANDS]"
    for sub in $("$cli" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
        echo ".SS $sub"
        echo ".nf"
        # Escape roff: backslashes, and lines that would start with a control character.
        "$cli" "$sub" --help | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
        echo ".fi"
    done
    # printf, not echo: dash's echo turns the \f of a font change into a form feed.
    printf '%s\n' "[EXIT STATUS]" \
        ".TP" "0" "Success; for \\fBanalyze \\-\\-check\\fR, nothing is worth doing." \
        ".TP" "1" "Usage error." \
        ".TP" "2" "Bad or unsupported input, with one line on standard error: guestfrag: error: IMAGE: reason." \
        ".TP" "3" "Internal error (a bug, never the input's fault)." \
        ".TP" "4" "\\fBplan\\fR, \\fBapply\\fR or \\fBcompact\\fR could not carry out or prove its own plan; nothing was written." \
        ".TP" "5" "\\fBanalyze \\-\\-check\\fR: a plan is worth running and can run offline now." \
        ".TP" "6" "\\fBanalyze \\-\\-check\\fR: a plan is worth running, but an offline run is blocked." \
        ".TP" "130" "Interrupted (SIGINT or SIGTERM) where a command stops cleanly; no partial output is left."
    printf '%s\n' "[EXAMPLES]" ".nf" \
        "guestfrag mkimage demo.img \\-\\-size 2GiB \\-\\-files 20000 \\-\\-seed 42" \
        "guestfrag analyze demo.img" \
        "guestfrag report demo.img" \
        "guestfrag plan demo.img \\-\\-strategy optimize \\-o plan.json" \
        "guestfrag apply demo.img \\-\\-plan plan.json \\-o defragmented.img" \
        "guestfrag compact vm.vmdk \\-o vm-compact.vmdk \\-\\-output\\-format vmdk" \
        ".fi"
    printf '%s\n' "[FILES]" \
        "guestfrag.sqlite \\- the default results database of \\fBbatch\\fR (docs/batch.md)." \
        "[SEE ALSO]" \
        "\\fBguestfrag-gui\\fR(1); the formulas and contracts in /usr/share/doc/guestfrag/."
} >"$include"
help2man --no-info --section 1 \
    --name "fragmentation analysis and planning for Windows guest disk images" \
    --include "$include" --output "$out/guestfrag.1" "$cli"
gzip -9nf "$out/guestfrag.1"
if [ -n "$gui" ]; then
    QT_QPA_PLATFORM=offscreen help2man --no-info --section 1 \
        --name "desktop viewer of guest disk fragmentation, plans and their impact" \
        --output "$out/guestfrag-gui.1" "$gui"
    gzip -9nf "$out/guestfrag-gui.1"
fi
