"""`parity compare --replay`: each suspect's ops replayed in the target with the golden's call and in the
golden, and the suspect confirmed, refuted or left inconclusive (mode "confirm" of parity.replay/1)."""
import math
import sys
import time

from ._lazy import _core, _torch
from .call import exact_outputs
from .document import SCHEMA
from .emulators import _emulated
from .events import _children, _inputs, _load, is_op_event, op_events, record_tensor
from .measure import _measure, _num, _reduction_length, _structural_min, unit_roundoff
from .ops import _NotReplayable, _spec_problem
from .progress import _Progress


def _arg_differences(g, t):
    """Non-tensor arguments that differ between the golden's and the target's call: ["eps: 1e-05 → 1.0"]."""
    out = []
    ga, ta = g.get("args", []), t.get("args", [])
    for i in range(max(len(ga), len(ta))):
        a, b = (ga[i] if i < len(ga) else None), (ta[i] if i < len(ta) else None)
        if a != b and not (a and b and a.get("t") == "tensor" and b.get("t") == "tensor"):
            out.append("argument {}: {} → {}".format(i, _show(a), _show(b)))
    gk, tk = g.get("kwargs", {}), t.get("kwargs", {})
    for k in sorted(set(gk) | set(tk)):
        a, b = gk.get(k), tk.get(k)
        if a != b and not (a and b and a.get("t") == "tensor" and b.get("t") == "tensor"):
            out.append("{}: {} → {}".format(k, _show(a), _show(b)))
    return out


def _show(x):
    if x is None:
        return "(absent)"
    t, v = x.get("t"), x.get("v")
    if t in ("list", "tuple"):
        return "[" + ", ".join(_show(y) for y in v) + "]"
    if t == "tensor":
        return "<tensor>"
    if t == "none":
        return "None"
    return str(v)


def _confirm_op(tev, gev):
    """One target op, replayed with the golden's call (when the golden has the same op) on the target's
    inputs: how much error it creates, against what the golden's own op creates."""
    res = {"event": tev.stem, "op": tev.op, "fn": tev.fn, "dtype": tev.outputs[0].dtype if 0 in tev.outputs else None}
    problem = _spec_problem(tev)
    if problem:
        res.update(status="not_replayed", reason=problem)
        return res
    gok = gev is not None and _spec_problem(gev) is None and gev.fn == tev.fn
    spec = gev.spec if gok else tev.spec
    try:
        tensors = _inputs(tev)
        recorded = {i: record_tensor(r) for i, r in tev.outputs.items()}
        n = _reduction_length(tev)

        def u_of(i):
            u = unit_roundoff(tev.outputs[i].dtype)  # integers and bool: 0, any difference is structural
            if gok and i in gev.outputs:
                u = max(u, unit_roundoff(gev.outputs[i].dtype))  # the lower-precision side's unit
            return u

        ratio, rel, born = _measure(recorded, exact_outputs(spec, tensors), u_of, n)
        res.update(status="replayed", reference="golden call" if gok else "target call", error_u=_num(ratio),
                   error_rel=_num(rel), nonfinite_born=born)
        g_ratio = 0.0
        if gok:
            gt = _inputs(gev)
            grec = {i: record_tensor(r) for i, r in gev.outputs.items()}
            g_ratio, _, _ = _measure(grec, exact_outputs(gev.spec, gt), u_of, n)
            res["golden_error_u"] = _num(g_ratio)
            diffs = _arg_differences(gev.spec, tev.spec)
            if diffs:
                res["argument_differences"] = diffs
            t_dt, g_dt = res["dtype"], gev.outputs[0].dtype if 0 in gev.outputs else None
            if t_dt in ("bf16", "f16") and g_dt in ("f32", "f64"):
                res["emulated"] = _emulated(gev.spec, gt, t_dt, grec, exact_outputs(gev.spec, gt), u_of, n)
        res["creates_error"] = bool(ratio > _structural_min() and ratio > _core().source_amplification * max(g_ratio, 1.0))
    except _NotReplayable as e:
        res.update(status="not_replayed", reason=str(e))
    except Exception as e:
        res.update(status="not_replayed", reason="re-execution failed: {}: {}".format(type(e).__name__, str(e)[:300]))
    return res


