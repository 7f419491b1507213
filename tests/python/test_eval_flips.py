"""Answer flips in `parity eval mc` and `parity eval lm-eval` (issue 31 item 3): the questions whose chosen
answer differs between the runs — id, both answers, the correct one, whose was right — counted always,
listed up to --flips N in the terminal and all in the JSON (parity.eval.mc/2, parity.eval.lmeval/2).
lm-eval generation tasks (a gsm8k-style task, `exact_match` under the `strict-match` and
`flexible-extract` filters): per-filter metrics, per-sample pairing and flips from the samples file.
The lm-eval files are written by the real lm_eval package: its RegexFilter (gsm8k's patterns), its
exact_match metric, mean/mean_stderr and EvaluationTracker's results and samples writers."""
import json
import os
import subprocess

import pytest

import parity

PARITY = os.environ.get("PARITY_BIN", "parity")


def cli(*args):
    p = subprocess.run([PARITY, "eval", *map(str, args)], capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    return p.returncode, p.stdout


# ---- eval mc ------------------------------------------------------------------------------------------

def write_mc(path, choices):
    """choices[i]: the choice run picks for question i (its log-likelihood highest); answer is 0."""
    for i, c in enumerate(choices):
        loglik = [-3.0, -3.0, -3.0, -3.0]
        loglik[c] = -1.0
        parity.log_choices(path, "q{}".format(i), loglik, answer=0, subject="math" if i % 2 else "law")


def test_mc_lists_the_flipped_questions(tmp_path):
    golden = [0, 0, 1, 2, 0, 3, 0, 0]
    target = [0, 1, 0, 3, 0, 3, 2, 0]  # q1 golden right, q2 target right, q3 neither, q6 golden right
    write_mc(tmp_path / "g.jsonl", golden)
    write_mc(tmp_path / "t.jsonl", target)
    rc, out = cli("mc", tmp_path / "g.jsonl", tmp_path / "t.jsonl", "--flips", "2", "--json", tmp_path / "mc.json")
    j = json.loads((tmp_path / "mc.json").read_text())
    assert j["schema"] == "parity.eval.mc/2"
    assert j["flips"]["count"] == 4
    assert j["flips"]["list"] == [
        {"id": "q1", "subject": "math", "golden": "0", "target": "1", "answer": "0", "correct": "golden"},
        {"id": "q2", "subject": "law", "golden": "1", "target": "0", "answer": "0", "correct": "target"},
        {"id": "q3", "subject": "math", "golden": "2", "target": "3", "answer": "0", "correct": "neither"},
        {"id": "q6", "subject": "law", "golden": "0", "target": "2", "answer": "0", "correct": "golden"}]
    assert "answer flips: 4 question(s)" in out
    assert "q1" in out and "q2" in out and "q3 " not in out and "2 more" in out, out  # --flips 2
    _, out = cli("mc", tmp_path / "g.jsonl", tmp_path / "g.jsonl")
    assert "answer flips: 0 question(s)" in out


# ---- eval lm-eval: a generation task written by lm_eval's own code ---------------------------------------

TASK = "gsm_tiny"
# gsm8k's two filters (lm_eval/tasks/gsm8k/gsm8k.yaml)
FILTERS = {"strict-match": dict(regex_pattern=r"#### (\-?[0-9\.\,]+)"),
           "flexible-extract": dict(regex_pattern=r"(-?[$0-9.,]{2,})|(-?[0-9]+)", group_select=-1)}
TARGETS = ["12", "7", "30", "41", "5", "18"]
GOLDEN_TEXT = ["3 + 9 = 12. #### 12", "So 7. #### 7", "It is 30 #### 30", "4 tens and 1 is 41 #### 41",
               "Answer 5 #### 5", "18 apples #### 18"]
TARGET_TEXT = ["3 + 9 = 12. #### 12", "So 7. The answer is 7", "It is 31 #### 31", "4 tens and 1 is 41 #### 41",
               "Answer 6 #### 6", "I think 18"]


def write_lm_eval(out, texts):
    from lm_eval.api.metrics import exact_match_hf_evaluate, mean, mean_stderr
    from lm_eval.filters.extraction import RegexFilter
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.utils import hash_string

    gen_kwargs = {"until": ["Question:"], "do_sample": False, "max_gen_toks": 32}
    samples, results = [], {"alias": TASK}
    for name, kw in FILTERS.items():
        filtered = list(RegexFilter(**kw).apply([[t] for t in texts], [{}] * len(texts)))
        scores = []
        for i, (text, f) in enumerate(zip(texts, filtered)):
            em = exact_match_hf_evaluate(predictions=f, references=[TARGETS[i]])["exact_match"]
            scores.append(em)
            doc = {"question": "q{}".format(i), "answer": "#### " + TARGETS[i]}
            ctx = "Question: q{}\nAnswer:".format(i)
            samples.append({"doc_id": i, "doc": doc, "target": TARGETS[i], "arguments": [(ctx, gen_kwargs)],
                            "resps": [[text]], "filtered_resps": f, "filter": name, "metrics": ["exact_match"],
                            "doc_hash": hash_string(json.dumps(doc)), "prompt_hash": hash_string(ctx),
                            "target_hash": hash_string(TARGETS[i]), "exact_match": em})
        results["exact_match," + name] = mean(scores)
        results["exact_match_stderr," + name] = mean_stderr(scores)
    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.log_experiment_args(model_source="hf", model_args="pretrained=tiny",
                                                       system_instruction=None, chat_template=None,
                                                       fewshot_as_multiturn=False)
    tracker.save_results_aggregated(results={"results": {TASK: results}, "n-samples": {
        TASK: {"original": len(texts), "effective": len(texts)}}}, samples={TASK: samples})
    tracker.save_results_samples(task_name=TASK, samples=samples)
    return out


@pytest.fixture(scope="module")
def generation_runs(tmp_path_factory):
    pytest.importorskip("lm_eval")
    d = tmp_path_factory.mktemp("lmeval")
    return write_lm_eval(d / "golden", GOLDEN_TEXT), write_lm_eval(d / "target", TARGET_TEXT)


def test_generation_task_metrics_per_filter_with_paired_samples_and_flips(generation_runs, tmp_path):
    a, b = generation_runs
    rc, out = cli("lm-eval", a, b, "--json", tmp_path / "lm.json")
    j = json.loads((tmp_path / "lm.json").read_text())
    assert j["schema"] == "parity.eval.lmeval/2"
    by_filter = {m["filter"]: m for m in j["metrics"] if m["task"] == TASK and m["metric"] == "exact_match"}
    assert set(by_filter) == set(FILTERS)
    strict, flexible = by_filter["strict-match"], by_filter["flexible-extract"]
    # strict: golden 6/6; target: doc 1 and 5 have no "####" ([invalid]), docs 2 and 4 wrong numbers
    assert (strict["a"], strict["b"]) == (1.0, pytest.approx(2 / 6))
    assert strict["paired"]["questions"] == 6 and strict["paired"]["mcnemar"]["only_golden"] == 4
    assert [(f["doc_id"], f["a"], f["b"], f["answer"], f["correct"]) for f in strict["flips"]["list"]] == [
        ("1", "7", "[invalid]", "7", "a"), ("2", "30", "31", "30", "a"), ("4", "5", "6", "5", "a"),
        ("5", "18", "[invalid]", "18", "a")]
    # flexible-extract takes the last number: docs 1 and 5 are right again, docs 2 and 4 still wrong
    assert (flexible["a"], flexible["b"]) == (1.0, pytest.approx(4 / 6))
    assert [(f["doc_id"], f["b"], f["correct"]) for f in flexible["flips"]["list"]] == [("2", "31", "a"), ("4", "6", "a")]
    assert flexible["paired"]["agreement"] == pytest.approx(4 / 6)
    assert "answer flips gsm_tiny exact_match,strict-match: 4 doc(s)" in out
    assert "answer flips gsm_tiny exact_match,flexible-extract: 2 doc(s)" in out


def test_log_likelihood_flips_from_the_real_lm_eval_fixtures(tmp_path):
    fix = os.path.join(os.environ.get("PARITY_SOURCE_DIR", "."), "tests", "fixtures", "lm_eval")
    _, out = cli("lm-eval", os.path.join(fix, "fp32"), os.path.join(fix, "seed1"), "--json", tmp_path / "lm.json",
                 "--flips", "3")
    j = json.loads((tmp_path / "lm.json").read_text())
    by = {m["metric"]: m for m in j["metrics"]}
    assert by["acc_norm"]["flips"] is None  # acc_norm's length normalisation is not logged per sample
    flips = by["acc"]["flips"]
    same = round(by["acc"]["paired"]["agreement"] * by["acc"]["paired"]["questions"])
    assert flips["count"] == len(flips["list"]) == 12 - same > 0
    for f in flips["list"]:
        assert f["a"] != f["b"] and f["answer"] == "0"  # tiny_add's correct choice is always 0
        assert f["correct"] == {(True, False): "a", (False, True): "b", (False, False): "neither"}[
            (f["a"] == "0", f["b"] == "0")]
    assert "answer flips tiny_add acc: {} doc(s)".format(flips["count"]) in out
    assert "more (--flips N" in out
