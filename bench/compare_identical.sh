#!/bin/bash
# bench/compare_identical.sh OLD_PARITY NEW_PARITY RUNS_ROOT — every output of `parity compare` of two
# binaries on every run pair under RUNS_ROOT (a folder holding golden/ and target/: the runs of
# `bench.faultbench.run --out DIR`, or of `bench.zoo.run --keep DIR`): the JSON (elapsed_seconds and
# peak_resident_bytes dropped, keys sorted), the CSV, the Arrow file, the msprobe CSV, the terminal table (its
# timing masked) and the exit code. Prints a DIFF line per run pair that differs and the folder holding both
# sides' outputs; exit 1 on any difference. A refactor that must not change outputs is checked with it
# (docs/benchmarks.md "Issue 32").
#   IDENTICAL_EXCEPT=KEYS  the named, intended changes, left out of both sides before comparing: a comma list
#                          of top-level JSON keys, `rows.K` and `unmatched.K` (key K of every row / unmatched
#                          record), and `n/a` (the tables' spelling of no value, `-` before issue 32).
set -u
old=$(readlink -f "${1:?usage: compare_identical.sh OLD_PARITY NEW_PARITY RUNS_ROOT}")
new=$(readlink -f "${2:?usage: compare_identical.sh OLD_PARITY NEW_PARITY RUNS_ROOT}")
root=$(readlink -f "${3:?usage: compare_identical.sh OLD_PARITY NEW_PARITY RUNS_ROOT}")
out=$(mktemp -d)
bad=0
pairs=0
# Both binaries must print the same command line: each runs under the same name from a folder of its own.
mkdir -p "$out/bin/old" "$out/bin/new"
cp "$old" "$out/bin/old/parity"
cp "$new" "$out/bin/new/parity"
while IFS= read -r golden; do
  d=$(dirname "$golden")
  n=$(echo "${d#"$root"/}" | tr / _)
  pairs=$((pairs + 1))
  for side in old new; do
    w=$out/work
    rm -rf "$w" && mkdir -p "$w" "$out/$side/$n"
    (cd "$w" && "$out/bin/$side/parity" compare "$d/golden" "$d/target" -j 1 --json c.json --csv c.csv --arrow c.arrow \
        --msprobe-csv m.csv --all > table.txt 2> err.txt; echo $? > rc)
    python3 - "$w/c.json" "${IDENTICAL_EXCEPT:-}" <<'PY'
import json, sys
p, except_ = sys.argv[1], [k for k in sys.argv[2].split(",") if k and k != "n/a"]
j = json.load(open(p))
for k in ["elapsed_seconds", "peak_resident_bytes"] + except_:
    where, _, key = k.rpartition(".")
    if not where:
        j.pop(key, None)
    for rec in (j.get("rows") or []) if where == "rows" else [r for s in ("golden", "target") for r in (j.get("unmatched") or {}).get(s, [])] if where == "unmatched" else []:
        rec.pop(key, None)
json.dump(j, open(p, "w"), indent=1, sort_keys=True)
PY
    case ",${IDENTICAL_EXCEPT:-}," in *,n/a,*) sed -E -i 's#n/a#-#g; s/ +/ /g' "$w/table.txt" ;; esac
    sed -E -i 's/ \| [0-9.]+s \| / | T | /' "$w/table.txt" "$w/err.txt"
    mv "$w"/* "$out/$side/$n/"
  done
  if ! diff -rq "$out/old/$n" "$out/new/$n" > /dev/null; then
    echo "DIFF $n: $(diff -rq "$out/old/$n" "$out/new/$n" | awk '{print $2}' | xargs -n1 basename | tr '\n' ' ')"
    bad=1
  fi
done < <(find "$root" -type d -name golden | sort)
[ "$bad" = 0 ] && echo "identical: $pairs run pairs"
echo "outputs in $out"
exit $bad
