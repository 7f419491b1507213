"""`parity curve` on files written by the real writers (docs/curves.md): TensorBoard event files from
`torch.utils.tensorboard.SummaryWriter` (PyPI tensorboard), and a Hugging Face `trainer_state.json`
plus the TensorBoard events written by a real `transformers.Trainer` run of a tiny random-init Llama
(CPU, in-memory dataset). Also counters skipped unless asked, and steady divergence vs spikes on real
training curves."""
import importlib.util
import json
import os
import subprocess

import numpy as np
import pytest
import torch
from hf_helpers import TokenDataset, tiny_llama_config

# The writers are PyPI packages (python/requirements.txt); where one is missing its tests are skipped
# (collected and reported as skipped, so the file still runs under a Python without them).
needs_tensorboard = pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                                       reason="tensorboard (PyPI) not installed")
needs_transformers = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                        reason="transformers (PyPI) not installed")

PARITY = os.environ.get("PARITY_BIN", "parity")
STEPS = 10


def run_cli(*args):
    p = subprocess.run([PARITY, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def curve(*args):
    rc, out, err = run_cli("curve", *args, "--json", "-")
    assert rc in (0, 1), err
    return rc, json.loads(out)


def points(j, metric):
    m = [m for m in j["metrics"] if m["metric"] == metric]
    assert m, (metric, [m["metric"] for m in j["metrics"]])
    return m[0]


# ---- a real transformers.Trainer run -----------------------------------------------------------------

def trainer_run(out, lr=1e-3):
    import transformers

    torch.manual_seed(0)
    cfg = tiny_llama_config(transformers, vocab=64, layers=2, kv_heads=2)
    model = transformers.LlamaForCausalLM(cfg)
    args = transformers.TrainingArguments(output_dir=str(out), max_steps=STEPS, logging_steps=1,
                                          per_device_train_batch_size=8, learning_rate=lr, report_to=["tensorboard"],
                                          save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True,
                                          dataloader_num_workers=0)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=TokenDataset(64, seq=16, vocab=64))
    trainer.train()
    trainer.save_state()  # output_dir/trainer_state.json
    events = [os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs if "tfevents" in f]
    assert len(events) == 1, events
    return out / "trainer_state.json", os.path.dirname(events[0])


@pytest.fixture(scope="module")
def trainer_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("trainer")
    return {name: trainer_run(d / name, lr) for name, lr in (("a", 1e-3), ("b", 1e-3), ("lr3", 3e-3))}


def log_history(path, key):
    with open(path) as f:
        return {e["step"]: e[key] for e in json.load(f)["log_history"] if key in e}


@needs_transformers
def test_trainer_state_json_from_a_real_trainer(trainer_runs):
    a, _ = trainer_runs["a"]
    b, _ = trainer_runs["b"]
    rc, j = curve(a, b)
    assert rc == 0 and j["verdict"] == "pass", j
    assert j["golden"]["format"] == "hf-trainer-state"
    assert {m["metric"] for m in j["metrics"]} == {"loss", "grad_norm", "lr"}
    for metric, key in (("loss", "loss"), ("grad_norm", "grad_norm"), ("lr", "learning_rate")):
        m = points(j, metric)
        logged = log_history(a, key)
        # the closing summary entry (train_loss, train_runtime, ...) is not a step value
        assert [p["step"] for p in m["points"]] == list(range(1, STEPS + 1)) == sorted(logged)
        assert [p["golden"] for p in m["points"]] == [logged[s] for s in sorted(logged)]  # exact doubles
        assert m["max_rel_dev"] == 0  # CPU training is deterministic

    rc, j = curve(a, trainer_runs["lr3"][0])
    assert rc == 1 and j["verdict"] == "fail"
    lr = points(j, "lr")
    assert lr["verdict"] == "fail" and abs(lr["points"][0]["rel_dev"] - 2.0) < 1e-12  # 3e-3 vs 1e-3
    loss = points(j, "loss")
    assert loss["points"][0]["rel_dev"] == 0  # the first loss is before any update
    assert loss["points"][-1]["rel_dev"] > 0


@needs_transformers
@needs_tensorboard
def test_tensorboard_events_from_a_real_trainer(trainer_runs):
    state, events = trainer_runs["a"]
    rc, j = curve(events, trainer_runs["b"][1])
    assert rc == 0, j
    assert j["golden"]["format"] == "tensorboard"
    # TensorBoardCallback logs train/epoch too: a counter, left out unless asked
    assert j["counters_skipped"] == ["epoch"]
    # train/train_loss is the closing summary (mean loss of the run, one point); train_runtime,
    # train_samples_per_second and total_flos are timing counters, left out by design
    assert {m["metric"] for m in j["metrics"]} == {"loss", "grad_norm", "lr", "train_loss"}
    assert len(points(j, "train_loss")["points"]) == 1
    logged = log_history(state, "loss")
    m = points(j, "loss")
    # SummaryWriter stores simple_value as float32
    assert [p["golden"] for p in m["points"]] == [float(np.float32(logged[s])) for s in sorted(logged)]
    rc, j = curve(events, trainer_runs["b"][1], "--counters")
    assert "epoch" in {m["metric"] for m in j["metrics"]} and j["counters_skipped"] == []
    # the same run's two writers agree (to float32)
    rc, j = curve(state, events, "--metric", "loss,grad_norm,lr")
    assert rc == 0 and all(m["max_rel_dev"] < 1e-7 for m in j["metrics"]), j


# ---- torch.utils.tensorboard.SummaryWriter in a plain training loop --------------------------------------

def summary_writer_run(logdir, on_step=None, steps=40, batch=8):
    from torch.utils.tensorboard import SummaryWriter

    from parity.examples import SyntheticCorpus, build_model

    corpus = SyntheticCorpus(vocab_size=64, n_tokens=1 << 13)
    torch.manual_seed(0)
    model = build_model("llama", "tiny", seed=3)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    w = SummaryWriter(log_dir=str(logdir))
    for step in range(steps):
        x, y = corpus.batch(step, batch, 32)
        if on_step:
            x, y = on_step(step, opt, x, y)
        loss = torch.nn.functional.cross_entropy(model(x).reshape(-1, 64), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        w.add_scalar("train/loss", loss.item(), step)
        w.add_scalar("train/grad_norm", gn.item(), step)
        w.add_scalar("consumed_samples", (step + 1) * batch, step)
        w.add_scalar("batch_size", batch, step)
        w.add_scalar("tokens_total", (step + 1) * batch * 32, step)  # a counter by shape only
    w.close()
    return logdir


@pytest.fixture(scope="module")
def sw_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("sw")

    def lr_bug(step, opt, x, y):  # from step 20 the learning rate is 10× too high: a steady divergence
        if step == 20:
            for g in opt.param_groups:
                g["lr"] = 3e-2
        return x, y

    def bad_batch(step, opt, x, y):  # step 30 sees a batch of one repeated token: a one-step spike
        if step == 30:
            x = torch.full_like(x, 5)
            y = torch.full_like(y, 7)
        return x, y

    return {"golden": summary_writer_run(d / "golden"), "lr_bug": summary_writer_run(d / "lr_bug", lr_bug),
            "bad_batch": summary_writer_run(d / "bad_batch", bad_batch)}


@needs_tensorboard
def test_summary_writer_events_and_counters(sw_runs):
    rc, j = curve(sw_runs["golden"], sw_runs["golden"])
    assert rc == 0 and j["golden"]["format"] == "tensorboard"
    assert {m["metric"] for m in j["metrics"]} == {"loss", "grad_norm"}
    assert sorted(j["counters_skipped"]) == ["batch_size", "consumed_samples", "tokens_total"]
    assert len(points(j, "loss")["points"]) == 40
    # named with --metric, a counter is compared
    rc, j = curve(sw_runs["golden"], sw_runs["lr_bug"], "--metric", "consumed_samples")
    assert [m["metric"] for m in j["metrics"]] == ["consumed_samples"] and j["metrics"][0]["max_rel_dev"] == 0


@needs_tensorboard
def test_steady_divergence_and_spikes(sw_runs):
    rc, j = curve(sw_runs["golden"], sw_runs["lr_bug"], "--metric", "loss")
    loss = points(j, "loss")
    assert loss["deviation"]["kind"] == "steady", loss["deviation"]
    assert 20 <= loss["divergence_step"] <= 25 and loss["deviation"]["fraction_above_after_divergence"] >= 0.8
    assert any(r.startswith("steady divergence from step") for r in loss["reasons"])
    assert rc == 1

    rc, j = curve(sw_runs["golden"], sw_runs["bad_batch"], "--metric", "loss")
    loss = points(j, "loss")
    assert loss["deviation"]["kind"] == "spikes", loss["deviation"]
    assert 30 in loss["deviation"]["spike_steps"] and loss["divergence_step"] is None
    assert any(r.startswith("spikes, not a divergence") for r in loss["reasons"])
