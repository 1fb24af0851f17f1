#!/bin/bash
# Smoke: the bash, zsh and fish completions complete subcommands, options,
# their values (devices and backends from `kbuild devices`), and every option
# each --help lists: every case is asked of all three shells, so they cannot
# drift apart. Also: the man page was generated.
# Usage: completion_test.sh KBUILD_BIN SOURCE_ROOT BUILD_ROOT
set -u
kbuild="$1" source_root="$2"
bin_dir=$(dirname "$1")
source /usr/share/bash-completion/bash_completion || { echo "bash-completion missing"; exit 1; }
source "$source_root/src/cli/kbuild.bash-completion"
export PATH="$bin_dir:$PATH" HOME=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$work" "$HOME"' EXIT
passed=0 failed=0
cases=()          # "+LINE<tab>WORD": WORD is offered; "-LINE<tab>WORD": it is not
expect() { cases+=("+$1"$'\t'"$2"); }
unexpected() { cases+=("-$1"$'\t'"$2"); }

expect "kbuild --device n" npu
expect "kbuild --device c" cuda
expect "kbuild --device npu --backend a" ascendc
expect "kbuild options --device n" npu
expect "kbuild --dev" --device
expect "kbuild --dev" --device-file
expect "kbuild --check" --check-load
expect "kbuild --plu" --plugin
expect "kbuild --device cpu --plugin n" npu
expect "kbuild --isa am" amx
expect "kbuild do" doctor
expect "kbuild isa --js" --json
expect "kbuild explain --js" --json
expect "kbuild cache stats --js" --json
expect "kbuild devices --js" --json
expect "kbuild bu" build-many
expect "kbuild ca" cache
expect "kbuild cache " stats
expect "kbuild cache " clear
expect "kbuild cache " keygen
expect "kbuild cache " check
expect "kbuild cache --json " stats
expect "kbuild --launch" --launcher
expect "kbuild --launcher cc" ccache
expect "kbuild --pc" --pch
expect "kbuild --time" --timeout
expect "kbuild --no-c" --no-cache
expect "kbuild build-many -" -j
expect "kbuild build-many --fa" --fail-fast
expect "kbuild build-many --baseline-m" --baseline-missing
expect "kbuild build-many --baseline-missing e" empty
expect "kbuild build-many --fail-on r" regressions
# A subcommand's options, not a build's; no action once one is given.
unexpected "kbuild devices --" --dry-run
unexpected "kbuild doctor --" --pch
unexpected "kbuild cache stats " clear
# Every subcommand, every option each --help lists, and every value kbuild
# says an option takes (`kbuild --completion-values`).
subcommands=$("$kbuild" --completion-words | grep -v -- '^-')
[ -n "$subcommands" ] || { failed=$((failed + 1)); echo "FAIL: no subcommands listed"; }
for sub in $subcommands; do
  expect "kbuild ${sub:0:3}" "$sub"
done
for sub in "" $subcommands; do
  # The option column of CLI11's help: "  -o,--output TEXT   description".
  for option in $("$kbuild" $sub --help | awk '/^  +-/{print $1}' | tr ',' '\n' | sort -u); do
    case "$option" in --help-all) continue ;; esac
    expect "kbuild ${sub:+$sub }$option" "$option"
  done
  while read -r option kind words; do
    [[ "$kind" == words && "$option" == -* ]] || continue
    for word in $words; do expect "kbuild ${sub:+$sub }$option " "$word"; done
  done < <("$kbuild" --completion-values $sub)
done
for option in --fail-on --baseline-missing; do
  "$kbuild" --completion-values build-many | grep -q -- "^$option words " ||
    { failed=$((failed + 1)); echo "FAIL: --completion-values build-many has no words for $option"; }
done

# Each line once, as "LINE|" (the bar keeps a trailing space through read).
for c in "${cases[@]}"; do c=${c:1}; printf '%s|\n' "${c%%$'\t'*}"; done | sort -u > "$work/lines"

# bash: its completion function, in this shell.
complete_line() {  # the completions for a command line ending at the cursor
  COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
  read -r -a COMP_WORDS <<< "$COMP_LINE"
  [[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
  COMPREPLY=()
  _kbuild
  echo "${COMPREPLY[*]}"
}
while IFS= read -r line; do
  line=${line%|}
  printf '%s\t%s\n' "$line" "$(complete_line "$line")"
done < "$work/lines" > "$work/bash"

# fish: a real completion run (`complete -C`) of the file it installs.
if ! command -v fish > /dev/null; then
  failed=$((failed + 1)); echo "FAIL: fish missing (scripts/setup installs it)"
else
  fish -n "$source_root/src/cli/kbuild.fish" || { failed=$((failed + 1)); echo "FAIL: fish -n"; }
  fish --no-config -c 'source $argv[1]
    while read -l line
      set line (string replace -r "\|\$" "" -- $line)
      set -l got (complete -C "$line" | string replace -r "\t.*" "")
      printf "%s\t%s\n" $line "$got"
    end' "$source_root/src/cli/kbuild.fish" < "$work/lines" > "$work/fish"
fi

# zsh: a real completion run (compinit, the autoloaded _kbuild, Tab).
if ! command -v zsh > /dev/null; then
  failed=$((failed + 1)); echo "FAIL: zsh missing (scripts/setup installs it)"
else
  zsh -n "$source_root/src/cli/_kbuild" || { failed=$((failed + 1)); echo "FAIL: zsh -n"; }
  timeout 120 zsh -f "$(dirname "$0")/completion_zsh.zsh" "$source_root/src/cli" \
    < "$work/lines" > "$work/zsh" || { failed=$((failed + 1)); echo "FAIL: zsh's run"; }
fi

for shell in bash zsh fish; do
  [ -f "$work/$shell" ] || continue
  declare -A offered=()
  while IFS=$'\t' read -r line got; do offered[$line]=$got; done < "$work/$shell"
  for c in "${cases[@]}"; do
    body=${c:1}
    line=${body%%$'\t'*} word=${body#*$'\t'}
    got=${offered[$line]-(no answer)}
    if [[ "${c:0:1}" == "+" ]]; then
      if [[ " $got " == *" $word "* ]]; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL ($shell): '$line' -> [$got], wanted '$word'"; fi
    else
      if [[ " $got " != *" $word "* ]]; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL ($shell): '$line' -> [$got], did not want '$word'"; fi
    fi
  done
done
if grep -qF -- '\-\-check\-load' "$3/src/kbuild.1"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: man page lacks --check-load"; fi
echo "Ran $((passed + failed)) tests in 0s"
if [ "$failed" -eq 0 ]; then echo "OK"; else echo "FAILED (failures=$failed)"; exit 1; fi
