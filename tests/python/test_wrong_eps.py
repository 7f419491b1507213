"""Issue 28 acceptance: an HF Llama whose layer-2 RMSNorm has eps = 1.0 in the target (golden 1e-06) is
named by its argument (OP_ARGUMENT_MISMATCH, `eps 1e-06 → 1.0`: the norm's `add` argument 1, which capture
finds to be the module's `variance_epsilon`) as the top cause, in bf16 and in fp32 alike;
a dtype-based guess (LOW_PRECISION_SENSITIVE_OP) is not given as the cause of that norm."""
import json
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
import transformers  # noqa: E402

import capture_helpers  # noqa: E402
import parity  # noqa: E402

FAULTY = "model.layers.1.input_layernorm"  # layer 2


def tiny_llama(dtype):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   rms_norm_eps=1e-6)
    return transformers.LlamaForCausalLM(cfg).to(dtype)


def capture(model, path):
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    with parity.capture(model, str(path), level="mix", mode="tensor") as cap:
        model(input_ids=ids, labels=ids).loss.backward()
        cap.next_step()


@pytest.mark.parametrize("target_dtype", [torch.bfloat16, torch.float32])
def test_wrong_eps_is_named_by_its_argument(tmp_path, target_dtype):
    golden, target = tiny_llama(torch.float32), tiny_llama(target_dtype)
    dict(target.named_modules())[FAULTY].variance_epsilon = 1.0
    capture(golden, tmp_path / "golden")
    capture(target, tmp_path / "target")
    out = tmp_path / "cmp.json"
    p = capture_helpers.run_cli("compare", tmp_path / "golden", tmp_path / "target", "--json", out)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-2000:]
    res = json.loads(out.read_text())
    assert res["summary"]["verdict"] == "fail"
    top = res["diagnosis"][0]
    evidence = " ".join(top.get("evidence") or [])
    assert top["code"] == "OP_ARGUMENT_MISMATCH", [d["code"] for d in res["diagnosis"]]
    # the eps is the norm's `add` argument 1 (rsqrt(mean x² + eps)), a bare float: capture records that it
    # equals the module's attribute `variance_epsilon` (docs/dump-format.md "names").
    assert FAULTY in evidence and "eps 1e-06 → 1.0 (the module's variance_epsilon, argument 1)" in evidence, evidence
    for d in res["diagnosis"]:
        if d["code"] == "LOW_PRECISION_SENSITIVE_OP":
            assert not any(FAULTY in e for e in d.get("events") or []), d
