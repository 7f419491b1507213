"""parity eval mc / eval lm-eval on the fixtures (tests/fixtures/eval/): exit codes, schemas, paired
statistics, and parity.log_choices writing what eval mc reads (docs/eval.md)."""
import json
import os
import subprocess

import parity

PARITY = os.environ.get("PARITY_BIN", "parity")
FIX = os.path.join(os.environ.get("PARITY_SOURCE_DIR", "."), "tests", "fixtures", "eval")


def run_cli(*args):
    p = subprocess.run([PARITY, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def test_mc_fixtures():
    rc, out, err = run_cli("eval", "mc", os.path.join(FIX, "mc_golden.jsonl"), os.path.join(FIX, "mc_target.jsonl"),
                           "--json", "-", "--bootstrap", "500")
    assert rc == 1, err
    j = json.loads(out)
    assert j["schema"] == "parity.eval.mc/2"
    assert j["overall"]["mcnemar"]["only_golden"] == 2 and j["overall"]["mcnemar"]["p_value"] == 0.5
    assert [s["group"] for s in j["subjects"]] == ["anatomy", "astronomy"]
    assert j["overall"]["distinguishable"] is False


def test_log_choices_round_trip(tmp_path):
    for q in range(30):
        parity.log_choices(tmp_path / "g.jsonl", q, [-1.0, -2.0, -3.0], 0, subject="s")
        parity.log_choices(tmp_path / "t.jsonl", q, [-1.0, -2.0, -3.0] if q % 10 else [-3.0, -1.0, -2.0], 0,
                           subject="s", length=[1, 1, 1])
    rc, out, err = run_cli("eval", "mc", tmp_path / "g.jsonl", tmp_path / "t.jsonl", "--json", "-")
    j = json.loads(out)
    assert j["overall"]["questions"] == 30
    assert abs(j["overall"]["diff"] + 0.1) < 1e-12  # 3 of 30 flipped: −10 points
    assert rc == 1
    rc, out, err = run_cli("eval", "mc", tmp_path / "g.jsonl", tmp_path / "g.jsonl")
    assert rc == 0 and "PASS" in out


def test_lm_eval_fixtures_and_errors(tmp_path):
    a, b = os.path.join(FIX, "lmeval_a.json"), os.path.join(FIX, "lmeval_b.json")
    sa = os.path.join(FIX, "samples_arc_easy_2024-05-01T12-00-00.123456.jsonl")
    sb = os.path.join(FIX, "samples_arc_easy_2024-05-02T08-30-00.654321.jsonl")
    rc, out, err = run_cli("eval", "lm-eval", a, b, "--samples", sa, sb, "--json", "-", "--bootstrap", "500")
    assert rc == 1, err
    j = json.loads(out)
    assert j["schema"] == "parity.eval.lmeval/2"
    assert j["only_a"] == ["hellaswag"] and j["only_b"] == ["piqa"]
    arc = [m for m in j["metrics"] if m["task"] == "arc_easy" and m["metric"] == "acc"][0]
    assert abs(arc["paired"]["mcnemar"]["p_value"] - 0.625) < 1e-12  # 2·(1 + 4)/16
    rc, out, err = run_cli("eval", "lm-eval", a, a)
    assert rc == 0 and "PASS" in out  # a file against itself
    rc, out, err = run_cli("eval", "lm-eval", a, os.path.join(tmp_path, "missing.json"))
    assert rc == 2 and "missing.json" in err
    rc, out, err = run_cli("eval", "lm-eval", a, b, "--samples", sa)
    assert rc == 2
