#!/usr/bin/python3
"""Fallback for bench/compare_bench.sh while no `parity compare` executable is built: the same file
pairs as bench/baseline_numpy.py (same readers: numpy memory maps), compared by the C++ kernel through
_parity_core.compare_arrays. Prints "binding: <pairs> pairs, <bytes> input bytes, <seconds> s"."""
import sys
import time

import _parity_core as core
import baseline_numpy as ref


def main(argv):
    gfiles, tfiles = ref.list_files(argv[1]), ref.list_files(argv[2])
    start = time.perf_counter()
    pairs = nbytes = 0
    for rel in sorted(gfiles):
        if rel not in tfiles:
            continue
        gt, tt = ref.read_tensors(gfiles[rel]), ref.read_tensors(tfiles[rel])
        for name, (g, gname) in gt.items():
            if name in tt:
                t, tname = tt[name]
                core.compare_arrays(g, t, golden_dtype=gname, target_dtype=tname)
                pairs += 1
                nbytes += g.nbytes + t.nbytes
    print(f"binding: {pairs} pairs, {nbytes} input bytes, {time.perf_counter() - start:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
