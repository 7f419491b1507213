"""Every metric of the C++ kernel (_parity_core.compare_arrays) against the independent fp64 numpy
implementation in bench/baseline_numpy.py (exact=True: math.fsum for every sum), on random and
adversarial data. Counts, indices, maxima and fractions must agree exactly; sums 1e-12 relative
(see docs/metrics.md, "Accuracy")."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import _parity_core as core

sys.path.insert(0, os.path.join(os.environ.get("PARITY_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")), "bench"))
import baseline_numpy as ref  # noqa: E402

# Values that are a max, a min, a count or count/n: the same operations on the same doubles, so equal.
EXACT = {"numel", "compared", "max_abs", "max_abs_index", "max_rel", "max_rel_index", "thousandth_ratio",
         "five_thousandth_ratio", "frac_abs_gt_1e6", "frac_abs_gt_1e4", "frac_abs_gt_1e2", "ulp_max", "frac_ulp_gt1",
         "nonfinite_agree", "nonfinite_mismatch", "ftz_count", "kl_computed", "kl_rows", "kl_rows_skipped", "min",
         "max", "absmax", "nan_count", "pinf_count", "ninf_count", "zero_count", "subnormal_count"}
REL = 1e-12


def same(a, b, exact):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b) or exact:
            return a == b
        return abs(a - b) <= REL * abs(b)
    return a == b


# bf16 x bf16 on an AVX-512 CPU: the kernel adds its sums on fp32 lanes, each within DELTA of the sum of
# the terms' magnitudes, and every metric within the bound docs/metrics.md ("bf16 × bf16 on AVX-512")
# derives from that; the exact fields stay exact.
DELTA = 16 * 2.0**-24


def lane_sums(golden_dtype, target_dtype):
    return golden_dtype == "bf16" and target_dtype == "bf16" and core.metrics_kernel() == "avx512vl"


def within_lane_bound(got, w, key, sub, want, numel):
    if isinstance(w, float) and (math.isnan(w) or math.isinf(w)):
        return same(got, w, True)
    if key == "cosine":
        d2, ng, nt = want["euclidean"] ** 2, want["golden_stats"]["l2norm"], want["target_stats"]["l2norm"]
        bound = 5 * DELTA * d2 / (2 * ng * nt) if d2 < 0.8 * ng * nt else 2 * DELTA
        return abs(got - w) <= bound + 1e-15
    if key == "sqnr_db":
        return abs(got - w) <= 10 / math.log(10) * 2 * DELTA
    if sub == "mean":
        return abs(got - w) <= DELTA * want[key]["l2norm"] / math.sqrt(numel) + 1e-15 * abs(w)
    return abs(got - w) <= (3 if sub == "std" else 1.1) * DELTA * abs(w)


def check(golden, target, kl=False, golden_dtype=None, target_dtype=None, kl_abs=0.0, skip=()):
    got = core.compare_arrays(golden, target, kl=kl, golden_dtype=golden_dtype, target_dtype=target_dtype)
    want = ref.metrics(golden, target, kl=kl, golden_dtype=golden_dtype, target_dtype=target_dtype, exact=True)
    lanes = lane_sums(golden_dtype, target_dtype)

    def agree(g, w, key, sub=None):
        exact = (sub or key) in EXACT
        if lanes and not exact and isinstance(w, float) and key != "kl":
            return within_lane_bound(g, w, key, sub, want, np.asarray(golden).size)
        return same(g, w, exact)

    bad = []
    for key, w in want.items():
        if key in skip:
            continue
        if isinstance(w, dict):
            for sub, ws in w.items():
                if not agree(got[key][sub], ws, key, sub):
                    bad.append(f"{key}.{sub}: kernel {got[key][sub]!r} numpy {ws!r}")
        elif key == "kl" and kl_abs and not math.isnan(w):
            if abs(got[key] - w) > max(REL * abs(w), kl_abs):
                bad.append(f"kl: kernel {got[key]!r} numpy {w!r}")
        elif not agree(got[key], w, key):
            bad.append(f"{key}: kernel {got[key]!r} numpy {w!r}")
    assert set(got) == set(want)
    assert not bad, "\n".join(bad)
    return got


def rng(seed):
    return np.random.default_rng(seed)


def to_bf16_bits(x):
    """Round-to-nearest-even fp32 -> bf16 bit patterns (numpy has no bf16)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(x, np.float32))
    out = rounded.astype(np.uint16)
    out[nan] = 0x7FC0
    return out


