#!/usr/bin/env bash
# Paired whole-process timing of two commands: A and B run in turn (A B A B ...) after one warm-up each,
# so a drift of the shared machine's speed hits both alike; prints each one's median wall, CPU and
# peak RSS and the median of the pairwise ratios A/B. Timed by bench/tools/timed.py (microseconds).
#
#   bench/tools/paired_time.sh RUNS 'COMMAND A' 'COMMAND B'
#   bench/tools/paired_time.sh 5 'build/parity -q compare g t --json a.json' 'old/parity -q compare g t --json b.json'
set -euo pipefail
runs=${1:?usage: paired_time.sh RUNS 'COMMAND A' 'COMMAND B'}
a=${2:?command A}
b=${3:?command B}
timed="$(dirname "$0")/timed.py"

one() {  # one run of a command: "wall cpu peak_kib" (its own output discarded; its exit status ignored)
  python3 "$timed" /dev/null sh -c "exec $1" || true
}

one "$a" >/dev/null
one "$b" >/dev/null
pairs=()
for ((i = 0; i < runs; ++i)); do pairs+=("$(one "$a") $(one "$b")"); done
printf '%s\n' "${pairs[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, line.split())) for line in sys.stdin]
med = lambda k: statistics.median(r[k] for r in rows)
ratio = lambda k: statistics.median(r[k] / r[k + 3] for r in rows if r[k + 3] > 0)
print("            A median    B median    A/B (pairwise median)")
print(f"wall s    {med(0):10.3f}  {med(3):10.3f}  {ratio(0):10.3f}")
print(f"cpu s     {med(1):10.3f}  {med(4):10.3f}  {ratio(1):10.3f}")
print(f"peak MiB  {med(2) / 1024:10.1f}  {med(5) / 1024:10.1f}  {ratio(2):10.3f}")
'
