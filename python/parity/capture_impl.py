"""parity.capture: record a PyTorch model's events into a crash-safe dump (docs/capture.md).

Event names (the contract the comparison pairs on, docs/dump-format.md "Names"):

    module event   <module>[#k]/<direction>/<role>/<index>       layers.0.attn/forward/output/0
    op event       <parent>/<op>#k/<direction>/<role>/<index>    layers.0.attn/softmax#0/forward/output/0
    parameter      <module>/forward/parameter/<param name>        layers.0.attn.q.../forward/parameter/weight
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
Everything is off outside the recorded steps except the step counter and cap.log().
"""
import atexit
import json
import re
import threading
import weakref

import torch

from ._core import core
from ._stats import device_stats
from ._tensors import DTYPE_NAMES, describe_args, iter_tensors
from .fingerprint import environment_fingerprint

ROOT_NAME = "<root>"
GLOBAL_NAME = "<global>"  # parent of ops called outside the model (data, loss, optimizer)
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

_open_captures = weakref.WeakSet()
_STAT_KEYS = ("min", "max", "mean", "l2norm", "absmax", "nan", "inf", "zero", "subnormal")


def _stop_all_at_exit():
    for cap in list(_open_captures):
        try:
            cap.stop()
        except Exception:
            pass


atexit.register(_stop_all_at_exit)


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
        if not cap._recording or cap._busy:
            return func(*args, **kwargs)
        name = _op_name(func)
        if name in _SKIP_OPS or name.startswith(_SKIP_PREFIXES):
            return func(*args, **kwargs)
        return cap._op_event(func, name, args, kwargs)


