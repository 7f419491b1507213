"""How one side of a cell is run, and the benign recipes (golden/target pairs of healthy migrations).

A `Side` says how a model computes one training step: attention implementation, a dtype cast of the whole
model (`model.to(dtype)`, inputs cast alike), an autocast region, a loss scale applied as
`torch.amp.GradScaler.scale(loss)` does it, a plain loss factor (gradient accumulation), and the fault
injected (faults.py).
`capture_step` records forward, loss and backward of that step with `parity.capture`.

A `Column` is one column of the matrix: golden side, target side, capture options, and `applies(arch)`,
which returns None or the reason the cell is n/a. Benign columns are the recipes below; fault columns are
built in faults.py from the same pieces. Every golden is fp32 with eager attention; two carry the
target's instrumentation without its change (sumorder's untraced linears in order, dropout_train's
dropout in eval mode) so that golden and target record the same structure.
"""
import contextlib
import dataclasses
from typing import Callable, Optional

import torch

from . import architectures

GRADSCALER_INIT = 2.0 ** 16   # torch.amp.GradScaler's default init_scale
GRADSCALER_BACKOFF = 0.5      # its default backoff_factor


@dataclasses.dataclass(frozen=True)
class Side:
    attn: str = "eager"
    cast: Optional[torch.dtype] = None        # model.to(cast): parameters, buffers and float inputs
    autocast: Optional[torch.dtype] = None    # torch.autocast("cpu", dtype=...) around forward and loss
    loss_scale: Optional[object] = None       # None | "dynamic" (GradScaler's settled scale) | a float
    loss_factor: Optional[float] = None       # loss * factor before backward (a plain mul: gradient accumulation)
    inject: Optional[Callable] = None         # inject(built, roles) -> notes or None: the change (faults.py)
    matmul_precision: Optional[str] = None    # torch.set_float32_matmul_precision(...) while the step runs


class FaultVoid(Exception):
    """A fault that, measured on this model, changes nothing (the cell is n/a with the measurement)."""


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    kind: str                                  # "benign" | "fault"
    doc: str
    golden: Side
    target: Side
    mode: str = "tensor"
    level: str = "mix"
    direction: str = "both"
    needs: Optional[Callable] = None           # needs(arch, roles, model) -> None | reason the cell is n/a
    role: Optional[str] = None                 # fault: the role (architectures.roles) it is injected into
    expected: tuple = ()                       # fault: the diagnosis codes that name its cause

    def applies(self, arch, roles, model):
        """None, or why this column does not apply to `arch` (`model`: its fp32 eager build)."""
        return self.needs(arch, roles, model) if self.needs else None


# ---- running one side -------------------------------------------------------------------------------------

def _cast_batch(batch, dtype):
    return {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in batch.items()}


def _autocast(dtype):
    return torch.autocast("cpu", dtype=dtype) if dtype is not None else contextlib.nullcontext()


@contextlib.contextmanager
def _matmul_precision(precision):
    """torch.set_float32_matmul_precision(precision) for the step (what a TF32 run declares; the capture's
    fingerprint records it), the previous setting restored after."""
    if precision is None:
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def settled_loss_scale(built, side):
    """The scale torch.amp.GradScaler settles at for this step: from its default initial scale 2^16,
    halved (its backoff) while the scaled backward gives a non-finite gradient — the steps a real
    GradScaler skips before its first update. Probed without capture; gradients are cleared afterwards."""
    scale = GRADSCALER_INIT
    while scale >= 1.0:
        scaler = torch.amp.GradScaler("cpu", init_scale=scale)
        with _autocast(side.autocast):
            loss = built.loss(built.model(**built.batch))
        scaler.scale(loss).backward()
        finite = all(torch.isfinite(p.grad).all() for p in built.model.parameters() if p.grad is not None)
        built.model.zero_grad(set_to_none=True)
        if finite:
            return scale
        scale *= GRADSCALER_BACKOFF
    raise RuntimeError("no loss scale >= 1 gives finite gradients")


def prepare(arch, side, seed=0):
    """The model of one side: built, cast, fault injected. Returns (built, roles, notes)."""
    built = architectures.build(arch, attn=side.attn, seed=seed)
    if side.cast is not None:
        built.model.to(side.cast)
        built.batch = _cast_batch(built.batch, side.cast)
    roles = architectures.roles(built.model, arch)
    notes = {}
    if side.inject is not None:
        notes.update(side.inject(built, roles) or {})
    return built, roles, notes


def capture_step(arch, side, path, mode="tensor", level="mix", direction="both", seed=0):
    """One training step (forward, loss, backward unless direction is "forward") of `arch` under `side`,
    recorded into `path`. Returns notes about the step (the loss scale used, the fault's own notes)."""
    import parity
    built, roles, notes = prepare(arch, side, seed)
    scale = side.loss_scale
    if scale == "dynamic":
        scale = settled_loss_scale(built, side)
    scaler = torch.amp.GradScaler("cpu", init_scale=scale) if scale is not None else None
    with _matmul_precision(side.matmul_precision), \
            parity.capture(built.model, str(path), level=level, mode=mode, direction=direction) as cap:
        with _autocast(side.autocast):
            loss = built.loss(built.model(**built.batch))
        if direction != "forward":
            scaled = loss * side.loss_factor if side.loss_factor is not None else loss
            (scaler.scale(scaled) if scaler else scaled).backward()
        cap.log(loss=loss)
        cap.next_step()
    if scale is not None:
        notes["loss_scale"] = scale
    notes["loss"] = float(loss.detach())
    check = notes.pop("_check", None)
    if check is not None:
        check()  # a fault verifies it was really applied (faults.py)
    return notes


# ---- the benign recipes -----------------------------------------------------------------------------------

