"""parity.integrations.hf.ParityCallback on a real `transformers.Trainer` run (issue 12 §3): a tiny Llama
(random init, no downloads) trained 3 steps on CPU on a tiny in-memory dataset; the capture holds the
recorded step's module events and, per step, the Trainer's own loss / grad_norm / learning_rate."""
import json
import math

import pytest
import torch

import parity
from hf_helpers import TokenDataset, tiny_llama_config

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

STEPS = 3


def test_trainer_run_logs_scalars_per_step(tmp_path):
    from parity.integrations.hf import ParityCallback

    torch.manual_seed(0)
    cfg = tiny_llama_config(transformers)
    model = transformers.LlamaForCausalLM(cfg)
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2,
                                          max_steps=STEPS, logging_steps=1, learning_rate=1e-3, report_to=[],
                                          save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True)
    cap = parity.capture(model, str(tmp_path / "run"), level="module", steps=[0])
    trainer = transformers.Trainer(model=model, args=args, train_dataset=TokenDataset(STEPS * 2), callbacks=[ParityCallback(cap)])
    with cap:
        trainer.train()
    run = parity.load(str(tmp_path / "run"))
    assert {r.step for r in run.records} == {0}  # steps=[0]: events of the first optimizer step only
    assert "model.layers.0.self_attn.q_proj/forward/output/0" in run.names(0, 0)
    assert "model.layers.0.self_attn.q_proj/backward/grad/weight" in run.names(0, 0)
    logged = [e for e in trainer.state.log_history if "loss" in e]
    assert len(logged) == STEPS
    for key in ("loss", "grad_norm", "learning_rate"):
        series = run.scalar_series(key)
        # one value per optimizer step, in the capture step that produced it (0, 1, 2)
        assert [s for s, _ in series] == list(range(STEPS)), (key, series)
        assert [v for _, v in series] == pytest.approx([e[key] for e in logged]), (key, series)


# ---- ParityCallback(path=...): no `with` block, the Trainer's step numbers (issue 31 item 3) -----------

EVAL_EVERY = 2
TRAIN_STEPS = 4


def owned_run(tmp_path, name, bf16):
    """A Trainer run captured by ParityCallback(path=...), evaluated every EVAL_EVERY steps."""
    from parity.integrations.hf import ParityCallback

    torch.manual_seed(0)
    cfg = tiny_llama_config(transformers)
    model = transformers.LlamaForCausalLM(cfg)
    args = transformers.TrainingArguments(output_dir=str(tmp_path / (name + "_out")), per_device_train_batch_size=2,
                                          per_device_eval_batch_size=2, max_steps=TRAIN_STEPS, logging_steps=1,
                                          eval_strategy="steps", eval_steps=EVAL_EVERY, learning_rate=1e-3,
                                          report_to=[], save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True,
                                          bf16=bf16)
    cb = ParityCallback(path=str(tmp_path / name), level="module", steps=[1], eval_logits=[TRAIN_STEPS])
    trainer = transformers.Trainer(model=model, args=args, train_dataset=TokenDataset(TRAIN_STEPS * 2),
                                   eval_dataset=TokenDataset(4), callbacks=[cb])
    trainer.train()
    assert cb.cap is None  # closed on train end
    return trainer.state.log_history


def cli_json(tmp_path, *args, ok=(0, 1)):
    import capture_helpers

    out = tmp_path / "out.json"
    p = capture_helpers.run_cli(*args, "--json", out)
    assert p.returncode in ok, p.stdout[-2000:] + p.stderr[-2000:]
    return json.loads(out.read_text())


