"""The `make test` subset of the conformance matrix (bench/zoo, issue 28 item 8): every architecture once,
in the bf16-cast recipe (golden fp32 eager, target `model.to(torch.bfloat16)`, one training step captured
in tensor mode at mix level), compared with the real `parity compare --json` and judged by the matrix's
acceptance rule (bench/zoo/cell.py: not FAILED, no cause beyond CONFIG_DIFF / ACCUMULATION_NOISE /
LOSS_SCALE / a flip finding).

Cells that miss today are listed in bench/zoo/known_misses.json ({cell: reason}); the test asserts that
exactly those cells miss: a listed cell that now passes fails with "remove it from the ledger", an
unlisted miss fails with its first divergence and diagnosis. Two worker processes (bench/zoo/run.py's
pool); about a minute on 2 cores."""
import json
import os
import pathlib
import sys

import pytest

pytest.importorskip("transformers")

REPO = pathlib.Path(os.environ.get("PARITY_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(REPO))

from bench.zoo import architectures, run  # noqa: E402

RECIPE = "bf16"
LEDGER = REPO / "bench" / "zoo" / "known_misses.json"


def ledger():
    return json.loads(LEDGER.read_text())


@pytest.fixture(scope="module")
def records():
    cells = [(a.name, RECIPE) for a in architectures.ARCHS]
    return {r["cell"]: r for r in run.run_cells(cells)}


def explain(rec):
    fd = rec.get("first_divergence") or {}
    return "{}: {}; first divergence {} ({}); diagnosis {}; headline {!r}{}".format(
        rec["cell"], "; ".join(rec.get("misses") or []), fd.get("name"), fd.get("reason"),
        [c["code"] for c in rec.get("codes") or []], rec.get("headline"),
        "\n" + rec["error"] if rec.get("error") else "")


def test_ledger_lists_only_cells_of_this_subset():
    cells = {"{}/{}".format(a.name, RECIPE) for a in architectures.ARCHS}
    assert set(ledger()) <= cells, sorted(set(ledger()) - cells)
    assert all(isinstance(v, str) and v.strip() for v in ledger().values())


@pytest.mark.parametrize("arch", [a.name for a in architectures.ARCHS])
def test_bf16_cell_matches_ledger(records, arch):
    rec = records["{}/{}".format(arch, RECIPE)]
    assert rec["status"] == "run", explain(rec)
    assert rec["rows"] > 20, explain(rec)
    known = ledger().get(rec["cell"])
    if known is None:
        assert rec["ok"], "unlisted miss: " + explain(rec)
    else:
        assert not rec["ok"], "{} passes now: remove it from the ledger ({})".format(rec["cell"], known)
