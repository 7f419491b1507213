"""parity.scan on the project's Llama-style example with a deliberately outlier-heavy MLP (LLM.int8-style
activation outliers: two feature dimensions 10^4 times larger than the rest, compensated in the next
weights so the fp32 model computes the same function): the scan must rank that layer as the most
sensitive under int8 and fp8, its plan must meet the KLD budget when re-measured independently, and a
rerun with the same state file must do no new work (docs/scan.md)."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import parity  # noqa: E402
from parity import sensitivity  # noqa: E402
from parity.examples.data import SyntheticCorpus  # noqa: E402
from parity.examples.models import build_model  # noqa: E402

UNITS = ["layers.0.attn", "layers.0.mlp", "layers.1.attn", "layers.1.mlp", "head"]
OUTLIER_RATIO = 3.0e4


def make_model(outliers=True):
    m = build_model("llama", "tiny", seed=1).eval()
    with torch.no_grad():
        m.head.weight.mul_(50.0)  # a peaked next-token distribution, as a trained model's
        for layer in m.layers:
            layer.mlp.w2.weight.mul_(30.0)  # the MLPs carry a real share of the residual stream
        if outliers:
            mlp = m.layers[0].mlp
            for j in (3, 17):
                m.layers[0].mlp_norm.weight[j] *= OUTLIER_RATIO
                mlp.w1.weight[:, j] /= OUTLIER_RATIO
                mlp.w3.weight[:, j] /= OUTLIER_RATIO
    return m


def make_batches():
    corpus = SyntheticCorpus(vocab_size=64, n_tokens=4096)
    return [corpus.batch(i, 4, 32) for i in range(2)]


def make_model_and_batches():  # the --factory of the CLI test
    return make_model(), make_batches()


def kld_of(model, policy, batches):
    """Mean over sequences of KL(golden || emulated) per token, computed here without the scan's code."""
    vals = []
    with torch.no_grad():
        golden = [torch.log_softmax(model(x).double(), -1) for x, _ in batches]
        with parity.emulate(model, policy):
            logits = [model(x) for x, _ in batches]
        low = [torch.log_softmax(x.double(), -1) for x in logits]  # outside: a softmax rule must not touch it
    for g, q in zip(golden, low):
        vals += (g.exp() * (g - q)).sum(-1).mean(-1).tolist()
    return sum(vals) / len(vals)


