#!/usr/bin/env bash
# Speed and memory of `parity compare` (issue 2 §6), in one run on this machine:
#   (a) two 1 GiB fp32 tensors (.npy), (b) two 512 MiB bf16 tensors (.safetensors),
#   (c) 20,000 pairs of 1-64 KiB fp32 tensors in two directories.
# For each case: input bytes per second (both inputs) of parity, of the numpy baseline
# (bench/baseline_numpy.py) and of the two-stream read-and-sum ceiling (readsum_bench), with ratios;
# then the peak memory of `parity compare` on the 1 GiB pair (/usr/bin/time -v, and the peak of its
# anonymous memory, i.e. beyond the memory-mapped file pages).
# Input files are written first (untimed) under BUILD/bench-data and deleted at the end. The page
# cache is warmed before each case so every contender reads from memory. Read-and-sum and parity run
# in turn BENCH_REPEAT times (default 5) on the same warm files, so a drift of the shared machine's speed
# hits both alike: the figures are the medians, "of readsum" the median of the pairwise ratios, with
# their range; numpy (tens of seconds) runs once. Times from bench/tools/timed.py, to the microsecond.
#   bash bench/compare_bench.sh BUILD_DIR          (env: BENCH_SCALE=0.05 for a quick trial)
set -eu -o pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
DATA="$BUILD/bench-data/compare"
SCALE=${BENCH_SCALE:-1}
REPEAT=${BENCH_REPEAT:-5}
PY=${PARITY_VENV_PYTHON:-$SRC/.venv/bin/python}  # the project's venv (scripts/make-venv.sh)
export PYTHONPATH="$SRC/python:$BUILD/python:$SRC/bench"
trap 'rm -rf "$DATA"' EXIT

READSUM="$BUILD/bench/readsum_bench"
PARITY="$BUILD/parity"
[ -x "$READSUM" ] || { echo "compare_bench: $READSUM not built" >&2; exit 2; }
if [ -x "$PARITY" ] && "$PARITY" compare --help >/dev/null 2>&1; then
  CONTENDER="parity compare"
else
  CONTENDER="compare_arrays binding"
  echo "compare_bench: no 'parity compare' in $BUILD; measuring the kernel through _parity_core.compare_arrays"
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "metrics kernel variant: $("$PY" -c 'import _parity_core as c; print(c.metrics_kernel())')"
rm -rf "$DATA"
mkdir -p "$DATA"
echo "generating inputs in $DATA (scale $SCALE, untimed)..."
"$PY" "$SRC/bench/gen_compare_data.py" "$DATA" --scale "$SCALE"
df -h "$DATA" | tail -1

# Rates are given per wall second and per CPU second (user + system): on a machine shared with other
# work the wall figure depends on the load, the CPU figure much less.
bytes_of() { sed -n 's/.* \([0-9]*\) input bytes.*/\1/p'; }
warm() { cat "$@" > /dev/null 2>&1 || find "$@" -type f -exec cat {} + > /dev/null; }
input_bytes() { du -sb --apparent-size "$1" "$2" | awk '{ s += $1 } END { printf "%.0f", s }'; }

# timed LABEL CMD...: runs CMD, prints "<wall> <cpu>" (seconds); exit >= 2 is a failure (parity
# compare exits 1 when it finds differences, which the perturbed targets always have).
timed() {
  local label=$1 rc line
  shift
  set +e
  line=$("$PY" "$SRC/bench/tools/timed.py" "$DATA/out.$label" "$@")
  rc=$?
  set -e
  if [ $rc -ge 2 ]; then echo "$label failed (exit $rc):" >&2; tail -5 "$DATA/out.$label" >&2; return 1; fi
  echo "$line" | awk '{ print $1, $2 }'
}

