"""Generic fault injectors: one known cause put into a named module of any architecture, without editing
transformers' source — an instance's `forward` replaced by a wrapper or another implementation, an
attribute set, a buffer or weight changed, a gradient hook. The module is found by role
(architectures.roles: the last block's first norm, its attention, its first linear, the rotary embedding).

Each fault is a `recipes.Column` of kind "fault": golden fp32 eager, target the same model with the fault,
tensor mode at mix level, and the diagnosis codes an expert would name (docs/diagnosis.md). An injector
returns notes for the record, and a `_check` callable that raises when the fault was not applied (a patch
that was never called), so a cell never passes for a fault that did not happen.

fp16 kernels are emulated as in bench/faultbench/faults.py: each operation in fp32 on fp16-rounded inputs,
its result rounded to a real float16 tensor (CPU torch has few fp16 kernels).
"""
import torch
import torch.nn.functional as F

from bench.faultbench.faults import FP16_MIN_NORMAL, FakeQuantInt8, perturb

from .recipes import FP32, Column, FaultVoid, Side

EPS_ATTRS = ("variance_epsilon", "eps", "epsilon")
WRONG_EPS = 1.0
DROPOUT_P = 0.1
ROPE_BASE_FACTOR = 10.0
OVERFLOWING_SCALE = 2.0 ** 24   # gradients of order 1e-2 scaled past fp16's 65504
# The loss divided by 4096 micro-batches of gradient accumulation before backward (on both sides): fp32
# gradients of ~1e-7, below fp16's smallest normal 2^-14 (measured: an fp16 cast alone leaves the median
# parameter's share of gradients below 2^-14 at 0-16 %, short of GRAD_UNDERFLOW's 50 %).
ACCUMULATION_STEPS = 4096


def module(built, name):
    return dict(built.model.named_modules())[name]


def _eps_attr(mod):
    return next((a for a in EPS_ATTRS if isinstance(getattr(mod, a, None), float)), None)


def _norm_kind(mod):
    """'layer' (mean-subtracting LayerNorm), 'rms' (RMSNorm: x / sqrt(mean x² + eps) · w) or
    'rms_offset' (Gemma: · (1 + w))."""
    name = type(mod).__name__
    if isinstance(mod, torch.nn.LayerNorm) or (name.endswith("LayerNorm") and name != "T5LayerNorm"):
        return "layer"
    return "rms_offset" if name.startswith("Gemma") else "rms"


def _h(x):
    """An fp16 store: the value as a real float16 tensor."""
    return x.half()


# ---- norm without the fp32 upcast -------------------------------------------------------------------------

def _norm_fp16(mod, kind, eps):
    """The norm as an fp16 kernel without the fp32 upcast (as a hand-written kernel that forgot it): x and
    x² (or x - mean and its square) stored in fp16, the mean square accumulated in fp32 and stored in fp16,
    rsqrt and the products in fp16. Weight and bias as the module holds them."""
    weight = getattr(mod, "weight", None)
    bias = getattr(mod, "bias", None)

    def forward(x):
        h = _h(x)
        if kind == "layer":
            mean = _h(h.float().mean(-1, keepdim=True))
            h = _h(h.float() - mean.float())
        ms = _h(_h(h.float() * h.float()).float().mean(-1, keepdim=True))
        y = _h(h.float() * _h(torch.rsqrt(ms.float() + eps)).float())
        if weight is not None:
            w = weight.float() + 1.0 if kind == "rms_offset" else weight.float()
            y = _h(y.float() * _h(w).float())
        if bias is not None:
            y = _h(y.float() + _h(bias).float())
        return y.to(x.dtype)
    return forward


def norm_no_upcast(built, roles):
    mod = module(built, roles["norm"])
    kind = _norm_kind(mod)
    eps = getattr(mod, _eps_attr(mod), None) if _eps_attr(mod) else 1e-5  # OlmoLayerNorm: its literal 1e-5
    mod.forward = _norm_fp16(mod, kind, eps)
    return {"norm_kind": kind}


# ---- softmax in fp16 ---------------------------------------------------------------------------------------

def softmax_fp16(built, roles):
    """Every softmax called while the attention module runs computed by the fp16 kernel: the scores rounded
    to fp16 and the softmax computed in fp16 (HF's `dtype=torch.float32` dropped, other arguments as the
    caller passed them), the probabilities widened back to the dtype asked for. F.softmax, torch.softmax
    and Tensor.softmax are replaced for the duration of that module's forward only."""
    mod = module(built, roles["attention"])
    inner = mod.forward
    calls = [0]
    originals = (F.softmax, torch.softmax, torch.Tensor.softmax)

    def in_fp16(original):
        def softmax(x, *args, dtype=None, **kw):
            calls[0] += 1
            return original(_h(x), *args, **kw).to(dtype or x.dtype)
        return softmax
    patched = tuple(in_fp16(o) for o in originals)

    def forward(*a, **k):
        F.softmax, torch.softmax, torch.Tensor.softmax = patched
        try:
            return inner(*a, **k)
        finally:
            F.softmax, torch.softmax, torch.Tensor.softmax = originals
    mod.forward = forward

    def check():
        if calls[0] == 0:
            raise RuntimeError("fault not applied: {} called no softmax".format(roles["attention"]))
    return {"_check": check}


