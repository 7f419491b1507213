"""Op events (op and mix levels): a TorchFunctionMode sees every torch.* / F.* / Tensor method / operator call;
which calls are events, what each reads and writes, and the record of one call with its replay information."""
import threading

import torch

from ._capture_collectives import _in_collective
from ._capture_memory import _drop, _version, _versions
from ._capture_names import GLOBAL_NAME
from ._op_tables import _COLLECTIVES, _INPLACE_DUNDERS
from ._tensors import describe_args, iter_input_tensors, iter_tensors, replay_spec
from .fingerprint import autocast_state


# Calls that are bookkeeping, not computation: never op events.
_SKIP_OPS = frozenset("""
__get__ __set__ __delete__ __repr__ __format__ __hash__ __bool__ __len__ __iter__ __index__ __int__
__float__ __contains__ __reduce_ex__ __deepcopy__ __setstate__ __getstate__ __array__ __dir__
backward register_hook retain_grad requires_grad_ size dim numel stride data_ptr is_contiguous
element_size item tolist storage_offset is_floating_point is_complex untyped_storage storage
_has_compatible_shallow_copy_type __torch_function__ has_names nelement ndimension get_device
empty empty_like empty_strided new_empty new_empty_strided
""".split())


# Ops whose outputs are uninitialised memory (empty*) or profiler handles (_record_function_*) are not
# values: recording them would make identical reruns differ.
_SKIP_PREFIXES = ("_record_function", "_profiler")


# Factories of uninitialised memory. Their outputs are not events (above); the capture remembers their storage
# (Capture._uninitialised) so that an op writing into it does not record the garbage it overwrites as an input:
# Mixtral fills a `new_empty` buffer with `__setitem__`, and its old contents (8e18 in an int64 buffer) made
# identical runs differ.
_UNINITIALISED_FACTORIES = frozenset("empty empty_like empty_strided new_empty new_empty_strided".split())


# Conversions that return their input itself when it already has the asked dtype, device or layout
# (`x.to(torch.float32)` of an fp32 tensor): in such a run the call computes nothing and its output's gradient
# is the whole gradient of the input, in a run where it converts it is the gradient of that branch only. The
# two records would be different quantities under one name, so these calls record no backward event in any
# run; their forward records stay (docs/capture.md "Aliases").
_CONVERSIONS = frozenset("to type type_as float double half bfloat16 contiguous cpu cuda".split())


# Calls that make an alias of a tensor's memory whose writes do not move the tensor's version counter:
# a numpy array, a DLPack capsule, a raw address, a storage object, shared memory, another tensor
# (`set_`; `.data` is the getter / setter of the property "data", checked by _is_data_property). The
# mode cannot see every write through such an alias (torch 1.13 does not dispatch `x.data[...] = v`
# to it, numpy writes never reach torch), so statistics of that storage are never reused afterwards
# (docs/capture.md "When statistics are reused"). _FOREIGN_FACTORIES return a tensor over memory
# that something outside torch can write.
_ESCAPE_OPS = frozenset("""
numpy __array__ __dlpack__ data_ptr untyped_storage storage _storage share_memory_ set_
""".split())

_FOREIGN_FACTORIES = frozenset("from_numpy frombuffer from_dlpack from_file as_tensor asarray".split())


def _written_tensors(name, args, kwargs):
    """What an in-place torch call writes: its receiver (a name ending in "_", `__iadd__`-like operators,
    `__setitem__`, `inplace=True`) and its `out=` tensors. None when it writes nothing."""
    w = None
    if (name[-1:] == "_" and name[-2:] != "__") or name in _INPLACE_DUNDERS or kwargs.get("inplace") is True:
        if args:
            w = [args[0]]
        else:  # torch.nn.init.normal_(tensor=...) passes its receiver by keyword
            w = [v for v in kwargs.values() if isinstance(v, (torch.Tensor, list, tuple))][:1]
    out = kwargs.get("out")
    if out is not None:
        w = (w or []) + [out]
    return w


# torch.compile (dynamo) must not trace the capture's own bookkeeping: it would compile the recording code,
# recompile it for every tensor shape and type, and its side effects (the writer, the hook lists) are not
# graph operations. Functions marked _eager run eagerly at a graph break, on the real tensors.
_eager = getattr(getattr(torch, "compiler", None), "disable", None) or (lambda f: f)


def _op_name(func):
    name = getattr(func, "__name__", None)
    if name is None:
        name = type(func).__name__
    return name


class _CaptureMode(torch.overrides.TorchFunctionMode):
    """A capture's view of every torch call on its thread (op level records them, module level watches)."""

    def __init__(self, cap):
        super().__init__()
        self.cap = cap

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.cap._busy:  # the capture's own torch calls
            return func(*args, **kwargs)
        name = _op_name(func)
        # Aliases that escape torch's version counters (`.data`, `set_`, `numpy()`, ...), noted before the
        # call (set_ / `.data =` receivers take the source's memory) and in every step: one made in a step
        # not recorded may be written in one that is.
        if name in _ESCAPE_OPS or ((name == "__get__" or name == "__set__") and _is_data_property(func)):
            self.cap._wrote(args, escape=True)
        return self._call(func, name, args, kwargs)


class _OpMode(_CaptureMode):
    def _call(self, func, name, args, kwargs):
        cap = self.cap
        if not cap._recording:
            out = func(*args, **kwargs)
            if name in _FOREIGN_FACTORIES:
                cap._wrote(out, escape=True)
            return out
        if name in _UNINITIALISED_FACTORIES:
            out = func(*args, **kwargs)
            cap._note_uninitialised(out)
            return out
        if name in _SKIP_OPS or name.startswith(_SKIP_PREFIXES):
            return func(*args, **kwargs)
        if name in _COLLECTIVES and (cap._watch_collectives or getattr(_in_collective, "depth", 0)):
            return func(*args, **kwargs)  # torch 2.x dispatches collectives here too: the wrapper records them
        return cap._op_event(func, name, args, kwargs)