# GB/s; "n/a" when the time is below /usr/bin/time's 10 ms resolution (tiny BENCH_SCALE runs).
rate() { awk -v b="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.3f", b / s / 1e9; else printf "n/a" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'; }

declare -A WALL CPU
rows=()
for case in f32 bf16 small; do
  case $case in
    f32) G="$DATA/f32/golden.npy"; T="$DATA/f32/target.npy"; label="2 x 1 GiB fp32 (.npy)" ;;
    bf16) G="$DATA/bf16/golden.safetensors"; T="$DATA/bf16/target.safetensors"; label="2 x 512 MiB bf16 (.st)" ;;
    small) G="$DATA/small/golden"; T="$DATA/small/target"; label="20,000 pairs 1-64 KiB" ;;
  esac
  bytes=$(input_bytes "$G" "$T")
  warm "$G" "$T"
  read -r WALL[np] CPU[np] < <(timed numpy "$PY" "$SRC/bench/baseline_numpy.py" "$G" "$T")
  pairs=()
  for ((i = 0; i < REPEAT; ++i)); do
    rs=$(timed readsum "$READSUM" "$G" "$T")
    if [ "$CONTENDER" = "parity compare" ]; then
      pa=$(timed parity "$PARITY" compare "$G" "$T")
    else
      pa=$(timed parity "$PY" "$SRC/bench/compare_binding.py" "$G" "$T")
    fi
    pairs+=("$rs $pa")
  done
  # Medians of each (readsum wall cpu, parity wall cpu), then per kind (wall, cpu) the median and
  # range of the pairwise shares readsum time / parity time.
  read -r WALL[rs] CPU[rs] WALL[pa] CPU[pa] share_wall range_wall share_cpu range_cpu < <(
    printf '%s\n' "${pairs[@]}" | "$PY" -c '
import statistics, sys
rows = [list(map(float, line.split())) for line in sys.stdin]
med = [statistics.median(r[k] for r in rows) for k in range(4)]
out = ["%.4f" % m for m in med]
for k in (0, 1):
    shares = [100 * r[k] / r[k + 2] for r in rows if r[k + 2] > 0]
    out += ["%.0f%%" % statistics.median(shares), "%.0f-%.0f%%" % (min(shares), max(shares))]
print(" ".join(out))')
  echo "$label: $bytes input bytes; wall s: parity ${WALL[pa]}, numpy ${WALL[np]}, readsum ${WALL[rs]}; cpu s: parity ${CPU[pa]}, numpy ${CPU[np]}, readsum ${CPU[rs]} (medians of $REPEAT)"
  echo "  pairs (readsum wall cpu, parity wall cpu): $(printf '%s; ' "${pairs[@]}")"
  for kind in wall cpu; do
    if [ $kind = wall ]; then p=${WALL[pa]}; n=${WALL[np]}; r=${WALL[rs]}; sh=$share_wall; rg=$range_wall
    else p=${CPU[pa]}; n=${CPU[np]}; r=${CPU[rs]}; sh=$share_cpu; rg=$range_cpu; fi
    pr=$(rate "$bytes" "$p"); nr=$(rate "$bytes" "$n"); rr=$(rate "$bytes" "$r")
    rows+=("$(printf "%-24s %-4s %12s %12s %12s %9s %11s %11s" "$label" "$kind" "$pr" "$nr" "$rr" "$(ratio "$pr" "$nr")" "$sh" "$rg")")
  done
done
echo
printf "%-24s %-4s %12s %12s %12s %9s %11s %11s\n" case per "parity GB/s" "numpy GB/s" "readsum GB/s" "x numpy" "of readsum" "range"
printf "%s\n" "${rows[@]}"

if [ "$CONTENDER" = "parity compare" ]; then
  echo
  echo "peak memory of: parity compare $DATA/f32/golden.npy $DATA/f32/target.npy"
  G="$DATA/f32/golden.npy"; T="$DATA/f32/target.npy"
  set +e
  /usr/bin/time -v "$PARITY" compare "$G" "$T" > /dev/null 2> "$DATA/time.txt" &
  tpid=$!
  peak_anon=0
  while kill -0 $tpid 2>/dev/null; do
    pid=$(pgrep -P $tpid -x parity | head -1)
    if [ -n "$pid" ]; then
      a=$(awk '/RssAnon/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
      [ -n "$a" ] && [ "$a" -gt "$peak_anon" ] && peak_anon=$a
    fi
    sleep 0.02
  done
  wait $tpid
  set -e
  grep -E "Maximum resident set size|Elapsed \(wall" "$DATA/time.txt" | sed 's/^\s*/  /'
  echo "  peak anonymous memory (RssAnon, sampled every 20 ms): $((peak_anon / 1024)) MiB"
  echo "  target: <= 256 MiB beyond the memory-mapped pages ($(( $(input_bytes "$G" "$T") / 1048576 )) MiB of mapped input here)"
fi
