"""Logits and multiple-choice answers for the eval layer (docs/eval.md).

    parity.log_logits("runs/golden/rank0/logits.plg", logits, labels)   # without a capture
    cap.log_logits(logits, labels)                                     # into the capture's run

Each call appends the scored tokens to a crash-safe parity.logits/1 file: per token the label's exact
log-probability, the exact top-k log-probabilities and the rest of the vocabulary on a 16-bit grid,
enough for `parity eval ppl GOLDEN TARGET` to compute perplexity, KL divergence (with a stated error
bound), Δp and same-top statistics. The log-softmax, top-k and quantisation run in the C++ core.
"""
import json
import os

__all__ = ["log_logits", "log_choices", "logits_path"]

MAX_TOP_K = 65535  # the parity.logits/1 frame header holds top_k in 16 bits


def logits_path(dest):
    """Where log_logits writes for `dest`: a capture → <run>/rank<R>/logits.plg; a directory →
    <dir>/logits.plg; anything else is taken as the file path."""
    writer = getattr(dest, "writer", None)
    if writer is not None and hasattr(writer, "part_dir"):
        return os.path.join(writer.part_dir, "logits.plg")
    dest = os.fspath(dest)
    if os.path.isdir(dest):
        return os.path.join(dest, "logits.plg")
    return dest


def _as_numpy(x, dtype):
    import numpy as np

    try:
        import torch
    except ImportError:  # pragma: no cover - torch is there wherever logits come from
        torch = None
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach()
        # bf16/fp16 logits are exact in fp32; the core computes the log-softmax in fp64.
        x = x.float() if x.is_floating_point() else x.long()
        return np.ascontiguousarray(x.cpu().numpy(), dtype=dtype)
    return np.ascontiguousarray(np.asarray(x), dtype=dtype)


def log_logits(dest, logits, labels, *, top_k=256, tail_bits=16, ignore_index=-100, step=None, shift=False):
    """Append scored tokens to the logits file of `dest` (a capture, a run/part directory or a file).

    logits: [tokens, vocab] or [batch, seq, vocab] (torch or numpy, any float dtype); labels: the matching
    integer next tokens, [tokens] or [batch, seq]. With shift=True, logits[..., :-1, :] score
    labels[..., 1:] (labels are then the input ids, as HuggingFace models take them). Tokens whose label
    is `ignore_index` are skipped. Returns the number of tokens stored.
    """
    from ._core import core

    top_k = int(top_k)
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValueError("log_logits: top_k must be between 1 and {} (the file stores it in 16 bits), got {}"
                         .format(MAX_TOP_K, top_k))
    if step is None:
        step = getattr(dest, "step", -1)
    source_dtype = str(getattr(logits, "dtype", "")).replace("torch.", "")
    x = _as_numpy(logits, "float32")
    y = _as_numpy(labels, "int64")
    if shift:
        x, y = x[..., :-1, :], y[..., 1:]
    if x.ndim < 2:
        raise ValueError("log_logits: logits must be [tokens, vocab] or [batch, seq, vocab], got shape {}"
                         .format(x.shape))
    vocab = x.shape[-1]
    x = x.reshape(-1, vocab)
    y = y.reshape(-1)
    if y.shape[0] != x.shape[0]:
        raise ValueError("log_logits: {} labels for {} logit rows".format(y.shape[0], x.shape[0]))
    path = logits_path(dest)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    w = core.LogitsWriter(path, top_k, int(tail_bits), int(step), source_dtype)
    try:
        return w.append(x, y, int(ignore_index))
    finally:
        w.close()


def log_choices(path, question_id, loglik, answer, subject="", length=None):
    """Append one multiple-choice question's per-choice log-likelihoods as a JSON line that
    `parity eval mc` reads: {"id", "subject", "loglik", "length", "answer"}. One line = one write, so a
    crash leaves every earlier question intact."""
    rec = {"id": str(question_id), "subject": subject,
           "loglik": [float(v) for v in loglik], "answer": int(answer)}
    if length is not None:
        rec["length"] = [float(v) for v in length]
    line = json.dumps(rec) + "\n"
    with open(os.fspath(path), "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
