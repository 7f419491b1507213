"""seed_all: one call that makes a run repeatable, and remembers what it set for the fingerprint."""
import os
import random

# What the last seed_all call set; the environment fingerprint records it (docs/capture.md).
LAST_SEEDS = {}


def seed_all(seed, deterministic=True, warn_only=False):
    """Seed python, numpy and torch (+ CUDA / Ascend NPU when present) and, with `deterministic`,
    switch torch to deterministic algorithms and set CUBLAS_WORKSPACE_CONFIG (required by cuBLAS for
    deterministic matmuls, per the PyTorch reproducibility notes). Returns a dict of what was set."""
    seed = int(seed)
    done = {"seed": seed, "python": True}
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)  # affects child interpreters only
    done["PYTHONHASHSEED"] = str(seed)
    try:
        import numpy as np

        np.random.seed(seed % (2**32))
        done["numpy"] = True
    except ImportError:
        done["numpy"] = False
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.manual_seed(seed)
        done["torch"] = True
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
            done["cuda"] = True
        npu = getattr(torch, "npu", None)
        if npu is not None and hasattr(npu, "manual_seed_all"):
            npu.manual_seed_all(seed)
            done["npu"] = True
        if deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            done["CUBLAS_WORKSPACE_CONFIG"] = os.environ["CUBLAS_WORKSPACE_CONFIG"]
            torch.use_deterministic_algorithms(True, warn_only=warn_only)
            done["deterministic_algorithms"] = True
            if hasattr(torch.backends, "cudnn"):
                torch.backends.cudnn.deterministic = True
                torch.backends.cudnn.benchmark = False
                done["cudnn_deterministic"] = True
    LAST_SEEDS.clear()
    LAST_SEEDS.update(done)
    return dict(done)
