"""`parity eval ppl` thresholds (docs/eval.md "Verdict"): perplexity is judged relatively (the absolute
difference check only when --ppl-diff is given), and the KLD limit comes from the dtype the logits were
computed in — the less precise side — with the choice stated and overridable."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")

import parity  # noqa: E402
from parity.examples import SyntheticCorpus, build_model  # noqa: E402

PARITY = os.environ.get("PARITY_BIN", "parity")


def ppl(*args):
    p = subprocess.run([PARITY, "eval", "ppl", *map(str, args), "--json", "-"], capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)


@pytest.fixture(scope="module")
def logits(tmp_path_factory):
    d = tmp_path_factory.mktemp("ppl")
    corpus = SyntheticCorpus(vocab_size=64, n_tokens=4096)
    fp32 = build_model("llama", "tiny", seed=2).eval()
    bf16 = build_model("llama", "tiny", seed=2).to(torch.bfloat16).eval()
    with torch.no_grad():
        for step in range(4):
            x, y = corpus.batch(step, 4, 32)
            lf = fp32(x)
            parity.log_logits(d / "fp32.plg", lf, y)
            parity.log_logits(d / "bf16.plg", bf16(x), y)  # bf16 logits: recorded as computed in bf16
            parity.log_logits(d / "hot.plg", lf * 8, y)  # a temperature bug: same argmax, other PPL
    return d


def test_kld_limit_from_the_logits_dtype(logits):
    rc, j = ppl(logits / "fp32.plg", logits / "fp32.plg")
    assert rc == 0
    th = j["thresholds"]
    assert th["kld_dtype"] == "f32" and th["kld"] == 1e-4 and th["kld_source"] == "both sides' logits are f32"
    for golden, target in (("fp32", "bf16"), ("bf16", "fp32")):  # whichever side is the less precise
        rc, j = ppl(logits / f"{golden}.plg", logits / f"{target}.plg")
        th = j["thresholds"]
        assert th["kld_dtype"] == "bf16" and th["kld"] == 0.005, th
        assert "less precise" in th["kld_source"] and "f32" in th["kld_source"]
    # the terminal output says which limit and how to override it
    p = subprocess.run([PARITY, "eval", "ppl", logits / "fp32.plg", logits / "bf16.plg"], capture_output=True, text=True)
    assert "KLD limit 0.005 for bf16 logits" in p.stdout and "--kld-dtype" in p.stdout
    # overrides
    rc, j = ppl(logits / "fp32.plg", logits / "bf16.plg", "--kld-dtype", "f16")
    assert j["thresholds"]["kld"] == 1e-4 and j["thresholds"]["kld_source"] == "--kld-dtype f16"
    rc, j = ppl(logits / "fp32.plg", logits / "bf16.plg", "--kld", "0.25")
    assert j["thresholds"]["kld"] == 0.25 and j["thresholds"]["kld_source"] == "--kld"


def test_perplexity_is_judged_relatively(logits):
    rc, j = ppl(logits / "fp32.plg", logits / "hot.plg", "--kld", "10")
    assert j["thresholds"]["ppl_diff"] is None
    assert [c["name"] for c in j["checks"]] == ["ppl_rel", "kld"]
    rel = abs(j["ppl_ratio"]["value"] - 1)
    assert rel > 0.05 and j["checks"][0]["value"] == pytest.approx(rel) and not j["checks"][0]["pass"]
    assert rc == 1
    # the relative limit decides: loosened past the observed ratio, the same runs pass
    rc, j = ppl(logits / "fp32.plg", logits / "hot.plg", "--kld", "10", "--ppl-rel", str(rel * 1.01))
    assert rc == 0 and j["verdict"] == "pass"
    # seed 004's absolute difference is an opt-in extra check
    rc, j = ppl(logits / "fp32.plg", logits / "hot.plg", "--kld", "10", "--ppl-rel", str(rel * 1.01), "--ppl-diff", "0.5")
    names = [c["name"] for c in j["checks"]]
    assert names == ["ppl_rel", "ppl_diff", "kld"] and j["thresholds"]["ppl_diff"] == 0.5
    diff = abs(j["ppl_diff"]["value"])
    assert j["checks"][1]["pass"] == (diff <= 0.5) and rc == (0 if diff <= 0.5 else 1)
