"""Runs split into pipeline stages against an unpipelined golden (docs/layout.md "PP stages"): the example's
Llama-style model (4 layers, 2 microbatches) on torch.distributed (gloo, CPU) at PP 1 and 2, each stage
capturing itself, merged by `parity compare --layout`. A healthy PP-2 run passes with every layer under its
global number; a stage 0 that sends the microbatches in the wrong order is found at the stage boundary (what
stage 1 received is not what stage 0 sent) and first diverges at stage 1's first layer."""
import json

import pytest

from capture_helpers import run_cli, run_example


def _capture(base, name, *args):
    return run_example("pipeline_parallel", base / name, *args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("pp")
    return {name: _capture(base, name, *args) for name, args in [
        ("golden", ["--pp", "1"]), ("pp2", ["--pp", "2"]), ("microbatch", ["--pp", "2", "--fault", "microbatch"])]}


def _compare(runs, target, tmp_path):
    out = tmp_path / "cmp.json"
    p = run_cli("compare", runs["golden"], runs[target], "--layout", runs[target] + ".layout.json", "--json", out)
    return p.returncode, json.loads(out.read_text()), p.stdout


def test_a_healthy_pipeline_run_passes_with_global_layer_numbers(runs, tmp_path):
    code, res, text = _compare(runs, "pp2", tmp_path)
    assert code == 0 and res["summary"]["verdict"] == "pass", text[-3000:]
    names = {r["name"] for r in res["rows"]}
    assert {"layers.3/forward/output/0", "layers.3#1/forward/output/0", "<root>/forward/output/0"} <= names
    assert not res["problems"] and not res["unmatched"]["target"]


def test_a_stage_that_sends_the_wrong_microbatch_is_found_at_the_boundary(runs, tmp_path):
    code, res, text = _compare(runs, "microbatch", tmp_path)
    assert code == 1
    boundary = [p for p in res["problems"] if "PP stage boundary: <root>/forward/input/0 on stage 1" in p["message"]]
    assert boundary, res["problems"]
    assert res["first_divergence"]["name"] == "layers.2/forward/input/0"  # stage 1's first layer


def test_without_the_layout_the_stages_cannot_pass(runs):
    assert run_cli("compare", runs["golden"], runs["pp2"]).returncode != 0
