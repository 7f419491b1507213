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

Capture (here: options, lifecycle, steps, scalars) is assembled from one module per concern:
_capture_modules (module events and gradient hooks), _capture_ops (the op mode and op events),
_capture_collectives, _capture_record (recording one tensor in the capture's mode), _capture_memory (what is
known about tensor memory), _capture_names (event names) and _capture_registry (the open captures).
"""
import json
import re
import threading

import torch

from ._capture_collectives import CollectiveEvents, _install_collective_hooks, _uninstall_collective_hooks
from ._capture_layout import check_layout_argument, parallel_layout
from ._capture_memory import MemoryTracking
from ._capture_modules import ModuleEvents
from ._capture_names import GLOBAL_NAME, ROOT_NAME, _well_formed  # noqa: F401 (GLOBAL_NAME re-exported)
from ._capture_optimizer import OptimizerEvents, innermost_optimizer
from ._capture_ops import OpEvents, _OpMode, _WatchMode
from ._capture_record import Recording
from ._capture_registry import _open_captures
from ._core import core
from ._device_pipeline import DevicePipeline
from ._guarded_writer import CaptureWriteError, GuardedWriter  # noqa: F401 (re-exported)
from .fingerprint import PrecisionTimeline, environment_fingerprint

LEVELS = ("module", "op", "mix")
MODES = ("statistics", "tensor", "checksum")
DIRECTIONS = ("forward", "backward", "both")


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


class Capture(ModuleEvents, OpEvents, CollectiveEvents, OptimizerEvents, Recording, MemoryTracking):
    """with parity.capture(model, run_dir, level=..., mode=..., steps=[0], ...) as cap: ..."""

    def __init__(self, model, run_dir, level="module", mode="statistics", steps=(0,), include=None,
                 exclude=None, direction="both", overwrite=False, rank=None, params=True,
                 queue_bytes=256 << 20, shard_bytes=1 << 30, fingerprint_extra=None, on_error="warn",
                 optimizer=None, optimizer_update=False, layout=None):
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
        # optimizer states (_capture_optimizer.py); a wrong object fails here, before anything is written
        self.optimizer = None if optimizer is None else innermost_optimizer(optimizer)
        self.optimizer_update = bool(optimizer_update)
        # the run's parallel layout when nothing else says it (docs/layout.md "Recorded by the capture")
        self.layout = check_layout_argument(layout)
        self._optimizer_watches = []
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
        # Every level sees every torch call and collective between two records (op and mix levels through the
        # op mode, module level through the watch mode), so statistics may be reused across events
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
        fp["parallel"] = parallel_layout(self.model, self.layout, self.rank, _well_formed)
        self.writer.write_fingerprint(json.dumps(fp, default=str))
        self._fingerprint = fp
        self._precision = PrecisionTimeline()
        self._precision_read = True  # set False by each root call until a submodule reads it (_make_forward)
        self._started = True
        self._thread = threading.get_ident()
        self._install()
        _open_captures.add(self)
        if self.optimizer is not None:
            self.watch_optimizer(self.optimizer)
        self._recording = self._step_recorded(self.step)
        return self

    def stop(self):
        """Remove every hook, write what is pending and close the dump. Idempotent."""
        if not self._started:
            return
        self._started = False
        self._recording = False
        try:
            self._unwatch_optimizers()
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
        # Op and mix levels record through the op mode; module level only watches (_WatchMode), so that a
        # module's input that is the previous module's output is summarised once. Collectives are wrapped at
        # every level: at module level they only invalidate what they write (_collective_before).
        self._mode_obj = _OpMode(self) if self.level in ("op", "mix") else _WatchMode(self)
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
        # seen by the op or watch mode) and by torch.distributed collectives.
        self._known = {}
        self._gen = {}
        # storage key -> weakref of the tensor an `empty*` factory returned: memory holding no values yet
        # (_note_uninitialised). Valid while that tensor lives; a step starts with none.
        self._uninit = {}

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
