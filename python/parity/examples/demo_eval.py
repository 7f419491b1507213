"""`make demo`, eval part: the tiny Llama-style model trained for a few dozen steps in fp32, then scored on
held-out batches in fp32 (golden) and in bf16 (target); the logits go through parity.log_logits into
OUT_DIR/golden and OUT_DIR/target, which scripts/demo.sh compares with `parity eval ppl` (docs/eval.md).

usage: demo_eval.py OUT_DIR [--steps 40] [--batches 8]
"""
import argparse
import os
import shutil
import sys

import torch

import parity
from parity.examples import SyntheticCorpus, build_model, train


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batches", type=int, default=8)
    args = ap.parse_args()
    parity.seed_all(42)
    corpus = SyntheticCorpus(vocab_size=64, n_tokens=1 << 13)
    golden = build_model("llama", "tiny", seed=3)
    losses = train(golden, corpus, steps=args.steps, batch_size=8, seq_len=32)
    golden.eval()
    target = build_model("llama", "tiny", seed=3)
    target.load_state_dict(golden.state_dict())
    target.to(torch.bfloat16).eval()
    for name in ("golden", "target"):
        shutil.rmtree(os.path.join(args.out, name), ignore_errors=True)  # the demo's own output, recreated
    n = 0
    with torch.no_grad():
        for b in range(args.batches):
            x, y = corpus.batch(100000 + b, 8, 32)  # held out: steps the training never saw
            n += parity.log_logits(os.path.join(args.out, "golden", "rank0", "logits.plg"), golden(x), y)
            parity.log_logits(os.path.join(args.out, "target", "rank0", "logits.plg"), target(x), y)
    print("trained {} steps (loss {:.3f} -> {:.3f}); scored {} held-out tokens in fp32 and bf16 -> {}".format(
        args.steps, losses[0], losses[-1], n, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
