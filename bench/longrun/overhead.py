"""Capture overhead on the long-run example (issue 30 acceptance: optimizer states, statistics mode, every step,
side by side with no capture): interleaved rounds of the same training run under four settings, the ratio of each
round's time to the uncaptured run of the same round, medians and ranges; and the dump's bytes per step.

    python -m bench.longrun.overhead [--steps 100] [--rounds 5] [--out DIR]

Settings: `none` (no capture), `module` (module-level statistics of every step, no optimizer), `optimizer` (+ the
optimizer states, lr and clipping), `update` (+ the updates). Training time only (train.run's clock: model built and
capture started before it; the capture's stop, which drains the writer, inside it).
"""
import argparse
import os
import shutil
import statistics
import sys

from . import train

SETTINGS = ("none", "module", "optimizer", "update")


def one(setting, steps, out):
    """Seconds of one run under `setting`, and its dump's bytes (0 without capture)."""
    run_dir = os.path.join(out, setting)
    shutil.rmtree(run_dir, ignore_errors=True)
    if setting == "none":
        return train.run("baseline", steps)[1], 0
    secs = train.run("baseline", steps, run_dir, optimizer=setting != "module", update=setting == "update")[1]
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(run_dir) for f in fs)
    return secs, size


def measure(steps, rounds, out):
    times = {s: [] for s in SETTINGS}
    sizes = {}
    for _ in range(rounds):
        for s in SETTINGS:  # interleaved: each round runs every setting once, in the same order
            secs, size = one(s, steps, out)
            times[s].append(secs)
            sizes[s] = size
    return times, sizes


def report(times, sizes, steps):
    lines = ["| setting | step time, median (range) | ratio to none, median (range) | dump bytes per step |",
             "|---|---|---|---:|"]
    for s in SETTINGS:
        ratios = [t / n for t, n in zip(times[s], times["none"])]
        lines.append("| {} | {:.2f} ms ({:.2f}–{:.2f}) | {:.2f}× ({:.2f}–{:.2f}) | {} |".format(
            s, 1e3 * statistics.median(times[s]) / steps, 1e3 * min(times[s]) / steps, 1e3 * max(times[s]) / steps,
            statistics.median(ratios), min(ratios), max(ratios), "{:,}".format(sizes[s] // steps) if sizes[s] else "-"))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="/tmp/parity-longrun-overhead")
    a = ap.parse_args(argv)
    times, sizes = measure(a.steps, a.rounds, a.out)
    print(report(times, sizes, a.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
