# SPDX-License-Identifier: GPL-2.0-or-later
# bash completion for guestfrag. Subcommands and options are read from the program's own
# --help (cached per subcommand), so completion always matches the installed version.
_guestfrag() {
    local cur prev words cword
    _init_completion || return
    local cmd=${words[0]}
    local sub="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            -*) ;;
            *) sub=${words[i]}; break ;;
        esac
    done
    if [[ -z $sub ]]; then
        local subs
        subs=$("$cmd" --help 2>/dev/null | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
        COMPREPLY=($(compgen -W "$subs --help --version" -- "$cur"))
        return
    fi
    case $prev in
        --strategy) COMPREPLY=($(compgen -W "defrag consolidate optimize thin-safe shrink" -- "$cur")); return ;;
        --table) COMPREPLY=($(compgen -W "msdos gpt none" -- "$cur")); return ;;
        --workload) COMPREPLY=($(compgen -W "scan scan:mft scan:path trace:@prefetch trace:@layout trace: write: fio: install:" -- "$cur")); return ;;
        --rank) COMPREPLY=($(compgen -W "fragmentation reclaimable growth copy gain" -- "$cur")); return ;;
        --output-format) COMPREPLY=($(compgen -W "raw qcow2 vmdk vhdx" -- "$cur")); return ;;
        --apply-to | --compact-to) _filedir -d; return ;;
        --plan | --list | --db | --parent | -o | --output | --check | --apply | --compact | --device-model | --compare) _filedir; return ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        opts=$("$cmd" "$sub" --help 2>/dev/null | grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z0-9-]*' | tr -d ' ,' | sort -u)
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    _filedir
}
complete -F _guestfrag guestfrag
