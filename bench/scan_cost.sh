#!/usr/bin/env bash
# Sensitivity-scan cost benchmark part (bench/run.sh; docs/benchmarks.md, "Sensitivity scan"): `parity scan`
# of the example Llama "small" (bench/scan_factory.py) lowered to int8 (29 GEMM units) and to bf16 (every
# module with parameters + softmax), one torch thread; prints the forward passes, wall and CPU seconds.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
export PARITY_PYTHON=${PARITY_PYTHON:-${PARITY_VENV_PYTHON:-$ROOT/.venv/bin/python}} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}  # the venv: torch 2.x
for mode in int8 bf16; do
  out="$BUILD/bench-results/scan-$mode.json"
  mkdir -p "$BUILD/bench-results"
  /usr/bin/time -f "$mode: wall %e s, user %U s, sys %S s, peak RSS %M KiB" \
    "$BUILD/parity" scan --factory "$ROOT/bench/scan_factory.py:make_model_and_batches" --lower-to "$mode" \
    --budget-kld 0.002 --limit 5 --json "$out" || [ $? -eq 1 ]  # 1 = plan over budget: still a measurement
  PARITY_PYTHON_BIN="$PARITY_PYTHON" "$PARITY_PYTHON" -c "import json,sys; c=json.load(open(sys.argv[1]))['cost']; \
print('{}: {} forward passes, {:.2f} s, {:.4f} s per pass'.format(sys.argv[2], c['forward_passes'], c['seconds'], c['seconds_per_pass']))" "$out" "$mode"
done
