#!/usr/bin/env python3
"""Runs the libFuzzer harnesses built in BUILD/fuzz/ (`make fuzz`, docs/fuzzing.md).

Two ways to decide how long a harness runs:
  --seconds S            each harness S seconds (`make fuzz FUZZ_SECONDS=S`);
  --until-plateau        each harness until its coverage stops growing: at least --min-seconds, and then
                         until no new edge was found in the last --quiet-share (30 %) of the run, or
                         --max-seconds at most (`make fuzz-campaign`).
Harnesses run --jobs at a time, each as one libFuzzer process on one core (`make fuzz JOBS=16`).

Each harness gets the input size its format needs (-max_len: npy headers up to 64 KB, JSON up to 1 MB)
and a dictionary of its format's tokens (fuzz/dict/), which the byte-level mutations would not find.
The corpus BUILD/fuzz-corpus/<h>/ is kept: a later run resumes from it. The checked-in seeds
(fuzz/corpus/<h>/) are read, never written. Crash, leak, timeout and out-of-memory inputs go to
BUILD/fuzz-artifacts/<h>/; each harness's libFuzzer output, each line stamped with the seconds since its
start, to BUILD/fuzz-logs/<h>.log. The summary (per harness: executions, edges, features, when the last
edge was found, whether the plateau was reached, peak RSS, findings) is printed and written as Markdown
to BUILD/fuzz-logs/summary.md. Exit status 1 when any harness found something.

Standard library only: `make fuzz` runs it with the system python3 on a fresh machine.
"""
import argparse
import concurrent.futures
import dataclasses
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
KB, MB = 1 << 10, 1 << 20

# harness -> (max_len, dictionaries merged from fuzz/dict/). Sizes: what the format's nested parts need
# to reach the readers' depth and size limits (64-level npy containers in a header of up to 64 KB, 512-level
# JSON, 8 KB log lines), not libFuzzer's default of 4,096 bytes that could never build them (issue 33).
HARNESSES = {
    "npy": (128 * KB, ["npy"]),
    "npz": (128 * KB, ["npy"]),
    "safetensors": (128 * KB, ["json", "safetensors"]),
    "pt": (64 * KB, []),
    "dump": (1 * MB, ["json", "dump"]),
    "msprobe": (1 * MB, ["json", "msprobe"]),
    "tensorboard": (64 * KB, ["tensorboard"]),
    "trainer_state": (1 * MB, ["json", "trainer_state"]),
    "jsonl": (1 * MB, ["json", "trainer_state"]),
    "csv": (64 * KB, ["csv"]),
    "textlog": (64 * KB, ["textlog"]),
    "logits": (64 * KB, ["json"]),
    "lmeval": (1 * MB, ["json", "lmeval"]),
    "mc": (1 * MB, ["json", "lmeval"]),
    "thresholds": (64 * KB, ["json"]),
    "map": (16 * KB, []),
}

COV = re.compile(rb"\bcov: (\d+)")
FT = re.compile(rb"\bft: (\d+)")
EXECS = re.compile(rb"^#(\d+)")


@dataclasses.dataclass
class Outcome:
    harness: str
    seconds: float = 0.0
    executions: int = 0
    edges: int = 0
    features: int = 0
    initial_edges: int = 0        # after loading the corpus (libFuzzer's INITED line)
    last_new_edge_at: float = 0.0  # seconds since the start
    plateau: bool = False
    rss_mb: int = 0
    finding: str = ""


def merged_dictionary(build, harness, names):
    """The harness's dictionaries in one file (libFuzzer takes one -dict)."""
    if not names:
        return None
    out = build / "fuzz-dicts" / f"{harness}.dict"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join((HERE / "dict" / f"{n}.dict").read_text() for n in names))
    return out


def command(build, harness, max_seconds):
    max_len, dicts = HARNESSES.get(harness, (0, []))
    corpus, artifacts = build / "fuzz-corpus" / harness, build / "fuzz-artifacts" / harness
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    cmd = [str(build / "fuzz" / f"fuzz_{harness}"), f"-max_total_time={max_seconds}", "-timeout=1",
           "-rss_limit_mb=2048", "-print_final_stats=1", "-handle_usr1=1", f"-artifact_prefix={artifacts}/"]
    if max_len:
        cmd.append(f"-max_len={max_len}")
    d = merged_dictionary(build, harness, dicts)
    if d:
        cmd.append(f"-dict={d}")
    return cmd + [str(corpus), str(HERE / "corpus" / harness)], artifacts


