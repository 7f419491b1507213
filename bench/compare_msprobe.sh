#!/usr/bin/env bash
# `parity compare` side by side with msprobe's `compare` (mindstudio-probe, in the project's venv) on
# msprobe's own dumps of one training step, and parity compare on parity's dumps of the same runs
# (issue 34 item 3; bench/compare/run.py says how). The dumps (~9 GB) go under
# BUILD/bench-data/compare-msprobe and are deleted at the end.
#   bash bench/compare_msprobe.sh BUILD_DIR        (env: BENCH_ROUNDS, default 3)
set -eu -o pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=${PARITY_VENV_PYTHON:-$SRC/.venv/bin/python}
[ -x "$BUILD/parity" ] && [ -x "$BUILD/bench/readsum_bench" ] || { echo "compare_msprobe: build parity and readsum_bench first" >&2; exit 2; }
mkdir -p "$BUILD/bench-results"
cd "$SRC"
PYTHONPATH="$SRC:$SRC/python:$BUILD/python" "$PY" -m bench.compare.run --build "$BUILD" --rounds "${BENCH_ROUNDS:-3}" \
  --markdown "$BUILD/bench-results/compare_msprobe.md"
