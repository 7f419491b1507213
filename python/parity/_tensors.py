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
