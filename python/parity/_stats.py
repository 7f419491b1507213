"""Statistics of one tensor on its own device (docs/capture.md, "Statistics").

Host (CPU) tensors are handed to the C++ core by address: one fused pass (AVX2 where the CPU has it)
with the GIL released computes everything (parity::dump::fused_stats). This was measured about 40x
faster than torch reductions on CPU (bench/capture_overhead.sh): torch needs one pass per statistic.

On an accelerator the statistics are computed by torch there in two steps:

  device_partial(t)  enqueues a few reductions and returns an 8-element float64 tensor on t's device,
                     without ever waiting for the device: no `.item()`, no `torch.tensor(..., device=)`
                     (a host-to-device copy from pageable memory synchronises the host with the device),
                     scalars are Python numbers;
  finish(raw, numel) turns those 8 numbers, once on the host, into the 9 statistics.

The capture stacks the partial results of many events into one tensor, copies it to pinned host memory
with non_blocking=True and resolves it at the end of the step (capture_impl._DevicePipeline).

Order of the 9 statistics: min, max, mean, l2norm, absmax, nan, inf, zero, subnormal — the definitions
of parity::compute_stats: NaN/Inf excluded from min/max/mean/norm, mean over the finite elements,
subnormal counted in the tensor's own dtype. Exactness: min, max and the counts are computed in the
tensor's own dtype (exact); absmax is max(|min|, |max|) (exact); the sum and the sum of squares are
accumulated in float64 like the C++ kernel (their order differs: equal within float64 rounding).

Layout of the 8 partial values: min, max (over the finite elements; ±inf when there are none), sum,
l2norm (float64, non-finite elements as 0), finite count, zero count, count of |x| < the smallest
normal (zeros and subnormals), NaN count.
"""
import math

import torch

_I32_MAX = 2 ** 31 - 1
_F32_EXACT = 2 ** 24  # integers up to this are exact in float32


_THRESHOLDS = {}


def _thresholds(own, dtype, device):
    """[[inf], [smallest subnormal], [smallest normal]] of dtype `own`, held in `dtype` on `device`, made
    once per key with fill kernels (no host-to-device copy)."""
    key = (own, dtype, device)
    thr = _THRESHOLDS.get(key)
    if thr is None:
        fi = torch.finfo(own)
        thr = torch.empty((3, 1), dtype=dtype, device=device)
        thr[0].fill_(math.inf)
        thr[1].fill_(fi.tiny * fi.eps)
        thr[2].fill_(fi.tiny)
        _THRESHOLDS[key] = thr
    return thr


def device_partial_tagged(t):
    """(8-element float64 tensor on t's device, tag for finish_row): the Triton kernel's 8 int64 words
    (viewed as float64, tag = the dtype) where it is usable (_triton_stats.usable), else the torch
    path's values (tag "float" or "int"). Enqueues work, never synchronises (the Triton path's one-time
    self-check per dtype aside)."""
    from . import _triton_stats

    x = t.detach()
    if _triton_stats.triton is not None and _triton_stats.usable(x, _torch_statistics):
        return _triton_stats.words(x).view(torch.float64), x.dtype
    return device_partial_torch(x), ("float" if x.is_floating_point() else "int")


def _torch_statistics(x):
    """The 9 statistics of x by the torch path (waits for the device): the Triton kernel's reference."""
    return finish(device_partial_torch(x).cpu().tolist(), x.numel(), True)


def finish_row(row, words, numel, tag):
    """The 9 statistics of one event from its stacked row (float64 values, and the same 8 words as
    int64) and the tag of device_partial_tagged."""
    if tag == "float" or tag == "int":
        return finish(row, numel, tag == "float")
    from ._triton_stats import finish_words

    return finish_words(words, numel, tag)


def device_partial(t):
    """8-element float64 tensor of partial statistics on t's device (the torch path)."""
    return device_partial_torch(t)


def device_partial_torch(t):
    """8-element float64 tensor of partial statistics on t's device; enqueues work, never synchronises."""
    x = t.detach()
    if x.dtype == torch.bool:
        x = x.view(torch.uint8)
    n = x.numel()
    dev = x.device
    if n == 0:
        return torch.zeros(8, dtype=torch.float64, device=dev)  # a fill kernel: no copy from the host
    count_dtype = torch.int32 if n <= _I32_MAX else torch.int64
    if x.is_floating_point():
        own = x.dtype
        if x.element_size() == 1:
            x = x.float()  # fp8: few kernels exist for it; float32 holds every fp8 value and threshold exactly
        mn = torch.nan_to_num(x, nan=math.inf, posinf=math.inf, neginf=math.inf).amin()
        mx = torch.nan_to_num(x, nan=-math.inf, posinf=-math.inf, neginf=-math.inf).amax()
        w = torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
        if w.dtype != torch.float64:
            w = w.to(torch.float64)
        # The counts in one reduction over 4 rows: [|x| < inf (finite), |x| < smallest subnormal (zero),
        # |x| < smallest normal (zero or subnormal)] in one broadcast comparison, and |x| != |x| (NaN); NaN
        # compares false. Up to 2^24 elements the comparisons write float16 0/1 straight into the rows and
        # the sum accumulates in float32 (exact: every partial sum is an integer <= 2^24) with no cast of the
        # rows (a bool sum would first widen them to the integer result type: 4-8 bytes per element).
        a = x.abs().reshape(1, -1)
        thr = _thresholds(own, x.dtype, dev)
        if n <= _F32_EXACT:
            rows = torch.empty((4, n), dtype=torch.float16, device=dev)
            torch.lt(a, thr, out=rows[:3])
            torch.ne(a, a, out=rows[3:])
            counts = rows.sum(1, dtype=torch.float32)
        else:
            counts = torch.cat([a < thr, a != a]).sum(1, dtype=count_dtype)
    else:
        mn, mx = torch.aminmax(x)
        w = x.to(torch.float64)
        # finite = numel, no NaN, no subnormal: only the zero count is computed (finish() reads index 5)
        counts = (x == 0).sum(dtype=count_dtype).view(1).expand(4)
    return torch.cat([mn.view(1), mx.view(1), w.sum().view(1), torch.linalg.vector_norm(w).view(1), counts])


def finish(raw, numel, is_float=True):
    """The 9 statistics (a list of floats) from device_partial's 8 values (of an integer tensor: only
    min, max, sum, l2norm and the zero count are read)."""
    if numel == 0:
        return [0.0] * 9
    mn, mx, s, l2, nfin, zero, small, nan = raw
    if is_float:
        nfin, nan, zero, small = int(nfin), int(nan), int(zero), int(small)
    else:
        nfin, nan, zero = numel, 0, int(zero)
        small = zero
    inf = numel - nfin - nan
    if nfin == 0:
        return [0.0, 0.0, 0.0, 0.0, 0.0, float(nan), float(inf), float(zero), float(small - zero)]
    mn, mx = float(mn), float(mx)
    return [mn, mx, float(s) / nfin, float(l2), max(abs(mn), abs(mx)), float(nan), float(inf), float(zero),
            float(small - zero)]


def device_stats(t):
    """The 9 statistics of t computed the accelerator way, as a float64 CPU tensor (tests and benchmarks:
    this one waits for the device)."""
    raw = device_partial(t).cpu().tolist()
    return torch.tensor(finish(raw, t.numel(), t.is_floating_point()), dtype=torch.float64)
