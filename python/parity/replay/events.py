"""The op events of a run: records grouped into forward op calls (OpEvent), their recorded tensors as torch
tensors, and the selection of events to replay (by name, module, or the suspects of a comparison)."""
import json

from ._lazy import _core, _torch
from .ops import _NotReplayable, _numel


def _stem(name, role=""):
    """The event name: a record name without "/<direction>/<role>/<index>". The core's event_stem (compare's
    event identity) cuts the role and index; replay names an op call without the direction too."""
    stem = _core().event_stem(name, role)
    if stem == name:
        return name
    head, _, direction = stem.rpartition("/")
    return head if head and direction in ("forward", "backward") else stem


def is_op_event(stem):
    return "/" in stem


class OpEvent:
    """The records of one forward op call: inputs and outputs by index, and its replay spec."""

    def __init__(self, stem, step, rank):
        self.stem, self.step, self.rank = stem, step, rank
        self.inputs, self.outputs = {}, {}
        self.module = self.op = ""
        self.order = None
        self.described = None

    @property
    def parent(self):
        return self.stem.rsplit("/", 1)[0]

    @property
    def spec(self):
        return (self.described or {}).get("replay")

    @property
    def fn(self):
        s = self.spec or {}
        return s.get("fn")


def op_events(run):
    """{(rank, step, stem): OpEvent} of the forward op events of a parity.load Run, in execution order."""
    events = {}
    for r in run.records:
        if r.direction != "forward" or r.role not in ("input", "output"):
            continue
        stem = _stem(r.name, r.role)
        if not is_op_event(stem):
            continue
        key = (r.rank, r.step, stem)
        ev = events.get(key)
        if ev is None:
            ev = events[key] = OpEvent(stem, r.step, r.rank)
            ev.module, ev.op = r.module, r.op
        ev.order = r.order if ev.order is None else min(ev.order, r.order)
        (ev.inputs if r.role == "input" else ev.outputs)[r.index] = r
        if r.role == "output" and r.args is not None and ev.described is None:
            ev.described = r.args
    return dict(sorted(events.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[1].order)))


def record_tensor(rec):
    """A recorded tensor as a torch tensor (a copy; bf16 / fp8 from their bit patterns)."""
    import numpy as np

    torch = _torch()
    if _numel(rec) == 0:  # an empty tensor has no bytes to store (the writer records no data for it)
        from .._tensors import DTYPE_NAMES

        dt = next((t for t, n in DTYPE_NAMES.items() if n == rec.dtype), None)
        return torch.empty(tuple(rec.shape), dtype=dt) if dt is not None else None
    a = rec.array
    if a is None:
        return None
    a = np.array(a, copy=True, order="C").reshape(tuple(rec.shape))  # ascontiguousarray would make 0-d 1-d
    if rec.dtype == "bf16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if rec.dtype in ("f8_e4m3", "f8_e5m2"):
        name = "float8_e4m3fn" if rec.dtype == "f8_e4m3" else "float8_e5m2"
        if not hasattr(torch, name):
            raise _NotReplayable("torch {} has no {} (fp8 needs torch >= 2.1)".format(torch.__version__, name))
        return torch.from_numpy(a).view(getattr(torch, name))
    return torch.from_numpy(a)


def _with_recorded_strides(t, rec):
    """t laid out with the strides the tensor had in the run: kernels choose their path (and summation
    order) by layout, so a transposed input replayed contiguous may round differently. Overlapping
    layouts (stride 0 of an expand) stay contiguous."""
    stride = tuple(int(x) for x in (rec.stride or ()))
    if len(stride) != t.dim() or stride == tuple(t.stride()) or 0 in stride or t.numel() == 0:
        return t
    try:
        out = _torch().empty_strided(tuple(t.shape), stride, dtype=t.dtype)
        out.copy_(t)
        return out
    except RuntimeError:  # a layout torch will not rebuild: the values are what matter most
        return t


def _inputs(ev):
    out = {}
    for i, r in ev.inputs.items():
        t = record_tensor(r)
        if t is not None:
            out[i] = _with_recorded_strides(t, r)
    return out


def _children(events, rank, step, stem):
    """The op events of `stem` itself (an op) or inside the module call `stem`, in execution order."""
    if is_op_event(stem):
        ev = events.get((rank, step, stem))
        return [ev] if ev is not None else []
    base = stem.split("#")[0]
    out = []
    for (r, s, _), ev in events.items():
        if r != rank or s != step:
            continue
        p = ev.parent
        if p == stem or (("#" not in stem) and (p.startswith(base + ".") and "/" not in p)):
            out.append(ev)
    return out


def suspects_from_compare(path):
    with open(path) as f:
        doc = json.load(f)
    if not str(doc.get("schema", "")).startswith("parity.compare/"):
        raise ValueError("{}: not a parity.compare result (schema {!r})".format(path, doc.get("schema")))
    return [{"event": s["event"], "step": s.get("step", 0), "rank": s.get("rank", 0)} for s in doc.get("suspects", [])]


def select(events, event_names=(), modules=(), suspects=()):
    if not event_names and not modules and not suspects:
        return list(events.values())
    chosen = {}
    for name in event_names:
        stem = _stem(name)
        for ev in events.values():
            if ev.stem == stem:
                chosen[(ev.rank, ev.step, ev.stem)] = ev
    for prefix in modules:
        for ev in events.values():
            if ev.module == prefix or ev.module.startswith(prefix + ".") or ev.stem.startswith(prefix + "/"):
                chosen[(ev.rank, ev.step, ev.stem)] = ev
    for s in suspects:
        name = s["event"]
        if name.endswith("/backward"):
            continue
        stem = name[:-len("/forward")] if name.endswith("/forward") else name
        for ev in _children(events, s.get("rank", 0), s.get("step", 0), stem):
            chosen[(ev.rank, ev.step, ev.stem)] = ev
    return sorted(chosen.values(), key=lambda e: (e.rank, e.step, e.order))


def _load(path):
    from ..load import Run

    return Run(path)
