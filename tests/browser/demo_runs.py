"""Writes the demo's results and report the way `make demo` (scripts/demo.sh) does, at test size, for
the browser test:
  1. the demo's tensors (examples/make_demo_tensors.py: fp32 vs bf16 with one broken attention layer)
     and `parity compare --json --html`;
  2. a tiny Llama trained a few steps in fp32 (golden) and bf16 (target) under parity.capture (two
     captured steps, so the report draws layers x steps), `parity compare --json`, `parity curve --json`;
  3. `parity report` of the three results.

    /usr/bin/python3 tests/browser/demo_runs.py OUT_DIR [PARITY_BIN]

Prints the path of OUT_DIR/report.html. Exit status: 0, or 2 when a command failed (its output is shown)."""
import os
import subprocess
import sys

import torch

import parity
from parity.examples import SyntheticCorpus, build_model, train

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 6          # trained steps: enough for a loss curve
CAPTURED = (0, 1)  # captured steps: two, so the report draws layers x steps


def capture(path, dtype):
    parity.seed_all(42, deterministic=True)
    model = build_model("llama", "tiny", seed=0).to(dtype)
    with parity.capture(model, path, level="module", mode="tensor", steps=CAPTURED) as cap:
        train(model, SyntheticCorpus(64, 1 << 13), steps=STEPS, capture=cap)
    torch.use_deterministic_algorithms(False)


def cli(parity_bin, *args, ok=(0, 1)):
    """Run parity; exit 1 means "differences found", which these fp32-vs-bf16 inputs always have."""
    p = subprocess.run([parity_bin, "--color", "never", *map(str, args)], capture_output=True, text=True)
    if p.returncode not in ok:
        sys.stderr.write("parity {} failed ({}):\n{}{}".format(" ".join(map(str, args)), p.returncode, p.stdout, p.stderr))
        sys.exit(2)


def main():
    out = os.path.abspath(sys.argv[1])
    parity_bin = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("PARITY_BIN", "parity")
    os.makedirs(out, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "examples", "make_demo_tensors.py"), out],
                   check=True, capture_output=True)
    cli(parity_bin, "compare", os.path.join(out, "golden.npz"), os.path.join(out, "target.safetensors"),
        "--json", os.path.join(out, "compare.json"), "--html", os.path.join(out, "compare.html"))
    golden, target = os.path.join(out, "train", "golden"), os.path.join(out, "train", "target")
    capture(golden, torch.float32)
    capture(target, torch.bfloat16)
    cli(parity_bin, "compare", golden, target, "--json", os.path.join(out, "train-compare.json"))
    cli(parity_bin, "curve", golden, target, "--json", os.path.join(out, "train-curve.json"))
    report = os.path.join(out, "report.html")
    cli(parity_bin, "report", os.path.join(out, "compare.json"), os.path.join(out, "train-compare.json"),
        os.path.join(out, "train-curve.json"), "-o", report, ok=(0,))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
