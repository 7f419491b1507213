"""parity.replay: call a recorded op again on its recorded inputs (docs/replay.md).

For every op event of a tensor-mode dump written with replay information (parity.dump/1.1, the
event's `args.replay`), the engine

  (a) runs the op in float64 on the recorded inputs widened exactly: the reference of what the op
      computes given its own inputs. Casts and quantisers (`.to(...)`, `.half()`, `round`, ...) are the
      identity there: their exact result is the value they were given, so the error they add is the
      rounding (or quantisation) they apply;
  (b) runs it again in the recorded dtypes, and says whether that reproduces the recorded outputs bit
      for bit;

and measures the recorded output's error against (a) in units of the expected rounding of its dtype,
u·sqrt(1 + log2 n) (include/parity/noise.h, docs/judgement.md "Noise unit"). An op whose ratio is above
the structural bound (32) *creates* error given its inputs; one within rounding only carries what its
inputs brought.

`confirm(golden, target, suspects)` is what `parity compare --replay` runs: for each suspect event
(an op, or a module through the op events inside it) it replays the target's ops with the golden's
call (the golden's callable and non-tensor arguments) on the target's inputs, and marks the suspect
`confirmed` when one of them creates error the golden's same op does not, `refuted` when every op
inside only carries it.

Command line (the `parity replay` subcommand runs this; it is also usable directly):
    python -m parity.replay run RUN [--event NAME]... [--module PREFIX]... [--suspects compare.json]
                                    [--emulate bf16|f16] [--limit N] --json OUT
    python -m parity.replay confirm GOLDEN TARGET --suspects-json IN --json OUT
"""
import json
import math
import os
import sys
import time

SCHEMA = "parity.replay/1"
SPEC_VERSION = 1  # the highest args.replay["v"] this engine reads (parity._tensors.REPLAY_SPEC_VERSION)

# Unit roundoff, rounding expectation, the noise classes (bounds 4 and 32) and how a ratio is spelled are the
# core's definitions (parity/noise.h), as are an event's name stem and an op's reduction length
# (parity/analysis.h), through the extension: replay and compare measure in one unit.

_CASTS = frozenset("to type half float double bfloat16 int long short char byte".split())
_QUANTISERS = frozenset("round floor ceil trunc fix".split())
_COLLECTIVES = frozenset("""all_reduce all_reduce_coalesced broadcast reduce all_gather all_gather_coalesced
all_gather_into_tensor _all_gather_base reduce_scatter reduce_scatter_tensor _reduce_scatter_base all_to_all_single
all_to_all scatter gather send recv isend irecv batch_isend_irecv""".split())
_RANDOM = frozenset("""rand rand_like randn randn_like randint randint_like randperm bernoulli bernoulli_ multinomial
normal normal_ uniform_ exponential_ geometric_ cauchy_ log_normal_ random_ poisson rrelu""".split())
_DROPOUTS = frozenset("dropout dropout1d dropout2d dropout3d alpha_dropout feature_alpha_dropout".split())

# Emulated precisions of the emulated replay: name -> (torch dtype name or None, rounding function or None).
# bf16 and fp16 run the op in that dtype with torch's own casts; other formats round through a registered
# function (register_emulator; parity.emulate of issue 11 §4 provides fp8 / int8 / FTZ).
_EMULATORS = {}


def register_emulator(name, round_fn):
    """Make `name` usable for emulated replay: round_fn(float tensor) -> float tensor holding the values
    that format keeps. The op runs in float32 on rounded inputs and its outputs are rounded too."""
    _EMULATORS[name] = round_fn


# The formats of precision emulation (parity.emulation, docs/emulation.md) beyond bf16/f16: fp8 with
# per-tensor scaling, int8 fake quantisation, TF32 inputs, flush-to-zero; the C++ core's kernels.
EMULATION_MODES = ("fp8_e4m3", "fp8_e5m2", "int8", "int8:channel", "tf32", "ftz")


def _register_emulation_modes():
    from . import emulation

    for mode in EMULATION_MODES:
        register_emulator(mode, lambda t, mode=mode: emulation.round_tensor(t, mode))


_register_emulation_modes()


def _torch():
    import torch

    return torch


_CORE = []


def _core():
    if not _CORE:
        from ._core import core

        _CORE.append(core)
    return _CORE[0]


