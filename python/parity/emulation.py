"""Precision emulation: run an fp32 model with chosen modules and ops rounded to a narrower format.

    import parity
    with parity.emulate(model, {"*": "bf16", "*.attn_norm": "fp32", "softmax": "fp16", "*.mlp.*": "fp8_e4m3"}):
        logits = model(tokens)

Every rounding is done by the C++ core's kernels (include/parity/rounding.h, through `_parity_core`), the
same round-to-nearest-even definition the dump readers decode with. docs/emulation.md states exactly what
each mode rounds, where, and with which scale; this module is that document's implementation.

The rounding API the rest of parity uses (replay, scan) is three functions:

    mode = parse_mode("fp8_e4m3:unscaled:sat")     # a Mode (raises ValueError naming the problem)
    round_array_(np_float32_array, mode, axis=-1)  # in place, no copy
    y = round_tensor(tensor, mode, axis=-1)        # a new tensor on the same device/dtype; input untouched
"""
import dataclasses
import fnmatch

import numpy as np

from ._core import core

# Canonical format name -> accepted spellings.
_ALIASES = {
    "fp32": ("fp32", "f32", "float32", "float", "none"),
    "bf16": ("bf16", "bfloat16"),
    "fp16": ("fp16", "f16", "float16", "half"),
    "fp8_e4m3": ("fp8_e4m3", "f8_e4m3", "e4m3", "float8_e4m3fn", "fp8_e4m3fn", "fp8"),
    "fp8_e5m2": ("fp8_e5m2", "f8_e5m2", "e5m2", "float8_e5m2"),
    "int8": ("int8", "i8"),
    "tf32": ("tf32",),
    "ftz": ("ftz",),
}
_CANONICAL = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}
# parity's dtype names for the core's round_()
_CORE_DTYPE = {"bf16": "bf16", "fp16": "f16", "fp8_e4m3": "f8_e4m3", "fp8_e5m2": "f8_e5m2"}
# OCP OFP8 largest finite values: FloatFormat::max_finite of the core's dtype table (parity/dtype.h)
_FP8_MAX = {fmt: next(d["max_finite"] for d in core.dtypes() if d["name"] == _CORE_DTYPE[fmt])
            for fmt in ("fp8_e4m3", "fp8_e5m2")}
_OPTIONS = {"sat", "nosat", "unscaled", "tensor", "channel", "ftz"}

# Operand formats describe how a matmul *reads* its inputs (the accumulation stays fp32 and the result is
# not rounded); arithmetic formats describe a computation done in the format (inputs and result rounded).
_OPERAND_FORMATS = {"int8", "fp8_e4m3", "fp8_e5m2", "tf32"}

# Op classes a policy can name; any other op is named "op:<torch function name>" (e.g. "op:exp").
OP_CLASSES = {
    "matmul": {"matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum", "linear",
               "conv1d", "conv2d", "conv3d"},
    "softmax": {"softmax", "log_softmax", "_softmax"},
    "norm": {"layer_norm", "rms_norm", "group_norm", "batch_norm"},
    "attention": {"scaled_dot_product_attention"},
}
# Module classes whose forward is a matmul with their own weight: operand formats apply to these.
_GEMM_TYPES = {"Linear", "Conv1d", "Conv2d", "Conv3d", "Conv1D", "NonDynamicallyQuantizableLinear", "LazyLinear"}


@dataclasses.dataclass(frozen=True)
class Mode:
    """One parsed emulation mode (docs/emulation.md, "Modes")."""

    format: str                 # fp32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, tf32, ftz
    saturate: bool = False      # overflow clamps to +-max_finite instead of inf (NaN for e4m3)
    scaled: bool = False        # fp8: per-tensor scale amax -> max_finite before the cast
    per_channel: bool = False   # int8: one scale per channel instead of one per tensor
    ftz: bool = False           # flush results below the format's smallest normal to zero
    spec: str = ""              # the text it was parsed from, for reports

    @property
    def is_fp32(self):
        return self.format == "fp32"

    @property
    def operand_only(self):
        return self.format in _OPERAND_FORMATS


