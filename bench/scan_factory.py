"""Factory of the scan benchmark (docs/benchmarks.md, "Sensitivity scan"): the example Llama-style model at
its demo size (`small`: 4 layers, dim 128, ~1 M parameters), fp32, and 2 batches of 4 x 128 tokens of the
synthetic corpus.

    parity scan --factory bench/scan_factory.py:make_model_and_batches --lower-to int8 --budget-kld 0.002
"""
from parity.examples.data import SyntheticCorpus
from parity.examples.models import build_model


def make_model_and_batches():
    model = build_model("llama", "small", seed=0).eval()
    corpus = SyntheticCorpus(vocab_size=256, n_tokens=1 << 14)
    return model, [corpus.batch(i, 4, 128) for i in range(2)]
