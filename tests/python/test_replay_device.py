"""Replay on the recorded device and under the recorded autocast (docs/replay.md "Device and autocast"):
an op captured under torch.autocast is called again under it (else a mixed-dtype matmul fails or rounds
differently), device arguments of factory ops follow the replay device, and a capture whose device this
machine lacks replays on the host with the note saying so."""
import os
import sys

import pytest
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("PARITY_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import parity  # noqa: E402
from parity import replay  # noqa: E402
from parity.examples import SyntheticCorpus, build_model  # noqa: E402
from test_replay import replay_json  # noqa: E402

CORPUS = SyntheticCorpus(64, 1 << 12)
_MATMUL_LIKE = ("linear", "matmul", "bmm", "mm", "addmm", "baddbmm", "__matmul__", "scaled_dot_product_attention")


class _Factory(nn.Module):
    """A module that builds tensors with a device argument (positions, a mask), as HF models do."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        pos = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
        scale = torch.ones(1, 1, 8, device=x.device)
        y = self.lin(x + pos[None, :, None]) * scale
        return y.to(x.device) + torch.zeros(x.shape, device=str(x.device))


def _autocast_capture(path):
    torch.manual_seed(0)
    model = build_model("llama", "tiny")
    x, y = CORPUS.batch(0, 2, 12)
    with parity.capture(model, str(path), level="op", mode="tensor", steps=(0,)) as cap:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
        loss = nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        cap.next_step()


def test_autocast_capture_records_the_region_and_replays_bit_exact(tmp_path):
    _autocast_capture(tmp_path / "run")
    events = replay.op_events(parity.load(tmp_path / "run"))
    lin = [e for e in events.values() if e.spec and e.spec.get("fn", "").endswith(".linear")]
    assert lin and all(e.spec.get("autocast") == "cpu:bfloat16" for e in lin)
    assert all(e.outputs[0].dtype == "bf16" and e.inputs[0].dtype == "f32" for e in lin[:1])
    loss = [e for e in events.values() if "cross_entropy" in (e.fn or "")]
    assert loss and "autocast" not in loss[0].spec  # outside the region: nothing recorded
    doc, p = replay_json(tmp_path, tmp_path / "run")
    reps = [e for e in doc["events"] if e["status"] == "replayed"]
    bad = [e for e in doc["events"] if e["status"] != "replayed" and "Generator" not in e["reason"]]
    assert not bad, bad[:3]
    mm = [e for e in reps if e["fn"].rsplit(".", 1)[-1] in _MATMUL_LIKE]
    assert len(mm) >= 10
    assert all(e["bit_exact"] for e in mm), [e for e in mm if not e["bit_exact"]][:2]
    assert all(e.get("autocast") == "cpu:bfloat16" for e in mm)
    assert all(e["bit_exact"] for e in reps), [e for e in reps if not e["bit_exact"]][:2]
    assert all(e["replay_device"] == "cpu" for e in doc["events"]) and doc["device"] == "auto"
    # the exact reference stays without autocast: the bf16 outputs are measured against float64 math
    assert all(e["error_u"] <= 4 for e in mm), [(e["event"], e["error_u"]) for e in mm][:4]


def test_emulated_replay_runs_under_the_recorded_autocast(tmp_path):
    _autocast_capture(tmp_path / "run")
    doc, _ = replay_json(tmp_path, tmp_path / "run", "--module", "layers.0", "--emulate", "bf16")
    mm = [e for e in doc["events"] if e["status"] == "replayed" and e["fn"].endswith(".linear")]
    assert mm and all("error_u" in e["emulated"] for e in mm), [e.get("emulated") for e in mm][:2]


def _factory_capture(path):
    torch.manual_seed(0)
    m = _Factory()
    x = torch.randn(2, 5, 8)
    with parity.capture(m, str(path), level="op", mode="tensor", steps=(0,)) as cap:
        m(x)
        cap.next_step()


def test_device_arguments_follow_the_replay_device(tmp_path):
    """A capture made on a device this machine lacks (the dump says cuda:0; rewritten here in memory):
    factory ops and .to(device) replay on the host, with replay_device saying so."""
    _factory_capture(tmp_path / "run")
    events = replay.op_events(parity.load(tmp_path / "run"))

    def to_cuda(x):
        if isinstance(x, dict):
            if x.get("t") == "device" or (x.get("t") == "str" and x.get("v") == "cpu"):
                return dict(x, v="cuda:0")
            return {k: to_cuda(v) for k, v in x.items()}
        if isinstance(x, list):
            return [to_cuda(v) for v in x]
        return x

    devs = set()
    for ev in events.values():
        devs |= {a.get("v") for a in ev.spec.get("kwargs", {}).values() if a.get("t") in ("device", "str")}
        ev.described = dict(ev.described, replay=to_cuda(ev.spec))
        for r in list(ev.inputs.values()) + list(ev.outputs.values()):
            object.__setattr__(r, "device", "cuda:0")
    assert "cpu" in devs  # the factories were recorded with a device argument
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the recorded device is present")
    results = [replay.replay_event(ev, None, replay.DeviceMap("auto")) for ev in events.values()]
    assert results and all(r["status"] == "replayed" for r in results), [r for r in results if r["status"] != "replayed"]
    assert all(r["replay_device"] == "cpu" and r["bit_exact"] for r in results)
    factories = {r["fn"] for r in results}
    assert {"torch.arange", "torch.ones", "torch.zeros", "torch.Tensor.to"} <= factories, factories


def test_the_note_names_both_devices_only_when_they_differ():
    assert replay._why_not_exact("cuda:0", torch.device("cpu")) == "recorded on cuda:0, replayed on cpu: another kernel"
    assert replay._why_not_exact("cuda:0", torch.device("cuda")) == "the replay on this machine differs from the recorded output"
    assert replay._why_not_exact("cpu", torch.device("cpu")) == "the replay on this machine differs from the recorded output"


def test_device_option(tmp_path):
    _factory_capture(tmp_path / "run")
    doc, p = replay_json(tmp_path, tmp_path / "run", "--device", "cpu", expect=0)
    assert doc["device"] == "cpu" and all(e["replay_device"] == "cpu" for e in doc["events"])
    if not torch.cuda.is_available():
        out = tmp_path / "bad.json"
        from test_replay import replay_cli

        p = replay_cli(tmp_path / "run", "--device", "cuda:0", "--json", out, expect=2)
        assert "no such device" in p.stderr
    with pytest.raises(ValueError):
        replay.DeviceMap("nonsense:device")
