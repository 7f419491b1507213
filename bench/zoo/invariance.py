"""The invariance property of the conformance matrix (issue 28 acceptance): the same question gets the same
answer however it was captured or filtered.

    python -m bench.zoo.invariance [--arch NAME ...] [--column NAME ...] [--json FILE] [--docs FILE] [--keep DIR]

For a cell (architecture × column), one training step of golden and target is captured twice, at the
column's level and at a level that shares rows with it (mix against module; op, the op-level statistics
recipe, against mix), and each pair is
compared with the real `parity compare --json`. Then the first capture is compared again under filters:
`--include` one block's rows, `--include` one single row (the worst), `--include /backward/`, and
`--exclude` that block. The property, checked row by row (a row is its name, rank and step):

  - a row present under both capture levels has the same verdict in both;
  - a row present under a filter has the verdict it has without the filter.

Each violation is recorded with both verdicts, reasons and noise ratios (schema `parity.zoo.invariance/1`).
Exit code: 0 when every cell ran (whatever it found), 2 for a usage error, 3 when a cell could not run.
"""
import argparse
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import traceback

from . import architectures, cell, faults, recipes

SCHEMA = "parity.zoo.invariance/1"
COLUMNS = {c.name: c for c in recipes.RECIPES + faults.FAULTS}
# What `make bench` checks: one benign recipe of each mode and the faults whose injected module is a
# single op's home (so a filter on its block cuts through the fault's effect). About 1 min per
# architecture on 2 cores.
DEFAULT_COLUMNS = ("bf16", "stats_op", "norm_no_upcast", "wrong_eps")
BLOCK = re.compile(r"^(.*?\.(?:layers|layer|h|block|blocks)\.1)(?:\.|/)")


def row_key(row):
    return (row["name"], row.get("rank"), row.get("step"))


def verdicts(result):
    return {row_key(r): r for r in result.get("rows") or []}


def differences(reference, other, what):
    """The rows of `other` whose verdict differs from the same row's in `reference` (both: name → row)."""
    out = []
    for key, row in other.items():
        ref = reference.get(key)
        if ref is None or ref["verdict"] == row["verdict"]:
            continue
        out.append({"check": what, "row": key[0], "rank": key[1], "step": key[2],
                    "verdicts": [ref["verdict"], row["verdict"]],
                    "noise_ratios": [ref.get("noise_ratio"), row.get("noise_ratio")],
                    "reasons": [ref.get("reason"), row.get("reason")]})
    return out


def compare(binary, golden, target, out, *extra):
    p = subprocess.run([binary, "compare", str(golden), str(target), "--json", str(out), "-q", *extra],
                       capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1) or not pathlib.Path(out).exists():
        raise RuntimeError("parity compare {} exited {}: {}".format(" ".join(extra), p.returncode,
                                                                    (p.stderr or p.stdout)[-1500:]))
    return json.loads(pathlib.Path(out).read_text())


def filters(rows):
    """(label, arguments) of the filters to apply: derived from the rows, never from the model's code."""
    blocks = {}
    for key in rows:
        m = BLOCK.match(key[0])
        if m:
            blocks[m.group(1)] = blocks.get(m.group(1), 0) + 1
    out = []
    if blocks:
        block = max(blocks, key=blocks.get)
        out.append(("include block " + block, ["--include", "^" + re.escape(block) + "[./]"]))
        out.append(("exclude block " + block, ["--exclude", "^" + re.escape(block) + "[./]"]))
    ranked = [r for r in rows.values() if isinstance(r.get("noise_ratio"), (int, float))]
    if ranked:
        worst = max(ranked, key=lambda r: r["noise_ratio"])
        out.append(("include one row " + worst["name"], ["--include", "^" + re.escape(worst["name"]) + "$"]))
    if any("/backward/" in key[0] for key in rows):
        out.append(("include /backward/", ["--include", "/backward/"]))
    return out


