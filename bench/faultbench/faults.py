"""Fault (and benign-change) implementations of the fault benchmark.

Each function changes one model in place, the way a real port, kernel or setting would: a module's
forward replaced by another implementation, a parameter changed, an attribute (eps, approximate) set,
a gradient hook. Several follow tests/python/test_fault_injection.py (fp16 emulation by rounding through
float16, the fp16 softmax without max subtraction, the flush-to-zero kernel, the loss-scale hooks, the
reordered linear); they are re-implemented here because that file is a test, not a library.

Emulation conventions (CPU torch has few fp16 kernels and, before 2.1, no float8 dtype):
- an fp16 kernel is emulated by doing each operation in fp32 on fp16-rounded inputs and rounding its
  result to fp16 (``.half()``: round to nearest even, overflow to Inf), reductions accumulating in fp32
  as real fp16 kernels do; the ``.half()`` results are real float16 tensors, so the dumps show f16;
- fp8 e4m3 uses ``torch.float8_e4m3fn`` when torch has it, else :func:`round_e4m3`, an exact
  round-to-nearest-even onto the e4m3fn grid (checked against an enumeration of all 256 codes);
- int8 is a real ``torch.int8`` tensor between quantise and dequantise;
- quantisers are ``nn.Module`` children named like torch.ao's (``weight_fake_quant``,
  ``input_fake_quant``, ``scores_fake_quant``), with a straight-through gradient (as FakeQuantize).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from parity.examples.models import apply_rotary

FP16_MIN_NORMAL = 2.0 ** -14
E4M3_MAX = 448.0


# ---- number formats --------------------------------------------------------------------------------------

def fp16(x):
    """Round to fp16 and back (the value an fp16 store keeps)."""
    return x.half().to(x.dtype)


def round_mantissa(x, bits):
    """Round float32 values to `bits` stored mantissa bits, round-to-nearest-even (TF32: bits=10).
    Exponent range is float32's, so only precision is lost."""
    m, e = torch.frexp(x)                      # x = m * 2**e, 0.5 <= |m| < 1
    scale = float(2 ** (bits + 1))
    return torch.ldexp(torch.round(m * scale) / scale, e)  # torch.round: half to even


def round_e4m3(x):
    """Round to the nearest float8 e4m3fn value (1 sign, 4 exponent bits with bias 7, 3 mantissa bits;
    largest finite 448, smallest normal 2^-6, subnormal spacing 2^-9; no infinities), ties to even,
    saturating at +-448 (what scaled fp8 casts do). NaN stays NaN. Returns float32."""
    x = x.float()
    a = x.abs().clamp(max=E4M3_MAX)
    _, e = torch.frexp(a)                      # a = m * 2**e with 0.5 <= m < 1, so floor(log2 a) = e - 1
    exp = torch.clamp(e - 1, min=-6)           # below 2^-6 the spacing stays that of the subnormals
    step = torch.ldexp(torch.ones_like(a), exp - 3)
    q = torch.round(a / step) * step           # a / step is exact (power of two); round half to even
    q = q.clamp(max=E4M3_MAX)
    return torch.where(torch.isnan(x), x, torch.copysign(q, x))


def e4m3_values():
    """All finite non-negative e4m3fn values (for checking round_e4m3)."""
    vals = set()
    for exp_bits in range(16):
        for man in range(8):
            if exp_bits == 15 and man == 7:
                continue  # NaN
            if exp_bits == 0:
                vals.add(man / 8 * 2.0 ** -6)
            else:
                vals.add((1 + man / 8) * 2.0 ** (exp_bits - 7))
    return sorted(vals)


def has_float8():
    return hasattr(torch, "float8_e4m3fn")


# ---- quantisers -------------------------------------------------------------------------------------------

class _StraightThrough(torch.autograd.Function):
    """Forward: the quantised value (computed by `fn`); backward: the gradient unchanged."""

    @staticmethod
    def forward(ctx, x, fn):
        return fn(x)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _InsideTheKernel(_StraightThrough):
    """A property of the kernel itself — flushing subnormal inputs, rounding operands to TF32 — computed
    where an op-level capture does not look (torch function handling off): on the hardware it happens
    inside the one kernel and no other op runs, so the emulation must not add ops that a real target's
    capture would not have (they would be ops present in one run only: STRUCTURE_DIFF)."""

    @staticmethod
    def forward(ctx, x, fn):
        with torch._C.DisableTorchFunction():
            return fn(x)


