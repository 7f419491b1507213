"""Optimizer events (docs/capture.md "Optimizer states"): at the recorded steps, each parameter's optimizer state
after `optimizer.step()`, optionally its update, the learning rate of each parameter group, and the total gradient
norm and clipping factor of each `clip_grad_norm_` call.

Names (docs/dump-format.md "Names"), direction "optimizer", the role the name's third component:

    <module>/optimizer/<state>/<param>       layers.3.mlp.up/optimizer/exp_avg/weight   (every key of optimizer.state[p])
    <module>/optimizer/update/<param>        layers.3.mlp.up/optimizer/update/weight    (update=True: after - before)
    <global>/optimizer/lr/group<g>           the lr the step used, per parameter group
    <global>/optimizer/grad_norm/<k>         the k-th clipping of the step: the total norm it was given
    <global>/optimizer/clip_factor/<k>       min(1, max_norm / (total_norm + 1e-6)), the factor it applied

so that an optimizer step is one event per module (`<module>/optimizer`), as its forward and backward are, and a
state pairs across runs by the parameter's name. What the hooks read and why:
- `register_step_pre_hook` / `register_step_post_hook` of the torch optimizer (the innermost one when wrapped, as
  accelerate's AcceleratedOptimizer wraps it): the pre-hook notes the lr of each group (a scheduler changes it after
  the step) and, with update=True, copies the parameters; the post-hook records the states and the updates.
- the clipping factor: torch.nn.utils computes it from the total norm in `_clip_grads_with_norm_` (public as
  `clip_grads_with_norm_`), which `clip_grad_norm_` looks up in its module at every call; wrapping that one
  function sees every clipping, however `clip_grad_norm_` was imported. The factor is recomputed from the same
  total norm with torch's own expression, so it is the factor applied, bit for bit.
"""
import json
import threading

import torch

from ._capture_names import GLOBAL_NAME, ROOT_NAME, _well_formed
from ._capture_registry import _open_captures
from ._patches import SharedPatches

DIRECTION = "optimizer"
UPDATE_ROLE = "update"

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def innermost_optimizer(opt):
    """The torch optimizer that holds the state: wrappers (accelerate's AcceleratedOptimizer, ...) keep it in
    `.optimizer`."""
    while isinstance(getattr(opt, "optimizer", None), torch.optim.Optimizer):
        opt = opt.optimizer
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError("capture: optimizer must be a torch.optim.Optimizer (or wrap one in .optimizer), got {}"
                        .format(type(opt).__name__))
    return opt


def parameter_names(model):
    """id(parameter) -> (module name, parameter name, index among the module's own parameters, module class),
    as the parameter records name them; a parameter shared by two modules (tied weights) by the first."""
    names = {}
    for path, mod in model.named_modules():
        mname = _well_formed(path) if path else ROOT_NAME
        for i, (pname, p) in enumerate(mod.named_parameters(recurse=False)):
            names.setdefault(id(p), (mname, _well_formed(pname), i, type(mod).__name__))
    return names


def _role_word(key):
    """A state key as the role component of a name: '/' would split the name."""
    return _well_formed(str(key)).replace("/", "_")


