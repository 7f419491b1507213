"""`parity export` round-trips (issue 31 item 3): `parity compare RUN EXPORTED` pairs every record of the
run with its exported tensor — zero unmatched, every row PASS with zero error — for both export formats:
a real bf16 capture at mix level (op events, grads, parameters, two recorded steps; npy widens bf16 to
float32), and records whose names collide in safetensors keys or .npy file names."""
import json

import pytest
import torch

import capture_helpers
import parity
from parity.examples import SyntheticCorpus, build_model, train
from test_export_hardening import write_run

import numpy as np

FORMATS = ("npy", "safetensors")


def assert_pairs_everything(tmp_path, run, exported, n_records):
    rc, res = capture_helpers.compare_json(tmp_path, run, exported)
    s = res["summary"]
    assert rc == 0 and s["verdict"] == "pass", res["_text"][-3000:]
    assert (s["unmatched_golden"], s["unmatched_target"]) == (0, 0), res["unmatched"]
    assert s["rows"] == n_records and s["pass"] == n_records, s
    for row in res["rows"]:
        assert row["match"] == "exact", row
        assert row["metrics"]["max_abs"] == 0.0, row


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_bf16_mix_level_capture_round_trips(tmp_path, fmt):
    torch.manual_seed(0)
    model = build_model("llama", "tiny").to(torch.bfloat16)
    with parity.capture(model, tmp_path / "run", level="mix", mode="tensor", steps=[0, 1]) as cap:
        train(model, SyntheticCorpus(64, 1 << 13), steps=2, capture=cap)
    records = parity.load(tmp_path / "run").records
    assert {r.step for r in records} == {0, 1} and any(r.dtype == "bf16" for r in records)
    capture_helpers.run_cli("export", tmp_path / "run", "--format", fmt, "-o", tmp_path / "x", check=0)
    index = json.loads((tmp_path / "x" / "index.json").read_text())
    assert index["schema"] == "parity.export/2" and index["format"] == fmt
    assert len(index["tensors"]) == len(records)
    assert_pairs_everything(tmp_path, tmp_path / "run", tmp_path / "x", len(records))


@pytest.mark.parametrize("fmt", FORMATS)
def test_colliding_names_round_trip(tmp_path, fmt):
    """`__metadata__` gets a `~N` key in safetensors; `a/b` and `a__b` sanitise to one .npy file name. The
    index gives each its record name back."""
    write_run(tmp_path / "run", [("__metadata__", np.arange(4, dtype=np.float32)),
                                 ("x", np.full(2, 7.0, dtype=np.float32)),
                                 ("y", np.full(3, -1.0, dtype=np.float64)),
                                 ("a/b", np.ones(2, dtype=np.float32)), ("a__b", np.zeros(2, dtype=np.float32))])
    capture_helpers.run_cli("export", tmp_path / "run", "--format", fmt, "-o", tmp_path / "x", check=0)
    assert_pairs_everything(tmp_path, tmp_path / "run", tmp_path / "x", 5)


def test_an_index_naming_a_file_outside_is_a_problem_naming_it(tmp_path):
    write_run(tmp_path / "run", [("a", np.ones(2, dtype=np.float32)), ("b", np.ones(2, dtype=np.float32))])
    capture_helpers.run_cli("export", tmp_path / "run", "-o", tmp_path / "x", check=0)
    index = json.loads((tmp_path / "x" / "index.json").read_text())
    index["tensors"][1]["file"] = "../run/rank0/data-000000.bin"
    (tmp_path / "x" / "index.json").write_text(json.dumps(index))
    p = capture_helpers.run_cli("compare", tmp_path / "run", tmp_path / "x")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "index.json: tensors[1]" in p.stdout + p.stderr and "leaves the export directory" in p.stdout + p.stderr