def _ratio_text(x):
    """A ratio of the JSON (a number, or "Infinity" / "NaN") as every output spells it (noise_ratio_text)."""
    return _core().noise_ratio_text(float(x))


def _evidence(op):
    text = "{} ({}): {} from its inputs".format(op["event"], op["fn"], _ratio_text(op["error_u"]))
    if op.get("nonfinite_born"):
        text += ", {} non-finite values born".format(op["nonfinite_born"])
    if "golden_error_u" in op:
        text += "; the golden's op {}".format(_ratio_text(op["golden_error_u"]))
    if op.get("argument_differences"):
        text += "; arguments differ: " + "; ".join(op["argument_differences"])
    if op.get("emulated", {}).get("error_u") is not None:
        text += "; the golden's op in {} gives {}".format(op["emulated"]["precision"], _ratio_text(op["emulated"]["error_u"]))
    return text


def _sort_key(op):
    v = op.get("error_u", 0)
    return math.inf if isinstance(v, str) else v


def confirm(golden_dir, target_dir, suspects, max_ops=256, progress=None):
    """Replay each suspect's ops in both runs; the parity.replay/1 object of mode "confirm"."""
    t0 = time.monotonic()
    g_events, t_events = op_events(_load(golden_dir)), op_events(_load(target_dir))
    out = []
    prog = _Progress(len(suspects), sys.stderr.isatty() if progress is None else progress)
    for k, s in enumerate(suspects):
        rank, step, name = s.get("rank", 0), s.get("step", 0), s["event"]
        stem, _, direction = name.rpartition("/") if name.endswith(("/forward", "/backward")) else (name, "", "forward")
        if direction == "backward":
            out.append({"event": name, "step": step, "rank": rank, "ops": [], "replayed": 0, "not_replayed": 0,
                        "status": "not_replayed",
                        "evidence": "a backward event: replay calls forward ops again, not autograd's backward"})
            continue
        ops = _children(t_events, rank, step, stem)[:max_ops]
        if not ops and is_op_event(stem):
            out.append({"event": name, "step": step, "rank": rank, "ops": [], "replayed": 0, "not_replayed": 0,
                        "status": "not_replayed", "evidence": "the target has no op event {}".format(stem)})
            continue
        results = [_confirm_op(ev, g_events.get((rank, step, ev.stem))) for ev in ops]
        rep = [r for r in results if r["status"] == "replayed"]
        created = sorted((r for r in rep if r["creates_error"]), key=_sort_key, reverse=True)
        entry = {"event": name, "step": step, "rank": rank, "ops": results, "replayed": len(rep),
                 "not_replayed": len(results) - len(rep)}
        if not results:
            entry.update(status="not_replayed", evidence="no op events inside (capture both runs with level='op' or "
                                                         "'mix' and mode='tensor')")
        elif created:
            entry.update(status="confirmed", evidence=_evidence(created[0]))
        elif not rep:
            reasons = sorted({r["reason"] for r in results})
            entry.update(status="not_replayed", evidence="no op could be replayed: " + "; ".join(reasons[:3]))
        else:
            worst = max(rep, key=_sort_key)
            status = "refuted" if len(rep) == len(results) else "inconclusive"
            why = "every op inside" if status == "refuted" else "{} of {} ops".format(len(rep), len(results))
            entry.update(status=status, evidence="{} carries its inputs' error; worst {}".format(why, _evidence(worst)))
        out.append(entry)
        prog.update(k + 1, stem)
    prog.close()
    return {"schema": SCHEMA, "mode": "confirm", "golden": str(golden_dir), "target": str(target_dir),
            "torch": _torch().__version__, "suspects": out, "elapsed_seconds": time.monotonic() - t0}
