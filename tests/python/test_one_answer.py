"""One answer per question (issue 28 §6, §7), on real runs captured with parity.capture and compared with the
real `parity compare`:
  (1) a headline never passes while a diagnosis says the run is broken: an OVERFLOW (NaN/Inf born in the
      target from finite inputs) fails an HF Llama run at module and at mix level alike;
  (2) a failing run always names a cause or says NO_CAUSE_FOUND with the rows it looked at: bf16 weight
      updates that round to nothing are named (UPDATE_LOST_TO_ROUNDING); a frozen fp32 norm is named by its
      optimizer call, not by rounding;
  (3) exact-name pairs keep full confidence when a sibling op is missing, and the missing op is named
      (STRUCTURE_DIFF, a suspect of kind "structure", with its recorded arguments);
  (4) every warning has a place: an op that creates elevated error from identical inputs is a suspect."""
import json

import pytest
import torch

import capture_helpers
import parity

transformers = pytest.importorskip("transformers")
ml = pytest.importorskip("transformers.models.llama.modeling_llama")

VOCAB, SEQ, BATCH = 128, 16, 2


def tiny_llama(layers=3):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_key_value_heads=2, vocab_size=VOCAB,
                                   num_hidden_layers=layers, num_attention_heads=4, max_position_embeddings=64,
                                   attn_implementation="eager")
    return transformers.LlamaForCausalLM(cfg)


def sharp_attention_llama():
    """A 3-layer Llama whose layer-2 attention is sharp (query and key weights × 20, the same in both runs):
    its scores reach tens, where exp overflows fp16 (above ln 65504 = 11.09) unless the max is subtracted."""
    model = tiny_llama()
    with torch.no_grad():
        for proj in (model.model.layers[2].self_attn.q_proj, model.model.layers[2].self_attn.k_proj):
            proj.weight.mul_(20)
    return model


def train_step(model, path, level, mode="tensor"):
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    with parity.capture(model, str(path), level=level, mode=mode) as cap:
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        cap.next_step()


def compare(tmp_path, golden, target, *extra):
    out = tmp_path / "cmp.json"
    p = capture_helpers.run_cli("compare", golden, target, "--json", out, *extra)
    assert p.returncode in (0, 1), p.stdout[-3000:] + p.stderr[-3000:]
    res = json.loads(out.read_text())
    res["_text"] = p.stdout
    res["_headline"] = p.stdout.strip().splitlines()[-1]
    return p.returncode, res


def codes(res):
    return [d["code"] for d in res["diagnosis"]]


def diagnosis(res, code):
    found = [d for d in res["diagnosis"] if d["code"] == code]
    assert found, (code, codes(res), res["_text"][-3000:])
    return found[0]


def assert_one_answer(rc, res):
    """Headline, exit code, JSON verdict and the diagnoses' severities say the same thing."""
    verdict = res["summary"]["verdict"]
    assert rc == res["summary"]["exit_code"] == (1 if verdict in ("fail", "error") else 0)
    head = res["_headline"]
    assert head.startswith({"pass": "PASSED |", "warn": "PASSED WITH WARNINGS", "fail": "FAILED",
                            "error": "FAILED"}[verdict]), head
    order = ["info", "warn", "fail"]
    worst = max((order.index(d["severity"]) for d in res["diagnosis"]), default=0)
    assert order.index({"pass": "info", "warn": "warn"}.get(verdict, "fail")) >= worst, res["diagnosis"]
    if verdict in ("fail", "error"):  # a failing run names a cause, or says that it found none
        assert any(d["severity"] != "info" for d in res["diagnosis"]), codes(res)


