"""One KL row policy for compare, eval and scan (docs/metrics.md "KL divergence"): core.kl_rows is the
accumulator compare's softmax KL uses, and scan's per-token KL goes through it. The named disagreement it
fixes: scan called any row with a non-finite lowered log-probability +inf (so a vocabulary masked with
-inf on both sides never fit a budget) and did not check the golden at all (a NaN golden row gave the
partial sum of its other terms), while compare and eval skip rows without a distribution."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from parity._core import core  # noqa: E402
from parity import sensitivity  # noqa: E402

INF = math.inf


def log_softmax(x):
    return torch.log_softmax(torch.tensor(x, dtype=torch.float64), dim=-1)


def old_scan_kld(g, q):
    """The per-token KL scan computed before the accumulator (torch, its own non-finite rule)."""
    finite = torch.isfinite(q).all(dim=-1)
    p = g.exp()
    k = torch.where(p > 0, p * (g - q), torch.zeros_like(p)).sum(-1)
    return torch.where(finite, k, torch.full_like(k, INF)).tolist()


def test_kl_rows_is_compares_softmax_kl():
    rng = np.random.default_rng(3)
    g = rng.normal(size=(7, 50))
    t = g + rng.normal(scale=0.1, size=g.shape)
    t[2, 5] = np.nan   # the target has no distribution
    g[4, :] = -np.inf  # the golden has none
    g[5, 7] = -np.inf  # a masked token
    r = core.kl_rows(g, t)
    m = core.compare_arrays(g, t, kl=True)
    assert (m["kl_rows"], m["kl_rows_skipped"]) == (r["count"], r["skipped"]) == (5, 2)
    assert r["skipped_target"] == 1
    assert list(r["skip"]) == [0, 0, 2, 0, 1, 0, 0]
    assert m["kl"] == r["mean"]  # the same row KL and the same pairwise mean
    assert math.isnan(r["kl"][2]) and math.isnan(r["kl"][4])


def test_masked_vocabulary_the_named_disagreement():
    # Both sides mask token 2 (-inf logits): a distribution over the other tokens on each side.
    g = log_softmax([[0.0, 1.0, -INF, 2.0]])
    q = log_softmax([[0.1, 1.0, -INF, 2.0]])
    assert old_scan_kld(g, q) == [INF]  # the old scan: never within any budget
    k, broken = sensitivity._sequence_kld(g, q)
    compare_kl = core.compare_arrays(g.numpy(), q.numpy(), kl=True)["kl"]
    assert broken == 0 and 0 < k < 1e-2 and k == compare_kl  # now: the finite KL compare gives


def test_a_lowered_row_without_distribution_is_still_infinite():
    g = log_softmax([[0.0, 1.0, 2.0], [0.0, 0.5, 1.0]])
    q = g.clone()
    q[1, 0] = math.nan
    assert old_scan_kld(g, q)[1] == INF  # unchanged: a lowering that breaks the distribution fails
    assert sensitivity._sequence_kld(g, q) == (INF, 1)
    assert core.compare_arrays(g.numpy(), q.numpy(), kl=True)["kl_rows_skipped"] == 1  # compare counts it


def test_a_golden_row_without_distribution_is_left_out():
    g = log_softmax([[0.0, 1.0, 2.0], [0.0, 0.5, 1.0]])
    q = log_softmax([[0.0, 1.5, 2.0], [0.0, 0.5, 1.0]])
    g[1, 1] = math.nan
    assert math.isfinite(old_scan_kld(g, q)[1])  # the old scan: a partial sum of the finite terms
    k, broken = sensitivity._sequence_kld(g, q)
    assert broken == 0
    assert k == core.kl_rows(g[:1].numpy(), q[:1].numpy())["mean"]  # now: the row is left out


def test_measure_keeps_per_sequence_means():
    torch.manual_seed(0)
    g = torch.log_softmax(torch.randn(3, 5, 11, dtype=torch.float64), -1)
    q = torch.log_softmax(g + 0.05 * torch.randn_like(g), -1)
    m = sensitivity._measure([g], [q], [(torch.zeros(3, 5, dtype=torch.long), None)])
    per_seq = [(gs.exp() * (gs - qs)).sum(-1).mean().item() for gs, qs in zip(g, q)]
    assert m["kld"]["n"] == 3
    assert m["kld"]["mean"] == pytest.approx(sum(per_seq) / 3, rel=1e-12)
    assert m["nonfinite_tokens"] == 0


def test_kl_rows_rejects_different_shapes():
    with pytest.raises(ValueError):
        core.kl_rows(np.zeros((2, 3)), np.zeros((3, 2)))
