"""make demo, step 8: a fault that an expert would have to hunt for, found by parity.

Golden: the tiny Llama-style model (fp32) with sharp attention in layer 1 (scores up to ~15).
Target: the same model whose layer-1 attention softmax is computed in fp16 without subtracting the row
maximum (emulated by rounding through float16: CPU torch has no fp16 kernels) — exp(15) > 65504, so Inf
is born there and NaN spreads downstream. Both runs are captured at "mix" level (module and op events),
one forward + backward step, tensor mode.

Usage: demo_overflow.py OUT_DIR   (writes OUT_DIR/golden and OUT_DIR/target)
"""
import sys

import torch
import torch.nn.functional as F

import parity
from parity.examples import SyntheticCorpus, build_model

ATTN = "layers.1.attn"


def fp16(x):
    return x.half().float()


def sharp_model():
    parity.seed_all(0)
    model = build_model("llama", "tiny")
    with torch.no_grad():
        attn = dict(model.named_modules())[ATTN]
        attn.wq.weight.mul_(40.0)
        attn.wk.weight.mul_(40.0)
    return model


def softmax_fp16_without_max(attn):
    """Replace F.softmax inside `attn` by exp/sum in fp16 with no max subtraction (the anti-pattern)."""
    inner, real = attn.forward, F.softmax

    def unsafe_softmax(s, dim=-1, **kw):
        e = fp16(torch.exp(fp16(s)))
        return fp16(e / fp16(e.sum(dim, keepdim=True)))

    def forward(*a, **k):
        F.softmax = unsafe_softmax
        try:
            return inner(*a, **k)
        finally:
            F.softmax = real

    attn.forward = forward


def run(model, path):
    x, y = SyntheticCorpus(64, 1 << 12).batch(0, 2, 12)
    with parity.capture(model, path, level="mix", mode="tensor", steps=[0]) as cap:
        logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        cap.log(loss=loss)
        cap.next_step()
    return float(loss)


def main(out):
    golden_loss = run(sharp_model(), f"{out}/golden")
    target = sharp_model()
    softmax_fp16_without_max(dict(target.named_modules())[ATTN])
    target_loss = run(target, f"{out}/target")
    print(f"golden loss {golden_loss:.4f}, target loss {target_loss} -> {out}/golden, {out}/target")


if __name__ == "__main__":
    main(sys.argv[1])
