"""The model families of the fault benchmark and their data.

Four families, all tiny (hidden <= 64, 2-4 layers, sequence <= 16, batch <= 4) so that a scenario is
captured in about a second on one CPU core:

- ``llama``: the project's Llama-style decoder (``parity.examples.build_model("llama", ...)``): RMSNorm,
  rotary attention with an explicit softmax(QK^T)V, SwiGLU.
- ``gpt2``: the project's GPT-2-style decoder, used with 4 layers for the "error born in
  blocks.2.attn must outrank the later softmaxes" scenario.
- ``encoder``: a BERT-style post-norm encoder written here from ``nn.MultiheadAttention`` +
  ``nn.LayerNorm`` + ``nn.GELU`` (+ ``nn.Dropout``), trained with a per-token classification loss.
- ``cnn``: a small convolutional classifier written here, ``Conv2d`` + ``BatchNorm2d`` + ``ReLU`` blocks,
  global average pooling and a linear head, on synthetic images.

Every builder is deterministic: the same arguments give the same weights (a forked RNG, so building a
model does not move the global generator the runs are seeded with).
"""
import dataclasses

import torch
import torch.nn as nn
import torch.nn.functional as F

from parity.examples import SyntheticCorpus, build_model

VOCAB = 64
SEQ = 16
BATCH = 2
IMAGE = 12  # image side of the CNN family
IMAGE_BATCH = 4
N_CLASSES = 10

_CORPUS = None


def corpus():
    global _CORPUS
    if _CORPUS is None:
        _CORPUS = SyntheticCorpus(VOCAB, 1 << 12)
    return _CORPUS


# ---- encoder ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class EncoderConfig:
    vocab_size: int = VOCAB
    dim: int = 32
    n_layers: int = 2
    n_heads: int = 4
    ff_dim: int = 64
    max_seq_len: int = 32
    norm_eps: float = 1e-5
    dropout: tuple = ()  # per-layer dropout probability after attention (missing entries: 0)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class EncoderBlock(nn.Module):
    """Post-norm (BERT) block: x = LN(x + Drop(MHA(x))); x = LN(x + FF(x))."""

    def __init__(self, c, p):
        super().__init__()
        self.attn = nn.MultiheadAttention(c.dim, c.n_heads, dropout=0.0, batch_first=True)
        self.drop = nn.Dropout(p)
        self.ln_1 = nn.LayerNorm(c.dim, eps=c.norm_eps)
        self.ff = FeedForward(c.dim, c.ff_dim)
        self.ln_2 = nn.LayerNorm(c.dim, eps=c.norm_eps)

    def forward(self, x):
        a, _ = self.attn(x, x, x, need_weights=False)
        x = self.ln_1(x + self.drop(a))
        return self.ln_2(x + self.ff(x))


class Encoder(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.tok = nn.Embedding(config.vocab_size, config.dim)
        self.pos = nn.Embedding(config.max_seq_len, config.dim)
        self.embed_ln = nn.LayerNorm(config.dim, eps=config.norm_eps)
        drops = list(config.dropout) + [0.0] * config.n_layers
        self.blocks = nn.ModuleList(EncoderBlock(config, drops[i]) for i in range(config.n_layers))
        self.head = nn.Linear(config.dim, config.vocab_size)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed_ln(self.tok(tokens) + self.pos(pos))
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def build_encoder(seed=0, **overrides):
    """PyTorch's default initialisation (N(0, 1) embeddings, Kaiming-uniform linears, Xavier attention
    projections): pre-activations are O(1), as in a trained model (with GPT-style N(0, 0.02) weights the
    GELU inputs would be ~0.1, where every GELU variant is the same function to 1e-7)."""
    cfg = dataclasses.replace(EncoderConfig(), **overrides)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return Encoder(cfg)


# ---- CNN ---------------------------------------------------------------------------------------------------

class ConvBlock(nn.Module):
    def __init__(self, cin, cout, stride, padding_mode="zeros"):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False, padding_mode=padding_mode)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class CNN(nn.Module):
    def __init__(self, channels=(3, 8, 16, 16), strides=(1, 2, 1), n_classes=N_CLASSES, padding_mode="zeros"):
        super().__init__()
        self.blocks = nn.ModuleList(ConvBlock(channels[i], channels[i + 1], strides[i], padding_mode)
                                    for i in range(len(strides)))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels[-1], n_classes)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.fc(self.pool(x).flatten(1))


def build_cnn(seed=0, **kw):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return CNN(**kw)  # PyTorch's default (Kaiming-uniform) initialisation


# ---- families ------------------------------------------------------------------------------------------------

def lm_batch(step, rank=0):
    """(tokens, targets) of a step; ranks of a data-parallel run read different batches."""
    return corpus().batch(1000 * rank + step, BATCH, SEQ)


def lm_loss(logits, y):
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))


def image_batch(step, rank=0):
    """Synthetic images (smooth random fields, unit scale) and labels, deterministic per step/rank."""
    g = torch.Generator().manual_seed(7919 * (1000 * rank + step) + 3)
    coarse = torch.randn(IMAGE_BATCH, 3, IMAGE // 3, IMAGE // 3, generator=g)
    x = F.interpolate(coarse, size=(IMAGE, IMAGE), mode="bilinear", align_corners=False)
    x = x + 0.1 * torch.randn(IMAGE_BATCH, 3, IMAGE, IMAGE, generator=g)
    y = torch.randint(0, N_CLASSES, (IMAGE_BATCH,), generator=g)
    return x, y


def image_loss(logits, y):
    return F.cross_entropy(logits.float(), y)


@dataclasses.dataclass
class Family:
    name: str
    build: object  # (**kw) -> nn.Module
    batch: object  # (step, rank) -> (inputs, targets)
    loss: object   # (output, targets) -> scalar


FAMILIES = {
    "llama": Family("llama", lambda **kw: build_model("llama", "tiny", **kw), lm_batch, lm_loss),
    "gpt2": Family("gpt2", lambda **kw: build_model("gpt2", "tiny", **kw), lm_batch, lm_loss),
    "encoder": Family("encoder", build_encoder, lm_batch, lm_loss),
    "cnn": Family("cnn", lambda **kw: build_cnn(**kw), image_batch, image_loss),
}
