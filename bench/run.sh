#!/usr/bin/env bash
# `make bench`: runs every benchmark part script bench/*.sh (except this driver) in name order, each
# as `bash bench/<part>.sh BUILD_DIR`. A part writes its figures to stdout and to
# BUILD_DIR/bench-results/<part>.txt; docs/benchmarks.md records them. A failing part is reported and
# the others still run; the exit code is 1 if any part failed.
set -u -o pipefail
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$BUILD/bench-results"
status=0
for part in "$HERE"/*.sh; do
  name=$(basename "$part" .sh)
  [ "$name" = run ] && continue
  echo "==== bench part: $name ===="
  if ! bash "$part" "$BUILD" 2>&1 | tee "$BUILD/bench-results/$name.txt"; then
    echo "bench part $name FAILED" >&2
    status=1
  fi
done
echo "==== bench part: faultbench ====" && PARITY_BIN="$BUILD/parity" PYTHONPATH="$HERE/../python:$BUILD/python" "${PARITY_VENV_PYTHON:-$HERE/../.venv/bin/python}" "$HERE/faultbench/run.py" --out "$BUILD/faultbench" --markdown "$BUILD/bench-results/faultbench.md" 2>&1 | tee "$BUILD/bench-results/faultbench.txt" || status=1
# The long-run scenarios (bench/longrun, issue 30): each against its golden over 300 steps, and the capture cost.
echo "==== bench part: longrun ====" && (cd "$HERE/.." && PARITY_BIN="$(cd "$BUILD" && pwd)/parity" PYTHONPATH="python:$BUILD/python" "${PARITY_VENV_PYTHON:-.venv/bin/python}" -m bench.longrun.run --steps 300 --out "$BUILD/longrun" && PYTHONPATH="python:$BUILD/python" "${PARITY_VENV_PYTHON:-.venv/bin/python}" -m bench.longrun.overhead --out "$BUILD/longrun-overhead") 2>&1 | tee "$BUILD/bench-results/longrun.txt" || status=1
# The conformance matrix (bench/zoo: transformers architectures x benign recipes and faults); rewrites the
# section between <!-- zoo:begin --> and <!-- zoo:end --> of docs/benchmarks.md.
echo "==== bench part: zoo ====" && (cd "$HERE/.." && PARITY_BIN="$(cd "$BUILD" && pwd)/parity" PYTHONPATH="python:$BUILD/python" "${PARITY_VENV_PYTHON:-.venv/bin/python}" -m bench.zoo.run --json bench/out/zoo.json --markdown "$BUILD/bench-results/zoo.md" --docs docs/benchmarks.md) 2>&1 | tee "$BUILD/bench-results/zoo.txt" || status=1
# Its invariance property (bench/zoo/invariance.py: the same row's verdict under two capture levels and
# under filters), every architecture x 4 columns (~10 min); the section between <!-- zoo-invariance:begin/end -->.
echo "==== bench part: zoo invariance ====" && (cd "$HERE/.." && PARITY_BIN="$(cd "$BUILD" && pwd)/parity" PYTHONPATH="python:$BUILD/python" "${PARITY_VENV_PYTHON:-.venv/bin/python}" -m bench.zoo.invariance --json bench/out/zoo_invariance.json --docs docs/benchmarks.md) 2>&1 | tee "$BUILD/bench-results/zoo_invariance.txt" || status=1
exit $status
