"""`parity replay RUN`: every selected op event of one run called again on its recorded inputs, measured
against the exact reference and checked for bit-exact reproduction (mode "run" of parity.replay/1)."""
import math
import sys
import time

from ._lazy import _torch
from .call import _autocast_regions, _call, exact_outputs
from .devices import DeviceMap, _placed, _why_not_exact
from .document import SCHEMA, _summary
from .emulators import _emulated
from .events import _inputs, _load, op_events, record_tensor, select, suspects_from_compare
from .measure import _measure, _num, _reduction_length, _structural_min, bit_exact, noise_class, unit_roundoff
from .ops import _NotReplayable, _spec_problem
from .progress import _Progress


def replay_event(ev, emulate=None, devices=None):
    """The replay of one op event as a parity.replay/1 event object. devices: a DeviceMap (default
    "auto": the recorded device when this torch has it, else the host)."""
    devices = devices or DeviceMap("auto")
    res = {"event": ev.stem, "module": ev.module, "op": ev.op, "step": ev.step, "rank": ev.rank,
           "fn": ev.fn, "dtype": ev.outputs[0].dtype if 0 in ev.outputs else None}
    recorded_dev = ev.outputs[0].device if 0 in ev.outputs else "cpu"
    rdev = devices(recorded_dev)
    res["replay_device"] = str(rdev)
    problem = _spec_problem(ev)
    if problem:
        res.update(status="not_replayed", reason=problem)
        return res
    try:
        tensors = _inputs(ev)
        recorded = {i: record_tensor(r) for i, r in ev.outputs.items()}
        spec = ev.spec
        n = _reduction_length(ev)
        u_in = next((unit_roundoff(ev.inputs[i].dtype) for i in sorted(ev.inputs)
                     if unit_roundoff(ev.inputs[i].dtype) > 0), 2.0 ** -24)
        u_of = lambda i: unit_roundoff(ev.outputs[i].dtype)  # noqa: E731  (integers and bool: 0)
        ref = exact_outputs(spec, tensors)
        ratio, rel, born = _measure(recorded, ref, u_of, n)
        # (b) on the replay device, under the autocast regions the op ran in; the reference (a) stays the
        # exact math on the host.
        regions = _autocast_regions(spec, str(recorded_dev or "cpu").split(":")[0], rdev.type)
        placed = _placed(ev, tensors, devices)
        again = [t.cpu() for t in _call(spec, placed, device_map=lambda d: devices(d), autocast=regions)]
        if regions:
            res["autocast"] = ",".join("{}:{}".format(d, str(t).replace("torch.", "")) for d, t in regions)
        if len(again) < len(recorded):
            exact, again_ratio = False, math.nan
        else:
            exact = all(bit_exact(recorded[i], again[i]) for i in recorded)
            # Bit-exact: the same ratio; otherwise this machine's kernel measured on its own.
            again_ratio = ratio if exact else _measure({i: again[i] for i in recorded}, ref, u_of, n)[0]
        res.update(status="replayed", bit_exact=exact, error_u=_num(ratio), error_rel=_num(rel),
                   replayed_error_u=_num(again_ratio), nonfinite_born=born, noise=noise_class(ratio),
                   creates_error=bool(ratio > _structural_min()), reduction=n)
        if not exact:
            res["note"] = _why_not_exact(recorded_dev, rdev)
        if emulate:
            u_em = unit_roundoff(emulate) if emulate in ("bf16", "f16") else u_in
            res["emulated"] = _emulated(spec, placed, emulate, recorded, ref, lambda i: u_em, n,
                                        lambda d: devices(d), regions)
    except _NotReplayable as e:
        res.update(status="not_replayed", reason=str(e))
    except Exception as e:  # an op that raises on its recorded inputs is reported, never fatal
        res.update(status="not_replayed", reason="re-execution failed: {}: {}".format(type(e).__name__, str(e)[:300]))
    return res


def run(run_dir, events=(), modules=(), suspects=None, emulate=None, limit=0, progress=None, device="auto"):
    """Replay the op events of `run_dir` (all, or those selected); returns the parity.replay/1 object.
    device: "auto" (each op on the device it was recorded on when this torch has it, else the host),
    "cpu", or a device name."""
    t0 = time.monotonic()
    run_ = _load(run_dir)
    all_events = op_events(run_)
    if not all_events:  # said at once, without importing torch (a second and a half)
        return {"schema": SCHEMA, "mode": "run", "run": str(run_dir), "torch": None, "emulate": emulate,
                "device": None, "events": [], "summary": _summary([], 0), "elapsed_seconds": time.monotonic() - t0,
                "problems": [str(p) for p in run_.problems]
                + ["{}: no op events (capture with level='op' or 'mix')".format(run_dir)]}
    devices = DeviceMap(device)
    sus = suspects_from_compare(suspects) if suspects else ()
    chosen = select(all_events, events, modules, sus)
    if limit:
        chosen = chosen[:limit]
    prog = _Progress(len(chosen), sys.stderr.isatty() if progress is None else progress)
    results = []
    for i, ev in enumerate(chosen):
        results.append(replay_event(ev, emulate, devices))
        prog.update(i + 1, ev.stem)
    prog.close()
    doc = {"schema": SCHEMA, "mode": "run", "run": str(run_dir), "torch": _torch().__version__,
           "emulate": emulate, "device": devices.choice, "events": results, "problems": [str(p) for p in run_.problems],
           "summary": _summary(results, len(all_events)), "elapsed_seconds": time.monotonic() - t0}
    return doc
