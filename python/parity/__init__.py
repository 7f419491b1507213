"""parity — is the target run numerically equivalent to the golden run?

The Python package is the capture side of parity (docs/capture.md): hooks into PyTorch that record
statistics, checksums or whole tensors of every module / op event into a crash-safe dump
(docs/dump-format.md), and `load` to read a dump back. Everything heavy (statistics of host tensors,
checksums, writing, reading) runs in the C++ core through the `_parity_core` extension.

    import parity
    parity.seed_all(42)
    with parity.capture(model, "runs/golden", level="module", mode="statistics") as cap:
        ...
        cap.log(loss=loss); cap.next_step()
    run = parity.load("runs/golden")

Importing parity does not import torch; `capture` and `seed_all` do, when called.
"""
from ._binary import binary_path  # noqa: F401  (the `parity` CLI; `python -m parity` runs it)
from ._core import core_version as __version__  # noqa: F401
from .load import Run, RunRecord, load  # noqa: F401
from .logits import log_choices, log_logits  # noqa: F401  (eval layer, docs/eval.md)
from .seed import seed_all  # noqa: F401


def capture(model, run_dir, **options):
    """Record `model`'s events into the run directory `run_dir` (see parity.capture_impl.Capture)."""
    from .capture_impl import Capture

    return Capture(model, run_dir, **options)


def emulate(model, policy):
    """Run `model` with `policy` ({selector: mode}) emulated inside the `with` block (docs/emulation.md)."""
    from .emulation import emulate as _emulate

    return _emulate(model, policy)


def scan(model, batches, policy_space=None, **options):
    """Sensitivity scan of `model` on `batches`: the parity.scan/1 result (docs/scan.md)."""
    from .sensitivity import scan as _scan

    return _scan(model, batches, policy_space, **options)


def compare(golden, target, step=-1, rank=-1, thresholds="", policy="", map_file="", align=True, kl=(),
            fail_on_warn=False, jobs=0):
    """Compare two runs (capture dumps, tensor files or directories) exactly as `parity compare` does:
    the library's compare_runs() pipeline, returned as the parity.compare/1 object (a dict;
    docs/compare-json.md). `result["summary"]["verdict"]` and `["exit_code"]` are the gate."""
    import json

    from ._core import core

    return json.loads(core.compare_json(str(golden), str(target), int(step), int(rank), str(thresholds), str(policy),
                                        str(map_file), bool(align), list(kl), bool(fail_on_warn), int(jobs)))


__all__ = ["binary_path", "capture", "compare", "emulate", "scan", "load", "seed_all", "log_logits", "log_choices", "Run",
           "RunRecord", "__version__"]
