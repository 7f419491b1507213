"""`make demo`, part 2: train the small Llama-style model for a few dozen steps in fp32 (golden) and in
bf16 (target) with capture on, then print both loss series side by side.

usage: demo_train.py OUT_DIR [--steps 30]
Writes OUT_DIR/golden and OUT_DIR/target (capture runs: module level, tensors of step 0, scalars every
step, and the logits of held-out batches scored by the trained model). scripts/demo.sh then runs
`parity compare OUT_DIR/golden OUT_DIR/target --step 0`, `parity curve` and `parity eval ppl` on them.
"""
import argparse
import os
import shutil
import sys
import time

import torch

import parity
from parity.examples import SyntheticCorpus, build_model, train


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--eval-batches", type=int, default=8)
    args = ap.parse_args()
    corpus = SyntheticCorpus(256, 1 << 15)
    series = {}
    for name, dtype in (("golden", torch.float32), ("target", torch.bfloat16)):
        run = os.path.join(args.out, name)
        shutil.rmtree(run, ignore_errors=True)  # the demo's own output directory, recreated each time
        parity.seed_all(42, deterministic=True)
        model = build_model("llama", "small", seed=0).to(dtype)
        t0 = time.perf_counter()
        with parity.capture(model, run, level="module", mode="tensor", steps=[0]) as cap:
            series[name] = train(model, corpus, steps=args.steps, batch_size=args.batch, seq_len=args.seq,
                                 lr=3e-3, capture=cap)
            # Business layer: score held-out batches (steps the training never saw) with the trained
            # model; `parity eval ppl OUT/golden OUT/target` compares the two runs' PPL / KLD / top-1.
            model.eval()
            with torch.no_grad():
                for b in range(args.eval_batches):
                    x, y = corpus.batch(100000 + b, args.batch, args.seq)
                    cap.log_logits(model(x), y)
        n = sum(p.numel() for p in model.parameters())
        print("{:<6} {:>5} run: {} steps of {} tokens, {:.2f} M parameters, {:.1f} s -> {}".format(
            name, str(dtype).replace("torch.", ""), args.steps, args.batch * args.seq, n / 1e6,
            time.perf_counter() - t0, run))
    torch.use_deterministic_algorithms(False)
    print()
    print("step   golden(fp32)   target(bf16)   target-golden")
    for i, (g, t) in enumerate(zip(series["golden"], series["target"])):
        print("{:>4}   {:>12.5f}   {:>12.5f}   {:>+13.5f}".format(i, g, t, t - g))
    g, t = series["golden"][-1], series["target"][-1]
    print("final loss: golden {:.4f}, target {:.4f} ({:+.2%})".format(g, t, (t - g) / g))
    return 0


if __name__ == "__main__":
    sys.exit(main())
