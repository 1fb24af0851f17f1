#!/bin/bash
# A program embedding libkbuild builds from the installed public headers and
# libkbuild.a alone (pkg-config), and plans what `kbuild --dry-run` prints.
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