def test_models_agree_in_fp32():
    # the outliers are compensated: the fp32 function is unchanged up to rounding
    x = make_batches()[0][0]
    with torch.no_grad():
        a, b = make_model(False)(x), make_model(True)(x)
    assert torch.allclose(a, b, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("lower_to,budget", [("int8", 2e-3), ("fp8_e4m3", 2e-3)])
def test_outlier_layer_ranks_first_and_plan_meets_budget(lower_to, budget, tmp_path):
    model, batches = make_model(), make_batches()
    result = parity.scan(model, batches, {"lower_to": lower_to, "units": UNITS, "budget_kld": budget},
                         state_path=str(tmp_path / "state.jsonl"))
    assert result["schema"] == "parity.scan/1"
    units = result["units"]
    assert units[0]["unit"] == "layers.0.mlp", [(u["unit"], u["kld"]["mean"]) for u in units]
    # clearly first: beyond the runner-up by more than both standard errors
    first, second = units[0]["kld"], units[1]["kld"]
    assert first["mean"] - 3 * first["se"] > second["mean"] + 3 * second["se"]
    assert units[0]["top1"]["mean"] < units[1]["top1"]["mean"]
    plan = result["plan"]
    assert plan["meets_budget"] and "layers.0.mlp" in plan["kept_fp32"] and plan["lowered"]
    assert plan["kld"]["mean"] <= budget
    # re-measured independently: the plan's policy keeps the model within the budget
    assert kld_of(model, plan["policy"], batches) <= budget
    # and lowering everything would not have
    assert kld_of(model, {u: lower_to for u in UNITS}, batches) > budget
    assert result["cost"]["forward_passes"] == 2 * (1 + len(UNITS) + len(UNITS))


def test_without_outliers_the_mlp_is_not_the_outlier():
    # the control that makes the test above able to fail: the same model without outliers
    result = parity.scan(make_model(False), make_batches(), {"lower_to": "int8", "units": UNITS, "greedy": False})
    mlp = next(u for u in result["units"] if u["unit"] == "layers.0.mlp")
    assert mlp["kld"]["mean"] < 0.05
    assert result["plan"] is None


def test_resume_skips_what_is_done(tmp_path):
    state = tmp_path / "scan.jsonl"
    model, batches = make_model(), make_batches()
    space = {"lower_to": "int8", "units": UNITS[:3], "budget_kld": 2e-3}
    first = parity.scan(model, batches, space, state_path=str(state))
    lines = state.read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "header" and len(lines) == 1 + 3 + 3
    # a torn last line (killed mid-write) is dropped; the rest is reused
    with open(state, "a") as f:
        f.write('{"key": "single|lay')
    again = parity.scan(model, batches, space, state_path=str(state))
    assert again["cost"]["forward_passes"] == 2  # the golden pass only
    assert again["cost"]["evaluations_resumed"] == 6
    assert [u["unit"] for u in again["units"]] == [u["unit"] for u in first["units"]]
    assert again["plan"]["lowered"] == first["plan"]["lowered"]
    # another configuration must not silently reuse it
    with pytest.raises(ValueError, match="different configuration"):
        parity.scan(model, batches, {**space, "lower_to": "fp8_e4m3"}, state_path=str(state))


def test_an_op_class_unit_does_not_round_the_measurement():
    # log_softmax belongs to the softmax op class: the scan's own log-probabilities must be computed outside
    # the emulation (inside, KLD came out negative)
    model, batches = make_model(False), make_batches()
    result = parity.scan(model, batches, {"lower_to": "bf16", "units": ["softmax", "layers.0.mlp"], "greedy": False})
    by_unit = {u["unit"]: u for u in result["units"]}
    assert all(u["kld"]["mean"] >= 0 for u in result["units"])
    want = kld_of(model, {"softmax": "bf16"}, batches)
    assert abs(by_unit["softmax"]["kld"]["mean"] - want) <= 1e-12 + 1e-9 * want


def test_default_units_and_bad_input():
    model = make_model()
    units = sensitivity.default_units(model, "int8")
    assert "head" in units and "layers.0.mlp.w1" in units and "layers.0.attn_norm" not in units
    assert "softmax" in sensitivity.default_units(model, "bf16")
    with pytest.raises(ValueError, match="unknown policy_space keys: lower"):
        parity.scan(model, make_batches(), {"lower": "int8"})
    with pytest.raises(ValueError, match="matches no module"):
        parity.scan(model, make_batches(), {"lower_to": "int8", "units": ["layers.9.*"]})


def test_hf_transformers_tiny_llama_scan():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(50.0)
        mlp = model.model.layers[1].mlp
        for j in (3, 17):
            model.model.layers[1].post_attention_layernorm.weight[j] *= OUTLIER_RATIO
            mlp.gate_proj.weight[:, j] /= OUTLIER_RATIO
            mlp.up_proj.weight[:, j] /= OUTLIER_RATIO
    batches = [(x, y) for x, y in make_batches()[:1]]
    units = ["model.layers.0.self_attn", "model.layers.0.mlp", "model.layers.1.self_attn", "model.layers.1.mlp"]
    result = parity.scan(model, batches, {"lower_to": "int8", "units": units, "greedy": False})
    assert result["units"][0]["unit"] == "model.layers.1.mlp"


def test_cli_engine_writes_json_and_table(tmp_path):
    out = tmp_path / "scan.json"
    env = dict(os.environ)
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = [sys.executable, "-m", "parity.sensitivity", "--factory", os.path.join(here, "test_scan.py") +
           ":make_model_and_batches", "--lower-to", "int8", "--budget-kld", "0.002", "--json", str(out)]
    for u in UNITS[:2]:
        cmd += ["--unit", u]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "parity.scan/1" and doc["units"][0]["unit"] == "layers.0.mlp"
    assert "layers.0.mlp" in p.stdout and "MEETS BUDGET" in p.stdout
    bad = subprocess.run([sys.executable, "-m", "parity.sensitivity", "--factory", "nope.py:f"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "nope.py does not exist" in bad.stderr


def test_parity_scan_cli(tmp_path):
    # the C++ front end: finds the interpreter ($PARITY_PYTHON here), runs the engine, writes --json/--html
    binary = os.environ.get("PARITY_BIN")
    if not binary or not os.path.exists(binary):
        pytest.skip("PARITY_BIN not built")
    env = dict(os.environ, PARITY_PYTHON=sys.executable)
    here = os.path.dirname(os.path.abspath(__file__))
    out, html, state = tmp_path / "scan.json", tmp_path / "scan.html", tmp_path / "state.jsonl"
    cmd = [binary, "scan", "--factory", os.path.join(here, "test_scan.py") + ":make_model_and_batches",
           "--lower-to", "int8", "--budget-kld", "1e-9", "--unit", "layers.0.mlp", "--unit", "layers.1.attn",
           "--json", str(out), "--html", str(html), "--state", str(state)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    # a budget nothing meets: the plan keeps everything fp32, and 1e-9 is still met by the empty plan
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["budget_kld"] == 1e-9 and doc["plan"]["lowered"] == [] and doc["units"][0]["unit"] == "layers.0.mlp"
    assert "parity.scan/1" in html.read_text() and "sec-scan" in html.read_text()
    assert len(state.read_text().splitlines()) == 1 + 2 + 2
    bad = subprocess.run([binary, "scan", "--factory", str(tmp_path / "missing.py") + ":f"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "missing.py does not exist" in bad.stderr


def test_progress_bar_only_on_a_terminal(capsys):
    bar = sensitivity._Progress(3, enabled=True)
    bar.step("layers.0.mlp")
    bar.done()
    err = capsys.readouterr().err
    assert err.startswith("\r[##########") and "1/3 layers.0.mlp" in err and err.endswith("\n")
    quiet = sensitivity._Progress(3)  # stderr is captured here, not a terminal: no bar
    quiet.step("x")
    quiet.done()
    assert capsys.readouterr().err == ""