def unit_roundoff(dtype):
    return _core().unit_roundoff(dtype)


def expected_rounding(u, n):
    return _core().expected_rounding_error(u, int(n))


# ---- reading events -------------------------------------------------------------------------------------------

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


def _numel(rec):
    n = 1
    for d in rec.shape:
        n *= int(d)
    return n


def record_tensor(rec):
    """A recorded tensor as a torch tensor (a copy; bf16 / fp8 from their bit patterns)."""
    import numpy as np

    torch = _torch()
    if _numel(rec) == 0:  # an empty tensor has no bytes to store (the writer records no data for it)
        from ._tensors import DTYPE_NAMES

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


# ---- why an event cannot be replayed --------------------------------------------------------------------------

class _NotReplayable(Exception):
    pass


def _spec_problem(ev):
    """The reason `ev` cannot be called again, or None."""
    name = ev.stem.rsplit("/", 1)[-1].split("#")[0]
    if name in _COLLECTIVES:
        return "collective: its result depends on the other ranks' tensors"
    if not ev.outputs:
        return "no output recorded"
    missing_data = [r for r in list(ev.inputs.values()) + list(ev.outputs.values())
                    if not r.has_data and _numel(r) > 0]
    if missing_data:
        r = missing_data[0]
        how = "checksum" if r.crc32c is not None else "statistics"
        return "{}-mode dump: the tensors were not recorded (capture with mode='tensor')".format(how)
    if ev.described is None:
        return "no arguments recorded for this op"
    spec = ev.spec
    if spec is None:
        return "recorded by a writer before replay information (parity.dump/1): no typed arguments"
    if int(spec.get("v", 0)) > SPEC_VERSION:
        return "replay spec version {} is newer than this parity reads ({})".format(spec.get("v"), SPEC_VERSION)
    if spec.get("unreplayable"):
        return spec["unreplayable"]
    if name in _RANDOM or (name in _DROPOUTS and _dropout_active(spec)):
        return "random: its output depends on the generator state"
    return None


def _dropout_active(spec):
    kw = spec.get("kwargs", {})
    args = spec.get("args", [])
    training = kw.get("training", args[2] if len(args) > 2 else {"t": "bool", "v": True})
    p = kw.get("p", args[1] if len(args) > 1 else {"t": "float", "v": 0.5})
    return bool(training.get("v")) and float(p.get("v") or 0) > 0


_RESOLVED = {}


def resolve(fn):
    """The callable named by a spec's `fn` ("torch.Tensor.softmax", "torch.nn.functional.layer_norm")."""
    if fn not in _RESOLVED:
        _RESOLVED[fn] = _resolve(fn)
    return _RESOLVED[fn]


def _resolve(fn):
    import importlib

    parts = fn.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for p in parts[cut:]:
                obj = getattr(obj, p)
            return obj
        except AttributeError:
            break
    raise _NotReplayable("torch {} has no {}".format(_torch().__version__, fn))


# ---- decoding arguments -------------------------------------------------------------------------------------------

def _decode(x, tensors, dtype_map, device_map=None):
    torch = _torch()
    t, v = x.get("t"), x.get("v")
    if t == "tensor":
        if v not in tensors:
            raise _NotReplayable("input {} is missing from the dump".format(v))
        return tensors[v]
    if t == "none":
        return None
    if t in ("bool", "int", "str"):
        return v
    if t == "float":
        return float(v)
    if t == "dtype":
        dt = getattr(torch, v, None)
        if dt is None:
            raise _NotReplayable("torch {} has no dtype {}".format(torch.__version__, v))
        return dtype_map(dt)
    if t == "size":
        return torch.Size(v)
    if t == "device":
        return device_map(v) if device_map is not None else torch.device(v)
    if t in ("memory_format", "layout"):
        return getattr(torch, v)
    if t == "ellipsis":
        return Ellipsis
    if t == "slice":
        return slice(*(_decode(y, tensors, dtype_map, device_map) for y in v))
    if t == "list":
        return [_decode(y, tensors, dtype_map, device_map) for y in v]
    if t == "tuple":
        return tuple(_decode(y, tensors, dtype_map, device_map) for y in v)
    if t == "dict":
        return {k: _decode(y, tensors, dtype_map, device_map) for k, y in v.items()}
    raise _NotReplayable("argument of unknown type {!r}".format(t))


