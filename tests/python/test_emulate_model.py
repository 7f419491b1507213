"""parity.emulate on real torch models: policy resolution and precedence, where rounding happens (module
inputs, weights, outputs; matmul operands for operand formats; op outputs), fp32 pinning, restoring the
model on exit, and agreement with torch's own bf16 arithmetic (docs/emulation.md)."""
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import parity  # noqa: E402
from parity import emulation as em  # noqa: E402
from parity.examples.models import build_model  # noqa: E402


def tokens(seed=0, batch=2, seq=16, vocab=64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, seq), generator=g)


def llama():
    return build_model("llama", "tiny", seed=3).eval()


def test_policy_precedence():
    m = llama()
    plan = em.resolve(m, {"*": "bf16", "*.attn_norm": "fp32", "softmax": "fp16", "*.mlp.*": "fp8_e4m3",
                          "layers.1.mlp.w2": "int8", "RMSNorm": "fp16"})
    fmt = {k: v[0].format for k, v in plan.items()}
    assert fmt["layers.0.attn_norm"] == "fp32"        # longer pattern beats "*"
    assert fmt["layers.0.mlp.w1"] == "fp8_e4m3"
    assert fmt["layers.1.mlp.w2"] == "int8"           # an exact name beats every pattern
    assert fmt["layers.0.attn.wq"] == "bf16"
    assert fmt["norm"] == "bf16"                      # a pattern ("*") beats a type rule
    assert "softmax" not in plan                      # op classes are not modules
    # inheritance: without "*", a child takes its nearest ruled ancestor's mode
    plan = em.resolve(m, {"layers.0": "fp16", "layers.0.mlp": "bf16"})
    assert plan["layers.0.attn.wq"][0].format == "fp16" and plan["layers.0.attn.wq"][2] is True
    assert plan["layers.0.mlp.w3"][0].format == "bf16"
    assert "layers.1.attn" not in plan
    # a type rule applies where no name rule does
    plan = em.resolve(m, {"RMSNorm": "fp16"})
    assert {k for k in plan} == {"layers.0.attn_norm", "layers.0.mlp_norm", "layers.1.attn_norm",
                                 "layers.1.mlp_norm", "norm"}


def test_bad_policies_name_the_key():
    m = llama()
    with pytest.raises(ValueError, match=r"'\*\.mlpp\.\*' matches no module"):
        parity.emulate(m, {"*.mlpp.*": "bf16"})
    with pytest.raises(ValueError, match=r"'layers\.0': .*unknown format 'bf17'"):
        parity.emulate(m, {"layers.0": "bf17"})
    with pytest.raises(ValueError, match="no module of type 'Conv2d'"):
        parity.emulate(m, {"type:Conv2d": "int8"})


def test_model_is_restored_exactly_after_the_context():
    m = llama()
    x = tokens()
    with torch.no_grad():
        golden = m(x)
        before = {k: v.clone() for k, v in m.state_dict().items()}
        with parity.emulate(m, {"*": "int8:channel", "softmax": "fp8_e4m3", "RMSNorm": "bf16"}) as e:
            low = m(x)
        after = m(x)
    assert e.rounded["params"] > 0 and e.rounded["ops"] > 0
    assert not torch.equal(low, golden)
    assert torch.equal(after, golden)
    for k, v in m.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_emulated_bf16_linear_matches_torch_bf16_arithmetic():
    # A Linear computed by torch in bf16 (fp32 accumulation, result rounded to bf16) against the same Linear
    # in fp32 under emulate {"": "bf16"}: inputs, weight, bias and output rounded to bf16.
    torch.manual_seed(0)
    lin = nn.Linear(48, 40)
    x = torch.randn(64, 48)
    with torch.no_grad():
        with parity.emulate(lin, {"": "bf16"}):
            emu = lin(x)
        real = F.linear(x.bfloat16(), lin.weight.bfloat16(), lin.bias.bfloat16()).float()
    exact = (emu == real).float().mean().item()
    # Different summation orders can move a sum across a bf16 rounding boundary: at most one bf16 ulp.
    ulp = torch.ldexp(torch.ones_like(real), torch.frexp(real)[1] - 8)
    assert exact > 0.97, exact
    assert ((emu - real).abs() <= ulp).all()
    # and far from the fp32 result, so the test can tell
    with torch.no_grad():
        assert (lin(x) != emu).float().mean() > 0.5