def parse_mode(spec):
    """Parse "FORMAT[:OPTION...]" (or pass a Mode through). Options: sat, nosat (fp formats), unscaled,
    tensor (fp8 scaling), channel (int8), ftz. Raises ValueError naming the unknown part."""
    if isinstance(spec, Mode):
        return spec
    if not isinstance(spec, str) or not spec:
        raise ValueError("emulation mode {!r} is not a string like 'bf16' or 'fp8_e4m3:unscaled'".format(spec))
    head, *opts = spec.strip().lower().split(":")
    fmt = _CANONICAL.get(head)
    if fmt is None:
        raise ValueError("emulation mode {!r}: unknown format {!r} (known: {})".format(
            spec, head, ", ".join(sorted(_ALIASES))))
    bad = [o for o in opts if o not in _OPTIONS]
    if bad:
        raise ValueError("emulation mode {!r}: unknown option {!r} (known: {})".format(spec, bad[0], ", ".join(
            sorted(_OPTIONS))))
    fp8 = fmt.startswith("fp8")
    if ("channel" in opts) and fmt != "int8":
        raise ValueError("emulation mode {!r}: 'channel' applies to int8 only".format(spec))
    if ("unscaled" in opts or "tensor" in opts) and not fp8:
        raise ValueError("emulation mode {!r}: 'unscaled'/'tensor' apply to fp8 formats only".format(spec))
    if ("sat" in opts or "nosat" in opts) and fmt not in ("bf16", "fp16", "fp8_e4m3", "fp8_e5m2"):
        raise ValueError("emulation mode {!r}: 'sat'/'nosat' apply to bf16, fp16 and fp8 only".format(spec))
    scaled = fp8 and "unscaled" not in opts
    # Scaled fp8 always saturates: x * (max/amax) can exceed max_finite by a rounding at amax itself.
    saturate = scaled or "sat" in opts
    if scaled and "nosat" in opts:
        raise ValueError("emulation mode {!r}: scaled fp8 always saturates; use ':unscaled:nosat'".format(spec))
    return Mode(format=fmt, saturate=saturate, scaled=scaled, per_channel="channel" in opts, ftz="ftz" in opts,
                spec=spec)


def round_array_(arr, mode, axis=-1):
    """Round a C-contiguous float32 numpy array in place to `mode` (a Mode or a spec string). `axis` is the
    channel axis of int8:channel (0 for a weight's output channels, -1 for activations)."""
    m = parse_mode(mode)
    if arr.size == 0 or m.format == "fp32":
        return arr
    if m.format == "ftz":
        core.flush_subnormals_(arr)
    elif m.format == "tf32":
        core.round_mantissa_(arr, 10)
    elif m.format == "int8":
        _fake_quant_int8_(arr, m.per_channel, axis)
    elif m.scaled:
        _scaled_fp8_(arr, m)
    else:
        core.round_(arr, _CORE_DTYPE[m.format], m.saturate, m.ftz)
    return arr


def _fake_quant_int8_(arr, per_channel, axis):
    # Symmetric: scale = amax / 127 (per tensor, or per channel along `axis`); an all-zero tensor or channel
    # (amax 0) is left as it is — every value is already 0 on any grid.
    if per_channel and arr.ndim > 0:
        amax = np.asarray(core.finite_absmax_channels(arr, axis), dtype=np.float32)
        scales = np.ascontiguousarray(np.where(amax > 0, amax / np.float32(127.0), np.float32(1.0)), dtype=np.float32)
        core.fake_quant_int8_channels_(arr, axis, scales)
        return
    amax = core.finite_absmax(arr)
    if amax > 0:
        core.fake_quant_int8_(arr, float(np.float32(amax) / np.float32(127.0)))


def _scaled_fp8_(arr, m):
    # Per-tensor current scaling (Transformer Engine's recipe without margin): s = max_finite / amax, store
    # round(x * s) in fp8, read back as that times 1/s.
    amax = np.float32(core.finite_absmax(arr))
    if amax == 0:
        core.round_(arr, _CORE_DTYPE[m.format], True, m.ftz)
        return
    s = np.float32(_FP8_MAX[m.format]) / amax
    np.multiply(arr, s, out=arr)
    core.round_(arr, _CORE_DTYPE[m.format], True, m.ftz)
    np.multiply(arr, np.float32(1.0) / s, out=arr)


def round_tensor(t, mode, axis=-1):
    """`t` rounded to `mode`, as a new tensor of t's dtype on t's device (t itself is not changed).

    Non-float tensors come back unchanged. The rounding runs on a float32 CPU copy (exact for bf16/fp16
    tensors; a float64 tensor is first rounded to float32). A tensor that requires grad gets the
    straight-through gradient: y = t + (round(t) - t).detach()."""
    import torch

    m = parse_mode(mode)
    if not isinstance(t, torch.Tensor) or not t.is_floating_point() or m.format == "fp32" or t.numel() == 0:
        return t
    # Torch-function modes (emulate's own op mode among them) must not see the rounding's own tensor calls.
    with torch._C.DisableTorchFunction(), torch.no_grad():
        work = t.detach().to(device="cpu", dtype=torch.float32, copy=True).contiguous()
        round_array_(work.numpy(), m, axis)
        out = work.to(device=t.device, dtype=t.dtype)
    if t.requires_grad and torch.is_grad_enabled():
        with torch._C.DisableTorchFunction():
            return t + (out - t).detach()
    return out