_DEVICE_TYPES = frozenset("cpu cuda xpu mps npu hpu xla meta privateuseone".split())


def _device_string(x):
    """A "str" argument that names a device ("cuda", "cuda:0"), or None."""
    if x.get("t") != "str" or not isinstance(x.get("v"), str):
        return None
    v = x["v"]
    return v if v.split(":", 1)[0] in _DEVICE_TYPES else None


def _map_device_strings(spec, device_map):
    """spec with device names passed as strings (`x.to("cuda")`, `device="cuda:0"`) typed as devices, so
    that they are mapped to the replay device like torch.device arguments."""
    if device_map is None:
        return spec
    fn = spec.get("fn", "")
    kw = spec.get("kwargs", {})
    args = spec.get("args", [])
    new_kw = {k: ({"t": "device", "v": v["v"]} if k == "device" and _device_string(v) else v) for k, v in kw.items()}
    new_args = args
    if fn.endswith((".to", ".cuda", ".new_empty", ".new_zeros", ".new_ones", ".new_full", ".new_tensor")):
        new_args = [{"t": "device", "v": a["v"]} if _device_string(a) else a for a in args]
    if new_kw == kw and new_args is args:
        return spec
    return dict(spec, kwargs=new_kw, args=new_args)


def _autocast_regions(spec, recorded_type, replay_type):
    """[(device type, dtype)] of the autocast regions to enter for the recorded-dtype replay: those
    recorded with the op (args.replay["autocast"], "cuda:bfloat16,cpu:bfloat16"); the one of the
    device the op ran on is entered on the replay device when they differ."""
    text = spec.get("autocast")
    if not text or text == "off":
        return []
    torch = _torch()
    out = {}
    for part in text.split(","):
        dev, _, dt = part.partition(":")
        dtype = getattr(torch, dt, None)
        if dtype is None:
            raise _NotReplayable("torch {} has no dtype {} (recorded autocast {})".format(torch.__version__, dt, text))
        if dev == recorded_type:
            out[replay_type] = dtype
        elif dev not in out:
            out[dev] = dtype
    return sorted(out.items(), key=lambda kv: kv[0] != replay_type)


def _call(spec, tensors, dtype_map=lambda d: d, device_map=None, autocast=()):
    """The op called again: tensors are its inputs by index; dtype_map and device_map rewrite dtype and
    device arguments; autocast: [(device type, dtype)] regions entered around the call."""
    import contextlib

    from ._tensors import iter_tensors

    torch = _torch()
    spec = _map_device_strings(spec, device_map)
    tensors = _own(tensors, spec)
    tracked = [] if _writes_inputs(spec) else spec.get("requires_grad", [])
    if tracked:  # the inputs autograd tracked at capture are tracked again (same kernel path)
        tensors = dict(tensors)
        for i in tracked:
            if i in tensors and (tensors[i].is_floating_point() or tensors[i].is_complex()):
                tensors[i] = tensors[i].detach().requires_grad_(True)
    fn = resolve(spec["fn"])
    args = [_decode(a, tensors, dtype_map, device_map) for a in spec.get("args", [])]
    kwargs = {k: _decode(v, tensors, dtype_map, device_map) for k, v in spec.get("kwargs", {}).items()}
    with contextlib.ExitStack() as regions:
        for dev, dtype in autocast:
            regions.enter_context(torch.autocast(dev, dtype=dtype))
        with torch.enable_grad() if tracked else torch.no_grad():
            out = fn(*args, **kwargs)
    if out is None and spec["fn"].endswith("__setitem__") and args:
        out = args[0]  # item assignment: the receiver is the output (as capture records it)
    return [t.detach() for _, t in iter_tensors(out)]


def _op_name(spec):
    return spec["fn"].rsplit(".", 1)[-1]


_INPLACE_DUNDERS = frozenset("""__iadd__ __isub__ __imul__ __imatmul__ __itruediv__ __ifloordiv__ __imod__ __ipow__
__ilshift__ __irshift__ __iand__ __ixor__ __ior__ __setitem__""".split())


def _writes_inputs(spec):
    """Whether the op writes one of its tensor arguments (a receiver ending in "_", `x += y`, `out=`)."""
    name = _op_name(spec)
    kw = spec.get("kwargs", {})
    return ((name.endswith("_") and not name.endswith("__")) or name in _INPLACE_DUNDERS or "out" in kw
            or kw.get("inplace", {}).get("v") is True)


