# fish completion for kbuild. As for bash (kbuild.bash-completion), the words
# come from kbuild itself: `kbuild --completion-words [SUBCOMMAND]` (the option
# table that parses the command line) and `kbuild --completion-values
# [SUBCOMMAND]` (what each option's value is: "NAME KIND [WORDS...]").
function __kbuild_complete
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    set -l kbuild $tokens[1]
    # A subcommand comes first: its own options after it, else a build's.
    set -l subcommand
    if set -q tokens[2]; and contains -- $tokens[2] ($kbuild --completion-words 2>/dev/null | string match -v -- '-*')
        set subcommand $tokens[2]
    end
    set -l values ($kbuild --completion-values $subcommand 2>/dev/null)
    if string match -q -- '-*' $tokens[-1]
        for line in $values
            set -l kind (string split ' ' -- $line)
            test "$kind[1]" = "$tokens[-1]"; or continue
            switch $kind[2]
                case words
                    printf '%s\n' $kind[3..-1]
                case device
                    # The registered devices, as kbuild lists them (after its header).
                    $kbuild devices 2>/dev/null | awk -F'\t' 'NR > 1 && !/^ /{print $1}'
                case backend
                    $kbuild devices 2>/dev/null | awk '/^  backend /{sub(":", "", $2); print $2}' | sort -u
                case file
                    __fish_complete_path $current
                case dir
                    __fish_complete_directories $current
            end
            return
        end
    end
    if string match -q -- '-*' $current
        $kbuild --completion-words $subcommand 2>/dev/null | string match -- '-*'
        return
    end
    if test (count $tokens) -eq 1
        $kbuild --completion-words 2>/dev/null | string match -v -- '-*'
    end
    # A positional that takes words (`kbuild cache ACTION`), until one is given.
    for line in $values
        set -l kind (string split ' ' -- $line)
        if not string match -q -- '-*' $kind[1]; and test "$kind[2]" = words
            for word in $tokens[3..-1]
                contains -- $word $kind[3..-1]; and return
            end
            printf '%s\n' $kind[3..-1]
            return
        end
    end
    if test "$subcommand" = build-many
        __fish_complete_suffix .json
    else
        __fish_complete_suffix .cpp .cc .cxx .c .S .o .h .hpp
    end
end
complete -c kbuild -f -a '(__kbuild_complete)'
