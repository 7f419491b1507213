"""Measuring a replayed op's output: its error against the exact reference in units of the expected rounding
of its dtype, u·sqrt(1 + log2 n) (docs/replay.md "Local error"), and whether it is bit-exact. The unit roundoff, the
rounding expectation, the reduction length n and the noise classes are the core's (parity/noise.h,
parity/analysis.h), through the extension: replay and compare measure in one unit."""
import math

from ._lazy import _core, _torch
from .ops import _NotReplayable


def unit_roundoff(dtype):
    return _core().unit_roundoff(dtype)


def expected_rounding(u, n):
    return _core().expected_rounding_error(u, int(n))


def _reduction_length(ev):
    """n of the event's rounding expectation, by compare's rule (op_reduction_length, parity/analysis.h): 1 for
    an elementwise op, else the last dimension of its first floating input; an op on neither list reduces."""
    inputs = [(ev.inputs[i].dtype, [int(d) for d in ev.inputs[i].shape]) for i in sorted(ev.inputs)]
    output = [int(d) for d in ev.outputs[0].shape] if 0 in ev.outputs else []
    return _core().reduction_length(ev.op, inputs, output)


def error_ratio(rec, ref, u, n):
    """(ratio, relative error, non-finite born) of a recorded output against its exact reference: the
    normwise relative error ‖rec − ref‖₂ / ‖ref‖₂ over positions where both are finite, divided by the
    expected rounding u·sqrt(1 + log2 n); non-finite values where the reference has another value make
    the ratio infinite (docs/replay.md "Local error")."""
    torch = _torch()
    if tuple(rec.shape) != tuple(ref.shape):
        return math.inf, math.inf, 0
    a, b = rec.to(torch.float64, copy=True), ref.double()  # a is ours to subtract into
    # The common case in two fused passes: in float64 neither norm can overflow for values of a narrower
    # dtype, so both are finite exactly when every element of both tensors is.
    norm = float(torch.linalg.vector_norm(b))
    diff = float(torch.linalg.vector_norm(torch.sub(a, b))) if math.isfinite(norm) else math.nan
    if math.isfinite(diff) and math.isfinite(norm):
        rel = diff / norm if norm > 0 else (0.0 if diff == 0 else math.inf)
        if rel == 0:
            return 0.0, 0.0, 0
        expected = expected_rounding(u, n) if u > 0 else 0.0
        return (rel / expected if expected > 0 else math.inf), rel, 0
    fa, fb = torch.isfinite(a), torch.isfinite(b)
    born = int((~fa & fb).sum())
    lost = int((fa & ~fb).sum())
    both_nf = ~fa & ~fb
    differ_nf = int((both_nf & ~((a == b) | (torch.isnan(a) & torch.isnan(b)))).sum())
    both = fa & fb
    diff = float(torch.linalg.vector_norm((a - b)[both])) if bool(both.any()) else 0.0
    norm = float(torch.linalg.vector_norm(b[both])) if bool(both.any()) else 0.0
    rel = diff / norm if norm > 0 else (0.0 if diff == 0 else math.inf)
    if born or lost or differ_nf:
        return math.inf, rel, born
    if rel == 0:
        return 0.0, 0.0, 0
    expected = expected_rounding(u, n) if u > 0 else 0.0
    return (rel / expected if expected > 0 else math.inf), rel, 0


def bit_exact(rec, out):
    torch = _torch()
    if out.dtype != rec.dtype or tuple(out.shape) != tuple(rec.shape):
        return False
    a, b = out.contiguous(), rec.contiguous()
    if a.dtype.is_floating_point:
        ibits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return bool(torch.equal(a.view(ibits), b.view(ibits)))
    return bool(torch.equal(a, b))


def _structural_min():
    return _core().noise_params()[1]


def noise_class(ratio):
    """noise / elevated / structural / unknown: the core's classes (parity/noise.h)."""
    return _core().noise_class(ratio)


def _num(x):
    """JSON number, or the strings "Infinity" / "NaN" (docs/replay.md)."""
    if x is None:
        return None
    if isinstance(x, float) and (math.isinf(x) or math.isnan(x)):  # compare's spelling (docs/compare-json.md)
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    return x


def _measure(outputs_rec, reference, u_of, n):
    worst, worst_rel, born = 0.0, 0.0, 0
    if len(reference) < len(outputs_rec):
        raise _NotReplayable("the op returned {} tensors, {} were recorded".format(len(reference), len(outputs_rec)))
    for i, rec in outputs_rec.items():
        r, rel, b = error_ratio(rec, reference[i], u_of(i), n)
        born += b
        if r > worst or r != r:
            worst = r
        worst_rel = max(worst_rel, rel) if rel == rel else worst_rel
    return worst, worst_rel, born
