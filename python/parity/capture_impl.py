"""parity.capture: record a PyTorch model's events into a crash-safe dump (docs/capture.md).

Event names (the contract the comparison pairs on, docs/dump-format.md "Names"):

    module event   <module>[#k]/<direction>/<role>/<index>       layers.0.attn/forward/output/0
    op event       <parent>/<op>#k/<direction>/<role>/<index>    layers.0.attn/softmax#0/forward/output/0
    collective     <parent>/<name>#k/forward/<role>/<index>      <global>/all_reduce#0/forward/output/0
    parameter      <module>/forward/parameter/<param name>        layers.0.attn.q.../forward/parameter/weight
    buffer         <module>/forward/buffer/<buffer name>          layers.0.bn/forward/buffer/running_mean
    gradient       <module>/backward/grad/<param name>

<module> is the path `model.named_modules()` gives, "<root>" for the model itself; "#k" is appended
from a module's second call within a step on (k = 1, 2, ...), so repeated modules keep distinct,
stable names. Ops are numbered per (parent call, op name) and step. Direction "backward", role
"input" is the gradient arriving at a module's / op's output; role "output" the gradient leaving
through its input (msprobe's convention).

How the hooks work, and why:
- module events: each module's `forward` is wrapped by an instance attribute (restored on stop), so
  keyword tensors are seen on every torch version and nesting is exact; the wrapper keeps the stack
  of active modules that names op events (mix and op levels).
- op events: a TorchFunctionMode sees every torch.* / F.* / Tensor method / operator call.
- backward: tensor hooks on the outputs (and on the inputs) of each event; they do not change the
  graph, so outputs and gradients are bit-identical with and without capture.
- parameters are recorded at the module's first call of a step, gradients by leaf hooks when
  backward produces them.
- collectives (op and mix levels): torch.distributed's collective functions are replaced by wrappers
  (restored on stop) that record them as op events and invalidate cached statistics of what they write.
- statistics of a tensor recorded under several names are reused only while nothing can have changed
  its memory (Capture._reset_step_state, docs/capture.md "When statistics are reused").
Everything is off outside the recorded steps except the step counter and cap.log().
"""
import atexit
import functools
import inspect
import json
import re
import threading
import warnings
import weakref

import torch

from ._core import core
from ._guarded_writer import CaptureWriteError, GuardedWriter  # noqa: F401 (re-exported)
from ._device_pipeline import DevicePipeline
from ._tensors import DTYPE_NAMES, describe_args, has_tensor, iter_input_tensors, iter_tensors, replay_spec
from .fingerprint import PrecisionTimeline, autocast_state, environment_fingerprint

ROOT_NAME = "<root>"
GLOBAL_NAME = "<global>"  # parent of ops called outside the model (data, loss, optimizer)


