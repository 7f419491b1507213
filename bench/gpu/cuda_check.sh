#!/usr/bin/env bash
# The CUDA device check (docs/benchmarks.md "Capture on a GPU"): captures on the GPU, then the real CLI
# judges each run against the CUDA fp32 golden and replays the op-level captures on this machine.
#   bash bench/gpu/cuda_check.sh PARITY_BIN OUT_DIR      (needs python3 with torch + CUDA, transformers,
#                                                         and parity importable: PYTHONPATH)
set -u -o pipefail
BIN=$1; OUT=$2; WORK=${WORK:-/tmp/parity-cuda}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$WORK"; mkdir -p "$WORK" "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
PYTHONUNBUFFERED=1 python3 "$SRC/bench/gpu/cuda_capture_check.py" "$WORK" ${NO_OVERHEAD:+--no-overhead} ${OVERHEAD_CASES:+--overhead-cases $OVERHEAD_CASES} 2>&1 | tee "$OUT/capture.log"
cp "$WORK/overhead.json" "$OUT/" 2>/dev/null
R=$WORK/runs
{
for t in cuda_fp32_again cuda_tf32 cuda_bf16_autocast cpu_fp32 cuda_gelu_tanh; do
  echo "=== compare cuda_fp32 $t"
  "$BIN" compare "$R/cuda_fp32" "$R/$t" --json "$WORK/cmp_$t.json" --limit 8; echo "exit $?"
done
echo "=== compare cpu_fp32_stats cuda_fp32_stats (device statistics vs host statistics)"
"$BIN" compare "$R/cpu_fp32_stats" "$R/cuda_fp32_stats" --json "$WORK/cmp_stats.json" --limit 8; echo "exit $?"
echo "=== compare cuda_fp32 cuda_fp32_stats (host statistics of the tensors vs device statistics, same run)"
"$BIN" compare "$R/cuda_fp32" "$R/cuda_fp32_stats" --limit 8; echo "exit $?"
echo "=== compare cuda_fp32 cuda_fp32_checksum (tensor mode vs checksum mode, same run: CRCs and host statistics)"
"$BIN" compare "$R/cuda_fp32" "$R/cuda_fp32_checksum" --limit 8; echo "exit $?"
echo "=== compare cuda_op_fp32 cuda_op_bf16_autocast"
"$BIN" compare "$R/cuda_op_fp32" "$R/cuda_op_bf16_autocast" --json "$WORK/cmp_op.json" --limit 8; echo "exit $?"
for r in cuda_op_fp32 cuda_op_bf16_autocast; do
  echo "=== replay $r (on the recorded device, under the recorded autocast)"
  PARITY_PYTHON=python3 "$BIN" replay "$R/$r" --limit 12 --json "$WORK/replay_$r.json"; echo "exit $?"
done
echo "=== replay cuda_op_bf16_autocast --device cpu (CUDA autocast entered as CPU autocast: expect the note)"
PARITY_PYTHON=python3 "$BIN" replay "$R/cuda_op_bf16_autocast" --device cpu --limit 6 --json "$WORK/replay_cpu_cuda_op_bf16_autocast.json"; echo "exit $?"
} 2>&1 | tee "$OUT/judge.log"
(cd "$WORK" && tar czf "$OUT/results.tar.gz" --exclude='overhead_*' runs cmp_*.json replay_*.json 2>/dev/null)
ls -la "$OUT"