class FakeQuantInt8(nn.Module):
    """Per-tensor symmetric int8 quantise-dequantise: scale = absmax / 127 over the finite values, the
    integers held in a real torch.int8 tensor; non-finite values (attention masks) pass unchanged."""

    def forward(self, x):
        return _StraightThrough.apply(x, self._qdq)

    @staticmethod
    def _qdq(x):
        finite = torch.isfinite(x)
        xf = torch.where(finite, x, torch.zeros_like(x))
        scale = xf.abs().amax().clamp(min=1e-30) / 127.0
        q = torch.clamp(torch.round(xf / scale), -127, 127).to(torch.int8)
        return torch.where(finite, q.to(x.dtype) * scale, x)


class FakeQuantFP8(nn.Module):
    """Per-tensor scaled float8 e4m3 quantise-dequantise (as fp8 training recipes do: scale = absmax/448),
    through torch.float8_e4m3fn when available, else through the exact emulation round_e4m3."""

    def forward(self, x):
        return _StraightThrough.apply(x, self._qdq)

    @staticmethod
    def _qdq(x):
        scale = x.abs().amax().clamp(min=1e-30) / E4M3_MAX
        if has_float8():
            q = (x / scale).to(torch.float8_e4m3fn)
            return q.to(x.dtype) * scale
        return round_e4m3(x / scale).to(x.dtype) * scale


def int8_weight_linear(lin):
    """The Linear computes with its weight quantised to int8 (per tensor) on the fly (QAT / weight-only
    int8 style); the fp32 master weight is unchanged."""
    lin.weight_fake_quant = FakeQuantInt8()

    def forward(x):
        return F.linear(x, lin.weight_fake_quant(lin.weight), lin.bias)
    lin.forward = forward


def fp8_conv(conv):
    """The Conv2d computes in fp8 e4m3: its input activations and its weight quantised per tensor."""
    conv.input_fake_quant = FakeQuantFP8()
    conv.weight_fake_quant = FakeQuantFP8()

    def forward(x):
        return conv._conv_forward(conv.input_fake_quant(x), conv.weight_fake_quant(conv.weight), conv.bias)
    conv.forward = forward


def int8_attention_scores(attn):
    """The attention's scores (after scaling and the causal mask) quantised to int8 before the softmax,
    as an int8 attention kernel does (a child module scores_fake_quant)."""
    attn.scores_fake_quant = FakeQuantInt8()
    example_attention(attn, scores_fn=attn.scores_fake_quant)


def _softmax_fp16_no_max(s):
    e = fp16(torch.exp(fp16(s)))
    return fp16(e / fp16(e.sum(-1, keepdim=True)))


def softmax_fp16_no_max(attn):
    """The attention's softmax in fp16 without subtracting the row maximum (exp overflows above
    ln(65504) = 11.09); as tests/python/test_fault_injection.py."""
    example_attention(attn, softmax_fn=_softmax_fp16_no_max)


# ---- norms ------------------------------------------------------------------------------------------------

def rmsnorm_fp16_no_upcast(norm):
    """The Llama RMSNorm as an fp16 kernel without the fp32 upcast: x² rounded to fp16 (Inf above 255.9),
    mean accumulated in fp32 and stored in fp16, rsqrt and the products in fp16."""
    def forward(x):
        h = x.half()
        sq = (h.float() * h.float()).half()
        ms = sq.float().mean(-1, keepdim=True).half()
        r = torch.rsqrt(ms.float() + norm.eps).half()
        y = (h.float() * r.float()).half()
        y = (y.float() * norm.weight.half().float()).half()
        return y.to(x.dtype)
    norm.forward = forward


