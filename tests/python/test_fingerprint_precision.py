"""Precision context managers entered inside the training loop (after the capture started) are in the
fingerprint per step (`precision_by_step`, docs/capture.md), so `parity compare` of an fp32 run
against an autocast-bf16 run names the precision configuration difference (CONFIG_DIFF)."""
import contextlib
import json

import torch

import capture_helpers
import parity
from parity.examples import SyntheticCorpus, build_model

CORPUS = SyntheticCorpus(64, 1 << 12)


def capture_run(path, autocast_from=None, steps=3):
    """Three training steps of the tiny Llama; from step `autocast_from` on, the forward runs under
    torch.autocast("cpu", bfloat16) — entered inside the loop, as training scripts do."""
    torch.manual_seed(0)
    model = build_model("llama", "tiny")
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    with parity.capture(model, path, level="module", steps=(0, 1, 2)) as cap:
        for step in range(steps):
            x, y = CORPUS.batch(step, 4, 16)
            on = autocast_from is not None and step >= autocast_from
            ctx = torch.autocast("cpu", dtype=torch.bfloat16) if on else contextlib.nullcontext()
            with ctx:
                logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            cap.log(loss=loss)
            cap.next_step()


def fingerprint(path):
    p = capture_helpers.run_cli("info", path, "--json", "-")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    fps = [p["fingerprint"] for p in info["parts"] if p.get("fingerprint")]
    assert len(fps) == 1
    return fps[0]


def compare(tmp_path, golden, target):
    out = tmp_path / "cmp.json"
    p = capture_helpers.run_cli("compare", golden, target, "--json", out)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    return json.loads(out.read_text())


def test_autocast_per_step_in_fingerprint_and_compare(tmp_path):
    capture_run(tmp_path / "fp32")
    capture_run(tmp_path / "amp", autocast_from=0)
    capture_run(tmp_path / "late", autocast_from=2)

    fp = fingerprint(tmp_path / "fp32")["precision_by_step"]
    assert fp["autocast"] == {"0": "off"} and fp["default_dtype"] == {"0": "float32"}
    assert fingerprint(tmp_path / "amp")["precision_by_step"]["autocast"] == {"0": "cpu:bfloat16"}
    # entered at step 2: the change is recorded at the step it happened
    assert fingerprint(tmp_path / "late")["precision_by_step"]["autocast"] == {"0": "off", "2": "cpu:bfloat16"}

    res = compare(tmp_path, tmp_path / "fp32", tmp_path / "amp")
    diffs = {d["key"]: d for d in res["config_diff"]}
    d = diffs["precision_by_step.autocast.0"]
    assert d["golden"] == '"off"' and d["target"] == '"cpu:bfloat16"'
    assert d["category"] == "precision" and d["numeric"] is True
    assert [k for k in diffs if k.startswith("precision_by_step")] == ["precision_by_step.autocast.0"]

    res = compare(tmp_path, tmp_path / "fp32", tmp_path / "late")
    diffs = {d["key"]: d for d in res["config_diff"]}
    assert diffs["precision_by_step.autocast.2"]["golden"] == "<absent>"
    assert diffs["precision_by_step.autocast.2"]["target"] == '"cpu:bfloat16"'

    # two fp32 runs: no precision difference
    capture_run(tmp_path / "fp32b")
    res = compare(tmp_path, tmp_path / "fp32", tmp_path / "fp32b")
    assert not [d for d in res["config_diff"] if d["key"].startswith("precision_by_step")]


def test_matmul_precision_switch_is_seen(tmp_path):
    old = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("medium")
        capture_run(tmp_path / "medium", steps=1)
    finally:
        torch.set_float32_matmul_precision(old)
    assert fingerprint(tmp_path / "medium")["precision_by_step"]["matmul_precision"] == {"0": "medium"}
