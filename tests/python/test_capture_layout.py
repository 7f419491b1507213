"""The capture records the run's parallel layout in the fingerprint's `parallel` (docs/layout.md "Recorded by
the capture"): sizes and this rank's coordinates from Megatron's parallel_state (a fake module here: Megatron
is not installed), else the `layout=` argument, else torch.distributed; and how each split parameter is divided
(Megatron's attributes, DTensor placements)."""
import sys
import types

import pytest
import torch
from torch import nn

import capture_helpers  # first: it puts python/ on the path
from capture_helpers import one_process_mesh
import parity  # noqa: E402


def _fingerprint(tmp_path, model, name="run", **options):
    with parity.capture(model, str(tmp_path / name), **options) as cap:
        model(torch.ones(2, 8)).sum().backward()
        cap.next_step()
    return parity.load(str(tmp_path / name)).fingerprint["parallel"]


def _megatron_linear():
    m = nn.Linear(8, 4)
    m.weight.tensor_model_parallel, m.weight.partition_dim, m.weight.partition_stride = True, 0, 1
    m.bias.sequence_parallel = True
    return m


@pytest.fixture
def fake_megatron(monkeypatch):
    """megatron.core.parallel_state as Megatron-LM documents it, initialised at TP 2, PP 2, DP 1, this rank at
    TP rank 1, PP rank 1 (global rank 3 in the order tp-dp-pp)."""
    ps = types.ModuleType("megatron.core.parallel_state")
    state = {"initialised": True}
    ps.model_parallel_is_initialized = lambda: state["initialised"]
    ps.get_tensor_model_parallel_world_size, ps.get_tensor_model_parallel_rank = (lambda: 2), (lambda: 1)
    ps.get_pipeline_model_parallel_world_size, ps.get_pipeline_model_parallel_rank = (lambda: 2), (lambda: 1)
    ps.get_data_parallel_world_size, ps.get_data_parallel_rank = (lambda: 1), (lambda: 0)
    ps.get_virtual_pipeline_model_parallel_world_size = lambda: None
    core = types.ModuleType("megatron.core")
    core.parallel_state = ps
    monkeypatch.setitem(sys.modules, "megatron", types.ModuleType("megatron"))
    monkeypatch.setitem(sys.modules, "megatron.core", core)
    monkeypatch.setitem(sys.modules, "megatron.core.parallel_state", ps)
    return state


def test_megatron_parallel_state_and_parameter_attributes_are_recorded(tmp_path, fake_megatron):
    par = _fingerprint(tmp_path, _megatron_linear(), rank=3, layout={"tp": 4})  # parallel_state wins
    assert par["source"] == "megatron" and (par["tp"], par["pp"], par["dp"]) == (2, 2, 1)
    assert par["coords"] == {"tp": 1, "pp": 1, "dp": 0} and par["rank"] == 3
    assert "order" not in par  # Megatron does not say; the reader finds it from every rank's coordinates
    assert "vpp" not in par    # None: no virtual pipeline
    assert par["params"] == {"weight": {"tensor_model_parallel": True, "partition_dim": 0, "partition_stride": 1},
                             "bias": {"sequence_parallel": True}}


def test_uninitialised_megatron_gives_way_to_the_argument(tmp_path, fake_megatron):
    fake_megatron["initialised"] = False
    par = _fingerprint(tmp_path, _megatron_linear(), rank=5, layout={"tp": 2, "pp": 2, "dp": 2, "order": "tp-pp-dp",
                                                                      "num_layers": 4})
    assert par["source"] == "argument" and (par["tp"], par["pp"], par["dp"], par["order"]) == (2, 2, 2, "tp-pp-dp")
    assert par["coords"] == {"tp": 1, "pp": 0, "dp": 1} and par["num_layers"] == 4  # 5 = 1 + 2·0 + 4·1


def test_without_a_process_group_the_run_is_one_rank(tmp_path):
    par = _fingerprint(tmp_path, nn.Linear(8, 4))
    assert par == {"source": "none", "tp": 1, "pp": 1, "dp": 1, "order": "tp-dp-pp", "world": 1, "rank": 0,
                   "coords": {"tp": 0, "pp": 0, "dp": 0}, "params": {}}


@pytest.mark.parametrize("layout, message", [({"tp": 0}, "positive integer"), ({"order": "tp-pp"}, "once each"),
                                             ({"sp": 2}, "not one of"), ([2], "must be a dict")])
def test_a_wrong_layout_argument_fails_before_anything_is_written(tmp_path, layout, message):
    with pytest.raises((ValueError, TypeError), match=message):
        parity.capture(nn.Linear(8, 4), str(tmp_path / "run"), layout=layout)
    assert not (tmp_path / "run").exists()


def test_torch_distributed_world_and_dtensor_placements(tmp_path):
    """One-process gloo group: the world says DP 1 (nothing else does); a DTensor weight's placements and its
    mesh are recorded with the parameter."""
    with one_process_mesh(tmp_path, ("tp",)) as (mesh, tensor_mod):
        m = nn.Linear(8, 4)
        m.weight = nn.Parameter(tensor_mod.distribute_tensor(m.weight.detach(), mesh, [tensor_mod.Shard(0)]))
        m.bias = nn.Parameter(tensor_mod.distribute_tensor(m.bias.detach(), mesh, [tensor_mod.Replicate()]))
        with pytest.warns(RuntimeWarning, match="DTensor"):
            with parity.capture(m, str(tmp_path / "run")) as cap:
                m(tensor_mod.distribute_tensor(torch.ones(2, 8), mesh, [tensor_mod.Replicate()])).sum().backward()
                cap.next_step()
    par = parity.load(str(tmp_path / "run")).fingerprint["parallel"]
    assert par["source"] == "torch.distributed" and (par["tp"], par["dp"], par["world"]) == (1, 1, 1)
    mesh_of = {"mesh_shape": [1], "mesh_dim_names": ["tp"]}
    assert par["params"] == {"weight": {"dtensor": dict(mesh_of, placements=["Shard(0)"])},
                             "bias": {"dtensor": dict(mesh_of, placements=["Replicate()"])}}


def test_captures_laid_out_alike_compare_rank_by_rank_whatever_else_they_record(tmp_path, fake_megatron):
    """Two captures of one rank of a TP 2 × CP 2 Megatron run: context parallel is not merged, but runs laid
    out alike need no merging, and compare as they always did."""
    ps = sys.modules["megatron.core.parallel_state"]
    ps.get_context_parallel_world_size, ps.get_context_parallel_rank = (lambda: 2), (lambda: 0)
    for name in ("golden", "target"):
        torch.manual_seed(0)
        _fingerprint(tmp_path, _megatron_linear(), name=name, rank=0)
    p = capture_helpers.run_cli("compare", tmp_path / "golden", tmp_path / "target")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
