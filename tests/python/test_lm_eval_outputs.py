"""`parity eval lm-eval` on outputs written by the real lm-evaluation-harness (tests/fixtures/lm_eval/,
written by generate.py there with PyPI lm-eval 0.4.x): lm-eval's `--output_path` directory layout
(`<out>/<model_name>/results_<timestamp>.json` + `samples_<task>_<timestamp>.jsonl`), results files
named directly, old unstamped names, and sample files under any name (docs/eval.md)."""
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

PARITY = os.environ.get("PARITY_BIN", "parity")
FIX = os.path.join(os.environ.get("PARITY_SOURCE_DIR", "."), "tests", "fixtures", "lm_eval")


def run_cli(*args):
    p = subprocess.run([PARITY, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def one(pattern):
    found = glob.glob(os.path.join(FIX, pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


def results_of(path):
    with open(path) as f:
        return json.load(f)["results"]["tiny_add"]


def per_sample_acc(path, metric):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return sum(r[metric] for r in rows) / len(rows), len(rows)


def check_against_files(j, a_results, b_results, a_samples, b_samples):
    """parity's numbers are lm-eval's: the results values, and the per-sample files' means."""
    ra, rb = results_of(a_results), results_of(b_results)
    by = {m["metric"]: m for m in j["metrics"] if m["task"] == "tiny_add"}
    assert set(by) == {"acc", "acc_norm"}
    for metric, m in by.items():
        assert m["a"] == ra[f"{metric},none"] and m["b"] == rb[f"{metric},none"]
        assert m["a_stderr"] == ra[f"{metric}_stderr,none"]
        assert m["n_a"] == 12 and m["n_b"] == 12
        assert m["paired"] is not None, "the samples written with the results must be paired"
        ga, n = per_sample_acc(a_samples, metric)
        ta, _ = per_sample_acc(b_samples, metric)
        assert m["paired"]["questions"] == n == 12
        assert abs(m["paired"]["golden_acc"] - ga) < 1e-12 and abs(m["paired"]["target_acc"] - ta) < 1e-12
    return by


def test_output_directories_fp32_vs_bf16_pass():
    rc, out, err = run_cli("eval", "lm-eval", os.path.join(FIX, "fp32"), os.path.join(FIX, "bf16"), "--json", "-")
    assert rc == 0, err + out
    j = json.loads(out)
    assert j["verdict"] == "pass" and j["problems"] == []
    a_res, b_res = one("fp32/model/results_*.json"), one("bf16/model/results_*.json")
    a_smp, b_smp = one("fp32/model/samples_tiny_add_*.jsonl"), one("bf16/model/samples_tiny_add_*.jsonl")
    assert j["a"]["source"] == a_res and j["b"]["source"] == b_res
    assert j["samples"] == [{"task": "tiny_add", "a": a_smp, "b": b_smp}]
    by = check_against_files(j, a_res, b_res, a_smp, b_smp)
    assert by["acc"]["paired"]["mcnemar"]["only_golden"] == by["acc"]["paired"]["mcnemar"]["only_target"] == 0
    # the text names the files it compared
    rc, text, _ = run_cli("eval", "lm-eval", os.path.join(FIX, "fp32"), os.path.join(FIX, "bf16"))
    assert rc == 0 and a_res in text and b_smp in text and "eval lm-eval: PASS" in text


def test_model_directory_and_results_file_against_another_model_fail():
    a_res, b_res = one("fp32/model/results_*.json"), one("seed1/model_seed1/results_*.json")
    a_smp, b_smp = one("fp32/model/samples_tiny_add_*.jsonl"), one("seed1/model_seed1/samples_tiny_add_*.jsonl")
    # <model_name> directory on one side, the results file itself on the other
    rc, out, err = run_cli("eval", "lm-eval", os.path.dirname(a_res), b_res, "--json", "-", "--bootstrap", "500")
    assert rc == 1, err + out
    j = json.loads(out)
    assert j["verdict"] == "fail"
    assert j["samples"] == [{"task": "tiny_add", "a": a_smp, "b": b_smp}]
    by = check_against_files(j, a_res, b_res, a_smp, b_smp)
    assert by["acc"]["verdict"] == "fail"  # 33.3 % vs 25 %: 8.3 points
    assert abs(by["acc"]["diff"] - (results_of(b_res)["acc,none"] - results_of(a_res)["acc,none"])) < 1e-15


def test_unstamped_and_renamed_sample_files_are_paired(tmp_path):
    # lm-eval before 0.4.3 wrote results.json + samples_<task>.jsonl
    for side, run in (("a", "fp32/model"), ("b", "seed1/model_seed1")):
        d = tmp_path / side
        d.mkdir()
        shutil.copy(one(run + "/results_*.json"), d / "results.json")
        shutil.copy(one(run + "/samples_tiny_add_*.jsonl"), d / "samples_tiny_add.jsonl")
    rc, out, err = run_cli("eval", "lm-eval", tmp_path / "a", tmp_path / "b", "--json", "-", "--bootstrap", "200")
    assert rc == 1, err
    j = json.loads(out)
    assert j["samples"] == [{"task": "tiny_add", "a": str(tmp_path / "a" / "samples_tiny_add.jsonl"),
                             "b": str(tmp_path / "b" / "samples_tiny_add.jsonl")}]
    assert all(m["paired"] is not None for m in j["metrics"])
    # sample files renamed by the user: the only shared task is theirs
    shutil.copy(tmp_path / "a" / "samples_tiny_add.jsonl", tmp_path / "golden.jsonl")
    shutil.copy(tmp_path / "b" / "samples_tiny_add.jsonl", tmp_path / "target.jsonl")
    rc, out2, err = run_cli("eval", "lm-eval", tmp_path / "a" / "results.json", tmp_path / "b" / "results.json",
                            "--samples", tmp_path / "golden.jsonl", tmp_path / "target.jsonl", "--json", "-",
                            "--bootstrap", "200")
    assert rc == 1, err
    j2 = json.loads(out2)
    assert j2["samples"][0]["task"] == "tiny_add" and j2["problems"] == []
    assert [m["paired"] for m in j2["metrics"]] == [m["paired"] for m in j["metrics"]]


def test_directory_errors(tmp_path):
    rc, out, err = run_cli("eval", "lm-eval", tmp_path, os.path.join(FIX, "fp32"))
    assert rc == 2 and str(tmp_path) in err and "no results" in err, err
    # two models' outputs under one --output_path: which one is meant is the user's call
    shutil.copytree(os.path.join(FIX, "fp32", "model"), tmp_path / "out" / "model")
    shutil.copytree(os.path.join(FIX, "seed1", "model_seed1"), tmp_path / "out" / "model_seed1")
    rc, out, err = run_cli("eval", "lm-eval", tmp_path / "out", os.path.join(FIX, "fp32"))
    assert rc == 2 and "model_seed1" in err and "several runs" in err, err


def test_newest_run_of_a_directory_is_taken(tmp_path):
    d = tmp_path / "out" / "model"
    shutil.copytree(os.path.join(FIX, "seed1", "model_seed1"), d)
    # an older run of the fp32 model in the same directory
    shutil.copy(one("fp32/model/results_*.json"), d / "results_2020-01-01T00-00-00.000001.json")
    shutil.copy(one("fp32/model/samples_tiny_add_*.jsonl"), d / "samples_tiny_add_2020-01-01T00-00-00.000001.jsonl")
    rc, out, err = run_cli("eval", "lm-eval", tmp_path / "out", os.path.join(FIX, "seed1"), "--json", "-")
    assert rc == 0, err + out
    j = json.loads(out)
    assert "2020-01-01" not in j["a"]["source"] and "2020-01-01" not in j["samples"][0]["a"]


@pytest.mark.skipif(importlib.util.find_spec("lm_eval") is None, reason="lm_eval (PyPI lm-eval) not installed")
def test_regenerated_with_real_lm_eval(tmp_path):
    """The fixtures' generator still works with the installed lm-eval, and parity reads what it writes."""
    gen = os.path.join(FIX, "generate.py")
    p = subprocess.run([sys.executable, gen, str(tmp_path), "fp32", "seed1"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    rc, out, err = run_cli("eval", "lm-eval", tmp_path / "fp32", tmp_path / "seed1", "--json", "-", "--bootstrap", "200")
    assert rc in (0, 1), err
    j = json.loads(out)
    a_res = glob.glob(str(tmp_path / "fp32" / "model" / "results_*.json"))
    b_res = glob.glob(str(tmp_path / "seed1" / "model_seed1" / "results_*.json"))
    a_smp = glob.glob(str(tmp_path / "fp32" / "model" / "samples_tiny_add_*.jsonl"))
    b_smp = glob.glob(str(tmp_path / "seed1" / "model_seed1" / "samples_tiny_add_*.jsonl"))
    assert len(a_res) == len(b_res) == len(a_smp) == len(b_smp) == 1
    check_against_files(j, a_res[0], b_res[0], a_smp[0], b_smp[0])
