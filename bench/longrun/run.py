"""Capture the long-run scenarios (train.py) against their goldens and compare each pair with `parity compare`
(statistics mode, every step, optimizer states and updates on); print what the comparison says about the
optimizer records.

    python -m bench.longrun.run [--steps 300] [--only eps rerun ...] [--out DIR]

Per scenario: the verdict, how many optimizer rows were paired (and records left unpaired), the first failing row
and the first failing optimizer row (step, name) in execution order, and the configuration differences. This is the
groundwork of issue 30 §4: naming the step and tensor where the runs part *beyond accumulated noise* is §2's
divergence timeline, not this table (the first failing row here is judged per step against that step's rounding).
"""
import argparse
import json
import os
import subprocess
import sys
import time

from . import train

DEFAULT_STEPS = 300


def parity_bin():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("PARITY_BIN") or os.path.join(here, "..", "..", "build", "parity")


def capture(name, steps, out):
    """Captures scenario `name` into out/runs<steps>/<name> (once per directory); returns the run directory."""
    run_dir = os.path.join(out, "runs{}".format(steps), name)
    if not os.path.exists(os.path.join(run_dir, "rank0", "manifest.pfr")):
        train.run(name, steps, run_dir)
    return run_dir


def first(rows, pred):
    """The first row in execution order (step, then order) that pred accepts, or None."""
    hits = [r for r in rows if pred(r)]
    return min(hits, key=lambda r: (r["step"], r["order"])) if hits else None


def summarise(name, res, code, seconds):
    rows = res["rows"]
    opt_rows = [r for r in rows if r["direction"] == "optimizer"]
    failing = first(rows, lambda r: r["verdict"] == "fail")
    failing_opt = first(opt_rows, lambda r: r["verdict"] == "fail")
    unpaired = sum(1 for side in ("golden", "target") for u in res["unmatched"][side]
                   if u.get("direction") == "optimizer")
    return {"scenario": name, "golden": train.golden_of(name), "exit_code": code,
            "verdict": res["summary"]["verdict"], "rows": len(rows), "optimizer_rows": len(opt_rows),
            "optimizer_unpaired": unpaired,
            "optimizer_failing": sum(1 for r in opt_rows if r["verdict"] == "fail"),
            "first_fail": failing and (failing["step"], failing["name"]),
            "first_optimizer_fail": failing_opt and (failing_opt["step"], failing_opt["name"]),
            "config_diff": [d["key"] for d in res.get("config_diff") or [] if d["key"] != "extra.scenario"],
            "compare_seconds": round(seconds, 2)}


def run_scenario(name, steps, out, binary=None):
    """Captures `name` and its golden, compares them; returns the summary (summarise)."""
    golden = capture(train.golden_of(name), steps, out)
    target = capture(name, steps, out)
    js = os.path.join(out, "{}-{}.json".format(name, steps))
    t0 = time.perf_counter()
    p = subprocess.run([binary or parity_bin(), "compare", golden, target, "--json", js], capture_output=True,
                       text=True)
    seconds = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise RuntimeError("parity compare {} {} -> {}: {}".format(golden, target, p.returncode, p.stderr[-2000:]))
    with open(js) as f:
        return summarise(name, json.load(f), p.returncode, seconds)


def markdown(results):
    lines = ["| scenario | golden | verdict | optimizer rows (unpaired) | failing | first failing row | "
             "first failing optimizer row | config differences | compare |", "|---|---|---|---:|---:|---|---|---|---:|"]
    for r in results:
        at = lambda x: "step {} `{}`".format(*x) if x else "none"  # noqa: E731
        lines.append("| {} | {} | {} | {} ({}) | {} | {} | {} | {} | {:.1f} s |".format(
            r["scenario"], r["golden"], r["verdict"], r["optimizer_rows"], r["optimizer_unpaired"],
            r["optimizer_failing"], at(r["first_fail"]), at(r["first_optimizer_fail"]),
            ", ".join("`{}`".format(k) for k in r["config_diff"]) or "none", r["compare_seconds"]))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    ap.add_argument("--only", nargs="*", help="scenarios (default: all but the baseline)")
    ap.add_argument("--out", default="/tmp/parity-longrun", help="runs and compare JSON go here")
    a = ap.parse_args(argv)
    names = a.only or [n for n in train.SCENARIOS if train.golden_of(n)]
    results = [run_scenario(n, a.steps, a.out) for n in names]
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
