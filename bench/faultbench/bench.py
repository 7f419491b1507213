"""Running and scoring the fault benchmark (used by run.py and tests/python/test_faultbench.py).

Per scenario: capture golden and target (scenarios.py), run the real CLI
``parity compare GOLDEN TARGET --json FILE`` and score its JSON (schema parity.compare/1) with four
booleans:

- ``verdict``: benign -> exit code 0 (summary verdict "pass"); fault -> exit code 1 with summary verdict
  "fail" or "error" (an "error" row is a NaN/Inf disagreement: a stronger fail). A fault judged only
  "warn" is not caught.
- ``location``: fault -> the top suspect (``suspects[0]``) names the injected module or something inside
  it (its ``module`` equals the location or starts with ``location + "."``; ``<root>`` for changed
  inputs), and is on the injected rank / in the injected step where declared (``location_rank``,
  ``location_step``: the optimizer scenarios have no module but must point at step 1); ``None`` (n/a,
  not counted) for faults with neither (the loss scale acts on every gradient). Benign -> no suspect claims structural error: none
  with a ratio (output ratio for sources, input / parameter ratio for inputs / parameters suspects)
  above the noise model's structural bound 32 u (docs/judgement.md). Elevated suspects (4-32 u) are
  tolerated: accumulated rounding legitimately reaches there.
- ``code``: fault -> at least one expected code is in ``diagnosis``; benign -> every emitted code (any
  strength) is expected or allowed.
- ``no_false``: every code with strength > 0 is expected or allowed (OUTLIERS allowed for faults).
"""
import json
import os
import pathlib
import shutil
import subprocess
import time
import traceback

SCHEMA = "parity.faultbench/1"
STRUCTURAL = 32.0  # docs/judgement.md: noise ratio above which a difference is structural
HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCORES = ("verdict", "location", "code", "no_false")


def parity_bin():
    b = os.environ.get("PARITY_BIN")
    if b:
        return b
    return str(REPO / "build" / "parity")


def _num(x):
    if isinstance(x, str):
        return float(x)  # "NaN", "Infinity", "-Infinity"
    return float(x) if x is not None else float("nan")


def suspect_ratio(s):
    key = {"inputs": "input_ratio", "parameters": "param_ratio"}.get(s.get("kind"), "output_ratio")
    return _num(s.get(key))


def in_location(module, location):
    return module == location or module.startswith(location + ".")


def score(sc, res, exit_code):
    summary = res.get("summary", {})
    suspects = res.get("suspects") or []
    diagnosis = res.get("diagnosis") or []
    codes = [d.get("code") for d in diagnosis]
    strong = [d.get("code") for d in diagnosis if (d.get("strength") or 0) > 0]
    ok_codes = sc.acceptable()
    out = {}
    if sc.kind == "benign":
        out["verdict"] = exit_code == 0
        out["location"] = not any(suspect_ratio(s) > STRUCTURAL for s in suspects)
        out["code"] = set(codes) <= ok_codes
    else:
        out["verdict"] = exit_code == 1 and summary.get("verdict") in ("fail", "error")
        if sc.location is None and sc.location_step is None:
            out["location"] = None
        elif not suspects:
            out["location"] = False
        else:
            top = suspects[0]
            out["location"] = ((sc.location is None or in_location(top.get("module", ""), sc.location))
                               and (sc.location_rank is None or top.get("rank") == sc.location_rank)
                               and (sc.location_step is None or top.get("step") == sc.location_step))
        # a fault whose cause has no parity code (expected=(), heldout.py): code not scored
        out["code"] = any(c in codes for c in sc.expected) if sc.expected else None
    out["no_false"] = set(strong) <= ok_codes
    return out


def describe_suspect(s):
    if not s:
        return None
    return {k: s.get(k) for k in ("kind", "event", "module", "op", "direction", "step", "rank", "score",
                                  "input_ratio", "param_ratio", "output_ratio", "weak_evidence", "why")}


