"""Capture runs through `parity compare`: identical fp32 reruns compare identical; fp32 vs bf16 are
aligned one to one and differences are reported; statistics-only and checksum runs compare by what
they hold; info and export on real runs."""
import json

import numpy as np
import pytest
import torch

import capture_helpers
import parity
from parity.examples import SyntheticCorpus, build_model, train

CORPUS = SyntheticCorpus(64, 1 << 13)


def capture_run(path, dtype=torch.float32, kind="llama", level="mix", mode="tensor", steps=(0,)):
    torch.manual_seed(0)
    model = build_model(kind, "tiny").to(dtype)
    with parity.capture(model, path, level=level, mode=mode, steps=steps) as cap:
        train(model, CORPUS, steps=2, capture=cap)
    return parity.load(path)


def compare_json(tmp_path, golden, target, *extra):
    out = tmp_path / "cmp.json"
    if out.exists():
        out.unlink()
    p = capture_helpers.run_cli("compare", golden, target, "--json", out, *extra)
    assert p.returncode in (0, 1), p.stdout[-3000:] + p.stderr[-3000:]
    return p.returncode, json.loads(out.read_text())


@pytest.mark.parametrize("kind,level", [("llama", "mix"), ("gpt2", "module"), ("gpt2", "op")])
def test_identical_fp32_reruns_compare_identical(tmp_path, kind, level):
    a = capture_run(tmp_path / "a", kind=kind, level=level)
    b = capture_run(tmp_path / "b", kind=kind, level=level)
    assert [r.name for r in a] == [r.name for r in b]
    rc, res = compare_json(tmp_path, tmp_path / "a", tmp_path / "b", "--step", 0)
    assert rc == 0 and res["summary"]["verdict"] == "pass"
    assert res["summary"]["rows"] == len(a.records)
    assert res["summary"]["unmatched_golden"] == 0 and res["summary"]["unmatched_target"] == 0
    for row in res["rows"]:
        assert row["mode"] == "tensor" and row["verdict"] == "pass", row["name"]
        assert row["metrics"]["max_abs"] == 0, row["name"]  # bit-identical
        if np.prod(row["golden"]["shape"]) > 1 and row["metrics"]["cosine"] != "NaN":  # NaN: all-zero tensor
            # identical vectors: cosine exactly 1 (issue 3 §5; the kernel evaluates Σtg/√(Σt²Σg²))
            assert row["metrics"]["cosine"] == 1.0, row["name"]


def test_fp32_vs_bf16_aligned_one_to_one_with_differences(tmp_path):
    a = capture_run(tmp_path / "g")
    b = capture_run(tmp_path / "t", dtype=torch.bfloat16)
    # Same events by name; the execution order of backward hooks may differ where fp32 ops are no-ops
    # (logits.float() returns its input in fp32 but a new tensor in bf16), which is why pairing is by name.
    assert sorted(r.name for r in a) == sorted(r.name for r in b), "events align one to one by name"
    assert {r.dtype for r in b if r.role == "parameter"} == {"bf16"}
    rc, res = compare_json(tmp_path, tmp_path / "g", tmp_path / "t", "--step", 0)
    # Pure bf16 rounding: every row differs, none beyond what bf16 explains, so the gate passes (issue 10).
    assert rc == 0, res["summary"]
    s = res["summary"]
    assert s["unmatched_golden"] == 0 and s["unmatched_target"] == 0
    assert s["rows"] == len(a.records) and s["fail"] == 0 and s["verdict"] in ("pass", "warn")
    assert sum(r["noise_ratio"] not in (0, "NaN") for r in res["rows"]) > len(res["rows"]) // 2
    row = next(r for r in res["rows"] if r["name"] == "layers.0.attn.wq/forward/output/0")
    for key in ("module", "op", "direction", "role", "index", "step", "rank", "order"):
        assert key in row, key
    assert row["module"] == "layers.0.attn.wq" and row["role"] == "output" and row["op"] == "Linear"
    assert row["golden"]["dtype"] == "f32" and row["target"]["dtype"] == "bf16"