def fuzz_one(build, harness, args):
    """One harness, one process: its output stamped and parsed as it comes; stopped (SIGUSR1: libFuzzer's
    graceful exit, final statistics printed) once the plateau rule holds."""
    max_seconds = args.max_seconds if args.until_plateau else args.seconds
    cmd, artifacts = command(build, harness, max_seconds)
    before = {p.name for p in artifacts.iterdir()}
    out = Outcome(harness)
    log_path = build / "fuzz-logs" / f"{harness}.log"
    start = time.monotonic()
    env = dict(os.environ, OMP_NUM_THREADS="1")  # readers use OpenMP for large tensors only
    with open(log_path, "wb") as log:
        log.write(b"# " + " ".join(cmd).encode() + b"\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        lock = threading.Lock()

        def read():
            for line in proc.stderr:
                now = time.monotonic() - start
                with lock:
                    log.write(b"%9.1f " % now + line)
                    parse_line(out, line, now)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        stopped = False
        while proc.poll() is None:
            time.sleep(1)
            elapsed = time.monotonic() - start
            with lock:
                quiet = elapsed - out.last_new_edge_at
            if (args.until_plateau and not stopped and elapsed >= args.min_seconds
                    and quiet >= args.quiet_share * elapsed):
                out.plateau = True
                stopped = True
                proc.send_signal(signal.SIGUSR1)
        reader.join()
        rc = proc.returncode
    out.seconds = time.monotonic() - start
    new = sorted({p.name for p in artifacts.iterdir()} - before)
    if rc not in (0, None) or new:
        out.finding = f"rc {rc}: {' '.join(new)[:300]} (see {log_path})"
    return out


def parse_line(out, line, now):
    m = COV.search(line)
    if m:
        edges = int(m.group(1))
        if b"INITED" in line:
            out.initial_edges = edges
            out.last_new_edge_at = now
        elif edges > out.edges:
            out.last_new_edge_at = now
        out.edges = max(out.edges, edges)
    m = FT.search(line)
    if m:
        out.features = max(out.features, int(m.group(1)))
    m = EXECS.match(line)
    if m:
        out.executions = max(out.executions, int(m.group(1)))
    for key, attr in ((b"stat::number_of_executed_units:", "executions"), (b"stat::peak_rss_mb:", "rss_mb")):
        if line.startswith(key):
            setattr(out, attr, int(line.split()[-1]))


def summary(outcomes, args):
    rule = (f"until no new edge in the last {args.quiet_share:.0%} of the run (at least {args.min_seconds} s, "
            f"at most {args.max_seconds} s)" if args.until_plateau else f"{args.seconds} s each")
    lines = [f"Each harness {rule}, {args.jobs} at a time.", "",
             "| harness | seconds | executions | edges (after corpus load → end) | features | last new edge at | "
             "plateau reached | peak RSS MB | findings |",
             "|---|---:|---:|---|---:|---:|---|---:|---|"]
    for o in outcomes:
        lines.append(f"| `{o.harness}` | {o.seconds:.0f} | {o.executions:,} | {o.initial_edges} → {o.edges} | "
                     f"{o.features} | {o.last_new_edge_at:.0f} s | {'yes' if o.plateau else 'no'} | {o.rss_mb} | "
                     f"{o.finding or 'none'} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build", type=pathlib.Path, help="the fuzz build folder (build-fuzz)")
    p.add_argument("harnesses", nargs="*", help="default: every harness built")
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--until-plateau", action="store_true")
    p.add_argument("--min-seconds", type=int, default=120)
    p.add_argument("--max-seconds", type=int, default=1200)
    p.add_argument("--quiet-share", type=float, default=0.3)
    p.add_argument("--jobs", type=int, default=1)
    args = p.parse_intermixed_args()
    build = args.build.resolve()
    harnesses = args.harnesses or sorted(b.name[len("fuzz_"):] for b in (build / "fuzz").glob("fuzz_*"))
    if not harnesses or not all((build / "fuzz" / f"fuzz_{h}").exists() for h in harnesses):
        sys.exit(f"no harness built in {build}/fuzz for {harnesses or 'any'} (make fuzz)")
    (build / "fuzz-logs").mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(fuzz_one, build, h, args) for h in harnesses]
        outcomes = []
        for f in concurrent.futures.as_completed(futures):
            o = f.result()
            outcomes.append(o)
            print(f"{o.harness}: {o.executions:,} executions, {o.edges} edges, last new edge at "
                  f"{o.last_new_edge_at:.0f} s of {o.seconds:.0f} s, {o.finding or 'nothing found'}", flush=True)
    outcomes.sort(key=lambda o: harnesses.index(o.harness))
    text = summary(outcomes, args)
    (build / "fuzz-logs" / "summary.md").write_text(text)
    print("\n" + text)
    sys.exit(1 if any(o.finding for o in outcomes) else 0)


if __name__ == "__main__":
    main()