# (1) ---------------------------------------------------------------------------------------------------------
def fp16_softmax_without_max(faulty):
    """Llama's eager attention with its softmax in fp16 and no max subtraction, in `faulty` only."""
    original = ml.eager_attention_forward

    def forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        if module is not faulty:
            return original(module, query, key, value, attention_mask, scaling, dropout, **kwargs)
        k = ml.repeat_kv(key, module.num_key_value_groups)
        v = ml.repeat_kv(value, module.num_key_value_groups)
        scores = torch.matmul(query, k.transpose(2, 3)) * scaling
        e = torch.exp(scores.half())  # no max subtracted: scores above 11.09 overflow to Inf in fp16
        if attention_mask is not None:  # the causal mask as a product (its finfo.min would be -inf in fp16)
            e = e * (attention_mask == 0)
        p = (e / e.sum(-1, keepdim=True)).to(query.dtype)
        return torch.matmul(p, v).transpose(1, 2).contiguous(), p
    return forward


@pytest.mark.parametrize("level", ["module", "mix"])
def test_overflow_fails_the_run_at_every_capture_level(tmp_path, monkeypatch, level):
    train_step(sharp_attention_llama(), tmp_path / "golden", level)
    target = sharp_attention_llama()
    monkeypatch.setattr(ml, "eager_attention_forward", fp16_softmax_without_max(target.model.layers[2].self_attn))
    train_step(target, tmp_path / "target", level)
    monkeypatch.undo()
    rc, res = compare(tmp_path, tmp_path / "golden", tmp_path / "target")
    explain = res["_text"][-4000:]
    assert rc == 1 and res["summary"]["verdict"] in ("fail", "error"), explain
    assert res["_headline"].startswith("FAILED"), explain
    if level == "mix":  # the exp that overflows is recorded: NaN/Inf born in the target, the golden finite
        overflow = diagnosis(res, "OVERFLOW")
        assert overflow["severity"] == "fail", overflow
        assert overflow["events"][0].startswith("model.layers.2.self_attn/exp#"), overflow
    assert res["suspects"][0]["module"].startswith("model.layers.2.self_attn"), json.dumps(res["suspects"][:3])
    assert_one_answer(rc, res)


# (2) ---------------------------------------------------------------------------------------------------------
class NormNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(32, 64)
        self.norm = torch.nn.LayerNorm(64)
        self.down = torch.nn.Linear(64, 8)

    def forward(self, x):
        return self.down(self.norm(torch.relu(self.up(x))))


def train_two_steps(dtype, path, norm_lr=1e-3):
    """Two SGD steps (lr 1e-3; `norm_lr` for the LayerNorm's parameters) of NormNet in `dtype`, both
    captured: in bf16 the LayerNorm weight (1.0, an ulp of 2^-7) does not move, since every update is below
    half an ulp."""
    torch.manual_seed(0)
    model = NormNet().to(dtype)
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(1)).to(dtype)
    y = torch.randn(16, 8, generator=torch.Generator().manual_seed(2))
    norm = list(model.norm.parameters())
    rest = [p for n, p in model.named_parameters() if not n.startswith("norm.")]
    opt = torch.optim.SGD([{"params": rest}, {"params": norm, "lr": norm_lr}], lr=1e-3)
    with parity.capture(model, str(path), level="mix", mode="tensor", steps=None) as cap:
        for _ in range(2):
            (model(x).float() - y).square().mean().backward()
            opt.step()
            opt.zero_grad()
            cap.next_step()
    return model


def assert_only_the_step_1_norm_parameters_fail(res):
    failing = [r["name"] for r in res["rows"] if r["verdict"] == "fail"]
    assert "norm/forward/parameter/weight" in failing and all(r["step"] == 1 for r in res["rows"]
                                                              if r["verdict"] == "fail"), failing
    # the noise summary counts the rows that fail: a row failed by its update is not noise
    assert res["noise_summary"]["structural"] >= len(failing), res["noise_summary"]
    assert "0 structural" not in res["_text"].split("Noise model:")[1].splitlines()[0], res["_text"][-4000:]


