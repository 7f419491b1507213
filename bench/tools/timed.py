#!/usr/bin/env python3
"""Runs a command and prints "<wall> <cpu> <peak_kib>": seconds to the microsecond, peak RSS in KiB.

    timed.py OUTPUT_FILE CMD [ARG...]

The command's stdout and stderr go to OUTPUT_FILE; cpu is the user + system time of the command and of
every process it waited for, peak_kib the largest resident set among them (os.wait4's resource usage).
Exits with the command's status. Used by compare_bench.sh and paired_time.sh instead of /usr/bin/time,
whose 10 ms resolution is a third of read-and-sum's time on the bf16 pair.
"""
import os
import subprocess
import sys
import time


def main() -> int:
    if len(sys.argv) < 3:
        print("usage: timed.py OUTPUT_FILE CMD [ARG...]", file=sys.stderr)
        return 2
    with open(sys.argv[1], "wb") as out:
        start = time.perf_counter()
        child = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    print(f"{wall:.6f} {usage.ru_utime + usage.ru_stime:.6f} {usage.ru_maxrss}")
    return child.returncode if child.returncode >= 0 else 128 - child.returncode


if __name__ == "__main__":
    sys.exit(main())
