#!/usr/bin/env bash
# make demo: write a golden (fp32) and a target (bf16, one broken layer) set of activations of a small
# network, then let parity compare them. Usage: scripts/demo.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
OUT="${DEMO_OUT:-demo-out}"
PARITY="$BUILD/parity"
PY="${PARITY_VENV_PYTHON:-.venv/bin/python}"  # the project's venv (torch 2.x from PyPI, scripts/make-venv.sh)
[ -x "$PARITY" ] || { echo "demo: $PARITY not found; build first (make build)" >&2; exit 2; }

echo "== 1. golden (fp32) and target (bf16, blocks.2.attn without its 1/sqrt(d) scale) =="
"$PY" examples/make_demo_tensors.py "$OUT"

echo
echo "== 2. $PARITY compare $OUT/golden.npz $OUT/target.safetensors =="
status=0
"$PARITY" compare "$OUT/golden.npz" "$OUT/target.safetensors" --json "$OUT/compare.json" || status=$?

echo
# Exit 1 means "differences found", which is what this demo is about; anything else is a failure.
if [ "$status" -ne 1 ]; then
  echo "demo: expected parity compare to find the broken layer (exit 1), got exit $status" >&2
  exit 1
fi
echo "The full result (schema parity.compare/1, docs/compare-json.md) is in $OUT/compare.json."

echo
echo "== 3. captured training: the small Llama-style model in fp32 (golden) and bf16 (target) =="
PYTHONPATH="$PWD/python:$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "$PY" python/parity/examples/demo_train.py "$OUT/train"

echo
echo "== 4. $PARITY info $OUT/train/target =="
"$PARITY" info "$OUT/train/target"

echo
echo "== 5. $PARITY compare $OUT/train/golden $OUT/train/target --step 0 =="
status=0
"$PARITY" compare "$OUT/train/golden" "$OUT/train/target" --step 0 --limit 20 --json "$OUT/train-compare.json" || status=$?
# fp32 vs bf16 at step 0 is expected to be rounding noise (exit 0); exit 1 would mean differences beyond
# it. Either is a valid answer of this demo; 2 or 3 is a failure.
if [ "$status" -gt 1 ]; then
  echo "demo: parity compare of the training runs failed (exit $status)" >&2
  exit 1
fi
echo "The full result of the training comparison is in $OUT/train-compare.json."

echo
echo "== 6. $PARITY curve $OUT/train/golden $OUT/train/target (the loss / grad-norm / lr curves) =="
status=0
"$PARITY" curve "$OUT/train/golden" "$OUT/train/target" --json "$OUT/curve.json" || status=$?
if [ "$status" -gt 1 ]; then
  echo "demo: parity curve failed (exit $status)" >&2
  exit 1
fi
echo "The full curve comparison (schema parity.curve/1, docs/curves.md) is in $OUT/curve.json."

echo
echo "== 7. the two runs' held-out evaluation (PPL, KLD, top-1): $PARITY eval ppl $OUT/train/golden $OUT/train/target =="
status=0
"$PARITY" eval ppl "$OUT/train/golden" "$OUT/train/target" --json "$OUT/eval-ppl.json" || status=$?
if [ "$status" -gt 1 ]; then
  echo "demo: parity eval ppl failed (exit $status)" >&2
  exit 1
fi
echo "The full PPL/KLD result (schema parity.eval.ppl/1, docs/eval.md) is in $OUT/eval-ppl.json."

echo
echo "== 8. a hidden fault: layer 1's softmax in fp16 without max subtraction (captured at op level) =="
rm -rf "$OUT/overflow"
PYTHONPATH="$PWD/python:$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
  "$PY" python/parity/examples/demo_overflow.py "$OUT/overflow"
echo
echo "-- $PARITY overflow $OUT/overflow/target (one run, no golden needed)"
status=0
"$PARITY" overflow "$OUT/overflow/target" --json "$OUT/overflow.json" || status=$?
[ "$status" -le 1 ] || { echo "demo: parity overflow failed (exit $status)" >&2; exit 1; }
echo
echo "-- $PARITY compare $OUT/overflow/golden $OUT/overflow/target --limit 8 --replay"
echo "   (--replay: the top suspects' ops are called again on their recorded inputs, docs/replay.md)"
status=0
PARITY_PYTHON="${PARITY_PYTHON:-$PY}" \
  "$PARITY" compare "$OUT/overflow/golden" "$OUT/overflow/target" --limit 8 --replay --json "$OUT/overflow-compare.json" || status=$?
[ "$status" -eq 1 ] || { echo "demo: expected parity compare to find the overflow (exit 1), got $status" >&2; exit 1; }
"$PY" - "$OUT/overflow-compare.json" <<'PY' || { echo "demo: replay did not confirm the hidden fault" >&2; exit 1; }
import json, sys
top = json.load(open(sys.argv[1]))["suspects"][0]
assert top["module"] == "layers.1.attn" and top.get("replay", {}).get("status") == "confirmed", top
print("replay confirmed the top suspect {}: {}".format(top["event"], top["replay"]["evidence"]))
PY
echo
echo "-- $PARITY replay $OUT/overflow/target --module layers.1.attn (every op of the suspect, one run)"
status=0
# The replay engine runs in the interpreter that captured (PARITY_PYTHON; docs/replay.md).
PARITY_PYTHON="${PARITY_PYTHON:-$PY}" \
  "$PARITY" replay "$OUT/overflow/target" --module layers.1.attn --json "$OUT/replay.json" || status=$?
# Exit 1: an op creates error given its inputs, which is the hidden fault; 0 would mean it was not found.
[ "$status" -eq 1 ] || { echo "demo: expected parity replay to find the op that creates the error (exit 1), got $status" >&2; exit 1; }

echo
echo "== 9. one self-contained HTML report of everything above: $PARITY report =="
"$PARITY" report "$OUT/overflow-compare.json" "$OUT/compare.json" "$OUT/train-compare.json" "$OUT/curve.json" \
  "$OUT/eval-ppl.json" "$OUT/overflow.json" "$OUT/replay.json" -o report.html
echo "Open $PWD/report.html in a browser (offline; docs/report.md)."
