#!/usr/bin/env bash
# Capture overhead benchmark part (bench/run.sh): median step time of the ≥ 20 M-parameter Llama-style
# example model, 2,048 tokens per step, without and with capture (docs/benchmarks.md, "Capture").
# Tensor-mode runs are written under BUILD/bench-capture (local disk) and removed afterwards.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
PYTHONPATH="$ROOT/python:$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "${PARITY_VENV_PYTHON:-$ROOT/.venv/bin/python}" "$ROOT/bench/capture_overhead.py" --dir "$BUILD/bench-capture" "${@:2}"