def _own(tensors, spec):
    """The inputs as the op may use them: copies when it writes them, so each execution starts from the
    recorded values."""
    return {i: t.clone() for i, t in tensors.items()} if _writes_inputs(spec) else tensors


def exact_outputs(spec, tensors):
    """(a): the op in float64 on the inputs widened exactly; casts and quantisers are the identity."""
    torch = _torch()
    wide = {i: (t.to(torch.float64, copy=True) if t.is_floating_point() else t) for i, t in _own(tensors, spec).items()}
    name = _op_name(spec)
    first = spec.get("args", [{}])[0] if spec.get("args") else {}
    if (name in _CASTS or (name in _QUANTISERS and not spec.get("kwargs"))) and first.get("t") == "tensor":
        src = wide.get(first.get("v"))
        if src is not None and src.is_floating_point():
            return [src]
    cpu = torch.device("cpu")
    return _call(spec, wide, lambda d: torch.float64 if d.is_floating_point else d, lambda d: cpu)


def emulated_outputs(spec, tensors, precision, device_map=None, autocast=()):
    """The op on inputs held in `precision`: bf16 / f16 run the op in that dtype (torch's casts and
    kernels); a registered emulator rounds inputs and outputs around a float32 op."""
    torch = _torch()
    if precision in ("bf16", "f16"):
        dt = torch.bfloat16 if precision == "bf16" else torch.float16
        low = {i: (t.to(dt) if t.is_floating_point() else t) for i, t in tensors.items()}
        return _call(spec, low, lambda d: dt if d.is_floating_point else d, device_map, autocast)
    rnd = _EMULATORS.get(precision)
    if rnd is None:
        raise _NotReplayable("no emulator for {} (bf16 and f16 are built in; fp8 / int8 / FTZ come from "
                             "parity.emulate, registered with parity.replay.register_emulator)".format(precision))
    low = {i: (rnd(t.float().cpu()).to(t.device) if t.is_floating_point() else t) for i, t in tensors.items()}
    return [rnd(o.float().cpu()) if o.is_floating_point() else o for o in
            _call(spec, low, lambda d: torch.float32 if d.is_floating_point else d, device_map, autocast)]


# ---- measuring ------------------------------------------------------------------------------------------------------

def _reduction_length(ev):
    """n of the event's rounding expectation, by compare's rule (op_reduction_length, parity/analysis.h): 1 for
    an elementwise op, else the last dimension of its first floating input; an op on neither list reduces."""
    inputs = [(ev.inputs[i].dtype, [int(d) for d in ev.inputs[i].shape]) for i in sorted(ev.inputs)]
    output = [int(d) for d in ev.outputs[0].shape] if 0 in ev.outputs else []
    return _core().reduction_length(ev.op, inputs, output)


def error_ratio(rec, ref, u, n):
    """(ratio, relative error, non-finite born) of a recorded output against its exact reference: the
    normwise relative error ‖rec − ref‖₂ / ‖ref‖₂ over positions where both are finite, divided by the
    expected rounding u·sqrt(1 + log2 n); non-finite values where the reference has another value make
    the ratio infinite (docs/replay.md "Local error")."""
    torch = _torch()
    if tuple(rec.shape) != tuple(ref.shape):
        return math.inf, math.inf, 0
    a, b = rec.to(torch.float64, copy=True), ref.double()  # a is ours to subtract into
    # The common case in two fused passes: in float64 neither norm can overflow for values of a narrower
    # dtype, so both are finite exactly when every element of both tensors is.
    norm = float(torch.linalg.vector_norm(b))
    diff = float(torch.linalg.vector_norm(torch.sub(a, b))) if math.isfinite(norm) else math.nan
    if math.isfinite(diff) and math.isfinite(norm):
        rel = diff / norm if norm > 0 else (0.0 if diff == 0 else math.inf)
        if rel == 0:
            return 0.0, 0.0, 0
        expected = expected_rounding(u, n) if u > 0 else 0.0
        return (rel / expected if expected > 0 else math.inf), rel, 0
    fa, fb = torch.isfinite(a), torch.isfinite(b)
    born = int((~fa & fb).sum())
    lost = int((fa & ~fb).sum())
    both_nf = ~fa & ~fb
    differ_nf = int((both_nf & ~((a == b) | (torch.isnan(a) & torch.isnan(b)))).sum())
    both = fa & fb
    diff = float(torch.linalg.vector_norm((a - b)[both])) if bool(both.any()) else 0.0
    norm = float(torch.linalg.vector_norm(b[both])) if bool(both.any()) else 0.0
    rel = diff / norm if norm > 0 else (0.0 if diff == 0 else math.inf)
    if born or lost or differ_nf:
        return math.inf, rel, born
    if rel == 0:
        return 0.0, 0.0, 0
    expected = expected_rounding(u, n) if u > 0 else 0.0
    return (rel / expected if expected > 0 else math.inf), rel, 0


