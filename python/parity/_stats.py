"""Statistics of one tensor on its own device (docs/capture.md, "Statistics").

Host (CPU) tensors are handed to the C++ core by address: one fused pass (AVX2 where the CPU has it)
with the GIL released computes everything (parity::dump::fused_stats). This was measured about 40x
faster than torch reductions on CPU (bench/capture_overhead.sh): torch needs one pass per statistic.

On an accelerator the statistics are computed by torch there, stacked into one 9-element float64
tensor and copied to pinned host memory with non_blocking=True: only 72 bytes cross per event and no
device synchronisation happens per event; the capture resolves the pending copies at the end of the
step (or when too many are pending).
Order of the 9 values: min, max, mean, l2norm, absmax, nan, inf, zero, subnormal — the definitions
of parity::compute_stats: NaN/Inf excluded from min/max/mean/norm, mean over the finite elements,
subnormal counted in the tensor's own dtype.
"""
import torch


def device_stats(t):
    """9-element float64 tensor of statistics on t's device (for accelerator tensors)."""
    x = t.detach()
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    is_float = x.is_floating_point()
    w = x.to(torch.float64) if x.dtype != torch.float64 else x
    if is_float:
        finite = torch.isfinite(w)
        nan = torch.isnan(w).sum()
        inf = (~finite).sum() - nan
        fw = torch.where(finite, w, torch.zeros((), dtype=w.dtype, device=w.device))
        nfin = finite.sum()
        big = torch.tensor(float("inf"), dtype=w.dtype, device=w.device)
        mn = torch.where(finite, w, big).min() if w.numel() else big
        mx = torch.where(finite, w, -big).max() if w.numel() else -big
        tiny = torch.finfo(x.dtype).tiny  # smallest normal of the tensor's own dtype
        sub = ((fw != 0) & (fw.abs() < tiny)).sum()
    else:
        fw = w
        nfin = torch.tensor(w.numel(), device=w.device)
        nan = inf = sub = torch.zeros((), dtype=torch.int64, device=w.device)
        mn = w.min() if w.numel() else torch.zeros((), dtype=w.dtype, device=w.device)
        mx = w.max() if w.numel() else torch.zeros((), dtype=w.dtype, device=w.device)
    has = (nfin > 0).to(torch.float64)
    s = fw.sum()
    out = torch.stack([
        torch.where(nfin > 0, mn, torch.zeros_like(mn)).to(torch.float64),
        torch.where(nfin > 0, mx, torch.zeros_like(mx)).to(torch.float64),
        (s / nfin.clamp(min=1)) * has,
        fw.pow(2).sum().sqrt(),
        fw.abs().max() if fw.numel() else torch.zeros((), dtype=torch.float64, device=w.device),
        nan.to(torch.float64), inf.to(torch.float64),
        ((w == 0) & torch.isfinite(w) if is_float else (w == 0)).sum().to(torch.float64),
        sub.to(torch.float64),
    ])
    return out
