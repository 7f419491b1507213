"""Device statistics in one pass over the tensor: a Triton kernel (optional; docs/capture.md "Statistics").

The torch path (_stats.device_partial) reads a floating tensor about a dozen times; this reads it once
(plus its bits, the same memory) in blocks of BLOCK elements, each block writing 8 partial words, and a
second one-program kernel reduces the partials in a fixed order (deterministic). Output: 8 int64 words
[min key, max key, sum (float64 bits), sum of squares (float64 bits), finite, zero, zero-or-subnormal,
NaN], decoded on the host by _stats.finish_words.

Exactness: classification (finite, NaN, zero, subnormal) and min / max work on the bit patterns of the
tensor's own dtype (no flush-to-zero can touch them): a finite value's order key is its magnitude bits,
negated for a negative sign; sums are accumulated in float64. Used for CUDA tensors of float16, bfloat16,
float32 and float64 when Triton imports and a self-check against the torch path on the first tensor of
each dtype agrees; anything else (Triton absent, a compile error, a mismatch) falls back to the torch
path for the rest of the process with one warning. PARITY_DEVICE_STATS=torch forces the torch path.
"""
import os
import struct
import warnings

import torch

try:  # optional dependency
    import triton
    import triton.language as tl
except Exception:  # ImportError, or a broken install
    triton = None
    tl = None

BLOCK = 4096
RBLOCK = 1024

# dtype -> (bits dtype, magnitude mask, exponent-all-ones pattern (inf), smallest normal pattern)
_LAYOUT = {
    torch.float16: (torch.int16, 0x7FFF, 0x7C00, 0x0400),
    torch.bfloat16: (torch.int16, 0x7FFF, 0x7F80, 0x0080),
    torch.float32: (torch.int32, 0x7FFFFFFF, 0x7F800000, 0x00800000),
    torch.float64: (torch.int64, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000, 0x0010000000000000),
}

if triton is not None:
    # do_not_specialize: one compiled variant per dtype whatever the sizes (Triton would otherwise compile
    # again for sizes divisible by 16 or equal to 1)
    @triton.jit(do_not_specialize=["n"])
    def _blocks(x_ptr, bits_ptr, part_ptr, part_f_ptr, n, ABS_MASK: tl.constexpr, INF_BITS: tl.constexpr,
                MIN_NORMAL: tl.constexpr, IS_F64: tl.constexpr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        bits = tl.load(bits_ptr + offs, mask=m, other=0).to(tl.int64)
        if IS_F64:
            v = tl.load(x_ptr + offs, mask=m, other=0.0)
        else:  # float16 / bfloat16 widen exactly to float32 first
            v = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32).to(tl.float64)
        ab = bits & ABS_MASK
        fin = m & (ab < INF_BITS)
        key = tl.where(bits < 0, -ab, ab)
        big = tl.full([BLOCK], INF_BITS, tl.int64)
        mnk = tl.min(tl.where(fin, key, big), axis=0)
        mxk = tl.max(tl.where(fin, key, -big), axis=0)
        vf = tl.where(fin, v, 0.0)
        s = tl.sum(vf, axis=0)
        sq = tl.sum(vf * vf, axis=0)
        nfin = tl.sum(fin.to(tl.int64), axis=0)
        zero = tl.sum((m & (ab == 0)).to(tl.int64), axis=0)
        small = tl.sum((m & (ab < MIN_NORMAL)).to(tl.int64), axis=0)
        nan = tl.sum((m & (ab > INF_BITS)).to(tl.int64), axis=0)
        base = pid.to(tl.int64) * 8
        tl.store(part_ptr + base + 0, mnk)
        tl.store(part_ptr + base + 1, mxk)
        tl.store(part_f_ptr + base + 2, s)
        tl.store(part_f_ptr + base + 3, sq)
        tl.store(part_ptr + base + 4, nfin)
        tl.store(part_ptr + base + 5, zero)
        tl.store(part_ptr + base + 6, small)
        tl.store(part_ptr + base + 7, nan)

    @triton.jit(do_not_specialize=["nb"])
    def _final(part_ptr, part_f_ptr, out_ptr, out_f_ptr, nb, INF_BITS: tl.constexpr, RBLOCK: tl.constexpr):
        mnk = tl.full([RBLOCK], INF_BITS, tl.int64)
        mxk = tl.full([RBLOCK], -INF_BITS, tl.int64)
        s = tl.zeros([RBLOCK], tl.float64)
        sq = tl.zeros([RBLOCK], tl.float64)
        nfin = tl.zeros([RBLOCK], tl.int64)
        zero = tl.zeros([RBLOCK], tl.int64)
        small = tl.zeros([RBLOCK], tl.int64)
        nan = tl.zeros([RBLOCK], tl.int64)
        for start in range(0, nb, RBLOCK):
            idx = start + tl.arange(0, RBLOCK)
            m = idx < nb
            b = idx.to(tl.int64) * 8
            mnk = tl.minimum(mnk, tl.load(part_ptr + b + 0, mask=m, other=INF_BITS))
            mxk = tl.maximum(mxk, tl.load(part_ptr + b + 1, mask=m, other=-INF_BITS))
            s += tl.load(part_f_ptr + b + 2, mask=m, other=0.0)
            sq += tl.load(part_f_ptr + b + 3, mask=m, other=0.0)
            nfin += tl.load(part_ptr + b + 4, mask=m, other=0)
            zero += tl.load(part_ptr + b + 5, mask=m, other=0)
            small += tl.load(part_ptr + b + 6, mask=m, other=0)
            nan += tl.load(part_ptr + b + 7, mask=m, other=0)
        tl.store(out_ptr + 0, tl.min(mnk, axis=0))
        tl.store(out_ptr + 1, tl.max(mxk, axis=0))
        tl.store(out_f_ptr + 2, tl.sum(s, axis=0))
        tl.store(out_f_ptr + 3, tl.sum(sq, axis=0))
        tl.store(out_ptr + 4, tl.sum(nfin, axis=0))
        tl.store(out_ptr + 5, tl.sum(zero, axis=0))
        tl.store(out_ptr + 6, tl.sum(small, axis=0))
        tl.store(out_ptr + 7, tl.sum(nan, axis=0))