def check_cell(arch, column, workdir, binary=None):
    """Captures and compares one cell under two levels and four filters; returns its record."""
    binary = binary or cell.parity_bin()
    workdir = pathlib.Path(workdir)
    rec = {"schema": SCHEMA, "cell": "{}/{}".format(arch.name, column.name), "status": None, "checks": [],
           "violations": []}
    t0 = time.perf_counter()
    roles, reason = cell.not_applicable(arch, column)
    if reason:
        rec.update(status="n/a", reason=reason)
        return rec
    # The column's level against the one that shares rows with it: mix records modules and ops, so "mix"
    # meets "module" on module rows and "op" on op rows.
    levels = (column.level, {"mix": "module", "op": "mix", "module": "mix"}[column.level])
    results = {}
    try:
        for level in levels:
            d = workdir / level
            opts = dict(mode=column.mode, level=level, direction=column.direction)
            recipes.capture_step(arch, column.golden, d / "golden", **opts)
            recipes.capture_step(arch, column.target, d / "target", **opts)
            results[level] = compare(binary, d / "golden", d / "target", d / "compare.json")
    except recipes.FaultVoid as void:
        rec.update(status="n/a", reason="measured: " + str(void))
        return rec
    except Exception:  # one cell that cannot run is reported; the others still run
        rec.update(status="error", error=traceback.format_exc()[-3000:])
        return rec
    first, second = (verdicts(results[level]) for level in levels)
    both = set(first) & set(second)
    rec["checks"].append({"check": "levels {} / {}".format(*levels), "rows": len(both)})
    rec["violations"] += differences(first, {k: second[k] for k in both}, "level {} vs {}".format(*levels))
    d = workdir / levels[0]
    for i, (label, args) in enumerate(filters(first)):
        try:
            filtered = verdicts(compare(binary, d / "golden", d / "target", d / "filter{}.json".format(i), *args))
        except RuntimeError as e:
            rec["violations"].append({"check": label, "error": str(e)})
            continue
        rec["checks"].append({"check": label, "rows": len(filtered)})
        rec["violations"] += differences(first, filtered, label)
    rec["status"] = "run"
    rec["wall_s"] = round(time.perf_counter() - t0, 2)
    return rec


def markdown(records, started, seconds, command):
    ran = [r for r in records if r["status"] == "run"]
    rows_checked = sum(c["rows"] for r in ran for c in r["checks"])
    bad = [r for r in ran if r["violations"]]
    lines = ["### Invariance: capture level and filters (`bench/zoo/invariance.py`)", "",
             "    " + command, "",
             "{} of {} cells ran ({} n/a, {} errors) in {:.0f} s ({} UTC); {} row verdicts checked against "
             "the same row under another capture level or without a filter; **{} cells with a differing "
             "verdict**.".format(len(ran), len(records), sum(r["status"] == "n/a" for r in records),
                                 sum(r["status"] == "error" for r in records), seconds, started, rows_checked,
                                 len(bad)), ""]
    if bad:
        lines += ["| cell | check | row | verdicts | noise ratios |", "|---|---|---|---|---|"]
        for r in bad:
            for v in r["violations"][:5]:
                lines.append("| {} | {} | `{}` | {} | {} |".format(
                    r["cell"], v["check"], v.get("row", ""), " → ".join(v.get("verdicts", [])),
                    " → ".join("{:.3g}".format(x) if isinstance(x, (int, float)) else str(x)
                               for x in v.get("noise_ratios", []))))
        lines.append("")
    return "\n".join(lines)


def write_docs(path, text):
    """Replaces the text between the invariance markers of `path` (appended after the zoo section if absent)."""
    begin, end = "<!-- zoo-invariance:begin -->", "<!-- zoo-invariance:end -->"
    doc = pathlib.Path(path).read_text()
    block = begin + "\n" + text.rstrip() + "\n" + end
    if begin in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        anchor = "<!-- zoo:end -->"
        at = doc.index(anchor) + len(anchor) if anchor in doc else len(doc)
        doc = doc[:at] + "\n\n" + block + doc[at:]
    pathlib.Path(path).write_text(doc)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.zoo.invariance", description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", nargs="+", default=[a.name for a in architectures.ARCHS])
    ap.add_argument("--column", nargs="+", default=list(DEFAULT_COLUMNS))
    ap.add_argument("--json")
    ap.add_argument("--docs")
    ap.add_argument("--keep")
    args = ap.parse_args(argv)
    unknown = [a for a in args.arch if a not in architectures.BY_NAME] + [c for c in args.column if c not in COLUMNS]
    if unknown:
        print("unknown architecture or column: " + ", ".join(unknown), file=sys.stderr)
        return 2
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    t0 = time.perf_counter()
    records = []
    for a in args.arch:
        for c in args.column:
            with tempfile.TemporaryDirectory(prefix="zoo-inv-") as tmp:
                work = pathlib.Path(args.keep) / a / c if args.keep else pathlib.Path(tmp)
                rec = check_cell(architectures.BY_NAME[a], COLUMNS[c], work)
            records.append(rec)
            print("{:<30} {:<6} {} violations {}".format(rec["cell"], rec["status"], len(rec["violations"]),
                                                       "; ".join("{}: {} {}".format(v["check"], v.get("row"),
                                                                                   v.get("verdicts"))
                                                                 for v in rec["violations"][:2])), flush=True)
    seconds = time.perf_counter() - t0
    command = "python -m bench.zoo.invariance --arch {} --column {}".format(" ".join(args.arch), " ".join(args.column))
    if len(args.arch) == len(architectures.ARCHS):
        command = "python -m bench.zoo.invariance --column " + " ".join(args.column) + "   # every architecture"
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"schema": SCHEMA, "started": started, "seconds": seconds,
                                                       "records": records}, indent=1))
    if args.docs:
        write_docs(args.docs, markdown(records, started, seconds, command))
    return 3 if any(r["status"] == "error" for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
