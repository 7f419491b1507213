"""Capture the long-run scenarios (train.py) against their goldens and compare each pair with `parity compare`
(statistics mode, every step, optimizer states and updates on); print what the comparison says about the
optimizer records.

    python -m bench.longrun.run [--steps 300] [--only eps rerun ...] [--out DIR]

Per scenario: the verdict, how many optimizer rows were paired (and records left unpaired), the first failing row
and the first failing optimizer row (step, name) in execution order — judged per step, against that step's rounding
— and the configuration differences; then a second table, the divergence timeline of each (issue 30 §2,
docs/timeline.md): the first step and tensor whose error grows beyond the rounding accumulated since the first step,
and the cause the evidence names.
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
            "compare_seconds": round(seconds, 2), "timeline": timeline_of(res),
            "top_suspect": res["suspects"] and (res["suspects"][0]["step"], res["suspects"][0]["event"])}


def timeline_of(res):
    """What the divergence timeline of a compare JSON says: the first crossing (step, tensor, phase, rank), the
    cause and the configuration keys it names, the median growth exponent (docs/timeline.md)."""
    t = res.get("divergence_timeline")
    if t is None:
        return None
    first = t["first"]
    return {"first": first and (first["step"], first["name"], first["phase"], first["rank"]), "cause": t["cause"],
            "config_keys": t["config_keys"], "median_growth": t["median_growth"],
            "phases": {p["phase"]: p["step"] for p in t["phases"]}}


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


def timeline_markdown(results):
    """The divergence timeline of each scenario: the step and tensor found, the cause it names."""
    lines = ["| scenario | golden | step found | tensor found (phase) | cause | configuration keys | median growth |",
             "|---|---|---:|---|---|---|---:|"]
    for r in results:
        t = r["timeline"] or {}
        first = t.get("first")
        growth = t.get("median_growth")
        lines.append("| {} | {} | {} | {} | {} | {} | {} |".format(
            r["scenario"], r["golden"], first[0] if first else "none",
            "`{}` ({}{})".format(first[1], first[2], ", rank {}".format(first[3]) if first[3] else "") if first else "-",
            t.get("cause") or "-", ", ".join("`{}`".format(k) for k in t.get("config_keys") or []) or "-",
            "{:.2f}".format(growth) if isinstance(growth, float) else "n/a"))
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
    print()
    print(timeline_markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
