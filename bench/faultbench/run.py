#!/usr/bin/env python3
"""Run the fault benchmark: build every scenario (golden + target capture), run `parity compare` on it,
score verdict / location / code / no-false-code, print a table and the four percentages, write the
results JSON (schema parity.faultbench/1) and optionally a markdown table.

    python bench/faultbench/run.py [--fast] [--only NAME...] [--out DIR] [--markdown FILE] [--json FILE]
    python bench/faultbench/run.py --heldout [...]   # only the held-out set (heldout.py)

The parity CLI is $PARITY_BIN or build/parity. Exit code: 0 when the benchmark ran (whatever the
scores), 2 for a usage error, 3 when a scenario could not be built or compared.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))  # bench/: the faultbench package
try:
    import parity  # noqa: F401  (the venv, or PYTHONPATH=python:build/python)
except ImportError:
    sys.path[:0] = [str(REPO / "python"), str(REPO / "build" / "python")]

from faultbench import bench  # noqa: E402
from faultbench import heldout  # noqa: E402
from faultbench.scenarios import SCENARIOS, fast_names  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="only the representative fast subset")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these scenarios")
    ap.add_argument("--out", metavar="DIR", help="where the runs and results.json go (default: a new "
                    "temporary directory, kept)")
    ap.add_argument("--json", metavar="FILE", help="results JSON (default: OUT/results.json)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the results as a markdown table")
    ap.add_argument("--no-keep", action="store_true", help="delete each scenario's captures after scoring")
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    ap.add_argument("--heldout", action="store_true", help="only the held-out scenarios (heldout.py), "
                    "which were not used for tuning")
    a = ap.parse_args(argv)
    pool = heldout.SCENARIOS if a.heldout else SCENARIOS

    if a.list:
        for s in pool:
            loc = s.location or ("step {}".format(s.location_step) if s.location_step is not None else "-")
            if s.location_rank is not None:
                loc += " (rank {})".format(s.location_rank)
            print("{:36s} {:8s} {:7s} {:10s} {:22s} expected {}{}{}".format(
                s.name, s.family, s.kind, s.mode, loc, "|".join(s.expected),
                "; allowed " + ",".join(sorted(s.acceptable() - set(s.expected))) if s.acceptable() - set(s.expected) else "",
                "  [fast]" if s.fast else ""))
        return 0
    scenarios = {s.name: s for s in pool}
    names = list(scenarios)
    if a.only:
        unknown = [n for n in a.only if n not in scenarios]
        if unknown:
            print("unknown scenario(s): {} (see --list)".format(", ".join(unknown)), file=sys.stderr)
            return 2
        names = [n for n in names if n in a.only]
    if a.fast:
        names = [n for n in names if n in fast_names()]
    binary = bench.parity_bin()
    if not os.path.exists(binary):
        print("parity binary not found: {} (build it, or set PARITY_BIN)".format(binary), file=sys.stderr)
        return 2
    out = pathlib.Path(a.out) if a.out else pathlib.Path(tempfile.mkdtemp(prefix="faultbench-"))
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)

    import torch
    from faultbench.scenarios import DEVICE
    device = DEVICE + (" ({})".format(torch.cuda.get_device_name(0)) if DEVICE.startswith("cuda") else "")
    print("device: {} (PARITY_FAULTBENCH_DEVICE), torch {}".format(device, torch.__version__))
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    results = []
    for i, n in enumerate(names):
        r = bench.run_scenario(scenarios[n], runs, binary, keep=not a.no_keep)
        results.append(r)
        s = r["scores"]
        print("[{}/{}] {:36s} {:5.1f}s  verdict {} location {} code {} no-false {}{}".format(
            i + 1, len(names), n, r.get("build_seconds", 0) + r.get("compare_seconds", 0), bench.mark(s["verdict"]),
            bench.mark(s["location"]), bench.mark(s["code"]), bench.mark(s["no_false"]),
            "  ERROR" if r["error"] else ""), flush=True)
        if r["error"]:
            print(r["error"], file=sys.stderr)
    wall = time.perf_counter() - t0
    pct = bench.percentages(results)

    print()
    print(bench.text_table(results))
    print()
    print(bench.summary_text(pct))
    print("{} scenarios in {:.1f} s (captures {:.1f} s, parity compare {:.1f} s); runs in {}".format(
        len(results), wall, sum(r.get("build_seconds", 0) for r in results),
        sum(r.get("compare_seconds", 0) for r in results), runs))

    doc = {
        "schema": bench.SCHEMA,
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join([os.path.relpath(sys.argv[0], os.getcwd())] + (argv if argv is not None else sys.argv[1:])),
        "parity_bin": binary,
        "torch": torch.__version__,
        "device": device,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "wall_seconds": round(wall, 2),
        "percentages": pct,
        "scenarios": results,
    }
    jpath = pathlib.Path(a.json) if a.json else out / "results.json"
    jpath.parent.mkdir(parents=True, exist_ok=True)
    jpath.write_text(json.dumps(doc, indent=1, default=str))
    print("results: {}".format(jpath))
    if a.markdown:
        md = pathlib.Path(a.markdown)
        md.write_text(bench.markdown_table(results) + "\n\n" + bench.summary_text(pct) + "\n")
        print("markdown: {}".format(md))
    return 3 if any(r["error"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