def _well_formed(name):
    """A module, parameter or buffer name as text the dump can hold: Python names may carry lone surrogates
    ('bad\\udcffname', from a file name decoded with surrogateescape) that UTF-8 cannot encode, and the writer
    would raise into the user's forward (issue 33 §7). Such a name is kept, escaped: 'bad\\\\udcffname'."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")


LEVELS = ("module", "op", "mix")
MODES = ("statistics", "tensor", "checksum")
DIRECTIONS = ("forward", "backward", "both")

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
# Writes that replace every element of their receiver: after one covering the whole storage, the memory holds
# values. Other in-place writes (`__setitem__`, `index_put_`, `scatter_`, `index_add_`, ...) fill a part.
_FULL_WRITES = frozenset("copy_ fill_ zero_ normal_ uniform_ random_ bernoulli_ exponential_ geometric_ "
                         "log_normal_ cauchy_ set_".split())
# Conversions that return their input itself when it already has the asked dtype, device or layout
# (`x.to(torch.float32)` of an fp32 tensor): in such a run the call computes nothing and its output's gradient
# is the whole gradient of the input, in a run where it converts it is the gradient of that branch only. The
# two records would be different quantities under one name, so these calls record no backward event in any
# run; their forward records stay (docs/capture.md "Aliases").
_CONVERSIONS = frozenset("to type type_as float double half bfloat16 contiguous cpu cuda".split())
# Calls that write their receiver (args[0]) in place although their name does not end in "_" (torch 1.13
# reports `a += b` as add_, newer versions may report __iadd__).
_INPLACE_DUNDERS = frozenset("""
__iadd__ __isub__ __imul__ __imatmul__ __itruediv__ __ifloordiv__ __imod__ __ipow__ __ilshift__ __irshift__
__iand__ __ixor__ __ior__ __setitem__
""".split())
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

# torch.distributed calls that write tensors without bumping their version counter: name -> (parameters
# read, parameters written, root parameter). Reads are recorded as the event's inputs before the call,
# writes as its outputs after it; "src": the input is only read on that rank (elsewhere it is
# typically uninitialised memory); "dst": the result is only defined on that rank.
_COLLECTIVES = {
    "all_reduce": (("tensor",), ("tensor",), None),
    "all_reduce_coalesced": (("tensors",), ("tensors",), None),
    "broadcast": (("tensor",), ("tensor",), "src"),
    "reduce": (("tensor",), ("tensor",), "dst"),
    "all_gather": (("tensor",), ("tensor_list",), None),
    "all_gather_coalesced": (("input_tensor_list",), ("output_tensor_lists",), None),
    "all_gather_into_tensor": (("input_tensor",), ("output_tensor",), None),
    "_all_gather_base": (("input_tensor",), ("output_tensor",), None),
    "reduce_scatter": (("input_list",), ("output",), None),
    "reduce_scatter_tensor": (("input",), ("output",), None),
    "_reduce_scatter_base": (("input",), ("output",), None),
    "all_to_all_single": (("input",), ("output",), None),
    "all_to_all": (("input_tensor_list",), ("output_tensor_list",), None),
    "scatter": (("scatter_list",), ("tensor",), None),
    "gather": (("tensor",), ("gather_list",), None),
    "send": (("tensor",), (), None),
    "recv": ((), ("tensor",), None),
    "isend": (("tensor",), (), None),
    "irecv": ((), ("tensor",), None),
    "batch_isend_irecv": ((), (), None),  # tensors inside the P2POp list: _collective_tensors
}
_ASYNC_COLLECTIVES = frozenset(("isend", "irecv", "batch_isend_irecv"))

_open_captures = weakref.WeakSet()
_STAT_KEYS = ("min", "max", "mean", "l2norm", "absmax", "nan", "inf", "zero", "subnormal")


def _stop_all_at_exit():
    for cap in list(_open_captures):
        try:
            cap.stop()
        except Exception:
            pass


atexit.register(_stop_all_at_exit)


def _storage_key(t):
    """Address of the start of t's storage: equal for every tensor that shares t's memory (views,
    `.data`, `detach()`), whatever its own version counter."""
    try:
        return t.data_ptr() - t.storage_offset() * t.element_size()
    except Exception:  # tensor subclasses without storage
        return None


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


# ---- torch.distributed collectives ----------------------------------------------------------------------
# One wrapper per collective, shared by every open capture that watches them (op and mix levels),
# installed at the first such capture's start and removed at the last one's stop.
_dist_lock = threading.Lock()
_dist_users = [0]
_dist_saved = []  # (namespace, name, original, wrapper)
_in_collective = threading.local()  # depth > 0 inside a wrapped collective call


class _EqualsOriginal:
    """A wrapper that compares and hashes equal to the function it wraps: P2POp checks
    `op in [isend, irecv]`, which must keep accepting the function captured before start."""

    def __init__(self, fn, orig):
        self._fn, self.__wrapped__ = fn, orig
        functools.update_wrapper(self, orig)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __eq__(self, other):
        return other is self or other is self.__wrapped__ or other == self.__wrapped__

    def __hash__(self):
        return hash(self.__wrapped__)


def _make_collective_wrapper(name, orig):
    try:
        sig = inspect.signature(orig)
    except (TypeError, ValueError):
        sig = None

    def wrapper(*args, **kwargs):
        caps = [c for c in list(_open_captures) if c._watch_collectives]
        # torch 2.x: a collective may reach another wrapped one (or itself, through its torch-function
        # dispatch): the outermost call is the event.
        if not caps or sig is None or getattr(_in_collective, "depth", 0):
            return orig(*args, **kwargs)
        try:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
        except TypeError:
            return orig(*args, **kwargs)  # let torch report the bad call
        a = bound.arguments
        states = [(c, c._collective_before(name, a)) for c in caps]
        ok, out = False, None
        _in_collective.depth = 1
        try:
            out = orig(*args, **kwargs)
            ok = True
        finally:
            _in_collective.depth = 0
            for c, st in states:
                c._collective_after(name, a, st, ok)
        return out

    if name in ("isend", "irecv"):
        return _EqualsOriginal(wrapper, orig)
    return functools.wraps(orig)(wrapper)


def _install_collective_hooks():
    with _dist_lock:
        _dist_users[0] += 1
        if _dist_users[0] > 1:
            return
        dist = getattr(torch, "distributed", None)
        try:
            if dist is None or not dist.is_available():
                return
        except Exception:
            return
        namespaces = [dist]
        c10d = getattr(dist, "distributed_c10d", None)
        if c10d is not None:
            namespaces.append(c10d)
        for name in _COLLECTIVES:
            orig = getattr(dist, name, None)
            if orig is None or not callable(orig):
                continue
            wrapper = _make_collective_wrapper(name, orig)
            for ns in namespaces:
                if getattr(ns, name, None) is orig:
                    setattr(ns, name, wrapper)
                    _dist_saved.append((ns, name, orig, wrapper))


def _uninstall_collective_hooks():
    with _dist_lock:
        _dist_users[0] = max(0, _dist_users[0] - 1)
        if _dist_users[0]:
            return
        for ns, name, orig, wrapper in reversed(_dist_saved):
            if getattr(ns, name, None) is wrapper:  # someone wrapped it after us: ours stays, inert
                setattr(ns, name, orig)
        del _dist_saved[:]


def _version(t):
    """t's version counter (bumped by every in-place write); None for inference tensors, which have none."""
    try:
        return t._version
    except RuntimeError:
        return None


def _versions(tensors):
    """{id(t): version} of tensors, to tell afterwards which of them a call returned unchanged."""
    return {id(t): _version(t) for t in tensors}


