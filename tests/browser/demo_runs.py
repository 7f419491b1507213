"""Writes the runs and the report of the demo the way `make demo` does, for the browser test:
a tiny Llama trained a few steps in fp32 (golden) and bf16 (target) under parity.capture, then
`parity compare --json`, `parity curve --json` and `parity report` with the real binary.

    /usr/bin/python3 tests/browser/demo_runs.py OUT_DIR [PARITY_BIN]

Prints the path of OUT_DIR/report.html. Exit status: 0, or that of the first command that failed."""
import os
import subprocess
import sys

import torch

import parity
from parity.examples import SyntheticCorpus, build_model, train

STEPS = 6          # trained steps: enough for a loss curve
CAPTURED = (0, 1)  # captured steps: two, so the report draws layers x steps


def run(path, dtype):
    torch.manual_seed(0)
    model = build_model("llama", "tiny").to(dtype)
    with parity.capture(model, path, level="module", mode="tensor", steps=CAPTURED) as cap:
        train(model, SyntheticCorpus(64, 1 << 13), steps=STEPS, capture=cap)


def main():
    out = sys.argv[1]
    parity_bin = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("PARITY_BIN", "parity")
    os.makedirs(out, exist_ok=True)
    golden, target = os.path.join(out, "golden"), os.path.join(out, "target")
    run(golden, torch.float32)
    run(target, torch.bfloat16)
    cmp_json, curve_json = os.path.join(out, "compare.json"), os.path.join(out, "curve.json")
    # compare and curve exit 1 when they find differences (they will: bf16 vs fp32); 2+ is a failure.
    for args in (["compare", golden, target, "--json", cmp_json], ["curve", golden, target, "--json", curve_json]):
        p = subprocess.run([parity_bin, "--color", "never", *args], capture_output=True, text=True)
        if p.returncode not in (0, 1):
            sys.stderr.write("parity {} failed ({}):\n{}{}".format(" ".join(args), p.returncode, p.stdout, p.stderr))
            return p.returncode
    report = os.path.join(out, "report.html")
    p = subprocess.run([parity_bin, "report", cmp_json, curve_json, "-o", report], capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write("parity report failed ({}):\n{}{}".format(p.returncode, p.stdout, p.stderr))
        return p.returncode
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
