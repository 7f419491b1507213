"""Runs laid out over tensor-parallel ranks against an unsharded golden (docs/layout.md): the example's
Megatron-style model on torch.distributed (gloo, CPU) at TP 1, 2 and 4, each rank capturing itself, merged
by `parity compare --layout`. A healthy TP run passes whatever its degree; a fault on one TP rank's shard
or on one rank's all-reduce fails at that module; without the layout the same runs cannot pass."""
import json

import pytest

from capture_helpers import run_cli, run_example


def _capture(tmp_path_factory, name, *args):
    return run_example("tensor_parallel", tmp_path_factory.mktemp("tp") / name, *args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return {name: _capture(tmp_path_factory, name, *args) for name, args in [
        ("golden", ["--tp", "1"]), ("tp2", ["--tp", "2"]), ("tp4", ["--tp", "4"]),
        ("shard", ["--tp", "2", "--fault", "shard"]), ("reduce", ["--tp", "2", "--fault", "reduce_bf16"])]}


def _compare(runs, target, tmp_path, *extra):
    out = tmp_path / "cmp.json"
    p = run_cli("compare", runs["golden"], runs[target], "--layout", runs[target] + ".layout.json", "--json", out, *extra)
    return p.returncode, json.loads(out.read_text())


@pytest.mark.parametrize("target", ["tp2", "tp4"])
def test_a_healthy_tensor_parallel_run_passes_against_one_device(runs, target, tmp_path):
    code, res = _compare(runs, target, tmp_path)
    assert code == 0 and res["summary"]["verdict"] == "pass", res["summary"]
    assert res["summary"]["rows"] == 140 and not res["unmatched"]["golden"] and not res["unmatched"]["target"]
    weights = {r["name"]: r for r in res["rows"]}
    assert weights["layers.0.mlp.down_proj/forward/parameter/weight"]["target"]["shape"] == [64, 128]  # merged


@pytest.mark.parametrize("target, where", [("shard", "layers.1.mlp.down_proj/forward/parameter/weight"),
                                           ("reduce", "layers.0.self_attn.o_proj/forward/output/0")])
def test_a_fault_on_one_tp_rank_is_found_at_its_module(runs, target, where, tmp_path):
    code, res = _compare(runs, target, tmp_path)
    assert code == 1 and res["summary"]["verdict"] == "fail"
    assert res["first_divergence"]["name"] == where


def test_the_recorded_layout_merges_parameters_and_gradients_without_a_file(runs, tmp_path):
    # The capture recorded TP 2 (layout=) and each weight's partition_dim: parameters and gradients merge;
    # activations' splits are no tensor's attribute, so their rows stay unmerged (shapes differ: error).
    out = tmp_path / "cmp.json"
    p = run_cli("compare", runs["golden"], runs["tp2"], "--json", out)
    res = json.loads(out.read_text())
    weights = [r for r in res["rows"] if "/parameter/" in r["name"] or "/grad/" in r["name"]]
    assert len(weights) == 42 and {r["verdict"] for r in weights} == {"pass"}, p.stdout[-3000:]
    by_name = {r["name"]: r for r in weights}
    assert by_name["layers.0.mlp.down_proj/forward/parameter/weight"]["target"]["shape"] == [64, 128]
    assert by_name["layers.1.mlp.down_proj/backward/grad/weight"]["target"]["shape"] == [64, 128]
    assert by_name["embed_tokens/backward/grad/weight"]["target"]["shape"] == [128, 64]
    assert res["summary"]["rows"] == 140 and p.returncode == 1


def test_parity_info_shows_each_ranks_recorded_place(runs):
    text = run_cli("info", runs["tp2"]).stdout
    assert "; parallel tp 2, pp 1, dp 1, this rank tp 1, pp 0, dp 0 (from argument)" in text, text
    assert "parallel" not in run_cli("info", runs["golden"]).stdout  # one process: nothing to say


def test_a_layout_file_without_sides_takes_the_recorded_sizes(runs, tmp_path):
    layout = json.loads(open(runs["tp4"] + ".layout.json").read())
    del layout["golden"], layout["target"]  # the splits alone: the captures say TP 1 and TP 4
    splits = tmp_path / "splits.layout.json"
    splits.write_text(json.dumps(layout))
    out = tmp_path / "cmp.json"
    p = run_cli("compare", runs["golden"], runs["tp4"], "--layout", splits, "--json", out)
    res = json.loads(out.read_text())
    assert p.returncode == 0 and res["summary"]["verdict"] == "pass" and res["summary"]["rows"] == 140, p.stdout[-3000:]


def test_a_layout_file_that_disagrees_with_the_capture_names_both(runs, tmp_path):
    layout = json.loads(open(runs["tp2"] + ".layout.json").read())
    layout["target"] = {"tp": 4}
    wrong = tmp_path / "tp4.layout.json"
    wrong.write_text(json.dumps(layout))
    p = run_cli("compare", runs["golden"], runs["tp2"], "--layout", wrong)
    assert p.returncode == 2
    assert "tp4.layout.json: target.tp is 4, but the target's capture ({} (parity-run)) recorded tp 2".format(runs["tp2"]) \
        in p.stderr + p.stdout


def test_without_the_layout_the_sharded_run_cannot_pass(runs, tmp_path):
    p = run_cli("compare", runs["golden"], runs["tp2"])
    assert p.returncode != 0


def test_a_layout_that_misplaces_a_split_fails(runs, tmp_path):
    # o_proj declared column-parallel: its weight shards are stacked along the wrong dimension.
    layout = json.loads(open(runs["tp2"] + ".layout.json").read())
    layout["splits"].insert(0, {"modules": r"\.o_proj$", "split": "column"})
    wrong = tmp_path / "wrong.layout.json"
    wrong.write_text(json.dumps(layout))
    p = run_cli("compare", runs["golden"], runs["tp2"], "--layout", wrong)
    assert p.returncode == 1, p.stdout[-2000:]
    assert "o_proj" in p.stdout


def test_the_failing_row_names_the_tp_shard_that_carries_the_error(runs, tmp_path):
    _, res = _compare(runs, "shard", tmp_path)
    first = {s["name"]: s for s in res["shards"]}["layers.1.mlp.down_proj/forward/parameter/weight"]
    assert first["side"] == "target" and first["row"] == res["first_divergence"]["row"]
    err = {p["label"]: p["rel_l2"] for p in first["shards"]}
    assert err["TP shard 0 of 2"] == 0 and err["TP shard 1 of 2"] > 0.1, err
    text = run_cli("compare", runs["golden"], runs["shard"], "--layout", runs["shard"] + ".layout.json").stdout
    assert "layers.1.mlp.down_proj/forward/parameter/weight (target): TP shard 1 of 2 rel L2" in text