def test_callback_without_a_with_block_numbers_steps_like_the_trainer(tmp_path):
    golden = owned_run(tmp_path, "golden", bf16=False)
    target = owned_run(tmp_path, "target", bf16=True)
    run = parity.load(str(tmp_path / "golden"))
    # steps=[1]: the events of the Trainer's step 1 (its first optimizer step), under that number
    assert {r.step for r in run.records} == {1}
    assert "model.layers.0.self_attn.q_proj/backward/grad/weight" in run.names(1, 0)
    train_logs = {e["step"]: e for e in golden if "loss" in e}
    eval_logs = {e["step"]: e for e in golden if "eval_loss" in e}
    assert sorted(train_logs) == list(range(1, TRAIN_STEPS + 1)) and sorted(eval_logs) == [2, 4]
    assert run.scalar_series("loss") == [(s, pytest.approx(train_logs[s]["loss"])) for s in sorted(train_logs)]
    assert run.scalar_series("eval_loss") == [(s, pytest.approx(eval_logs[s]["eval_loss"])) for s in (2, 4)]
    assert not [k for s, k in run.scalar_series("eval_runtime")]  # timings are not written

    cmp = cli_json(tmp_path, "compare", tmp_path / "golden", tmp_path / "target")
    assert cmp["summary"]["rows"] > 0 and {r["step"] for r in cmp["rows"]} == {1}
    # A healthy Trainer run with bf16=True (accelerate wraps model.forward in torch.autocast, inside the root's
    # hook) against fp32: every row within rounding once the run declares its autocast, the autocast named as
    # a configuration difference, and the logits copy the loss was not computed from (no gradient reaches it
    # in the target) an implementation detail, not a failure. It said FAILED, NO_CAUSE_FOUND, 22 rows at
    # 300-70,000 u, before the precision was read inside the forward.
    summary = cmp["summary"]
    assert summary["verdict"] == "pass" and summary["fail"] == 0 and summary["pass"] == summary["rows"], summary
    assert [r["name"] for r in cmp["unmatched"]["golden"]] == ["<root>/backward/input/1"]
    assert summary["unmatched_implementation"] == 1 and not cmp["unmatched"]["target"]
    config = [d for d in cmp["diagnosis"] if d["code"] == "CONFIG_DIFF"]
    assert config and "autocast" in json.dumps(config[0]) and "cpu:bfloat16" in json.dumps(config[0])

    cur = cli_json(tmp_path, "curve", tmp_path / "golden", tmp_path / "target")
    by_metric = {m["metric"]: m for m in cur["metrics"]}
    assert [p["step"] for p in by_metric["loss"]["points"]] == list(range(1, TRAIN_STEPS + 1))
    assert [p["step"] for p in by_metric["eval_loss"]["points"]] == [2, 4]
    assert [p["target"] for p in by_metric["eval_loss"]["points"]] == \
        pytest.approx([e["eval_loss"] for e in target if "eval_loss" in e])

    ppl = cli_json(tmp_path, "eval", "ppl", tmp_path / "golden", tmp_path / "target")
    assert ppl["tokens"] == 4 * 15  # eval_logits=[4]: one evaluation, 4 sequences of 16 tokens, shifted
    # the logits file's perplexity is the Trainer's own eval loss of that step (equal batches: mean of means)
    assert ppl["ppl"]["golden"]["value"] == pytest.approx(math.exp(eval_logs[4]["eval_loss"]), rel=1e-5)
    target_eval = [e for e in target if "eval_loss" in e][-1]["eval_loss"]
    assert ppl["ppl"]["target"]["value"] == pytest.approx(math.exp(target_eval), rel=1e-2)


def test_callback_takes_a_capture_or_a_path_not_both(tmp_path):
    from parity.integrations.hf import ParityCallback

    with pytest.raises(TypeError, match="not both and not neither"):
        ParityCallback()
    cap = parity.capture(torch.nn.Linear(2, 2), str(tmp_path / "r"))
    with pytest.raises(TypeError, match="not both"):
        ParityCallback(cap, path=str(tmp_path / "r2"))


def test_an_exception_leaves_a_readable_run_that_close_stops(tmp_path):
    from parity.integrations.hf import ParityCallback

    class Boom(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise RuntimeError("boom at step 2")

    torch.manual_seed(0)
    cfg = tiny_llama_config(transformers)
    model = transformers.LlamaForCausalLM(cfg)
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2,
                                          max_steps=STEPS, logging_steps=1, report_to=[], save_strategy="no",
                                          use_cpu=True, seed=0, disable_tqdm=True)
    cb = ParityCallback(path=str(tmp_path / "run"), steps=[1, 2])
    trainer = transformers.Trainer(model=model, args=args, train_dataset=TokenDataset(STEPS * 2), callbacks=[cb, Boom()])
    with pytest.raises(RuntimeError, match="boom"):
        trainer.train()
    assert cb.cap is not None and cb.cap.step == 2
    cb.close()
    assert cb.cap is None
    run = parity.load(str(tmp_path / "run"))
    assert {r.step for r in run.records} == {1, 2}  # crash-safe frames; closed by close()
    model(torch.zeros(1, 4, dtype=torch.long))  # the model runs unhooked after close
