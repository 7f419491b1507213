"""Each tensor version is summarised once (issue 34 §1, docs/capture.md "When statistics are reused"): at
module level a module's input that is the previous module's output reuses that output's statistics, and the
dump still holds both records, under their own names, with the statistics an uncached capture writes. A write
between the two uses — one the capture's watch mode sees, and one only the tensor's `_version` shows — is
summarised again."""
import pytest
import torch
import torch.nn as nn

import capture_helpers  # noqa: F401  (puts the package on sys.path)
import parity
from test_capture_stale import CountingWriter


class NoReuse(dict):
    """A statistics cache that keeps nothing: every record is summarised, as before the reuse."""

    def __setitem__(self, key, value):
        pass


class Chain(nn.Module):
    """Three linears, each one's output the next one's input; `between(h)` runs after the first."""

    def __init__(self, between=None):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 16)
        self.between = between

    def forward(self, x):
        h = self.a(x)
        if self.between is not None:
            self.between(h)
        return self.c(torch.relu(self.b(h)))


def capture(path, model, x, reuse=True, level="module"):
    """Records of one forward + backward step, by name, and the names whose statistics were reused."""
    cap = parity.capture(model, path, level=level)
    with cap:
        cap.writer = counting = CountingWriter(cap.writer)
        if not reuse:
            cap._known = NoReuse()
        model(x).pow(2).sum().backward()
        cap.next_step()
    return {r.name: r for r in parity.load(path)}, set(counting.reused)


def test_reused_records_are_those_of_a_capture_that_summarises_every_record(tmp_path):
    torch.manual_seed(0)
    model = Chain()
    x = torch.randn(8, 16)
    got, reused = capture(tmp_path / "reuse", model, x)
    want, none_reused = capture(tmp_path / "every", model, x, reuse=False)
    assert not none_reused
    # a's output is b's input (one tensor version): summarised once, written twice
    assert {"a/forward/output/0", "b/forward/input/0"} & reused == {"b/forward/input/0"}, reused
    assert "c/backward/input/0" in got
    assert sorted(got) == sorted(want)
    for name, rec in want.items():
        assert got[name].stats == rec.stats, name
        assert (got[name].shape, got[name].dtype, got[name].order) == (rec.shape, rec.dtype, rec.order), name


def _write_unseen(h):
    """An in-place write the capture's torch-function mode does not see: only h._version tells."""
    with torch._C.DisableTorchFunction():
        h.mul_(3.0)


@pytest.mark.parametrize("write", ["seen", "unseen"])
def test_an_in_place_write_between_the_two_uses_is_summarised_again(tmp_path, write):
    """h = a(x); h written in place; b(h): b's input is the written h (its statistics 3x a's output's), not
    a's output's statistics again. "unseen": the write is invisible to the watch mode, so this fails if the
    reuse ignores `_version`."""
    torch.manual_seed(0)
    model = Chain(between=(lambda h: h.mul_(3.0)) if write == "seen" else _write_unseen)
    recs, reused = capture(tmp_path / "run", model, torch.randn(8, 16))
    assert "b/forward/input/0" not in reused
    out, inp = recs["a/forward/output/0"].stats, recs["b/forward/input/0"].stats
    for key in ("max", "min", "absmax"):
        assert inp[key] == pytest.approx(3.0 * out[key], rel=1e-6), key


def test_a_view_of_the_same_memory_is_a_tensor_of_its_own(tmp_path):
    """b's input is a view of a's output with another shape (a different tensor): summarised itself."""
    torch.manual_seed(0)

    class Viewed(Chain):
        def forward(self, x):
            h = self.a(x)
            return self.b(h.view(4, 32)[:, :16])

    recs, reused = capture(tmp_path / "run", Viewed(), torch.randn(8, 16))
    assert "b/forward/input/0" not in reused
    assert recs["b/forward/input/0"].shape == (4, 16)
    assert recs["b/forward/input/0"].stats["numel"] == 64