def _drop(obj, tensors):
    """obj without the tensors in `tensors` (by identity): None when obj is one of them, a list otherwise."""
    ids = {id(t) for t in tensors}
    if isinstance(obj, torch.Tensor):
        return None if id(obj) in ids else obj
    return [t for _, t in iter_tensors(obj) if id(t) not in ids]


def _one(objs):
    """A single argument stands for itself (index 0, no path), several for a list."""
    return objs[0] if len(objs) == 1 else objs


def _p2p_tensors(a):
    reads, writes = [], []
    for op in a.get("p2p_op_list") or ():
        t = getattr(op, "tensor", None)
        fn = getattr(getattr(op, "op", None), "__name__", "")
        if isinstance(t, torch.Tensor):
            (writes if "recv" in fn else reads).append(t)
    return reads, writes


# torch.compile (dynamo) must not trace the capture's own bookkeeping: it would compile the recording code,
# recompile it for every tensor shape and type, and its side effects (the writer, the hook lists) are not
# graph operations. Functions marked _eager run eagerly at a graph break, on the real tensors.
_eager = getattr(getattr(torch, "compiler", None), "disable", None) or (lambda f: f)


def _op_name(func):
    name = getattr(func, "__name__", None)
    if name is None:
        name = type(func).__name__
    return name


class _OpMode(torch.overrides.TorchFunctionMode):
    def __init__(self, cap):
        super().__init__()
        self.cap = cap

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        cap = self.cap
        if cap._busy:
            return func(*args, **kwargs)
        name = _op_name(func)
        # Aliases are noted in every step: one made in a step not recorded may be written in one that is.
        if name in _ESCAPE_OPS or ((name == "__get__" or name == "__set__") and _is_data_property(func)):
            cap._wrote(args, escape=True)  # before the call: set_ / `.data =` receivers take the source's memory
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


def _scalar_value(v):
    """A cap.log() value as JSON-ready Python: tensors and numpy values (np.float32, np.int64, 0-d and
    n-d arrays) become numbers or lists, non-finite floats the strings "nan", "inf", "-inf"."""
    if isinstance(v, torch.Tensor):
        v = v.detach().float().item() if v.numel() == 1 else v.detach().double().tolist()
    elif type(v).__module__ == "numpy" and hasattr(v, "tolist"):  # np.generic and np.ndarray
        v = v.tolist()
    if isinstance(v, float):
        return repr(v) if (v != v or v in (float("inf"), float("-inf"))) else v
    if isinstance(v, (list, tuple)):
        return [_scalar_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _scalar_value(x) for k, x in v.items()}
    return v