class Capture:
    """with parity.capture(model, run_dir, level=..., mode=..., steps=[0], ...) as cap: ..."""

    def __init__(self, model, run_dir, level="module", mode="statistics", steps=(0,), include=None,
                 exclude=None, direction="both", overwrite=False, rank=None, params=True,
                 queue_bytes=256 << 20, shard_bytes=1 << 30, fingerprint_extra=None):
        if level not in LEVELS:
            raise ValueError("capture: level {!r} is not one of {}".format(level, ", ".join(LEVELS)))
        if mode not in MODES:
            raise ValueError("capture: mode {!r} is not one of {}".format(mode, ", ".join(MODES)))
        if direction not in DIRECTIONS:
            raise ValueError("capture: direction {!r} is not one of {}".format(direction, ", ".join(DIRECTIONS)))
        if not isinstance(model, torch.nn.Module):
            raise TypeError("capture: model must be a torch.nn.Module, got {}".format(type(model).__name__))
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
        self.step = 0
        self.skipped = 0          # tensors that could not be recorded (complex, sparse, ...)
        self.writer = None
        self._started = False
        self._recording = False   # inside a recorded step
        self._busy = False        # our own torch calls must not become op events
        self._thread = None
        self._stack = []
        self._wrapped = []
        self._mode_obj = None
        self._lock = threading.RLock()
        self._handles = []
        # Route host tensors through the accelerator pipeline (torch reductions, non-blocking copy,
        # resolution at the end of the step): lets the tests exercise that path on a CPU-only machine.
        self._device_path_on_host = False
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
        self.writer = core.DumpWriter(self.run_dir, rank=self.rank, overwrite=self.overwrite,
                                      queue_bytes=self.queue_bytes, shard_bytes=self.shard_bytes)
        fp = environment_fingerprint(self.model, self.fingerprint_extra)
        fp["capture"] = {"level": self.level, "mode": self.mode, "direction": self.direction,
                         "steps": None if self.steps is None else sorted(self.steps), "rank": self.rank,
                         "include": self.include.pattern if self.include else None,
                         "exclude": self.exclude.pattern if self.exclude else None}
        self.writer.write_fingerprint(json.dumps(fp, default=str))
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
            name = path if path else ROOT_NAME
            had_own = "forward" in mod.__dict__
            orig = mod.forward
            mod.forward = self._make_forward(mod, name, orig)
            self._wrapped.append((mod, had_own, orig))
        if self.level in ("op", "mix"):
            self._mode_obj = _OpMode(self)
            self._mode_obj.__enter__()

    def _uninstall(self):
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
        self._pending = []
        # id(tensor) -> (weakref, _version, stats list, crc): the same tensor object recorded under
        # several names (a module's output is the next one's input) is summarised once. The weakref and
        # the version counter make a stale entry impossible: a freed tensor's id may be reused, an
        # in-place op bumps _version.
        self._known = {}

    def _remove_handles(self):
        for h in getattr(self, "_handles", []):
            try:
                h.remove()
            except Exception:
                pass
        self._handles = []

    def next_step(self):
        """End the current step: pending device statistics are written, per-step counters reset."""
        self._check_started()
        self._resolve_pending()
        self._remove_handles()
        self.step += 1
        self._reset_step_state()
        self._recording = self._step_recorded(self.step)

    def log(self, **scalars):
        """Scalars of the current step (loss, grad_norm, lr, ...), every step whatever `steps` says.
        Tensors are converted with float(); non-finite values are written as strings "nan", "inf"."""
        self._check_started()
        values = {}
        for k, v in scalars.items():
            if isinstance(v, torch.Tensor):
                v = v.detach().float().item() if v.numel() == 1 else v.detach().double().tolist()
            if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
                v = repr(v)
            values[k] = v
        self.writer.append_scalars(self.step, json.dumps(values, default=str))

    def log_logits(self, *args, **kwargs):
        """Record logits for the eval layer (perplexity / KL / top-1); see parity.logits.log_logits."""
        from .logits import log_logits

        return log_logits(self, *args, **kwargs)

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
            with self._lock:
                order = self._order
                self._order += 1
            with torch.no_grad():
                return self._record_tensor(name, t, module, op, direction, role, index, call, order, args, extra)
        finally:
            self._busy = busy

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
            if known is not None and known[0]() is t and known[1] == t._version:
                stats, crc = known[2], known[3]
            if stats is not None and not want_data and (crc is not None or not want_crc):
                ptr = 0  # nothing to read: statistics (and checksum) are known
            else:
                h = x if x.is_contiguous() else x.contiguous()
                ptr = h.data_ptr()
            res = self.writer.append_event(name, module, op, direction, role, index, call, self.step, order, dtype,
                                           shape, stride, device, ptr, numel, stats, want_crc, want_data,
                                           args_json, extra_json, crc)
            if ptr:
                try:
                    ref = weakref.ref(t)
                except TypeError:
                    return res
                self._known[id(t)] = (ref, t._version, [res[k] for k in _STAT_KEYS], res.get("crc32c"))
            return res
        # Accelerator: statistics on the device, 72 bytes copied back asynchronously.
        st = device_stats(x)
        if want_crc or want_data:
            h = x.contiguous().cpu()  # the bytes themselves must come to the host (synchronous copy)
            return self.writer.append_event(name, module, op, direction, role, index, call, self.step, order, dtype,
                                            shape, stride, device, h.data_ptr(), numel, st.cpu().tolist(), want_crc,
                                            want_data, args_json, extra_json)
        host = torch.empty(9, dtype=torch.float64, pin_memory=x.is_cuda)
        host.copy_(st, non_blocking=True)
        ev = None
        if x.is_cuda:
            ev = torch.cuda.Event()
            ev.record()
        self._pending.append((ev, host, (name, module, op, direction, role, index, call, self.step, order, dtype,
                                         shape, stride, device, 0, numel), args_json, extra_json))
        if len(self._pending) >= 1024:
            self._resolve_pending()
        return None

    def _resolve_pending(self):
        pending, self._pending = self._pending, []
        for ev, host, meta, args_json, extra_json in pending:
            if ev is not None:
                ev.synchronize()
            self.writer.append_event(*meta, host.tolist(), False, False, args_json, extra_json)

    def _record_all(self, obj, base, module, op, direction, role, call, args=None):
        """Record every tensor in obj as <base>/<direction>/<role>/<i>; returns [(i, tensor)]."""
        out = []
        for i, (path, t) in enumerate(iter_tensors(obj)):
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
                    cap._record(name, grad, module, op, "backward", role, i, call)
                return None

            self._handles.append(t.register_hook(hook))

    def _record_params(self, mod, name):
        if not self.params or name in self._params_done:
            return
        self._params_done.add(name)
        for i, (pname, p) in enumerate(mod.named_parameters(recurse=False)):
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
                        cap._record(gname, grad, name, cls, "backward", "grad", i, 0, extra={"param": pname})
                    return None

                self._handles.append(p.register_hook(hook))

    def _make_forward(self, mod, name, orig):
        cap_ref = weakref.ref(self)
        cls = type(mod).__name__

        def forward(*args, **kwargs):
            cap = cap_ref()
            if cap is None or not cap._started or threading.get_ident() != cap._thread:
                return orig(*args, **kwargs)
            k = cap._module_calls.get(name, 0)
            cap._module_calls[name] = k + 1
            ev = name if k == 0 else "{}#{}".format(name, k)
            record = cap._recording and cap.level in ("module", "mix")
            ins = []
            if record:
                busy = cap._busy
                cap._busy = True
                try:
                    cap._record_params(mod, name)
                    ins = cap._record_all((args, kwargs) if kwargs else args, ev, name, cls, "forward", "input", k)
                finally:
                    cap._busy = busy
            cap._stack.append(ev)
            try:
                out = orig(*args, **kwargs)
            finally:
                cap._stack.pop()
            if record:
                busy = cap._busy
                cap._busy = True
                try:
                    outs = cap._record_all(out, ev, name, cls, "forward", "output", k)
                    cap._hook_grads(outs, ev, name, cls, "input", k)
                    cap._hook_grads(ins, ev, name, cls, "output", k)
                finally:
                    cap._busy = busy
            return out

        forward.__wrapped__ = orig
        return forward

    def _op_event(self, func, name, args, kwargs):
        if threading.get_ident() != self._thread:
            return func(*args, **kwargs)
        parent = self._stack[-1] if self._stack else GLOBAL_NAME
        key = (parent, name)
        k = self._op_calls.get(key, 0)
        self._op_calls[key] = k + 1
        base = "{}/{}#{}".format(parent, name, k)
        module = parent.split("#")[0]
        self._busy = True
        try:
            # Inputs are recorded before the call: an in-place op would change them.
            ins = self._record_all((args, kwargs) if kwargs else args, base, module, name, "forward", "input", k)
        finally:
            self._busy = False
        out = func(*args, **kwargs)
        self._busy = True
        try:
            result = out
            if out is None and name == "__setitem__" and args and isinstance(args[0], torch.Tensor):
                result = args[0]  # item assignment changes its receiver in place: that is the output
            outs = self._record_all(result, base, module, name, "forward", "output", k,
                                    args=describe_args(args, kwargs))
            self._hook_grads(outs, base, module, name, "input", k)
            del ins
        finally:
            self._busy = False
        return out