def _as_tensor(value):
    """A state value as a recordable tensor: tensors as they are, Python numbers as 0-d float64; else None."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.tensor(float(value), dtype=torch.float64)
    return None


def optimizer_fingerprint(opt):
    """The optimizer's class and the hyperparameters of each group (everything but the parameters), for the
    fingerprint: eps, betas, weight decay or a starting lr that differ are configuration differences."""
    groups = {}
    for gi, g in enumerate(opt.param_groups):
        groups[str(gi)] = {k: (v.tolist() if isinstance(v, torch.Tensor) else v) for k, v in g.items() if k != "params"}
    return {"class": type(opt).__name__, "param_groups": groups}


class OptimizerWatch:
    """One optimizer watched by one capture: its hooks, the parameter names and the copies of one step."""

    def __init__(self, cap, optimizer, update):
        self.cap = cap
        self.opt = innermost_optimizer(optimizer)
        self.update = bool(update)
        self.names = parameter_names(cap.model)
        self.op = type(self.opt).__name__
        self._lrs = None      # per group: the lr of the step in progress (read by the pre-hook)
        self._before = {}     # id(parameter) -> its copy before the step (update=True, recorded steps only)
        self._calls = (-1, 0)  # (capture step, optimizer steps taken in it so far)
        self._handles = [self.opt.register_step_pre_hook(self._pre), self.opt.register_step_post_hook(self._post)]

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []
        self._before = {}

    def _active(self):
        cap = self.cap
        return cap._started and cap._recording and threading.get_ident() == cap._thread

    def _pre(self, opt, args, kwargs):
        if not self._active():
            return
        self._lrs = [g.get("lr") for g in opt.param_groups]
        if not self.update:
            return
        with self.cap._own_calls():
            # One copy of every parameter that will be stepped, in its own dtype: the update's memory cost.
            self._before = {id(p): p.detach().clone() for g in opt.param_groups for p in g["params"]
                            if p.grad is not None}

    def _post(self, opt, args, kwargs):
        if not self._active():
            self._before = {}
            return
        before, self._before = self._before, {}
        cap = self.cap
        # A second optimizer step within one capture step (a loop that steps per micro-batch) is "#1", ...: names
        # stay unique within (rank, step), as the gradients of gradient accumulation do.
        step, k = self._calls
        k = k if step == cap.step else 0
        self._calls = (cap.step, k + 1)
        call = "" if k == 0 else "#{}".format(k)
        with cap._own_calls():
            for gi, lr in enumerate(self._lrs or []):
                lr = _as_tensor(lr)
                if lr is not None:
                    cap._record_optimizer("{}/{}/lr/group{}{}".format(GLOBAL_NAME, DIRECTION, gi, call), lr,
                                          GLOBAL_NAME, self.op, "lr", gi, {"group": gi})
            for gi, g in enumerate(opt.param_groups):
                for j, p in enumerate(g["params"]):
                    self._record_parameter(p, gi, j, before.pop(id(p), None), call)
        self._lrs = None

    def _record_parameter(self, p, gi, j, before, call):
        module, pname, index, _ = self.names.get(id(p), (GLOBAL_NAME, "group{}.{}".format(gi, j), j, ""))
        extra = {"param": pname, "group": gi}
        pname += call
        for key, value in self.opt.state.get(p, {}).items():
            t = _as_tensor(value)
            if t is not None:
                role = _role_word(key)
                self.cap._record_optimizer("{}/{}/{}/{}".format(module, DIRECTION, role, pname), t, module, self.op,
                                           role, index, dict(extra, state=str(key)))
        if before is not None:
            after = p.detach()
            if after.dtype in _LOW_PRECISION:  # the difference of two bf16/fp16 values, exact in float32
                update = after.float() - before.float()
            else:
                update = torch.sub(after, before, out=before)  # in the copy's memory: no second buffer
            self.cap._record_optimizer("{}/{}/{}/{}".format(module, DIRECTION, UPDATE_ROLE, pname), update, module,
                                       self.op, UPDATE_ROLE, index, extra)


# ---- gradient clipping: one wrapper of torch.nn.utils' clipping, shared by the captures that watch an optimizer --

_clip_patches = SharedPatches()


def _clip_factor(max_norm, total_norm):
    """The factor torch.nn.utils.clip_grad._clip_grads_with_norm_ multiplies the gradients by (its expression)."""
    return torch.clamp(max_norm / (total_norm + 1e-6), max=1.0)


def _record_clip(max_norm, total_norm):
    for cap in list(_open_captures):
        if getattr(cap, "_optimizer_watches", None) and cap._recording and threading.get_ident() == cap._thread:
            cap._record_clip(max_norm, total_norm)


def _wrap_clip_with_norm(orig):
    def clip_grads_with_norm_(parameters, max_norm, total_norm, *args, **kwargs):
        _record_clip(max_norm, total_norm)
        return orig(parameters, max_norm, total_norm, *args, **kwargs)

    clip_grads_with_norm_.__wrapped__ = orig
    return clip_grads_with_norm_


def _wrap_clip_grad_norm(orig):
    """torch without _clip_grads_with_norm_ (before 2.6): the clipping is seen where clip_grad_norm_ is looked
    up in torch.nn.utils at call time; the factor from the total norm it returns."""
    def clip_grad_norm_(parameters, max_norm, *args, **kwargs):
        total = orig(parameters, max_norm, *args, **kwargs)
        _record_clip(max_norm, total)
        return total

    clip_grad_norm_.__wrapped__ = orig
    return clip_grad_norm_


def install_clip_hooks():
    _clip_patches.acquire(_wrap_clipping)


def _wrap_clipping(replace):
    import torch.nn.utils as nn_utils
    import torch.nn.utils.clip_grad as clip_grad

    inner = getattr(clip_grad, "_clip_grads_with_norm_", None)
    orig, make = (inner, _wrap_clip_with_norm) if inner is not None else (clip_grad.clip_grad_norm_, _wrap_clip_grad_norm)
    wrapper = make(orig)
    for ns, attr in ((clip_grad, "_clip_grads_with_norm_"), (nn_utils, "clip_grads_with_norm_"),
                     (clip_grad, "clip_grad_norm_"), (nn_utils, "clip_grad_norm_")):
        replace(ns, attr, orig, wrapper)


def uninstall_clip_hooks():
    _clip_patches.release()


class OptimizerEvents:
    """Capture's optimizer events: `optimizer=` at construction, or `cap.watch_optimizer(opt)` once started."""

    def watch_optimizer(self, optimizer, update=None):
        """Record `optimizer`'s states at the recorded steps from now on (the HF callback calls it with the
        Trainer's optimizer). update: also the parameters' updates (default: the capture's optimizer_update)."""
        self._check_started()
        if any(w.opt is innermost_optimizer(optimizer) for w in self._optimizer_watches):
            return self  # watched already (a second trainer.train() with the same capture)
        watch = OptimizerWatch(self, optimizer, self.optimizer_update if update is None else update)
        if not self._optimizer_watches:
            install_clip_hooks()
        self._optimizer_watches.append(watch)
        watched = self._fingerprint.setdefault("optimizer", {})
        watched[str(len(watched))] = optimizer_fingerprint(watch.opt)
        self.writer.write_fingerprint(json.dumps(self._fingerprint, default=str))
        return self

    def _unwatch_optimizers(self):
        watches, self._optimizer_watches = self._optimizer_watches, []
        for w in watches:
            w.remove()
        if watches:
            uninstall_clip_hooks()

    def _own_calls(self):
        """The capture's own torch calls (copies, differences) are not op events."""
        return _Busy(self)

    def _record_optimizer(self, name, t, module, op, role, index, extra):
        # The direction filter is for forward and backward: optimizer records are asked for by optimizer=.
        if (self.include is not None and not self.include.search(name)) or \
                (self.exclude is not None and self.exclude.search(name)):
            return None
        return self._record(name, t, module, op, DIRECTION, role, index, 0, extra=extra, force=True)

    def _record_clip(self, max_norm, total_norm):
        step, k = getattr(self, "_clip_calls", (self.step, 0))  # the k-th clipping of this step
        k = k if step == self.step else 0
        self._clip_calls = (self.step, k + 1)
        with self._own_calls():
            total = total_norm.detach() if isinstance(total_norm, torch.Tensor) else torch.tensor(float(total_norm))
            extra = {"max_norm": float(max_norm)}
            self._record_optimizer("{}/{}/grad_norm/{}".format(GLOBAL_NAME, DIRECTION, k), total, GLOBAL_NAME,
                                   "clip_grad_norm_", "grad_norm", k, extra)
            self._record_optimizer("{}/{}/clip_factor/{}".format(GLOBAL_NAME, DIRECTION, k),
                                   _clip_factor(max_norm, total), GLOBAL_NAME, "clip_grad_norm_", "clip_factor", k,
                                   extra)


class _Busy:
    def __init__(self, cap):
        self.cap = cap

    def __enter__(self):
        self.busy, self.cap._busy = self.cap._busy, True
        self.grad = torch.is_grad_enabled()
        torch.set_grad_enabled(False)

    def __exit__(self, *exc):
        torch.set_grad_enabled(self.grad)
        self.cap._busy = self.busy
        return False
