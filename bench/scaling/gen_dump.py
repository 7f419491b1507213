"""Synthetic multi-rank capture runs for the scaling benchmark (docs/scaling.md), written with parity's own
dump writer (the bytes a real capture would write, without a model).

    python bench/scaling/gen_dump.py OUT --ranks 64 --events 500 --mib-per-rank 48 [--mode tensor|statistics]

Writes OUT/golden and OUT/target: one part per rank, one step, `events` module-output events per rank
named like a transformer's (layers.<l>.<module>/forward/output/0), fp32 tensors of sizes spread
log-uniformly from 1 KiB to 64x the mean and scaled to `mib-per-rank`. The target is the golden with
rounding-sized noise (relative 2^-24), except one event of rank ranks//2 that is scaled by 1 + 1e-3 (a
structural difference for first divergence to find). Statistics mode writes the statistics only (no
bytes): the metadata of 1,024 ranks without their terabytes.
"""
import argparse
import os

import numpy as np

from parity._core import core

MODULES = ("input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "mlp")


def sizes(events, mib, rng):
    """Element counts (fp32) of the events of one rank: log-uniform, scaled to `mib` MiB in all."""
    w = np.exp(rng.uniform(0.0, np.log(64.0 * 4), events))
    n = np.maximum(256, (w / w.sum() * mib * 2**20 / 4).astype(np.int64))
    return n


def write_side(path, ranks, events, mib, mode, target, seed):
    rng = np.random.default_rng(seed)
    n_max = max(int(sizes(events, mib, np.random.default_rng(seed + r)).max()) for r in range(ranks))
    pool = rng.standard_normal(n_max + 4096).astype(np.float32)  # values shared by all events (offsets differ)
    noise = (1.0 + rng.choice([-1.0, 0.0, 1.0], n_max + 4096) * 2.0**-24).astype(np.float32)
    fault_rank, fault_event = ranks // 2, events // 3
    for rank in range(ranks):
        w = core.DumpWriter(os.path.join(path), rank=rank)
        w.write_fingerprint('{"synthetic": "bench/scaling/gen_dump.py"}')
        ns = sizes(events, mib, np.random.default_rng(seed + rank))
        for e in range(events):
            module = "layers.{}.{}".format(e // len(MODULES), MODULES[e % len(MODULES)])
            n = int(ns[e])
            off = (rank * 7919 + e * 104729) % 4096
            x = pool[off:off + n]
            assert x.size == n
            if target:
                x = x * noise[off:off + n]
                if rank == fault_rank and e == fault_event:
                    x = x * np.float32(1.001)
            x = np.ascontiguousarray(x)
            stats = None
            if mode == "statistics":
                stats = [float(x.min()), float(x.max()), float(x.mean(dtype=np.float64)),
                         float(np.sqrt(np.dot(x.astype(np.float64), x.astype(np.float64)))), float(np.abs(x).max()),
                         0.0, 0.0, float(np.count_nonzero(x == 0)), 0.0]
            w.append_event(module + "/forward/output/0", module, "Linear", "forward", "output", 0, 0, 0, e, "f32",
                           [n], [1], "cpu", x.ctypes.data if mode == "tensor" else 0, n, stats, False,
                           mode == "tensor", "", "")
        w.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--events", type=int, default=500)
    ap.add_argument("--mib-per-rank", type=float, default=48.0)
    ap.add_argument("--mode", choices=("tensor", "statistics"), default="tensor")
    a = ap.parse_args()
    for side, target in (("golden", False), ("target", True)):
        write_side(os.path.join(a.out, side), a.ranks, a.events, a.mib_per_rank, a.mode, target, seed=1)


if __name__ == "__main__":
    main()
