#!/usr/bin/env bash
# The floors of a bf16 × bf16 compare kernel (issue 13 §0; docs/benchmarks.md "Why bf16 stayed at
# ~15 % with fp64 sums"), in one run on this machine: read-and-sum of a 2 × 2²⁶ bf16 pair in memory, the seven fp64
# sums of an accurate kernel alone, the leanest fp32-lane kernel of every metric, and parity's kernel,
# at one and two threads; then each one's rate as a share of read-and-sum's at the same thread count.
#   bash bench/kernel_floor.sh BUILD_DIR
set -eu -o pipefail
BUILD=$(cd "${1:-build}" && pwd)
BENCH="$BUILD/bench/metrics_bench"
[ -x "$BENCH" ] || { echo "kernel_floor: $BENCH not built" >&2; exit 2; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_NUM_THREADS=1 "$BENCH" --benchmark_filter='Floor|BF16_BF16/67|BF16_BF16_Perturbed/67' --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
  awk -F, '
    $1 ~ /_median"?$/ {
      name = $1; gsub(/"/, "", name); sub(/_median$/, "", name)
      threads = (name ~ /threads:2/) ? 2 : 1
      kind = name; sub(/\/.*/, "", kind)
      rate[kind, threads] = $6 / 1e9; order[++n] = kind SUBSEP threads
    }
    END {
      if (n == 0) { print "kernel_floor: no benchmark results" > "/dev/stderr"; exit 1 }
      printf "%-30s %7s %10s %14s\n", "benchmark", "threads", "GB/s", "of read-and-sum"
      for (i = 1; i <= n; ++i) {
        split(order[i], k, SUBSEP)
        base = rate["BM_BF16_Floor_ReadAndSum", k[2]]
        if (base > 0 && rate[k[1], k[2]] > 0)
          printf "%-30s %7d %10.2f %13.0f%%\n", k[1], k[2], rate[k[1], k[2]], 100 * rate[k[1], k[2]] / base
        else
          printf "%-30s %7d %10s %14s\n", k[1], k[2], "n/a", "n/a"  # skipped (no AVX2) or failed
      }
    }'