def test_random_fp32_pair_spanning_many_chunks():
    r = rng(1)
    g = r.standard_normal(300_001).astype(np.float32)
    t = (g * (1 + 1e-4 * r.standard_normal(g.size))).astype(np.float32)
    m = check(g, t)
    assert 0.99 < m["cosine"] <= 1.0 + 1e-15


def test_bf16_target_from_bits():
    r = rng(2)
    g = (r.standard_normal((64, 513)) * 3).astype(np.float32)
    check(g, to_bf16_bits(g), target_dtype="bf16")
    check(to_bf16_bits(g), g, golden_dtype="bf16")


def test_bf16_pair_with_relu_zeros_in_some_blocks():
    # Activations after a ReLU: exact zeros, which the bf16 fp32-lane kernel refuses. Every fourth block
    # of 1024 holds some, so spans of four blocks are refused and measured block by block (the clean
    # blocks still on fp32 lanes, the others by the general kernel); the rest go whole as spans.
    r = rng(31)
    g = r.standard_normal(9 * 65536 + 1000).astype(np.float32)
    blocks = np.arange(g.size) // 1024
    relu = (blocks % 4 == 1) & (g < 0)
    g[relu] = 0.0
    t = (g * (1 + 1e-3 * r.standard_normal(g.size))).astype(np.float32)
    m = check(to_bf16_bits(g), to_bf16_bits(t), golden_dtype="bf16", target_dtype="bf16")
    assert m["golden_stats"]["zero_count"] > 0


def test_fp16_target():
    r = rng(3)
    g = r.standard_normal(10_000).astype(np.float32) * 100
    g[:100] = r.uniform(-1e-5, 1e-5, 100)  # subnormal or flushed in fp16
    t = g.astype(np.float16)
    m = check(g, t)
    assert m["target_stats"]["subnormal_count"] > 0


def test_huge_and_tiny_magnitudes():
    r = rng(4)
    exps = r.uniform(-44, 38, 50_000)
    g = (np.sign(r.standard_normal(exps.size)) * 10.0 ** exps).astype(np.float32)
    t = (g * (1 + 1e-3 * r.standard_normal(g.size))).astype(np.float32)
    t[::7] = 0
    m = check(g, t)
    assert m["ftz_count"] > 0 and m["golden_stats"]["subnormal_count"] > 0


def test_cancellation():
    # Large alternating values whose sum nearly cancels; the target differs in the last bits.
    r = rng(5)
    base = r.uniform(1e6, 2e6, 40_000)
    g = np.empty(80_000)
    g[0::2], g[1::2] = base, -base + r.standard_normal(base.size) * 1e-3
    t = g + r.standard_normal(g.size) * 1e-9
    check(g, t)


def test_nan_inf_agreeing_and_not():
    r = rng(6)
    g = r.standard_normal(20_000).astype(np.float32)
    t = g + np.float32(1e-3) * r.standard_normal(g.size).astype(np.float32)
    pos = r.choice(g.size, 300, replace=False)
    specials = np.array([np.nan, np.inf, -np.inf], np.float32)[r.integers(0, 3, pos.size)]
    g[pos], t[pos] = specials, specials
    m = check(g, t)
    assert m["nonfinite_agree"] and m["compared"] == g.size - 300
    t[pos[:10]] = 1.0
    g[5000] = np.inf
    t[5001] = np.nan
    m = check(g, t)
    assert not m["nonfinite_agree"] and m["nonfinite_mismatch"] == 12


