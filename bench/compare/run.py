"""`parity compare` side by side with msprobe's `compare` on msprobe's own dumps (issue 34 item 3).

    python -m bench.compare.run --build build [--data DIR] [--rounds 3] [--keep] [--cases tensor-mix,...]

1. Dumps, untimed, each in its own process (bench/compare/make_dumps.py; msprobe patches torch globally):
   one training step of the issue's model (6-block Llama-style transformer, d = 512, batch 4 x 128, CPU,
   fp32) on a golden side and on a target side with one fault in block 1, by msprobe's PrecisionDebugger
   (statistics and tensor, L0 = module and mix level) and by parity.capture (statistics and tensor, module
   and op level) of the same runs.
2. Timing, page cache warm (one untimed run of every contender first; the dumps were just written): per
   msprobe pair, `msprobe compare -tp TARGET -gp GOLDEN -o OUT` (the command its users run) and
   `parity compare GOLDEN TARGET` in turn, `--rounds` times, plus read-and-sum (bench/readsum_bench, both
   dumps' files memory-mapped and every word added) of tensor pairs; per parity pair, parity compare and
   read-and-sum. Wall and CPU seconds from bench/tools/timed.py; medians, ranges, and the median and range
   of the pairwise ratios msprobe / parity (each pair ran back to back).
3. What each tool found: parity's first divergence (compare --json) and msprobe's first row whose Result is
   not "pass" (its CSV, in its order) — both should lie in block 1.
Prints a table (and --markdown FILE writes it); the dumps are deleted unless --keep.
"""
import argparse
import csv
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
TIMED = os.path.join(SRC, "bench", "tools", "timed.py")

# (case name, tool, task, level): every dump pair the bench makes and compares.
CASES = [
    ("msprobe statistics L0", "msprobe", "statistics", "L0"),
    ("msprobe statistics mix", "msprobe", "statistics", "mix"),
    ("msprobe tensor L0", "msprobe", "tensor", "L0"),
    ("msprobe tensor mix", "msprobe", "tensor", "mix"),
    ("parity statistics module", "parity", "statistics", "module"),
    ("parity statistics op", "parity", "statistics", "op"),
    ("parity tensor module", "parity", "tensor", "module"),
    ("parity tensor op", "parity", "tensor", "op"),
]


def slug(case):
    return case.replace(" ", "_")


def msprobe_cmd(python):
    """msprobe's command line as its console script runs it (msprobe.msprobe:main), in the venv's Python."""
    return [python, "-c", "import sys; from msprobe.msprobe import main; sys.argv[0] = 'msprobe'; sys.exit(main())"]


def make_dump(python, build, out, side, tool, task, level):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(SRC, "python"), os.path.join(build, "python")]))
    cmd = [python, os.path.join(HERE, "make_dumps.py"), out, "--side", side, "--tool", tool, "--task", task,
           "--level", level]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=os.path.dirname(out))
    if p.returncode != 0:
        raise SystemExit("bench/compare: dump failed: " + " ".join(cmd) + "\n" + p.stdout[-2000:] + p.stderr[-2000:])


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def data_root(path):
    """The folder holding a dump's files: msprobe's step0/proc<pid> (one per dump), else the dump itself."""
    procs = glob.glob(os.path.join(path, "step0", "*"))
    return procs[0] if len(procs) == 1 and os.path.isdir(procs[0]) else path


