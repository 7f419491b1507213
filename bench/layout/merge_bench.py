"""Merging a TP-sharded dump against comparing the unsharded pair (issue 29's acceptance; docs/layout.md): the
same logical tensors, compared once as a one-rank target and once as a 4-way TP target merged by
`parity compare --layout`, side by side in interleaved rounds: wall time and peak resident memory
(anonymous, and file-backed: mapped inputs) of each.

    python bench/layout/merge_bench.py OUT --gib 2 [--rounds 3] [--tp 4] [--parity build/parity]

Writes OUT/golden (one rank), OUT/target (one rank: the golden with rounding-sized noise) and OUT/tp<N>
(the same target split Megatron-style: column-parallel outputs, each rank the slice [k·C/N, (k+1)·C/N) of
the last dimension), `--gib` GiB of fp32 per side in 128 MiB tensors, with parity's own dump writer, and
OUT/tp<N>.layout.json. Prints a table and, with --json, parity.bench.layout-merge/1.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

from parity._core import core

ROWS, COLS = 8192, 4096  # one tensor: 128 MiB of fp32, [rows, cols]


def write_run(path, tensors, tp, noise, seed=1):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(ROWS * COLS + 4096).astype(np.float32)
    jitter = (1.0 + rng.choice([-1.0, 0.0, 1.0], ROWS * COLS + 4096) * 2.0**-24).astype(np.float32) if noise else None
    for rank in range(tp):
        w = core.DumpWriter(path, rank=rank)
        w.write_fingerprint('{"synthetic": "bench/layout/merge_bench.py"}')
        for e in range(tensors):
            module = "layers.{}.mlp.up_proj".format(e)
            off = (e * 104729) % 4096
            x = base[off:off + ROWS * COLS] * (jitter[off:off + ROWS * COLS] if noise else 1)
            x = x.reshape(ROWS, COLS)
            part = np.ascontiguousarray(x[:, rank * COLS // tp:(rank + 1) * COLS // tp])
            w.append_event(module + "/forward/output/0", module, "Linear", "forward", "output", 0, 0, 0, e, "f32",
                           list(part.shape), [part.shape[1], 1], "cpu", part.ctypes.data, part.size, None, False,
                           True, "", "")
        w.close()


def measure(cmd):
    """(wall seconds, peak anonymous MiB, peak file-backed MiB) of one run of cmd."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    anon = filed = 0
    while p.poll() is None:
        try:
            status = open("/proc/{}/status".format(p.pid)).read()
            a = sum(int(m) for m in re.findall(r"^Rss(?:Anon|Shmem):\s+(\d+)", status, re.M))
            f = sum(int(m) for m in re.findall(r"^RssFile:\s+(\d+)", status, re.M))
            anon, filed = max(anon, a), max(filed, f)
        except OSError:
            pass
        time.sleep(0.01)
    if p.returncode not in (0, 1):
        sys.exit("{} exited {}".format(" ".join(cmd), p.returncode))
    return time.perf_counter() - t0, anon / 1024, filed / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--tp", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--parity", default="build/parity")
    ap.add_argument("--json")
    a = ap.parse_args()
    tensors = max(1, int(a.gib * 8))
    sides = {"golden": (1, False), "target": (1, True), "tp{}".format(a.tp): (a.tp, True)}
    for name, (tp, noise) in sides.items():
        if not os.path.isdir(os.path.join(a.out, name)):
            write_run(os.path.join(a.out, name), tensors, tp, noise)
    layout = os.path.join(a.out, "tp{}.layout.json".format(a.tp))
    with open(layout, "w") as f:
        json.dump({"schema": core.schemas.LAYOUT, "splits": [{"modules": r"\.up_proj$", "split": "column"}],
                   "target": {"tp": a.tp}}, f)
    golden = os.path.join(a.out, "golden")
    kinds = {"unsharded": [a.parity, "compare", golden, os.path.join(a.out, "target"), "-q"],
             "merged": [a.parity, "compare", golden, os.path.join(a.out, "tp{}".format(a.tp)), "--layout", layout, "-q"]}
    results = {k: [] for k in kinds}
    for _ in range(a.rounds):
        for k, cmd in kinds.items():
            results[k].append(measure(cmd))
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    rows = []
    for k, rs in results.items():
        rows.append({"kind": k, "wall_s": med([r[0] for r in rs]), "anon_mib": med([r[1] for r in rs]),
                     "file_mib": med([r[2] for r in rs]), "rounds": rs})
    u, m = rows[0], rows[1]
    print("{:>10} {:>9} {:>11} {:>11}".format("", "wall s", "anon MiB", "file MiB"))
    for r in rows:
        print("{:>10} {:>9.2f} {:>11.0f} {:>11.0f}".format(r["kind"], r["wall_s"], r["anon_mib"], r["file_mib"]))
    print("merged / unsharded: wall {:.2f}x, anonymous {:.2f}x, anonymous + file-backed {:.2f}x ({} GiB a side, TP {})".format(
        m["wall_s"] / u["wall_s"], m["anon_mib"] / u["anon_mib"], (m["anon_mib"] + m["file_mib"]) / (u["anon_mib"] + u["file_mib"]),
        a.gib, a.tp))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"schema": "parity.bench.layout-merge/1", "gib": a.gib, "tp": a.tp, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