def test_bf16_updates_that_round_to_nothing_are_named(tmp_path):
    train_two_steps(torch.float32, tmp_path / "golden")
    target = train_two_steps(torch.bfloat16, tmp_path / "target")
    assert torch.all(target.norm.weight == 1), "the bf16 updates were meant to round to nothing"
    rc, res = compare(tmp_path, tmp_path / "golden", tmp_path / "target")
    explain = res["_text"][-4000:]
    assert rc == 1 and res["summary"]["verdict"] == "fail", explain
    assert_only_the_step_1_norm_parameters_fail(res)
    weight = next(r for r in res["rows"] if r["name"] == "norm/forward/parameter/weight" and r["step"] == 1)
    u = weight["update"]  # 64 elements; one whose golden step is below fp32's own half-ulp at 1.0 does not move
    assert 60 <= u["moved"] <= 64 and u["moved"] == u["stalled"] == u["lost"], u
    found = diagnosis(res, "UPDATE_LOST_TO_ROUNDING")
    assert found["severity"] == "warn" and found["events"][0] == "norm/forward/parameter/weight", found
    text = "\n".join(found["evidence"])
    assert "norm/forward/parameter/weight (bf16, step 0 → 1): {0} of the {0} elements the golden's step moved stayed " \
           "in place in the target, {0} of them because that step, added in bf16, rounds back".format(u["moved"]) in text, text
    assert "fp32 master copy" in found["advice"], found
    assert "NO_CAUSE_FOUND" not in codes(res), codes(res)
    assert_one_answer(rc, res)


def test_a_frozen_fp32_norm_is_named_by_its_optimizer_call_not_by_rounding(tmp_path):
    """The same two steps in fp32 on both sides, the target's LayerNorm frozen (its learning rate 0): its
    parameters stand still although fp32 could hold every step. The cause is the optimizer's call, recorded
    as the update's `add_(grad, alpha=-lr)`; the parameter's dtype is not."""
    train_two_steps(torch.float32, tmp_path / "golden")
    target = train_two_steps(torch.float32, tmp_path / "target", norm_lr=0.0)
    assert torch.all(target.norm.weight == 1)
    rc, res = compare(tmp_path, tmp_path / "golden", tmp_path / "target")
    assert rc == 1 and res["summary"]["verdict"] == "fail", res["_text"][-4000:]
    weight = next(r for r in res["rows"] if r["name"] == "norm/forward/parameter/weight" and r["step"] == 1)
    u = weight["update"]
    assert weight["verdict"] == "fail" and u["moved"] == u["stalled"] > 0 and u["lost"] == 0, weight
    assert "UPDATE_LOST_TO_ROUNDING" not in codes(res), codes(res)
    found = diagnosis(res, "OP_ARGUMENT_MISMATCH")
    assert any("alpha -0.001 → -0.0" in e for e in found["evidence"]), found
    assert_one_answer(rc, res)


# (3) ---------------------------------------------------------------------------------------------------------
class Attention(torch.nn.Module):
    def __init__(self, d=64, scaled=True):
        super().__init__()
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.scaled = scaled

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        s = q @ k.transpose(-2, -1)
        if self.scaled:
            s = s / q.shape[-1] ** 0.5
        return self.proj(torch.softmax(s, dim=-1) @ v)


class Blocks(torch.nn.Module):
    def __init__(self, scaled_in_block_1=True):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Attention(), Attention(scaled=scaled_in_block_1), Attention()])

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return x


