"""The long-run example (bench/longrun, issue 30 §4), short: its scenarios captured with optimizer states and updates
over 12 steps and compared by `parity compare` in statistics mode. A rerun passes with every optimizer record paired;
AdamW's eps differing fails first on the update of the first step that moves the weights (the schedule's warmup
makes step 0's lr 0), then on exp_avg_sq (second moments of gradients that now differ). The full 300-step table is
`python -m bench.longrun.run` (docs/benchmarks.md "Optimizer states")."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("PARITY_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, os.path.join(SOURCE_DIR, "bench"))

import pytest  # noqa: E402

from capture_helpers import parity_bin  # noqa: E402
from longrun import run, train  # noqa: E402

STEPS = 12


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    """One folder for the module: the baseline is captured once and compared with both."""
    return str(tmp_path_factory.mktemp("longrun"))


def test_rerun_passes_with_the_optimizer_rows_paired(out):
    r = run.run_scenario("rerun", STEPS, out, parity_bin())
    assert (r["exit_code"], r["verdict"]) == (0, "pass"), r
    per_step = 3 + sum(4 for _ in train.build_model().parameters())  # lr, grad_norm, clip_factor; 4 per parameter
    assert r["optimizer_rows"] == STEPS * per_step and r["optimizer_unpaired"] == 0, r
    assert r["first_fail"] is None and r["config_diff"] == []


def test_eps_fails_on_the_update_then_on_exp_avg_sq(out):
    r = run.run_scenario("eps", STEPS, out, parity_bin())
    assert (r["exit_code"], r["verdict"]) == (1, "fail"), r
    step, name = r["first_optimizer_fail"]
    assert step == 1 and "/optimizer/update/" in name, r  # step 0 has lr 0: nothing moves in either run
    assert r["first_fail"][0] == 1, r  # nothing of the model differs before the optimizer's step 1
    assert r["config_diff"] == ["optimizer.0.param_groups.0.eps"], r
    with open(os.path.join(out, "eps-{}.json".format(STEPS))) as f:
        rows = json.load(f)["rows"]
    sq = [x["step"] for x in rows if x["role"] == "exp_avg_sq" and x["verdict"] == "fail"]
    assert sq and min(sq) == 2, sq  # the gradients of step 2 are the first computed from other weights