def test_zeros_in_golden_use_msprobe_epsilon():
    r = rng(7)
    g = r.standard_normal(30_000)
    g[r.random(g.size) < 0.3] = 0.0
    t = g + 1e-7 * r.standard_normal(g.size)
    t[:50] = g[:50]
    m = check(g, t)
    assert m["max_rel"] > 1e6  # a zero golden facing a nonzero target


def test_fp8_targets_from_bits():
    r = rng(8)
    codes = r.integers(0, 256, 4096).astype(np.uint8)
    for name in ("f8_e4m3", "f8_e5m2"):
        vals = ref.FP8_TABLES[name][codes]
        g = np.where(np.isfinite(vals), vals * (1 + 0.01 * r.standard_normal(vals.size)), vals)
        check(g, codes, target_dtype=name)


def test_fp64_with_subnormals():
    r = rng(9)
    g = r.standard_normal(5000) * 10.0 ** r.uniform(-320, 300, 5000)
    t = g * (1 + 1e-15 * r.standard_normal(g.size))
    check(g, t)


def test_integer_dtypes():
    r = rng(10)
    gi = r.integers(-1000, 1000, 5000).astype(np.int32)
    check(gi, gi.astype(np.float32) + r.standard_normal(gi.size).astype(np.float32))
    check(r.standard_normal(5000).astype(np.float32) * 100, gi)
    check(gi.astype(np.int64), gi.astype(np.int8))
    check(gi > 0, (gi > 10).astype(np.uint8))


def test_softmax_kl_on_logits():
    r = rng(11)
    logits = (r.standard_normal((64, 1000)) * 4).astype(np.float32)
    logits[3, :500] = -np.inf  # masked vocabulary
    logits[7, 2] = np.nan      # skipped row
    noisy = logits + (0.05 * r.standard_normal(logits.shape)).astype(np.float32)
    m = check(logits, noisy, kl=True)
    assert m["kl_rows"] == 63 and m["kl_rows_skipped"] == 1 and m["kl"] > 1e-4
    # bf16-rounded logits: KL around 1e-5, a difference of nearly equal log-sum-exps, so its absolute
    # accuracy (not relative) is what fp64 offers: a few ulps of log(rows' partition sums).
    clean = (r.standard_normal((32, 4096)) * 4).astype(np.float32)
    check(clean, to_bf16_bits(clean), kl=True, target_dtype="bf16", kl_abs=1e-15)


def test_edge_shapes():
    check(np.zeros(0, np.float32), np.zeros(0, np.float32))
    check(np.array(2.0, np.float32), np.array(2.5, np.float32))
    check(np.array([3.0]), np.array([3.0]))
    check(np.zeros(9), np.zeros(9))
    check(np.zeros(9), np.arange(9.0))
    check(np.arange(12.0).reshape(3, 4), np.arange(12.0)[::-1].copy())


def test_errors():
    with pytest.raises(ValueError, match="element counts differ"):
        core.compare_arrays(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="2-byte elements"):
        core.compare_arrays(np.zeros(3, np.float32), np.zeros(3, np.float32), target_dtype="bf16")
    with pytest.raises(TypeError):
        core.compare_arrays(np.zeros(3, np.complex64), np.zeros(3, np.complex64))


def test_near_identical_pairs():
    # 1 − cosine ~ 1e-14: a few elements one fp32 ulp apart. rel_l2, euclidean and rmse come from Σd²
    # (the difference), so they keep full relative accuracy; the cosine is within its documented
    # absolute bound of 1 (docs/metrics.md).
    r = rng(20)
    g = r.standard_normal(300_000).astype(np.float32)
    t = g.copy()
    idx = r.choice(g.size, 50, replace=False)
    t[idx] = np.nextafter(t[idx], np.float32(np.inf))
    m = check(g, t)
    assert 0 < m["rel_l2"] < 1e-8 and abs(1 - m["cosine"]) < 1e-13
    check(g, to_bf16_bits(g), target_dtype="bf16")


