"""`parity curve` on TensorBoard log directories holding several runs (issue 31 item 3), written by the
real `torch.utils.tensorboard.SummaryWriter`: several runs are an error naming each (exit 2), never one
merged curve; `--run NAME` picks one in both inputs, `--golden-run` / `--target-run` one per input; a
directory of one run, at its top or in one subfolder, still reads without a name."""
import importlib.util
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                                reason="tensorboard (PyPI) not installed")

PARITY = os.environ.get("PARITY_BIN", "parity")
STEPS = 12
# run folder (relative to the log directory) -> scale of its loss curve
RUNS = {"fp32": 1.0, "bf16": 1.05, "sweep/lr3": 0.5}


def loss(scale, step):
    return scale * (3.0 - 0.1 * step)


def write_run(logdir, scale):
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(log_dir=str(logdir))
    for s in range(STEPS):
        w.add_scalar("train/loss", loss(scale, s), s)
    w.close()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tb") / "logs"
    for name, scale in RUNS.items():
        write_run(d / name, scale)
    return d


def cli(*args):
    p = subprocess.run([PARITY, "curve", *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def curve_json(*args):
    rc, out, err = cli(*args, "--json", "-")
    assert rc in (0, 1), err
    return rc, json.loads(out)


def golden_and_target_losses(j):
    m = next(m for m in j["metrics"] if m["metric"] == "loss")
    return [p["golden"] for p in m["points"]], [p["target"] for p in m["points"]]


def float32_losses(scale):
    return [float(np.float32(loss(scale, s))) for s in range(STEPS)]  # SummaryWriter stores float32


def test_several_runs_are_an_error_naming_each(logs):
    rc, out, err = cli(logs, logs)
    assert rc == 2 and out == "", out
    assert "3 runs" in err and "never merged" in err and "--run" in err, err
    for name in RUNS:
        assert name + " (1 event file)" in err, err


def test_golden_run_and_target_run_pick_one_each(logs):
    rc, j = curve_json(logs, logs, "--golden-run", "fp32", "--target-run", "bf16")
    assert rc == 1 and j["verdict"] == "fail", j  # a 5 % higher loss
    assert j["golden"]["path"].endswith("fp32") and j["target"]["path"].endswith("bf16"), (j["golden"], j["target"])
    g, t = golden_and_target_losses(j)
    assert g == float32_losses(RUNS["fp32"]) and t == float32_losses(RUNS["bf16"])
    rc, j = curve_json(logs, logs, "--golden-run", "sweep/lr3", "--target-run", "sweep/lr3")
    assert rc == 0 and golden_and_target_losses(j)[0] == float32_losses(RUNS["sweep/lr3"])


def test_run_names_the_run_in_both_inputs(logs, tmp_path):
    again = tmp_path / "again"
    shutil.copytree(logs, again)
    rc, j = curve_json(logs, again, "--run", "bf16")
    assert rc == 0 and j["verdict"] == "pass", j
    assert golden_and_target_losses(j) == (float32_losses(RUNS["bf16"]),) * 2
    # --target-run overrides --run for its side
    rc, j = curve_json(logs, again, "--run", "fp32", "--target-run", "bf16")
    assert rc == 1 and golden_and_target_losses(j)[1] == float32_losses(RUNS["bf16"])


def test_an_unknown_run_or_a_run_of_another_input_is_an_error(logs, tmp_path):
    rc, _, err = cli(logs, logs, "--run", "nope")
    assert rc == 2 and 'no TensorBoard run "nope"' in err and "fp32" in err and "sweep/lr3" in err, err
    csv = tmp_path / "loss.csv"
    csv.write_text("step,loss\n" + "".join("{},{}\n".format(s, loss(1.0, s)) for s in range(STEPS)))
    rc, _, err = cli(csv, logs, "--run", "fp32")
    assert rc == 2 and "loss.csv: is a csv input" in err, err


def test_a_single_run_reads_without_a_name(logs, tmp_path):
    rc, j = curve_json(logs / "fp32", logs / "bf16")
    assert rc == 1 and golden_and_target_losses(j) == (float32_losses(1.0), float32_losses(1.05))
    # one run in a subfolder (Trainer's output_dir/runs/<date>_<host>) is the only run: read as before
    write_run(tmp_path / "out" / "runs" / "Dec05_17-00-00_host", 1.0)
    rc, j = curve_json(tmp_path / "out", logs / "fp32")
    assert rc == 0 and golden_and_target_losses(j)[0] == float32_losses(1.0)


def test_event_files_at_the_top_and_in_a_subfolder_are_two_runs(tmp_path):
    write_run(tmp_path / "logs", 1.0)
    write_run(tmp_path / "logs" / "eval", 2.0)
    rc, _, err = cli(tmp_path / "logs", tmp_path / "logs")
    assert rc == 2 and ". (1 event file)" in err and "eval (1 event file)" in err, err
    rc, j = curve_json(tmp_path / "logs", tmp_path / "logs", "--golden-run", ".", "--target-run", "eval")
    assert golden_and_target_losses(j) == (float32_losses(1.0), float32_losses(2.0))
