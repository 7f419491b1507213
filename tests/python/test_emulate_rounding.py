"""The emulation rounding kernels (C++ core, via _parity_core) against the bit patterns and against
independent references: every fp16/bf16 pattern (65,536 each) and every fp8 pattern (256 each) must round
to itself; random and edge float32 values must round exactly as torch's casts and ml_dtypes' casts do,
where those define the same semantics (docs/emulation.md, "Reference semantics")."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from parity import emulation as em  # noqa: E402
from parity._core import core  # noqa: E402


def same(a, b):
    """Bitwise equality of two float32 arrays, any NaN equal to any NaN."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    both_nan = np.isnan(a) & np.isnan(b)
    eq = (a.view(np.uint32) == b.view(np.uint32)) | both_nan
    return eq.all(), np.flatnonzero(~eq)[:5]


def edge_values():
    f = np.float32
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(f).max, np.finfo(f).tiny, np.finfo(f).smallest_subnormal]
    anchors = [65504.0, 65520.0, 6.103515625e-05, 5.960464477539063e-08, 448.0, 464.0, 480.0, 57344.0, 61440.0,
               2.0 ** -6, 2.0 ** -9, 2.0 ** -14, 2.0 ** -16, 2.0 ** -17, 1.0, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
               1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 3.3895313892515355e38, 1.0 + 2.0 ** -4, 1.0 + 2.0 ** -3]
    vals = []
    for a in anchors:
        x = np.float32(a)
        vals += [x, np.nextafter(x, f(0)), np.nextafter(x, f(np.inf))]
    vals = np.array(specials + vals, dtype=f)
    return np.concatenate([vals, -vals])