class Capture:
    """with parity.capture(model, run_dir, level=..., mode=..., steps=[0], ...) as cap: ..."""

    def __init__(self, model, run_dir, level="module", mode="statistics", steps=(0,), include=None,
                 exclude=None, direction="both", overwrite=False, rank=None, params=True,
                 queue_bytes=256 << 20, shard_bytes=1 << 30, fingerprint_extra=None, on_error="warn"):
        if level not in LEVELS:
            raise ValueError("capture: level {!r} is not one of {}".format(level, ", ".join(LEVELS)))
        if mode not in MODES:
            raise ValueError("capture: mode {!r} is not one of {}".format(mode, ", ".join(MODES)))
        if direction not in DIRECTIONS:
            raise ValueError("capture: direction {!r} is not one of {}".format(direction, ", ".join(DIRECTIONS)))
        if not isinstance(model, torch.nn.Module):
            raise TypeError("capture: model must be a torch.nn.Module, got {}".format(type(model).__name__))
        inner = getattr(model, "_orig_mod", None)
        if type(model).__name__ == "OptimizedModule" and isinstance(inner, torch.nn.Module):
            model = inner  # torch.compile's wrapper: events are named after the compiled module's own paths
        self.model = model
        self.run_dir = str(run_dir)
        self.level, self.mode, self.direction = level, mode, direction
        self.steps = None if steps is None else frozenset(int(s) for s in steps)
        self.include = re.compile(include) if include else None
        self.exclude = re.compile(exclude) if exclude else None
        self.overwrite = bool(overwrite)
        self.rank = self._detect_rank() if rank is None else int(rank)
        self.params = bool(params)
        self.queue_bytes, self.shard_bytes = int(queue_bytes), int(shard_bytes)
        self.fingerprint_extra = fingerprint_extra
        self.on_error = on_error
        self.error = None         # the first write failure (on_error="warn": recording stopped there)
        self.step = 0
        self.skipped = 0          # tensors that could not be recorded (complex, sparse, ...)
        self._warned = set()      # kinds of tensors already named in a warning (_warn_once)
        self.writer = None
        self._started = False
        self._recording = False   # inside a recorded step
        self._busy = False        # our own torch calls must not become op events
        self._thread = None
        self._stack = []
        self._modules = []        # the nn.Module of each active module call (innermost last)
        self._frames = []         # per active module call (innermost last): {id(input): version} of its inputs
        self._wrapped = []
        self._mode_obj = None
        # op and mix levels see every torch call and collective between two records, so statistics
        # may be reused across events; module level reuses them only within one burst of records
        # (docs/capture.md "When statistics are reused").
        self._watch_collectives = False
        self._escaped = set()     # storage keys handed to numpy / DLPack / raw pointers / async collectives
        self._lock = threading.RLock()
        self._handles = []
        # Route host tensors through the accelerator pipeline (torch reductions, non-blocking copy,
        # resolution at the end of the step): lets the tests exercise that path on a CPU-only machine.
        self._device_path_on_host = False
        # Accelerator tensors: queued, resolved in order at the end of the step (_device_pipeline.py).
        self._pending = DevicePipeline(self._append_resolved, staging_bytes=self.queue_bytes)
        self._reset_step_state()

    # ---- lifecycle -----------------------------------------------------------------------------------
    @staticmethod
    def _detect_rank():
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
        return 0

    def start(self):
        if self._started:
            raise RuntimeError("capture: already started")
        # Creating the part is not guarded: an output folder that cannot be made is an error at start.
        self.writer = GuardedWriter(core.DumpWriter(self.run_dir, rank=self.rank, overwrite=self.overwrite,
                                                    queue_bytes=self.queue_bytes, shard_bytes=self.shard_bytes),
                                    self.run_dir, self.on_error, self._write_failed)
        fp = environment_fingerprint(self.model, self.fingerprint_extra)
        fp["capture"] = {"level": self.level, "mode": self.mode, "direction": self.direction,
                         "steps": None if self.steps is None else sorted(self.steps), "rank": self.rank,
                         "include": self.include.pattern if self.include else None,
                         "exclude": self.exclude.pattern if self.exclude else None}
        self.writer.write_fingerprint(json.dumps(fp, default=str))
        self._fingerprint = fp
        self._precision = PrecisionTimeline()
        self._precision_read = True  # set False by each root call until a submodule reads it (_make_forward)
        self._started = True
        self._thread = threading.get_ident()
        self._install()
        _open_captures.add(self)
        self._recording = self._step_recorded(self.step)
        return self

    def stop(self):
        """Remove every hook, write what is pending and close the dump. Idempotent."""
        if not self._started:
            return
        self._started = False
        self._recording = False
        try:
            self._uninstall()
            self._resolve_pending()
        finally:
            _open_captures.discard(self)
            w, self.writer = self.writer, None
            if w is not None:
                w.close()

    def _write_failed(self, message):
        """The dump writer failed (disk full, output folder read-only or removed): stop recording."""
        self.error = message
        self._recording = False

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    def __del__(self):
        try:
            self.stop()
        except Exception:
            pass

    def _install(self):
        for path, mod in self.model.named_modules():
            name = _well_formed(path) if path else ROOT_NAME
            had_own = "forward" in mod.__dict__
            orig = mod.forward
            mod.forward = self._make_forward(mod, name, orig)
            self._wrapped.append((mod, had_own, orig))
        if self.level in ("op", "mix"):
            self._mode_obj = _OpMode(self)
            self._mode_obj.__enter__()
            _install_collective_hooks()
            self._watch_collectives = True

    def _uninstall(self):
        if self._watch_collectives:
            self._watch_collectives = False
            _uninstall_collective_hooks()
        if self._mode_obj is not None:
            self._mode_obj.__exit__(None, None, None)
            self._mode_obj = None
        for mod, had_own, orig in reversed(self._wrapped):
            if had_own:
                mod.forward = orig
            else:
                mod.__dict__.pop("forward", None)
        self._wrapped = []
        self._remove_handles()

    # ---- steps and scalars ---------------------------------------------------------------------------
    def _step_recorded(self, step):
        return self.steps is None or step in self.steps

    def _reset_step_state(self):
        self._order = 0
        self._module_calls = {}
        self._op_calls = {}
        self._params_done = set()
        self._grad_calls = {}  # parameter gradient name -> gradients recorded in this step
        # id(tensor) -> (weakref, _version, stats list, crc, storage key, generation): the same tensor
        # object recorded under several names (an op's output is the next one's input) is summarised
        # once. The weakref guards against a freed tensor's id being reused, _version against in-place
        # ops on the tensor and its views; the storage generation (_gen, bumped by _wrote) against
        # writes that bypass _version: through another alias such as `x.data` (in-place torch calls
        # seen by the op mode) and by torch.distributed collectives. Module level has neither watcher:
        # there the cache lives for one burst of records only (_begin_burst).
        self._known = {}
        self._gen = {}
        # storage key -> weakref of the tensor an `empty*` factory returned: memory holding no values yet
        # (_note_uninitialised). Valid while that tensor lives; a step starts with none.
        self._uninit = {}

    def _begin_burst(self):
        """Module level: user code may have run since the last record, and without the op mode nothing
        saw what it wrote (`x.data.copy_`, a collective): statistics are not reused across it."""
        if self._mode_obj is None and self._known:
            self._known.clear()

    def _wrote(self, obj, escape=False):
        """Tensors in obj were (or may be) written without their version counter moving: every cached
        statistic of memory they share is invalid; escape: and never cached again."""
        mine = threading.get_ident() == self._thread
        busy = self._busy
        if mine:
            self._busy = True  # data_ptr() below must not come back through the op mode
        try:
            for _, t in iter_tensors(obj):
                self._known.pop(id(t), None)
                key = _storage_key(t)
                if key is None:
                    continue
                if escape:
                    self._escaped.add(key)
                self._gen[key] = self._gen.get(key, 0) + 1
        finally:
            if mine:
                self._busy = busy

    def _note_uninitialised(self, out):
        """`out` came from an `empty*` factory: its memory holds no values until writes have covered it."""
        if not isinstance(out, torch.Tensor):
            return
        busy, self._busy = self._busy, True  # data_ptr() must not come back through the op mode
        try:
            key = _storage_key(out)
            if key is not None and out.numel() > 0:
                self._uninit[key] = [weakref.ref(out), 0]  # the factory's tensor, elements written so far
        except TypeError:  # not weak-referenceable
            pass
        finally:
            self._busy = busy

    def _uninitialised(self, t):
        """Whether t's memory came from an `empty*` factory whose tensor still lives and that writes have not
        covered yet (_count_written)."""
        if not self._uninit or not isinstance(t, torch.Tensor):
            return False
        entry = self._uninit.get(_storage_key(t))
        return entry is not None and entry[0]() is not None

    def _count_written(self, name, args, kwargs, written):
        """After a call wrote into fresh memory: add the elements it wrote — a whole receiver or `out=`
        destination for `copy_`-like fills and `out=`, the values' element count for indexed writes
        (`__setitem__`, `index_put_`, `scatter_`, ...) — and forget the memory once the writes cover it
        (Mixtral's inverse permutation: one `__setitem__` of n values into n elements; DeepSeek-V3's keys:
        two `copy_` into the halves of a `new_empty` buffer)."""
        destinations = [t for _, t in iter_tensors(kwargs.get("out"))]
        values = [t for _, _, t in iter_input_tensors(args[1:], {k: v for k, v in kwargs.items() if k != "out"})]
        for _, t in iter_tensors(written):
            key = _storage_key(t)
            entry = self._uninit.get(key)
            base = entry[0]() if entry is not None else None
            if base is None:
                continue
            whole = name in _FULL_WRITES or any(t is d for d in destinations)
            entry[1] += t.numel() if whole else (values[-1].numel() if values and values[-1].numel() > 1 else 0)
            if entry[1] >= base.numel():
                del self._uninit[key]

    def _remove_handles(self):
        for h in getattr(self, "_handles", []):
            try:
                h.remove()
            except Exception:
                pass
        self._handles = []

    def _observe_precision(self):
        """Called on entry to the model's forward: autocast and friends are usually entered inside the
        training loop, after the start fingerprint was written. When a setting changed, the fingerprint
        is written again with `precision_by_step` (the reader keeps the last one)."""
        if self._precision.observe(self.step):
            self._fingerprint["precision_by_step"] = self._precision.by_setting
            self.writer.write_fingerprint(json.dumps(self._fingerprint, default=str))

    def next_step(self, step=None):
        """End the current step: pending device statistics are written, per-step counters reset. The next
        step is `step` when given (a training loop's own step number, e.g. a resumed Trainer's), which
        must be greater than the current one; else the current one plus 1."""
        self._check_started()
        if step is not None and int(step) <= self.step:
            raise ValueError("capture: next_step(step={}) does not advance past the current step {}"
                             .format(step, self.step))
        self._resolve_pending()
        self._remove_handles()
        self.step = self.step + 1 if step is None else int(step)
        self._reset_step_state()
        self._recording = self.error is None and self._step_recorded(self.step)

    def log(self, **scalars):
        """Scalars of the current step (loss, grad_norm, lr, ...), every step whatever `steps` says.
        Tensors are converted with float(), numpy scalars and arrays (0-d included) to Python numbers and
        lists; non-finite values, inside lists too, are written as strings "nan", "inf", "-inf"."""
        self._check_started()
        values = {k: _scalar_value(v) for k, v in scalars.items()}
        # allow_nan=False: a bare NaN would make the whole record invalid JSON (every scalar of the step lost)
        self.writer.append_scalars(self.step, json.dumps(values, default=str, allow_nan=False))

    def log_logits(self, *args, **kwargs):
        """Record logits for the eval layer (perplexity / KL / top-1); see parity.logits.log_logits."""
        from .logits import log_logits

        busy, self._busy = self._busy, True  # its conversions and copies are ours, not op events
        try:
            return log_logits(self, *args, **kwargs)
        finally:
            self._busy = busy

    def flush(self):
        self._check_started()
        self._resolve_pending()
        self.writer.flush()

    def _check_started(self):
        if not self._started:
            raise RuntimeError("capture: not started (use `with parity.capture(...)` or call start())")

    # ---- recording -----------------------------------------------------------------------------------
    def _wanted(self, name, direction):
        if self.direction != "both" and direction != self.direction:
            return False
        if self.include is not None and not self.include.search(name):
            return False
        if self.exclude is not None and self.exclude.search(name):
            return False
        return True

    def append_tensor(self, name, tensor, module="", op="", direction="forward", role="output", index=0,
                      call=0, args=None, extra=None):
        """Record one tensor under an explicit event name in the current step (used by log_logits and
        by tools that add their own events). Honours the capture's mode; returns the statistics."""
        self._check_started()
        self._begin_burst()
        return self._record(name, tensor, module, op, direction, role, index, call, args, extra, force=True)

    def _record(self, name, t, module, op, direction, role, index, call, args=None, extra=None, force=False):
        if not force and not self._wanted(name, direction):
            return None
        if t.is_sparse or t.is_quantized or t.dtype not in DTYPE_NAMES or t.layout != torch.strided:
            self.skipped += 1
            return None
        busy = self._busy
        self._busy = True
        try:
            t, extra = self._host_view(name, t, extra)
            if t is None:
                self.skipped += 1
                return None
            with self._lock:
                order = self._order
                self._order += 1
            with torch.no_grad():
                return self._record_tensor(name, t, module, op, direction, role, index, call, order, args, extra)
        finally:
            self._busy = busy

    def _host_view(self, name, t, extra):
        """The tensor whose memory is recorded, and the record's extra. A DTensor (torch.distributed.tensor;
        FSDP2 `fully_shard` parameters are DTensors) is recorded as this rank's local shard — no collective
        runs inside a hook — with its placements, mesh shape and global shape under extra["dtensor"]; a
        tensor subclass without memory of its own is skipped. Each is named once in a warning."""
        if type(t).__name__ == "DTensor" and hasattr(t, "to_local") and hasattr(t, "placements"):
            info = {"placements": [str(p) for p in t.placements], "mesh_shape": list(t.device_mesh.shape),
                    "global_shape": list(t.shape)}
            local = t.to_local()
            self._warn_once("dtensor", "parity.capture: {} is a DTensor (placements {}, mesh {}): the local shard "
                            "of this rank is recorded (shape {}), not the global tensor of shape {}; compare it "
                            "with a run sharded the same way (docs/capture.md \"torch 2.x\")".format(
                                name, info["placements"], info["mesh_shape"], list(local.shape), info["global_shape"]))
            return local, dict(extra or {}, dtensor=info)
        try:
            has_memory = t.numel() == 0 or t.data_ptr() != 0
        except Exception:  # subclasses that refuse data_ptr()
            has_memory = False
        if not has_memory:
            self._warn_once("no-memory", "parity.capture: {} is a {} without memory of its own: not recorded "
                            "(counted in cap.skipped)".format(name, type(t).__name__))
            return None, extra
        return t, extra

    def _warn_once(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    def _record_tensor(self, name, t, module, op, direction, role, index, call, order, args, extra):
        x = t.detach()
        dtype = DTYPE_NAMES[x.dtype]
        shape = list(x.shape)
        stride = list(x.stride())
        device = str(x.device)
        args_json = json.dumps(args) if args is not None else ""
        extra_json = json.dumps(extra) if extra else ""
        want_crc = self.mode == "checksum"
        want_data = self.mode == "tensor"
        numel = x.numel()
        if x.device.type == "cpu" and not self._device_path_on_host:
            known = self._known.get(id(t))
            stats = crc = None
            if (known is not None and known[0]() is t and known[1] == t._version
                    and self._gen.get(known[4], 0) == known[5] and isinstance(known[2], list)):
                stats, crc = known[2], known[3]
            if stats is not None and not want_data and (crc is not None or not want_crc):
                ptr = 0  # nothing to read: statistics (and checksum) are known
            else:
                h = x if x.is_contiguous() else x.contiguous()
                ptr = h.data_ptr()
            res = self.writer.append_event(name, module, op, direction, role, index, call, self.step, order, dtype,
                                           shape, stride, device, ptr, numel, stats, want_crc, want_data,
                                           args_json, extra_json, crc)
            if ptr and res is not None:
                try:
                    ref = weakref.ref(t)
                    version = t._version
                except (TypeError, RuntimeError):  # not weak-referenceable; inference tensors have no version
                    return res
                key = ptr - x.storage_offset() * x.element_size() if h is x else _storage_key(x)
                if key is None or key in self._escaped:
                    return res
                self._known[id(t)] = (ref, version, [res[k] for k in _STAT_KEYS], res.get("crc32c"), key,
                                      self._gen.get(key, 0))
            return res
        # Accelerator: nothing here waits for the device. Statistics are reduced there and copied back in
        # stacked chunks; the bytes of tensor / checksum modes are copied into pinned staging buffers. Both
        # are written, in record order, when the step ends (_device_pipeline.py).
        meta = (name, module, op, direction, role, index, call, self.step, order, dtype, shape, stride, device, numel)
        if want_crc or want_data:
            self._pending.add_data(x, meta, args_json, extra_json, want_crc, want_data)
            return None
        # The same tensor recorded again (an op's output is the next op's input) reuses its partial
        # statistics on the device under the rules of the host cache (docs/capture.md "When statistics
        # are reused"): nothing is read back to decide, the partial tensor is never written.
        known = self._known.get(id(t))
        partial = None
        if (known is not None and known[0]() is t and known[1] == t._version
                and self._gen.get(known[4], 0) == known[5] and isinstance(known[2], tuple)):
            partial = known[2]
        partial = self._pending.add_stats(x, meta, args_json, extra_json, partial)
        if known is None or known[2] is not partial:
            try:
                ref = weakref.ref(t)
                version = t._version
            except (TypeError, RuntimeError):
                return None
            key = _storage_key(x)
            if key is not None and key not in self._escaped:
                self._known[id(t)] = (ref, version, partial, None, key, self._gen.get(key, 0))
        return None

    def _append_resolved(self, *args):
        w = self.writer
        if w is not None:
            w.append_event(*args)

    def _resolve_pending(self):
        busy = self._busy
        self._busy = True  # the stacking and copies below are ours, not op events
        try:
            with torch.no_grad():
                self._pending.resolve()
        finally:
            self._busy = busy

    def _record_all(self, obj, base, module, op, direction, role, call, args=None):
        """Record every tensor in obj as <base>/<direction>/<role>/<i>; returns [(i, tensor)]."""
        return self._record_indexed(((i, p, t) for i, (p, t) in enumerate(iter_tensors(obj))), base, module, op,
                                    direction, role, call, args)

    def _record_inputs(self, args, kwargs, base, module, op, call, skip=()):
        """Record a call's forward inputs; a None argument keeps its index (_tensors.iter_input_tensors).
        Tensors whose id is in `skip` (memory the call only writes) keep their index but are not recorded."""
        items = iter_input_tensors(args, kwargs)
        if skip:
            items = [(i, p, t) for i, p, t in items if id(t) not in skip]
        return self._record_indexed(items, base, module, op, "forward", "input", call)

    def _record_indexed(self, items, base, module, op, direction, role, call, args=None):
        out = []
        for i, path, t in items:
            self._record("{}/{}/{}/{}".format(base, direction, role, i), t, module, op, direction, role, i, call,
                         args if i == 0 else None, {"path": path} if path else None)
            out.append((i, t))
        return out

    def _hook_grads(self, tensors, base, module, op, role, call):
        """Backward: record the gradient of each tensor that requires grad when backward reaches it."""
        if self.direction == "forward":
            return
        for i, t in tensors:
            if not t.requires_grad:
                continue
            name = "{}/backward/{}/{}".format(base, role, i)
            if not self._wanted(name, "backward"):
                continue
            step = self.step
            cap_ref = weakref.ref(self)

            def hook(grad, name=name, i=i, step=step):
                cap = cap_ref()
                if cap is not None and cap._started and cap.step == step and grad is not None:
                    cap._begin_burst()
                    cap._record(name, grad, module, op, "backward", role, i, call)
                return None

            self._handles.append(t.register_hook(hook))

    def _record_params(self, mod, name):
        if not self.params or name in self._params_done:
            return
        self._params_done.add(name)
        for i, (pname, p) in enumerate(mod.named_parameters(recurse=False)):
            pname = _well_formed(pname)
            self._record("{}/forward/parameter/{}".format(name, pname), p, name, type(mod).__name__, "forward",
                         "parameter", i, 0, extra={"param": pname})
            if p.requires_grad and self.direction != "forward":
                gname = "{}/backward/grad/{}".format(name, pname)
                if not self._wanted(gname, "backward"):
                    continue
                step = self.step
                cap_ref = weakref.ref(self)

                def hook(grad, gname=gname, i=i, pname=pname, step=step, cls=type(mod).__name__):
                    cap = cap_ref()
                    if cap is not None and cap._started and cap.step == step and grad is not None:
                        cap._begin_burst()
                        # One gradient per backward pass: under gradient accumulation the second and later
                        # of a step are "#1", "#2", ... so that names stay unique within (rank, step).
                        k = cap._grad_calls.get(gname, 0)
                        cap._grad_calls[gname] = k + 1
                        cap._record(gname if k == 0 else "{}#{}".format(gname, k), grad, name, cls, "backward",
                                    "grad", i, 0, extra={"param": pname})
                    return None

                self._handles.append(p.register_hook(hook))
        # Buffers are model state too (BatchNorm's running statistics, a per-head scale, rotary tables): a
        # buffer that differs is a cause as much as a weight that does, and it is read like one.
        for i, (bname, b) in enumerate(mod.named_buffers(recurse=False)):
            bname = _well_formed(bname)
            if b is not None:
                self._record("{}/forward/buffer/{}".format(name, bname), b, name, type(mod).__name__, "forward",
                             "buffer", i, 0, extra={"buffer": bname})

    def _make_forward(self, mod, name, orig):
        cap_ref = weakref.ref(self)
        cls = type(mod).__name__
        is_root = mod is self.model
        # Where the precision a forward runs under is read (_observe_precision): inside the root's forward,
        # at its first submodule, when it has any. A wrapper around the root's forward can enter autocast
        # after the root's own hook ran (accelerate's mixed precision, as the HF Trainer uses it, wraps
        # `model.forward` in torch.autocast): read at the root, such a step would declare "off".
        observes_at_entry = is_root and next(mod.children(), None) is None

        @_eager
        def enter(args, kwargs):
            """Before the call: names the event, records inputs and parameters; None when not capturing."""
            cap = cap_ref()
            if cap is None or not cap._started or threading.get_ident() != cap._thread:
                return None
            if is_root:
                cap._precision_read = observes_at_entry
                if observes_at_entry:
                    cap._observe_precision()
            elif not cap._precision_read:
                cap._precision_read = True
                cap._observe_precision()
            k = cap._module_calls.get(name, 0)
            cap._module_calls[name] = k + 1
            ev = name if k == 0 else "{}#{}".format(name, k)
            record = cap._recording and cap.level in ("module", "mix")
            ins = []
            if record:
                busy = cap._busy
                cap._busy = True
                try:
                    cap._begin_burst()
                    ins = cap._record_inputs(args, kwargs, ev, name, cls, k)
                    cap._record_params(mod, name)
                    # Parameters of submodules too: some modules use a child's weights without calling the
                    # child (nn.MultiheadAttention reads out_proj.weight inside its functional kernel), and
                    # recording every parameter at its first ancestor's call is still "before use".
                    for sub_path, sub in mod.named_modules():
                        if sub_path:
                            sub_path = _well_formed(sub_path)
                            cap._record_params(sub, sub_path if name == ROOT_NAME else name + "." + sub_path)
                finally:
                    cap._busy = busy
            cap._stack.append(ev)
            cap._modules.append(mod)
            versions = _versions(t for _, t in ins)
            # An input that is also an input of an enclosing call (a decoder layer hands its own input to its
            # norm; Mamba's fp32 `hidden_states.to(fp32)` is that same tensor) has the enclosing input's
            # whole gradient — the residual's too — which the enclosing call records: no record of its own
            # (docs/capture.md "Aliases").
            shared = {i for i in versions if any(i in frame for frame in cap._frames)}
            cap._frames.append(versions)
            return cap, ev, k, record, ins, versions, shared

        @_eager
        def leave(state, out, failed=False):
            """After the call: records outputs and hooks the gradients (unless the call raised)."""
            cap, ev, k, record, ins, versions, shared = state
            cap._stack.pop()
            cap._modules.pop()
            cap._frames.pop()
            if record and not failed:
                busy = cap._busy
                cap._busy = True
                try:
                    cap._begin_burst()
                    outs = cap._record_all(out, ev, name, cls, "forward", "output", k)
                    cap._hook_grads(cap._computed(outs, versions, ""), ev, name, cls, "input", k)
                    cap._hook_grads([(i, t) for i, t in ins if id(t) not in shared], ev, name, cls, "output", k)
                finally:
                    cap._busy = busy
            return out

        def forward(*args, **kwargs):
            state = enter(args, kwargs)
            if state is None:
                return orig(*args, **kwargs)
            try:
                out = orig(*args, **kwargs)
            except BaseException:
                leave(state, None, failed=True)
                raise
            return leave(state, out)

        forward.__wrapped__ = orig
        return forward

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

    # ---- torch.distributed collectives (op and mix levels) ------------------------------------------------
    @staticmethod
    def _collective_tensors(name, a):
        """(read, written, asynchronous) of a collective call whose bound arguments are a."""
        if name == "batch_isend_irecv":
            reads, writes = _p2p_tensors(a)
            return reads, writes, True
        read_params, write_params, _ = _COLLECTIVES[name]
        reads = [a[p] for p in read_params if a.get(p) is not None]
        writes = [a[p] for p in write_params if a.get(p) is not None]
        return _one(reads), _one(writes), name in _ASYNC_COLLECTIVES or a.get("async_op") is True

    @staticmethod
    def _is_root(a, which):
        """Whether this rank is the collective's src / dst (a global rank, or group_src / group_dst)."""
        dist = torch.distributed
        try:
            r = a.get(which)
            if r is None and a.get("group_" + which) is not None:
                return a["group_" + which] == dist.get_rank(a.get("group"))
            return r is None or r == dist.get_rank()
        except Exception:
            return True

    def _collective_before(self, name, a):
        """Records the collective's inputs as an op event `<parent>/<name>#k` (recorded step, capture
        thread); returns what _collective_after needs, or None when the call is not recorded."""
        if not self._started or not self._recording or self._busy or threading.get_ident() != self._thread:
            return None
        base, module, k = self._next_op_call(name)
        reads, writes, asynchronous = self._collective_tensors(name, a)
        if _COLLECTIVES[name][2] == "src" and not self._is_root(a, "src"):
            reads = None  # broadcast: off the source rank the tensor's old contents are not an input
        args = describe_args((), {p: v for p, v in a.items() if not isinstance(v, (torch.Tensor, list, tuple))})
        self._busy = True
        try:
            self._record_all(reads, base, module, name, "forward", "input", k,
                             args=args if asynchronous or not has_tensor(writes) else None)
        finally:
            self._busy = False
        return base, module, k, args

    def _collective_after(self, name, a, state, ok):
        """The collective has written its outputs (or failed): cached statistics of their memory are
        dropped (asynchronous: never cached again, the write lands at wait()); a recorded event gets
        its outputs, except an asynchronous one, whose outputs are not there yet."""
        _, writes, asynchronous = self._collective_tensors(name, a)
        if writes is not None:
            self._wrote(writes, escape=asynchronous)
        if state is None or not ok or asynchronous or not self._started or not has_tensor(writes):
            return
        if _COLLECTIVES[name][2] == "dst" and not self._is_root(a, "dst"):
            return  # reduce: the result is only defined on the destination rank
        base, module, k, args = state
        self._busy = True
        try:
            self._record_all(writes, base, module, name, "forward", "output", k, args=args)
        finally:
            self._busy = False
