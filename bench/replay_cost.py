"""Cost of `parity replay` (issue 11 §6): replay of every op event of one training step of the example
Llama-style model, against the capture step's own time.

    python bench/replay_cost.py [--size small] [--batch 4] [--seq 64] [--repeat 3]

Captures one forward + backward step at level "op" in tensor mode (the capture a replay needs), then
replays every op event with parity.replay.run (loading the dump, float64 reference, recorded-dtype
re-execution, bit comparison). Prints both wall times and CPU times (best of --repeat; CPU time is the
steadier figure on a shared machine), their ratios and the counts.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import torch

import parity
from parity import replay
from parity.examples import SyntheticCorpus, build_model


def step(model, x, y):
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="small")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = build_model("llama", a.size)
    x, y = SyntheticCorpus(model.config.vocab_size, 1 << 14).batch(0, a.batch, a.seq)
    step(model, x, y)  # warm-up: first-call costs are not the capture's
    tmp = tempfile.mkdtemp(prefix="parity-replay-bench-")
    run = os.path.join(tmp, "run")
    try:
        cap_times, rep_times, cap_cpu, rep_cpu = [], [], [], []
        for _ in range(a.repeat):
            shutil.rmtree(run, ignore_errors=True)
            model.zero_grad(set_to_none=True)
            t0, c0 = time.perf_counter(), time.process_time()
            with parity.capture(model, run, level="op", mode="tensor", steps=(0,)) as cap:
                step(model, x, y)
                cap.next_step()
            cap_times.append(time.perf_counter() - t0)
            cap_cpu.append(time.process_time() - c0)
            t0, c0 = time.perf_counter(), time.process_time()
            doc = replay.run(run, progress=False)
            rep_times.append(time.perf_counter() - t0)
            rep_cpu.append(time.process_time() - c0)
        s = doc["summary"]
        res = {"model": "llama " + a.size, "batch": a.batch, "seq": a.seq, "torch": torch.__version__,
               "threads": torch.get_num_threads(), "capture_step_s": min(cap_times), "replay_s": min(rep_times),
               "ratio": min(rep_times) / min(cap_times), "capture_step_cpu_s": min(cap_cpu),
               "replay_cpu_s": min(rep_cpu), "cpu_ratio": min(rep_cpu) / min(cap_cpu), "op_events": s["op_events"], "replayed": s["replayed"],
               "bit_exact": s["bit_exact"], "creates_error": s["creates_error"]}
        print(json.dumps(res, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
