"""Capture on real torch models (tiny sizes): names, levels, modes, nesting, in-place ops, repeated
modules, parameters and grads, hooks removed, bit-identical training with and without capture, no
overwrite, scalars and the fingerprint."""
import dataclasses
import os

import numpy as np
import pytest
import torch
import torch.nn as nn

import capture_helpers  # puts the package on sys.path; assert_same_statistics
import parity
from parity._core import core
from parity.examples import SyntheticCorpus, build_model, train

CORPUS = SyntheticCorpus(64, 1 << 13)


def run_training(tmp_path, name, kind="llama", train_steps=2, dtype=torch.float32, **cap_kwargs):
    """Train a tiny model under capture; cap_kwargs go to parity.capture (steps= = recorded steps)."""
    torch.manual_seed(0)
    model = build_model(kind, "tiny").to(dtype)
    with parity.capture(model, tmp_path / name, **cap_kwargs) as cap:
        losses = train(model, CORPUS, steps=train_steps, capture=cap)
    return losses, model, parity.load(tmp_path / name)


def test_seed_all_reports_what_it_set():
    done = parity.seed_all(123, deterministic=True)
    try:
        assert done["seed"] == 123 and done["torch"] and done["numpy"]
        assert torch.are_deterministic_algorithms_enabled()
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"]
        a = torch.rand(3)
        parity.seed_all(123)
        assert torch.equal(a, torch.rand(3))
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("level", ["module", "op", "mix"])
@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_training_is_bit_identical_with_and_without_capture(tmp_path, level, kind):
    torch.manual_seed(0)
    plain = build_model(kind, "tiny")
    ref = train(plain, CORPUS, steps=2)
    losses, model, run = run_training(tmp_path, "run", kind=kind, level=level, mode="tensor", steps=None)
    assert losses == ref, "capture changed the numbers"
    for (n, p), (_, q) in zip(plain.named_parameters(), model.named_parameters()):
        assert torch.equal(p, q), n
    assert "forward" not in model.__dict__ and all("forward" not in m.__dict__ for m in model.modules())
    assert not run.problems
    assert all(p["closed"] for p in run.parts)
    names = {(r.step, r.name) for r in run}
    assert len(names) == len(run.records), "names are unique within a step"
    roles = {(r.direction, r.role) for r in run}
    if level in ("module", "mix"):
        assert {("forward", "input"), ("forward", "output"), ("forward", "parameter"), ("backward", "grad"),
                ("backward", "input"), ("backward", "output")} <= roles
    else:
        assert {("forward", "input"), ("forward", "output"), ("backward", "input")} <= roles
        assert all("#" in r.name.split("/")[-4] for r in run if r.role != "parameter"), "op events are numbered"


def test_names_follow_the_contract_and_are_stable(tmp_path):
    _, model, a = run_training(tmp_path, "a", level="mix", mode="statistics", steps=[0, 1])
    _, _, b = run_training(tmp_path, "b", level="mix", mode="statistics", steps=[0, 1])
    assert [r.name for r in a] == [r.name for r in b]
    paths = {n for n, _ in model.named_modules() if n}
    modules = {r.module for r in a}
    assert "<root>" in modules and "layers.0.attn.wq" in modules and modules - {"<root>", "<global>"} <= paths
    q = a.get("layers.0.attn.wq/forward/output/0", step=0)
    assert q.op == "Linear" and q.direction == "forward" and q.role == "output" and q.index == 0
    assert q.shape == (4, 16, 32) and q.dtype == "f32" and q.device == "cpu"
    sm = [r for r in a if r.op == "softmax" and r.step == 0 and r.role == "output"]
    assert sm and sm[0].name == "layers.0.attn/softmax#0/forward/output/0"
    assert sm[0].args["kwargs"]["dim"] == -1
    g = a.get("layers.0.attn.wq/backward/grad/weight", step=0)
    assert g.role == "grad" and g.shape == (32, 32)
    orders = [r.order for r in a if r.step == 1]
    assert orders == sorted(orders) and orders[0] == 0
    assert {r.step for r in a} == {0, 1}


