#!/usr/bin/env bash
# ctest install_cpp_package: `cmake --install` the build into a fresh prefix, then build and run a C++
# program against it (tests/install/consumer) twice: with find_package(parity CONFIG) and with
# `pkg-config --cflags --libs parity`. Each build compares .npy files written by numpy, and its verdict
# and exit code must equal those of the installed `parity compare` on the same files.
# usage: cpp_package_test.sh BUILD_DIR WORK_DIR PYTHON
set -euo pipefail
build=$1; work=$2; py=$3
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
prefix=$work/prefix
fail() { echo "install_cpp_package: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/parity include/parity/compare_runs.h include/parity/open_source.h; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not install $f"
done
libdir=$(dirname "$(find "$prefix" -name 'libparity.so' | head -1)")
[ -n "$libdir" ] && [ -d "$libdir" ] || fail "cmake --install did not install libparity.so"
[ -f "$libdir/cmake/parity/parityConfig.cmake" ] || fail "no $libdir/cmake/parity/parityConfig.cmake"
[ -f "$libdir/pkgconfig/parity.pc" ] || fail "no $libdir/pkgconfig/parity.pc"

# golden, an equal target, and a target with one tensor off by far more than rounding (numpy's writer).
"$py" - "$work" <<'PY'
import sys, numpy as np
d = sys.argv[1]
g = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
np.save(d + "/golden.npy", g)
np.save(d + "/same.npy", g.copy())
np.save(d + "/off.npy", g * np.float32(1.5))
PY

# expect PROGRAM NAME: the program's first word and exit code equal the installed CLI's on each pair
expect() {
  local prog=$1 name=$2 target rc cli_rc verdict cli_verdict
  for target in same off; do
    rc=0; out=$(LD_LIBRARY_PATH="$libdir" "$prog" "$work/golden.npy" "$work/$target.npy") || rc=$?
    cli_rc=0; "$prefix/bin/parity" -q compare "$work/golden.npy" "$work/$target.npy" --json "$work/cli-$target.json" >/dev/null || cli_rc=$?
    cli_verdict=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["verdict"])' "$work/cli-$target.json")
    verdict=$(echo "$out" | awk '{print $2}')
    echo "$name on golden/$target: $out (exit $rc); installed CLI: verdict $cli_verdict (exit $cli_rc)"
    [ "$verdict" = "$cli_verdict" ] && [ "$rc" = "$cli_rc" ] || fail "$name disagrees with parity compare on golden/$target"
  done
  # the two pairs must differ, or the check above could not tell a broken comparison from a working one
  [ "$(LD_LIBRARY_PATH="$libdir" "$prog" "$work/golden.npy" "$work/same.npy")" != \
    "$(LD_LIBRARY_PATH="$libdir" "$prog" "$work/golden.npy" "$work/off.npy" || true)" ] || fail "$name: same verdict for equal and different tensors"
}

# 1. find_package(parity CONFIG) against the prefix
cmake -S "$src/consumer" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >"$work/consumer-configure.log" \
  || { cat "$work/consumer-configure.log" >&2; fail "find_package(parity CONFIG) failed"; }
cmake --build "$work/consumer" >"$work/consumer-build.log" 2>&1 || { cat "$work/consumer-build.log" >&2; fail "the find_package consumer does not build"; }
expect "$work/consumer/compare_two" "find_package consumer"

# 2. pkg-config
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs parity) || fail "pkg-config --cflags --libs parity failed"
echo "pkg-config --cflags --libs parity: $flags"
# shellcheck disable=SC2086  # the flags are words
c++ -std=c++20 -O1 "$src/consumer/main.cpp" $flags -o "$work/compare_two_pc" || fail "the pkg-config consumer does not build"
expect "$work/compare_two_pc" "pkg-config consumer"
echo "install_cpp_package: passed"
