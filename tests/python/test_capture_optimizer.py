"""Optimizer states in a capture (issue 30 §1, docs/capture.md "Optimizer states"): `parity.capture(...,
optimizer=opt)` records, at the steps asked for, every tensor of `optimizer.state[p]` under the parameter's name
(`<module>/optimizer/<state>/<param>`), the update (parameter after minus before the step) when asked, the lr of each
group and the clipping factor of each clip_grad_norm_ call; values are torch's own, bit for bit."""
import json

import numpy as np
import pytest
import torch

import parity
from capture_helpers import compare_json, run_cli

CLIP_WITH_NORM = torch.nn.utils.clip_grad._clip_grads_with_norm_  # before any capture wrapped it


def two_layers(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def batch(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(6, 4, generator=g), torch.randn(6, 3, generator=g)


def train(model, opt, cap, steps, clip=None, snapshot_at=None):
    """Plain training steps; at step `snapshot_at` returns torch's own view of the step: the parameters before
    and after it, copies of optimizer.state and the total norm clip_grad_norm_ returned."""
    seen = {}
    for step in range(steps):
        x, y = batch(step)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip) if clip else None
        if step == snapshot_at:
            seen["before"] = {n: p.detach().clone() for n, p in model.named_parameters()}
        opt.step()
        if step == snapshot_at:
            seen["after"] = {n: p.detach().clone() for n, p in model.named_parameters()}
            seen["state"] = {n: {k: v.clone() for k, v in opt.state[p].items()} for n, p in model.named_parameters()}
            seen["norm"] = norm
        if cap is not None:
            cap.next_step()
    return seen


def optimizer_records(run, step):
    return {r.name: r for r in run.records if r.step == step and r.direction == "optimizer"}


def state_name(param, state):
    module, pname = param.rsplit(".", 1)
    return "{}/optimizer/{}/{}".format(module, state, pname)


def test_adamw_states_updates_lr_and_clip_factor_are_torch_values(tmp_path):
    model = two_layers()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    with parity.capture(model, tmp_path / "run", mode="tensor", steps=[1], optimizer=opt,
                        optimizer_update=True) as cap:
        seen = train(model, opt, cap, 3, clip=0.05, snapshot_at=1)
    run = parity.load(str(tmp_path / "run"))
    assert not run.problems
    recs = optimizer_records(run, 1)
    params = [n for n, _ in model.named_parameters()]  # 0.weight, 0.bias, 2.weight, 2.bias
    want = {state_name(p, s) for p in params for s in ("step", "exp_avg", "exp_avg_sq", "update")}
    want |= {"<global>/optimizer/lr/group0", "<global>/optimizer/grad_norm/0", "<global>/optimizer/clip_factor/0"}
    assert set(recs) == want
    for p in params:
        for key, value in seen["state"][p].items():  # exactly the tensors torch holds
            r = recs[state_name(p, key)]
            assert (r.direction, r.role, r.module, r.op) == ("optimizer", key, p.rsplit(".", 1)[0], "AdamW")
            assert np.array_equal(r.to_float32(), value.numpy()), (p, key)
        update = recs[state_name(p, "update")].to_float32()
        assert np.array_equal(update, (seen["after"][p] - seen["before"][p]).numpy()), p
        assert np.any(update != 0)
    assert float(recs["<global>/optimizer/lr/group0"].array) == 1e-2  # float64: the group's Python float
    norm = seen["norm"]
    assert recs["<global>/optimizer/grad_norm/0"].to_float32() == norm.numpy()
    factor = torch.clamp(0.05 / (norm + 1e-6), max=1.0)  # torch.nn.utils' own expression
    assert recs["<global>/optimizer/clip_factor/0"].to_float32() == factor.numpy()
    assert float(factor) < 1.0  # the clipping did act
    # steps not asked for record nothing of the optimizer (nor anything else)
    assert optimizer_records(run, 0) == {} and optimizer_records(run, 2) == {}
    # the hyperparameters are in the fingerprint (compare's CONFIG_DIFF reads them)
    groups = run.fingerprint["optimizer"]["0"]
    assert groups["class"] == "AdamW" and groups["param_groups"]["0"]["weight_decay"] == 0.1


def test_sgd_momentum_buffer_and_no_update_unless_asked(tmp_path):
    model = two_layers()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with parity.capture(model, tmp_path / "run", mode="tensor", steps=[2], optimizer=opt) as cap:
        seen = train(model, opt, cap, 3, snapshot_at=2)
    recs = optimizer_records(parity.load(str(tmp_path / "run")), 2)
    params = [n for n, _ in model.named_parameters()]
    assert set(recs) == {state_name(p, "momentum_buffer") for p in params} | {"<global>/optimizer/lr/group0"}
    for p in params:
        got = recs[state_name(p, "momentum_buffer")]
        assert np.array_equal(got.to_float32(), seen["state"][p]["momentum_buffer"].numpy())
        assert got.index == (0 if p.endswith("weight") else 1)  # the parameter's index, as its parameter record


def test_capture_does_not_change_training(tmp_path):
    ref, ref_opt = two_layers(), None
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    train(ref, ref_opt, None, 3, clip=0.05)
    model = two_layers()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    with parity.capture(model, tmp_path / "run", steps=None, optimizer=opt, optimizer_update=True) as cap:
        train(model, opt, cap, 3, clip=0.05)
    for (n, a), (_, b) in zip(ref.named_parameters(), model.named_parameters()):
        assert torch.equal(a, b), n
    # hooks and the clipping wrapper are gone after stop
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks
    assert torch.nn.utils.clip_grad._clip_grads_with_norm_ is CLIP_WITH_NORM
    assert torch.nn.utils.clip_grads_with_norm_ is CLIP_WITH_NORM


def statistics_run(path, eps):
    model = two_layers()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, eps=eps)
    with parity.capture(model, path, steps=None, optimizer=opt, optimizer_update=True) as cap:
        train(model, opt, cap, 4, clip=1.0)


