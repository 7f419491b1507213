#!/usr/bin/env bash
# Scaling of `mpirun -n N parity compare` on this machine (docs/scaling.md, issue 13 §3): wall time, input
# bytes per second, peak RSS of every process, and whether the JSON is byte-identical to one process's
# (minus timing fields), for N = 1, 2, 4 (mpirun --oversubscribe) on
#   (a) a synthetic tensor-mode run of RANKS ranks x EVENTS events (MIB MiB per rank and side), and
#   (b) a statistics-mode run of META_RANKS ranks x META_EVENTS events: the metadata of a large job without
#       its bytes, which exercises listing, partitioning and the gather of many rows; and
#   (c) the size of issue 13 §2's memory bound, BOUND_RANKS x BOUND_EVENTS in statistics mode, one process:
#       its peak RSS, anonymous and all, against the bound of 256 MiB + mapped pages, and the same run in a
#       256 MiB memory cgroup (BOUND_RANKS=0 skips it).
#   bash bench/scaling.sh BUILD_DIR        env: RANKS=64 EVENTS=500 MIB=48 META_RANKS=1024 META_EVENTS=200 NS="1 2 4"
#                                               BOUND_RANKS=1000 BOUND_EVENTS=1000
set -eu -o pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=${PARITY_VENV_PYTHON:-$SRC/.venv/bin/python}
RANKS=${RANKS:-64} EVENTS=${EVENTS:-500} MIB=${MIB:-48} META_RANKS=${META_RANKS:-1024} META_EVENTS=${META_EVENTS:-200}
NS=${NS:-"1 2 4"}
BOUND_RANKS=${BOUND_RANKS:-1000} BOUND_EVENTS=${BOUND_EVENTS:-1000}
DATA=${SCALING_DATA:-$BUILD/bench-data/scaling}
export PYTHONPATH="$SRC/python:$BUILD/python" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command -v mpirun >/dev/null || { echo "scaling: no mpirun (openmpi-bin): skipped"; exit 0; }
trap 'rm -rf "$DATA"' EXIT
rm -rf "$DATA"; mkdir -p "$DATA"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "generating (untimed): tensor $RANKS x $EVENTS x $MIB MiB, statistics $META_RANKS x $META_EVENTS"
"$PY" "$SRC/bench/scaling/gen_dump.py" "$DATA/tensor" --ranks "$RANKS" --events "$EVENTS" --mib-per-rank "$MIB"
"$PY" "$SRC/bench/scaling/gen_dump.py" "$DATA/stats" --ranks "$META_RANKS" --events "$META_EVENTS" --mib-per-rank 0.25 --mode statistics
BYTES=$(du -sb "$DATA/tensor" | cut -f1)

# The JSON without what differs with N by design: timings and each process's peak memory.
strip_timing() {
  sed -E 's/"(elapsed_seconds|seconds)":[[:space:]]*[-+0-9.eE]+/"\1":0/g' "$1" |
    perl -0pe 's/"peak_resident_bytes":\s*\[[^\]]*\]/"peak_resident_bytes":[]/'
}

# One run: N processes; prints wall seconds, the peak RSS of each process (MiB) and JSON identity.
run_case() {
  local name=$1 n=$2 dir=$3
  local out="$DATA/out.$name.$n" t0 t1
  mkdir -p "$out"
  cat "$dir"/golden/*/* "$dir"/target/*/* >/dev/null 2>&1 || true  # warm the page cache alike for every N
  t0=$(date +%s.%N)
  OMP_NUM_THREADS=$(( $(nproc) / n > 0 ? $(nproc) / n : 1 )) \
    mpirun --oversubscribe -n "$n" sh -c 'cd "$0" && /usr/bin/time -f "%M" -o "rss.${OMPI_COMM_WORLD_RANK}" "$1" -q compare "$2" "$3" --json result.json >/dev/null; echo $? >"rc.${OMPI_COMM_WORLD_RANK}"' \
      "$out" "$BUILD/parity" "$dir/golden" "$dir/target" 2>"$out/stderr"  # the exit status per process: rc.*
  t1=$(date +%s.%N)
  local wall rss same
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
  # Peak RSS by process number as parity reports it (JSON peak_resident_bytes; process 0's is taken before
  # it writes the outputs), then /usr/bin/time's for process 0 (the whole process, outputs included).
  rss=$("$PY" -c 'import json, sys; print(" ".join(str(round(b / 2**20)) for b in json.load(open(sys.argv[1]))["peak_resident_bytes"]))' "$out/result.json")
  rss="$rss (process 0 with its outputs: $(( $(grep -E '^[0-9]+$' "$out/rss.0" | tail -1) / 1024 )))"
  if [ "$n" = 1 ]; then strip_timing "$out/result.json" >"$DATA/ref.$name.json"; same=reference
  elif strip_timing "$out/result.json" | cmp -s - "$DATA/ref.$name.json"; then same=identical
  else same=DIFFERENT; fi
  same="$same, exit $(cat "$out"/rc.* | sort -u | tr '\n' ' ')"
  printf '%-10s %2d  %8.2f s  %8.2f GB/s  peak MiB by process: %s  json: %s\n' "$name" "$n" "$wall" \
    "$(awk -v b="$BYTES" -v w="$wall" 'BEGIN { print b / w / 1e9 }')" "$rss" "$same"
}

