"""Fault benchmark, fast subset (bench/faultbench): one test per scenario. Each builds its golden and
target captures once, runs the real `parity compare --json`, and asserts all four scores of
bench/faultbench/bench.py: verdict (benign passes, fault fails), location (the top suspect is the
injected module; for benign runs no structural suspect), code (an expected diagnosis code appears;
benign: only allowed codes) and no false codes (every code of strength > 0 is expected or allowed).

These assert what a careful expert would answer, not what parity does today; a failure names the
score that missed, the top suspects and the codes.
"""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("PARITY_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, os.path.join(SOURCE_DIR, "bench"))

from capture_helpers import parity_bin  # noqa: E402
from faultbench import bench  # noqa: E402
from faultbench import faults  # noqa: E402
from faultbench.scenarios import by_name, fast_names  # noqa: E402


def explain(r):
    brief = {k: r.get(k) for k in ("name", "kind", "location", "expected", "allowed", "exit_code", "summary",
                                   "first_divergence", "scores")}
    brief["suspects"] = [{k: s.get(k) for k in ("kind", "event", "rank", "step", "score", "output_ratio")}
                         for s in (r.get("suspects") or [])[:3]]
    brief["codes"] = [{k: c.get(k) for k in ("code", "strength", "events")} for c in r.get("codes") or []]
    return json.dumps(brief, indent=1, default=str)


@pytest.mark.parametrize("name", fast_names())
def test_fast_scenario(tmp_path, name):
    r = bench.run_scenario(by_name()[name], tmp_path, parity_bin())
    assert r["error"] is None, r["error"]
    missed = [k for k in bench.SCORES if r["scores"][k] is False]
    assert not missed, "missed: {}\n{}".format(", ".join(missed), explain(r))


def test_fast_subset_is_representative():
    names = set(fast_names())
    assert 6 <= len(names) <= 8
    assert {"llama_autocast_bf16_mask1e4", "encoder_gelu_tanh", "encoder_layernorm_wrong_eps",
            "gpt2_int8_attention_scores", "llama_loss_scale_overflow", "llama_adamw_eps"} <= names
    assert {by_name()[n].kind for n in names} == {"benign", "fault"}


def test_e4m3_rounding_is_exact():
    """The fp8 emulation rounds to the nearest e4m3fn value, ties to even, saturating at 448: checked
    against brute force over the enumerated code points (and against torch.float8_e4m3fn if present)."""
    import torch
    vals = torch.tensor(faults.e4m3_values(), dtype=torch.float64)
    assert len(vals) == 127 and vals[-1] == 448 and vals[1] == 2.0 ** -9
    g = torch.Generator().manual_seed(0)
    mids = (vals[1:] + vals[:-1]) / 2
    x = torch.cat([torch.randn(4000, generator=g) * s for s in (1e-3, 0.05, 1.0, 30.0, 300.0)]
                  + [vals.float(), -mids.float(), mids.float(), torch.tensor([0.0, 500.0, -1e6])])
    got = faults.round_e4m3(x).double()
    d = (x.double().abs().clamp(max=448)[:, None] - vals[None, :]).abs()
    ties = d == d.min(1).values[:, None]
    even = ties & (torch.arange(len(vals)) % 2 == 0)  # the sorted index of a value is its code
    pick = torch.where(ties.sum(1) > 1, even.float().argmax(1), ties.float().argmax(1))
    want = vals[pick] * torch.sign(x.double())
    assert torch.equal(got, want)
    if faults.has_float8():
        xs = x[x.abs() <= 448]
        assert torch.equal(faults.round_e4m3(xs), xs.to(torch.float8_e4m3fn).float())
