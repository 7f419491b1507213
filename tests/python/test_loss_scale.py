"""Loss scaling understood (issue 28 §2), on a real Hugging Face Llama built from a tiny config: the golden
trains in fp32 with an unscaled loss, the target under `torch.autocast("cpu", dtype=torch.float16)` with the
loss multiplied by 4096 before `backward()` — what `GradScaler` does — and by 2048 the next step (GradScaler
halves its scale after an overflow). `parity compare` must recognise the scale per step from the backward
records (and the recorded scaling op), compare the gradients unscaled, pass, and say so (`LOSS_SCALE`), by
tensors and by statistics. A real fault — one layer's gradients halved by hooks, no loss scaling — must not
be taken for a scale and still fails (docs/judgement.md "Loss scaling")."""

import pytest
import torch

import capture_helpers
import parity

transformers = pytest.importorskip("transformers")

VOCAB, SEQ, BATCH = 128, 16, 2


def llama():
    """A 2-layer Llama (hidden 64), seeded random init: the same weights on every call."""
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   attn_implementation="eager")
    return transformers.LlamaForCausalLM(cfg)


def batch():
    return torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))


def capture(model, path, loss_scales, mode, autocast_fp16=False, grad_scaler=False):
    """One forward + backward per entry of `loss_scales` (no optimizer step: every step sees the same
    weights), the loss multiplied by that scale before backward() unless it is None — by hand, or by a
    torch.amp.GradScaler set to that scale."""
    ids = batch()
    scaler = torch.amp.GradScaler("cpu", init_scale=loss_scales[0]) if grad_scaler else None
    with parity.capture(model, str(path), level="mix", mode=mode, steps=range(len(loss_scales))) as cap:
        for i, scale in enumerate(loss_scales):
            with torch.autocast("cpu", dtype=torch.float16, enabled=autocast_fp16):
                out = model(input_ids=ids, labels=ids)
            if scaler is not None:
                loss = scaler.scale(out.loss)
            else:
                loss = out.loss if scale is None else out.loss * scale
            loss.backward()
            model.zero_grad(set_to_none=True)
            if scaler is not None and i + 1 < len(loss_scales):
                scaler.update(loss_scales[i + 1])  # what GradScaler does after an overflow: the next scale
            cap.next_step()


compare = capture_helpers.compare_json


def failing(res):
    return [(r["name"], r["step"], r["reason"][:120]) for r in res["rows"] if r["verdict"] in ("fail", "error")]


@pytest.mark.parametrize("mode,grad_scaler", [("tensor", False), ("statistics", False), ("tensor", True)])
def test_amp_fp16_with_loss_scaling_passes_and_names_the_scale(tmp_path, mode, grad_scaler):
    capture(llama(), tmp_path / "golden", [None, None], mode)
    capture(llama(), tmp_path / "target", [4096.0, 2048.0], mode, autocast_fp16=True, grad_scaler=grad_scaler)
    rc, res = compare(tmp_path, tmp_path / "golden", tmp_path / "target")
    head = res["_text"].strip().splitlines()[-1]
    assert rc == 0 and not head.startswith("FAILED"), (head, failing(res)[:10], res["_text"][-3000:])

    # Recognised per step: 2^12, then the halved 2^11; the target's scaling op corroborates each.
    scales = {s["step"]: s for s in res["loss_scales"]}
    assert sorted(scales) == [0, 1], res["loss_scales"]
    for step, k in ((0, 12), (1, 11)):
        s = scales[step]
        assert s["log2"] == k and s["factor"] == 2.0 ** k, s
        assert s["rows_at_ratio"] >= 0.6 * s["rows_measured"] and s["rows_measured"] > 50, s
        assert s["target_op"] is not None and s["target_op"]["factor"] == 2.0 ** k, s
        assert s["target_op"]["event"].startswith("<global>/"), s
        assert s["golden_op"] is None, s

    # The backward rows were compared unscaled; forward rows never are.
    rows = res["rows"]
    scaled = [r for r in rows if r["loss_scale_log2"] != 0]
    assert {(r["step"], r["loss_scale_log2"]) for r in scaled} == {(0, 12), (1, 11)}
    assert all(r["direction"] == "backward" for r in scaled)
    grads = [r for r in scaled if r["role"] == "grad"]
    assert len(grads) >= 10 and all(r["verdict"] != "fail" for r in grads), failing(res)[:10]
    assert not any(r["loss_scale_log2"] for r in rows if r["direction"] == "forward")

    # Said so, as information: never a cause, never a failure.
    diag = {d["code"]: d for d in res["diagnosis"]}
    assert "LOSS_SCALE" in diag, list(diag)
    d = diag["LOSS_SCALE"]
    assert d["strength"] == 0
    text = "\n".join(d["evidence"])
    assert "target gradients × 4096 = 2^12 (step 0, rank 0), compared after unscaling" in text, text
    assert "target gradients × 2048 = 2^11 (step 1, rank 0)" in text, text
    assert "argument 4096 in the target" in text, text
    assert "LOSS_SCALE" in res["_text"]
    # The scaling op, and GradScaler's bookkeeping of its scale, exist in the target only: how it scales its
    # loss, not records missing from the golden.
    s = res["summary"]
    assert s["unmatched_golden"] == 0 and s["unmatched_target"] == s["unmatched_implementation"] > 0, s


def test_one_layer_gradient_halved_is_not_a_loss_scale(tmp_path):
    capture(llama(), tmp_path / "golden", [None], "tensor")
    target = llama()
    # The fault: every parameter gradient of one decoder layer halved (hooks registered before the capture's,
    # so the capture records the halved gradients the optimizer would see).
    layer = target.model.layers[1]
    for p in layer.parameters():
        p.register_hook(lambda g: g * 0.5)
    capture(target, tmp_path / "target", [None], "tensor")
    rc, res = compare(tmp_path, tmp_path / "golden", tmp_path / "target")
    assert res["loss_scales"] == [], res["loss_scales"]
    assert all(r["loss_scale_log2"] == 0 for r in res["rows"])
    assert "LOSS_SCALE" not in {d["code"] for d in res["diagnosis"]}
    head = res["_text"].strip().splitlines()[-1]
    assert rc == 1 and head.startswith("FAILED"), head
    failed = {name for name, _, _ in failing(res)}
    assert any(n.startswith("model.layers.1.") and "/backward/grad/" in n for n in failed), sorted(failed)[:20]