def run_scenario(sc, workdir, binary=None, keep=True):
    """Build, compare and score one scenario in workdir/<name>; returns the result dict."""
    binary = binary or parity_bin()
    d = pathlib.Path(workdir) / sc.name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    r = {"name": sc.name, "family": sc.family, "kind": sc.kind, "mode": sc.mode, "location": sc.location,
         "location_rank": sc.location_rank, "location_step": sc.location_step, "expected": list(sc.expected),
         "allowed": sorted(sc.acceptable() - set(sc.expected)), "fast": sc.fast, "why": sc.why, "dir": str(d),
         "error": None}
    t0 = time.perf_counter()
    try:
        sc.build(d)
    except Exception:  # a scenario that cannot be built is reported, the others still run
        r.update(error="build failed:\n" + traceback.format_exc(), build_seconds=time.perf_counter() - t0,
                 scores={k: False for k in SCORES})
        return r
    r["build_seconds"] = time.perf_counter() - t0
    out = d / "compare.json"
    cmd = [binary, "compare", str(d / "golden"), str(d / "target"), "--json", str(out)]
    r["command"] = " ".join(cmd)
    t1 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    r["compare_seconds"] = time.perf_counter() - t1
    r["exit_code"] = p.returncode
    (d / "compare.txt").write_text(p.stdout + ("\n--- stderr ---\n" + p.stderr if p.stderr else ""))
    if p.returncode not in (0, 1) or not out.exists():
        r.update(error="parity compare exited {}: {}".format(p.returncode, (p.stderr or p.stdout)[-2000:]),
                 scores={k: False for k in SCORES})
        return r
    res = json.loads(out.read_text())
    summary = res.get("summary", {})
    r["summary"] = {k: summary.get(k) for k in ("rows", "pass", "warn", "fail", "error", "unmatched_golden",
                                                 "unmatched_target", "verdict", "exit_code")}
    r["noise_summary"] = res.get("noise_summary")
    fd = res.get("first_divergence")
    r["first_divergence"] = fd.get("name") if fd else None
    r["suspects"] = [describe_suspect(s) for s in (res.get("suspects") or [])[:5]]
    r["top_suspect"] = r["suspects"][0] if r["suspects"] else None
    r["codes"] = [{"code": x.get("code"), "strength": x.get("strength"), "events": (x.get("events") or [])[:3],
                   "evidence": (x.get("evidence") or [])[:4]} for x in (res.get("diagnosis") or [])]
    r["config_diff"] = [c.get("key") for c in (res.get("config_diff") or [])]
    r["scores"] = score(sc, res, p.returncode)
    if not keep:
        shutil.rmtree(d / "golden", ignore_errors=True)
        shutil.rmtree(d / "target", ignore_errors=True)
    return r


def percentages(results):
    """Share of scenarios (in %) passing each score; n/a (None) scores are not counted."""
    pct = {}
    for k in SCORES:
        vals = [r["scores"][k] for r in results if r["scores"].get(k) is not None]
        pct[k] = {"passed": sum(bool(v) for v in vals), "scored": len(vals),
                  "percent": round(100.0 * sum(bool(v) for v in vals) / len(vals), 1) if vals else None}
    allk = [all(v is not False for v in r["scores"].values()) for r in results]
    pct["all"] = {"passed": sum(allk), "scored": len(allk),
                  "percent": round(100.0 * sum(allk) / len(allk), 1) if allk else None}
    return pct


# ---- presentation ------------------------------------------------------------------------------------------

def mark(v):
    return "n/a" if v is None else ("yes" if v else "NO")


def top_text(r):
    t = r.get("top_suspect")
    if not t:
        return "-" if not r.get("error") else "(error)"
    s = t.get("event") or t.get("module") or "?"
    extra = []
    if t.get("kind") != "source":
        extra.append(t.get("kind"))
    if t.get("rank") not in (None, 0, -1):
        extra.append("rank {}".format(t.get("rank")))
    if t.get("step") not in (None, 0, -1):
        extra.append("step {}".format(t.get("step")))
    return s + (" [" + ", ".join(extra) + "]" if extra else "")


def codes_text(r):
    if r.get("error"):
        return "ERROR"
    grouped = {}  # code -> strengths, in order of first appearance (a rule may fire on several events)
    for c in r.get("codes", []):
        grouped.setdefault(c["code"], []).append(str(c["strength"]))
    return " ".join("{}({})".format(k, ",".join(v)) for k, v in grouped.items()) or "-"


COLUMNS = ("scenario", "family", "kind", "verdict", "location", "code", "no false", "exit", "top suspect", "codes")


def rows(results):
    for r in results:
        s = r["scores"]
        yield (r["name"], r["family"], r["kind"], mark(s["verdict"]), mark(s["location"]), mark(s["code"]),
               mark(s["no_false"]), str(r.get("exit_code", "-")), top_text(r), codes_text(r))


def text_table(results, width=60):
    data = [tuple(c if len(c) <= width else c[:width - 1] + "…" for c in row) for row in rows(results)]
    widths = [max([len(h)] + [len(row[i]) for row in data]) for i, h in enumerate(COLUMNS)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(COLUMNS), line(["-" * w for w in widths])] + [line(row) for row in data])


def summary_text(pct):
    parts = []
    for k in SCORES + ("all",):
        p = pct[k]
        parts.append("{} {}/{} ({}%)".format(k.replace("_", " "), p["passed"], p["scored"],
                                             "-" if p["percent"] is None else p["percent"]))
    return "; ".join(parts)


def markdown_table(results):
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows(results):
        cells = list(row)
        cells[0] = "`{}`".format(cells[0])
        cells[8] = "`{}`".format(cells[8]) if cells[8] not in ("-", "(error)") else cells[8]
        out.append("| " + " | ".join(esc(c) for c in cells) + " |")
    return "\n".join(out)
