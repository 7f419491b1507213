"""Fault injection (issue 4 §6): capture a golden and a target run of both example models with one
injected fault, run the real `parity compare --json`, and check that the top suspect is the injected
module and that the diagnosis names the cause — even where the first failing row is downstream and the
target carries ambient bf16 noise everywhere. Benign differences must produce no structural finding.

Each case is one training step of a tiny model (forward + backward), so the whole file runs in seconds.
fp16 is emulated by rounding through float16 (CPU torch has no fp16 kernels).
"""
import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("PARITY_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import parity  # noqa: E402
from capture_helpers import parity_bin  # noqa: E402  (tests/python is on sys.path under pytest)
from parity.examples import SyntheticCorpus, build_model  # noqa: E402
from parity.examples.models import PrecisionPolicy, apply_precision  # noqa: E402

CORPUS = SyntheticCorpus(64, 1 << 12)
FP16_MIN_NORMAL = 2.0 ** -14

# Module paths of the two variants.
PATHS = {
    "llama": {"embed": ["embed"], "norms": lambda m: [n for n, x in m.named_modules() if n.endswith("_norm") or n == "norm"],
              "norm1": "layers.1.attn_norm", "norm0": "layers.0.attn_norm", "attn1": "layers.1.attn",
              "attn0": "layers.0.attn", "first_param_module": "embed"},
    "gpt2": {"embed": ["wte", "wpe"], "norms": lambda m: [n for n, x in m.named_modules() if ".ln_" in n or n == "ln_f"],
             "norm1": "blocks.1.ln_1", "norm0": "blocks.0.ln_1", "attn1": "blocks.1.attn", "attn0": "blocks.0.attn",
             "first_param_module": "wte"},
}




# ---- fault implementations -----------------------------------------------------------------------------

def fp16(x):
    return x.half().float()


def norm_fp16_no_upcast(mod):
    """RMSNorm / LayerNorm whose statistics are computed in fp16 without the fp32 upcast (seed 004 §3.1's
    anti-pattern): every intermediate rounded to fp16. Σx² of a residual stream with |x| ~ 60 exceeds
    65504, the variance becomes Inf and the normalised output collapses."""
    def forward(x):
        dt = x.dtype
        xs = fp16(x.float())
        if isinstance(mod, nn.LayerNorm):
            mean = fp16(xs.sum(-1, keepdim=True) / x.shape[-1])
            xs = fp16(xs - mean)
        var = fp16(fp16(xs * xs).sum(-1, keepdim=True))
        var = fp16(var / x.shape[-1])
        y = fp16(xs * fp16(torch.rsqrt(fp16(var + mod.eps))))
        y = y * mod.weight.float()
        if getattr(mod, "bias", None) is not None:
            y = y + mod.bias.float()
        return fp16(y).to(dt)
    mod.forward = forward


def norm_flush_to_zero(mod):
    """Flush inputs below fp16's smallest normal to zero, then normalise (an FTZ kernel)."""
    inner = mod.forward

    def forward(x):
        return inner(torch.where(x.abs() < FP16_MIN_NORMAL, torch.zeros_like(x), x))
    mod.forward = forward


def softmax_fp16_no_max(attn):
    """The attention's softmax computed in fp16 without subtracting the row maximum: exp overflows for
    scores above ln(65504) = 11.09."""
    import torch.nn.functional as F
    inner = attn.forward
    real = F.softmax

    def fake_softmax(s, dim=-1, **kw):
        e = fp16(torch.exp(fp16(s)))
        return fp16(e / fp16(e.sum(dim, keepdim=True)))

    def forward(*a, **k):
        F.softmax = fake_softmax
        try:
            return inner(*a, **k)
        finally:
            F.softmax = real
    attn.forward = forward


class WithDropout(nn.Module):
    """inner followed by dropout (the example models have none; both runs get the same structure)."""

    def __init__(self, inner, p):
        super().__init__()
        self.inner = inner
        self.drop = nn.Dropout(p)

    def forward(self, *a, **k):
        return self.drop(self.inner(*a, **k))


def reordered_linear(mod):
    """A valid but different summation order for every Linear: the reduction index permuted."""
    g = torch.Generator().manual_seed(7)
    perm = torch.randperm(mod.in_features, generator=g)

    def forward(x):
        y = x[..., perm] @ mod.weight[:, perm].t()
        return y + mod.bias if mod.bias is not None else y
    mod.forward = forward


def fp16_grads_with_loss_scale(model, scale):
    """Parameter gradients as an fp16 AMP step with a static loss scale sees them: scaled, rounded to
    fp16 (overflow to Inf above 65504, flush below 2^-24), unscaled."""
    for p in model.parameters():
        p.register_hook(lambda g, s=scale: fp16(g * s) / s)


# ---- running ----------------------------------------------------------------------------------------------

def one_step(model, batch_step=0, seed=0):
    """One forward + backward step (no optimizer: step 0's gradients are what is compared)."""
    x, y = CORPUS.batch(batch_step, 2, 12)
    torch.manual_seed(seed)
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()


def capture(model, path, level, batch_step=0, seed=0):
    with parity.capture(model, str(path), level=level, mode="tensor", steps=(0,)) as cap:
        one_step(model, batch_step, seed)
        cap.next_step()


def compare(tmp_path, golden, target):
    out = tmp_path / "cmp.json"
    p = subprocess.run([parity_bin(), "compare", str(golden), str(target), "--json", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stdout[-4000:] + p.stderr[-4000:]
    res = json.loads(out.read_text())
    res["_text"] = p.stdout
    return res


def codes(res):
    return [d["code"] for d in res["diagnosis"]]


def scale_embeddings(model, kind, factor):
    with torch.no_grad():
        for name in PATHS[kind]["embed"]:
            getattr(model, name).weight.mul_(factor)


def run_case(tmp_path, kind, make_golden, make_target, level="module", target_batch=0, target_seed=0):
    g, t = make_golden(), make_target()
    capture(g, tmp_path / "golden", level)
    capture(t, tmp_path / "target", level, batch_step=target_batch, seed=target_seed)
    return compare(tmp_path, tmp_path / "golden", tmp_path / "target")


def explain(res):
    return "\n".join([res["_text"][-3000:], json.dumps(res["suspects"][:3], indent=1),
                      json.dumps(res["diagnosis"][:3], indent=1)])


KINDS = ["llama", "gpt2"]


# ---- cases ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_low_precision_norm_in_bf16_target(tmp_path, kind):
    P = PATHS[kind]

    def golden():
        m = build_model(kind, "tiny")
        scale_embeddings(m, kind, 3000.0)  # residual stream |x| ~ 60, as in trained LLMs
        return m

    def target():
        m = golden()
        # bf16 everywhere, norms upcast to fp32 (the good pattern) ... except one, in fp16 without upcast
        norms = [n for n in P["norms"](m) if n != P["norm1"]]
        apply_precision(m, PrecisionPolicy(torch.bfloat16, {n: torch.float32 for n in norms}))
        norm_fp16_no_upcast(dict(m.named_modules())[P["norm1"]])
        return m

    res = run_case(tmp_path, kind, golden, target)
    top = res["suspects"][0]
    assert top["module"] == P["norm1"], explain(res)
    assert codes(res)[0] == "LOW_PRECISION_SENSITIVE_OP", explain(res)
    assert res["diagnosis"][0]["events"][0].startswith(P["norm1"] + "/")
    # Ambient noise: the target is bf16 everywhere, yet nothing upstream of the fault is structural.
    first = res["first_divergence"]
    assert first is not None
    rows_before = [r for r in res["rows"] if r["direction"] == "forward" and r["order"] < top_order(res, P["norm1"])]
    assert rows_before and all(r["noise"] != "structural" for r in rows_before), \
        [(r["name"], r["noise_ratio"]) for r in rows_before if r["noise"] == "structural"]


def top_order(res, module):
    return min(r["order"] for r in res["rows"] if r["module"] == module and r["direction"] == "forward")


@pytest.mark.parametrize("kind", KINDS)
def test_fp16_softmax_without_max_subtraction_overflows(tmp_path, kind):
    P = PATHS[kind]

    def golden():
        m = build_model(kind, "tiny")
        with torch.no_grad():  # sharp attention: scores reach ~15 in layer 1
            for lin in ("wq", "wk"):
                getattr(dict(m.named_modules())[P["attn1"]], lin).weight.mul_(40.0)
        return m

    def target():
        m = golden()
        softmax_fp16_no_max(dict(m.named_modules())[P["attn1"]])
        return m

    res = run_case(tmp_path, kind, golden, target, level="mix")
    # The emulation computes exp in fp32 and rounds it to fp16: Inf is born at that rounding (op "half"),
    # inside the attention whose softmax was replaced; on fp16 hardware it would be the exp itself.
    top = res["suspects"][0]
    assert top["module"] == P["attn1"] and top["op"] in ("exp", "softmax", "half"), explain(res)
    assert codes(res)[0] == "OVERFLOW", explain(res)
    d = res["diagnosis"][0]
    assert d["events"][0] == top["event"], explain(res)
    assert any("f16" in e and "overflows" in e for e in d["evidence"]), d["evidence"]
    origin = res["overflow"]["target"]["origins"][0]
    assert origin["module"] == P["attn1"] and origin["contaminated"] > 0
    assert res["overflow"]["golden"]["origins"] == []


@pytest.mark.parametrize("kind", KINDS)
def test_flush_to_zero_before_a_normalisation(tmp_path, kind):
    P = PATHS[kind]

    def golden():
        m = build_model(kind, "tiny")
        scale_embeddings(m, kind, 1e-3)  # activations ~2e-5 entering the first norm: below fp16 normal
        return m

    def target():
        m = golden()
        norm_flush_to_zero(dict(m.named_modules())[P["norm0"]])
        return m

    res = run_case(tmp_path, kind, golden, target)
    assert res["suspects"][0]["module"] == P["norm0"], explain(res)
    assert codes(res)[0] == "FLUSH_TO_ZERO", explain(res)
    assert res["diagnosis"][0]["events"][0] == P["norm0"] + "/forward"


@pytest.mark.parametrize("kind", KINDS)
def test_different_batch_is_input_mismatch(tmp_path, kind):
    res = run_case(tmp_path, kind, lambda: build_model(kind, "tiny"), lambda: build_model(kind, "tiny"),
                   target_batch=5)
    top = res["suspects"][0]
    assert top["kind"] == "inputs" and top["module"] == "<root>", explain(res)
    assert codes(res)[0] == "INPUT_MISMATCH", explain(res)
    assert "WEIGHT_MISMATCH" not in codes(res)


@pytest.mark.parametrize("kind", KINDS)
def test_different_init_seed_is_weight_mismatch(tmp_path, kind):
    res = run_case(tmp_path, kind, lambda: build_model(kind, "tiny", seed=0), lambda: build_model(kind, "tiny", seed=1))
    top = res["suspects"][0]
    assert top["kind"] == "parameters" and top["module"] == PATHS[kind]["first_param_module"], explain(res)
    assert codes(res)[0] == "WEIGHT_MISMATCH", explain(res)
    assert "INPUT_MISMATCH" not in codes(res)


@pytest.mark.parametrize("kind", KINDS)
def test_unseeded_dropout_is_nondeterminism(tmp_path, kind):
    P = PATHS[kind]

    def make():
        m = build_model(kind, "tiny")
        parent, name = P["attn0"].rsplit(".", 1)
        setattr(dict(m.named_modules())[parent], name, WithDropout(getattr(dict(m.named_modules())[parent], name), 0.2))
        return m

    res = run_case(tmp_path, kind, make, make, target_seed=12345)  # the target's generator state differs
    top = res["suspects"][0]
    assert top["module"] == P["attn0"] + ".drop", explain(res)
    assert codes(res)[0] == "NONDETERMINISM", explain(res)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale,code,other", [(2.0 ** 40, "GRAD_OVERFLOW", "GRAD_UNDERFLOW"),
                                              (2.0 ** -30, "GRAD_UNDERFLOW", "GRAD_OVERFLOW")])
def test_loss_scale_far_off(tmp_path, kind, scale, code, other):
    def target():
        m = build_model(kind, "tiny")
        fp16_grads_with_loss_scale(m, scale)
        return m

    res = run_case(tmp_path, kind, lambda: build_model(kind, "tiny"), target)
    assert codes(res)[0] == code, explain(res)
    assert other not in codes(res)
    assert ("Lower the loss scale" if code == "GRAD_OVERFLOW" else "Raise the loss scale") in res["diagnosis"][0]["advice"]
    if code == "GRAD_OVERFLOW":  # Inf gradients are visible in the target alone too
        assert res["overflow"]["target"]["loss_scale_advice"] == "lower"
    # Forward is untouched: nothing differs before the backward pass.
    assert all(r["noise"] in ("noise", "unknown") for r in res["rows"] if r["direction"] == "forward")


@pytest.mark.parametrize("kind", KINDS)
def test_benign_fp32_summation_order(tmp_path, kind):
    def target():
        m = build_model(kind, "tiny")
        for mod in m.modules():
            if isinstance(mod, nn.Linear):
                reordered_linear(mod)
        return m

    res = run_case(tmp_path, kind, lambda: build_model(kind, "tiny"), target)
    assert res["noise_summary"]["structural"] == 0, explain(res)
    assert set(codes(res)) <= {"ACCUMULATION_NOISE"}, explain(res)
    assert all(s["kind"] != "source" or s["output_ratio"] != "Infinity" for s in res["suspects"])


@pytest.mark.parametrize("kind", KINDS)
def test_benign_bf16_rerun(tmp_path, kind):
    def make():
        return build_model(kind, "tiny").to(torch.bfloat16)

    res = run_case(tmp_path, kind, make, make)
    assert res["noise_summary"]["structural"] == 0, explain(res)
    assert set(codes(res)) <= {"ACCUMULATION_NOISE"}, explain(res)
    assert res["suspects"] == []


# ---- one run alone, and statistics-only dumps ---------------------------------------------------------------

def test_overflow_command_on_one_run(tmp_path):
    """`parity overflow RUN` finds where NaN/Inf are born without a golden; attention masks (-Inf written by
    masked_fill on purpose) are not origins; a clean run exits 0."""
    P = PATHS["llama"]
    m = build_model("llama", "tiny")
    with torch.no_grad():
        for lin in ("wq", "wk"):
            getattr(dict(m.named_modules())[P["attn1"]], lin).weight.mul_(40.0)
    clean = build_model("llama", "tiny")
    capture(clean, tmp_path / "clean", "mix")
    softmax_fp16_no_max(dict(m.named_modules())[P["attn1"]])
    capture(m, tmp_path / "bad", "mix")
    out = tmp_path / "overflow.json"
    p = subprocess.run([parity_bin(), "overflow", str(tmp_path / "bad"), "--json", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    rep = json.loads(out.read_text())
    assert rep["schema"] == "parity.overflow/1"
    assert len(rep["origins"]) == 1, rep["origins"]
    o = rep["origins"][0]
    assert o["module"] == P["attn1"] and o["step"] == 0 and o["direction"] == "forward"
    assert o["contaminated"] > 0 and "f16" in o["explanation"]
    assert o["inputs"] and all(i["nan"] == 0 and i["inf"] == 0 for i in o["inputs"])
    assert "NaN/Inf born at" in p.stdout
    # Every command ends with its verdict line, not only under -q (issue 31 §4).
    assert p.stdout.splitlines()[-1].startswith("overflow: FOUND | 1 NaN/Inf origin(s)"), p.stdout
    p = subprocess.run([parity_bin(), "overflow", str(tmp_path / "clean"), "--json", "-"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["origins"] == []
    assert p.stderr.splitlines()[-1].startswith("overflow: none | 0 NaN/Inf origin(s)"), p.stderr
    p = subprocess.run([parity_bin(), "overflow", str(tmp_path / "missing")], capture_output=True, text=True)
    assert p.returncode == 2 and "missing" in p.stderr


def test_statistics_only_dumps_are_weaker_evidence(tmp_path):
    """Statistics-only captures get the same analysis on a proven lower bound of the error, flagged weak.
    At module level the fp16 casts inside the norm are invisible, so no low-precision cause may be
    claimed (every recorded dtype is f32); at mix level they are recorded and the overflow is named."""
    P = PATHS["llama"]

    def golden():
        m = build_model("llama", "tiny")
        scale_embeddings(m, "llama", 3000.0)
        return m

    def target():
        m = golden()
        norm_fp16_no_upcast(dict(m.named_modules())[P["norm1"]])
        return m

    for level in ("module", "mix"):
        g, t = golden(), target()
        for model, name in ((g, "golden"), (t, "target")):
            with parity.capture(model, str(tmp_path / level / name), level=level, mode="statistics", steps=(0,)) as cap:
                one_step(model)
                cap.next_step()
        res = compare(tmp_path, tmp_path / level / "golden", tmp_path / level / "target")
        assert res["noise_summary"]["statistics_only"] is True
        assert res["summary"]["verdict"] in ("fail", "error")  # error: NaN/Inf counts that differ
        top = res["suspects"][0]
        assert top["module"] == P["norm1"], explain(res)
        if level == "module":
            assert top["weak_evidence"] is True, explain(res)
            assert "LOW_PRECISION_SENSITIVE_OP" not in codes(res), explain(res)
        else:
            assert codes(res)[0] == "OVERFLOW", explain(res)
            assert "half" in res["diagnosis"][0]["events"][0], explain(res)


# ---- runs that are not the same code: --map and order-based alignment ----------------------------------------

def test_renamed_modules_pair_by_map_and_by_alignment(tmp_path):
    """The target wraps the model (every module path gains a "0." prefix): exact names miss, the mapping
    file pairs them, and without it the order-based alignment does, after recognising the wrapper prefix
    (it never pairs records of two different module paths); either way the identical numerics give no
    suspect."""
    golden = build_model("gpt2", "tiny")
    target = nn.Sequential(build_model("gpt2", "tiny"))
    capture(golden, tmp_path / "golden", "module")
    capture(target, tmp_path / "target", "module")
    mapfile = tmp_path / "map.txt"
    mapfile.write_text("# target => golden\nre:^0\\.(.*)$ => $1\n")
    out = tmp_path / "mapped.json"
    p = subprocess.run([parity_bin(), "compare", str(tmp_path / "golden"), str(tmp_path / "target"),
                        "--map", str(mapfile), "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    mapped = json.loads(out.read_text())
    al = mapped["alignment"]
    assert al["mapped"] > 50 and al["unmatched_golden"] == [], al["unmatched_golden"][:5]
    assert all(r["metrics"]["max_abs"] == 0 for r in mapped["rows"] if r["match"] == "mapped")
    assert mapped["suspects"] == [] and mapped["noise_summary"]["structural"] == 0

    out2 = tmp_path / "aligned.json"
    p = subprocess.run([parity_bin(), "compare", str(tmp_path / "golden"), str(tmp_path / "target"),
                        "--json", str(out2)], capture_output=True, text=True, timeout=120)
    aligned = json.loads(out2.read_text())
    assert aligned["alignment"]["aligned"] > 50
    assert any("wrapper prefix '0.'" in n for n in aligned["notes"]), aligned["notes"]
    for pair in aligned["alignment"]["pairs"]:
        g_module = pair["golden"].split("/")[0].split("#")[0]
        t_module = pair["target"].split("/")[0].split("#")[0]
        assert t_module in ("0." + g_module, "0" if g_module == "<root>" else None), pair
    assert aligned["alignment"]["unmatched_golden"] == []
    assert aligned["noise_summary"]["structural"] == 0 and aligned["suspects"] == []
    p = subprocess.run([parity_bin(), "compare", str(tmp_path / "golden"), str(tmp_path / "target"),
                        "--no-align", "--json", str(out2)], capture_output=True, text=True, timeout=120)
    assert json.loads(out2.read_text())["alignment"]["aligned"] == 0
    bad = tmp_path / "bad.txt"
    bad.write_text("no arrow\n")
    p = subprocess.run([parity_bin(), "compare", str(tmp_path / "golden"), str(tmp_path / "target"),
                        "--map", str(bad)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "bad.txt:1" in p.stderr, p.stderr


def test_optimizer_difference_is_drift_after_steps(tmp_path):
    """Step 0 is bit-identical (same weights, same batch); the target's optimizer uses another learning
    rate, so step 1 starts from different weights: DRIFT_AFTER_STEPS, not a weight or op problem."""
    from parity.examples import train

    for name, lr in (("golden", 3e-3), ("target", 3e-2)):
        m = build_model("llama", "tiny")
        with parity.capture(m, str(tmp_path / name), level="module", mode="tensor", steps=(0, 1)) as cap:
            train(m, CORPUS, steps=2, batch_size=2, seq_len=12, lr=lr, capture=cap)
    res = compare(tmp_path, tmp_path / "golden", tmp_path / "target")
    assert "DRIFT_AFTER_STEPS" in codes(res), explain(res)
    assert not {"WEIGHT_MISMATCH", "INPUT_MISMATCH"} & set(codes(res)), explain(res)
    assert all(r["noise"] == "noise" for r in res["rows"] if r["step"] == 0)
    d = next(d for d in res["diagnosis"] if d["code"] == "DRIFT_AFTER_STEPS")
    assert any(e.startswith("step 1:") for e in d["evidence"])
