"""What each side really computed (issue 28 §1, docs/capture.md "Aliases" and "Uninitialised memory"):
  - a call that returns its input unchanged (`x.to(torch.float32)` of an fp32 tensor) records no backward
    event of its own, and conversions record none in any run, so an fp32 model and its bf16 cast record the
    same events — checked on the real HF Llama, whose RMSNorm upcasts with `.to(torch.float32)`;
  - an in-place op still records its gradient (it writes its receiver: a computation);
  - memory from `empty*` is never recorded as an input, and a partial write into it records no output —
    checked on the real HF Mixtral, whose experts fill an `empty_like` permutation with `__setitem__`;
  - `out=` destinations are not inputs."""
import pytest
import torch

import parity

transformers = pytest.importorskip("transformers")


class Upcast(torch.nn.Module):
    """LlamaRMSNorm's pattern: `.to(torch.float32)` that is a no-op on fp32 input, then two readers."""

    def forward(self, x):
        h = x.to(torch.float32)
        h = h.contiguous()
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.norm = Upcast()

    def forward(self, x):
        y = self.lin(x)
        z = self.norm(y) + y  # the residual: y has a reader besides the norm
        z.mul_(2.0)           # in place on a non-leaf: a computation with its own gradient
        return z


def names_of(path):
    return {r.name for r in parity.load(str(path)).records}


def capture(model, path, dtype=torch.float32, level="op", mode="tensor"):
    torch.manual_seed(0)
    x = torch.randn(4, 8, dtype=dtype)
    with parity.capture(model, str(path), level=level, mode=mode) as cap:
        model(x).sum().backward()
        cap.next_step()
    return names_of(path)


@pytest.mark.parametrize("level", ["op", "mix"])
def test_alias_and_conversions_record_no_backward(tmp_path, level):
    torch.manual_seed(0)
    golden = capture(Model(), tmp_path / "fp32", level=level)
    torch.manual_seed(0)
    target = capture(Model().to(torch.bfloat16), tmp_path / "bf16", dtype=torch.bfloat16, level=level)
    for names in (golden, target):
        assert "norm/to#0/forward/output/0" in names
        assert not [n for n in names if "/to#0/backward" in n or "/contiguous#0/backward" in n], sorted(names)
        # a computation keeps its gradient: pow's output, and the in-place mul_ (it writes its receiver)
        assert "norm/pow#0/backward/input/0" in names
        assert "<root>/mul_#0/backward/input/0" in names, sorted(n for n in names if "mul_" in n)
    # the fp32 run (conversions are no-ops: aliases) and the bf16 run (they convert) record the same events
    assert {n for n in golden if "/backward/" in n} == {n for n in target if "/backward/" in n}


class Identity(torch.nn.Module):
    def forward(self, x):
        return x