def available():
    return triton is not None and os.environ.get("PARITY_DEVICE_STATS", "auto") != "torch"


def supports(x):
    return x.dtype in _LAYOUT and x.numel() > 0


def words(x):
    """8 int64 words of statistics of a float16/bfloat16/float32/float64 tensor (see the module doc);
    enqueues two kernels, never synchronises."""
    bits_dtype, abs_mask, inf_bits, min_normal = _LAYOUT[x.dtype]
    if not x.is_contiguous():
        x = x.contiguous()
    n = x.numel()
    nb = (n + BLOCK - 1) // BLOCK
    part = torch.empty(nb * 8, dtype=torch.int64, device=x.device)
    out = torch.empty(8, dtype=torch.int64, device=x.device)
    if x.is_cuda and x.device.index is not None and x.device.index != torch.cuda.current_device():
        with torch.cuda.device(x.device):  # Triton launches on the current device
            _launch(x, bits_dtype, part, out, n, nb, abs_mask, inf_bits, min_normal)
    else:
        _launch(x, bits_dtype, part, out, n, nb, abs_mask, inf_bits, min_normal)
    return out


def _launch(x, bits_dtype, part, out, n, nb, abs_mask, inf_bits, min_normal):
    _blocks[(nb,)](x, x.view(bits_dtype), part, part.view(torch.float64), n, ABS_MASK=abs_mask,
                   INF_BITS=inf_bits, MIN_NORMAL=min_normal, IS_F64=x.dtype == torch.float64, BLOCK=BLOCK)
    _final[(1,)](part, part.view(torch.float64), out, out.view(torch.float64), nb, INF_BITS=inf_bits, RBLOCK=RBLOCK)


def key_to_float(key, dtype):
    """The value whose order key (magnitude bits, negated for a negative sign) is `key`."""
    mag = -key if key < 0 else key
    if dtype == torch.float64:
        v = struct.unpack("<d", struct.pack("<Q", mag))[0]
    elif dtype == torch.float32:
        v = struct.unpack("<f", struct.pack("<I", mag))[0]
    elif dtype == torch.bfloat16:
        v = struct.unpack("<f", struct.pack("<I", mag << 16))[0]
    else:
        v = struct.unpack("<e", struct.pack("<H", mag))[0]
    return -v if key < 0 else v


def bits_to_double(word):
    return struct.unpack("<d", struct.pack("<q", word))[0]


_CHECKED = {}  # dtype -> whether the kernel agreed with the torch path
# Tests: host tensors take this path too (with TRITON_INTERPRET=1 Triton runs kernels on the CPU).
_ON_HOST = os.environ.get("TRITON_INTERPRET") == "1" and os.environ.get("PARITY_TRITON_ON_HOST") == "1"


def usable(x, reference):
    """Whether the Triton path is used for x: once per dtype, the first tensor is computed both ways
    (this kernel and `reference(x)`, the torch path's 9 statistics; that one check waits for the device)
    and they must agree; any failure disables it with a warning."""
    if not (available() and (x.is_cuda or _ON_HOST) and supports(x)):
        return False
    ok = _CHECKED.get(x.dtype)
    if ok is None:
        try:
            got = finish_words(words(x).cpu().tolist(), x.numel(), x.dtype)
            ref = reference(x)
            ok = got[5:] == ref[5:] and got[0] == ref[0] and got[1] == ref[1] and all(
                abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300) for a, b in zip(got[2:5], ref[2:5]))
            if not ok:
                warnings.warn("parity.capture: the Triton statistics kernel disagrees with torch on a {} tensor "
                              "({} vs {}): using torch's reductions".format(x.dtype, got, ref), RuntimeWarning)
        except Exception as e:  # no compiler, an unsupported GPU, ...
            warnings.warn("parity.capture: the Triton statistics kernel failed ({}: {}): using torch's "
                          "reductions".format(type(e).__name__, str(e)[:200]), RuntimeWarning)
            ok = False
        _CHECKED[x.dtype] = ok
    return ok


def finish_words(w, numel, dtype):
    """The 9 statistics from the 8 words of words()."""
    import math

    mnk, mxk, s_bits, sq_bits, nfin, zero, small, nan = (int(v) for v in w)
    inf = numel - nfin - nan
    if nfin == 0:
        return [0.0, 0.0, 0.0, 0.0, 0.0, float(nan), float(inf), float(zero), float(small - zero)]
    mn, mx = key_to_float(mnk, dtype), key_to_float(mxk, dtype)
    return [mn, mx, bits_to_double(s_bits) / nfin, math.sqrt(bits_to_double(sq_bits)), max(abs(mn), abs(mx)),
            float(nan), float(inf), float(zero), float(small - zero)]