def test_gradient_accumulation_names_each_backward_pass(tmp_path):
    # Two backward passes in one step (gradient accumulation): the parameter's gradient hook fires twice,
    # and both records were named ".../backward/grad/weight" — a name twice within (rank, step), which
    # the reader reports as a problem (issue 33 §8). The second is "#1", and holds that pass's gradient.
    torch.manual_seed(0)
    lin = nn.Linear(4, 3)
    xs = [torch.randn(2, 4), torch.randn(2, 4)]
    with parity.capture(lin, tmp_path / "run", level="module", mode="tensor") as cap:
        for x in xs:
            lin(x).sum().backward()
        cap.next_step()
    run = parity.load(tmp_path / "run")
    assert run.problems == []
    first = run.get("<root>/backward/grad/weight", step=0).array
    second = run.get("<root>/backward/grad/weight#1", step=0).array
    for x, got in zip(xs, (first, second)):
        np.testing.assert_allclose(got, torch.ones(2, 3).T.matmul(x).numpy(), rtol=1e-6)


def test_statistics_checksum_and_tensor_modes_agree_with_torch(tmp_path):
    torch.manual_seed(0)
    model = build_model("llama", "tiny")
    x, _ = CORPUS.batch(0, 2, 8)
    seen = {}
    h = model.layers[1].mlp.register_forward_hook(lambda m, i, o: seen.__setitem__("out", o.detach().clone()))
    runs = {}
    for mode in ("statistics", "checksum", "tensor"):
        with parity.capture(model, tmp_path / mode, mode=mode):
            model(x)
        runs[mode] = parity.load(tmp_path / mode)
    h.remove()
    out = seen["out"]
    name = "layers.1.mlp/forward/output/0"
    st = runs["statistics"].get(name).stats
    assert st["numel"] == out.numel() and st["nan"] == 0
    assert st["max"] == pytest.approx(out.max().item(), abs=0) and st["min"] == out.min().item()
    assert st["mean"] == pytest.approx(out.double().mean().item(), rel=1e-12)
    assert st["l2norm"] == pytest.approx(out.double().norm().item(), rel=1e-12)
    assert runs["checksum"].get(name).crc32c == core.crc32c(out.numpy().tobytes())
    rec = runs["tensor"].get(name)
    assert isinstance(rec.array, np.ndarray) and rec.array.flags.writeable is False
    np.testing.assert_array_equal(rec.array, out.numpy())
    assert runs["statistics"].get(name).array is None


def test_bf16_tensors_and_subnormals_in_own_dtype(tmp_path):
    class Tiny(nn.Module):
        def forward(self, x):
            return x * 1

    x = torch.tensor([1e-39, 1.0, 0.0, float("nan"), -3.0], dtype=torch.float32)
    with parity.capture(Tiny(), tmp_path / "r", mode="tensor") as cap:
        cap.model(x)
        cap.model(x.to(torch.bfloat16))
    run = parity.load(tmp_path / "r")
    f32 = run.get("<root>/forward/output/0")
    b16 = run.get("<root>#1/forward/output/0")
    assert f32.stats["subnormal"] == 1 and f32.stats["nan"] == 1 and f32.stats["zero"] == 1
    assert b16.dtype == "bf16" and b16.stats["subnormal"] == 1  # 1e-39 is subnormal in bf16 too
    np.testing.assert_array_equal(b16.to_float32(), x.to(torch.bfloat16).float().numpy())


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    extra: tuple


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.shared = nn.Linear(4, 4)

    def forward(self, x, scale=None):
        h = self.shared(self.lin(x))
        h = self.shared(h)             # a module called twice per step
        y = h.clone()
        y.mul_(2.0)                    # an in-place op
        y[0] = 0.0                     # item assignment, in place
        return {"a": (y, [h * scale]), "b": Out(logits=y + 1, extra=(h, 3))}


