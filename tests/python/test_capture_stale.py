"""Statistics are never stale: capture reuses a tensor's statistics while nothing could have changed it,
but `x.data` writes and torch.distributed collectives change contents without moving the tensor's
version counter (docs/capture.md "When statistics are reused")."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn

import capture_helpers  # noqa: F401  (puts the package on sys.path)
import parity
from capture_helpers import child_env, parity_bin


def _double_through_data(h, how):
    """Write 2*h into h's memory through an alias whose writes do not bump h._version."""
    if how == "mul_":
        h.data.mul_(2.0)
    elif how == "copy_":
        h.data.copy_(h.detach() * 2.0)
    elif how == "setitem":
        h.data[...] = h.detach() * 2.0
    elif how == "numpy":
        a = h.detach().numpy()
        a *= 2.0
    else:
        raise ValueError(how)


class TwoLinear(nn.Module):
    """a, then something writes h's memory in place, then b."""

    def __init__(self, write):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)
        self.write = write

    def forward(self, x):
        h = self.a(x)
        self.write(h)
        return self.b(h)


def capture_run(path, model, level, x, mode="statistics"):
    with parity.capture(model, path, level=level, mode=mode) as cap:
        model(x).sum().backward()
        cap.next_step()
    return {r.name: r for r in parity.load(path)}