def layernorm_fp16_no_upcast(ln):
    """nn.LayerNorm as an fp16 kernel without the fp32 upcast: mean accumulated in fp32 and stored in
    fp16, x - mean and (x - mean)² rounded to fp16 ((x - mean)² is Inf above 255.9), variance stored in
    fp16, rsqrt, scale and shift in fp16."""
    def forward(x):
        h = x.half()
        mean = h.float().mean(-1, keepdim=True).half()
        xc = (h.float() - mean.float()).half()
        var = (xc.float() * xc.float()).half().float().mean(-1, keepdim=True).half()
        r = torch.rsqrt(var.float() + ln.eps).half()
        y = (xc.float() * r.float()).half()
        y = (y.float() * ln.weight.half().float()).half()
        y = (y.float() + ln.bias.half().float()).half()
        return y.to(x.dtype)
    ln.forward = forward


def flush_to_zero_input(mod, threshold=FP16_MIN_NORMAL):
    """An FTZ/DAZ kernel: inputs below fp16's smallest normal (2^-14) flushed to zero before the op
    (tests/python/test_fault_injection.py norm_flush_to_zero). The flush passes gradients straight
    through, as a real kernel's backward (evaluated at the flushed values) does."""
    inner = mod.forward

    def flush(x):
        return torch.where(x.abs() < threshold, torch.zeros_like(x), x)

    def forward(x, *a, **k):
        return inner(_InsideTheKernel.apply(x, flush), *a, **k)
    mod.forward = forward


# ---- linears / convolutions: other summation orders, other precisions -------------------------------------

def chunked_linear(lin, chunks=4):
    """y = sum_i x[:, chunk i] @ W[:, chunk i]^T (+ b): the same linear map, another summation order and
    other ops (a split-K implementation)."""
    def forward(x):
        k = lin.in_features
        bounds = [k * i // chunks for i in range(chunks + 1)]
        y = None
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            part = x[..., lo:hi] @ lin.weight[:, lo:hi].t()
            y = part if y is None else y + part
        return y + lin.bias if lin.bias is not None else y
    lin.forward = forward


def reordered_linear(lin, seed=7):
    """The reduction index permuted (tests/python/test_fault_injection.py): a valid other summation order."""
    perm = torch.randperm(lin.in_features, generator=torch.Generator().manual_seed(seed))

    def forward(x):
        y = x[..., perm] @ lin.weight[:, perm].t()
        return y + lin.bias if lin.bias is not None else y
    lin.forward = forward


def _tf32(x):
    return round_mantissa(x, 10)


def tf32_linear(lin):
    """The Linear with TF32 operands (10 mantissa bits, as a GPU with TF32 matmuls enabled) and fp32
    accumulation; the rounding passes gradients straight through (the backward matmuls then use the
    rounded operands, as TF32 backward kernels do)."""
    def forward(x):
        return F.linear(_InsideTheKernel.apply(x, _tf32), _InsideTheKernel.apply(lin.weight, _tf32), lin.bias)
    lin.forward = forward


def im2col_conv(conv):
    """Conv2d computed as unfold + matmul (im2col), another algorithm and summation order."""
    def forward(x):
        B, _, H, W = x.shape
        kh, kw = conv.kernel_size
        cols = F.unfold(x, (kh, kw), padding=conv.padding, stride=conv.stride)      # B, C*kh*kw, L
        y = conv.weight.reshape(conv.out_channels, -1) @ cols                       # B, O, L
        Ho = (H + 2 * conv.padding[0] - kh) // conv.stride[0] + 1
        Wo = (W + 2 * conv.padding[1] - kw) // conv.stride[1] + 1
        y = y.reshape(B, conv.out_channels, Ho, Wo)
        return y + conv.bias.reshape(1, -1, 1, 1) if conv.bias is not None else y
    conv.forward = forward


# ---- attention implementations ----------------------------------------------------------------------------

def has_sdpa():
    return hasattr(F, "scaled_dot_product_attention")


def _heads(attn, x, rope):
    """q, k, v of the example models' Attention as [B, heads, T, head_dim], rotary applied to q and k."""
    B, T, _ = x.shape
    q = attn.wq(x).view(B, T, attn.n_heads, attn.head_dim).transpose(1, 2)
    k = attn.wk(x).view(B, T, attn.n_heads, attn.head_dim).transpose(1, 2)
    v = attn.wv(x).view(B, T, attn.n_heads, attn.head_dim).transpose(1, 2)
    if rope is not None:
        cos, sin = rope
        q, k = apply_rotary(q, cos[:T], sin[:T]), apply_rotary(k, cos[:T], sin[:T])
    return q, k, v


def llama_fused_attention(attn):
    """The Llama attention with F.scaled_dot_product_attention (is_causal) where torch has it; else a
    manual variant with another op order: scale folded into q, mask by where, exp(s - max) / sum."""
    def forward(x, rope=None):
        B, T, C = x.shape
        q, k, v = _heads(attn, x, rope)
        if has_sdpa():
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q * (1.0 / math.sqrt(attn.head_dim))) @ k.transpose(-2, -1)
            keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            s = torch.where(keep, s, torch.full_like(s, float("-inf")))
            p = torch.exp(s - s.amax(-1, keepdim=True))
            y = (p / p.sum(-1, keepdim=True)) @ v
        return attn.wo(y.transpose(1, 2).reshape(B, T, C))
    attn.forward = forward