def random_values(n=1 << 18, seed=3):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    # half of them with exponents near the narrow formats' ranges, where the interesting rounding happens
    near = (rng.standard_normal(n // 2) * np.exp2(rng.integers(-28, 18, n // 2))).astype(np.float32)
    return np.concatenate([bits.view(np.float32), near, edge_values()])


def parity_round(x, mode):
    y = np.array(x, dtype=np.float32, copy=True)
    em.round_array_(y, mode)
    return y


# ---------------------------------------------------------------- every pattern rounds to itself

def test_every_fp16_pattern_round_trips():
    values = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    ok, bad = same(parity_round(values, "fp16"), values)
    assert ok, values[bad]


def test_every_bf16_pattern_round_trips():
    values = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    ok, bad = same(parity_round(values, "bf16"), values)
    assert ok, values[bad]


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_every_fp8_pattern_round_trips(fmt):
    ml = pytest.importorskip("ml_dtypes")
    dt = {"fp8_e4m3": ml.float8_e4m3fn, "fp8_e5m2": ml.float8_e5m2}[fmt]
    values = np.arange(256, dtype=np.uint8).view(dt).astype(np.float32)
    assert np.isnan(values).sum() == (2 if fmt == "fp8_e4m3" else 6)  # e4m3fn: only S.1111.111 is NaN
    ok, bad = same(parity_round(values, fmt + ":unscaled"), values)
    assert ok, values[bad]
    # saturating: every finite pattern still maps to itself; e5m2's infinities become +-max_finite
    fin = np.isfinite(values) | np.isnan(values)
    ok, bad = same(parity_round(values[fin], fmt + ":unscaled:sat"), values[fin])
    assert ok, values[fin][bad]
    assert parity_round(values[~fin], fmt + ":unscaled:sat").tolist() == [57344.0, -57344.0][:int((~fin).sum())]


def test_fp8_patterns_agree_with_torch_decode():
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("torch without float8 dtypes")
    for fmt, dt in (("fp8_e4m3", torch.float8_e4m3fn), ("fp8_e5m2", torch.float8_e5m2)):
        values = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dt).float().numpy()
        ok, bad = same(parity_round(values, fmt + ":unscaled"), values)
        assert ok, (fmt, values[bad])


# ---------------------------------------------------------------- float32 values vs independent casts

def test_bf16_and_fp16_match_torch_casts():
    x = random_values()
    t = torch.from_numpy(x.copy())
    for mode, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        want = t.to(dt).float().numpy()
        ok, bad = same(parity_round(x, mode), want)
        assert ok, (mode, x[bad], want[bad])


def test_overflow_rules():
    big = np.array([65504.0, 65519.99, 65520.0, 1e6, -1e6, np.inf], dtype=np.float32)
    assert parity_round(big, "fp16").tolist() == [65504.0, 65504.0, np.inf, np.inf, -np.inf, np.inf]
    assert parity_round(big, "fp16:sat").tolist() == [65504.0, 65504.0, 65504.0, 65504.0, -65504.0, 65504.0]
    e4 = parity_round(np.array([448.0, 464.0, 464.01, 1e4, np.inf], dtype=np.float32), "fp8_e4m3:unscaled")
    assert e4[:2].tolist() == [448.0, 448.0] and np.isnan(e4[2:]).all()  # e4m3fn has no inf: NaN
    assert parity_round(np.array([1e4, -np.inf], np.float32), "fp8_e4m3:unscaled:sat").tolist() == [448.0, -448.0]


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_unscaled_fp8_matches_ml_dtypes(fmt):
    ml = pytest.importorskip("ml_dtypes")
    dt = {"fp8_e4m3": ml.float8_e4m3fn, "fp8_e5m2": ml.float8_e5m2}[fmt]
    x = random_values()
    with np.errstate(invalid="ignore"):
        want = x.astype(dt).astype(np.float32)  # ml_dtypes casts do not saturate (e4m3fn overflow is NaN)
    ok, bad = same(parity_round(x, fmt + ":unscaled:nosat"), want)
    assert ok, (x[bad], want[bad])


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_unscaled_fp8_matches_torch_cast(fmt):
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("torch without float8 dtypes")
    dt = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}[fmt]
    # torch's casts differ by version and format in what they do past max_finite; ask it, then compare with
    # the parity mode of the same semantics (saturating or not). Within range the two must agree either way.
    probe = torch.tensor([1e9], dtype=torch.float32).to(dt).float().item()
    torch_saturates = probe == {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0}[fmt]
    x = random_values()
    want = torch.from_numpy(x.copy()).to(dt).float().numpy()
    mode = fmt + (":unscaled:sat" if torch_saturates else ":unscaled:nosat")
    ok, bad = same(parity_round(x, mode), want)
    assert ok, (mode, x[bad], want[bad])


def test_fp8_e5m2_saturating_is_clamp_then_round():
    if not hasattr(torch, "float8_e5m2"):
        pytest.skip("torch without float8 dtypes")
    x = random_values()
    want = torch.from_numpy(x.copy()).clamp(-57344.0, 57344.0).to(torch.float8_e5m2).float().numpy()
    ok, bad = same(parity_round(x, "fp8_e5m2:unscaled:sat"), want)
    assert ok, (x[bad], want[bad])


def test_tf32_rounds_to_ten_mantissa_bits():
    x = random_values()
    got = parity_round(x, "tf32")
    # reference in float64: |x| = k * 2^(e-10) with e the binade (>= -126), k to nearest even
    fin = np.isfinite(x) & (x != 0)
    xd = x[fin].astype(np.float64)
    e = np.maximum(np.floor(np.log2(np.abs(xd))), -126)
    q = np.exp2(e - 10)
    ref = np.round(xd / q) * q  # numpy rounds half to even
    ref = np.where(np.abs(ref) > np.finfo(np.float32).max, np.sign(xd) * np.inf, ref).astype(np.float32)
    ok, bad = same(got[fin], ref)
    assert ok, (x[fin][bad], got[fin][bad], ref[bad])
    assert same(got[~fin], x[~fin])[0]
    # TF32 and bf16 share fp32's exponent range: the same kernel at 7 bits is bf16
    y = x.copy()
    core.round_mantissa_(y, 7)
    assert same(y, parity_round(x, "bf16"))[0]