def test_nested_outputs_repeated_modules_inplace_and_kwargs(tmp_path):
    torch.manual_seed(0)
    m = Nested()
    x = torch.randn(3, 4)
    ref = m(x, scale=torch.tensor(0.5))
    with parity.capture(m, tmp_path / "r", level="mix", mode="tensor") as cap:
        out = m(x, scale=torch.tensor(0.5))
        out["b"].logits.sum().backward()
        cap.next_step()
    assert torch.equal(out["a"][0], ref["a"][0])
    run = parity.load(tmp_path / "r")
    names = run.names()
    for n in ("shared/forward/output/0", "shared#1/forward/output/0", "<root>/forward/input/1",
              "<root>/forward/output/3", "shared#1/backward/input/0"):
        assert n in names, n
    assert "<root>/forward/output/4" not in names  # the int 3 in extra is not a tensor
    kw = run.get("<root>/forward/input/1")
    assert kw.array.item() == 0.5
    outs = [r for r in run if r.name.startswith("<root>/forward/output/")]
    assert len(outs) == 4
    # in-place mul_: the input is recorded before the op changed it, the output after
    mul_in = run.get("<root>/mul_#0/forward/input/0")
    mul_out = run.get("<root>/mul_#0/forward/output/0")
    np.testing.assert_array_equal(mul_out.array, 2 * mul_in.array)
    set_out = run.get("<root>/__setitem__#0/forward/output/0")
    assert (set_out.array[0] == 0).all()
    # one event per shared call with a distinct parameter record only once per step
    assert names.count("shared/forward/parameter/weight") == 1
    assert "shared#1/forward/parameter/weight" not in names
    assert run.get("shared/backward/grad/weight").shape == (4, 4)


def test_filters_steps_and_direction(tmp_path):
    torch.manual_seed(0)
    model = build_model("llama", "tiny")
    with parity.capture(model, tmp_path / "f", steps=[1], include=r"^layers\.0\.", exclude=r"wk",
                        direction="forward") as cap:
        train(model, CORPUS, steps=3, capture=cap)
    run = parity.load(tmp_path / "f")
    assert run.records and {r.step for r in run} == {1}
    assert all(r.name.startswith("layers.0.") and "wk" not in r.name for r in run)
    assert all(r.direction == "forward" for r in run)
    assert sorted(run.scalars()) == [0, 1, 2], "scalars are logged every step"
    assert [s for s, _ in run.scalar_series("loss")] == [0, 1, 2]


def test_never_overwrites_and_bad_options(tmp_path):
    model = build_model("llama", "tiny")
    with parity.capture(model, tmp_path / "r"):
        pass
    with pytest.raises(ValueError, match="already exists"):
        parity.capture(model, tmp_path / "r").start()
    with parity.capture(model, tmp_path / "r", overwrite=True):
        pass
    with pytest.raises(ValueError, match="level"):
        parity.capture(model, tmp_path / "x", level="layer")
    with pytest.raises(ValueError, match="mode"):
        parity.capture(model, tmp_path / "x", mode="md5")
    with pytest.raises(FileNotFoundError):
        parity.load(tmp_path / "nothing")


def test_hooks_removed_on_exception_and_with_start_stop(tmp_path):
    model = build_model("gpt2", "tiny")
    x, _ = CORPUS.batch(0, 1, 8)
    ref = model(x)
    with pytest.raises(RuntimeError, match="boom"):
        with parity.capture(model, tmp_path / "e", level="mix"):
            model(x)
            raise RuntimeError("boom")
    assert all("forward" not in m.__dict__ for m in model.modules())
    assert not torch.overrides._is_torch_function_mode_enabled() if hasattr(torch.overrides, "_is_torch_function_mode_enabled") else True
    run = parity.load(tmp_path / "e")
    assert run.parts[0]["closed"] and len(run.records) > 0
    cap = parity.capture(model, tmp_path / "s", level="op")
    cap.start()
    model(x)
    cap.stop()
    cap.stop()  # idempotent
    assert torch.equal(model(x), ref)
    assert len(parity.load(tmp_path / "s").records) > 0


def test_fingerprint_and_scalars(tmp_path):
    parity.seed_all(7, deterministic=False)
    model = build_model("llama", "tiny")
    with parity.capture(model, tmp_path / "r") as cap:
        cap.log(loss=torch.tensor(2.5), lr=1e-3, note="warmup", bad=float("nan"))
        cap.next_step()
        cap.log(loss=2.0)
    run = parity.load(tmp_path / "r")
    fp = run.fingerprint
    assert fp["torch"] == torch.__version__ and fp["numpy"] == np.__version__
    assert fp["seeds"]["seed"] == 7
    assert fp["model"]["parameters"] == sum(p.numel() for p in model.parameters())
    assert fp["model"]["config"]["dim"] == 32
    assert "tf32" in fp and "deterministic_algorithms" in fp and fp["hostname"]
    assert fp["capture"]["level"] == "module"
    assert run.scalars() == {0: {"loss": 2.5, "lr": 1e-3, "note": "warmup", "bad": "nan"}, 1: {"loss": 2.0}}