def test_compare_pairs_optimizer_rows_and_finds_a_differing_eps(tmp_path):
    statistics_run(tmp_path / "golden", 1e-8)
    statistics_run(tmp_path / "rerun", 1e-8)
    statistics_run(tmp_path / "eps", 1e-2)
    code, res = compare_json(tmp_path, tmp_path / "golden", tmp_path / "rerun")
    opt_rows = [r for r in res["rows"] if r["direction"] == "optimizer"]
    assert code == 0 and res["summary"]["verdict"] == "pass"
    assert len(opt_rows) == 4 * (4 * 4 + 3)  # 4 steps x (4 parameters x 4 records + lr, grad_norm, clip_factor)
    assert not res["unmatched"]["golden"] and not res["unmatched"]["target"]
    p = run_cli("compare", tmp_path / "golden", tmp_path / "rerun", "--direction", "optimizer", "--json",
                tmp_path / "opt.json", check=0)
    only = json.loads((tmp_path / "opt.json").read_text())["rows"]
    assert only and {r["direction"] for r in only} == {"optimizer"}, p.stdout[-2000:]
    code, res = compare_json(tmp_path, tmp_path / "golden", tmp_path / "eps")
    assert code == 1
    failed = [r for r in res["rows"] if r["direction"] == "optimizer" and r["verdict"] == "fail"]
    # step 0: same gradients, another update; from step 1 on the second moments differ too
    assert {r["role"] for r in failed if r["step"] == 0} == {"update"}
    assert "exp_avg_sq" in {r["role"] for r in failed if r["step"] >= 1}
    keys = {d["key"] for d in res["config_diff"]}
    assert "optimizer.0.param_groups.0.eps" in keys


def test_hf_trainer_callback_records_the_trainers_optimizer(tmp_path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from hf_helpers import TokenDataset, tiny_llama_config
    from parity.integrations.hf import ParityCallback

    torch.manual_seed(0)
    cfg = tiny_llama_config(transformers, vocab=64, hidden=16, positions=16)
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2,
                                          max_steps=2, learning_rate=1e-3, report_to=[], save_strategy="no",
                                          use_cpu=True, seed=0, disable_tqdm=True)
    cb = ParityCallback(path=str(tmp_path / "run"), steps=[2], optimizer=True)
    transformers.Trainer(model=transformers.LlamaForCausalLM(cfg), args=args, train_dataset=TokenDataset(4, seq=8, vocab=64),
                         callbacks=[cb]).train()
    recs = optimizer_records(parity.load(str(tmp_path / "run")), 2)  # the Trainer's second optimizer step
    for state in ("step", "exp_avg", "exp_avg_sq"):
        assert "model.layers.0.mlp.up_proj/optimizer/{}/weight".format(state) in recs
    assert recs["model.layers.0.mlp.up_proj/optimizer/exp_avg/weight"].op == "AdamW"
    # the Trainer clips with max_grad_norm 1.0 through accelerate: its factor is seen
    assert "<global>/optimizer/grad_norm/0" in recs and "<global>/optimizer/clip_factor/0" in recs
    assert recs["<global>/optimizer/lr/group0"].stats["max"] == pytest.approx(5e-4)  # linear decay, step 2 of 2
    assert optimizer_records(parity.load(str(tmp_path / "run")), 1) == {}


def test_any_state_key_is_recorded_adafactor(tmp_path):
    model = two_layers()
    opt = torch.optim.Adafactor(model.parameters(), lr=1e-2)
    with parity.capture(model, tmp_path / "run", mode="tensor", steps=[1], optimizer=opt) as cap:
        seen = train(model, opt, cap, 2, snapshot_at=1)
    recs = optimizer_records(parity.load(str(tmp_path / "run")), 1)
    for p, state in seen["state"].items():
        assert state, p
        for key, value in state.items():  # row_var / col_var of matrices, variance of vectors, step
            assert np.array_equal(recs[state_name(p, key)].to_float32(), value.numpy()), (p, key)
    assert "0/optimizer/row_var/weight" in recs and "0/optimizer/variance/bias" in recs


def test_two_optimizer_steps_in_one_capture_step_are_numbered(tmp_path):
    model = two_layers()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with parity.capture(model, tmp_path / "run", steps=[0], optimizer=opt, optimizer_update=True):
        for micro in range(2):  # two optimizer steps before next_step(): one capture step
            x, y = batch(micro)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    run = parity.load(str(tmp_path / "run"))
    assert not run.problems  # names unique within the step
    recs = optimizer_records(run, 0)
    assert {"2/optimizer/momentum_buffer/bias", "2/optimizer/momentum_buffer/bias#1", "2/optimizer/update/bias#1",
            "<global>/optimizer/lr/group0#1"} <= set(recs)


def test_not_an_optimizer_fails_before_anything_is_written(tmp_path):
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        parity.capture(two_layers(), tmp_path / "run", optimizer=object())
    assert not (tmp_path / "run").exists()