class WithIdentity(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.same = Identity()

    def forward(self, x):
        y = self.lin(x)
        return self.same(y) * y


def test_module_returning_its_input_records_no_output_gradient(tmp_path):
    names = capture(WithIdentity(), tmp_path / "run", level="module")
    assert "same/forward/output/0" in names
    assert "same/backward/input/0" not in names  # would be y's whole gradient, both readers summed
    assert "same/backward/output/0" in names     # the gradient of its input, as for any module
    assert "lin/backward/input/0" in names


class Norm(torch.nn.Module):
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class Block(torch.nn.Module):
    """Mamba's block: `norm(hidden_states.to(dtype))` and a residual. In fp32 the conversion returns the
    block's own input, so the norm's input is the block's input."""

    def __init__(self):
        super().__init__()
        self.norm = Norm()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return x + self.lin(self.norm(x.to(self.lin.weight.dtype)))


def test_an_input_shared_with_the_enclosing_call_has_no_gradient_record_of_its_own(tmp_path):
    def run(block, path):
        torch.manual_seed(0)
        x = torch.randn(4, 8, requires_grad=True)  # the residual stream, fp32 on both sides (residual_in_fp32)
        with parity.capture(block, str(path), level="module", mode="statistics") as cap:
            block(x).sum().backward()
            cap.next_step()
        return names_of(path)

    torch.manual_seed(0)
    golden = run(Block(), tmp_path / "fp32")
    torch.manual_seed(0)
    target = run(Block().to(torch.bfloat16), tmp_path / "bf16")
    # fp32: the norm's input is the block's input — its gradient is the block input's, residual included
    assert "norm/backward/output/0" not in golden and "<root>/backward/output/0" in golden
    # bf16: the norm's input is the converted copy; its gradient is the norm branch's own
    assert "norm/backward/output/0" in target
    assert "norm/backward/input/0" in golden and "norm/backward/input/0" in target


class FillsEmpty(torch.nn.Module):
    def forward(self, perm, x):
        buf = torch.empty(8)
        buf[:4] = x                              # half of fresh memory: no value yet
        buf[4:] = x * 2                          # the other half: covered, a value from here on
        k = x.new_empty(8)                       # DeepSeek-V3's keys: halves copied through views
        k[:4].copy_(x)
        k[4:].copy_(x)
        inv = torch.empty_like(perm)
        inv[perm] = torch.arange(perm.numel())   # Mixtral's inverse permutation: n values into n elements
        out = torch.empty(x.shape)
        torch.mul(x.detach(), 2.0, out=out)      # out=: written whole, never read
        full = torch.empty(x.shape).copy_(x)     # a whole write
        return (x[inv] + out + full).sum() + buf.sum() + k.sum()


def test_uninitialised_memory_is_never_an_input(tmp_path):
    perm = torch.tensor([2, 0, 3, 1])
    x = torch.randn(4, requires_grad=True)
    path = tmp_path / "run"
    model = FillsEmpty()
    with parity.capture(model, str(path), level="op", mode="tensor") as cap:
        model(perm, x).backward()
        cap.next_step()
    names = {r.name for r in parity.load(str(path)).records}

    def event(stem):
        return sorted(n[len("<root>/" + stem) + 1:] for n in names if n.startswith("<root>/" + stem + "/"))

    # the receiver of a write into fresh memory is never an input; its output only once writes cover it
    assert event("__setitem__#0") == ["forward/input/1"]
    assert event("__setitem__#1") == ["backward/input/0", "forward/input/1", "forward/output/0"]
    assert event("__setitem__#2") == ["forward/input/1", "forward/input/2", "forward/output/0"]
    # views made to write through are not reads (no __getitem__ of k is an event with records)
    assert event("__getitem__#0") == [] and event("__getitem__#1") == []
    assert event("copy_#0") == ["forward/input/1"]
    # the write that covers k: its receiver view is a value now (no gradient reaches the view itself:
    # backward goes through k)
    assert event("copy_#1") == ["forward/input/1", "forward/output/0"]
    # out= is written, not read; a whole copy_ gives a value
    assert event("mul#1") == ["forward/input/0", "forward/output/0"]
    assert event("copy_#2") == ["backward/input/0", "forward/input/1", "forward/output/0"]
    # read where it is read, with its values: the permutation is an index, the buffers are summed
    assert "<root>/__getitem__#2/forward/input/1" in names
    assert "<root>/sum#1/forward/input/0" in names and "<root>/sum#2/forward/input/0" in names


def tiny_mixtral():
    torch.manual_seed(0)
    cfg = transformers.MixtralConfig(vocab_size=128, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                                     num_experts_per_tok=2, max_position_embeddings=64)
    return transformers.MixtralForCausalLM(cfg)


def test_mixtral_records_no_uninitialised_input(tmp_path):
    model = tiny_mixtral()
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    path = tmp_path / "run"
    with parity.capture(model, str(path), level="mix", mode="statistics") as cap:
        model(input_ids=ids, labels=ids).loss.backward()
        cap.next_step()
    run = parity.load(str(path))
    setitems = [r for r in run.records if "/__setitem__#" in r.name and r.role == "input"]
    writes_into_empty = [r for r in setitems if r.index == 0 and r.dtype == "i64"]
    assert not writes_into_empty, [(r.name, r.stats) for r in writes_into_empty]
    # nothing recorded holds the allocator's leftovers: every int64 record is a token id, index or count
    huge = [r.name for r in run.records if r.dtype == "i64" and r.stats and abs(r.stats["absmax"]) > 1e6]
    assert not huge, huge


def test_hf_llama_fp32_and_bf16_record_the_same_backward_events(tmp_path):
    def run(dtype, path):
        torch.manual_seed(0)
        cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
        model = transformers.LlamaForCausalLM(cfg).to(dtype)
        ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
        with parity.capture(model, str(path), level="mix", mode="statistics") as cap:
            model(input_ids=ids, labels=ids).loss.backward()
            cap.next_step()
        return {r.name for r in parity.load(str(path)).records if r.direction == "backward"}

    golden = run(torch.float32, tmp_path / "fp32")
    target = run(torch.bfloat16, tmp_path / "bf16")
    assert "model.layers.1.post_attention_layernorm/to#0/backward/input/0" not in golden | target
    assert golden == target, (sorted(golden - target)[:10], sorted(target - golden)[:10])
