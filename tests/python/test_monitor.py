"""`parity monitor RUN` (docs/monitor.md, issue 30 §3): one run, no golden. The long-run example (bench/longrun)
with fp32 master weights is quiet; with bf16 parameters its RMSNorm weights stop moving from the first step
that has a learning rate (STAGNATION); a logged loss that jumps is a LOSS_SPIKE at its step; an overflow
that makes Inf (a square of 1e20) is a NAN_INF at its step and module."""
import json
import os
import sys

import pytest
import torch

from capture_helpers import SOURCE_DIR, run_cli

sys.path.insert(0, os.path.join(SOURCE_DIR, "bench"))
from longrun import train  # noqa: E402

import parity  # noqa: E402

STEPS = 12


def monitor(run, tmp_path):
    out = tmp_path / "monitor.json"
    p = run_cli("monitor", run, "--json", out)
    return p.returncode, json.loads(out.read_text()), p.stdout


def test_fp32_master_weights_are_quiet(tmp_path):
    train.run("baseline", STEPS, str(tmp_path / "run"))
    code, res, text = monitor(tmp_path / "run", tmp_path)
    assert (code, res["verdict"], res["anomalies"]) == (0, "pass", []), text
    assert res["schema"] == "parity.monitor/1" and res["steps"] == STEPS
    assert {"loss", "grad_norm"} <= set(res["scalars"])


def test_bf16_weights_that_stop_moving_are_found_at_the_first_step_with_a_learning_rate(tmp_path):
    train.run("bf16_master", STEPS, str(tmp_path / "run"))
    code, res, text = monitor(tmp_path / "run", tmp_path)
    assert code == 1 and res["verdict"] == "fail", text
    stagnant = {a["tensor"]: a for a in res["anomalies"] if a["code"] == "STAGNATION"}
    norm = stagnant["model.norm/weight"]  # at 1.0 in bf16, half an ulp (2^-8) is above the peak lr
    assert norm["step"] == 1 and norm["steps"] == STEPS - 1, norm  # step 0: the warmup's lr is 0
    assert "bf16" in norm["evidence"] and "64 of 64" in norm["evidence"]


class Square(torch.nn.Module):
    def forward(self, x):
        return x * x


def _tiny_run(path, steps, loss_at, scale_at=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), Square(), torch.nn.Linear(8, 1))
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    with parity.capture(model, str(path), level="module", mode="statistics", steps=list(range(steps))) as cap:
        for step in range(steps):
            with torch.no_grad():
                model((x * 1e20) if step == scale_at else x)  # squared: 1e40, beyond fp32's 3.4e38
            cap.log(loss=loss_at(step))
            cap.next_step()


def test_a_loss_that_jumps_is_a_spike_at_its_step(tmp_path):
    _tiny_run(tmp_path / "run", 30, lambda s: 5.0 - 0.05 * s + 0.01 * ((s * 7) % 3) + (4.0 if s == 22 else 0.0))
    code, res, text = monitor(tmp_path / "run", tmp_path)
    spikes = [(a["code"], a["step"]) for a in res["anomalies"]]
    assert code == 1 and spikes == [("LOSS_SPIKE", 22)], text


def test_an_overflow_is_a_nan_inf_at_its_step(tmp_path):
    _tiny_run(tmp_path / "run", 6, lambda s: 1.0, scale_at=4)
    code, res, text = monitor(tmp_path / "run", tmp_path)
    born = [a for a in res["anomalies"] if a["code"] == "NAN_INF"]
    assert code == 1 and born and born[0]["step"] == 4 and born[0]["tensor"].startswith("1/forward"), text


def test_a_folder_that_is_no_run_is_a_usage_error(tmp_path):
    assert run_cli("monitor", tmp_path / "missing").returncode == 2


def test_data_parallel_ranks_with_their_own_losses_are_not_inconsistent(tmp_path):
    # Each rank's loss is its own batch's; the gradient norm after the all-reduce and the lr agree.
    train.run("ddp", 6, str(tmp_path / "run"))
    code, res, text = monitor(tmp_path / "run", tmp_path)
    assert not [a for a in res["anomalies"] if a["code"] == "RANK_INCONSISTENT"], text
