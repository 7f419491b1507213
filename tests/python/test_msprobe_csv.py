"""`parity compare --msprobe-csv / --msprobe-xlsx` (src/report/compare_msprobe.cpp, docs/compare-json.md
"msprobe") against the real msprobe: the real mindstudio-probe PrecisionDebugger dumps a small model twice
(golden, and a target with one fault: the second Linear's weight off by 5 %), in task tensor and task
statistics; msprobe's own compare (pt_compare) writes its compare_result CSV and xlsx of each pair of dumps;
parity compare writes its msprobe-layout CSV and xlsx of the same dumps. A dashboard script written against
msprobe's output runs unchanged on all four files; the columns, sheet, cell kinds and the pairing of names are
msprobe's, and the metrics agree within the tolerances of docs/compare-json.md where the definitions agree."""
import glob
import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("msprobe") is None,
                                reason="mindstudio-probe is not installed in this Python")

import pandas as pd  # noqa: E402
import openpyxl  # noqa: E402
import torch  # noqa: E402

import test_msprobe as tm  # noqa: E402  (its model, dump script and dump-folder helper)

# One fault: only the second Linear's weight differs in the target.
FAULT_GEN = tm.GEN.replace("for p in model.parameters():", "for p in [model.layers[1].weight]:")
assert FAULT_GEN != tm.GEN

TORCH_DTYPES = ("torch.float32", "torch.float16", "torch.bfloat16", "torch.float64")


