#!/bin/bash
# Smoke: the bash completion completes subcommands, options, devices and
# backends (from `kbuild devices`), and the man page was generated.
# Usage: completion_test.sh KBUILD_BIN SOURCE_ROOT BUILD_ROOT
set -u
bin_dir=$(dirname "$1")
source /usr/share/bash-completion/bash_completion || { echo "bash-completion missing"; exit 1; }
source "$2/src/cli/kbuild.bash-completion"
export PATH="$bin_dir:$PATH" HOME=$(mktemp -d)
passed=0 failed=0
complete_line() {  # the completions for a command line ending at the cursor
  COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
  read -r -a COMP_WORDS <<< "$COMP_LINE"
  [[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
  COMPREPLY=()
  _kbuild
  echo "${COMPREPLY[*]}"
}
expect() {  # expect "LINE" "WANTED WORD"
  local got; got=$(complete_line "$1")
  if [[ " $got " == *" $2 "* ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: '$1' -> [$got], wanted '$2'"; fi
}
expect "kbuild --device n" npu
expect "kbuild --device c" cuda
expect "kbuild --device npu --backend a" ascendc
expect "kbuild --check" --check-load
expect "kbuild --plu" --plugin
expect "kbuild --device cpu --plugin n" npu
expect "kbuild --isa am" amx
expect "kbuild do" doctor
expect "kbuild isa --js" --json
expect "kbuild explain --js" --json
expect "kbuild cache stats --js" --json
expect "kbuild devices --js" --json
# What the old hand-written list missed.
expect "kbuild bu" build-many
expect "kbuild ca" cache
expect "kbuild cache " stats
expect "kbuild cache " clear
expect "kbuild cache " keygen
expect "kbuild cache " check
expect "kbuild --launch" --launcher
expect "kbuild --launcher cc" ccache
expect "kbuild --pc" --pch
expect "kbuild --time" --timeout
expect "kbuild --no-c" --no-cache
expect "kbuild build-many -" -j
expect "kbuild build-many --fa" --fail-fast
expect "kbuild build-many --baseline-m" --baseline-missing
expect "kbuild build-many --baseline-missing e" empty
# A subcommand's options, not a build's.
unexpected() {  # unexpected "LINE" "WORD": WORD is not offered
  local got; got=$(complete_line "$1")
  if [[ " $got " != *" $2 "* ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: '$1' -> [$got], did not want '$2'"; fi
}
unexpected "kbuild devices --" --dry-run
unexpected "kbuild doctor --" --pch
# Every subcommand, and every option each --help lists, completes.
kbuild="$1"
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
done
if grep -qF -- '\-\-check\-load' "$3/src/kbuild.1"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL: man page lacks --check-load"; fi
echo "Ran $((passed + failed)) tests in 0s"
if [ "$failed" -eq 0 ]; then echo "OK"; else echo "FAILED (failures=$failed)"; exit 1; fi
