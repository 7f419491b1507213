"""Capture overhead (issue 3 §6): median training-step time of the Llama-style example model with no
capture, and with capture at module / op / mix level in statistics mode, and module level in tensor
mode writing to local disk. Also times the statistics of one activation-sized tensor with the C++
fused kernel (what capture uses on CPU) against the torch reductions it replaces.

usage: capture_overhead.py [--size bench] [--batch 4] [--seq 512] [--steps 3] [--dir DIR]
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time

import torch

import parity
from parity._core import core
from parity._stats import device_stats
from parity.examples import SyntheticCorpus, build_model, train


def step_times(model, corpus, args, cap_kwargs, run_dir):
    torch.manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times = []
    cap = parity.capture(model, run_dir, steps=None, **cap_kwargs) if cap_kwargs is not None else None
    if cap is not None:
        cap.start()
    try:
        for step in range(args.steps + 1):  # the first step warms up allocators and is not counted
            t0 = time.perf_counter()
            train(model, corpus, steps=1, batch_size=args.batch, seq_len=args.seq, capture=cap, optimizer=opt)
            if cap is not None:
                cap.flush()  # tensor mode: the step is only done when its bytes are written
            if step:
                times.append(time.perf_counter() - t0)
    finally:
        if cap is not None:
            cap.stop()
    return times


def stats_kernel(n=1 << 20, reps=20):
    x = torch.randn(n)
    t0 = time.perf_counter()
    for _ in range(reps):
        core.fused_stats(x.data_ptr(), "f32", n)
    cpp = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(reps):
        device_stats(x).tolist()
    tor = (time.perf_counter() - t0) / reps
    return cpp, tor


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="bench")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where tensor-mode runs are written (default: a temp dir)")
    ap.add_argument("--configs", default="none,module,op,mix,module-tensor")
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="parity_bench_")
    os.makedirs(base, exist_ok=True)
    model = build_model("llama", args.size, max_seq_len=max(args.seq, 128))
    n_params = sum(p.numel() for p in model.parameters())
    corpus = SyntheticCorpus(model.config.vocab_size, 1 << 16)
    print("capture overhead: Llama-style {} ({:.1f} M parameters), batch {} x seq {} = {} tokens/step, "
          "{} torch threads, median of {} steps".format(args.size, n_params / 1e6, args.batch, args.seq,
                                                        args.batch * args.seq, torch.get_num_threads(), args.steps))
    cpp, tor = stats_kernel()
    print("statistics of a 1 Mi-element f32 tensor: C++ fused kernel {:.2f} ms, torch reductions {:.2f} ms"
          .format(cpp * 1e3, tor * 1e3))
    configs = {
        "none": None,
        "module": dict(level="module", mode="statistics"),
        "op": dict(level="op", mode="statistics"),
        "mix": dict(level="mix", mode="statistics"),
        "module-tensor": dict(level="module", mode="tensor"),
    }
    results = {}
    for name in args.configs.split(","):
        run_dir = os.path.join(base, name)
        shutil.rmtree(run_dir, ignore_errors=True)
        times = step_times(model, corpus, args, configs[name], run_dir)
        results[name] = statistics.median(times)
        extra = ""
        if configs[name] is not None:
            r = parity.load(run_dir)
            nbytes = sum(p["data_bytes"] for p in r.parts)
            extra = "; {} events/step".format(len(r.records) // max(1, len(r.steps())))
            if nbytes:
                extra += "; {:.0f} MiB/step written ({:.0f} MiB/s)".format(
                    nbytes / len(r.steps()) / 2**20, nbytes / len(r.steps()) / 2**20 / results[name])
        ratio = results[name] / results["none"] if "none" in results else float("nan")
        print("{:<14} median step {:7.3f} s   {:5.2f}x{}".format(name, results[name], ratio, extra), flush=True)
        shutil.rmtree(run_dir, ignore_errors=True)
    if args.dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
