"""Capture on torch 2.x (issue 12 §1): a torch.compile'd model is recorded at module, op and mix level
under the names of the uncompiled model, with the same values; fp8 tensors (float8_e4m3fn, float8_e5m2)
are captured bit-exactly and compared; DTensor parameters are recognised."""
import contextlib
import json

import numpy as np
import pytest
import torch
import torch.nn as nn

import capture_helpers
import parity


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))


def step(m, call, path, level):
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))
    with parity.capture(m, str(path), level=level, mode="tensor") as cap:
        call(x).sum().backward()
        cap.next_step()
    return parity.load(str(path))


@pytest.mark.parametrize("level", ["module", "mix"])
def test_compiled_model_records_like_the_eager_one(tmp_path, level):
    if not hasattr(torch, "compile"):
        pytest.skip("torch.compile needs torch 2.x")
    torch._dynamo.reset()
    eager = model()
    ref = step(eager, eager, tmp_path / "eager", level)
    m = model()
    # aot_eager: dynamo's graph capture and AOTAutograd as with the default inductor backend, without
    # its C++ code generation (a minute of compiling on 2 cores)
    compiled = torch.compile(m, backend="aot_eager")
    run = step(compiled, compiled, tmp_path / "compiled", level)  # the compiled wrapper itself is captured
    assert sorted(r.name for r in run) == sorted(r.name for r in ref)
    assert "0/forward/output/0" in {r.name for r in run} and "0/backward/grad/weight" in {r.name for r in run}
    p = capture_helpers.run_cli("compare", tmp_path / "eager", tmp_path / "compiled", "--json", tmp_path / "c.json")
    res = json.loads((tmp_path / "c.json").read_text())
    assert p.returncode == 0 and res["summary"]["verdict"] == "pass", p.stdout[-3000:]
    assert res["summary"]["unmatched_golden"] == res["summary"]["unmatched_target"] == 0


FP8 = [n for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)]


class Cast(nn.Module):
    def forward(self, x, dtype):
        return x.to(dtype)


@pytest.mark.parametrize("name", FP8)
def test_fp8_round_trip_and_compare(tmp_path, name):
    dtype = getattr(torch, name)
    x = torch.randn(64, 32, generator=torch.Generator().manual_seed(2)) * 4
    golden = Cast()(x, dtype)
    for path, scale in (("golden", 1.0), ("target", 1.0 + 2 ** -4)):
        m = Cast()
        with parity.capture(m, str(tmp_path / path), mode="tensor") as cap:
            m(x * scale, dtype)
            cap.next_step()
    rec = parity.load(str(tmp_path / "golden")).get("<root>/forward/output/0", 0, 0)
    assert rec.dtype == {"float8_e4m3fn": "f8_e4m3", "float8_e5m2": "f8_e5m2"}[name]
    assert np.array_equal(rec.array, golden.view(torch.uint8).numpy())  # the raw bytes
    assert np.array_equal(rec.to_float32(), golden.float().numpy())      # exact widening
    assert rec.stats["max"] == golden.float().max().item() and rec.stats["min"] == golden.float().min().item()
    p = capture_helpers.run_cli("compare", tmp_path / "golden", tmp_path / "target", "--json", tmp_path / "c.json")
    res = json.loads((tmp_path / "c.json").read_text())
    row = next(r for r in res["rows"] if r["name"] == "<root>/forward/output/0")
    assert row["mode"] == "tensor" and row["golden"]["dtype"] == rec.dtype
    assert 0 < row["metrics"]["max_abs"] and row["metrics"]["cosine"] > 0.99, row


def test_dtensor_parameters_are_recorded_as_local_shards(tmp_path):
    """A single-process gloo DeviceMesh: a Linear whose weight is a DTensor sharded on dim 0 and whose
    bias is replicated. Each DTensor is recorded as this rank's local shard (no collective in a hook)
    with one warning naming it; with one rank the shard is the whole tensor, so the run compares equal
    to the same Linear with plain parameters."""
    with capture_helpers.one_process_mesh(tmp_path) as (mesh, tensor_mod):
        x = torch.randn(2, 8, generator=torch.Generator().manual_seed(3))
        for path, shard in (("plain", False), ("dtensor", True)):
            torch.manual_seed(0)
            m = nn.Linear(8, 4)
            inp = x
            if shard:
                m.weight = nn.Parameter(tensor_mod.distribute_tensor(m.weight.detach(), mesh, [tensor_mod.Shard(0)]))
                m.bias = nn.Parameter(tensor_mod.distribute_tensor(m.bias.detach(), mesh, [tensor_mod.Replicate()]))
                inp = tensor_mod.distribute_tensor(x, mesh, [tensor_mod.Replicate()])
            with pytest.warns(RuntimeWarning, match=r"is a DTensor \(placements .*local shard") if shard else \
                    contextlib.nullcontext():
                with parity.capture(m, str(tmp_path / path), mode="tensor") as cap:
                    m(inp).sum().backward()
                    cap.next_step()
            assert cap.skipped == 0
    names = {r.name for r in parity.load(str(tmp_path / "dtensor"))}
    assert {"<root>/forward/parameter/weight", "<root>/backward/grad/weight", "<root>/forward/output/0"} <= names
    p = capture_helpers.run_cli("compare", tmp_path / "plain", tmp_path / "dtensor", "--json", tmp_path / "c.json")
    res = json.loads((tmp_path / "c.json").read_text())
    assert p.returncode == 0 and res["summary"]["rows"] == len(names), p.stdout[-3000:]
    assert all(r["metrics"]["max_abs"] == 0 for r in res["rows"]), p.stdout[-3000:]
