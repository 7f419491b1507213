"""Real runs for the model tree's browser test (tests/browser/tree.test.mjs): a tiny Hugging Face Llama
(transformers' LlamaForCausalLM, 2 layers, random weights, no download), one training step captured at
"mix" level (module and op events) in fp32 by both runs. Layer 1's attention is sharp (its q/k projections
scaled up, in both runs). The target computes that attention's softmax by hand in fp16 without
subtracting the row maximum: exp, sum and div replace softmax (ops present in one run only), exp overflows
in fp16 and NaN/Inf spread downstream. Then `parity compare --json` and `parity report`.

    .venv/bin/python tests/browser/tree_runs.py OUT_DIR [PARITY_BIN]

Writes OUT_DIR/compare.json and OUT_DIR/report.html. Exit status 0, or 2 when a command failed."""
import os
import sys

import torch
import transformers

import parity
from demo_runs import cli  # tests/browser: the same way of running the tool
from parity.examples.demo_overflow import softmax_fp16_without_max  # the demo's fault, on an HF attention

VOCAB, SEQ, BATCH = 128, 12, 2
FAULTY = "model.layers.1.self_attn"


def tiny_llama():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   attn_implementation="eager")
    model = transformers.LlamaForCausalLM(cfg)
    attn = dict(model.named_modules())[FAULTY]
    with torch.no_grad():  # sharp attention: scores far beyond ln(65504) ~ 11
        attn.q_proj.weight.mul_(60.0)
        attn.k_proj.weight.mul_(60.0)
    return model


def capture(model, path):
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    with parity.capture(model, path, level="mix", mode="tensor", steps=[0]) as cap:
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        cap.log(loss=out.loss)
        cap.next_step()


def main():
    out = os.path.abspath(sys.argv[1])
    parity_bin = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("PARITY_BIN", "parity")
    os.makedirs(out, exist_ok=True)
    golden, target = os.path.join(out, "golden"), os.path.join(out, "target")
    capture(tiny_llama(), golden)
    model = tiny_llama()
    softmax_fp16_without_max(dict(model.named_modules())[FAULTY])
    capture(model, target)
    cli(parity_bin, "compare", golden, target, "--json", os.path.join(out, "compare.json"), ok=(1,))
    cli(parity_bin, "report", os.path.join(out, "compare.json"), "-o", os.path.join(out, "report.html"), ok=(0,))
    print(os.path.join(out, "report.html"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