def _map_tensors(obj, fn):
    import torch

    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_map_tensors(o, fn) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_map_tensors(o, fn) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _map_tensors(v, fn)) for k, v in obj.items())
    return obj


# ---------------------------------------------------------------------------------------------- policies

@dataclasses.dataclass
class _Rule:
    key: str
    mode: Mode
    kind: str          # "name", "pattern", "type", "op"
    order: int         # position in the policy (later wins a tie)
    target: str = ""   # the pattern / type name / op name

    def specificity(self):
        # exact name > pattern (more literal characters first) > type; ties: the later rule.
        if self.kind == "name":
            return (3, len(self.target), self.order)
        if self.kind == "pattern":
            literal = sum(1 for ch in self.target if ch not in "*?[]")
            return (2, literal, self.order)
        return (1, 0, self.order)


def _classify(policy, model):
    """Split a policy dict into module rules and op rules (docs/emulation.md, "Policies")."""
    if not isinstance(policy, dict):
        raise ValueError("emulate: the policy must be a dict {selector: mode}, got {}".format(type(policy).__name__))
    names = {name for name, _ in model.named_modules()}
    types = {type(mod).__name__ for mod in model.modules()}
    module_rules, op_rules = [], []
    for order, (key, spec) in enumerate(policy.items()):
        try:
            mode = parse_mode(spec)
        except ValueError as e:
            raise ValueError("emulate: policy key {!r}: {}".format(key, e)) from None
        if not isinstance(key, str):
            raise ValueError("emulate: policy key {!r} is not a string".format(key))
        if key.startswith("op:") or key in OP_CLASSES:
            op = key[3:] if key.startswith("op:") else key
            op_rules.append(_Rule(key, mode, "op", order, op))
        elif key.startswith("type:"):
            op_type = key[5:]
            if op_type not in types:
                raise ValueError("emulate: policy key {!r}: the model has no module of type {!r}".format(key, op_type))
            module_rules.append(_Rule(key, mode, "type", order, op_type))
        elif key in names:
            module_rules.append(_Rule(key, mode, "name", order, key))
        elif key in types:
            module_rules.append(_Rule(key, mode, "type", order, key))
        else:
            if not any(fnmatch.fnmatchcase(n, key) for n in names):
                raise ValueError("emulate: policy key {!r} matches no module name, module type or op class ({}) of "
                                 "the model".format(key, ", ".join(sorted(OP_CLASSES))))
            module_rules.append(_Rule(key, mode, "pattern", order, key))
    return module_rules, op_rules


def _own_rule(name, module, rules):
    best = None
    for r in rules:
        hit = ((r.kind == "name" and name == r.target) or (r.kind == "pattern" and fnmatch.fnmatchcase(name, r.target))
               or (r.kind == "type" and type(module).__name__ == r.target))
        if hit and (best is None or r.specificity() > best.specificity()):
            best = r
    return best


def resolve(model, policy):
    """{module path: (Mode, rule key, inherited?)} for every module a module rule reaches — its own best
    rule, or the nearest ancestor's. The plan emulate() applies; also how a report explains a policy."""
    module_rules, _ = _classify(policy, model)
    out = {}
    for name, module in model.named_modules():
        rule = _own_rule(name, module, module_rules)
        if rule is not None:
            out[name] = (rule.mode, rule.key, False)
            continue
        parent = name.rsplit(".", 1)[0] if "." in name else ("" if name else None)
        if parent is not None and parent in out:
            mode, key, _ = out[parent]
            out[name] = (mode, key, True)
    return out


