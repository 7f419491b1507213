"""Finding the tensors inside what modules and ops take and return, and describing them.

Containers are walked depth-first in a stable order: tuples/lists by position, dicts by insertion
order, dataclasses by field order, ModelOutput-like objects (anything with `to_tuple()`) by their
tuple. Each tensor gets its flat position (the record's `index`) and a path such as `[1]['logits']`
(stored under the record's "extra").
"""
import dataclasses

import torch

# parity dtype names (include/parity/dtype.h) of the torch dtypes capture records.
DTYPE_NAMES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8",
    torch.bool: "bool",
}
for _name, _code in (("float8_e4m3fn", "f8_e4m3"), ("float8_e5m2", "f8_e5m2")):
    if hasattr(torch, _name):
        DTYPE_NAMES[getattr(torch, _name)] = _code

_MAX_DEPTH = 8


def iter_tensors(obj, path="", depth=0):
    """Yield (path, tensor) for every tensor in `obj`, depth-first."""
    if isinstance(obj, torch.Tensor):
        yield path, obj
        return
    if depth >= _MAX_DEPTH or obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return
    if isinstance(obj, (tuple, list)):
        for i, x in enumerate(obj):
            yield from iter_tensors(x, "{}[{}]".format(path, i), depth + 1)
    elif isinstance(obj, dict):
        for k, x in obj.items():
            yield from iter_tensors(x, "{}[{!r}]".format(path, k), depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from iter_tensors(getattr(obj, f.name, None), "{}.{}".format(path, f.name), depth + 1)
    elif hasattr(obj, "to_tuple") and callable(obj.to_tuple):
        try:
            items = obj.to_tuple()
        except Exception:  # an object we do not understand is simply not a container
            return
        yield from iter_tensors(items, path, depth + 1)


def iter_input_tensors(args, kwargs):
    """Yield (index, path, tensor) for the tensors of a call's arguments: positional, then keyword, each
    flattened like iter_tensors. An argument passed as None keeps one index, so a call that passes a
    tensor where another implementation passes None (Hugging Face's eager attention gets a mask,
    its sdpa attention `attention_mask=None`) does not shift the index of every later input."""
    items = [("[0][{}]".format(i) if kwargs else "[{}]".format(i), v) for i, v in enumerate(args)]
    items += [("[1][{!r}]".format(k), v) for k, v in kwargs.items()]
    index = 0
    for path, v in items:
        if v is None:
            index += 1
            continue
        for p, t in iter_tensors(v, path, 1):
            yield index, p, t
            index += 1


def has_tensor(obj):
    for _ in iter_tensors(obj):
        return True
    return False


def describe_args(args, kwargs):
    """Non-tensor arguments of an op as JSON-able values; tensors become "<tensor>" placeholders."""

    def val(x, depth=0):
        if isinstance(x, torch.Tensor):
            return "<tensor {} {}>".format(DTYPE_NAMES.get(x.dtype, str(x.dtype)), list(x.shape))
        if x is None or isinstance(x, (bool, int, str)):
            return x
        if isinstance(x, float):
            return x if x == x and x not in (float("inf"), float("-inf")) else repr(x)
        if isinstance(x, (tuple, list)) and depth < 3:
            return [val(y, depth + 1) for y in x[:64]]
        if isinstance(x, dict) and depth < 3:
            return {str(k): val(v, depth + 1) for k, v in list(x.items())[:64]}
        if isinstance(x, (torch.dtype, torch.device, torch.Size, torch.memory_format, torch.layout)):
            return str(x)
        return "<{}>".format(type(x).__name__)

    return {"args": [val(a) for a in args], "kwargs": {k: val(v) for k, v in kwargs.items()}}


# ---- replay specification (docs/dump-format.md "Replay", docs/replay.md) -----------------------------------
# Version of the typed argument encoding below; a reader refuses a version it does not know.
REPLAY_SPEC_VERSION = 1
_QUALNAME_CACHE = {}


def _namespaces():
    import torch.nn.functional as F

    spaces = [("torch.Tensor", torch.Tensor), ("torch", torch), ("torch.nn.functional", F)]
    for sub in ("linalg", "special", "fft", "nn.init"):
        mod = torch
        for part in sub.split("."):
            mod = getattr(mod, part, None)
        if mod is not None:
            spaces.append(("torch." + sub, mod))
    return spaces


def callable_qualname(func, name):
    """The importable name of a torch callable (`torch.Tensor.softmax`, `torch.nn.functional.layer_norm`,
    `torch.matmul`): the first public namespace whose attribute `name` *is* func, so the engine gets back
    exactly the callable that ran. None when none holds it (a local function, a custom op)."""
    try:
        return _QUALNAME_CACHE[func]
    except (KeyError, TypeError):
        pass
    found = None
    for prefix, space in _namespaces():
        if getattr(space, name, None) is func:
            found = prefix + "." + name
            break
    try:
        _QUALNAME_CACHE[func] = found
    except TypeError:  # unhashable callables are simply looked up each time
        pass
    return found


class _Unencodable(Exception):
    pass


def _encode(x, counter, depth=0):
    """One argument in the typed form {"t": TYPE, "v": VALUE}; tensors as {"t": "tensor", "v": i}, i their
    position in the flattened inputs of the event (iter_tensors order, the input record's index; a tensor
    passed again refers to its first position)."""
    if isinstance(x, torch.Tensor):
        counter[0] += 1
        # The same tensor passed twice refers to its first record: ops choose their path by identity
        # (self-attention's `query is key` packs the in-projection into one matmul).
        first = counter[1].setdefault(id(x), counter[0] - 1)
        return {"t": "tensor", "v": first}
    if x is None:
        return {"t": "none"}
    if isinstance(x, bool):
        return {"t": "bool", "v": x}
    if isinstance(x, int):
        return {"t": "int", "v": x}
    if isinstance(x, float):
        v = x if x == x and x not in (float("inf"), float("-inf")) else repr(x)  # "nan", "inf", "-inf"
        return {"t": "float", "v": v}
    if isinstance(x, str):
        return {"t": "str", "v": x}
    if isinstance(x, torch.dtype):
        return {"t": "dtype", "v": str(x).replace("torch.", "")}
    if isinstance(x, torch.Size):
        return {"t": "size", "v": [int(d) for d in x]}
    if isinstance(x, torch.device):
        return {"t": "device", "v": str(x)}
    if isinstance(x, torch.memory_format):
        return {"t": "memory_format", "v": str(x).replace("torch.", "")}
    if isinstance(x, torch.layout):
        return {"t": "layout", "v": str(x).replace("torch.", "")}
    if x is Ellipsis:
        return {"t": "ellipsis"}
    if isinstance(x, slice):
        if any(isinstance(y, torch.Tensor) for y in (x.start, x.stop, x.step)):
            raise _Unencodable("a slice of tensors")  # iter_tensors does not look inside slices
        return {"t": "slice", "v": [_encode(x.start, counter, depth + 1), _encode(x.stop, counter, depth + 1),
                                    _encode(x.step, counter, depth + 1)]}
    if isinstance(x, (list, tuple)) and depth < 6:
        return {"t": "list" if isinstance(x, list) else "tuple", "v": [_encode(y, counter, depth + 1) for y in x]}
    if isinstance(x, dict) and depth < 6 and all(isinstance(k, str) for k in x):
        return {"t": "dict", "v": {k: _encode(v, counter, depth + 1) for k, v in x.items()}}
    raise _Unencodable("argument of type {}".format(type(x).__name__))


def _is_view_write(name, args, kwargs, written_fn):
    written = written_fn(name, args, kwargs) or []
    return any(isinstance(t, torch.Tensor) and t._base is not None for t in written)


def replay_spec(func, name, args, kwargs, written_fn):
    """What `parity replay` needs to call the op again: the callable's importable name and every argument
    typed; or the reason it cannot be called again ("unreplayable"). Tensor arguments refer to the
    event's input records by index, so nothing is stored twice."""
    spec = {"v": REPLAY_SPEC_VERSION}
    fn = callable_qualname(func, name)
    if fn is None:
        spec["unreplayable"] = "callable {!r} has no importable torch name (a local function, a custom op)".format(
            getattr(func, "__qualname__", name))
        return spec
    spec["fn"] = fn
    counter = [0, {}]  # tensors seen, first index of each tensor object

    def argument(a):
        if a is None:  # iter_input_tensors gives an argument passed as None an index of its own
            counter[0] += 1
            return {"t": "none"}
        return _encode(a, counter)

    try:
        spec["args"] = [argument(a) for a in args]
        spec["kwargs"] = {k: argument(v) for k, v in kwargs.items()}
    except _Unencodable as e:
        spec.pop("args", None)
        spec["unreplayable"] = str(e) + " cannot be recorded"
        return spec
    if _is_view_write(name, args, kwargs, written_fn):
        spec["unreplayable"] = "in-place op on a view: it writes the tensor the view belongs to, which the dump does not hold"
    # Inputs autograd was tracking: some kernels take another path when it does (a strided 3-d
    # `linear` inside multi_head_attention_forward differs by ~1 ulp), so replay tracks them too.
    if torch.is_grad_enabled():
        tracked = [i for i, _, t in iter_input_tensors(args, kwargs) if t.requires_grad]
        if tracked:
            spec["requires_grad"] = tracked
    return spec
