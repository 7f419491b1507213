"""Run cells of the conformance matrix: architectures × (benign recipes, faults).

    python -m bench.zoo.run [--arch NAME ...] [--recipe NAME ...] [--fault NAME ...] [--benign] [--faults]
                            [--jobs 2] [--json bench/out/zoo.json] [--markdown FILE] [--docs FILE]
                            [--keep DIR] [--list]
    python -m bench.zoo.run --render bench/out/zoo.json [--markdown FILE] [--docs FILE]

Without --recipe / --fault / --benign / --faults every column runs; without --arch every architecture.
Each cell runs in its own temporary directory (kept under --keep DIR when given): one training step of
golden and target captured with parity.capture, `parity compare G T --json` ($PARITY_BIN or build/parity),
and the record judged (cell.py). Cells run in a process pool of at most 2. Run from the repository root
with the venv's python (`.venv/bin/python`). Exit code: 0 when every cell ran (whatever the judgements),
2 for a usage error, 3 when a cell could not be captured or compared.
"""
import argparse
import concurrent.futures
import datetime
import json
import multiprocessing
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

from . import architectures, cell, faults, recipes, report

MAX_JOBS = 2
COLUMNS = {c.name: c for c in recipes.RECIPES + faults.FAULTS}


def _worker_init(threads):
    import torch
    torch.set_num_threads(threads)
    import logging
    logging.getLogger("transformers").setLevel(logging.ERROR)


def _run_one(arch_name, column_name, keep):
    column = COLUMNS[column_name]
    if keep:
        d = pathlib.Path(keep) / arch_name / column_name
        return cell.run_cell(arch_name, column, d)
    with tempfile.TemporaryDirectory(prefix="zoo-") as d:
        return cell.run_cell(arch_name, column, d)


def run_cells(cells, jobs=MAX_JOBS, keep=None, progress=None):
    """Run (arch, column) name pairs; returns their records in the order given."""
    jobs = max(1, min(jobs, MAX_JOBS, len(cells)))
    threads = max(1, (os.cpu_count() or 1) // jobs)
    ctx = multiprocessing.get_context("spawn")  # torch and OpenMP do not survive fork after use
    results = [None] * len(cells)
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_worker_init,
                                                initargs=(threads,)) as pool:
        futures = {pool.submit(_run_one, a, c, keep): i for i, (a, c) in enumerate(cells)}
        for f in concurrent.futures.as_completed(futures):
            try:
                rec = f.result()
            except Exception as e:  # a worker that died: the cell is an error, the others still run
                a, c = cells[futures[f]]
                rec = {"schema": cell.SCHEMA, "arch": a, "column": c, "kind": COLUMNS[c].kind,
                       "cell": "{}/{}".format(a, c), "status": "error", "ok": False, "misses": ["worker failed"],
                       "error": "{}: {}".format(type(e).__name__, e), "wall_s": None}
            results[futures[f]] = rec
            if progress:
                progress(rec)
    return results


def select(a):
    archs = a.arch or [x.name for x in architectures.ARCHS]
    unknown = [x for x in archs if x not in architectures.BY_NAME]
    cols = list(a.recipe or []) + list(a.fault or [])
    if a.benign:
        cols += [c.name for c in recipes.RECIPES]
    if a.faults:
        cols += [c.name for c in faults.FAULTS]
    cols = cols or list(COLUMNS)
    unknown += [c for c in cols if c not in COLUMNS]
    if unknown:
        raise SystemExit("unknown name(s): {} (see --list)".format(", ".join(unknown)))
    cols = list(dict.fromkeys(cols))
    return [(x, c) for c in cols for x in archs]


def line(rec):
    fd = rec.get("first_divergence")
    return "{:28s} {:6s} {:5s} exit {} {:4s} {:6.1f}s  first {}  codes {}{}".format(
        rec["cell"], rec["status"], "ok" if rec.get("ok") else ("-" if rec.get("ok") is None else "MISS"),
        rec.get("exit_code", "-"), str(rec.get("verdict") or "-"), rec.get("wall_s") or 0,
        fd["name"] if fd else "-", ",".join(c["code"] for c in rec.get("codes", [])) or "-",
        "  " + rec["reason"] if rec["status"] == "n/a" else ("  " + "; ".join(rec.get("misses", []))
                                                              if rec.get("ok") is False else ""))