# ---- wrong eps ---------------------------------------------------------------------------------------------

def wrong_eps(built, roles):
    mod = module(built, roles["norm"])
    attr = _eps_attr(mod)
    old = getattr(mod, attr)
    setattr(mod, attr, WRONG_EPS)
    return {"eps": "{} {} -> {}".format(attr, old, WRONG_EPS)}


# ---- int8 weights ------------------------------------------------------------------------------------------

def int8_weight(built, roles):
    """The linear computes with its weight quantised per tensor to int8 and dequantised (weight-only int8,
    a real torch.int8 tensor in between; the quantiser is a child module `weight_fake_quant`, as torch.ao's,
    with a straight-through gradient). HF's Conv1D (GPT-2) holds its weight transposed: y = x W + b."""
    lin = module(built, roles["linear"])
    lin.weight_fake_quant = FakeQuantInt8()
    conv1d = not isinstance(lin, torch.nn.Linear)

    def forward(x):
        w = lin.weight_fake_quant(lin.weight)
        if not conv1d:
            return F.linear(x, w, lin.bias)
        y = torch.addmm(lin.bias, x.reshape(-1, x.size(-1)), w)
        return y.reshape(x.shape[:-1] + (w.shape[1],))
    lin.forward = forward


def perturbed_weight(built, roles):
    """The linear's weight × (1 + 0.02 N(0, 1)) (faultbench's perturb): a checkpoint that is not the golden's."""
    perturb(module(built, roles["linear"]).weight)


# ---- dropout left in train mode ----------------------------------------------------------------------------

def _dropout_on_output(mod):
    """The attention's output passes through F.dropout(p=0.1, training=module.training): the dropout an
    attention output has in training. Golden and target both get it; only the module's mode differs."""
    inner = mod.forward

    def forward(*a, **k):
        out = inner(*a, **k)
        if isinstance(out, tuple):
            return (F.dropout(out[0], DROPOUT_P, training=mod.training),) + tuple(out[1:])
        return F.dropout(out, DROPOUT_P, training=mod.training)
    mod.forward = forward


def dropout_golden_eval(built, roles):
    mod = module(built, roles["attention"])
    _dropout_on_output(mod)
    mod.eval()


def dropout_target_train(built, roles):
    mod = module(built, roles["attention"])
    _dropout_on_output(mod)
    mod.train()
    torch.manual_seed(1234)  # the mask: any stream; the golden draws none


# ---- another RoPE base -------------------------------------------------------------------------------------

def rope_base(built, roles):
    """The rotary embedding's frequencies recomputed for a base 10× the configured one: inv_freq_i =
    base^(-i/n) for i < n = len(inv_freq) (default RoPE: exponent 2i/dim with dim = 2n), so a base × 10
    multiplies inv_freq_i by 10^(-i/n). The config is untouched (a kernel with its own base)."""
    rot = module(built, roles["rotary"])
    n = rot.inv_freq.numel()
    with torch.no_grad():
        factor = ROPE_BASE_FACTOR ** (-torch.arange(n, dtype=torch.float64) / n)
        rot.inv_freq.copy_((rot.inv_freq.double() * factor).to(rot.inv_freq.dtype))
    return {"rope_base_factor": ROPE_BASE_FACTOR}


# ---- flush to zero -----------------------------------------------------------------------------------------

def flush_input(built, roles):
    """The norm's input flushed to zero below fp16's smallest normal 2^-14 (an FTZ/DAZ kernel). Where no
    input element is that small the flush changes nothing: the cell is n/a (FaultVoid), measured."""
    mod = module(built, roles["norm"])
    flushed = [0, 0]
    mod.register_forward_pre_hook(lambda m, a: _count_small(a[0], flushed))
    _flush_inside_kernel(mod)

    def check():
        if flushed[0] == 0:
            raise FaultVoid("no element of the norm's input is below 2^-14 (of {}): the flush changes "
                            "nothing".format(flushed[1]))
    return {"_check": check, "flushed": flushed}