def test_sign_flips_at_tiny_norms():
    # Norms below 2^-52 on both sides, some signs flipped. msprobe (and the numpy reference) call that
    # cosine 1; parity measures it on the rescaled values (docs/metrics.md, tiny_cosine), checked here
    # against an fsum of the same rescaled values. Every other field against the reference.
    r = rng(21)
    g = (r.standard_normal(5_000) * 1e-25).astype(np.float32)
    t = g.copy()
    t[::5] = -t[::5]
    m = check(g, t, skip={"cosine"})
    gs, ts = g.astype(np.float64) / np.abs(g).max(), t.astype(np.float64) / np.abs(t).max()
    want = math.fsum(gs * ts) / math.sqrt(math.fsum(gs * gs) * math.fsum(ts * ts))
    assert abs(m["cosine"] - want) <= REL * abs(want)
    assert m["cosine"] < 0.9


def test_fused_kernel_range_boundaries():
    # The fused fp32/bf16 kernel takes plain sums while a block's magnitudes span less than 2^19 (fp32)
    # or 2^35 (bf16), TwoSum sums beyond; blocks of 1024 on either side of both limits, and blocks with
    # huge values that cancel inside a lane (+2^60, x, −2^60, y, ...) where plain sums would lose x.
    r = rng(22)
    blocks = []
    for span in (2.0**18.9, 2.0**19.1, 2.0**34.9, 2.0**35.1):
        b = r.uniform(1, 2, 1024) * np.where(r.random(1024) < 0.5, -1, 1)
        b[r.integers(0, 1024)] = span * 1.0 * np.sign(b[0])
        b[r.integers(0, 1024)] = 1.0
        blocks.append(b)
    c = r.uniform(1, 2, 1024)
    j = np.arange(1024) // 4
    c[j % 4 == 0] = 2.0**60
    c[j % 4 == 2] = -(2.0**60)
    blocks.append(c)
    g = np.concatenate(blocks).astype(np.float32)
    t = (g * (1 + 1e-3 * r.standard_normal(g.size))).astype(np.float32)
    t[(j % 2 == 0).nonzero()[0] + 4 * 1024] = g[(j % 2 == 0).nonzero()[0] + 4 * 1024]
    check(g, t)
    check(to_bf16_bits(g), to_bf16_bits(t), golden_dtype="bf16", target_dtype="bf16")
    check(g, to_bf16_bits(t), target_dtype="bf16")


VARIANT_SCRIPT = """
import json, sys, numpy as np, _parity_core as core
r = np.random.default_rng(12)
g = r.standard_normal(200_003).astype(np.float32)
t = g + np.float32(1e-3) * r.standard_normal(g.size).astype(np.float32)
g[5] = np.nan; t[5] = np.nan; t[7] = 0; g[8] = 0
out = core.compare_arrays(g, t, kl=True)
def bf16(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
gb = g * np.float32(1 + 1e-3 * r.standard_normal(g.size))  # bf16 x bf16: the fp32-lane kernel
gb[1::50021] = g[1::50021] * np.float32(1.5 * 2.0**-14)  # gap 14, relative error ~1: fp32-lane blocks
gb[2::70001] = g[2::70001] * np.float32(1.25 * 2.0**-17)  # gap >= 15: fp64 blocks with a similar maximum
out["bf16"] = core.compare_arrays(bf16(g), bf16(gb), golden_dtype="bf16", target_dtype="bf16")
out["variant"] = core.metrics_kernel()
print(json.dumps(out))
"""


