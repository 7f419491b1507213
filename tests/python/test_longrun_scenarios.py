"""The long-run example (bench/longrun, issue 30 §4 and §2), short: its scenarios captured with optimizer states and updates
over 12 steps and compared by `parity compare` in statistics mode. A rerun passes with every optimizer record paired;
AdamW's eps differing fails first on the update of the first step that moves the weights (the schedule's warmup
makes step 0's lr 0), then on exp_avg_sq (second moments of gradients that now differ). The divergence timeline of
every single-process scenario names its first step, tensor and cause, and the eps suspects rank the optimizer of that
step first. The full 300-step tables are `python -m bench.longrun.run` (docs/benchmarks.md "Optimizer states")."""
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


# The divergence timeline (issue 30 §2, docs/timeline.md) of each single-process scenario over the same 12 steps:
# (first step, a part of the first tensor's name, its phase, the cause, a configuration key the cause names);
# None: nothing grows beyond the accumulated rounding (bf16 autocast's drift included).
TIMELINE = {
    "rerun": None,
    "bf16": None,
    "scaled": None,
    "eps": (1, "/optimizer/update/", "update", "optimizer", "optimizer.0.param_groups.0.eps"),
    "beta2": (0, "/optimizer/exp_avg_sq/", "optimizer_state", "optimizer", "optimizer.0.param_groups.0.betas"),
    "clip_before_unscale": (0, "<global>/optimizer/grad_norm/", "clipping", "reduction", None),
    "bf16_master": (1, "layernorm/optimizer/update/", "update", "optimizer", "model.parameter_dtypes.bfloat16"),
    "lr_off_by_one": (0, "<global>/optimizer/lr/", "lr", "config", "optimizer.0.param_groups.0.lr"),
}


@pytest.mark.parametrize("name", sorted(TIMELINE))
def test_timeline_names_the_step_tensor_and_cause(out, name):
    r = run.run_scenario(name, STEPS, out, parity_bin())
    t = r["timeline"]
    assert t is not None, r  # 12 steps: the comparison spans many steps
    want = TIMELINE[name]
    if want is None:
        assert t["first"] is None and t["cause"] is None, t
        return
    step, part, phase, cause, key = want
    assert t["first"][0] == step and part in t["first"][1] and t["first"][2] == phase, t
    assert t["cause"] == cause, t
    assert key is None or key in t["config_keys"], t


def test_eps_top_suspect_is_the_first_differing_optimizer_step(out):
    """An optimizer event's inputs are its gradients, the step's lr/clip and its own previous state: a late step
    whose moments carry the difference is no source; the update of step 1 is (issue 30, the suspects)."""
    r = run.run_scenario("eps", STEPS, out, parity_bin())
    step, event = r["top_suspect"]
    assert step == 1 and event.endswith("/optimizer"), r
    with open(os.path.join(out, "eps-{}.json".format(STEPS))) as f:
        suspects = json.load(f)["suspects"]
    sources = [s for s in suspects if s["kind"] == "source" and s["direction"] == "optimizer"]
    assert sources and min(s["step"] for s in sources) == 1, suspects
    # every optimizer source that ranks is at the first step where the update differs
    assert all(s["step"] == 1 for s in suspects[:5]), [(s["step"], s["event"]) for s in suspects[:5]]
