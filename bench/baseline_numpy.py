#!/usr/bin/python3
"""parity's metric set in plain vectorised numpy (fp64): the benchmark baseline and the independent
reference that tests/python/test_metrics_reference.py checks the C++ kernel against.

Definitions are those of docs/metrics.md; this file is written from them, not from the C++ code
(for instance the ULP uses np.frexp where the kernel builds 1/ulp from exponent bits).

As a library:  metrics(golden, target, kl=False, golden_dtype=None, target_dtype=None, exact=False)
  golden/target: numpy arrays; *_dtype reinterprets their bits ("bf16" over uint16, "f8_e4m3" over
  uint8, ...). exact=True uses math.fsum for every sum (slow; for tests on small arrays), otherwise
  the arrays are processed in chunks of 4 Mi elements with numpy's pairwise sums, which is what an
  engineer would write to compare multi-GiB tensors without running out of memory.

As a program:  baseline_numpy.py GOLDEN TARGET   (files .npy/.safetensors, or two directories)
  compares every tensor pair and prints one line "numpy: <pairs> pairs, <bytes> input bytes,
  <seconds> s" (the time excludes interpreter start-up and imports).
"""
import json
import math
import os
import sys
import time

import numpy as np

EPS64 = np.finfo(np.float64).eps  # msprobe's epsilon on float64 copies

