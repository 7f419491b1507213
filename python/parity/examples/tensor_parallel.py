"""A Llama-style model split Megatron-style over tensor-parallel ranks, on torch.distributed (gloo, CPU),
and its capture: the example of comparing runs laid out differently (docs/layout.md).

    python -m parity.examples.tensor_parallel OUT_DIR --tp 2 [--fault shard|reduce_bf16] [--steps 1]

Each of the `--tp` processes builds the same full model from one seed and keeps its shard of each split
layer, as Megatron-LM's layers hold them: q/k/v and gate/up projections column-parallel (output features
split), o/down projections row-parallel (input features split, output all-reduced), the embedding
vocab-parallel (rows split, output all-reduced), the LM head column-parallel (each rank's logits are a
slice of the vocabulary, gathered after the head). Norms are replicated. With `--tp 1` it is the plain
model. Each rank captures itself (module level, tensor mode) into OUT_DIR/rank<R>/, and OUT_DIR.layout.json
is the layout file (`layout_file(tp)`) that describes the run to `parity compare --layout`.

Faults, on TP rank 1 only: `shard` perturbs that rank's slice of layers.1.mlp.down_proj's weight;
`reduce_bf16` makes that rank's contribution to layers.0.self_attn.o_proj's all-reduce pass through bf16.
"""
import argparse
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from parity._core import core
from parity.examples._ranks import run_ranks, write_layout

VOCAB, DIM, HEADS, FFN, LAYERS, SEQ, BATCH = 128, 64, 4, 128, 2, 16, 2

# ---- the regions between TP ranks (Megatron-LM's mappings.py) ---------------------------------------


class _CopyToTp(torch.autograd.Function):  # forward: identity; backward: all-reduce the gradient
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        g = g.clone()
        dist.all_reduce(g)
        return g


class _ReduceFromTp(torch.autograd.Function):  # forward: all-reduce; backward: identity
    @staticmethod
    def forward(ctx, x, fault_bf16):
        x = x.clone()
        if fault_bf16:  # this rank's partial sum reaches the reduction through bf16
            x = x.to(torch.bfloat16).to(x.dtype)
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


class _GatherFromTp(torch.autograd.Function):  # forward: all-gather the last dim; backward: keep own slice
    @staticmethod
    def forward(ctx, x):
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, x.contiguous())
        ctx.width = x.shape[-1]
        return torch.cat(parts, dim=-1)

    @staticmethod
    def backward(ctx, g):
        r = dist.get_rank()
        return g[..., r * ctx.width:(r + 1) * ctx.width].contiguous()


def tp_world():
    return dist.get_world_size() if dist.is_initialized() else 1


def tp_rank():
    return dist.get_rank() if dist.is_initialized() else 0


def _rows(t, dim):
    """This rank's slice of a full tensor along `dim`."""
    n = t.shape[dim] // tp_world()
    return t.narrow(dim, tp_rank() * n, n).clone()


def _tp_parameter(t, dim):
    """This rank's slice along `dim` as a parameter marked as Megatron-LM marks its split parameters
    (tensor_parallel.layers.set_tensor_model_parallel_attributes), which the capture records."""
    p = nn.Parameter(_rows(t, dim))
    p.tensor_model_parallel, p.partition_dim, p.partition_stride = True, dim, 1
    return p


# ---- layers -----------------------------------------------------------------------------------------


class ColumnParallelLinear(nn.Module):
    def __init__(self, full: nn.Linear):
        super().__init__()
        self.weight = _tp_parameter(full.weight.data, 0)

    def forward(self, x):
        x = _CopyToTp.apply(x) if tp_world() > 1 else x
        return F.linear(x, self.weight)


class RowParallelLinear(nn.Module):
    def __init__(self, full: nn.Linear, fault_bf16=False):
        super().__init__()
        self.weight = _tp_parameter(full.weight.data, 1)
        self.fault_bf16 = fault_bf16

    def forward(self, x):
        y = F.linear(x, self.weight)
        return _ReduceFromTp.apply(y, self.fault_bf16) if tp_world() > 1 else y


class VocabParallelEmbedding(nn.Module):
    def __init__(self, full: nn.Embedding):
        super().__init__()
        self.weight = _tp_parameter(full.weight.data, 0)

    def forward(self, ids):
        n = self.weight.shape[0]
        lo = tp_rank() * n
        local = (ids >= lo) & (ids < lo + n)
        y = F.embedding((ids - lo).clamp(0, n - 1), self.weight) * local.unsqueeze(-1)
        return _ReduceFromTp.apply(y, False) if tp_world() > 1 else y


