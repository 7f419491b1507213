"""parity eval ppl: statistics against an independent numpy implementation of llama.cpp's definitions,
log_logits round trips (plain function and cap.log_logits), exact zero for identical runs, and a real
fp32-vs-bf16 evaluation of the example model (docs/eval.md)."""
import json
import os
import subprocess

import numpy as np
import pytest

import parity

PARITY = os.environ.get("PARITY_BIN", "parity")


def run_cli(*args):
    p = subprocess.run([PARITY, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def llama_stats(lp, lq, labels):
    """llama.cpp tools/perplexity/perplexity.cpp kl_divergence(), re-derived in numpy (fp64)."""
    n = len(labels)
    idx = np.arange(n)
    nll_p, nll_q = -lp[idx, labels], -lq[idx, labels]

    def mean_unc(x):
        f = x.mean()
        var = (x * x).mean() - f * f
        return f, (np.sqrt(var / (n - 1)) if var > 0 and n > 10 else 0.0)

    lq_m, uq = mean_unc(nll_q)
    lp_m, up = mean_unc(nll_p)
    cov = ((nll_q * nll_p).mean() - lq_m * lp_m) / (n - 1)
    kld = (np.exp(lp) * (lp - lq)).sum(axis=1)
    dp = np.exp(-nll_q) - np.exp(-nll_p)
    same = (lp.argmax(axis=1) == lq.argmax(axis=1)).mean()
    ratio = lq_m - lp_m
    ks = np.sort(kld)

    def pct(v, f):
        p = f * (len(v) - 1)
        i = int(p)
        p -= i
        return (1 - p) * v[i] + p * v[min(i + 1, len(v) - 1)]

    return {
        "ppl_g": np.exp(lp_m), "ppl_g_unc": np.exp(lp_m) * up,
        "ppl_t": np.exp(lq_m), "ppl_t_unc": np.exp(lq_m) * uq,
        "ln_ratio": ratio, "ln_ratio_unc": np.sqrt(uq * uq + up * up - 2 * cov),
        "ppl_diff": np.exp(lq_m) - np.exp(lp_m),
        "cor": cov / (uq * up),
        "kld": mean_unc(kld), "kld_p99": pct(ks, 0.99), "kld_p90": pct(ks, 0.90), "kld_max": ks[-1],
        "kld_median": np.median(kld),
        "dp": mean_unc(dp), "dp_rms": np.sqrt((dp * dp).mean()),
        "same_top": same, "same_top_unc": np.sqrt(same * (1 - same) / (n - 1)),
    }


@pytest.fixture
def random_logits(tmp_path):
    rng = np.random.default_rng(5)
    n, v = 400, 97
    g = (rng.standard_normal((n, v)) * 2.5).astype(np.float32)
    t = (g + 0.05 * rng.standard_normal((n, v))).astype(np.float32)
    labels = rng.integers(0, v, size=n).astype(np.int64)
    np.save(tmp_path / "g.npy", g)
    np.save(tmp_path / "t.npy", t)
    np.save(tmp_path / "labels.npy", labels)
    return tmp_path, g, t, labels


def test_statistics_match_numpy_reference(random_logits):
    d, g, t, labels = random_logits
    rc, out, err = run_cli("eval", "ppl", d / "g.npy", d / "t.npy", "--labels", d / "labels.npy", "--json", "-",
                           "--ppl-rel", "0.5", "--ppl-diff", "1000", "--kld", "1")
    assert rc == 0, err
    j = json.loads(out)
    assert j["schema"] == "parity.eval.ppl/1"
    ref = llama_stats(log_softmax(g), log_softmax(t), labels)
    close = lambda a, b: pytest.approx(b, rel=1e-9, abs=1e-12)  # noqa: E731
    assert j["tokens"] == len(labels)
    assert j["ppl"]["golden"]["value"] == close(0, ref["ppl_g"])
    assert j["ppl"]["golden"]["unc"] == close(0, ref["ppl_g_unc"])
    assert j["ppl"]["target"]["value"] == close(0, ref["ppl_t"])
    assert j["ln_ppl_ratio"]["value"] == close(0, ref["ln_ratio"])
    assert j["ln_ppl_ratio"]["unc"] == pytest.approx(ref["ln_ratio_unc"], rel=1e-6)
    assert j["ppl_diff"]["value"] == close(0, ref["ppl_diff"])
    assert j["ln_ppl_correlation"] == pytest.approx(ref["cor"], rel=1e-9)
    assert j["kld"]["mean"] == close(0, ref["kld"][0])
    assert j["kld"]["unc"] == pytest.approx(ref["kld"][1], rel=1e-6)
    assert j["kld"]["percentiles"]["p99"] == close(0, ref["kld_p99"])
    assert j["kld"]["percentiles"]["p90"] == close(0, ref["kld_p90"])
    assert j["kld"]["percentiles"]["max"] == close(0, ref["kld_max"])
    assert j["kld"]["percentiles"]["median"] == close(0, ref["kld_median"])
    assert j["delta_p"]["mean"] == pytest.approx(ref["dp"][0], rel=1e-9, abs=1e-15)
    assert j["delta_p"]["rms"] == close(0, ref["dp_rms"])
    assert j["same_top"]["value"] == close(0, ref["same_top"])
    assert j["same_top"]["unc"] == close(0, ref["same_top_unc"])
    assert j["verdict"] == "pass"


def test_compact_file_agrees_with_full_logits_within_its_bound(random_logits, tmp_path):
    d, g, t, labels = random_logits
    assert parity.log_logits(tmp_path / "g.plg", g, labels, top_k=64) == len(labels)
    assert parity.log_logits(tmp_path / "t.plg", t, labels, top_k=8) == len(labels)
    rc, out, err = run_cli("eval", "ppl", tmp_path / "g.plg", tmp_path / "t.plg", "--json", "-", "--kld", "1",
                           "--ppl-rel", "1", "--ppl-diff", "1000")
    assert rc == 0, err
    j = json.loads(out)
    ref = llama_stats(log_softmax(g), log_softmax(t), labels)
    # PPL uses the exact stored label log-prob; the mean KLD is within the representation's bound.
    assert j["ppl"]["golden"]["value"] == pytest.approx(ref["ppl_g"], rel=1e-12)
    assert abs(j["kld"]["mean"] - ref["kld"][0]) <= j["kld"]["error_bound_mean"]
    assert j["kld"]["error_bound_mean"] < 0.05 * ref["kld"][0]
    assert j["golden"]["representation"] == {"format": "parity.logits/1", "top_k": 64, "tail_bits": 16, "source_dtype": "f32"}


def test_identical_runs_exactly_zero_and_bad_inputs(random_logits, tmp_path):
    d, g, t, labels = random_logits
    import torch

    x = torch.from_numpy(g).to(torch.bfloat16).reshape(4, 100, -1)  # [batch, seq, vocab], bf16
    y = torch.from_numpy(labels).reshape(4, 100)
    y[0, :10] = -100  # ignored positions
    (tmp_path / "a").mkdir()
    assert parity.log_logits(tmp_path / "a", x, y) == 390  # an existing directory → a/logits.plg
    assert parity.log_logits(tmp_path / "b" / "logits.plg", x, y) == 390
    rc, out, err = run_cli("eval", "ppl", tmp_path / "a" / "logits.plg", tmp_path / "b" / "logits.plg", "--json", "-")
    assert rc == 0, err
    j = json.loads(out)
    assert j["kld"]["mean"] == 0.0 and j["kld"]["percentiles"]["max"] == 0.0
    assert j["ppl_ratio"]["value"] == 1.0 and j["ln_ppl_ratio"]["value"] == 0.0
    assert j["same_top"]["value"] == 1.0
    rc, out, err = run_cli("eval", "ppl", d / "g.npy", d / "t.npy")
    assert rc == 2 and "labels" in err
    rc, out, err = run_cli("eval", "ppl", tmp_path / "missing.plg", tmp_path / "a" / "logits.plg")
    assert rc == 2 and "missing.plg" in err
    with pytest.raises(ValueError):
        parity.log_logits(tmp_path / "c.plg", g, labels[:-1])


def test_real_model_fp32_vs_bf16(tmp_path):
    """The example Llama trained a few dozen steps in fp32, evaluated in fp32 and in bf16 on held-out
    batches: bf16 rounding gives a small, positive KLD, a PPL ratio near 1, and the representation's
    error bound is far below the measured effect."""
    import torch
    from parity.examples import SyntheticCorpus, build_model, train

    torch.manual_seed(0)
    corpus = SyntheticCorpus(vocab_size=64, n_tokens=1 << 13)
    model = build_model("llama", "tiny", seed=3)
    train(model, corpus, steps=40, batch_size=8, seq_len=32)
    model.eval()
    bf16 = build_model("llama", "tiny", seed=3)
    bf16.load_state_dict(model.state_dict())
    bf16.to(torch.bfloat16).eval()
    with torch.no_grad():
        for step in range(1000, 1008):  # held-out batches
            x, y = corpus.batch(step, 8, 32)
            parity.log_logits(tmp_path / "fp32" / "rank0" / "logits.plg", model(x), y)
            parity.log_logits(tmp_path / "bf16" / "rank0" / "logits.plg", bf16(x), y)
            # the same tokens with a quantised tail (top-8 exact) to exercise the compact form on real logits
            parity.log_logits(tmp_path / "q8" / "rank0" / "logits.plg", bf16(x), y, top_k=8)
    rc, out, err = run_cli("eval", "ppl", tmp_path / "fp32", tmp_path / "bf16", "--json", "-")
    j = json.loads(out)
    assert j["tokens"] == 8 * 8 * 32
    assert j["ppl"]["golden"]["value"] < 32  # trained: well below the 64 of a uniform guess
    assert 0 < j["kld"]["mean"] < 0.005  # bf16 noise, within the seed's bf16 threshold
    assert abs(j["ppl_ratio"]["value"] - 1) < 0.05
    assert j["same_top"]["value"] > 0.9
    assert j["kld"]["error_bound_mean"] < 0.01 * j["kld"]["mean"], "representation error far below the effect"
    assert rc == 0, out + err
    assert j["verdict"] == "pass"
    assert j["thresholds"]["kld_dtype"] == "bf16" and j["thresholds"]["kld"] == 0.005  # from the target's logits
    rc, out, err = run_cli("eval", "ppl", tmp_path / "fp32", tmp_path / "q8", "--json", "-")
    q = json.loads(out)
    assert abs(q["kld"]["mean"] - j["kld"]["mean"]) <= q["kld"]["error_bound_mean"] + j["kld"]["error_bound_mean"]
    assert q["ppl"]["target"]["value"] == j["ppl"]["target"]["value"]  # label log-probs are stored exactly


def test_capture_log_logits_writes_into_the_run(tmp_path):
    import torch
    from parity.examples import SyntheticCorpus, build_model

    corpus = SyntheticCorpus(vocab_size=64, n_tokens=4096)
    model = build_model("llama", "tiny", seed=1).eval()
    x, y = corpus.batch(0, 2, 16)
    with torch.no_grad(), parity.capture(model, tmp_path / "run", steps=()) as cap:
        logits = model(x)
        assert cap.log_logits(logits, y) == 32
        assert cap.log_logits(logits, x, shift=True) == 30  # HF style: labels are the inputs
    assert os.path.exists(tmp_path / "run" / "rank0" / "logits.plg")
    rc, out, err = run_cli("eval", "ppl", tmp_path / "run", tmp_path / "run", "--json", "-")
    assert rc == 0, err
    assert json.loads(out)["tokens"] == 62


def _write_safetensors(path, tensors):
    """A minimal safetensors writer (8-byte header length, JSON header, raw little-endian data)."""
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        dt = {"float32": "F32", "int64": "I64"}[str(arr.dtype)]
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def test_safetensors_logits_with_keys_and_binding(random_logits, tmp_path):
    d, g, t, labels = random_logits
    _write_safetensors(tmp_path / "g.safetensors", {"logits": g.reshape(4, 100, -1), "labels": labels.reshape(4, 100)})
    _write_safetensors(tmp_path / "t.safetensors", {"logits": t.reshape(4, 100, -1), "labels": labels.reshape(4, 100)})
    rc, out, err = run_cli("eval", "ppl", f"{tmp_path}/g.safetensors:logits", f"{tmp_path}/t.safetensors:logits",
                           "--labels", f"{tmp_path}/g.safetensors:labels", "--json", "-", "--kld", "1",
                           "--ppl-rel", "1", "--ppl-diff", "1000")
    assert rc == 0, err
    j = json.loads(out)
    ref = llama_stats(log_softmax(g), log_softmax(t), labels)
    assert j["tokens"] == 400
    assert j["kld"]["mean"] == pytest.approx(ref["kld"][0], rel=1e-9)
    # the same through the Python binding
    from parity._core import core

    jb = json.loads(core.eval_ppl_json(str(d / "g.npy"), str(d / "t.npy"), str(d / "labels.npy")))
    assert jb["kld"]["mean"] == pytest.approx(ref["kld"][0], rel=1e-9)
    assert jb["target"]["representation"]["format"] == "logits-tensor"


def test_a_nan_logits_row_is_named_and_left_out(random_logits, tmp_path):
    """Issue 14: one NaN logits row turned every perplexity statistic into -nan without naming the token.
    Now the token is named, left out of the statistics, and a target that produces NaN fails."""
    d, g, t, labels = random_logits
    bad = t.copy()
    bad[7, :] = np.nan
    assert parity.log_logits(tmp_path / "g.plg", g, labels) == len(labels)
    assert parity.log_logits(tmp_path / "t.plg", bad, labels) == len(labels)
    rc, out, err = run_cli("eval", "ppl", tmp_path / "g.plg", tmp_path / "t.plg", "--json", "-")
    j = json.loads(out)
    assert rc == 1 and j["verdict"] == "fail", err
    assert any("first at token 7" in p for p in j["problems"]), j["problems"]
    assert j["tokens"] == len(labels) - 1
    for v in (j["ppl_ratio"]["value"], j["ln_ppl_ratio"]["value"], j["kld"]["mean"], j["same_top"]["value"]):
        assert isinstance(v, float) and np.isfinite(v), j
