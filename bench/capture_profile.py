"""Where a module-level capture step spends its time: cProfile of one warm training step of the
Llama-style bench model (29.5 M parameters, 2,048 tokens) with capture at module level, statistics
mode. Used for the overhead analysis in docs/benchmarks.md ("Capture overhead").

usage: PYTHONPATH=python:build/python .venv/bin/python bench/capture_profile.py [--level module]
"""
import argparse
import cProfile
import pstats
import tempfile
import time

import torch

import parity
from parity.examples import SyntheticCorpus, build_model, train


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--level", default="module")
    ap.add_argument("--top", type=int, default=14)
    args = ap.parse_args()
    model = build_model("llama", "bench", seed=0)
    corpus = SyntheticCorpus(256, 1 << 15)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    with tempfile.TemporaryDirectory() as d:
        cap = parity.capture(model, d + "/run", steps=None, level=args.level, mode="statistics")
        cap.start()
        try:
            train(model, corpus, steps=1, batch_size=4, seq_len=512, capture=cap, optimizer=opt)  # warm-up
            prof = cProfile.Profile()
            prof.enable()
            t0 = time.perf_counter()
            train(model, corpus, steps=1, batch_size=4, seq_len=512, capture=cap, optimizer=opt)
            print("step {:.3f} s".format(time.perf_counter() - t0))
            prof.disable()
        finally:
            cap.stop()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