def overflow(path):
    p = subprocess.run([parity_bin(), "overflow", str(path), "--json", "-"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("how", ["mul_", "copy_", "setitem", "numpy"])
@pytest.mark.parametrize("level", ["module", "mix", "op"])
def test_a_write_through_data_between_two_events_is_seen(tmp_path, level, how):
    """h = a(x); h.data.<write>; b(h): b's input statistics are those of the doubled h, not the cached
    statistics of a's output (the same tensor object, same _version)."""
    torch.manual_seed(0)
    model = TwoLinear(lambda h: _double_through_data(h, how))
    recs = capture_run(tmp_path / "run", model, level, torch.randn(4, 8))
    pairs = []
    if level in ("module", "mix"):
        pairs.append(("a/forward/output/0", "b/forward/input/0"))
    if level in ("op", "mix"):
        pairs.append(("a/linear#0/forward/output/0", "b/linear#0/forward/input/0"))
    for out_name, in_name in pairs:
        out, inp = recs[out_name].stats, recs[in_name].stats
        for key in ("max", "min", "absmax", "l2norm"):
            assert inp[key] == 2.0 * out[key], (level, how, in_name, key, inp[key], out[key])


@pytest.mark.parametrize("level", ["module", "mix", "op"])
def test_nan_copied_in_through_data_is_not_born_in_the_next_op(tmp_path, level):
    """NaN copied into h by `h.data.copy_(poison)` (poison made before the capture: nothing recorded
    produced it) must show in b's input; `parity overflow` must not say it was born in b."""
    torch.manual_seed(0)
    poison = torch.full((4, 8), float("nan"))
    model = TwoLinear(lambda h: h.data.copy_(poison))
    recs = capture_run(tmp_path / "run", model, level, torch.randn(4, 8))
    b_inputs = [n for n in ("b/forward/input/0", "b/linear#0/forward/input/0") if n in recs]
    assert b_inputs
    for n in b_inputs:
        assert recs[n].stats["nan"] == 32, (n, recs[n].stats)
    rep = overflow(tmp_path / "run")
    assert rep["nonfinite_records"] > 0
    born = [o["event"] for o in rep["origins"]]
    assert not any(e.startswith("b/") or e.startswith("b#") for e in born), born
    if level in ("module", "mix"):
        # The NaN arrived in <root>'s own code, between a and b: <root> is where it is born.
        assert born == ["<root>/forward"], rep["origins"]
    else:
        # Op level: no recorded event made it (copy_ read it from unrecorded memory).
        assert born == [], rep["origins"]


def _init_single_process_group(tmp_path):
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    dist.init_process_group("gloo", init_method="file://" + str(tmp_path / "pg"), rank=0, world_size=1)
    return dist


_WRITE_COLLECTIVES = {
    # world size 1: both write the source into the output's memory without moving its version counter
    # (gloo's all_gather and gather copy with copy_, which does move it)
    "scatter": lambda dist, out, src: dist.scatter(out, [src], src=0),
    "all_to_all_single": lambda dist, out, src: dist.all_to_all_single(out, src),
}


@pytest.mark.parametrize("collective", sorted(_WRITE_COLLECTIVES))
@pytest.mark.parametrize("level", ["mix", "op"])
def test_collective_outside_the_model_invalidates_and_is_an_event(tmp_path, level, collective):
    """World size 1: a collective writes NaN into the memory of the model's (cached) output between
    forward and the loss, in the training loop; the loss's input shows it, the collective is an op
    event <global>/<collective>#0, and the collectives are restored on stop."""
    dist = _init_single_process_group(tmp_path)
    try:
        orig = dist.all_reduce, dist.distributed_c10d.all_reduce, getattr(dist, collective)
        torch.manual_seed(0)
        model = nn.Linear(8, 8)
        poison = torch.full((4, 8), float("nan"))
        with parity.capture(model, tmp_path / "run", level=level) as cap:
            wrapped = dist.all_reduce is not orig[0] and dist.distributed_c10d.all_reduce is not orig[1]
            y = model(torch.randn(4, 8))
            _WRITE_COLLECTIVES[collective](dist, y.detach(), poison)
            loss = y.sum()
            cap.next_step()
        assert torch.isnan(loss)
        recs = {r.name: r for r in parity.load(tmp_path / "run")}
        assert recs["<global>/sum#0/forward/input/0"].stats["nan"] == 32
        assert recs["<global>/{}#0/forward/input/0".format(collective)].stats["nan"] == 32
        assert recs["<global>/{}#0/forward/output/0".format(collective)].stats["nan"] == 32
        assert wrapped
        assert (dist.all_reduce, dist.distributed_c10d.all_reduce, getattr(dist, collective)) == orig
    finally:
        dist.destroy_process_group()


_RANK_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import parity

    rank, init, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 8)
            self.b = nn.Linear(8, 8)

        def forward(self, x):
            h = self.a(x)
            dist.all_reduce(h.detach())  # tensor-parallel style: sum the partial results in place
            return self.b(h)

    for level in ("module", "mix"):
        torch.manual_seed(0)
        model = Model()
        x = torch.randn(4, 8)
        if rank == 1:
            x[0, 0] = float("nan")  # this rank contributes a NaN
        with parity.capture(model, out + "/" + level, level=level) as cap:
            model(x)
            cap.next_step()
    dist.destroy_process_group()
""")


def test_nan_arriving_through_all_reduce_of_two_ranks(tmp_path):
    """Two gloo ranks; rank 1 contributes a NaN to an all_reduce inside the model. On rank 0, b's input
    statistics show the NaN (they were the cached, finite statistics of a's output), and the NaN is
    born at the all_reduce (mix) or in <root>, whose code called it (module), not in b."""
    script = tmp_path / "rank.py"
    script.write_text(_RANK_SCRIPT)
    init = "file://" + str(tmp_path / "pg")
    procs = [subprocess.Popen([sys.executable, str(script), str(r), init, str(tmp_path)], env=child_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in (0, 1)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    for level in ("module", "mix"):
        run = parity.load(tmp_path / level)
        recs = {(r.rank, r.name): r for r in run}
        assert recs[(0, "a/forward/output/0")].stats["nan"] == 0
        assert recs[(0, "b/forward/input/0")].stats["nan"] > 0, level
        if level == "mix":
            assert recs[(0, "b/linear#0/forward/input/0")].stats["nan"] > 0
            assert recs[(0, "<root>/all_reduce#0/forward/input/0")].stats["nan"] == 0
            assert recs[(0, "<root>/all_reduce#0/forward/output/0")].stats["nan"] > 0
        rep = overflow(tmp_path / level)
        born = {o["rank"]: o["event"] for o in rep["origins"]}
        want = "<root>/all_reduce#0/forward" if level == "mix" else "<root>/forward"
        assert born.get(0) == want, rep["origins"]
        assert 1 not in born, rep["origins"]  # rank 1's NaN came in with its input


class CountingWriter:
    """Stands in for the capture's writer and counts records whose statistics were reused (ptr 0)."""

    def __init__(self, writer):
        self._w, self.reused = writer, []

    def append_event(self, *args, **kwargs):
        if args[13] == 0 and args[14] > 0:
            self.reused.append(args[0])
        return self._w.append_event(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._w, name)


@pytest.mark.parametrize("level", ["module", "mix"])
def test_statistics_are_still_reused_when_nothing_can_have_changed(tmp_path, level):
    """Guard of the cache's benefit: an output recorded again as the next event's input is summarised once
    (mix level: the op's and the module's; module level: a's output is b's input), and so is a tensor a
    module returns twice."""
    torch.manual_seed(0)
    model = TwoLinear(lambda h: None)
    model.b.forward = lambda h, f=model.b.forward: (lambda y: (y, y))(f(h))
    cap = parity.capture(model, tmp_path / "run", level=level)
    with cap:
        cap.writer = counting = CountingWriter(cap.writer)
        model(torch.randn(4, 8))
        cap.next_step()
    reused = set(counting.reused)
    assert "b/forward/output/1" in reused
    if level == "mix":
        assert {"a/forward/output/0", "b/forward/input/0", "b/linear#0/forward/input/0"} <= reused, reused
    else:
        assert "b/forward/input/0" in reused, reused


def test_collective_wrappers_keep_p2pop_accepting_the_originals(tmp_path):
    """Guard: P2POp checks `op in [isend, irecv]`; a function taken before the capture started must
    still be accepted while the wrappers are installed."""
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    orig = dist.isend, dist.irecv
    # torch 2.x's P2POp needs a default process group: a single-process gloo one
    dist.init_process_group("gloo", init_method="file://" + str(tmp_path / "pg"), rank=0, world_size=1)
    try:
        with parity.capture(nn.Linear(2, 2), tmp_path / "run", level="op"):
            dist.P2POp(orig[0], torch.zeros(2), 0)
            dist.P2POp(dist.irecv, torch.zeros(2), 0)
            assert dist.isend == orig[0] and hash(dist.irecv) == hash(orig[1])
        assert (dist.isend, dist.irecv) == orig and dist.isend is orig[0]
    finally:
        dist.destroy_process_group()