def test_fp16_overflow_becomes_inf_and_fp32_pins_a_subtree():
    m = llama()
    x = tokens()
    with torch.no_grad():
        m.layers[1].mlp.w2.weight.mul_(1e7)  # MLP output beyond 65504
        with parity.emulate(m, {"layers.1.mlp": "fp16"}):
            y = m(x)
        assert torch.isnan(y).any() or torch.isinf(y).any()
        with parity.emulate(m, {"layers.1.mlp": "fp16:sat"}):
            assert torch.isfinite(m(x)).all()
        # fp32 on a subtree: its modules inherit it (no rounding) and op rules do not apply inside it; a
        # descendant's own rule still wins (nearest rule)
        with parity.emulate(m, {"layers.1": "fp32", "layers.*.mlp.w1": "fp16", "softmax": "bf16"}) as e:
            y = m(x)
        assert torch.isfinite(y).all()
        assert e.rounded["ops"] == 1  # layers.0's softmax only
        assert e.rounded["outputs"] == 2  # layers.0.mlp.w1 and layers.1.mlp.w1


def test_softmax_op_rule_rounds_only_softmax_outputs():
    m = llama()
    x = tokens()
    seen = []
    with torch.no_grad():
        golden = m(x)
        with parity.emulate(m, {"softmax": "bf16"}) as e:
            hook = m.layers[0].attn.wo.register_forward_pre_hook(lambda mod, a: seen.append(a[0].clone()))
            y = m(x)
            hook.remove()
    assert e.rounded == {"inputs": 0, "outputs": 0, "params": 0, "ops": 2}
    assert not torch.equal(y, golden)


def test_tf32_rounds_matmul_operands_not_results():
    torch.manual_seed(1)
    a, b = torch.randn(32, 64), torch.randn(64, 16)
    mod = nn.Identity()
    with parity.emulate(mod, {"matmul": "tf32"}) as e:
        got = a @ b
    ra = em.round_tensor(a, "tf32")
    rb = em.round_tensor(b, "tf32")
    assert torch.equal(got, ra @ rb)
    assert e.rounded["ops"] == 1
    # the result itself is not rounded to 10 bits
    assert not torch.equal(got, em.round_tensor(got, "tf32"))


def test_int8_on_a_linear_quantises_weight_per_channel_and_input_per_tensor():
    torch.manual_seed(2)
    lin = nn.Linear(16, 8)
    x = torch.randn(4, 16)
    with torch.no_grad():
        w = lin.weight.clone()
        with parity.emulate(lin, {"": "int8:channel"}):
            wq = lin.weight.clone()
            y = lin(x)
        want_w = torch.fake_quantize_per_channel_affine(w, w.abs().amax(1) / 127, torch.zeros(8, dtype=torch.int32),
                                                        0, -127, 127)
        assert torch.equal(wq, want_w)
        xq = em.round_tensor(x, "int8:channel", axis=-1)
        assert torch.equal(y, F.linear(xq, want_w, lin.bias))  # the bias stays fp32, the output is not rounded
        assert torch.equal(lin.weight, w)


@pytest.mark.skipif(not hasattr(torch.nn.Module, "register_forward_hook"), reason="old torch")
def test_hf_transformers_tiny_llama():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    x = tokens()
    with torch.no_grad():
        golden = model(x).logits
        with parity.emulate(model, {"model.layers.*.mlp.*": "int8", "*.self_attn.*": "bf16"}) as e:
            low = model(x).logits
        assert torch.equal(model(x).logits, golden)
    assert e.rounded["params"] == 2 * 3 + 2 * 4
    assert not torch.equal(low, golden)
    assert (low - golden).abs().max() < 1.0
