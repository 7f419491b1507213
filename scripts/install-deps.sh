#!/usr/bin/env bash
# Installs the Debian packages parity needs, and only those that are missing.
# Idempotent and non-interactive: safe to run on every `make`. See README "Dependencies" for why each is here.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake ccache pkgconf
  # C++ libraries
  libcli11-dev libfmt-dev nlohmann-json3-dev zlib1g-dev
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  # user-written name patterns (--map, --include, --exclude, --kl) and text-log lines: a linear-time regex engine
  libre2-dev
  # the parity tool's allocator (faster and leaner than glibc's on many small rows and strings)
  libmimalloc-dev
  # capture manifests decoded at parse speed (src/dump/manifest_record.h)
  libsimdjson-dev
  # `parity compare --arrow`: the flatbuffers builder writes the Arrow IPC file's metadata (src/report/arrow_file.h)
  libflatbuffers-dev
  # `parity compare --msprobe-xlsx`: msprobe's compare_result workbook (src/report/compare_msprobe.cpp)
  libxlsxwriter-dev
  # scale-out: `mpirun -n N parity compare ...` (docs/scaling.md)
  openmpi-bin libopenmpi-dev
  # Python side: the pybind11 extension and the venv (torch, numpy, pytest, pandas, transformers ... come
  # from PyPI into .venv: python/requirements.txt, scripts/make-venv.sh)
  python3-dev pybind11-dev python3-venv
  # make fuzz: clang's libFuzzer and sanitizer runtimes, and the OpenMP runtime for clang builds
  clang libclang-rt-14-dev libomp-14-dev
  # measurement and browser tests
  time chromium nodejs
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when an install needs them (the first attempt may fail on stale lists).
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
