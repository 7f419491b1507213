"""log_logits(top_k=...) beyond what the parity.logits/1 frame header holds (16 bits) is refused with a
ValueError naming top_k (issue 14: top_k=65536 wrote an unreadable file, larger values wrapped)."""
import numpy as np
import pytest

import capture_helpers
import parity

VOCAB = 70000  # more than 65535, so top_k is not clamped to the vocabulary


def _logits(rows=2):
    rng = np.random.default_rng(0)
    return rng.standard_normal((rows, VOCAB)).astype(np.float32), np.array([1, 2], dtype=np.int64)[:rows]


@pytest.mark.parametrize("top_k", [65536, 65536 + 300, 2**31 - 1, 2**40])
def test_top_k_that_does_not_fit_is_refused(tmp_path, top_k):
    x, y = _logits()
    f = tmp_path / "l.plg"
    with pytest.raises(ValueError, match="top_k"):
        parity.log_logits(f, x, y, top_k=top_k)
    assert not f.exists() or f.stat().st_size == 0


def test_largest_top_k_reads_back(tmp_path):
    x, y = _logits(1)
    assert parity.log_logits(tmp_path / "a.plg", x, y, top_k=65535) == 1
    assert parity.log_logits(tmp_path / "b.plg", x, y, top_k=65535) == 1
    p = capture_helpers.run_cli("eval", "ppl", tmp_path / "a.plg", tmp_path / "b.plg", "--json", "-")
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_core_writer_refuses_it_too(tmp_path):
    """The C++ writer (used by the Python package and by anything else that links the core) checks too."""
    from parity._core import core

    x, y = _logits()
    with pytest.raises(ValueError, match="top_k"):
        w = core.LogitsWriter(str(tmp_path / "c.plg"), 65536, 16, -1, "f32")
        w.append(x, y, -100)
        w.close()
