"""Capture overhead (issue 3 §6): median training-step time of the Llama-style example model with no
capture, and with capture at module / op / mix level in statistics mode, and module level in tensor
mode writing to local disk, measured in interleaved rounds (one step of each configuration per round)
and reported as the median over rounds of the ratio to the uninstrumented step of the same round.
Also times the statistics of one activation-sized tensor with the C++ fused kernel (what capture uses
on CPU) against the torch reductions it replaces.

usage: capture_overhead.py [--size bench] [--batch 4] [--seq 512] [--steps 5] [--dir DIR]
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


def timed_step(model, corpus, args, opt, cap_kwargs, run_dir):
    """One training step, with capture started fresh for it when cap_kwargs is given."""
    shutil.rmtree(run_dir, ignore_errors=True)
    cap = parity.capture(model, run_dir, steps=None, **cap_kwargs) if cap_kwargs is not None else None
    if cap is not None:
        cap.start()
    try:
        t0 = time.perf_counter()
        train(model, corpus, steps=1, batch_size=args.batch, seq_len=args.seq, capture=cap, optimizer=opt)
        if cap is not None:
            cap.flush()  # tensor mode: the step is only done when its bytes are written
        return time.perf_counter() - t0
    finally:
        if cap is not None:
            cap.stop()


def interleaved_times(model, corpus, args, configs, base):
    """Rounds of one step per configuration, side by side (none, module, op, ... none, module, ...), so
    that slow drifts of a shared machine hit every configuration alike. The first round warms up
    allocators and the capture's code paths and is not counted. Returns {name: [seconds per round]} and,
    per run directory, what the last round wrote."""
    torch.manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times = {name: [] for name in configs}
    written = {}
    for rnd in range(args.steps + 1):
        for name, kwargs in configs.items():
            run_dir = os.path.join(base, name)
            t = timed_step(model, corpus, args, opt, kwargs, run_dir)
            if rnd:
                times[name].append(t)
            if kwargs is not None:
                r = parity.load(run_dir)
                written[name] = (len(r.records), sum(p["data_bytes"] for p in r.parts))
                if written[name][1] and rnd:  # the disk's own time for the same bytes, this round
                    times.setdefault("disk:" + name, []).append(plain_write(run_dir + ".plain", written[name][1]))
            shutil.rmtree(run_dir, ignore_errors=True)
    return times, written


def plain_write(path, nbytes, block=8 << 20):
    """Seconds to write nbytes sequentially in 8 MiB blocks to a new file on the same disk, as the
    capture writer does (buffered, no fsync): a tensor-mode step cannot end sooner than this."""
    buf = os.urandom(block)
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = nbytes
        while left > 0:
            left -= os.write(fd, buf[:min(block, left)])
    finally:
        os.close(fd)
    t = time.perf_counter() - t0
    os.unlink(path)
    return t


def stats_kernel(n=1 << 20, reps=20):
    """Statistics of one n-element f32 tensor: the C++ kernel capture uses (one thread), the same kernel
    on every processor, both timed right after a torch matmul as inside a training step (the BLAS
    pool's threads then spin on the other cores), and the torch reductions it replaces. Medians."""
    x = torch.randn(n)
    y = torch.randn(1024, 1024)

    def median_ms(fn, after_matmul):
        ts = []
        for _ in range(reps):
            if after_matmul:
                y @ y
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts) * 1e3

    procs = os.cpu_count() or 1
    return {
        "kernel, 1 thread": median_ms(lambda: core.fused_stats(x.data_ptr(), "f32", n), False),
        "kernel, 1 thread, after a matmul": median_ms(lambda: core.fused_stats(x.data_ptr(), "f32", n), True),
        "kernel, {} threads, after a matmul".format(procs):
            median_ms(lambda: core.fused_stats(x.data_ptr(), "f32", n, procs), True),
        "torch reductions": median_ms(lambda: device_stats(x).tolist(), False),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="bench")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=5, help="rounds counted, after one warm-up round")
    ap.add_argument("--dir", default=None, help="where tensor-mode runs are written (default: a temp dir)")
    ap.add_argument("--configs", default="none,module,op,mix,module-tensor")
    args = ap.parse_args()
    known = {
        "none": None,
        "module": dict(level="module", mode="statistics"),
        "op": dict(level="op", mode="statistics"),
        "mix": dict(level="mix", mode="statistics"),
        "module-tensor": dict(level="module", mode="tensor"),
    }
    names = args.configs.split(",")
    if names[0] != "none" or any(n not in known for n in names):
        ap.error("--configs: a comma-separated list starting with none, from: " + ", ".join(known))
    if args.steps < 1:
        ap.error("--steps: at least 1 round")
    base = args.dir or tempfile.mkdtemp(prefix="parity_bench_")
    os.makedirs(base, exist_ok=True)
    model = build_model("llama", args.size, max_seq_len=max(args.seq, 128))
    n_params = sum(p.numel() for p in model.parameters())
    corpus = SyntheticCorpus(model.config.vocab_size, 1 << 16)
    print("capture overhead: Llama-style {} ({:.1f} M parameters), batch {} x seq {} = {} tokens/step, "
          "{} torch threads, {} interleaved rounds".format(args.size, n_params / 1e6, args.batch, args.seq,
                                                        args.batch * args.seq, torch.get_num_threads(), args.steps))
    print("statistics of a 1 Mi-element f32 tensor (median ms): " + "; ".join(
        "{} {:.2f}".format(k, v) for k, v in stats_kernel().items()))
    times, written = interleaved_times(model, corpus, args, {n: known[n] for n in names}, base)
    for name in names:
        med = statistics.median(times[name])
        # ratio: median over rounds of (this configuration / none) within the same round
        ratio = statistics.median(t / b for t, b in zip(times[name], times["none"]))
        extra = ""
        if name in written:
            events, nbytes = written[name]
            extra = "; {} events/step".format(events)
            if nbytes:
                extra += "; {:.0f} MiB/step written ({:.0f} MiB/s)".format(nbytes / 2**20, nbytes / 2**20 / med)
        print("{:<14} median step {:7.3f} s   {:5.2f}x{}   (steps: {})".format(
            name, med, ratio, extra, " ".join("{:.2f}".format(t) for t in times[name])), flush=True)
        if "disk:" + name in times:
            # Disk-bound means the step takes about as long as the disk needs for its bytes alone (the
            # writer thread overlaps the writes with the step's compute): step / max(none, disk) ~ 1.
            disk_s = statistics.median(times["disk:" + name])
            bound = statistics.median(t / max(b, d) for t, b, d in zip(times[name], times["none"],
                                                                          times["disk:" + name]))
            print("{:<14} a plain sequential write of the same bytes takes {:.3f} s ({:.0f} MiB/s); "
                  "step / max(uninstrumented step, that write) = {:.2f}".format(
                      "", disk_s, written[name][1] / 2**20 / disk_s, bound), flush=True)
    if args.dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
