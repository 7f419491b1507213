"""cap.log() values of every kind a training loop hands it (issue 14): numpy scalars and arrays are
numbers, a NaN inside a list does not make the step's record invalid JSON, and one bad scalars record
(as older captures wrote) costs neither the run nor the other scalars."""
import json
import math
import os
import struct

import numpy as np
import torch

import capture_helpers
import parity
from test_capture_format import crc32c, write_foreign_run


def _capture(path, *steps):
    with parity.capture(torch.nn.Linear(2, 2), path) as cap:
        for i, values in enumerate(steps):
            if i:
                cap.next_step()
            cap.log(**values)
    return parity.load(path)


def test_numpy_scalars_and_arrays_are_numbers(tmp_path):
    run = _capture(tmp_path / "r", dict(loss=np.float32(1.5), tokens=np.int64(3), lr=np.array(2e-4),
                                       ok=np.bool_(True), norms=np.array([1.0, 2.0], dtype=np.float32)),
                   dict(loss=np.float64(1.25), tokens=np.int32(4), lr=np.array(1e-4, dtype=np.float32)))
    s = run.scalars(0)
    assert s[0] == {"loss": 1.5, "tokens": 3, "lr": 2e-4, "ok": True, "norms": [1.0, 2.0]}, s
    assert s[1]["loss"] == 1.25 and s[1]["tokens"] == 4 and math.isclose(s[1]["lr"], 1e-4, rel_tol=1e-6), s
    assert not run.problems
    # "tokens" is a counter, compared only when asked (docs/curves.md "Counters")
    p = capture_helpers.run_cli("curve", tmp_path / "r", tmp_path / "r", "--json", "-", "--counters")
    metrics = {m["metric"] for m in json.loads(p.stdout)["metrics"]}
    assert {"loss", "tokens", "lr"} <= metrics, p.stdout + p.stderr


def test_a_nan_in_a_list_keeps_the_step(tmp_path):
    run = _capture(tmp_path / "r", dict(loss=1.0), dict(loss=0.75, group_norms=[0.5, float("nan")],
                                                         nested={"a": [float("inf"), np.float32("nan")]}),
                   dict(loss=0.5))
    s = run.scalars(0)
    assert s == {0: {"loss": 1.0}, 1: {"loss": 0.75, "group_norms": [0.5, "nan"], "nested": {"a": ["inf", "nan"]}},
                 2: {"loss": 0.5}}, s
    assert not run.problems


def _raw_frame(payload):
    length = struct.pack("<I", len(payload))
    return b"PFR1" + length + struct.pack("<I", crc32c(length + payload)) + payload


def test_a_bad_scalars_record_costs_only_itself(tmp_path):
    """A run written before the fix: its step-1 record holds the text with a bare NaN (kept as a string
    by the writer), one record is not JSON at all. The other steps, and the loss of step 1, survive."""
    write_foreign_run(tmp_path / "run")
    with open(os.path.join(tmp_path, "run", "rank0", "scalars.pfr"), "ab") as f:
        f.write(_raw_frame(json.dumps({"kind": "scalars", "rank": 0, "step": 1,
                                       "values": '{"loss": 0.75, "group_norms": [0.5, NaN]}'}).encode()))
        f.write(_raw_frame(b'{"kind": "scalars", "rank": 0, "step": 2, "values": {"loss": 0.5, "x": NaN}}'))
        f.write(_raw_frame(json.dumps({"kind": "scalars", "rank": 0, "step": 3, "values": {"loss": 0.25}}).encode()))
    run = parity.load(tmp_path / "run")
    s = run.scalars(0)
    assert s[0] == {"loss": 1.25} and s[3] == {"loss": 0.25}, s
    assert s[1] == {"loss": 0.75, "group_norms": [0.5, "nan"]}, s
    assert any("step 1" in p and "NaN" in p for p in run.problems), run.problems
    assert any("record 2 is not a JSON object" in p for p in run.problems), run.problems
    p = capture_helpers.run_cli("curve", tmp_path / "run", tmp_path / "run", "--json", "-")
    loss = {m["metric"]: m for m in json.loads(p.stdout)["metrics"]}["loss"]
    assert loss["aligned_steps"] == 3, loss
