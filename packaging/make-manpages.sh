#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Generates the man pages from the programs' own --help, so they never drift from the
# code: guestfrag.1 (with one section per subcommand) and, when given, guestfrag-gui.1.
# Usage: make-manpages.sh GUESTFRAG OUTDIR [GUESTFRAG_GUI]
set -eu
cli=$1
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
    echo "[FILES]"
    echo "guestfrag.sqlite \\- the default results database of \\fBbatch\\fR (docs/batch.md)."
    echo "[SEE ALSO]"
    echo "\\fBguestfrag-gui\\fR(1); the formulas and contracts in /usr/share/doc/guestfrag/."
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