class _WatchMode(_CaptureMode):
    """Module level's watcher: records nothing, but sees every torch call of the capture thread so that
    statistics can be reused across module events under op level's rules (docs/capture.md "When statistics
    are reused"): aliases that escape torch's version counters (`.data`, `numpy()`, `data_ptr()`, ...) and
    in-place writes through any alias invalidate cached statistics of their storage."""

    def _call(self, func, name, args, kwargs):
        cap = self.cap
        out = func(*args, **kwargs)
        if name in _FOREIGN_FACTORIES:
            cap._wrote(out, escape=True)
        elif cap._known:
            written = _written_tensors(name, args, kwargs)
            if written:
                cap._wrote(written)
            elif name in _COLLECTIVES:  # dispatched here by torch 2.x: whatever it was handed may be written
                cap._wrote((args, kwargs))
        return out


def _is_data_property(func):
    """func is Tensor.data.__get__ / __set__ (the mode sees property access as the descriptor's method)."""
    return getattr(getattr(func, "__self__", None), "__name__", None) == "data"


def _arguments_of_module_attributes(args, module):
    """{position: attribute} for each positional float argument of an op that equals exactly one float
    attribute of the module the op runs in: HF's RMSNorm adds `self.variance_epsilon` as a bare float, so the
    record of that `add` can say its argument 1 is the module's eps (docs/dump-format.md "names")."""
    # Most op calls pass no bare float: skip reading the module's attributes for them (this runs per op).
    if module is None or not any(type(a) is float for a in args):
        return {}
    by_value = {}
    for attr, value in vars(module).items():
        if type(value) is float and not attr.startswith("_"):
            by_value.setdefault(value, []).append(attr)
    named = {}
    for i, a in enumerate(args):
        if type(a) is float and len(by_value.get(a, ())) == 1:
            named[str(i)] = by_value[a][0]
    return named


class OpEvents:
    """Capture's op events: _OpMode hands each call to _op_event."""

    def _next_op_call(self, name):
        """The name stem `<parent>/<name>#k` of the next call of op `name` in the current parent call, its
        module path and k (docs/dump-format.md "Names")."""
        parent = self._stack[-1] if self._stack else GLOBAL_NAME
        key = (parent, name)
        k = self._op_calls.get(key, 0)
        self._op_calls[key] = k + 1
        return "{}/{}#{}".format(parent, name, k), parent.split("#")[0], k

    @_eager
    def _op_event(self, func, name, args, kwargs):
        if threading.get_ident() != self._thread:
            return func(*args, **kwargs)
        base, module, k = self._next_op_call(name)
        self._busy = True
        try:
            written = _written_tensors(name, args, kwargs)
            unread = self._not_inputs(args, kwargs)
            # Inputs are recorded before the call: an in-place op would change them.
            ins = self._record_inputs(args, kwargs, base, module, name, k, skip=unread)
            versions = _versions(t for _, t in ins)  # out= destinations are not among them: they are written
        finally:
            self._busy = False
        out = func(*args, **kwargs)
        self._busy = True
        try:
            if written:
                self._wrote(written)
                if self._uninit:
                    self._count_written(name, args, kwargs, written)
            if name in _FOREIGN_FACTORIES:
                self._wrote(out, escape=True)
            result = out
            if out is None and name == "__setitem__" and args and isinstance(args[0], torch.Tensor):
                result = args[0]  # item assignment changes its receiver in place: that is the output
            described = describe_args(args, kwargs)
            named = _arguments_of_module_attributes(args, self._modules[-1] if self._modules else None)
            if named:
                described["names"] = named
            spec = described["replay"] = replay_spec(func, name, args, kwargs, _written_tensors)
            regions = autocast_state()
            if regions != "off" and "fn" in spec:
                spec["autocast"] = regions  # replay re-enters it (docs/dump-format.md "Replay information")
            garbage = [t for _, t in iter_tensors(result) if self._uninitialised(t)]
            if garbage:
                # A view of fresh memory, or a receiver written only in part: no values yet. What is written
                # is recorded (as inputs); the memory where it is read once writes have covered it.
                spec["unreplayable"] = "reads or writes part of memory from an empty* factory, which holds no values"
                result = _drop(result, garbage)
            outs = self._record_all(result, base, module, name, "forward", "output", k, args=described)
            self._hook_grads(self._computed(outs, versions, name), base, module, name, "input", k)
            del ins
        finally:
            self._busy = False
        return out

    def _not_inputs(self, args, kwargs):
        """ids of the tensors a call is handed but does not read as values: `out=` destinations (written, not
        read) and memory from an `empty*` factory that writes have not covered yet — the receiver of the
        write that fills it, or a view made to write through (docs/capture.md "Uninitialised memory")."""
        skip = {id(t) for _, t in iter_tensors(kwargs.get("out"))}
        if self._uninit:
            skip.update(id(t) for _, _, t in iter_input_tensors(args, kwargs) if self._uninitialised(t))
        return skip

    @staticmethod
    def _computed(outs, versions, name):
        """The outputs whose gradient is this call's own: not an input returned unchanged (an alias: the same
        tensor object, not written by the call — its gradient is the input's whole gradient, whoever else reads
        it), and none of a conversion's (_CONVERSIONS: an alias in some runs, a new tensor in others)."""
        if name in _CONVERSIONS:
            return []
        return [(i, t) for i, t in outs if id(t) not in versions or versions[id(t)] != _version(t)]
