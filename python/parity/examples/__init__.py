"""Example models, data and a training loop for parity's tests, demo and benchmarks (plain PyTorch,
no download). See docs/capture.md, "Example models"."""
from .data import SyntheticCorpus, text_corpus  # noqa: F401
from .models import GPT2, GPT2Config, Llama, LlamaConfig, PrecisionPolicy, apply_precision, build_model  # noqa: F401
from .train import train  # noqa: F401
