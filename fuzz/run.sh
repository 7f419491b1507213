#!/usr/bin/env bash
# fuzz/run.sh BUILD_DIR SECONDS [HARNESS...] — runs each libFuzzer harness built in BUILD_DIR/fuzz/ for
# SECONDS (one process at a time), then prints per harness: executions, executions per second, coverage
# (libFuzzer's final cov: edges and ft: features), peak RSS and whether it found a crash, leak or timeout.
# `make fuzz` calls it with FUZZ_SECONDS; docs/fuzzing.md.
#
# The checked-in seeds (fuzz/corpus/<h>/) are read, never written: new inputs go to
# BUILD_DIR/fuzz-corpus/<h>/, crash/leak/timeout inputs to BUILD_DIR/fuzz-artifacts/<h>/, the full
# libFuzzer output to BUILD_DIR/fuzz-logs/<h>.log. Exit status 1 when any harness found something.
set -uo pipefail

build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]}
seconds=${2:?usage: fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]}
shift 2
src=$(cd "$(dirname "$0")" && pwd)
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  for bin in "$build"/fuzz/fuzz_*; do harnesses+=("$(basename "$bin" | sed 's/^fuzz_//')"); done
fi
[ -x "$build/fuzz/fuzz_${harnesses[0]}" ] || { echo "no harness built in $build/fuzz (make fuzz)" >&2; exit 2; }

mkdir -p "$build/fuzz-logs"
summary="$build/fuzz-logs/summary.txt"
printf '%-14s %12s %9s %7s %7s %8s  %s\n' harness executions exec/s cov ft rss_mb result | tee "$summary"
found=0
for h in "${harnesses[@]}"; do
  corpus="$build/fuzz-corpus/$h" artifacts="$build/fuzz-artifacts/$h" log="$build/fuzz-logs/$h.log"
  mkdir -p "$corpus" "$artifacts"
  touch "$artifacts/.started"   # what an earlier run left there is not this run's finding
  # Readers use OpenMP for large tensors only; one thread keeps the run on one core and deterministic.
  OMP_NUM_THREADS=1 "$build/fuzz/fuzz_$h" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$src/corpus/$h" >"$log" 2>&1
  rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
  rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log" | tail -1)
  rss=$(awk '/stat::peak_rss_mb/ {print $2}' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  result=ok
  new=$(find "$artifacts" -type f -newer "$artifacts/.started" -printf '%f ' | head -c 300)
  if [ $rc -ne 0 ] || [ -n "$new" ]; then
    result="FOUND (rc $rc): ${new}see $log"
    found=1
  fi
  printf '%-14s %12s %9s %7s %7s %8s  %s\n' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${rss:-?}" \
      "$result" | tee -a "$summary"
done
exit $found