def test_precision_policy_overrides_one_module():
    from parity.examples import PrecisionPolicy, apply_precision

    torch.manual_seed(0)
    a = build_model("llama", "tiny")
    b = build_model("llama", "tiny")
    apply_precision(b, PrecisionPolicy(torch.float32, {"layers.1.attn_norm": torch.bfloat16}))
    x, _ = CORPUS.batch(0, 2, 8)
    ya, yb = a(x), b(x)
    assert yb.dtype == torch.float32 and b.layers[1].attn_norm.weight.dtype == torch.bfloat16
    assert not torch.equal(ya, yb) and torch.allclose(ya, yb, atol=0.05)
    with pytest.raises(KeyError):
        apply_precision(b, PrecisionPolicy(torch.float32, {"no.such": torch.float16}))


def test_device_statistics_match_the_cpu_kernel():
    """The accelerator path (torch reductions, parity/_stats.py) computes the same numbers as the C++
    kernel used for host tensors; checked here by running it on CPU tensors."""
    from parity._stats import device_stats

    g = torch.Generator().manual_seed(1)
    x = torch.randn(1000, generator=g) * 3
    x[3], x[7], x[11], x[13], x[17] = float("nan"), float("inf"), -float("inf"), 0.0, 1e-39
    for t in (x, x.to(torch.bfloat16), torch.arange(-5, 7, dtype=torch.int64), torch.tensor([True, False, True])):
        got = device_stats(t).tolist()
        dt = {torch.float32: "f32", torch.bfloat16: "bf16", torch.int64: "i64", torch.bool: "bool"}[t.dtype]
        ref = core.fused_stats(t.contiguous().data_ptr(), dt, t.numel())
        assert got[5:] == list(ref[5:9]), (dt, got, ref)
        assert got[:5] == pytest.approx(list(ref[:5]), rel=1e-12, abs=1e-300), dt
    allnan = torch.full((4,), float("nan"))
    assert device_stats(allnan).tolist()[:5] == [0, 0, 0, 0, 0]


@pytest.mark.parametrize("mode", ["statistics", "tensor"])
def test_accelerator_pipeline_matches_the_host_path(tmp_path, mode):
    """The accelerator path end to end (torch reductions on the tensor's device, 72 bytes copied back
    non-blocking, events held pending and written at the end of the step), run on CPU tensors: it writes
    the same events, in the same order, with the same statistics as the host path."""
    def train(cap, model, path, runs):
        for step in range(2):
            x, y = CORPUS.batch(step, 2, 8)
            torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
            if path == "device" and mode == "statistics":
                # nothing of this step is written yet: the copies are pending until next_step()
                assert cap.writer.counters()["events"] == step * len(runs["host"].records) // 2
                assert len(cap._pending) > 0
            cap.next_step()

    runs = capture_helpers.capture_host_and_device(tmp_path, train, mode=mode)
    host, dev = runs["host"].records, runs["device"].records
    assert len(host) == len(dev) > 100
    for a, b in zip(host, dev):
        assert (a.step, a.order, a.name, a.dtype, list(a.shape)) == (b.step, b.order, b.name, b.dtype, list(b.shape))
        capture_helpers.assert_same_statistics(a, b)
        if mode == "tensor":
            np.testing.assert_array_equal(a.array, b.array)


def test_each_rank_writes_its_own_part(tmp_path):
    model = build_model("llama", "tiny")
    x, _ = CORPUS.batch(0, 1, 8)
    for rank in (0, 1):
        with parity.capture(model, tmp_path / "r", rank=rank):
            model(x)
    run = parity.load(tmp_path / "r")
    assert sorted(p["rank"] for p in run.parts) == [0, 1]
    assert run.names(rank=0) == run.names(rank=1)
    assert sorted(run.fingerprints) == [0, 1] and run.fingerprints[1]["capture"]["rank"] == 1
    assert callable(parity.log_logits)