class Emulation:
    """Context manager returned by emulate(); see the module docstring and docs/emulation.md."""

    def __init__(self, model, policy):
        self.model = model
        self.policy = dict(policy)
        self.plan = resolve(model, self.policy)
        _, op_rules = _classify(self.policy, model)
        self._op_rules = op_rules
        self._handles = []
        self._saved = {}       # id(param) -> (param, original data)
        self._scope = []       # resolved modes of the planned modules on the call stack, innermost last
        self._mode_ctx = None
        self._op_cache = {}
        self.rounded = {"inputs": 0, "outputs": 0, "params": 0, "ops": 0}  # counts, for tests and reports

    # -- which rounding a module does
    def _module_actions(self, module, mode):
        if mode.is_fp32:
            return None
        if mode.operand_only:
            # matmul operand formats act where a weight meets an activation: GEMM modules only.
            return "operands" if type(module).__name__ in _GEMM_TYPES else None
        return "arith"

    def __enter__(self):
        modules = dict(self.model.named_modules())
        try:
            # A forward that raised leaves its scope entries behind; each call of the model starts clean.
            self._handles.append(self.model.register_forward_pre_hook(lambda mod, args: self._scope.clear()))
            for name, (mode, _key, _inh) in self.plan.items():
                module = modules[name]
                self._hook_scope(module, mode)
                action = self._module_actions(module, mode)
                if action is None:
                    continue
                self._round_params(module, mode, action)
                self._hook_io(module, mode, action)
            if self._op_rules:
                self._mode_ctx = _OpMode(self)
                self._mode_ctx.__enter__()
        except BaseException:
            self._undo()
            raise
        return self

    def __exit__(self, *exc):
        self._undo()
        return False

    def _undo(self):
        import torch

        if self._mode_ctx is not None:
            self._mode_ctx.__exit__(None, None, None)
            self._mode_ctx = None
        for h in self._handles:
            h.remove()
        self._handles = []
        with torch.no_grad():
            for param, data in self._saved.values():
                param.data.copy_(data)
        self._saved = {}
        self._scope = []

    def _round_params(self, module, mode, action):
        import torch

        with torch.no_grad():
            for pname, p in module.named_parameters(recurse=False):
                if not p.is_floating_point():
                    continue
                if action == "operands" and (p.dim() < 2 or pname != "weight"):
                    continue  # a GEMM's bias is added in the fp32 accumulator
                if id(p) not in self._saved:
                    self._saved[id(p)] = (p, p.detach().clone())
                # A weight's channels are its output features (dim 0), except HF Conv1D, stored transposed.
                axis = -1 if type(module).__name__ == "Conv1D" else 0
                p.data.copy_(round_tensor(p.detach(), mode, axis=axis))
                self.rounded["params"] += 1

    def _hook_io(self, module, mode, action):
        em = self

        def pre(mod, args):
            em.rounded["inputs"] += 1
            if action == "operands":
                # the activation operand: the first positional argument
                return (round_tensor(args[0], mode, axis=-1),) + tuple(args[1:]) if args else None
            return _map_tensors(args, lambda t: round_tensor(t, mode, axis=-1))

        def post(mod, args, out):
            if action == "operands":
                return None
            em.rounded["outputs"] += 1
            return _map_tensors(out, lambda t: round_tensor(t, mode, axis=-1))

        self._handles.append(module.register_forward_pre_hook(pre))
        self._handles.append(module.register_forward_hook(post))

    def _hook_scope(self, module, mode):
        # The innermost planned module on the call stack decides whether op rules apply (not inside fp32).
        scope = self._scope

        def pre(mod, args):
            scope.append(mode)

        def post(mod, args, out):
            if scope:
                scope.pop()

        self._handles.append(module.register_forward_pre_hook(pre))
        self._handles.append(module.register_forward_hook(post))

    @property
    def pinned(self):
        """True while the innermost planned module running is resolved to fp32."""
        return bool(self._scope) and self._scope[-1].is_fp32

    # -- ops
    def op_rule(self, func):
        name = getattr(func, "__name__", None)
        if name is None:
            return None
        if name in self._op_cache:
            return self._op_cache[name]
        best = None
        for r in self._op_rules:
            hit = name in OP_CLASSES[r.target] if r.target in OP_CLASSES else name == r.target
            if hit and (best is None or r.order > best.order):
                best = r
        result = None if best is None else (best.mode, name in OP_CLASSES["matmul"])
        self._op_cache[name] = result
        return result


def _make_op_mode_class():
    from torch.overrides import TorchFunctionMode

    class _OpModeImpl(TorchFunctionMode):
        def __init__(self, em):
            super().__init__()
            self.em = em

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            rule = self.em.op_rule(func)
            if rule is None or self.em.pinned:
                return func(*args, **kwargs)
            mode, is_matmul = rule
            if mode.is_fp32:
                return func(*args, **kwargs)
            self.em.rounded["ops"] += 1
            if is_matmul or not mode.operand_only:
                args = _map_tensors(args, lambda t: round_tensor(t, mode, axis=-1))
                kwargs = _map_tensors(kwargs, lambda t: round_tensor(t, mode, axis=-1))
            out = func(*args, **kwargs)
            if is_matmul and mode.operand_only:
                return out
            return _map_tensors(out, lambda t: round_tensor(t, mode, axis=-1))

    return _OpModeImpl


_OP_MODE_CLASS = None


def _OpMode(em):
    global _OP_MODE_CLASS
    if _OP_MODE_CLASS is None:
        _OP_MODE_CLASS = _make_op_mode_class()
    return _OP_MODE_CLASS(em)


def emulate(model, policy):
    """A context manager running `model` with `policy` ({selector: mode}) emulated; see docs/emulation.md."""
    return Emulation(model, policy)
