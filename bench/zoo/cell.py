"""One cell of the matrix: an architecture × a column (benign recipe or fault), captured, compared with the
real CLI and judged.

`run_cell(arch, column, workdir)` captures one training step of golden and target into `workdir/golden` and
`workdir/target`, runs `parity compare golden target --json compare.json`, and returns a record (schema
`parity.zoo/1`, documented in bench/zoo/README.md): exit code, headline verdict (`summary.verdict`),
failing rows, first divergence, top suspect, diagnosis codes, wall time, and the judgement against the
acceptance rule of issue 28:

- benign: the headline verdict is not `fail` / `error`, and no diagnosis code outside BENIGN_CODES
  (CONFIG_DIFF, ACCUMULATION_NOISE, LOSS_SCALE, or a flip finding: a code containing "FLIP"; NO_CAUSE_FOUND
  names no cause, a failing verdict is already the miss);
- fault: the headline verdict is `fail` / `error` (verdict), the top suspect is the injected module or
  inside it (location; n/a for the model-wide loss-scale faults), and an expected code is among the
  diagnoses (cause).
"""
import json
import os
import pathlib
import subprocess
import time
import traceback

from . import architectures, recipes

SCHEMA = "parity.zoo/1"
BENIGN_CODES = frozenset({"CONFIG_DIFF", "ACCUMULATION_NOISE", "LOSS_SCALE"})
# Not a cause: what a failing run says when no rule names one (issue 28 item 6); the failure itself is the miss.
NO_CAUSE = "NO_CAUSE_FOUND"
REPO = pathlib.Path(__file__).resolve().parent.parent.parent


def parity_bin():
    return os.environ.get("PARITY_BIN") or str(REPO / "build" / "parity")


def benign_code(code):
    return code in BENIGN_CODES or code == NO_CAUSE or "FLIP" in code


def in_location(module, location):
    return module == location or (module or "").startswith(location + ".")


def headline(stdout):
    """The verdict line `parity compare` ends with (PASSED / PASSED WITH WARNINGS / FAILED ...)."""
    lines = [line for line in stdout.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def summarise(res, stdout):
    """The figures a cell keeps from a parity.compare/1 result."""
    summary = res.get("summary", {})
    fd = res.get("first_divergence")
    suspects = res.get("suspects") or []
    top = suspects[0] if suspects else None
    return {
        "verdict": summary.get("verdict"),
        "headline": headline(stdout),
        "rows": summary.get("rows"),
        "failing_rows": (summary.get("fail") or 0) + (summary.get("error") or 0),
        "warning_rows": summary.get("warn"),
        "first_divergence": None if fd is None else {
            k: fd.get(k) for k in ("name", "module", "op", "direction", "verdict", "reason", "noise_ratio")},
        "top_suspect": None if top is None else {
            k: top.get(k) for k in ("kind", "event", "module", "op", "direction", "score", "why")},
        "codes": [{"code": d.get("code"), "strength": d.get("strength"), "evidence": (d.get("evidence") or [])[:3]}
                  for d in res.get("diagnosis") or []],
        "config_diff": [c.get("key") for c in res.get("config_diff") or []],
        "differing_rows": sum(1 for r in res.get("rows") or []
                              if (r.get("metrics") or {}).get("max_abs") not in (0, 0.0, None)),
    }


def judge(column, rec, location):
    """Append the acceptance judgement to `rec`: `ok` and the list of `misses` (why not ok)."""
    codes = [c["code"] for c in rec["codes"]]
    misses = []
    if column.kind == "benign":
        if rec["verdict"] in ("fail", "error"):
            misses.append("verdict " + rec["verdict"])
        false = sorted({c for c in codes if not benign_code(c)})
        if false:
            misses.append("cause named: " + ", ".join(false))
    else:
        if rec["verdict"] not in ("fail", "error"):
            misses.append("verdict " + str(rec["verdict"]))
        if location is not None:
            top = rec["top_suspect"]
            if top is None or not in_location(top.get("module"), location):
                misses.append("top suspect {} is not {}".format(top.get("module") if top else None, location))
        if not set(codes) & set(column.expected):
            misses.append("no {} among the diagnoses".format(" / ".join(column.expected)))
    rec["misses"] = misses
    rec["ok"] = not misses
    return rec


def not_applicable(arch, column):
    """None, or (roles, reason) when the column does not apply to the architecture."""
    built = architectures.build(arch)
    roles = architectures.roles(built.model, arch)
    return roles, column.applies(arch, roles, built.model)


def run_cell(arch, column, workdir, binary=None):
    """Capture, compare and judge one cell in `workdir` (created); returns its record."""
    if isinstance(arch, str):
        arch = architectures.BY_NAME[arch]
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rec = {"schema": SCHEMA, "arch": arch.name, "column": column.name, "kind": column.kind,
           "cell": "{}/{}".format(arch.name, column.name), "mode": column.mode, "level": column.level,
           "direction": column.direction, "status": None}
    t0 = time.perf_counter()
    try:
        roles, reason = not_applicable(arch, column)
        location = roles.get(column.role) if column.role else None
        rec["location"] = location
        if reason:
            rec.update(status="n/a", reason=reason, ok=None, misses=[], wall_s=round(time.perf_counter() - t0, 2))
            return rec
        opts = dict(mode=column.mode, level=column.level, direction=column.direction)
        rec["golden_notes"] = recipes.capture_step(arch, column.golden, workdir / "golden", **opts)
        rec["target_notes"] = recipes.capture_step(arch, column.target, workdir / "target", **opts)
    except recipes.FaultVoid as void:
        rec.update(status="n/a", reason="measured: " + str(void), ok=None, misses=[],
                   wall_s=round(time.perf_counter() - t0, 2))
        return rec
    except Exception:  # a cell that cannot be captured is reported; the others still run
        rec.update(status="error", error="capture failed:\n" + traceback.format_exc()[-3000:], ok=False,
                   misses=["capture failed"], wall_s=round(time.perf_counter() - t0, 2))
        return rec
    out = workdir / "compare.json"
    cmd = [binary or parity_bin(), "compare", str(workdir / "golden"), str(workdir / "target"), "--json", str(out)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:  # a binary being relinked, a hung compare
        rec.update(status="error", error="parity compare did not run: {}".format(e), ok=False,
                   misses=["compare failed"], wall_s=round(time.perf_counter() - t0, 2))
        return rec
    rec["exit_code"] = p.returncode
    (workdir / "compare.txt").write_text(p.stdout + ("\n--- stderr ---\n" + p.stderr if p.stderr else ""))
    if p.returncode not in (0, 1) or not out.exists():
        rec.update(status="error", error="parity compare exited {}: {}".format(
            p.returncode, (p.stderr or p.stdout)[-2000:]), ok=False, misses=["compare failed"],
            wall_s=round(time.perf_counter() - t0, 2))
        return rec
    rec.update(summarise(json.loads(out.read_text()), p.stdout))
    rec["status"] = "run"
    rec["wall_s"] = round(time.perf_counter() - t0, 2)
    judge(column, rec, location if column.kind == "fault" else None)
    return rec
