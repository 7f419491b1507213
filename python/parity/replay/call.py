"""Calling a recorded op again: its typed arguments decoded (docs/dump-format.md "Replay information"), dtype
and device arguments rewritten, the recorded autocast regions entered; the exact float64 reference (a)."""
from .._op_tables import _INPLACE_DUNDERS
from ._lazy import _torch
from .ops import _CASTS, _NotReplayable, _QUANTISERS, resolve


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

    from .._tensors import iter_tensors

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