def head_commit():
    """The checkout's commit (and "+dirty" with uncommitted changes), or None outside git."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=cell.REPO, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cell.REPO,
                               capture_output=True, text=True).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def meta(argv, wall):
    import torch
    import transformers
    return {"when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": head_commit(),
            "command": "python -m bench.zoo.run " + " ".join(argv), "torch": torch.__version__,
            "transformers": transformers.__version__, "parity": cell.parity_bin(), "host": platform.node(),
            "cpus": os.cpu_count(), "wall_s": round(wall, 1)}


def render(path, markdown=None, docs=None):
    data = json.loads(path.read_text())
    text = report.markdown(data["cells"], data["meta"])
    if markdown:
        pathlib.Path(markdown).write_text(text)
    if docs:
        report.rewrite_section(pathlib.Path(docs), text)
    if not markdown and not docs:
        print(text)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", nargs="+", metavar="NAME", help="architectures (default: all)")
    ap.add_argument("--recipe", nargs="+", metavar="NAME", help="benign recipes")
    ap.add_argument("--fault", nargs="+", metavar="NAME", help="faults")
    ap.add_argument("--benign", action="store_true", help="every benign recipe")
    ap.add_argument("--faults", action="store_true", help="every fault")
    ap.add_argument("--jobs", type=int, default=MAX_JOBS, help="worker processes (at most 2)")
    ap.add_argument("--json", default="bench/out/zoo.json", help="results (default bench/out/zoo.json)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the tables as markdown")
    ap.add_argument("--docs", metavar="FILE", help="rewrite the section of FILE between {} and {} with the "
                    "tables".format(report.BEGIN, report.END))
    ap.add_argument("--keep", metavar="DIR", help="keep each cell's captures under DIR/<arch>/<column>")
    ap.add_argument("--list", action="store_true", help="list architectures, recipes, faults and exit")
    ap.add_argument("--render", metavar="JSON", help="run nothing: write --markdown / --docs from the records of "
                    "an earlier run's JSON")
    a = ap.parse_args(argv)
    if a.render:
        return render(pathlib.Path(a.render), a.markdown, a.docs)
    if a.list:
        for x in architectures.ARCHS:
            print("arch   {:12s} {} ({})".format(x.name, x.model, x.kind))
        for c in recipes.RECIPES + faults.FAULTS:
            print("{:6s} {:20s} {}{}".format("recipe" if c.kind == "benign" else "fault", c.name, c.doc,
                                              "; expected " + "|".join(c.expected) if c.expected else ""))
        return 0
    if not os.path.exists(cell.parity_bin()):
        print("parity binary not found: {} (build it, or set PARITY_BIN)".format(cell.parity_bin()), file=sys.stderr)
        return 2
    cells = select(a)
    t0 = time.perf_counter()
    records = run_cells(cells, a.jobs, a.keep, progress=lambda r: print(line(r), flush=True))
    info = meta(argv, time.perf_counter() - t0)
    out = pathlib.Path(a.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"schema": cell.SCHEMA, "meta": info, "summary": report.summary(records),
                               "cells": records}, indent=1))
    if a.markdown:
        pathlib.Path(a.markdown).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(a.markdown).write_text(report.markdown(records, info))
    if a.docs:
        report.rewrite_section(pathlib.Path(a.docs), report.markdown(records, info))
    for name, k in report.summary(records).items():
        print("{:22s} {}/{} ok  FAIL verdicts {}  n/a {}  errors {}".format(
            name, k["ok"], k["run"], k["fail_verdict"], k["n/a"], k["error"]))
    print("wrote", out, "in {:.0f} s".format(info["wall_s"]))
    return 3 if any(r["status"] == "error" for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
