#!/usr/bin/env bash
# Capture side by side with msprobe (bench/run.sh part; issue 34 §2): one CPU training step of a 6-block
# transformer, an HF Llama and an HF GPT-2 (4+ layers, d = 512, batch 4 x 128) with no capture, parity's
# capture and msprobe's PrecisionDebugger at each level, statistics and tensor modes, each kind in its own
# process, interleaved rounds; prints the table of ratios with the statistics' memory floor
# (docs/benchmarks.md "Capture side by side with msprobe"). Skipped where the venv lacks mindstudio-probe.
# Options after the build dir go to bench/capture/run.py (--rounds, --steps, --models, --kinds, --json).
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
PY="${PARITY_VENV_PYTHON:-$ROOT/.venv/bin/python}"
if ! "$PY" -c "import msprobe, transformers" 2>/dev/null; then
  echo "capture_msprobe: skipped (mindstudio-probe or transformers missing in $PY)"
  exit 0
fi
mkdir -p "$BUILD/bench-capture"
PYTHONPATH="$ROOT/python:$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "$PY" "$ROOT/bench/capture/run.py" --dir "$BUILD/bench-capture" --json "$BUILD/bench-results/capture_msprobe.json" "${@:2}"
