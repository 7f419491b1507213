"""Capture side by side with msprobe (issue 34 §2): one training step on the CPU of three models with no
capture, parity's capture (module / op / mix level, statistics and tensor modes) and msprobe's
PrecisionDebugger (L0 / L1 / mix, statistics and tensor tasks). Each (model, kind) runs in its own process
(bench/capture/step.py: msprobe patches torch globally), in interleaved rounds (round r runs every kind
of every model once, in order), so that a shared machine's drifts hit every kind alike. Per kind: the
median over rounds of each process's median step, and the median [min-max] over rounds of the ratio to
the uncaptured step of the same model and round.

The floor: the bytes parity's statistics must read per step (the recorded tensors, each distinct tensor
version once) at this machine's single-thread read bandwidth (a plain sum of a 256 MiB buffer in
the same run), and the measured overhead (step - uncaptured step) against it.

Ratios of wall time and of process CPU time (with --threads 1 the CPU time is the work done, which a
shared machine's other processes do not inflate).

usage: PYTHONPATH=python:build/python .venv/bin/python bench/capture/run.py [--rounds 3] [--steps 3] [--threads N]
         [--models transformer6,hf-llama,hf-gpt2] [--kinds none,parity-module,...] [--json OUT] [--dir DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["transformer6", "hf-llama", "hf-gpt2"]
KINDS = ["none", "parity-module", "msprobe-L0", "parity-op", "msprobe-L1", "parity-mix", "msprobe-mix",
         "parity-module-tensor", "msprobe-L0-tensor", "parity-op-tensor", "msprobe-L1-tensor"]
SCHEMA = "parity.bench.capture/1"


def read_bandwidth(nbytes=256 << 20, reps=5):
    """Bytes per second of one thread summing a buffer much larger than the caches (best of reps)."""
    import torch

    torch.set_num_threads(1)
    x = torch.ones(nbytes // 4)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        x.sum()
        best = min(best, time.perf_counter() - t0)
    return nbytes / best


def run_one(model, kind, args):
    cmd = [sys.executable, os.path.join(HERE, "step.py"), model, kind, "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--threads", str(args.threads)]
    if args.dir:
        cmd += ["--dir", args.dir]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        raise SystemExit("{} {} failed (exit {}):\n{}".format(model, kind, p.returncode, (p.stdout + p.stderr)[-3000:]))
    return json.loads(lines[-1])


def summarise(results, models, kinds, bandwidth):
    """Per (model, kind): medians, ratio median and range over rounds, dump bytes, floor."""
    rows = []
    for m in models:
        base = [r["median"] for r in results[(m, "none")]]
        cpu_base = [r["cpu_median"] for r in results[(m, "none")]]
        for k in kinds:
            runs = results[(m, k)]
            ratios = [r["median"] / b for r, b in zip(runs, base)]
            cpu_ratios = [r["cpu_median"] / b for r, b in zip(runs, cpu_base)]
            row = dict(model=m, kind=k, step_s=statistics.median(r["median"] for r in runs),
                       ratio=statistics.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios),
                       cpu_s=statistics.median(r["cpu_median"] for r in runs), cpu_ratio=statistics.median(cpu_ratios),
                       cpu_ratio_min=min(cpu_ratios), cpu_ratio_max=max(cpu_ratios),
                       dump_bytes_per_step=statistics.median(r["dump_bytes_per_step"] for r in runs))
            if "statistics_read_bytes" in runs[0]:
                read = runs[0]["statistics_read_bytes"]
                row.update(statistics_read_bytes=read, records_summarised=runs[0]["records_summarised"],
                           records_reused=runs[0]["records_reused"], floor_s=read / bandwidth,
                           overhead_s=statistics.median(r["median"] - b for r, b in zip(runs, base)),
                           cpu_overhead_s=statistics.median(r["cpu_median"] - b for r, b in zip(runs, cpu_base)))
                row["floor_ratio"] = 1 + row["floor_s"] / statistics.median(base)
            rows.append(row)
    return rows


def print_table(rows):
    print("| model | capture | median step | x no capture (median [range]) | CPU x no capture | dump / step "
          "| statistics read / step | floor (x) | overhead / floor |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        read = floor = vs = ""
        if "floor_s" in r:
            read = "{:.0f} MB ({:.0f} of {:.0f} records)".format(r["statistics_read_bytes"] / 1e6, r["records_summarised"],
                                                                 r["records_summarised"] + r["records_reused"])
            floor = "{:.1f} ms ({:.3f}x)".format(r["floor_s"] * 1e3, r["floor_ratio"])
            if r["floor_s"] > 0:
                vs = "wall {:.1f}x, CPU {:.1f}x".format(r["overhead_s"] / r["floor_s"], r["cpu_overhead_s"] / r["floor_s"])
        print("| {} | {} | {:.3f} s | {:.2f}x [{:.2f}-{:.2f}] | {:.2f}x [{:.2f}-{:.2f}] | {:.1f} MB | {} | {} | {} |".format(
            r["model"], r["kind"], r["step_s"], r["ratio"], r["ratio_min"], r["ratio_max"], r["cpu_ratio"],
            r["cpu_ratio_min"], r["cpu_ratio_max"], r["dump_bytes_per_step"] / 1e6, read, floor, vs), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per process (after --warmup)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--dir", default=None, help="where dumps are written (default: the temporary folder)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads per process (0: torch's default)")
    ap.add_argument("--json", default=None, help="also write the results here (schema " + SCHEMA + ")")
    args = ap.parse_args()
    models, kinds = args.models.split(","), args.kinds.split(",")
    if kinds[0] != "none":
        ap.error("--kinds must start with none (the ratios' base)")
    results = {(m, k): [] for m in models for k in kinds}
    t_start = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    for rnd in range(args.rounds):
        for m in models:
            for k in kinds:
                r = run_one(m, k, args)
                results[(m, k)].append(r)
                print("round {} {:<13} {:<22} median step {:.3f} s".format(rnd, m, k, r["median"]), file=sys.stderr,
                      flush=True)
    bandwidth = read_bandwidth()
    t_end = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    rows = summarise(results, models, kinds, bandwidth)
    print("capture side by side ({} to {}): {} rounds, {} timed steps per process after {} warm-up, torch threads {}; "
          "single-thread read bandwidth {:.1f} GB/s".format(t_start, t_end, args.rounds, args.steps, args.warmup,
                                                            args.threads or "default", bandwidth / 1e9))
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": SCHEMA, "start": t_start, "end": t_end, "rounds": args.rounds, "steps": args.steps,
                       "torch_threads": args.threads or "default",
                       "read_bandwidth_bytes_per_s": bandwidth, "rows": rows,
                       "processes": [dict(r, round=i) for v in results.values() for i, r in enumerate(v)]}, f, indent=1)


if __name__ == "__main__":
    main()