class RMSNorm(nn.Module):
    def __init__(self, dim=DIM):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class Attention(nn.Module):
    def __init__(self, full, fault_bf16):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj = (ColumnParallelLinear(full[k]) for k in ("q", "k", "v"))
        self.o_proj = RowParallelLinear(full["o"], fault_bf16)

    def forward(self, x):
        b, s, _ = x.shape
        heads = HEADS // tp_world()
        q, k, v = (p(x).view(b, s, heads, DIM // HEADS).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = q @ k.transpose(-1, -2) / math.sqrt(DIM // HEADS)
        mask = torch.full((s, s), float("-inf")).triu(1)
        out = torch.softmax(scores + mask, dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(b, s, heads * (DIM // HEADS)))


class Mlp(nn.Module):
    def __init__(self, full):
        super().__init__()
        self.gate_proj, self.up_proj = ColumnParallelLinear(full["gate"]), ColumnParallelLinear(full["up"])
        self.down_proj = RowParallelLinear(full["down"])

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, full, fault_bf16):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(), RMSNorm()
        self.self_attn = Attention(full, fault_bf16)
        self.mlp = Mlp(full)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class TpLlama(nn.Module):
    def __init__(self, fault=None):
        super().__init__()
        torch.manual_seed(0)  # every rank draws the same full weights, then keeps its shard
        lin = lambda i, o: nn.Linear(i, o, bias=False)  # noqa: E731
        full_embed, full_head = nn.Embedding(VOCAB, DIM), lin(DIM, VOCAB)
        full_layers = [dict(q=lin(DIM, DIM), k=lin(DIM, DIM), v=lin(DIM, DIM), o=lin(DIM, DIM), gate=lin(DIM, FFN),
                            up=lin(DIM, FFN), down=lin(FFN, DIM)) for _ in range(LAYERS)]
        self.embed_tokens = VocabParallelEmbedding(full_embed)
        self.layers = nn.ModuleList(Block(f, fault == "reduce_bf16" and i == 0 and tp_rank() == 1)
                                    for i, f in enumerate(full_layers))
        self.norm = RMSNorm()
        self.lm_head = ColumnParallelLinear(full_head)
        if fault == "shard" and tp_rank() == 1:
            with torch.no_grad():
                w = self.layers[1].mlp.down_proj.weight
                w.add_(1e-2 * torch.randn(w.shape, generator=torch.Generator().manual_seed(7)))

    def forward(self, ids):
        logits = self.lm_head(self.norm(self.layers[1](self.layers[0](self.embed_tokens(ids)))))
        return _GatherFromTp.apply(logits) if tp_world() > 1 else logits


def layout_file(tp):
    """The layout file (parity.layout/1) of a TP-`tp` run of this model against an unsharded golden."""
    return {"schema": core.schemas.LAYOUT,
            "splits": [{"modules": r"\.(q_proj|k_proj|v_proj|gate_proj|up_proj)$", "split": "column"},
                       {"modules": r"\.(o_proj|down_proj)$", "split": "row"},
                       {"modules": r"^embed_tokens$", "split": "vocab"},
                       {"modules": r"^lm_head$", "split": "column"}],
            "golden": {"tp": 1}, "target": {"tp": tp}}


def batch():
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, VOCAB, (BATCH, SEQ), generator=g), torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)


def run_rank(rank, world, out, fault, steps):
    import parity
    model = TpLlama(fault)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids, labels = batch()
    # layout=: the capture records that the ranks are TP ranks (torch.distributed alone would say DP replicas)
    with parity.capture(model, out, level="module", mode="tensor", steps=list(range(steps)), rank=rank,
                        layout={"tp": world}) as cap:
        for _ in range(steps):
            loss = F.cross_entropy(model(ids).flatten(0, 1), labels.flatten())
            loss.backward()
            opt.step()
            opt.zero_grad()
            cap.next_step()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--tp", type=int, default=1, choices=(1, 2, 4))
    ap.add_argument("--fault", choices=("shard", "reduce_bf16"))
    ap.add_argument("--steps", type=int, default=1)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    run_ranks(run_rank, a.tp, a.out, a.fault, a.steps)
    write_layout(a.out, layout_file(a.tp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