def _u_of(dtype_name, fallback):
    u = unit_roundoff(dtype_name)
    return u if u > 0 else fallback


def bit_exact(rec, out):
    torch = _torch()
    if out.dtype != rec.dtype or tuple(out.shape) != tuple(rec.shape):
        return False
    a, b = out.contiguous(), rec.contiguous()
    if a.dtype.is_floating_point:
        ibits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return bool(torch.equal(a.view(ibits), b.view(ibits)))
    return bool(torch.equal(a, b))


def _structural_min():
    return _core().noise_params()[1]


def noise_class(ratio):
    """noise / elevated / structural / unknown: the core's classes (parity/noise.h)."""
    return _core().noise_class(ratio)


def _num(x):
    """JSON number, or the strings "Infinity" / "NaN" (docs/replay.md)."""
    if x is None:
        return None
    if isinstance(x, float) and (math.isinf(x) or math.isnan(x)):  # compare's spelling (docs/compare-json.md)
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    return x


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


class DeviceMap:
    """Where the recorded-dtype replay runs (docs/replay.md "Device"): choice "auto" puts each tensor and
    device argument on the device it was recorded on when this torch has that device, else on the host;
    "cpu" (or any device name) puts everything there."""

    def __init__(self, choice="auto"):
        self.choice = choice or "auto"
        self._cache = {}
        if self.choice != "auto":
            torch = _torch()
            try:
                dev = torch.device(self.choice)
            except (RuntimeError, TypeError) as e:
                raise ValueError("--device {}: not a device ({})".format(self.choice, e))
            if not _available(dev):
                raise ValueError("--device {}: this torch ({}) has no such device".format(self.choice, torch.__version__))
            self._fixed = dev
        else:
            self._fixed = None

    def __call__(self, recorded):
        if self._fixed is not None:
            return self._fixed
        key = str(recorded or "cpu")
        dev = self._cache.get(key)
        if dev is None:
            torch = _torch()
            try:
                dev = torch.device(key)
            except (RuntimeError, TypeError):
                dev = torch.device("cpu")
            if not _available(dev):
                dev = torch.device("cpu")
            self._cache[key] = dev
        return dev


def _available(dev):
    torch = _torch()
    if dev.type == "cpu":
        return True
    mod = getattr(torch, dev.type, None)
    try:
        if mod is None or not mod.is_available():
            return False
        return dev.index is None or dev.index < mod.device_count()
    except Exception:
        return False


def _same_device(a, b):
    """Whether two device names are one device ("cuda" and "cuda:0": an unindexed name is device 0 here)."""
    def norm(x):
        kind, _, index = str(x or "cpu").partition(":")
        return kind, (0 if kind == "cpu" or not index else int(index))

    try:
        return norm(a) == norm(b)
    except ValueError:
        return str(a) == str(b)


def _placed(ev, tensors, devices):
    """The inputs on their replay devices (each where it was recorded, mapped by `devices`)."""
    out = {}
    for i, t in tensors.items():
        dev = devices(ev.inputs[i].device)
        out[i] = t if dev.type == "cpu" else t.to(dev)
    return out


def _measure(outputs_rec, reference, u_of, n):
    worst, worst_rel, born = 0.0, 0.0, 0
    if len(reference) < len(outputs_rec):
        raise _NotReplayable("the op returned {} tensors, {} were recorded".format(len(reference), len(outputs_rec)))
    for i, rec in outputs_rec.items():
        r, rel, b = error_ratio(rec, reference[i], u_of(i), n)
        born += b
        if r > worst or r != r:
            worst = r
        worst_rel = max(worst_rel, rel) if rel == rel else worst_rel
    return worst, worst_rel, born


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
        u_of = lambda i: _u_of(ev.outputs[i].dtype, 0.0) if ev.outputs[i].dtype not in _INT_DTYPES else 0.0  # noqa: E731
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


