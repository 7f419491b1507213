"""How often the shape-of-error statistic (docs/judgement.md "The shape of an error") fires on the
conformance matrix: on benign cells every firing is a false alarm, on fault cells a firing inside the
injected module is a detection.

    .venv/bin/python -m bench.zoo.shape_rates bench/out/zoo.json KEEP_DIR

KEEP_DIR is the `--keep` folder of the `bench.zoo.run` that wrote the JSON: each cell's compare.json lies
under KEEP_DIR/<arch>/<column>/. Prints a markdown table (per kind: cells, cells with a structured row,
structured rows / compared rows) and, for faults, the cells where a structured row lies in the injected
module.
"""
import json
import pathlib
import sys

from .cell import in_location


def cell_rows(keep, rec):
    path = pathlib.Path(keep) / rec["arch"] / rec["column"] / "compare.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())["rows"]


def rates(zoo_json, keep):
    out = {"benign": [0, 0, 0, 0], "fault": [0, 0, 0, 0]}  # cells, cells firing, structured rows, rows
    detected, located = 0, 0
    for rec in json.loads(pathlib.Path(zoo_json).read_text())["cells"]:
        if rec.get("status") != "run":
            continue
        rows = cell_rows(keep, rec)
        if rows is None:
            continue
        structured = [r for r in rows if r.get("error_structured")]
        acc = out[rec["kind"]]
        acc[0] += 1
        acc[1] += bool(structured)
        acc[2] += len(structured)
        acc[3] += len(rows)
        if rec["kind"] == "fault" and rec.get("location"):
            located += 1
            detected += any(in_location(r.get("module") or "", rec["location"]) for r in structured)
    return out, detected, located


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, detected, located = rates(*argv)
    print("| cells | run | with a structured row | structured rows / compared rows |")
    print("|---|---:|---:|---:|")
    for kind, (cells, firing, srows, rows) in out.items():
        print("| {} | {} | {} ({:.1f} %) | {} / {} ({:.3f} %) |".format(
            kind, cells, firing, 100.0 * firing / max(cells, 1), srows, rows, 100.0 * srows / max(rows, 1)))
    print("\nfault cells with a structured row inside the injected module: {} of {} ({:.1f} %)".format(
        detected, located, 100.0 * detected / max(located, 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
