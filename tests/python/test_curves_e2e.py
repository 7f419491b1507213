"""parity curve / parity ranks end to end on real captured training runs of the example model
(fp32 vs bf16, a few dozen steps, scalars logged by cap.log through the dump) — docs/curves.md."""
import json
import os
import subprocess

import pytest

import parity

PARITY = os.environ.get("PARITY_BIN", "parity")
STEPS = 24


def run_cli(*args):
    p = subprocess.run([PARITY, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def train_run(run_dir, dtype, rank=0, on_step=None, steps=STEPS):
    from parity.examples import SyntheticCorpus, build_model, train

    corpus = SyntheticCorpus(vocab_size=64, n_tokens=1 << 13)
    model = build_model("llama", "tiny", seed=11).to(dtype)
    with parity.capture(model, run_dir, steps=(), rank=rank) as cap:
        return train(model, corpus, steps=steps, batch_size=8, seq_len=32, lr=3e-3, capture=cap, on_step=on_step)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    import torch

    d = tmp_path_factory.mktemp("curves")
    train_run(d / "fp32", torch.float32)
    train_run(d / "bf16", torch.bfloat16)
    return d


def test_fp32_vs_bf16_training_curves(runs):
    rc, out, err = run_cli("curve", runs / "fp32", runs / "bf16", "--json", "-")
    assert rc in (0, 1), err
    j = json.loads(out)
    assert j["schema"] == "parity.curve/1"
    assert j["golden"]["format"] == "parity-run"
    by = {m["metric"]: m for m in j["metrics"]}
    assert set(by) == {"loss", "grad_norm", "lr"}
    loss = by["loss"]
    assert loss["aligned_steps"] == STEPS
    assert loss["missing_in_golden"] == [] and loss["missing_in_target"] == []
    assert loss["trend"]["consistent"] and loss["trend"]["golden_slope"] < 0
    # bf16 training drifts from fp32, but stays in the same regime over a few dozen steps.
    assert 0 < loss["mean_rel_dev"] < 0.05
    assert by["lr"]["verdict"] == "pass" and by["lr"]["max_rel_dev"] == 0
    assert rc == (0 if j["verdict"] == "pass" else 1)
    # the terminal summary fits 100 columns and shows both curves
    rc2, text, _ = run_cli("curve", runs / "fp32", runs / "bf16")
    assert rc2 == rc
    assert all(len(line) <= 100 for line in text.splitlines())
    assert "golden  " in text and "target  " in text and "rel dev" in text


def test_identical_run_passes_and_diverging_run_is_found(runs, tmp_path):
    import torch

    rc, out, err = run_cli("curve", runs / "fp32", runs / "fp32", "--json", "-")
    assert rc == 0, out
    assert json.loads(out)["verdict"] == "pass"

    # A run whose optimiser goes wrong at step 15: the loss must diverge there.
    from parity.examples import SyntheticCorpus, build_model

    corpus = SyntheticCorpus(vocab_size=64, n_tokens=1 << 13)
    model = build_model("llama", "tiny", seed=11)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)

    def on_step(step, loss):
        if step == 14:
            for g in opt.param_groups:
                g["lr"] = 0.3  # a learning-rate bug from step 15 on

    from parity.examples import train

    with parity.capture(model, tmp_path / "bad", steps=()) as cap:
        train(model, corpus, steps=STEPS, batch_size=8, seq_len=32, lr=3e-3, capture=cap, on_step=on_step,
              optimizer=opt)
    rc, out, err = run_cli("curve", runs / "fp32", tmp_path / "bad", "--metric", "loss", "--json", "-")
    assert rc == 1, err
    loss = json.loads(out)["metrics"][0]
    assert loss["divergence_step"] is not None and 15 <= loss["divergence_step"] <= 18
    assert loss["verdict"] == "fail"


def test_ranks_of_a_two_rank_run(tmp_path):
    import torch

    train_run(tmp_path / "run", torch.float32, rank=0, steps=8)
    train_run(tmp_path / "run", torch.float32, rank=1, steps=8)
    rc, out, err = run_cli("ranks", tmp_path / "run", "--json", "-")
    assert rc == 0, out + err
    j = json.loads(out)
    assert j["schema"] == "parity.ranks/1" and j["code"] is None
    assert j["run"]["ranks"] == [0, 1]
    # a third rank computing in bf16 departs from step 1 (same initial weights; step 0 may round alike)
    train_run(tmp_path / "run", torch.bfloat16, rank=2, steps=8)
    rc, out, err = run_cli("ranks", tmp_path / "run", "--metric", "loss", "--json", "-")
    assert rc == 1
    j = json.loads(out)
    assert j["code"] == "RANK_INCONSISTENT"
    bad = j["metrics"][0]["inconsistent"]
    assert [b["rank"] for b in bad] == [2]
    assert bad[0]["from_step"] <= 1


def test_curve_csv_loads_with_pandas_defaults(runs, tmp_path):
    """Issue 12 §6: every CSV output loads with pandas.read_csv(path) as it is — the schema is a column,
    not a comment line."""
    pandas = pytest.importorskip("pandas")
    out = tmp_path / "curve.csv"
    rc, _, err = run_cli("curve", runs / "fp32", runs / "bf16", "--csv", out)
    assert rc in (0, 1), err
    df = pandas.read_csv(out)
    assert list(df.columns[:3]) == ["schema", "metric", "step"]
    assert set(df["schema"]) == {"parity.curve.csv/2"} and "loss" in set(df["metric"])


def test_curve_help_names_the_regex_syntax_it_uses():
    # Issue 31 §4: --help said "ECMAScript regex" while the text reader compiles patterns with RE2 (no
    # backreferences or lookaround): a user's ECMAScript pattern could be refused with no hint why.
    p = subprocess.run([PARITY, "curve", "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "RE2" in p.stdout and "ECMAScript" not in p.stdout, p.stdout
