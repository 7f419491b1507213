"""`parity compare --arrow` writes the CSV's rows and columns, typed, as an Arrow IPC file
(parity.compare.arrow/1, docs/compare-json.md "Arrow"); pyarrow, the reference implementation of the
format, must read it and find, cell by cell, what the CSV of the same run holds.

Inputs a user meets: a real training loop captured in tensor mode (metric columns, logits with KL, a
failing weight), a statistics-mode dump of 2 ranks x 12,000 events (the statistics columns, and more
than one 16,384-row batch), a checksum-mode capture (the bool column), and npy directories with NaN,
an unmatched file, a corrupt file (rows whose metric cells are empty: nulls) and a Latin-1 file name."""
import csv
import math
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import pytest

import capture_helpers
from capture_helpers import run_cli

GEN = r"""
import sys, torch, parity
from parity.examples import SyntheticCorpus, build_model, train
out, mode = sys.argv[1], sys.argv[2]
corpus = SyntheticCorpus(vocab_size=64, n_tokens=1 << 12)
for side in ("golden", "target"):
    model = build_model("llama", "tiny", seed=11)
    if side == "target":
        with torch.no_grad():
            w = dict(model.named_parameters())
            name = next(n for n in w if ".mlp." in n and n.endswith("weight") and w[n].dim() == 2)
            w[name].mul_(1.02)
    with parity.capture(model, f"{out}/{side}", mode=mode, steps=(0,)) as cap:
        train(model, corpus, steps=1, batch_size=2, seq_len=16, capture=cap)
"""

ARROW_KIND = {pa.string(): "text", pa.int64(): "int", pa.float64(): "real", pa.bool_(): "bool"}