_INT_DTYPES = frozenset("i8 i16 i32 i64 u8 bool".split())


def _emulated(spec, tensors, precision, recorded, ref, u_of, n, device_map=None, autocast=()):
    """{"precision", "error_u"} of the op run in `precision` against the exact reference, or
    {"precision", "problem"} when it cannot run that way (CPU torch lacks many f16 kernels): the
    replay's own result stands either way."""
    try:
        em = [t.cpu() for t in emulated_outputs(spec, tensors, precision, device_map, autocast)]
        er, _, _ = _measure({i: em[i] for i in recorded if i < len(em)}, ref, u_of, n)
        return {"precision": precision, "error_u": _num(er)}
    except Exception as e:
        return {"precision": precision, "problem": "{}: {}".format(type(e).__name__, str(e)[:200])}


def _why_not_exact(recorded_dev, replay_dev):
    if not _same_device(recorded_dev, replay_dev):
        return "recorded on {}, replayed on {}: another kernel".format(recorded_dev, replay_dev)
    return "the replay on this machine differs from the recorded output"


# ---- selecting events --------------------------------------------------------------------------------------------------

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


# ---- progress ------------------------------------------------------------------------------------------------------------

class _Progress:
    def __init__(self, total, enabled):
        self.total, self.enabled, self.last = total, enabled and total > 0, 0.0

    def update(self, i, name):
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and i < self.total:
            return
        self.last = now
        width = 30
        done = int(width * i / self.total)
        sys.stderr.write("\rreplay [{}{}] {}/{} {}\x1b[K".format("#" * done, "." * (width - done), i, self.total,
                                                                   name[-40:]))
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


# ---- the two entry points ------------------------------------------------------------------------------------------------

def _load(path):
    from .load import Run

    return Run(path)


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


def _summary(results, total):
    reasons = {}
    for r in results:
        if r["status"] != "replayed":
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    rep = [r for r in results if r["status"] == "replayed"]
    return {"op_events": total, "selected": len(results), "replayed": len(rep),
            "not_replayed": len(results) - len(rep), "bit_exact": sum(1 for r in rep if r["bit_exact"]),
            "creates_error": sum(1 for r in rep if r["creates_error"]), "reasons": reasons}


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
            u = _u_of(tev.outputs[i].dtype, 0.0) if tev.outputs[i].dtype not in _INT_DTYPES else 0.0
            if gok and i in gev.outputs and gev.outputs[i].dtype not in _INT_DTYPES:
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


# ---- command line ----------------------------------------------------------------------------------------------------------

def _write(doc, path):
    text = json.dumps(doc, indent=1, allow_nan=False)
    if path in (None, "-"):
        sys.stdout.write(text + "\n")
    else:
        with open(path, "w") as f:
            f.write(text + "\n")


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="python -m parity.replay", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="replay the op events of one run")
    r.add_argument("run")
    r.add_argument("--event", action="append", default=[])
    r.add_argument("--module", action="append", default=[])
    r.add_argument("--suspects")
    r.add_argument("--emulate", choices=sorted({"bf16", "f16"} | set(_EMULATORS)))
    r.add_argument("--limit", type=int, default=0)
    r.add_argument("--device", default="auto",
                   help="where the recorded-dtype replay runs: auto (the recorded device when present), cpu, cuda:N")
    r.add_argument("--json", default="-")
    r.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    c = sub.add_parser("confirm", help="replay suspects of a comparison in both runs")
    c.add_argument("golden")
    c.add_argument("target")
    c.add_argument("--suspects-json", required=True)
    c.add_argument("--json", default="-")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "run":
            if not os.path.exists(a.run):
                raise ValueError("{}: no such run directory".format(a.run))
            doc = run(a.run, a.event, a.module, a.suspects, a.emulate, a.limit,
                      progress=False if a.no_progress else None, device=a.device)
        else:
            with open(a.suspects_json) as f:
                doc = confirm(a.golden, a.target, json.load(f))
    except (OSError, ValueError, RuntimeError) as e:  # bad input: named, exit 2 (docs/replay.md)
        sys.stderr.write("parity replay: {}\n".format(e))
        return 2
    _write(doc, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
