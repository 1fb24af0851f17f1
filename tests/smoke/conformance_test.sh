#!/bin/sh
# The conformance harnesses (conformance/) cannot rot unseen: each compiles
# and answers --help here, without torch. Usage: conformance_test.sh SRC
set -u
src=$1
export PYTHONDONTWRITEBYTECODE=1  # nothing written into the source tree
status=0
for harness in "$src"/conformance/*.py; do
  name=${harness#"$src"/}
  if ! python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$harness"; then
    echo "FAIL: $name does not compile"
    status=1
    continue
  fi
  case $harness in */common.py) continue ;; esac
  if ! out=$(timeout 60 python3 "$harness" --help 2>&1) || ! printf '%s' "$out" | grep -q "usage:"; then
    echo "FAIL: $name --help: $out"
    status=1
  else
    echo "ok: $name --help"
  fi
done
exit $status
