#!/bin/sh
# scripts/check-daemons blames the suite's daemons only: a recorded one
# still running, or a daemon whose environment names the suite's record
# directory; never a redis-server (or sccache) another program started,
# also not one started while the check runs.
# Usage: check_daemons_test.sh SOURCE_ROOT
set -u
check="$1/scripts/check-daemons"
tmp=$(mktemp -d)
dir=$tmp/daemons
mkdir -p "$dir" "$tmp/bin"
# Stand-ins named as the daemons are (ps shows the file's name).
cp /bin/sleep "$tmp/bin/redis-server"
cp /bin/sleep "$tmp/bin/sccache"
started=""
cleanup() {
  for pid in $started; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
failed=0
expect() {  # expect WHAT CODE: the last check's exit code ($code) is CODE
  if [ "$code" -eq "$2" ]; then
    echo "ok: $1"
  else
    echo "FAIL: $1 (exit $code, expected $2)"
    cat "$tmp/err"
    failed=1
  fi
}
start_time() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; }
record() { : >"$dir/$1.$(start_time "$1")"; }  # as tests/support's record_daemon does

# A recorded daemon that ends within the check's wait; meanwhile another
# program starts a redis-server (a real one when installed) and an sccache:
# without the suite's environment (env -i), and never recorded.
sleep 1.5 &
started="$started $!"
record $!
"$check" check "$tmp/log.json" "$dir" 2>"$tmp/err" &
checking=$!
env -i "$tmp/bin/redis-server" 60 &
unrelated=$!
started="$started $unrelated"
env -i "$tmp/bin/sccache" 60 &
started="$started $!"
if [ -x /usr/bin/redis-server ]; then
  env -i /usr/bin/redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --dir "$tmp" \
    >/dev/null &
  started="$started $!"
fi
wait "$checking"
code=$?
expect "a redis-server and an sccache started by another program during the check are not blamed" 0
grep -q '"OK"' "$tmp/log.json" || { echo "FAIL: the log says $(cat "$tmp/log.json")"; failed=1; }

# One of them recorded, as a test's daemon is: blamed, by pid.
record "$unrelated"
"$check" check "$tmp/log.json" "$dir" 2>"$tmp/err"
code=$?
expect "a recorded daemon still running is blamed" 1
grep -q "^ *$unrelated " "$tmp/err" || { echo "FAIL: $unrelated not named"; failed=1; }
grep -q '"FAIL"' "$tmp/log.json" || { echo "FAIL: the log says $(cat "$tmp/log.json")"; failed=1; }

# Its pid with another start time: a pid reused since, someone else's.
"$check" reset "$dir"
: >"$dir/$unrelated.1"
"$check" check "$tmp/log.json" "$dir" 2>"$tmp/err"
code=$?
expect "a recorded pid now running another program is not blamed" 0

# An sccache server started within the suite (by the sccache client, for
# kbuild) is never recorded: its environment names the suite's directory.
KBUILD_TEST_DAEMONS_DIR=$dir "$tmp/bin/sccache" 60 &
marked=$!
started="$started $marked"
"$check" check "$tmp/log.json" "$dir" 2>"$tmp/err"
code=$?
expect "a daemon started within the suite is blamed without a record" 1
grep -q "^ *$marked " "$tmp/err" || { echo "FAIL: $marked not named"; failed=1; }
kill "$marked"
wait "$marked" 2>/dev/null

"$check" check "$tmp/log.json" "$dir" 2>"$tmp/err"
code=$?
expect "once it has ended, nothing is left" 0
exit $failed
