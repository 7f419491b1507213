#!/usr/bin/env bash
# The model tree of the HTML report on an 80-layer model of 50,008 nodes (issue 31 §1): writes the
# synthetic result (bench/tree_synth.mjs), its report as `parity report` writes it by default (the 5,000
# worst of 51,125 rows, and the tree's index of every row; MAX_ROWS=N passes --max-rows N, 0: every row),
# opens it RUNS times in headless Chromium (a fresh browser each) and prints the page's size and the
# medians of the tree's first paint, expand, search and expand-all (bench/report_tree.mjs). Fails beyond
# the bounds of the issue: first paint 2 s, expand 100 ms.
#   [MAX_ROWS=N] bash bench/report_tree.sh [BUILD_DIR] [RUNS] [SCREENSHOT.png]   (the screenshot: at the structure difference)
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
RUNS=${2:-5}
SHOT=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

node "$HERE/tree_synth.mjs" "$work/tree.json"
"$BUILD/parity" report "$work/tree.json" ${MAX_ROWS:+--max-rows "$MAX_ROWS"} -o "$work/tree.html" >/dev/null
cap=${MAX_ROWS:+--max-rows $MAX_ROWS}
echo "report (${cap:-default cap}): $(stat -c %s "$work/tree.html" | awk '{printf "%.2f", $1 / 1048576}') MiB; Chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}'), $RUNS loads"
result=$(PARITY_SOURCE_DIR="$(dirname "$HERE")" node "$HERE/report_tree.mjs" "$work/tree.html" --runs "$RUNS" ${SHOT:+--shot "$SHOT" --jump structure})
echo "$result"
echo "$result" | node -e '
const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
const bad = [];
if (!(r.firstPaintMs < 2000)) bad.push(`first paint ${r.firstPaintMs} ms >= 2000`);
for (const k of ["expandLayerMs", "expandAttnMs"]) if (!(r[k] < 100)) bad.push(`${k} ${r[k]} >= 100`);
if (bad.length) { console.log("OUT OF BOUNDS: " + bad.join("; ")); process.exit(1); }
console.log("within bounds: first paint < 2000 ms, expand < 100 ms (medians)");
'
