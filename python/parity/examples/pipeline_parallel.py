"""A Llama-style model split into pipeline stages, Megatron-style, on torch.distributed (gloo, CPU), and its
capture: the pipeline-parallel example of comparing runs laid out differently (docs/layout.md).

    python -m parity.examples.pipeline_parallel OUT_DIR --pp 2 [--fault microbatch] [--microbatches 2]

Each of the `--pp` processes builds the same full model from one seed and keeps its stage: stage 0 the
embedding and the first layers, the last stage the last layers, the final norm and the LM head; a stage's
layers are numbered from 0 as Megatron-LM numbers them (`layers.0` of stage 1 is the model's layer
LAYERS/pp). One training step of `--microbatches` microbatches, each forward then backward through the
stages in turn (activations sent forward, their gradients back, by send/recv); with `--pp 1` it is the
plain model doing the same microbatches in the same order. Each rank captures its stage (module level,
tensor mode) into OUT_DIR/rank<R>/, and OUT_DIR.layout.json is the layout file for `parity compare
--layout`.

Fault `microbatch`: stage 0 computes every microbatch's forward, then sends the second microbatch's
activations where the first's are due (and the first's for the second), as a pipeline schedule with an
off-by-one microbatch index would.
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
from parity.examples.tensor_parallel import RMSNorm  # replicated: the same norm in both examples

VOCAB, DIM, HEADS, FFN, LAYERS, SEQ, BATCH = 128, 64, 4, 128, 4, 16, 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        lin = lambda i, o: nn.Linear(i, o, bias=False)  # noqa: E731
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(), RMSNorm()
        self.qkv, self.o_proj = lin(DIM, 3 * DIM), lin(DIM, DIM)
        self.up, self.down = lin(DIM, FFN), lin(FFN, DIM)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = (t.view(b, s, HEADS, DIM // HEADS).transpose(1, 2) for t in self.qkv(self.input_layernorm(x)).chunk(3, -1))
        mask = torch.full((s, s), float("-inf")).triu(1)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(DIM // HEADS) + mask, -1) @ v
        x = x + self.o_proj(att.transpose(1, 2).reshape(b, s, DIM))
        return x + self.down(F.gelu(self.up(self.post_attention_layernorm(x))))


class Stage(nn.Module):
    """Stage `stage` of `pp`: the layers it holds, numbered from 0, and the ends of the model it holds."""

    def __init__(self, stage, pp):
        super().__init__()
        torch.manual_seed(0)  # every rank draws the same full model, then keeps its stage
        embed, layers, norm, head = nn.Embedding(VOCAB, DIM), [Block() for _ in range(LAYERS)], RMSNorm(), nn.Linear(DIM, VOCAB, bias=False)
        per = LAYERS // pp
        self.first, self.last = stage == 0, stage == pp - 1
        self.embed_tokens = embed if self.first else None
        self.layers = nn.ModuleList(layers[stage * per:(stage + 1) * per])
        self.norm, self.lm_head = (norm, head) if self.last else (None, None)

    def forward(self, x):
        if self.first:
            x = self.embed_tokens(x)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x)) if self.last else x


def microbatches(n):
    g = torch.Generator().manual_seed(1)
    return [(torch.randint(0, VOCAB, (BATCH, SEQ), generator=g), torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)) for _ in range(n)]


def _loss(logits, labels, n):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten()) / n


def train_step_plain(model, batches):
    for ids, labels in batches:
        _loss(model(ids), labels, len(batches)).backward()


def train_step_stage(model, stage, pp, batches, fault):
    """Each microbatch forward through the stages, then backward; activations and gradients by send/recv."""
    # The fault: stage 0 runs every microbatch's forward, then sends them in the wrong order (mb k gets the
    # activations of mb k+1), as a schedule with an off-by-one microbatch index would.
    acts = [model(ids) for ids, _ in batches] if model.first and fault == "microbatch" else None
    for k, (ids, labels) in enumerate(batches):
        if model.first:
            out = acts[(k + 1) % len(batches)] if acts is not None else model(ids)
        else:
            x = torch.empty(BATCH, SEQ, DIM)
            dist.recv(x, stage - 1)
            x.requires_grad_(True)
            out = model(x)
        if model.last:
            _loss(out, labels, len(batches)).backward()
        else:
            dist.send(out.detach().contiguous(), stage + 1)
            g = torch.empty_like(out)
            dist.recv(g, stage + 1)
            out.backward(g)
        if not model.first:
            dist.send(x.grad.contiguous(), stage - 1)


def layout_file(pp):
    """The layout file (parity.layout/1) of a PP-`pp` run of this model against an unpipelined golden."""
    return {"schema": core.schemas.LAYOUT, "layers": "layers", "golden": {"pp": 1},
            "target": {"pp": pp, "num_layers": LAYERS}}


def run_rank(rank, world, out, fault, n_micro):
    import parity
    model = Stage(rank, world)
    batches = microbatches(n_micro)
    with parity.capture(model, out, level="module", mode="tensor", steps=[0], rank=rank) as cap:
        if world == 1:
            train_step_plain(model, batches)
        else:
            train_step_stage(model, rank, world, batches, fault)
        cap.next_step()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--pp", type=int, default=1, choices=(1, 2, 4))
    ap.add_argument("--microbatches", type=int, default=2)
    ap.add_argument("--fault", choices=("microbatch",))
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    run_ranks(run_rank, a.pp, a.out, a.fault, a.microbatches)
    write_layout(a.out, layout_file(a.pp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
