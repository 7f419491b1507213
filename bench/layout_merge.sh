#!/usr/bin/env bash
# `make bench` part (bench/run.sh): merging a 4-way TP dump against comparing the same tensors unsharded,
# side by side (bench/layout/merge_bench.py, docs/layout.md "Cost of a merge"). The runs (6 GiB at --gib 2)
# are written under BUILD_DIR/layout-merge and kept for reruns.
set -euo pipefail
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/.."
PYTHONPATH="python:$BUILD/python" "${PARITY_VENV_PYTHON:-.venv/bin/python}" bench/layout/merge_bench.py "$BUILD/layout-merge" \
  --gib "${LAYOUT_MERGE_GIB:-2}" --rounds 3 --parity "$BUILD/parity" --json "$BUILD/bench-results/layout_merge.json"