def test_ftz_flushes_only_subnormals():
    tiny = np.finfo(np.float32).tiny
    x = np.array([tiny, tiny / 2, -tiny / 4, 1.0, 0.0, np.nan], dtype=np.float32)
    y = parity_round(x, "ftz")
    assert y[0] == tiny and y[1] == 0 and y[2] == 0 and np.signbit(y[2]) and y[3] == 1.0 and np.isnan(y[5])
    # fp16 with ftz: results below 2^-14 become zero
    z = parity_round(np.array([2.0 ** -14, 2.0 ** -15, -2.0 ** -20], np.float32), "fp16:ftz")
    assert z.tolist() == [2.0 ** -14, 0.0, 0.0] and np.signbit(z[2])


def test_int8_matches_torch_fake_quantize():
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((16, 24)) * 3).astype(np.float32)
    x[3, 5] = 40.0  # an outlier sets the per-tensor scale
    amax = np.float32(np.abs(x).max())
    scale = float(amax / np.float32(127))
    want = torch.fake_quantize_per_tensor_affine(torch.from_numpy(x.copy()), scale, 0, -127, 127).numpy()
    ok, bad = same(parity_round(x, "int8"), want)
    assert ok, (x.ravel()[bad], want.ravel()[bad])
    # per channel along axis 0 (a weight's output channels)
    amax_c = np.abs(x).max(axis=1).astype(np.float32)
    scales = amax_c / np.float32(127)
    want_c = torch.fake_quantize_per_channel_affine(torch.from_numpy(x.copy()), torch.from_numpy(scales),
                                                    torch.zeros(16, dtype=torch.int32), 0, -127, 127).numpy()
    y = x.copy()
    em.round_array_(y, "int8:channel", axis=0)
    ok, bad = same(y, want_c)
    assert ok
    # the outlier's channel is coarse, the others fine: per-channel error is smaller than per-tensor
    assert np.abs(y - x).mean() < np.abs(parity_round(x, "int8") - x).mean()


def test_scaled_fp8_maps_amax_to_max_finite():
    x = np.array([0.0005, -0.02, 0.5, 3.0], dtype=np.float32)
    y = parity_round(x, "fp8_e4m3")
    s = np.float32(448.0) / np.float32(3.0)
    assert abs(y[3] - 3.0) < 1e-6  # amax lands on 448 exactly, so it survives
    want = parity_round(x * s, "fp8_e4m3:unscaled:sat") * (np.float32(1) / s)
    assert same(y, want)[0]
    # unscaled, 0.0005 is below half of e4m3's smallest subnormal 2^-9 and vanishes; scaled it does not
    assert parity_round(x, "fp8_e4m3:unscaled")[0] == 0.0 and y[0] != 0.0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown format 'fp7'"):
        em.parse_mode("fp7")
    with pytest.raises(ValueError, match="unknown option"):
        em.parse_mode("bf16:fast")
    with pytest.raises(ValueError, match="int8 only"):
        em.parse_mode("bf16:channel")
    with pytest.raises(TypeError, match="float32"):
        core.round_(np.zeros(3, np.float64), "bf16")
    with pytest.raises(TypeError, match="C-contiguous"):
        core.round_(np.zeros((4, 4), np.float32)[:, 1], "bf16")
    with pytest.raises(ValueError, match="not one of"):
        core.round_(np.zeros(3, np.float32), "i8")


def test_round_tensor_is_zero_copy_on_the_numpy_path_and_leaves_the_input():
    a = np.array([1.0 + 2.0 ** -10], dtype=np.float32)
    view = a  # round_array_ works in place
    em.round_array_(view, "bf16")
    assert a[0] == 1.0
    t = torch.tensor([1.0 + 2.0 ** -10, 3.0])
    y = em.round_tensor(t, "bf16")
    assert t[0].item() == 1.0 + 2.0 ** -10 and y[0].item() == 1.0
    # bf16 tensors: exact float32 widening, so rounding to bf16 changes nothing
    b = torch.randn(100).to(torch.bfloat16)
    assert torch.equal(em.round_tensor(b, "bf16"), b)