FP32 = Side()
SUMORDER_SEED = 7


def _untraced_linears(built, permute):
    """Every nn.Linear computes F.linear(x[..., p], W[:, p], b) as one untraced kernel (under
    torch._C.DisableTorchFunction: the capture records the Linear module's events, not the ops inside, as
    for a library GEMM), p the identity or a fixed random permutation of the input features: the same
    products summed in another order. Both sides of the recipe use it, so the recorded structure is equal
    and only the order differs. (A traced permutation would record the permuted x as the op's input; a
    transposed weight layout, x @ W.t() or addmm leave MKL's fp32 results bit-identical here, measured.)"""
    g = torch.Generator().manual_seed(SUMORDER_SEED)
    count = 0
    for mod in built.model.modules():
        if isinstance(mod, torch.nn.Linear):
            perm = torch.randperm(mod.in_features, generator=g) if permute else None
            mod.forward = _untraced_linear(mod, perm)
            count += 1
    return {"untraced_linears": count, "permuted": permute}


def _untraced_linear(lin, perm):
    def forward(x):
        with torch._C.DisableTorchFunction():
            if perm is None:
                return torch.nn.functional.linear(x, lin.weight, lin.bias)
            return torch.nn.functional.linear(x[..., perm], lin.weight[:, perm], lin.bias)
    return forward


TF32_DROPPED_BITS = 13  # fp32 keeps 23 fraction bits, TF32 10


def _round_tf32(x):
    """x (fp32) with its fraction rounded to TF32's 10 bits, round to nearest even, fp32's exponent range
    (a carry into the exponent is the correct rounding). Straight-through for autograd: the gradient is
    the identity's, as a TF32 matmul's backward sees its operands."""
    bits = x.detach().contiguous().view(torch.int32)
    half = (1 << (TF32_DROPPED_BITS - 1)) - 1
    lsb = (bits >> TF32_DROPPED_BITS) & 1
    rounded = ((bits + half + lsb) & ~((1 << TF32_DROPPED_BITS) - 1)).view(torch.float32)
    return torch.where(torch.isfinite(x), x + (rounded - x.detach()), x)


def _tf32_linear(lin):
    def forward(x):
        with torch._C.DisableTorchFunction():
            return torch.nn.functional.linear(_round_tf32(x), _round_tf32(lin.weight), lin.bias)
    return forward


def linears_tf32(built, roles):
    """Every nn.Linear multiplies TF32-rounded operands (x and W, 10 fraction bits; products and sums in
    fp32), as an Ampere+ tensor core does under allow_tf32 / float32_matmul_precision("high"), inside one
    untraced kernel (the golden: linears_in_order, the same kernel unrounded). Attention's own matmuls and
    the backward's products stay fp32: the emulation covers the Linear layers' forward, the bulk of a
    TF32 run's rounding."""
    count = 0
    for mod in built.model.modules():
        if isinstance(mod, torch.nn.Linear) and mod.weight.dtype == torch.float32:
            mod.forward = _tf32_linear(mod)
            count += 1
    return {"tf32_linears": count}


def linears_in_order(built, roles):
    return _untraced_linears(built, permute=False)


def linears_permuted(built, roles):
    return _untraced_linears(built, permute=True)


def _needs_attention(arch, roles, model):
    return None if arch.attention else "no attention (state-space model): nothing to switch"


def _needs_sdpa(arch, roles, model):
    reason = _needs_attention(arch, roles, model)
    if reason:
        return reason
    try:
        architectures.build(arch, attn="sdpa")
    except (ValueError, ImportError) as e:
        return "sdpa not supported: " + str(e).splitlines()[0][:120]
    return None


RECIPES = [
    Column("bf16", "benign", "model.to(torch.bfloat16): weights, activations and gradients in bf16", FP32,
           Side(cast=torch.bfloat16)),
    Column("autocast_bf16", "benign", "torch.autocast('cpu', bfloat16) around forward and loss; fp32 weights",
           FP32, Side(autocast=torch.bfloat16)),
    Column("fp16", "benign", "model.to(torch.float16), forward only (fp16 gradients need a loss scale)", FP32,
           Side(cast=torch.float16), direction="forward"),
    Column("autocast_fp16_scaled", "benign",
           "torch.autocast('cpu', float16) with the loss multiplied by GradScaler.scale(loss) before backward, at "
           "the scale GradScaler settles at (2^16 halved while a gradient is not finite)", FP32,
           Side(autocast=torch.float16, loss_scale="dynamic")),
    Column("sdpa", "benign", "eager vs scaled_dot_product_attention, both fp32", FP32, Side(attn="sdpa"),
           needs=_needs_sdpa),
    Column("sumorder", "benign", "fp32 rerun in which every Linear sums its products in another order (its "
           "input features permuted inside one untraced kernel; golden: the same kernel in order). "
           "torch.set_num_threads(1) vs 2 was measured first: it leaves Llama, T5 and Mamba bit-identical",
           Side(inject=linears_in_order), Side(inject=linears_permuted)),
    Column("tf32", "benign", "TF32-emulated matmuls: every Linear's operands rounded to TF32 (10 fraction bits) in "
           "an untraced kernel, the run declaring torch.set_float32_matmul_precision('high'); golden: the same "
           "kernel in fp32", Side(inject=linears_in_order), Side(inject=linears_tf32, matmul_precision="high")),
    Column("stats_module", "benign", "bf16 cast, statistics mode at level='module'", FP32, Side(cast=torch.bfloat16),
           mode="statistics", level="module"),
    Column("stats_op", "benign", "bf16 cast, statistics mode at level='op'", FP32, Side(cast=torch.bfloat16),
           mode="statistics", level="op"),
]
BY_NAME = {c.name: c for c in RECIPES}