# name: (mantissa bits, smallest normal, smallest subnormal)
FORMATS = {
    "f64": (52, 2.0 ** -1022, 2.0 ** -1074),
    "f32": (23, 2.0 ** -126, 2.0 ** -149),
    "f16": (10, 2.0 ** -14, 2.0 ** -24),
    "bf16": (7, 2.0 ** -126, 2.0 ** -133),
    "f8_e4m3": (3, 2.0 ** -6, 2.0 ** -9),
    "f8_e5m2": (2, 2.0 ** -14, 2.0 ** -16),
}
INTEGER_DTYPES = {"i8", "i16", "i32", "i64", "u8", "bool"}
NUMPY_NAMES = {"float64": "f64", "float32": "f32", "float16": "f16", "int8": "i8", "int16": "i16",
               "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "bool"}
CHUNK = 1 << 22


def _fp8_table(exp_bits, man_bits, bias, e4m3fn):
    codes = np.arange(256, dtype=np.int64)
    sign = np.where(codes >> 7, -1.0, 1.0)
    e = (codes >> man_bits) & ((1 << exp_bits) - 1)
    m = codes & ((1 << man_bits) - 1)
    normal = np.ldexp(1.0 + m / 2.0 ** man_bits, (e - bias).astype(np.int32))
    sub = np.ldexp(m.astype(np.float64), 1 - bias - man_bits)
    v = sign * np.where(e == 0, sub, normal)
    top = (1 << exp_bits) - 1
    if e4m3fn:
        v[(e == top) & (m == (1 << man_bits) - 1)] = np.nan
    else:
        v[(e == top) & (m == 0)] = sign[(e == top) & (m == 0)] * np.inf
        v[(e == top) & (m != 0)] = np.nan
    return v


FP8_TABLES = {"f8_e4m3": _fp8_table(4, 3, 7, True), "f8_e5m2": _fp8_table(5, 2, 15, False)}


def dtype_name(arr, override=None):
    if override is not None:
        return override
    name = NUMPY_NAMES.get(arr.dtype.name)
    if name is None:
        raise TypeError(f"numpy dtype {arr.dtype} has no parity dtype")
    return name


def to_f64(arr, name):
    """The values of `arr` (whose bits hold parity dtype `name`) as a flat float64 array."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    if name == "bf16":
        return (flat.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if name == "f16":
        return flat.view(np.float16).astype(np.float64)
    if name in FP8_TABLES:
        return FP8_TABLES[name][flat.view(np.uint8)]
    return flat.astype(np.float64)


def ulp_in(name, g, exact=True):
    """ulp_at(target dtype, g): 2^(floor(log2|g|) - m) for |g| >= smallest normal, else the smallest
    subnormal; 1 for integer dtypes. exact=True derives it with np.frexp/np.ldexp (independent of the
    kernel's method); otherwise with the fast vectorised form, the power of two of |g| (its exponent
    bits) times 2^-m."""
    if name in INTEGER_DTYPES:
        return np.ones_like(g)
    m, min_normal, min_sub = FORMATS[name]
    a = np.abs(g)
    if exact:
        _, e = np.frexp(a)
        ulp = np.ldexp(1.0, (e - 1 - m).astype(np.int32))
    else:
        ulp = (a.view(np.int64) & 0x7FF0000000000000).view(np.float64) * 2.0 ** -m
    return np.where(a < min_normal, min_sub, ulp)


def _cls(x):
    c = np.zeros(x.shape, np.int8)
    c[np.isnan(x)] = 1
    c[x == np.inf] = 2
    c[x == -np.inf] = 3
    return c


class _Acc:
    """Running totals over chunks; sums either numpy-pairwise per chunk or exact (fsum)."""

    def __init__(self, exact):
        self.exact = exact
        self.sums = {}
        self.counts = {}
        self.maxes = {}

    def add(self, key, values):
        if self.exact:
            self.sums.setdefault(key, []).append(math.fsum(values.tolist()))
        else:
            self.sums.setdefault(key, []).append(float(np.sum(values)))

    def total(self, key):
        parts = self.sums.get(key, [])
        return math.fsum(parts) if self.exact else float(sum(parts))

    def count(self, key, n):
        self.counts[key] = self.counts.get(key, 0) + int(n)

    def argmax(self, key, values, index):
        if values.size == 0:
            return
        i = int(np.argmax(values))
        v = float(values[i])
        best = self.maxes.get(key)
        if best is None or v > best[0]:
            self.maxes[key] = (v, int(index[i]))


def _side_chunk(acc, side, x, min_normal_t):
    fin = np.isfinite(x)
    xf = x[fin]
    acc.count(side + "finite", xf.size)
    acc.count(side + "pinf", np.count_nonzero(x == np.inf))
    acc.count(side + "ninf", np.count_nonzero(x == -np.inf))
    acc.count(side + "zero", np.count_nonzero(x == 0))
    acc.count(side + "sub", np.count_nonzero((x != 0) & (np.abs(x) < min_normal_t)))
    if xf.size:
        acc.add(side + "sum", xf)
        acc.add(side + "sumsq", xf * xf)
        lo, hi = float(xf.min()), float(xf.max())
        acc.maxes[side + "min"] = min(acc.maxes.get(side + "min", np.inf), lo)
        acc.maxes[side + "max"] = max(acc.maxes.get(side + "max", -np.inf), hi)
        if acc.exact:
            acc.sums.setdefault(side + "values", []).append(xf)  # exact two-pass over all values at the end
        else:
            # (n, mean, M2) per chunk, combined with Chan, Golub & LeVeque's update in _side_result.
            mean = float(np.mean(xf))
            acc.sums.setdefault(side + "nm", []).append((xf.size, mean, float(np.sum((xf - mean) ** 2))))


def _side_result(acc, side, numel):
    fin = acc.counts.get(side + "finite", 0)
    pinf, ninf = acc.counts.get(side + "pinf", 0), acc.counts.get(side + "ninf", 0)
    out = {"nan_count": numel - fin - pinf - ninf, "pinf_count": pinf, "ninf_count": ninf,
           "zero_count": acc.counts.get(side + "zero", 0), "subnormal_count": acc.counts.get(side + "sub", 0)}
    nan = float("nan")
    if fin == 0:
        out.update(min=nan, max=nan, mean=nan, l2norm=nan, std=nan, absmax=nan)
        return out
    lo, hi = acc.maxes[side + "min"], acc.maxes[side + "max"]
    if acc.exact:
        xf = np.concatenate(acc.sums[side + "values"])
        mean = math.fsum(xf.tolist()) / fin
        m2 = math.fsum(((xf - mean) ** 2).tolist())
    else:
        n_a, mean, m2 = 0, 0.0, 0.0
        for n_b, mean_b, m2_b in acc.sums[side + "nm"]:
            n = n_a + n_b
            delta = mean_b - mean
            mean += delta * n_b / n
            m2 += m2_b + delta * delta * n_a * n_b / n
            n_a = n
    out.update(min=lo, max=hi, mean=mean, l2norm=math.sqrt(acc.total(side + "sumsq")), std=math.sqrt(m2 / fin),
               absmax=max(abs(lo), abs(hi)))
    return out


def softmax_kl(g, t, shape):
    """Mean over rows (last dimension) of KL(softmax(g) || softmax(t)); rows with NaN/+Inf on either
    side, or all -Inf on either side, are skipped. Returns (kl, rows used, rows skipped)."""
    if g.size == 0:
        return float("nan"), 0, 0
    cols = shape[-1] if len(shape) else g.size
    g2, t2 = g.reshape(-1, cols), t.reshape(-1, cols)
    bad = (np.isnan(g2) | np.isnan(t2) | (g2 == np.inf) | (t2 == np.inf)).any(axis=1)
    bad |= (g2 == -np.inf).all(axis=1) | (t2 == -np.inf).all(axis=1)
    g2, t2 = g2[~bad], t2[~bad]
    if g2.shape[0] == 0:
        return float("nan"), 0, int(bad.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        gs = g2 - g2.max(axis=1, keepdims=True)
        ts = t2 - t2.max(axis=1, keepdims=True)
        logp = gs - np.log(np.exp(gs).sum(axis=1, keepdims=True))
        logq = ts - np.log(np.exp(ts).sum(axis=1, keepdims=True))
        p = np.exp(logp)
        terms = np.where(g2 == -np.inf, 0.0, p * (logp - logq))
    rows = terms.sum(axis=1)
    return float(rows.mean()), int(rows.size), int(bad.sum())


def metrics(golden, target, kl=False, golden_dtype=None, target_dtype=None, exact=False, chunk=CHUNK):
    # Overflow to Inf (squares of huge fp64 values) and 0/0 are part of the definitions, not errors.
    with np.errstate(all="ignore"):
        return _metrics(golden, target, kl, golden_dtype, target_dtype, exact, chunk)


def _metrics(golden, target, kl, golden_dtype, target_dtype, exact, chunk):
    gname, tname = dtype_name(golden, golden_dtype), dtype_name(target, target_dtype)
    if golden.size != target.size:
        raise ValueError(f"element counts differ: golden has {golden.size}, target has {target.size}")
    numel = golden.size
    gflat, tflat = np.ascontiguousarray(golden).reshape(-1), np.ascontiguousarray(target).reshape(-1)
    min_normal_t = 0.0 if tname in INTEGER_DTYPES else FORMATS[tname][1]
    tiny = min_normal_t
    acc = _Acc(exact)
    step = numel if exact else chunk
    for begin in range(0, numel, max(step, 1)):
        g = to_f64(gflat[begin:begin + step], gname)
        t = to_f64(tflat[begin:begin + step], tname)
        cg, ct = _cls(g), _cls(t)
        acc.count("mismatch", np.count_nonzero(((cg | ct) != 0) & (cg != ct)))
        both = (cg == 0) & (ct == 0)
        index = np.flatnonzero(both) + begin
        gc, tc = g[both], t[both]
        acc.count("both", gc.size)
        d = tc - gc
        ad = np.abs(d)
        acc.add("d2", d * d)
        acc.add("ad", ad)
        acc.add("tg", tc * gc)
        acc.add("gg", gc * gc)
        acc.add("tt", tc * tc)
        acc.argmax("ad", ad, index)
        with np.errstate(divide="ignore", invalid="ignore"):
            gz = gc == 0
            nb = np.where(gz, gc + EPS64, gc)
            nn = np.where(gz, tc + EPS64, tc)
            rel = np.abs((nn - nb) / nb)  # msprobe get_relative_err on float64 copies
        acc.argmax("rel", rel, index)
        acc.count("r3", np.count_nonzero(rel < 0.001))
        acc.count("r53", np.count_nonzero(rel < 0.005))
        acc.count("a6", np.count_nonzero(ad > 1e-6))
        acc.count("a4", np.count_nonzero(ad > 1e-4))
        acc.count("a2", np.count_nonzero(ad > 1e-2))
        ue = ad / ulp_in(tname, gc, exact)
        acc.add("ulp", ue)
        if ue.size:
            acc.maxes["ulpmax"] = max(acc.maxes.get("ulpmax", 0.0), float(ue.max()))
        acc.count("ulp1", np.count_nonzero(ue > 1))
        acc.count("ftz", np.count_nonzero((gc != 0) & (np.abs(gc) < tiny) & (tc == 0)))
        _side_chunk(acc, "g", g, min_normal_t)
        _side_chunk(acc, "t", t, min_normal_t)

    nan = float("nan")
    n = acc.counts.get("both", 0)
    out = {"numel": numel, "compared": n, "nonfinite_mismatch": acc.counts.get("mismatch", 0),
           "ftz_count": acc.counts.get("ftz", 0)}
    out["nonfinite_agree"] = out["nonfinite_mismatch"] == 0
    out["golden_stats"] = _side_result(acc, "g", numel)  # the keys of parity.compare/1 rows[].metrics
    out["target_stats"] = _side_result(acc, "t", numel)
    keys = ["cosine", "euclidean", "rel_l2", "rmse", "sqnr_db", "max_abs", "mean_abs", "max_rel", "thousandth_ratio",
            "five_thousandth_ratio", "frac_abs_gt_1e6", "frac_abs_gt_1e4", "frac_abs_gt_1e2", "ulp_max", "ulp_mean",
            "frac_ulp_gt1"]
    out.update({k: nan for k in keys})
    out["max_abs_index"] = out["max_rel_index"] = -1
    if n:
        d2, gg, tt, tg = acc.total("d2"), acc.total("gg"), acc.total("tt"), acc.total("tg")
        out["euclidean"] = math.sqrt(d2)
        out["rmse"] = math.sqrt(d2 / n)
        out["rel_l2"] = math.sqrt(d2) / math.sqrt(gg) if gg > 0 else (0.0 if d2 == 0 else nan)
        out["sqnr_db"] = math.inf if d2 == 0 else (10 * math.log10(gg / d2) if gg > 0 else -math.inf)
        nt, ng = math.sqrt(tt), math.sqrt(gg)
        if numel <= 1:
            out["cosine"] = nan  # msprobe: "unsupported" for a single element
        elif nt <= EPS64 and ng <= EPS64:
            out["cosine"] = 1.0
        elif nt <= EPS64 or ng <= EPS64:
            out["cosine"] = nan
        else:
            out["cosine"] = tg / (nt * ng)
        out["max_abs"], out["max_abs_index"] = acc.maxes["ad"]
        out["max_rel"], out["max_rel_index"] = acc.maxes["rel"]
        out["mean_abs"] = acc.total("ad") / n
        for key, cnt in (("thousandth_ratio", "r3"), ("five_thousandth_ratio", "r53"), ("frac_abs_gt_1e6", "a6"),
                         ("frac_abs_gt_1e4", "a4"), ("frac_abs_gt_1e2", "a2"), ("frac_ulp_gt1", "ulp1")):
            out[key] = acc.counts.get(cnt, 0) / n
        out["ulp_max"] = acc.maxes["ulpmax"]
        out["ulp_mean"] = acc.total("ulp") / n
    out["kl_computed"] = bool(kl)
    out["kl"], out["kl_rows"], out["kl_rows_skipped"] = float("nan"), 0, 0
    if kl:
        out["kl"], out["kl_rows"], out["kl_rows_skipped"] = softmax_kl(
            to_f64(gflat, gname), to_f64(tflat, tname), golden.shape)
    return out


# ---- files --------------------------------------------------------------------------------------------

SAFETENSORS_DTYPES = {"F64": (np.float64, "f64"), "F32": (np.float32, "f32"), "F16": (np.uint16, "f16"),
                      "BF16": (np.uint16, "bf16"), "F8_E4M3": (np.uint8, "f8_e4m3"), "F8_E5M2": (np.uint8, "f8_e5m2"),
                      "I64": (np.int64, "i64"), "I32": (np.int32, "i32"), "I16": (np.int16, "i16"),
                      "I8": (np.int8, "i8"), "U8": (np.uint8, "u8"), "BOOL": (np.bool_, "bool")}


def read_tensors(path):
    """{name: (array, parity dtype name)} of one file (memory-mapped)."""
    if path.endswith(".npy"):
        a = np.load(path, mmap_mode="r")
        return {"": (a, dtype_name(a))}
    if path.endswith(".safetensors"):
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
        mm = np.memmap(path, dtype=np.uint8, mode="r")
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            npdt, pname = SAFETENSORS_DTYPES[info["dtype"]]
            b, e = info["data_offsets"]
            out[name] = (mm[8 + n + b:8 + n + e].view(npdt).reshape(info["shape"]), pname)
        return out
    raise ValueError(f"{path}: unsupported file type")


def list_files(root):
    if os.path.isfile(root):
        return {"": root}
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = p
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    gfiles, tfiles = list_files(argv[1]), list_files(argv[2])
    start = time.perf_counter()
    pairs, nbytes = 0, 0
    for rel in sorted(gfiles):
        if rel not in tfiles:
            continue
        gt, tt = read_tensors(gfiles[rel]), read_tensors(tfiles[rel])
        for name, (g, gname) in gt.items():
            if name not in tt:
                continue
            t, tname = tt[name]
            metrics(g, t, golden_dtype=gname, target_dtype=tname)
            pairs += 1
            nbytes += g.nbytes + t.nbytes
    elapsed = time.perf_counter() - start
    print(f"numpy: {pairs} pairs, {nbytes} input bytes, {elapsed:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