def generate(args, timeout=600):
    p = subprocess.run([sys.executable, *map(str, args)], env=capture_helpers.child_env(), capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("arrow")
    generate(["-c", GEN, d / "tensor", "tensor"])
    generate(["-c", GEN, d / "checksum", "checksum"])
    generate([os.path.join(capture_helpers.SOURCE_DIR, "bench", "scaling", "gen_dump.py"), d / "stats", "--ranks", "2",
              "--events", "12000", "--mib-per-rank", "0.25", "--mode", "statistics"])
    rng = np.random.default_rng(5)
    g, t = d / "npy" / "golden", d / "npy" / "target"
    g.mkdir(parents=True)
    t.mkdir(parents=True)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    np.save(g / "ok.npy", a)
    np.save(t / "ok.npy", a + np.float32(1e-3))
    h = rng.standard_normal(32).astype(np.float16)
    np.save(g / "nan.npy", h)
    h[3], h[9] = np.nan, np.inf
    np.save(t / "nan.npy", h)
    np.save(g / "only_golden.npy", np.zeros(3, np.float32))
    np.save(g / "corrupt.npy", a)
    (t / "corrupt.npy").write_bytes(b"\x93NUMPY\x01\x00garbage that is not a header")
    for side in (g, t):  # a Latin-1 file name: not UTF-8, which the Arrow file's text must be
        with open(os.path.join(os.fsencode(side), b"caf\xe9.npy"), "wb") as f:
            np.save(f, a)
    return d


def compare(inputs, tmp_path, which, *extra):
    golden, target = inputs / which / "golden", inputs / which / "target"
    p = run_cli("compare", golden, target, "--csv", tmp_path / "out.csv", "--arrow", tmp_path / "out.arrow", *extra)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    return tmp_path / "out.arrow", tmp_path / "out.csv"


def assert_arrow_holds_the_csv(arrow_path, csv_path):
    """Every column of the CSV, in its order and with its type; every cell the same value: an empty CSV
    cell is a null, a number the same double (nan and inf included), a bool true/false."""
    reader = pa.ipc.open_file(arrow_path)
    table = reader.read_all()
    table.validate(full=True)
    assert table.schema.metadata[b"parity.schema"] == b"parity.compare.arrow/1"
    with open(csv_path, newline="") as f:
        lines = list(csv.reader(f))
    header, body = lines[0], lines[1:]
    assert header[0] == "schema" and table.column_names == header[1:]
    assert table.num_rows == len(body) > 0
    for j, name in enumerate(table.column_names):
        kind = ARROW_KIND[table.schema.field(name).type]
        for i, value in enumerate(table.column(name).to_pylist()):
            cell = body[i][j + 1]
            where = f"row {i}, column {name}: arrow {value!r}, CSV {cell!r}"
            if value is None:
                assert cell == "" and kind != "text", where
            elif kind == "text":
                assert value == cell, where
            elif kind == "int":
                assert value == int(cell), where
            elif kind == "bool":
                assert cell == ("true" if value else "false"), where
            else:
                expected = float(cell)
                assert value == expected or (math.isnan(value) and math.isnan(expected)), where
    return reader, table


def test_tensor_capture(inputs, tmp_path):
    _, table = assert_arrow_holds_the_csv(*compare(inputs, tmp_path, "tensor", "--kl", r"^head/forward/output"))
    kinds = {f.name: ARROW_KIND[f.type] for f in table.schema}
    assert kinds["step"] == kinds["order"] == kinds["max_abs_index"] == "int"
    assert kinds["cosine"] == kinds["noise_ratio"] == "real" and kinds["checksum_equal"] == "bool"
    rows = table.to_pylist()
    assert any(r["verdict"] == "fail" for r in rows)
    assert all(r["cosine"] is not None and r["stats_max_rel"] is None for r in rows)
    # The logits' rows (the head's output) carry a KL, the rest a null (the CSV's empty cell), never 0.
    assert any(r["kl"] is not None for r in rows) and any(r["kl"] is None for r in rows)


def test_statistics_dump_in_several_batches(inputs, tmp_path):
    reader, table = assert_arrow_holds_the_csv(*compare(inputs, tmp_path, "stats"))
    assert table.num_rows == 24_000 and reader.num_record_batches == 2
    assert table.column("stats_norm_rel").null_count == 0 and table.column("cosine").null_count == 24_000


def test_checksum_capture(inputs, tmp_path):
    _, table = assert_arrow_holds_the_csv(*compare(inputs, tmp_path, "checksum"))
    equal = table.column("checksum_equal").to_pylist()
    assert None not in equal and True in equal and False in equal


def test_npy_directories_with_errors(inputs, tmp_path):
    _, table = assert_arrow_holds_the_csv(*compare(inputs, tmp_path, "npy"))
    by_name = {r["name"]: r for r in table.to_pylist()}
    # A 1e-3 offset on fp32 data: cosine 0.999999 passes the fixed rules, the noise model fails it.
    assert by_name["ok.npy"]["verdict"] == "fail" and by_name["ok.npy"]["cosine"] > 0.9999
    assert by_name["nan.npy"]["nonfinite_mismatch"] == 2
    # Bytes that are not UTF-8 are U+FFFD in both files, as in the JSON.
    assert by_name["caf\ufffd.npy"]["verdict"] == "pass"


def test_pandas_reads_it(inputs, tmp_path):
    import pandas as pd  # noqa: PLC0415
    arrow_path, csv_path = compare(inputs, tmp_path, "npy")
    frame = pd.read_feather(arrow_path)
    assert list(frame.columns) == list(pd.read_csv(csv_path).columns[1:])


def test_stdout_and_bad_paths(inputs, tmp_path):
    golden, target = inputs / "npy" / "golden", inputs / "npy" / "target"
    p = subprocess.run([capture_helpers.parity_bin(), "compare", str(golden), str(target), "--arrow", "-"],
                       capture_output=True, timeout=120)
    assert p.returncode == 1 and p.stdout[:6] == b"ARROW1" and b"FAILED" in p.stderr
    assert pa.ipc.open_file(pa.BufferReader(p.stdout)).read_all().num_rows > 0
    p = run_cli("compare", golden, target, "--arrow", "-", "--csv", "-")
    assert p.returncode == 2 and "only one of --json, --csv, --arrow and --msprobe-csv can write to stdout" in p.stderr
    p = run_cli("compare", golden, target, "--arrow", tmp_path / "missing" / "out.arrow")
    assert p.returncode == 2 and "out.arrow" in p.stderr


def test_two_outputs_naming_one_file_are_a_usage_error(inputs, tmp_path):
    """The second output would silently replace the first: refused before anything runs, for every
    command (here compare and curve), however the two paths spell the file."""
    golden, target = inputs / "npy" / "golden", inputs / "npy" / "target"
    (tmp_path / "sub").mkdir()
    p = run_cli("compare", golden, target, "--csv", tmp_path / "rows", "--arrow", tmp_path / "sub" / ".." / "rows")
    assert p.returncode == 2 and "--csv and --arrow both write" in p.stdout + p.stderr
    assert not (tmp_path / "rows").exists()
    p = run_cli("curve", golden, target, "--json", tmp_path / "c.json", "--html", tmp_path / "c.json")
    assert p.returncode == 2 and "--json and --html both write" in p.stdout + p.stderr