def test_missing_op_is_named_and_exact_names_keep_their_pairs(tmp_path):
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(1))
    for scaled, side in ((True, "golden"), (False, "target")):
        torch.manual_seed(0)
        model = Blocks(scaled_in_block_1=scaled)
        with parity.capture(model, str(tmp_path / side), level="mix", mode="tensor") as cap:
            model(x).square().mean().backward()
            cap.next_step()
    rc, res = compare(tmp_path, tmp_path / "golden", tmp_path / "target")
    explain = res["_text"][-4000:] + json.dumps(res["suspects"][:3], indent=1)
    assert rc == 1 and res["summary"]["verdict"] == "fail", explain
    missing = [n for n in res["alignment"]["unmatched_golden"] if n.startswith("blocks.1/")]
    assert missing and all("div#0" in n or "truediv" in n for n in missing), missing
    # the softmax of block 1 is the same call on both sides: paired by name, at full confidence, and it fails
    softmax = [r for r in res["rows"] if r["name"] == "blocks.1/softmax#0/forward/output/0"]
    assert len(softmax) == 1 and softmax[0]["match"] == "exact" and softmax[0]["verdict"] == "fail", softmax
    assert "alignment only" not in softmax[0]["reason"], softmax[0]["reason"]
    assert res["first_divergence"]["name"].startswith("blocks.1/"), res["first_divergence"]
    # the missing op is the first suspect and the diagnosis names it with its argument, 1/√64 = 1/8.0
    top = res["suspects"][0]
    assert top["kind"] == "structure" and top["module"] == "blocks.1" and top["op"] in ("div", "__truediv__"), explain
    found = diagnosis(res, "STRUCTURE_DIFF")
    assert found["events"][0] == top["event"], found
    assert "only in the golden run" in found["evidence"][0] and "8.0" in found["evidence"][0], found["evidence"]
    assert_one_answer(rc, res)


def test_same_ops_in_another_order_are_not_a_structure_difference(tmp_path):
    """The silent side: both runs execute the same ops (eager attention on both sides), so nothing is
    one-sided and no STRUCTURE_DIFF is named."""
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(1))
    for side in ("golden", "target"):
        torch.manual_seed(0)
        model = Blocks()
        with parity.capture(model, str(tmp_path / side), level="mix", mode="tensor") as cap:
            model(x).square().mean().backward()
            cap.next_step()
    rc, res = compare(tmp_path, tmp_path / "golden", tmp_path / "target")
    assert rc == 0 and "STRUCTURE_DIFF" not in codes(res) and "NO_CAUSE_FOUND" not in codes(res), res["_text"]
    assert_one_answer(rc, res)


# (4) ---------------------------------------------------------------------------------------------------------
def perturbed(module, rel):
    """`module`'s output times (1 + rel·r), r = ±1 at random: an elementwise error of relative L2 `rel`."""
    forward = module.forward

    def f(x):
        y = forward(x)
        r = torch.randint(0, 2, y.shape, generator=torch.Generator().manual_seed(3)).to(y.dtype) * 2 - 1
        return y * (1 + rel * r)
    module.forward = f


def test_an_op_that_creates_elevated_error_is_a_suspect(tmp_path):
    # An fp32 Llama whose layer-1 activation adds about 6 expected roundings from identical inputs: the
    # activation's rows warn (elevated: 4 < r ≤ 32), below the 8× amplification a source needed before.
    # The module's expected error is u·sqrt(1 + log2 n), n = 128 its input's last dimension (docs/judgement.md).
    expected = 2.0 ** -24 * (1 + 7) ** 0.5
    train_step(tiny_llama(2), tmp_path / "golden", "module")
    target = tiny_llama(2)
    faulty = "model.layers.1.mlp.act_fn"
    perturbed(dict(target.named_modules())[faulty], 6 * expected)
    train_step(target, tmp_path / "target", "module")
    rc, res = compare(tmp_path, tmp_path / "golden", tmp_path / "target")
    explain = res["_text"][-4000:] + json.dumps(res["suspects"][:3], indent=1)
    row = [r for r in res["rows"] if r["name"] == faulty + "/forward/output/0"][0]
    assert row["noise"] == "elevated" and 4 < row["noise_ratio"] < 8, row
    assert res["summary"]["verdict"] == "warn" and rc == 0, explain
    forward = [s for s in res["suspects"] if s["direction"] == "forward"]
    assert forward and forward[0]["module"] == faulty and forward[0]["kind"] == "source", explain
    assert_one_answer(rc, res)
