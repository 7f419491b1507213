#!/usr/bin/python3
"""Write the tensors of parity's first demo (`make demo`, scripts/demo.sh).

A small transformer-style network (embedding, 4 blocks of RMSNorm → single-head attention → SiLU MLP,
final norm, logits head) is run twice on the same tokens with the same weights:

  golden  fp32 on CPU                              → OUT/golden.npz        (numpy, f32)
  target  bf16 (model.to(torch.bfloat16)) on CPU   → OUT/target.safetensors (native BF16)

and the target has one deliberately broken layer: blocks.2's attention forgets the 1/sqrt(d) scale
of its scores (the kind of bug a hand-fused attention kernel introduces). Everything else differs
from golden only by bf16 rounding. Each module's forward output is saved under its
`named_modules()` path, so the two files pair key by key.

Usage: /usr/bin/python3 examples/make_demo_tensors.py OUT_DIR
"""
import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

DIM, HEADS_DIM, VOCAB, BLOCKS, BATCH, SEQ = 64, 64, 256, 4, 4, 16


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.broken = False  # set on the target's blocks.2 only

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1)
        if not self.broken:
            scores = scores / math.sqrt(q.shape[-1])  # the scale the broken kernel forgets
        causal = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(causal, float("-inf"))
        return self.proj(torch.softmax(scores, dim=-1) @ v)


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.down(nn.functional.silu(self.up(x)))


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.attn = Attention(dim)
        self.mlp_norm = RMSNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.norm(x))
        return x + self.mlp(self.mlp_norm(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Block(DIM) for _ in range(BLOCKS)])
        self.norm = RMSNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def record_outputs(model, tokens):
    """Forward outputs of every module, keyed by its named_modules() path (the logits as "logits")."""
    outputs, hooks = {}, []
    for name, module in model.named_modules():
        if name and not isinstance(module, nn.ModuleList):
            hooks.append(module.register_forward_hook(
                lambda mod, inp, out, name=name: outputs.__setitem__(name, out.detach().clone())))
    with torch.no_grad():
        outputs["logits"] = model(tokens).detach().clone()
    for h in hooks:
        h.remove()
    outputs.pop("head", None)  # the same tensor as "logits"
    return outputs


def write_safetensors(path, tensors):
    """The safetensors layout: u64 little-endian header size, JSON header, raw little-endian data."""
    names = {torch.float32: ("F32", torch.int32), torch.bfloat16: ("BF16", torch.int16),
             torch.float16: ("F16", torch.int16)}
    header, blobs, offset = {}, [], 0
    for key, t in tensors.items():
        code, int_view = names[t.dtype]
        # numpy has no bfloat16: reinterpret the bits as integers of the same width (native order,
        # little-endian on every machine parity targets; checked in main()).
        raw = t.contiguous().view(int_view).numpy().tobytes()
        header[key] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    assert sys.byteorder == "little", "safetensors stores little-endian data"
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "demo-out")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    golden_model = TinyLM().eval()
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ))

    golden = record_outputs(golden_model, tokens)
    np.savez(out / "golden.npz", **{k: v.numpy() for k, v in golden.items()})

    target_model = TinyLM()
    target_model.load_state_dict(golden_model.state_dict())
    target_model = target_model.to(torch.bfloat16).eval()
    target_model.blocks[2].attn.broken = True
    target = record_outputs(target_model, tokens)
    write_safetensors(out / "target.safetensors", target)

    print(f"wrote {len(golden)} golden tensors (f32) to {out / 'golden.npz'}")
    print(f"wrote {len(target)} target tensors (bf16, blocks.2.attn broken) to {out / 'target.safetensors'}")


if __name__ == "__main__":
    main()