def test_statistics_and_checksum_runs_compare_by_what_they_hold(tmp_path):
    capture_run(tmp_path / "s1", level="module", mode="statistics")
    capture_run(tmp_path / "s2", level="module", mode="statistics")
    capture_run(tmp_path / "s3", level="module", mode="statistics", dtype=torch.bfloat16)
    rc, res = compare_json(tmp_path, tmp_path / "s1", tmp_path / "s2")
    assert rc == 0 and {r["mode"] for r in res["rows"]} == {"statistics"}
    # fp32 vs bf16 statistics: the fixed 0.5 % statistics rule warns on some rows ...
    rc, res = compare_json(tmp_path, tmp_path / "s1", tmp_path / "s3", "--fixed-thresholds", "--fail-on-warn")
    assert rc == 1 and {r["mode"] for r in res["rows"]} == {"statistics"}
    assert res["summary"]["warn"] > 0
    # ... and the noise model, which knows bf16's rounding unit, accepts every such row as noise.
    rc, res = compare_json(tmp_path, tmp_path / "s1", tmp_path / "s3")
    assert {r["mode"] for r in res["rows"]} == {"statistics"}
    for r in res["rows"]:
        if r["verdict"] == "pass" and r["reason"].startswith("within rounding noise"):
            assert r["noise"] == "noise"
    assert rc == (1 if res["summary"]["verdict"] in ("fail", "error") else 0)
    assert all(r["noise"] != "structural" for r in res["rows"])
    capture_run(tmp_path / "c1", level="module", mode="checksum")
    capture_run(tmp_path / "c2", level="module", mode="checksum")
    rc, res = compare_json(tmp_path, tmp_path / "c1", tmp_path / "c2")
    assert rc == 0 and {r["mode"] for r in res["rows"]} == {"checksum"}
    assert all(r["checksum_equal"] for r in res["rows"])


def test_info_and_export(tmp_path):
    run = capture_run(tmp_path / "r", level="module")
    p = capture_helpers.run_cli("info", tmp_path / "r", "--json", tmp_path / "info.json", check=0)
    assert "part rank0: complete" in p.stdout and "fingerprint: python" in p.stdout
    info = json.loads((tmp_path / "info.json").read_text())
    assert info["schema"] == "parity.info/1" and info["complete"]
    part = info["parts"][0]
    assert part["events"] == len(run.records) and part["steps"] == [0]
    assert part["events_by_kind"]["forward/output"] > 0 and part["fingerprint"]["torch"] == torch.__version__
    for fmt in ("npy", "safetensors"):
        out = tmp_path / ("x_" + fmt)
        capture_helpers.run_cli("export", tmp_path / "r", "--format", fmt, "-o", out, check=0)
        again = capture_helpers.run_cli("export", tmp_path / "r", "--format", fmt, "-o", out, check=2)
        assert "already exists" in again.stderr
    idx = json.loads((tmp_path / "x_npy" / "index.json").read_text())
    entry = next(e for e in idx["tensors"] if e["name"] == "layers.0.mlp/forward/output/0")
    arr = np.load(tmp_path / "x_npy" / entry["file"])
    np.testing.assert_array_equal(arr, run.get("layers.0.mlp/forward/output/0").array)
    # statistics-only runs have nothing to export: a clear error, exit 2
    capture_run(tmp_path / "s", level="module", mode="statistics")
    e = capture_helpers.run_cli("export", tmp_path / "s", "-o", tmp_path / "y", check=2)
    assert "no record has tensor data" in e.stderr
    capture_helpers.run_cli("info", tmp_path / "nothing", check=2)


def test_python_compare_is_the_cli_pipeline(tmp_path):
    """parity.compare() runs the same compare_runs() as `parity compare --json` and returns the same
    parity.compare/1 object (issue 10: one pipeline, offered to Python too)."""
    capture_run(tmp_path / "g")
    capture_run(tmp_path / "t", dtype=torch.bfloat16)
    rc, cli = compare_json(tmp_path, tmp_path / "g", tmp_path / "t", "--step", 0)
    py = parity.compare(tmp_path / "g", tmp_path / "t", step=0)
    assert py["schema"] == "parity.compare/1"
    assert py["summary"] == cli["summary"] and py["summary"]["exit_code"] == rc
    assert [r["name"] for r in py["rows"]] == [r["name"] for r in cli["rows"]]
    assert [r["verdict"] for r in py["rows"]] == [r["verdict"] for r in cli["rows"]]
    assert py["diagnosis"] == cli["diagnosis"] and py["suspects"] == cli["suspects"]
    fixed = parity.compare(tmp_path / "g", tmp_path / "t", step=0, policy="fixed-thresholds")
    assert fixed["summary"]["policy"] == "fixed-thresholds"
    with pytest.raises(ValueError):
        parity.compare(tmp_path / "g", tmp_path / "t", policy="lenient")
    with pytest.raises(FileNotFoundError):
        parity.compare(tmp_path / "missing", tmp_path / "t")


def test_step_filter_that_matches_nothing_is_a_usage_error(tmp_path):
    capture_run(tmp_path / "g")
    capture_run(tmp_path / "t")
    p = capture_helpers.run_cli("compare", tmp_path / "g", tmp_path / "t", "--step", 5)
    assert p.returncode == 2, p.stdout
    assert "no record matches the filters --step 5" in p.stderr and "steps 0" in p.stderr, p.stderr
    rc, res = compare_json(tmp_path, tmp_path / "g", tmp_path / "t", "--direction", "forward")
    assert rc == 0 and {r["direction"] for r in res["rows"]} == {"forward"}
