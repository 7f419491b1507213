"""One training step of the model of issue 34 (a 6-block Llama-style transformer, d = 512, batch 4 x 128
tokens, CPU, fp32), dumped by msprobe's own PrecisionDebugger or by parity.capture, in this process only
(msprobe patches torch globally while it is imported, so bench/compare/run.py starts one process per dump).

  make_dumps.py OUT --side golden|target --tool msprobe|parity --task statistics|tensor --level L0|mix|module|op

The target side has one fault in block 1: its MLP's down projection (layers.1.mlp.w2 in parity's
example model) is off by a relative 1e-2 (a seeded normal factor per element), so every record before
block 1's MLP is identical on both sides and every record after it differs: the first divergence a
comparison should name is inside block 1. Inputs (tokens) are seeded and the same on both sides.
"""
import argparse
import os
import sys

import torch


def build(side):
    from parity.examples import build_model
    model = build_model("llama", "bench", seed=0, n_layers=6)
    if side == "target":
        w = model.layers[1].mlp.w2.weight
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            w.mul_(1 + 1e-2 * torch.randn(w.shape, generator=g))
    return model


def step(model):
    tokens = torch.randint(0, model.config.vocab_size, (4, 129), generator=torch.Generator().manual_seed(2))
    logits = model(tokens[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    loss.backward()


def dump_msprobe(model, out, task, level):
    from msprobe.pytorch import PrecisionDebugger
    dbg = PrecisionDebugger(task=task, level=level, dump_path=out)
    dbg.start(model)
    step(model)
    dbg.stop()
    dbg.step()


def dump_parity(model, out, task, level):
    import parity
    with parity.capture(model, out, level=level, mode=task):
        step(model)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--side", choices=("golden", "target"), required=True)
    ap.add_argument("--tool", choices=("msprobe", "parity"), required=True)
    ap.add_argument("--task", choices=("statistics", "tensor"), required=True)
    ap.add_argument("--level", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = build(a.side)
    (dump_msprobe if a.tool == "msprobe" else dump_parity)(model, a.out, a.task, a.level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