def _flush_inside_kernel(mod, threshold=FP16_MIN_NORMAL):
    """The flush as part of the norm's own kernel: a real FTZ/DAZ kernel adds no ops, it reads tiny inputs
    as zero. So the flush runs under torch._C.DisableTorchFunction (as recipes._untraced_linears): the
    capture records the norm's own ops, now fed the flushed values, and no op of the injector's. The
    gradient passes straight through (x + (flush(x) - x).detach()), as a kernel's backward evaluated at
    the flushed values does. (bench/faultbench's flush_to_zero_input does the same.)"""
    inner = mod.forward

    def forward(x, *a, **k):
        with torch._C.DisableTorchFunction():
            flushed = torch.where(x.abs() < threshold, torch.zeros_like(x), x)
            x = x + (flushed - x).detach()
        return inner(x, *a, **k)
    mod.forward = forward


def _count_small(x, counts):
    # Untraced, as the flush: the measurement is the injector's, not an op of the model.
    with torch._C.DisableTorchFunction():
        _count_small_untraced(x, counts)


def _count_small_untraced(x, counts):
    counts[0] += int((x.detach().abs() < FP16_MIN_NORMAL).sum() - (x.detach() == 0).sum())
    counts[1] += x.numel()


# ---- applicability -----------------------------------------------------------------------------------------

def _needs(role, why):
    def needs(arch, roles, model):
        return None if roles.get(role) else why
    return needs


def _needs_eps_attr(arch, roles, model):
    """The wrong-eps fault sets the norm's eps attribute; OLMo's LayerNorm has none (eps is the literal
    1e-5 in its forward)."""
    if not roles.get("norm"):
        return "no norm in the block"
    mod = dict(model.named_modules())[roles["norm"]]
    return None if _eps_attr(mod) else "{} has no eps attribute (a literal in its forward)".format(
        type(mod).__name__)


FAULTS = [
    Column("norm_no_upcast", "fault", "the block's first norm computed as an fp16 kernel without the fp32 upcast",
           FP32, Side(inject=norm_no_upcast), role="norm", expected=("LOW_PRECISION_SENSITIVE_OP",)),
    Column("softmax_fp16", "fault", "the attention's softmax computed in fp16", FP32, Side(inject=softmax_fp16),
           role="attention", expected=("LOW_PRECISION_SENSITIVE_OP", "OVERFLOW", "OP_ARGUMENT_MISMATCH"),
           needs=_needs("attention", "no attention (state-space model)")),
    Column("wrong_eps", "fault", "the norm's eps set to 1.0", FP32, Side(inject=wrong_eps), role="norm",
           expected=("OP_ARGUMENT_MISMATCH",), needs=_needs_eps_attr),
    Column("int8_weight", "fault", "the block's first linear computes with its weight int8 quantise-dequantised",
           FP32, Side(inject=int8_weight), role="linear", expected=("QUANT_SENSITIVE_LAYER",)),
    Column("perturbed_weight", "fault", "the block's first linear's weight perturbed by 2 % (relative)", FP32,
           Side(inject=perturbed_weight), role="linear", expected=("WEIGHT_MISMATCH",)),
    Column("dropout_train", "fault", "a dropout (p = 0.1) on the attention's output left in train mode "
           "(golden: the same dropout in eval mode)", Side(inject=dropout_golden_eval),
           Side(inject=dropout_target_train), role="attention", expected=("NONDETERMINISM", "OP_ARGUMENT_MISMATCH"),
           needs=_needs("attention", "no attention (state-space model)")),
    Column("rope_base", "fault", "the rotary embedding's inv_freq computed for 10x the configured base", FP32,
           Side(inject=rope_base), role="rotary", expected=("WEIGHT_MISMATCH", "TRAIN_INFER_MISMATCH"),
           needs=_needs("rotary", "no rotary embedding (no inv_freq buffer)")),
    Column("flush_to_zero", "fault", "the norm's input flushed to zero below 2^-14 (FTZ)", FP32,
           Side(inject=flush_input), role="norm", expected=("FLUSH_TO_ZERO",)),
    Column("loss_scale_overflow", "fault", "autocast fp16 with a static loss scale of 2^24: scaled gradients "
           "overflow fp16", FP32, Side(autocast=torch.float16, loss_scale=OVERFLOWING_SCALE),
           expected=("GRAD_OVERFLOW", "OVERFLOW")),
    Column("grad_underflow", "fault", "model.to(float16) without a loss scale, the loss divided by 4096 "
           "gradient-accumulation steps before backward (golden: fp32, the same division): gradients underflow "
           "fp16", Side(loss_factor=1.0 / ACCUMULATION_STEPS),
           Side(cast=torch.float16, loss_factor=1.0 / ACCUMULATION_STEPS), expected=("GRAD_UNDERFLOW",)),
]
BY_NAME = {c.name: c for c in FAULTS}
