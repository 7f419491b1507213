"""The invariance property over a subset of the conformance matrix (issue 28 acceptance; `make bench` runs it
over every architecture, bench/zoo/invariance.py): a row's verdict is the same under two capture levels and
with or without a filter."""
import os
import pathlib
import sys

import pytest

pytest.importorskip("transformers")

import capture_helpers  # noqa: E402

REPO = pathlib.Path(os.environ.get("PARITY_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(REPO))

from bench.zoo import architectures, invariance  # noqa: E402


def test_the_checker_reports_a_row_whose_verdict_differs():
    """The check itself can fail: one row's verdict faked under a filter is reported, with both verdicts."""
    ref = {("a/forward/output/0", 0, 0): {"name": "a/forward/output/0", "verdict": "pass", "noise_ratio": 1.0},
           ("b/forward/output/0", 0, 0): {"name": "b/forward/output/0", "verdict": "warn", "noise_ratio": 9.0}}
    same = {k: dict(v) for k, v in ref.items()}
    assert invariance.differences(ref, same, "filter") == []
    faked = {k: dict(v) for k, v in ref.items()}
    faked[("b/forward/output/0", 0, 0)]["verdict"] = "fail"
    out = invariance.differences(ref, faked, "filter")
    assert [(v["row"], v["verdicts"]) for v in out] == [("b/forward/output/0", ["warn", "fail"])]


# mixtral/bf16: a router's top-k flips; its expert gradients keep their verdict under `--include /backward/`,
# which hides the forward decision, and at module level. t5/bf16: one row kept by `--include` pairs as it
# does unfiltered (by order alignment), not by its name alone.
@pytest.mark.parametrize("arch,column", [("llama", "bf16"), ("bert", "stats_op"), ("mixtral", "bf16"), ("t5", "bf16")])
def test_verdicts_do_not_depend_on_capture_level_or_filters(tmp_path, arch, column):
    rec = invariance.check_cell(architectures.BY_NAME[arch], invariance.COLUMNS[column], tmp_path,
                                binary=capture_helpers.parity_bin())
    assert rec["status"] == "run", rec
    checked = {c["check"].split(" ")[0] + " " + c["check"].split(" ")[1]: c["rows"] for c in rec["checks"]}
    assert checked.get("include block", 0) > 0 and checked.get("include /backward/", 0) > 0, rec["checks"]
    assert next(c["rows"] for c in rec["checks"] if c["check"].startswith("levels")) > 0, rec["checks"]
    assert rec["violations"] == [], rec["violations"][:5]
