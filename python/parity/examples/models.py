"""Two small causal language models in plain PyTorch.

Llama-style: token embedding, pre-norm RMSNorm, rotary multi-head attention (RoPE, Su et al. 2021),
SwiGLU MLP (Shazeer 2020), final RMSNorm, tied or untied head.
GPT-2-style: token + learned position embeddings, pre-norm LayerNorm, GELU MLP, tied head.

Sizes come from the config: `LlamaConfig.tiny()` (tests, < 100 k parameters), `.small()` (demo, about
1 M), `.bench()` (≥ 20 M parameters for the overhead benchmark).

Precision policy: `apply_precision(model, PrecisionPolicy(dtype, overrides))` puts the model in `dtype`
and runs chosen submodules (by named_modules() path) in another precision — a torch dtype, or
"fp16-emulated" (fp32 compute rounded through float16, for CPUs without fp16 kernels). Inputs are cast
to the submodule's precision and outputs back, so a fault can be injected into one layer, e.g.
`{"layers.1.attn_norm": torch.bfloat16}`.
"""
import dataclasses
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclasses.dataclass
class LlamaConfig:
    vocab_size: int = 256
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    hidden_dim: int = 172
    max_seq_len: int = 128
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_embeddings: bool = False

    @classmethod
    def tiny(cls):
        return cls(vocab_size=64, dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_seq_len=32)

    @classmethod
    def small(cls):
        return cls(vocab_size=256, dim=128, n_layers=4, n_heads=4, hidden_dim=344, max_seq_len=128)

    @classmethod
    def bench(cls):
        # 8 layers x (4 d^2 attention + 3 d h MLP) + 2 V d = 8 x (1.05 M + 2.1 M) + 4.2 M ≈ 29 M parameters
        return cls(vocab_size=4096, dim=512, n_layers=8, n_heads=8, hidden_dim=1376, max_seq_len=1024)


@dataclasses.dataclass
class GPT2Config:
    vocab_size: int = 256
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    max_seq_len: int = 128
    norm_eps: float = 1e-5

    @classmethod
    def tiny(cls):
        return cls(vocab_size=64, dim=32, n_layers=2, n_heads=4, max_seq_len=32)

    @classmethod
    def small(cls):
        return cls(vocab_size=256, dim=128, n_layers=4, n_heads=4, max_seq_len=128)


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * weight (Zhang & Sennrich 2019), computed in the input's dtype."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary_tables(seq_len, head_dim, theta, dtype, device):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    freqs = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv)
    return freqs.cos().to(dtype), freqs.sin().to(dtype)


def apply_rotary(x, cos, sin):
    # x: (B, H, T, D); rotate pairs (x[2i], x[2i+1]) by angle t * theta^(-2i/D).
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, rotary=True):
        super().__init__()
        self.n_heads, self.head_dim, self.rotary = n_heads, dim // n_heads, rotary
        self.wq = nn.Linear(dim, dim, bias=not rotary)
        self.wk = nn.Linear(dim, dim, bias=not rotary)
        self.wv = nn.Linear(dim, dim, bias=not rotary)
        self.wo = nn.Linear(dim, dim, bias=not rotary)

    def forward(self, x, rope=None):
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        if rope is not None:
            cos, sin = rope
            q, k = apply_rotary(q, cos[:T], sin[:T]), apply_rotary(k, cos[:T], sin[:T])
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        att = F.softmax(scores.float(), dim=-1).to(q.dtype)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.wo(y)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn_norm = RMSNorm(c.dim, c.norm_eps)
        self.attn = Attention(c.dim, c.n_heads, rotary=True)
        self.mlp_norm = RMSNorm(c.dim, c.norm_eps)
        self.mlp = SwiGLU(c.dim, c.hidden_dim)

    def forward(self, x, rope):
        x = x + self.attn(self.attn_norm(x), rope=rope)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(LlamaBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.dim, config.norm_eps)
        self.head = nn.Linear(config.dim, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.head.weight = self.embed.weight
        _init_weights(self)

    def forward(self, tokens):
        x = self.embed(tokens)
        rope = rotary_tables(tokens.shape[1], self.config.dim // self.config.n_heads, self.config.rope_theta,
                             x.dtype, x.device)
        for layer in self.layers:
            x = layer(x, rope)
        return self.head(self.norm(x))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.dim, eps=c.norm_eps)
        self.attn = Attention(c.dim, c.n_heads, rotary=False)
        self.ln_2 = nn.LayerNorm(c.dim, eps=c.norm_eps)
        self.fc = nn.Linear(c.dim, 4 * c.dim)
        self.proj = nn.Linear(4 * c.dim, c.dim)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.proj(F.gelu(self.fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(self, config: GPT2Config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.dim)
        self.wpe = nn.Embedding(config.max_seq_len, config.dim)
        self.blocks = nn.ModuleList(GPT2Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.dim, eps=config.norm_eps)
        _init_weights(self)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # tied head, as GPT-2


def _init_weights(model):
    # GPT-2 initialisation: N(0, 0.02) for weights, zeros for biases; norms keep ones.
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)


def build_model(kind="llama", size="tiny", seed=0, **overrides):
    """A freshly initialised model; the same (kind, size, seed) always gives the same weights."""
    cfg_cls = {"llama": LlamaConfig, "gpt2": GPT2Config}.get(kind)
    if cfg_cls is None:
        raise ValueError("build_model: kind {!r} is not 'llama' or 'gpt2'".format(kind))
    if not hasattr(cfg_cls, size):
        raise ValueError("build_model: size {!r} is not defined for {}".format(size, kind))
    cfg = dataclasses.replace(getattr(cfg_cls, size)(), **overrides)
    g = torch.random.fork_rng()
    with g:
        torch.manual_seed(seed)
        return (Llama if kind == "llama" else GPT2)(cfg)


@dataclasses.dataclass
class PrecisionPolicy:
    dtype: torch.dtype = torch.float32
    overrides: dict = dataclasses.field(default_factory=dict)  # module path -> torch.dtype | "fp16-emulated"


def _cast_tree(obj, dtype):
    if isinstance(obj, torch.Tensor):
        return obj.to(dtype) if obj.is_floating_point() else obj
    if isinstance(obj, tuple):
        return tuple(_cast_tree(o, dtype) for o in obj)
    if isinstance(obj, list):
        return [_cast_tree(o, dtype) for o in obj]
    if isinstance(obj, dict):
        return {k: _cast_tree(v, dtype) for k, v in obj.items()}
    return obj


def apply_precision(model, policy: PrecisionPolicy):
    """Apply `policy` to `model` in place and return it (see the module docstring)."""
    model.to(policy.dtype)
    modules = dict(model.named_modules())
    for path, prec in policy.overrides.items():
        if path not in modules:
            raise KeyError("apply_precision: no module {!r} (named_modules() paths)".format(path))
        mod = modules[path]
        inner = mod.forward
        outer_dtype = policy.dtype
        if prec == "fp16-emulated":
            def forward(*a, _inner=inner, **k):
                out = _inner(*a, **k)
                return _cast_tree(_cast_tree(out, torch.float16), outer_dtype)
        elif isinstance(prec, torch.dtype):
            mod.to(prec)

            def forward(*a, _inner=inner, _p=prec, **k):
                return _cast_tree(_inner(*_cast_tree(a, _p), **_cast_tree(k, _p)), outer_dtype)
        else:
            raise ValueError("apply_precision: {!r}: precision {!r} is not a torch dtype or 'fp16-emulated'"
                             .format(path, prec))
        mod.forward = forward
    return model