echo "case       N      wall     input rate   (tensor: $(awk -v b="$BYTES" 'BEGIN { printf "%.2f", b / 2^30 }') GiB both sides)"
for n in $NS; do run_case tensor "$n" "$DATA/tensor"; done
for n in $NS; do run_case stats "$n" "$DATA/stats"; done

# (c) One process on the size §2 bounds. The peak falls in the analyses, before any output is written, so
# the terminal table alone is asked for (the 1,000,000-row JSON is 2.2 GB). The bound is on anonymous
# memory ("256 MiB + mapped pages"): /usr/bin/time's peak RSS counts the mapped spill file and inputs too,
# so the anonymous peak is sampled (bench/tools/peak_anon.sh), and the run is repeated in a memory cgroup
# of 256 MiB, which charges both kinds and kills a process whose memory the kernel cannot reclaim
# (bench/tools/memory_cgroup.sh; skipped without a writable cgroup): same output, or the bound is not met.
if [ "$BOUND_RANKS" -gt 0 ]; then
  rm -rf "$DATA/tensor" "$DATA/stats"  # room for the bound's run (≈ 1 GB at 1,000 x 1,000)
  "$PY" "$SRC/bench/scaling/gen_dump.py" "$DATA/bound" --ranks "$BOUND_RANKS" --events "$BOUND_EVENTS" \
    --mib-per-rank 0.25 --mode statistics >/dev/null
  cat "$DATA"/bound/golden/*/* "$DATA"/bound/target/*/* >/dev/null 2>&1 || true
  bound_cmd=("$BUILD/parity" compare "$DATA/bound/golden" "$DATA/bound/target" --limit 20)
  /usr/bin/time -f "%e %M" -o "$DATA/bound.time" "$SRC/bench/tools/peak_anon.sh" "${bound_cmd[@]}" \
    >"$DATA/bound.out" 2>"$DATA/bound.err" || true  # exit 1: the generated fault
  read -r wall kib < <(tail -n 1 "$DATA/bound.time")
  anon=$(sed -nE 's/.*anonymous ([0-9]+) MiB.*/\1/p' "$DATA/bound.err")
  rows=$(( BOUND_RANKS * BOUND_EVENTS ))
  printf 'bound      1  %8.2f s  %d rows, peak RSS %d MiB, of it anonymous %d MiB (sampled) = %.2f KB a row; the bound (256 MiB + mapped pages): %s\n' \
    "$wall" "$rows" $(( kib / 1024 )) "$anon" "$(awk -v m="$anon" -v r="$rows" 'BEGIN { print m * 1048576 / r / 1000 }')" \
    "$([ "$anon" -le 256 ] && echo met || echo "NOT met")"
  t0=$(date +%s.%N)
  "$SRC/bench/tools/memory_cgroup.sh" 256 "${bound_cmd[@]}" >"$DATA/bound.cg.out" 2>"$DATA/bound.cg.err" || true
  t1=$(date +%s.%N)
  same_text() { sed -E 's/ \| [0-9.]+s \| / | /' "$1"; }
  if grep -q "unavailable" "$DATA/bound.cg.err"; then cg="not run ($(grep -m1 unavailable "$DATA/bound.cg.err"))"
  elif cmp -s <(same_text "$DATA/bound.out") <(same_text "$DATA/bound.cg.out"); then cg="$(tail -n 1 "$DATA/bound.cg.err"); same output"
  else cg="$(tail -n 1 "$DATA/bound.cg.err"); output DIFFERENT"; fi
  printf 'bound      1  %8.2f s  %s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$cg"
fi