def make_dump(out, task, perturb):
    p = subprocess.run([sys.executable, "-c", FAULT_GEN, task, "mix", str(out), str(perturb)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return tm.rank_dir(out)


@pytest.fixture(scope="module", params=["tensor", "statistics"])
def outputs(request, tmp_path_factory):
    """msprobe's and parity's CSV and xlsx of one pair of dumps of task `request.param`."""
    from msprobe.pytorch.compare.pt_compare import pt_compare

    task = request.param
    base = tmp_path_factory.mktemp(f"msprobe_csv_{task}")
    golden = make_dump(base / "golden", task, 0.0)
    target = make_dump(base / "target", task, 0.05)
    files = {"task": task, "golden": golden, "target": target}
    for ext, xlsx in (("csv", False), ("xlsx", True)):
        out = base / f"msprobe_{ext}"
        out.mkdir()
        # msprobe's NPU side is parity's target, its Bench side parity's golden.
        pt_compare({"npu_path": os.path.join(target, "dump.json"), "bench_path": os.path.join(golden, "dump.json"),
                    "is_print_compare_log": False}, str(out), xlsx=xlsx)
        (files[f"msprobe_{ext}"],) = glob.glob(str(out / f"compare_result_*.{ext}"))
    files["parity_csv"], files["parity_xlsx"] = str(base / "parity.csv"), str(base / "parity.xlsx")
    p = subprocess.run([tm.PARITY, "compare", golden, target, "-q", "--msprobe-csv", files["parity_csv"],
                        "--msprobe-xlsx", files["parity_xlsx"]], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)  # the fault fails the run
    return files


def read(path):
    """How a script reads msprobe's result: pandas, with openpyxl for the workbook."""
    if path.endswith(".xlsx"):
        return pd.read_excel(path, engine="openpyxl")
    return pd.read_csv(path)


def dashboard(df):
    """A dashboard written against msprobe's compare_result (columns by msprobe's names, its words)."""
    report = {"rows": len(df), "results": df["Result"].value_counts().to_dict()}
    report["messages"] = [m for cell in df["Err_message"] for m in json.loads(cell)]
    report["failing"] = df.loc[df["Result"] == "error", "NPU Name"].tolist()
    matched = df[df["Bench Name"] != "N/A"]
    if "MaxAbsErr" in df.columns:  # tensor mode ("all")
        worst = matched.assign(err=pd.to_numeric(matched["MaxAbsErr"], errors="coerce"),
                               cos=pd.to_numeric(matched["Cosine"], errors="coerce"))
        worst = worst.sort_values("err", ascending=False, kind="stable")
        report["worst"] = worst[["NPU Name", "err", "cos"]].head(5).values.tolist()
        report["low_cosine"] = worst.loc[worst["cos"] < 0.99, "NPU Name"].tolist()
    else:  # statistics mode ("summary"): relative errors are texts in percent
        rel = pd.to_numeric(matched["NormRelativeErr"].astype(str).str.rstrip("%"), errors="coerce")
        worst = matched.assign(err=rel).sort_values("err", ascending=False, kind="stable")
        report["worst"] = worst[["NPU Name", "err", "L2norm diff"]].head(5).values.tolist()
        report["over_half"] = worst.loc[worst["err"] > 50, "NPU Name"].tolist()
    return report


def by_name(df):
    return {r["NPU Name"]: r for r in df.to_dict("records")}


def test_the_dashboard_runs_unchanged_and_sees_the_fault(outputs):
    reports = {k: dashboard(read(outputs[k])) for k in ("msprobe_csv", "msprobe_xlsx", "parity_csv", "parity_xlsx")}
    for k, r in reports.items():
        assert r["rows"] > 20 and r["worst"], (k, r)
        assert set(r["results"]) <= {"pass", "warning", "error"}, (k, r["results"])
    # The two files of each tool say the same.
    assert reports["parity_csv"]["failing"] == reports["parity_xlsx"]["failing"]
    assert reports["msprobe_csv"]["failing"] == reports["msprobe_xlsx"]["failing"]
    # Parity fails the faulty Linear's output and nothing before it: its input and the first layer match.
    p = reports["parity_csv"]
    assert "Functional.linear.1.forward.output.0" in p["failing"], p["failing"]
    assert not [n for n in p["failing"] if n.startswith(("Functional.linear.0.forward", "Torch.relu.0.forward"))], p
    assert all(m.startswith(("error: ", "warning: ")) for m in p["messages"]), p["messages"][:3]
    # Where the definitions agree the worst rows are the same rows with the same error.
    worst_m, worst_p = reports["msprobe_csv"]["worst"], p["worst"]
    for (_, em, *_), (_, ep, *_) in zip(worst_m, worst_p):
        assert math.isclose(em, ep, rel_tol=1e-6), (worst_m, worst_p)


def test_columns_sheet_and_cell_kinds_are_msprobes(outputs):
    for ext in ("csv", "xlsx"):
        m, p = read(outputs[f"msprobe_{ext}"]), read(outputs[f"parity_{ext}"])
        assert list(p.columns) == list(m.columns), (ext, list(p.columns), list(m.columns))
    mw, pw = openpyxl.load_workbook(outputs["msprobe_xlsx"]), openpyxl.load_workbook(outputs["parity_xlsx"])
    assert pw.sheetnames == mw.sheetnames == ["Sheet1"]
    assert pw.properties.description.startswith("parity.compare.msprobe/1: "), pw.properties.description
    # Each cell is stored as msprobe stores it (number, text or boolean), row by row of the same names;
    # msprobe's stack cell holds a call stack where parity, which does not read stack.json, writes N/A.
    mrows = {r[0].value: r for r in mw.active.iter_rows(min_row=2)}
    header = [c.value for c in next(pw.active.iter_rows(max_row=1))]
    checked = 0
    for prow in pw.active.iter_rows(min_row=2):
        mrow = mrows[prow[0].value]
        for h, pc, mc in zip(header, prow, mrow):
            if h == "NPU_Stack_Info":
                assert pc.value == "N/A"
                continue
            assert pc.data_type == mc.data_type, (prow[0].value, h, pc.value, mc.value)
            if h in ("NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
                     "NPU Requires_grad", "Bench Requires_grad", "Requires_grad Consistent", "Data_name"):
                assert pc.value == mc.value, (prow[0].value, h, pc.value, mc.value)
            checked += 1
    assert checked > 20 * len(header) // 2


def test_rows_pair_the_same_names(outputs):
    m, p = by_name(read(outputs["msprobe_csv"])), by_name(read(outputs["parity_csv"]))
    # msprobe also lists non-tensor arguments (ints, floats, None outputs); parity compares tensors only.
    tensors = {n for n, r in m.items() if r["NPU Dtype"] in TORCH_DTYPES}
    assert set(p) == tensors, (sorted(set(p) ^ tensors))
    for name, row in p.items():
        assert row["Bench Name"] == m[name]["Bench Name"], name
    # In the NPU dump's order, as msprobe lists them.
    order = [n for n in read(outputs["msprobe_csv"])["NPU Name"] if n in p]
    assert list(read(outputs["parity_csv"])["NPU Name"]) == order


def test_numbers_are_spelled_as_pandas_writes_them(outputs):
    """The statistics both tools take from dump.json are the same doubles: their CSV text is identical
    (Python's repr, as pandas writes a float), whatever the magnitude."""
    import csv

    def cells(path):
        with open(path, newline="") as f:
            return {r["NPU Name"]: r for r in csv.DictReader(f)}

    m, p = cells(outputs["msprobe_csv"]), cells(outputs["parity_csv"])
    spelled = 0
    for name, row in p.items():
        for col in ("NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean",
                    "Bench l2norm"):
            assert row[col] == m[name][col], (name, col, row[col], m[name][col])
            spelled += 1
    assert spelled >= 8 * 20


def num(x):
    try:
        return float(str(x).rstrip("%"))
    except ValueError:
        return None  # msprobe's words: "unsupported", "N/A", "Nan"


def test_metrics_agree_where_the_definitions_agree(outputs):
    m, p = by_name(read(outputs["msprobe_csv"])), by_name(read(outputs["parity_csv"]))
    stats_cols = [f"{side} {s}" for side in ("NPU", "Bench") for s in ("max", "min", "mean", "l2norm")]
    counts = {}

    def agree(col, name, tol_rel, tol_abs=0.0):
        mv, pv = m[name][col], p[name][col]
        if num(mv) is None or num(pv) is None:
            assert str(mv) == str(pv), (name, col, mv, pv)  # the same word where msprobe writes one
        else:
            assert math.isclose(num(mv), num(pv), rel_tol=tol_rel, abs_tol=tol_abs), (name, col, mv, pv)
        counts[col] = counts.get(col, 0) + 1

    for name in p:
        for col in stats_cols:  # both read dump.json's statistics: exactly equal
            agree(col, name, 0.0)
        if outputs["task"] == "statistics":
            for col in ("Max diff", "Min diff", "Mean diff", "L2norm diff"):
                agree(col, name, 1e-12, 1e-300)
            for col in ("MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr"):
                agree(col, name, 1e-9)
            continue
        agree("MaxAbsErr", name, 0.0, 1e-12)  # msprobe rounds to 12 decimals
        agree("EucDist", name, 1e-9)
        cos = num(m[name]["Cosine"])  # msprobe rounds a cosine above 0.9999 to 6 decimals, others to 12
        agree("Cosine", name, 0.0, 5e-7 if cos is not None and cos > 0.9999 else 1e-11)
        n = math.prod(json.loads(p[name]["NPU Tensor Shape"])) or 1
        for col in ("One Thousandth Err Ratio", "Five Thousandths Err Ratio"):
            agree(col, name, 0.0, 2.0 / n + 1e-12)  # float32 vs float64 relative error at the threshold
        # MaxRelativeErr: msprobe divides in float32, parity in float64; at a golden zero the two epsilons
        # differ by definition (docs/formats.md), so it is checked where the golden holds no zero.
        bench = torch.load(os.path.join(outputs["golden"], "dump_tensor_data", name + ".pt"), weights_only=True)
        if bool((bench != 0).all()):
            agree("MaxRelativeErr", name, 1e-6, 1e-12)
    assert min(counts.values()) >= 20, counts
