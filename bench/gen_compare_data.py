#!/usr/bin/python3
"""Writes the input files of bench/compare_bench.sh (not timed):

  OUT/f32/{golden,target}.npy                 two 1 GiB fp32 tensors (2^28 elements, 2^14 x 2^14)
  OUT/bf16/{golden,target}.safetensors         two 512 MiB bf16 tensors (2^28 elements) in safetensors
  OUT/small/{golden,target}/dNN/tNNNNN.npy     20,000 pairs of fp32 tensors of 1-64 KiB

The target is the golden with a relative perturbation of ~1e-3 (and bf16 rounding for the bf16 case),
so every metric has real work to do. Usage: gen_compare_data.py OUT [--scale S] (S < 1 shrinks every
case, for a quick trial run)."""
import json
import os
import sys

import numpy as np

CHUNK = 1 << 24


def to_bf16_bits(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_f32_pair(out, n):
    os.makedirs(out, exist_ok=True)
    side = int(np.sqrt(n))
    shape = (side, n // side)
    g = np.lib.format.open_memmap(os.path.join(out, "golden.npy"), mode="w+", dtype=np.float32, shape=shape)
    t = np.lib.format.open_memmap(os.path.join(out, "target.npy"), mode="w+", dtype=np.float32, shape=shape)
    gf, tf = g.reshape(-1), t.reshape(-1)
    rng = np.random.default_rng(1)
    for b in range(0, gf.size, CHUNK):
        x = rng.standard_normal(min(CHUNK, gf.size - b), dtype=np.float32)
        gf[b:b + x.size] = x
        tf[b:b + x.size] = x * (1 + np.float32(1e-3) * rng.standard_normal(x.size, dtype=np.float32))
    g.flush()
    t.flush()
    del g, t


def write_bf16_file(path, n, seed, noise):
    header = json.dumps({"x": {"dtype": "BF16", "shape": [n // 4096, 4096], "data_offsets": [0, 2 * n]}}).encode()
    header += b" " * (-len(header) % 8)
    rng = np.random.default_rng(1)
    noise_rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        for b in range(0, n, CHUNK):
            x = rng.standard_normal(min(CHUNK, n - b), dtype=np.float32)
            if noise:
                x = x * (1 + np.float32(1e-3) * noise_rng.standard_normal(x.size, dtype=np.float32))
            f.write(to_bf16_bits(x).tobytes())


def write_small(out, pairs):
    rng = np.random.default_rng(3)
    for i in range(pairs):
        rel = os.path.join(f"d{i // 1000:02d}", f"t{i:05d}.npy")
        n = int(rng.integers(256, 16385))  # 1 KiB .. 64 KiB of fp32
        x = rng.standard_normal(n, dtype=np.float32)
        for side, v in (("golden", x), ("target", x * (1 + np.float32(1e-3) * rng.standard_normal(n, dtype=np.float32)))):
            p = os.path.join(out, side, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            np.save(p, v)


def main(argv):
    out = argv[1]
    scale = float(argv[argv.index("--scale") + 1]) if "--scale" in argv else 1.0
    n = int((1 << 28) * scale) // 4096 * 4096
    write_f32_pair(os.path.join(out, "f32"), n)
    os.makedirs(os.path.join(out, "bf16"), exist_ok=True)
    write_bf16_file(os.path.join(out, "bf16", "golden.safetensors"), n, 0, False)
    write_bf16_file(os.path.join(out, "bf16", "target.safetensors"), n, 2, True)
    write_small(os.path.join(out, "small"), max(1, int(20000 * scale)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