def example_attention(attn, mask_value=float("-inf"), scores_fn=None, softmax_fn=None):
    """Replace the example models' Attention.forward (parity/examples/models.py) by the same computation,
    op for op, with three points of variation: the causal mask's fill value, a function applied to the
    masked fp32 scores before the softmax, and the softmax itself."""
    def forward(x, rope=None):
        B, T, C = x.shape
        q, k, v = _heads(attn, x, rope)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(attn.head_dim)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(mask, mask_value)
        s = scores.float()
        if scores_fn is not None:
            s = scores_fn(s)
        att = (F.softmax(s, dim=-1) if softmax_fn is None else softmax_fn(s)).to(q.dtype)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return attn.wo(y)
    attn.forward = forward


def llama_mask_fill(model, value=-1e4):
    """Every attention's causal mask filled with `value` (the common -1e4 "large negative") instead of
    -inf."""
    for mod in model.modules():
        if type(mod).__name__ == "Attention":
            example_attention(mod, mask_value=value)


def eager_mha(mha):
    """nn.MultiheadAttention (self-attention, batch_first, no mask) computed eagerly from its own
    parameters: in-projection, explicit softmax(QK^T / sqrt(d)) V, out-projection. The golden's
    F.multi_head_attention_forward is the fused path (on torch 2.x it calls scaled_dot_product_attention)."""
    def forward(query, key, value, need_weights=False, **kw):
        B, T, C = query.shape
        H = mha.num_heads
        d = C // H
        q, k, v = F.linear(query, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, H, d).transpose(1, 2) for t in (q, k, v))
        p = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(d), dim=-1)
        y = (p @ v).transpose(1, 2).reshape(B, T, C)
        return F.linear(y, mha.out_proj.weight, mha.out_proj.bias), None
    mha.forward = forward


# ---- parameters, gradients -------------------------------------------------------------------------------

def perturb(param, rel=0.02, seed=11):
    """param *= 1 + rel * N(0, 1) (a 2 % perturbation by default)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        param.mul_(1 + rel * torch.randn(param.shape, generator=g).to(param.dtype))


def transpose_(param):
    """A square weight stored transposed (a checkpoint converted with the wrong layout)."""
    assert param.shape[0] == param.shape[1], param.shape
    with torch.no_grad():
        param.copy_(param.detach().t().clone())


def fp16_grads_with_loss_scale(model, scale):
    """Parameter gradients as an fp16 AMP step with a static loss scale sees them: scaled, rounded to fp16
    (Inf above 65504, zero below 2^-24), unscaled (tests/python/test_fault_injection.py)."""
    for p in model.parameters():
        p.register_hook(lambda g, s=scale: fp16(g * s) / s)


def sharpen_attention(model, factor, modules=None):
    """Multiply the query and key projections (the example models' wq, wk) by `factor`: attention scores
    grow by factor² (trained attention is sharp; a fresh N(0, 0.02) one is uniform)."""
    with torch.no_grad():
        for name, mod in model.named_modules():
            if type(mod).__name__ == "Attention" and (modules is None or name in modules):
                mod.wq.weight.mul_(factor)
                mod.wk.weight.mul_(factor)
