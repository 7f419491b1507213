"""Replay and compare share their rules through the extension (issue 32 §4): the event a record belongs to, an
op's reduction length n (the expected rounding u·sqrt(1 + log2 n) both measure in), the noise classes and how a
ratio is spelled are the C++ core's (parity/analysis.h, parity/noise.h), not a second copy in Python.

The disagreement this fixes: replay treated an op on neither list — elementwise in C++'s is_elementwise_op, or
reducing in replay's own table — as elementwise (n = 1), compare as a reduction over its first floating input's
last dimension, so one op output got two noise units. Now `erf` of a [4, 64] input has n = 64 in both.
"""
import math
import os
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("PARITY_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import parity  # noqa: E402
from parity import replay  # noqa: E402
from parity._core import core  # noqa: E402

WIDTH = 64  # the last dimension of erf's input: compare's n for an op it does not list as elementwise


class ErfOfLinear(torch.nn.Module):
    """erf, an op neither C++'s elementwise list nor replay's old reducing table names, after a linear."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return torch.erf(self.lin(x))


def capture(path, weight_noise):
    torch.manual_seed(0)
    model = ErfOfLinear()
    x = torch.randn(4, WIDTH)
    with torch.no_grad():  # the target's weights differ by a few fp32 roundings: erf's output rows differ
        model.lin.weight.mul_(1 + weight_noise * torch.randn_like(model.lin.weight))
    with parity.capture(model, str(path), level="op", mode="tensor", steps=(0,), direction="forward") as cap:
        model(x)
        cap.next_step()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("shared_rules")
    capture(root / "golden", 0.0)
    capture(root / "target", 3e-7)
    return root


def erf_row(result):
    rows = [r for r in result["rows"] if r["op"] == "erf" and r["role"] == "output"]
    assert len(rows) == 1, [r["name"] for r in result["rows"]]
    return rows[0]


def test_an_unlisted_op_gets_the_same_reduction_length_in_compare_and_replay(runs):
    row = erf_row(parity.compare(runs / "golden", runs / "target"))
    assert isinstance(row["noise_ratio"], float) and row["noise_ratio"] > 0, row
    compare_expected = row["metrics"]["rel_l2"] / row["noise_ratio"]  # noise_ratio = rel_l2 / expected

    doc = replay.run(str(runs / "target"), progress=False)
    event = next(e for e in doc["events"] if e["op"] == "erf")
    assert event["status"] == "replayed", event
    assert event["reduction"] == WIDTH  # replay's old rule gave 1
    replay_expected = core.expected_rounding_error(core.unit_roundoff("f32"), event["reduction"])
    assert replay_expected == pytest.approx(compare_expected, rel=1e-9)
    # and not the elementwise unit replay used before: sqrt(1 + log2 64) = 2.6 times smaller
    assert core.expected_rounding_error(core.unit_roundoff("f32"), 1) < 0.5 * compare_expected


def test_replay_names_events_as_compare_does(runs):
    """Replay's event is compare's event name (the core's event_stem) without the direction."""
    result = parity.compare(runs / "golden", runs / "target")
    compare_events = {core.event_stem(r["name"], r["role"]) for r in result["rows"] if r["direction"] == "forward"}
    replay_events = {ev.stem for ev in replay.op_events(parity.load(runs / "target")).values()}
    assert replay_events and {e + "/forward" for e in replay_events} <= compare_events
    assert replay._stem("<root>/erf#0/forward/output/0") == "<root>/erf#0"
    assert replay._stem("<root>/erf#0") == "<root>/erf#0"


@pytest.mark.parametrize("ratio,text", [(0.414, "0.414 u"), (16777.2, "16777 u"), (math.inf, "non-finite"),
                                        (math.nan, "n/a")])
def test_ratios_are_spelled_and_classed_as_compare_spells_them(ratio, text):
    assert replay._ratio_text(ratio) == text == core.noise_ratio_text(ratio)
    assert replay._ratio_text({"Infinity": "Infinity"}.get(text, ratio)) == text  # the JSON's spelling too


@pytest.mark.parametrize("ratio,cls", [(math.nan, "unknown"), (4.0, "noise"), (4.5, "elevated"), (32.0, "elevated"),
                                       (32.5, "structural")])
def test_noise_classes_are_the_cores(ratio, cls):
    assert replay.noise_class(ratio) == cls
