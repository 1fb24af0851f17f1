#!/bin/bash
# Programs embedding libkbuild build from the installed public headers and
# libkbuild.a alone (pkg-config): one plans what `kbuild --dry-run` prints;
# the other plans AND builds a kernel, loads it and calls it.
# Usage: embed_test.sh KBUILD SOURCE_ROOT BUILD_ROOT
set -eu
kbuild=$1 source_root=$2 build_root=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
DESTDIR="$scratch/root" meson install -C "$build_root" --no-rebuild --quiet >/dev/null
pc=$(find "$scratch/root" -name kbuild.pc)
[ -n "$pc" ] || { echo "FAIL: no kbuild.pc installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
# Only the installed tree: not the source's include/ or src/.
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$scratch/root$prefix" \
  --cflags --libs kbuild)
# shellcheck disable=SC2086  # pkg-config's output is a list of words
g++ -std=c++20 "$source_root/examples/embed/plan_kernel.cpp" $flags -o "$scratch/plan_kernel"
cd "$scratch"
# A dry run checks the source, as the build would.
echo 'extern "C" int f() { return 1; }' > kernel.cpp
got=$("$scratch/plan_kernel" cpu kernel.cpp kernel.so)
want=$("$kbuild" --no-torch --dry-run kernel.cpp -o kernel.so)
if [ "$got" != "$want" ]; then
  printf 'FAIL: the embedding program planned\n  %s\nkbuild --dry-run printed\n  %s\n' "$got" "$want"
  exit 1
fi
echo "ok: embedded plan == kbuild --dry-run"

# The second program sits where an installed one would (<prefix>/bin), so
# that it finds the observer and data installed beside it, as kbuild does.
bin="$scratch/root$prefix/bin"
mkdir -p "$bin"
# shellcheck disable=SC2086  # pkg-config's output is a list of words
g++ -std=c++20 "$source_root/examples/embed/build_kernel.cpp" $flags -ldl -o "$bin/build_kernel"
echo 'extern "C" int answer() { return 42; }' > answer.cpp
export HOME="$scratch/home" KBUILD_CACHE_DIR="$scratch/cache"
mkdir -p "$HOME"
run=$("$bin/build_kernel" cpu answer.cpp answer.so answer) || {
  echo "FAIL: build_kernel exited $?: $run"; exit 1; }
plan=$("$kbuild" --no-torch --dry-run answer.cpp -o answer.so)
if [ "$(printf '%s\n' "$run" | sed -n 's/^plan: //p')" != "$plan" ]; then
  printf 'FAIL: build_kernel planned\n%s\nkbuild --dry-run printed\n  %s\n' "$run" "$plan"
  exit 1
fi
case "$run" in
  *"built: answer.so (cache: miss)"*"answer() = 42"*) ;;
  *) printf 'FAIL: build_kernel did not build, load and call the kernel:\n%s\n' "$run"; exit 1 ;;
esac
[ -f answer.so ] || { echo "FAIL: no answer.so"; exit 1; }
# Again: the same kernel from kbuild's cache.
rm answer.so
run=$("$bin/build_kernel" cpu answer.cpp answer.so answer)
case "$run" in
  *"built: answer.so (cache: hit)"*"answer() = 42"*) ;;
  *) printf 'FAIL: the second build was not a cache hit:\n%s\n' "$run"; exit 1 ;;
esac
echo "ok: embedded build == kbuild's plan, loaded and called, then a cache hit"