def timed(cmd, log, cwd=None):
    """(wall, cpu) seconds of one run of cmd; exit status >= 2 of parity (1 = differences found) fails."""
    p = subprocess.run([sys.executable, TIMED, log] + cmd, capture_output=True, text=True, cwd=cwd)
    if p.returncode >= 2:
        raise SystemExit("bench/compare: failed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), open(log).read()[-3000:]))
    wall, cpu, _ = p.stdout.split()
    return float(wall), float(cpu)


class Contenders:
    """The commands compared on one dump pair: name -> (argv, cwd)."""

    def __init__(self, args, pair_dir, tool, task):
        g, t = os.path.join(pair_dir, "golden"), os.path.join(pair_dir, "target")
        self.cmds = {"parity": ([args.parity, "compare", g, t], None)}
        if tool == "msprobe":
            out = os.path.join(pair_dir, "msprobe_out")
            self.cmds["msprobe"] = (args.msprobe + ["compare", "-tp", os.path.join(t, "step0"), "-gp",
                                     os.path.join(g, "step0"), "-o", out], pair_dir)
        if task == "tensor":
            self.cmds["readsum"] = ([args.readsum, data_root(g), data_root(t)], None)
        self.pair_dir = pair_dir

    def run(self, name):
        argv, cwd = self.cmds[name]
        if name == "msprobe":
            shutil.rmtree(argv[-1], ignore_errors=True)
        return timed(argv, os.path.join(self.pair_dir, "log." + name), cwd)


def time_case(args, pair_dir, tool, task):
    """{contender: [(wall, cpu) per round]}, the contenders run in turn every round after one warm-up."""
    c = Contenders(args, pair_dir, tool, task)
    for name in c.cmds:
        c.run(name)
    times = {name: [] for name in c.cmds}
    for _ in range(args.rounds):
        for name in c.cmds:
            times[name].append(c.run(name))
    return times


def parity_first_divergence(args, pair_dir):
    out = os.path.join(pair_dir, "parity.json")
    subprocess.run([args.parity, "compare", os.path.join(pair_dir, "golden"), os.path.join(pair_dir, "target"),
                    "-q", "--json", out], capture_output=True)
    j = json.load(open(out))
    fd = j.get("first_divergence") or {}
    s = j["summary"]
    return fd.get("name", "none"), "%d rows, %d not pass" % (s["rows"], s["rows"] - s["pass"])


def msprobe_first_bad(pair_dir):
    files = glob.glob(os.path.join(pair_dir, "msprobe_out", "compare_result_*.csv"))
    if not files:
        return "no result file", ""
    rows = list(csv.DictReader(open(files[0], newline="")))
    bad = [r for r in rows if r.get("Result", "pass").lower() not in ("pass", "")]
    return (bad[0]["NPU Name"] if bad else "none"), "%d rows, %d not pass" % (len(rows), len(bad))


def med_range(xs, fmt="%.3f"):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(xs), min(xs), max(xs))


def summarise(case, nbytes, times, found):
    """One markdown row per contender of a case, ratios against parity of the same round."""
    rows = []
    pw = [w for w, _ in times["parity"]]
    pc = [c for _, c in times["parity"]]
    for name, ts in times.items():
        walls, cpus = [w for w, _ in ts], [c for _, c in ts]
        if name == "parity":
            rel = "1"
        else:  # msprobe: how many times parity's time; readsum: parity's share of the floor
            ratios = [w / p for w, p in zip(walls, pw)] if name == "msprobe" else [100 * w / p for w, p in zip(walls, pw)]
            rel = (med_range(ratios, "%.1f") + ("x" if name == "msprobe" else " % of read-and-sum's rate"))
        rows.append("| %s | %s | %.1f MB | %s | %s | %s | %s |" % (
            case, name, nbytes / 1e6, med_range(walls), med_range(cpus), rel, found.get(name, "")))
    return rows


def run_case(args, case, tool, task, level):
    pair_dir = os.path.join(args.data, slug(case))
    if not os.path.isdir(os.path.join(pair_dir, "target")):
        os.makedirs(pair_dir, exist_ok=True)
        for side in ("golden", "target"):
            make_dump(args.python, args.build, os.path.join(pair_dir, side), side, tool, task, level)
    nbytes = dir_bytes(os.path.join(pair_dir, "golden")) + dir_bytes(os.path.join(pair_dir, "target"))
    times = time_case(args, pair_dir, tool, task)
    found = {"parity": "first divergence %s; %s" % parity_first_divergence(args, pair_dir)}
    if tool == "msprobe":
        found["msprobe"] = "first not-pass row %s; %s" % msprobe_first_bad(pair_dir)
    return summarise(case, nbytes, times, found)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--data", default=None, help="where the dumps go (default BUILD/bench-data/compare-msprobe)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the dumps (and reuse kept ones)")
    ap.add_argument("--cases", default="", help="comma-separated case slugs (default: all)")
    ap.add_argument("--python", default=os.environ.get("PARITY_VENV_PYTHON", os.path.join(SRC, ".venv", "bin", "python")))
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.data = os.path.abspath(args.data or os.path.join(args.build, "bench-data", "compare-msprobe"))
    args.parity = os.path.join(args.build, "parity")
    args.readsum = os.path.join(args.build, "bench", "readsum_bench")
    args.msprobe = msprobe_cmd(args.python)
    wanted = set(filter(None, args.cases.split(",")))
    print("machine: %d cores, load %s; %s" % (os.cpu_count(), open("/proc/loadavg").read().split(" ", 3)[:3],
                                               time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())), flush=True)
    lines = ["| case | contender | dump bytes (both sides) | wall s, median (range) | CPU s, median (range) "
             "| against parity, pairwise (same round) | found |", "|---|---|---:|---:|---:|---:|---|"]
    try:
        for case, tool, task, level in CASES:
            if wanted and slug(case) not in wanted:
                continue
            rows = run_case(args, case, tool, task, level)
            print("\n".join(rows), flush=True)
            lines += rows
    finally:
        if not args.keep:
            shutil.rmtree(args.data, ignore_errors=True)
    print("load at the end: %s" % open("/proc/loadavg").read().split(" ", 3)[:3])
    print("\n".join(lines))
    if args.markdown:
        open(args.markdown, "w").write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