def test_kernel_variants_give_identical_results():
    # The baseline (SSE2), AVX2 and AVX-512VL builds of the kernel must agree bit for bit (same lane
    # count, same operation order, no FMA contraction); variants this CPU lacks fall back.
    # The fused fp32/bf16 kernel (PARITY_METRICS_FAST=0 turns it off) must not change a bit either, but
    # for each side's std: the fused kernel takes a block's Σ(x − mean)² in one pass from Σx², within
    # 4.7e-13 relative of the two-pass value (docs/metrics.md "Error bounds of the kernel"), so the std
    # agrees to 2.4e-13 plus the two-pass form's own ~3e-14; 1e-12 is checked.
    results = {}
    for cap in ("baseline", "avx2", "avx512vl"):
        for fast in ("1", "0"):
            env = dict(os.environ, PARITY_METRICS_KERNEL=cap, PARITY_METRICS_FAST=fast)
            out = subprocess.run([sys.executable, "-c", VARIANT_SCRIPT], env=env, capture_output=True, text=True,
                                 check=True)
            r = json.loads(out.stdout)
            results[(r.pop("variant"), fast)] = r
    assert ("baseline", "0") in results and ("baseline", "1") in results
    # ... but bf16 x bf16 on AVX-512, whose fused kernel adds the sums on fp32 lanes: there the exact
    # fields must still agree and the rest stay within docs/metrics.md's bounds (checked against the
    # general kernel's fp64 values, which are far more accurate than those bounds).
    baseline_bf16 = results[("baseline", "1")]["bf16"]
    if ("avx512vl", "1") in results:
        lanes, fp64 = results[("avx512vl", "1")].pop("bf16"), results[("baseline", "0")]["bf16"]
        numel = lanes["numel"]
        for key, w in fp64.items():
            for sub, ws in (w.items() if isinstance(w, dict) else [(None, w)]):
                g = lanes[key][sub] if sub else lanes[key]
                if (sub or key) in EXACT or not isinstance(ws, float):
                    assert json.dumps(g) == json.dumps(ws), (key, sub)
                else:
                    assert within_lane_bound(g, ws, key, sub, fp64, numel), (key, sub, g, ws)
        for (name, f), r in results.items():
            if f == "1":
                r.pop("bf16", None)
    for fast in ("1", "0"):
        same = [r for (name, f), r in results.items() if f == fast]
        for r in same:
            assert json.dumps(r, sort_keys=True) == json.dumps(same[0], sort_keys=True), fast
    fused, general = dict(results[("baseline", "1")]), dict(results[("baseline", "0")])
    fused["bf16"] = baseline_bf16
    # bf16 x bf16 blocks sum their exact terms on fp32 / fp64 lanes in another order: the error sums and
    # the stds within 1e-12 relative (their bounds: ~4e-14 and 4.7e-13), everything else identical.
    fb, gbf = fused.pop("bf16"), general.pop("bf16")

    def close(a, b, path):
        if isinstance(a, dict):
            assert a.keys() == b.keys(), path
            for k in a:
                close(a[k], b[k], path + "." + k)
        elif isinstance(a, float) and not (math.isnan(a) and math.isnan(b)):
            assert abs(a - b) <= 1e-12 * abs(b), (path, a, b)
        else:
            assert json.dumps(a) == json.dumps(b), (path, a, b)

    close(fb, gbf, "bf16")
    for k in ("max_abs", "max_rel", "max_abs_index", "max_rel_index", "thousandth_ratio", "five_thousandth_ratio",
              "ulp_max", "frac_ulp_gt1", "frac_abs_gt_1e6", "frac_abs_gt_1e4", "frac_abs_gt_1e2"):
        assert json.dumps(fb[k]) == json.dumps(gbf[k]), k
    for side in ("golden_stats", "target_stats"):
        a, b = dict(fused[side]), dict(general[side])
        sa, sb = a.pop("std"), b.pop("std")
        assert abs(sa - sb) <= 1e-12 * sb, (side, sa, sb)
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True), side
        del fused[side], general[side]
    assert json.dumps(fused, sort_keys=True) == json.dumps(general, sort_keys=True)
