"""End-to-end tests of `parity compare` (the real binary, $PARITY_BIN) on files written with numpy:
exit codes 0/1/2, the parity.compare/1 JSON and the CSV, unmatched names, thresholds, and the
bad-input matrix of issue 2 §7 (each case ends in a clear message naming the file, never a crash)."""
import csv
import json
import os
import struct
import subprocess

import numpy as np
import pytest

import parity

PARITY = os.environ.get("PARITY_BIN", "parity")


def run(*args, check_no_crash=True):
    p = subprocess.run([PARITY, "compare", *map(str, args)], capture_output=True, text=True, timeout=120)
    if check_no_crash:
        # 3 = internal error; negative = killed by a signal. Neither is acceptable for bad input.
        assert p.returncode in (0, 1, 2), f"rc={p.returncode}\n{p.stdout}\n{p.stderr}"
        assert "internal error" not in p.stderr
    return p


def run_overflow(*args):
    p = subprocess.run([PARITY, "overflow", *map(str, args)], capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1, 2) and "internal error" not in p.stderr, f"rc={p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def compare_json(*args):
    p = run(*args, "--json", "-", "-q")
    return p.returncode, json.loads(p.stdout), p


def write_safetensors(path, tensors, header_override=None, truncate=0):
    """Minimal safetensors writer: u64 little-endian header length, JSON header, raw data."""
    header, blobs, offset = {}, [], 0
    names = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64"}
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": names[arr.dtype], "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if header_override:
        header.update(header_override)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    data = struct.pack("<Q", len(h)) + h + b"".join(blobs)
    if truncate:
        data = data[:-truncate]
    path.write_bytes(data)


@pytest.fixture
def dirs(tmp_path):
    g, t = tmp_path / "golden", tmp_path / "target"
    g.mkdir()
    t.mkdir()
    return g, t


def rnd(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- exit codes, JSON, CSV --------------------------------------------------------------------------

def test_identical_directories_pass_with_exit_0(dirs):
    g, t = dirs
    for i in range(3):
        a = rnd((8, 16), i)
        np.save(g / f"l{i}.npy", a)
        np.save(t / f"l{i}.npy", a)
    p = run(g, t)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PASSED" in p.stdout
    rc, doc, _ = compare_json(g, t)
    assert rc == 0
    assert doc["schema"] == "parity.compare/1"
    assert doc["summary"]["verdict"] == "pass"
    assert doc["summary"]["pass"] == 3
    assert doc["summary"]["exit_code"] == 0


def test_json_schema_keys_and_differences_exit_1(dirs):
    g, t = dirs
    a = rnd((32, 32))
    np.save(g / "good.npy", a)
    np.save(t / "good.npy", a * (1 + 1e-7))  # ~1.7 fp32 roundings: noise
    np.save(g / "bad.npy", a)
    b = a.copy()
    b[:, :16] *= -1
    np.save(t / "bad.npy", b)
    rc, doc, p = compare_json(g, t)
    assert rc == 1
    for key in ["schema", "parity_version", "command", "elapsed_seconds", "golden", "target", "thresholds",
                "summary", "rows", "unmatched", "problems", "notes"]:
        assert key in doc, key
    rows = {r["name"]: r for r in doc["rows"]}
    assert rows["good.npy"]["verdict"] == "pass"
    assert rows["bad.npy"]["verdict"] == "fail"
    assert "cosine" in rows["bad.npy"]["reason"]
    assert rows["bad.npy"]["fixed_verdict"] == "fail" and rows["bad.npy"]["noise"] == "structural"
    assert doc["summary"]["policy"] == "noise-model"
    m = rows["bad.npy"]["metrics"]
    for key in ["cosine", "euclidean", "rel_l2", "rmse", "sqnr_db", "max_abs", "max_abs_index", "mean_abs", "max_rel",
                "thousandth_ratio", "five_thousandth_ratio", "frac_abs_gt_1e6", "ulp_max", "nonfinite_agree",
                "ftz_count", "kl", "golden_stats", "target_stats"]:
        assert key in m, key
    # numpy fp64 cross-check of two metrics
    d = b.astype(np.float64) - a.astype(np.float64)
    assert m["max_abs"] == pytest.approx(np.abs(d).max(), rel=1e-12)
    cos = (a.astype(np.float64) * b).sum() / np.linalg.norm(a.astype(np.float64)) / np.linalg.norm(b.astype(np.float64))
    assert m["cosine"] == pytest.approx(cos, rel=1e-12)
    assert doc["summary"]["fail"] == 1 and doc["summary"]["verdict"] == "fail"


def test_streamed_json_equals_the_library_document(dirs):
    """`--json` is written row by row (write_compare_report_json); it must be the very document the
    library's serializer builds (parity.compare, compare_report_to_json), with rows in order."""
    import parity

    g, t = dirs
    for i in range(40):
        a = rnd((8, 8))
        np.save(g / f"t{i:02d}.npy", a)
        np.save(t / f"t{i:02d}.npy", a * (1 + (i % 3) * 1e-3))
    np.save(t / "only_target.npy", rnd((2,)))
    rc, doc, _ = compare_json(g, t)
    lib = parity.compare(g, t)
    for d in (doc, lib):
        d.pop("elapsed_seconds")
        d.pop("command")
        assert len(d.pop("peak_resident_bytes")) == 1  # one process: its own peak memory
    assert rc == lib["summary"]["exit_code"] == 1
    assert doc == lib
    assert [r["name"] for r in doc["rows"]] == [r["name"] for r in lib["rows"]] and len(doc["rows"]) == 40


def test_noise_model_decides_the_verdict_both_ways(dirs):
    """Issue 10's plain-file cases: an fp32 pair 1e-3 apart (16,000 fp32 roundings) and a 2 % perturbation
    fail although their cosines pass the fixed thresholds; a bf16 cast of large activations (max abs 16 > 1,
    the fixed rule) passes because it is exactly one bf16 rounding. --fixed-thresholds restores the fixed
    verdicts."""
    g, t = dirs
    a = rnd((64, 64))
    np.save(g / "scaled.npy", a)
    np.save(t / "scaled.npy", a * np.float32(1 + 1e-3))
    rng = np.random.default_rng(7)
    emb = rnd((128, 32), 3)
    np.save(g / "embedding.npy", emb)
    np.save(t / "embedding.npy", (emb * (1 + 0.02 * rng.standard_normal(emb.shape))).astype(np.float32))
    rc, doc, _ = compare_json(g, t)
    rows = {r["name"]: r for r in doc["rows"]}
    assert rc == 1 and doc["summary"]["verdict"] == "fail"
    for name in ("scaled.npy", "embedding.npy"):
        assert rows[name]["noise"] == "structural", rows[name]
        assert rows[name]["verdict"] == "fail", rows[name]["reason"]
        assert rows[name]["fixed_verdict"] != "fail"
    rc, doc, _ = compare_json(g, t, "--fixed-thresholds")
    assert doc["summary"]["policy"] == "fixed-thresholds"
    assert {r["name"]: r["verdict"] for r in doc["rows"]}["scaled.npy"] == "pass"


def test_csv_loads_with_pandas_defaults_and_one_line_per_pair(dirs, tmp_path):
    g, t = dirs
    for i in range(4):
        np.save(g / f"x{i}.npy", rnd(10, i))
        np.save(t / f"x{i}.npy", rnd(10, i))
    out = tmp_path / "out.csv"
    p = run(g, t, "--csv", out)
    assert p.returncode == 0
    lines = out.read_text().splitlines()
    assert lines[0].startswith("schema,name,target_name,")
    rows = list(csv.DictReader(lines))
    assert len(rows) == 4 and {r["schema"] for r in rows} == {"parity.compare.csv/2"}
    pandas = pytest.importorskip("pandas")
    df = pandas.read_csv(out)  # defaults: no comment line to skip
    assert len(df) == 4 and list(df["schema"].unique()) == ["parity.compare.csv/2"]
    assert df["cosine"].astype(float).tolist() == pytest.approx([1.0] * 4)
    assert {r["verdict"] for r in rows} == {"pass"}
    assert float(rows[0]["cosine"]) == pytest.approx(1.0)


def test_unmatched_names_are_listed_and_exit_1(dirs):
    g, t = dirs
    np.save(g / "common.npy", rnd(4))
    np.save(t / "common.npy", rnd(4))
    np.save(g / "only_golden.npy", rnd(4))
    np.save(t / "only_target.npy", rnd(4))
    p = run(g, t)
    assert p.returncode == 1
    assert "only_golden.npy" in p.stdout and "only_target.npy" in p.stdout
    rc, doc, _ = compare_json(g, t)
    assert [r["name"] for r in doc["unmatched"]["golden"]] == ["only_golden.npy"]
    assert [r["name"] for r in doc["unmatched"]["target"]] == ["only_target.npy"]
    assert doc["summary"]["verdict"] == "fail"  # could not be compared: cannot pass


def test_npz_and_safetensors_pair_by_member_name(tmp_path):
    a, b = rnd((4, 4), 1), rnd((3,), 2)
    np.savez(tmp_path / "g.npz", a=a, b=b)
    write_safetensors(tmp_path / "t.safetensors", {"a": a, "b": b})
    rc, doc, p = compare_json(tmp_path / "g.npz", tmp_path / "t.safetensors")
    # Member names differ in form between formats only if the readers say so; both are the keys here.
    names = sorted(r["name"] for r in doc["rows"])
    assert rc == 0, p.stderr + json.dumps(doc["unmatched"])
    assert names == ["a", "b"]


def test_usage_errors_exit_2(tmp_path):
    np.save(tmp_path / "a.npy", rnd(3))
    p = run(tmp_path / "a.npy", tmp_path / "missing.npy")
    assert p.returncode == 2
    assert "missing.npy" in p.stderr
    p = run(tmp_path / "a.npy")
    assert p.returncode == 2
    p = run(tmp_path / "a.npy", tmp_path / "a.npy", "--sort", "sideways")
    assert p.returncode == 2


def test_a_side_without_readable_tensors_is_no_usable_input(dirs):
    g, t = dirs
    np.save(g / "a.npy", rnd(3))
    p = run(g, t)  # empty target directory
    assert p.returncode == 2
    assert "no usable input" in p.stderr and str(t) in p.stderr
    make_truncated_npy(t / "a.npy")  # only an unreadable file: still nothing usable
    p = run(g, t)
    assert p.returncode == 2
    assert "a.npy" in p.stdout  # the unreadable file is named


def test_thresholds_file_flags_and_show_thresholds(tmp_path):
    p = run("--show-thresholds")
    assert p.returncode == 0
    th = json.loads(p.stdout)
    assert th["f32"]["cosine_pass"] == 0.999
    assert th["bf16"]["kl_pass"] == 0.005
    assert th["f16"]["kl_pass"] == 0.0001
    assert th["bf16"]["max_abs_fail"] == "Infinity"
    p = run("--show-thresholds", "--cosine", "0.99")
    assert json.loads(p.stdout)["bf16"]["cosine_pass"] == 0.99

    bad = tmp_path / "th.json"
    bad.write_text('{"bf16": {"cosine_pas": 0.9}}')
    p = run("--show-thresholds", "--thresholds", bad)
    assert p.returncode == 2
    assert str(bad) in p.stderr and "cosine_pas" in p.stderr

    # Under the fixed-thresholds policy a file that loosens the rule turns a warn into a pass; under the
    # default noise-model policy a 2 % change of an fp32 tensor fails whatever the thresholds say.
    a = rnd(1000)
    np.save(tmp_path / "g.npy", a)
    np.save(tmp_path / "t.npy", a + 0.02 * rnd(1000, 5))  # rel L2 ≈ 0.02 > 1e-2
    assert run(tmp_path / "g.npy", tmp_path / "t.npy").returncode == 1
    assert run(tmp_path / "g.npy", tmp_path / "t.npy", "--fixed-thresholds").returncode == 0  # warn: gate passes
    assert run(tmp_path / "g.npy", tmp_path / "t.npy", "--fixed-thresholds", "--fail-on-warn").returncode == 1
    loose = tmp_path / "loose.json"
    loose.write_text('{"policy": "fixed-thresholds", "all": {"rel_l2_warn": 0.05}}')
    assert json.loads(run("--show-thresholds", "--thresholds", loose).stdout)["policy"] == "fixed-thresholds"
    assert run(tmp_path / "g.npy", tmp_path / "t.npy", "--thresholds", loose).returncode == 0
    assert run(tmp_path / "g.npy", tmp_path / "t.npy", "--fixed-thresholds", "--rel-l2", "0.05").returncode == 0
    assert run(tmp_path / "g.npy", tmp_path / "t.npy", "--rel-l2", "0.05").returncode == 1
    bad_policy = tmp_path / "bad_policy.json"
    bad_policy.write_text('{"policy": "lenient"}')
    p = run("--show-thresholds", "--thresholds", bad_policy)
    assert p.returncode == 2 and "noise-model" in p.stderr and str(bad_policy) in p.stderr


def test_sort_limit_and_all(dirs):
    g, t = dirs
    for i in range(40):
        a = rnd(64, i)
        np.save(g / f"t{i:02d}.npy", a)
        np.save(t / f"t{i:02d}.npy", a if i != 17 else -a)
    p = run(g, t)
    body = p.stdout.splitlines()
    first_row = next(l for l in body if l.startswith(("pass", "warn", "fail", "error")))
    assert first_row.startswith("fail") and "t17.npy" in first_row  # worst first
    assert "... 10 more rows" in p.stdout
    p = run(g, t, "--all", "--sort", "name")
    rows = [l for l in p.stdout.splitlines() if l.startswith(("pass", "fail"))]
    assert len(rows) == 40
    assert "t00.npy" in rows[0]
    assert all(len(l) <= 100 for l in rows)  # the table fits 100 columns


# ---- bad input (issue 2 §7) -------------------------------------------------------------------------

def good_npy_bytes(arr):
    import io
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def make_truncated_npy(path):
    path.write_bytes(good_npy_bytes(rnd(100))[:-40])


def make_corrupt_npy(path):
    path.write_bytes(b"\x93NUMPX" + good_npy_bytes(rnd(10))[6:])


def make_header_claims_more(path):
    raw = good_npy_bytes(rnd(10))
    path.write_bytes(raw.replace(b"(10,)", b"(99,)"))


def make_shape_overflow(path):
    raw = good_npy_bytes(rnd(10))
    big = b"(4294967296, 4294967296, 4294967296,)"
    path.write_bytes(raw.replace(b"(10,)" + b" " * len(b""), big, 1))


def make_truncated_npz(path):
    np.savez_compressed(path, a=rnd(1000))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def make_corrupt_npz(path):
    np.savez_compressed(path, a=rnd(1000))
    data = bytearray(path.read_bytes())
    for i in range(120, 400):  # inside the deflated member data
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def make_truncated_safetensors(path):
    write_safetensors(path, {"a": rnd(100)}, truncate=50)


def make_safetensors_header_lie(path):
    path.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")


def make_safetensors_offsets_outside(path):
    write_safetensors(path, {"a": rnd(4)}, header_override={"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 1 << 20]}})


BAD_FILES = {
    "truncated.npy": make_truncated_npy,
    "corrupt.npy": make_corrupt_npy,
    "claims_more.npy": make_header_claims_more,
    "overflow.npy": make_shape_overflow,
    "truncated.npz": make_truncated_npz,
    "corrupt.npz": make_corrupt_npz,
    "truncated.safetensors": make_truncated_safetensors,
    "header_lie.safetensors": make_safetensors_header_lie,
    "offsets.safetensors": make_safetensors_offsets_outside,
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_alone_is_a_clear_error(tmp_path, name):
    bad = tmp_path / name
    BAD_FILES[name](bad)
    good = tmp_path / ("good" + bad.suffix)
    if bad.suffix == ".npy":
        np.save(good, rnd(100))
    elif bad.suffix == ".npz":
        np.savez_compressed(good, a=rnd(1000))
    else:
        write_safetensors(good, {"a": rnd(100)})
    p = run(good, bad)
    # Unopenable → 2; opened but a tensor unreadable → 1 with an error row. Either way: named.
    assert p.returncode in (1, 2)
    assert name in p.stdout + p.stderr, p.stdout + p.stderr


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_in_directory_is_reported_and_the_rest_compared(dirs, name):
    g, t = dirs
    for i in range(3):
        a = rnd(50, i)
        np.save(g / f"ok{i}.npy", a)
        np.save(t / f"ok{i}.npy", a)
    BAD_FILES[name](t / name)
    rc, doc, p = compare_json(g, t)
    assert rc == 1
    ok_rows = [r for r in doc["rows"] if r["name"].startswith("ok")]
    assert len(ok_rows) == 3 and all(r["verdict"] == "pass" for r in ok_rows)
    messages = [x["message"] for x in doc["problems"]] + [r["reason"] for r in doc["rows"] if r["verdict"] == "error"]
    assert any(name in m for m in messages), doc


def test_unreadable_file_is_named(dirs):
    g, t = dirs
    np.save(g / "a.npy", rnd(5))
    np.save(t / "a.npy", rnd(5))
    # A dangling link is unreadable for every user (root ignores permission bits).
    os.symlink(t / "does_not_exist.npy", t / "dangling.npy")
    if os.geteuid() != 0:
        np.save(t / "noperm.npy", rnd(5))
        os.chmod(t / "noperm.npy", 0)
    rc, doc, p = compare_json(g, t)
    assert rc == 1
    text = json.dumps(doc["problems"]) + json.dumps(doc["unmatched"]) + json.dumps(doc["rows"])
    assert "dangling.npy" in text
    assert [r["verdict"] for r in doc["rows"] if r["name"] == "a.npy"] == ["pass"]
    if os.geteuid() != 0:
        assert "noperm.npy" in text


def test_mismatched_shapes_are_an_error_row(dirs):
    g, t = dirs
    np.save(g / "w.npy", rnd((2, 3)))
    np.save(t / "w.npy", rnd((3, 3)))
    np.save(g / "flat.npy", rnd((2, 3), 4))
    np.save(t / "flat.npy", rnd((3, 2), 4))
    rc, doc, _ = compare_json(g, t)
    rows = {r["name"]: r for r in doc["rows"]}
    assert rc == 1
    assert rows["w.npy"]["verdict"] == "error" and "shapes differ" in rows["w.npy"]["reason"]
    assert rows["w.npy"]["metrics"] is None
    assert rows["flat.npy"]["shape_differs"] is True
    assert rows["flat.npy"]["metrics"] is not None
    # The run verdict is "error"; the headline, in the terminal and in the JSON (so in the HTML report),
    # is the exit code's word: FAILED (issue 31 §4).
    assert doc["summary"]["verdict"] == "error" and doc["summary"]["headline"] == "FAILED", doc["summary"]
    p = run(g, t)
    assert p.stdout.strip().splitlines()[-1].startswith("FAILED |"), p.stdout


def test_nan_inf_empty_and_zero_d_tensors(dirs):
    g, t = dirs
    nan = np.full(8, np.nan, np.float32)
    inf = np.full(8, np.inf, np.float32)
    np.save(g / "nan_both.npy", nan)
    np.save(t / "nan_both.npy", nan)
    np.save(g / "inf_both.npy", inf)
    np.save(t / "inf_both.npy", inf)
    np.save(g / "nan_vs_finite.npy", rnd(8))
    np.save(t / "nan_vs_finite.npy", nan)
    np.save(g / "inf_vs_neg.npy", inf)
    np.save(t / "inf_vs_neg.npy", -inf)
    np.save(g / "empty.npy", np.zeros((0, 4), np.float32))
    np.save(t / "empty.npy", np.zeros((0, 4), np.float32))
    np.save(g / "scalar.npy", np.float32(2.0))
    np.save(t / "scalar.npy", np.float32(2.0))
    np.save(g / "scalar_off.npy", np.float32(2.0))
    np.save(t / "scalar_off.npy", np.float32(5.0))
    rc, doc, p = compare_json(g, t)
    rows = {r["name"]: r for r in doc["rows"]}
    assert rc == 1
    assert rows["nan_both.npy"]["verdict"] == "pass"   # agreeing positions are excluded (msprobe)
    assert rows["inf_both.npy"]["verdict"] == "pass"
    assert rows["nan_vs_finite.npy"]["verdict"] == "error"
    assert "NaN/Inf" in rows["nan_vs_finite.npy"]["reason"]
    assert rows["inf_vs_neg.npy"]["verdict"] == "error"
    assert rows["empty.npy"]["verdict"] == "pass" and rows["empty.npy"]["reason"] == "empty tensors"
    assert rows["scalar.npy"]["verdict"] == "pass"
    assert rows["scalar.npy"]["metrics"]["cosine"] == "NaN"  # single element: unsupported
    assert rows["scalar_off.npy"]["verdict"] == "fail"       # |5 − 2| > 1
    # The JSON is strict: no bare NaN/Infinity tokens.
    json.loads(p.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))


def test_thousand_good_files_and_one_bad(dirs):
    g, t = dirs
    rng = np.random.default_rng(7)
    for i in range(1000):
        a = rng.standard_normal(16).astype(np.float32)
        np.save(g / f"t{i:04d}.npy", a)
        np.save(t / f"t{i:04d}.npy", a)
    make_truncated_npy(t / "t0500.npy")
    rc, doc, p = compare_json(g, t)
    assert rc == 1
    passed = [r for r in doc["rows"] if r["verdict"] == "pass"]
    assert len(passed) == 999
    where = json.dumps(doc["problems"]) + json.dumps([r for r in doc["rows"] if r["verdict"] == "error"])
    assert "t0500.npy" in where


def test_include_exclude_filters(dirs):
    g, t = dirs
    for name in ("attn.npy", "mlp.npy", "norm.npy"):
        np.save(g / name, rnd(8))
        np.save(t / name, rnd(8))
    rc, doc, _ = compare_json(g, t, "--include", "attn|mlp", "--exclude", "mlp")
    assert rc == 0 and [r["name"] for r in doc["rows"]] == ["attn.npy"]
    assert any("left out 2 golden and 2 target" in n for n in doc["notes"]), doc["notes"]
    p = run(g, t, "--include", "([")
    assert p.returncode == 2 and "--include" in p.stderr
    # Filters that leave nothing: a usage error naming them, never "PASSED | 0 pass".
    p = run(g, t, "--include", "nothing-matches")
    assert p.returncode == 2 and "no record matches the filters --include 'nothing-matches'" in p.stderr, p.stderr
    assert "PASSED" not in p.stdout
    assert "First divergence" not in p.stdout and "left out" in p.stdout, p.stdout  # issue 31 §4


def test_misspelled_command_and_option_get_did_you_mean():
    p = subprocess.run([PARITY, "comprae", "a", "b"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "did you mean 'compare'?" in p.stderr, p.stderr
    p = run("a", "b", "--trheshold", "x")
    assert p.returncode == 2 and "did you mean '--thresholds'?" in p.stderr, p.stderr
    p = run("a", "b", "--zzzzzzzzzz")
    assert p.returncode == 2 and "did you mean" not in p.stderr  # nothing close: no guess
    # Issue 31 §4: the guess comes before CLI11's "A subcommand is required"; nested subcommands and
    # global options get guesses too.
    lines = subprocess.run([PARITY, "comprae", "a", "b"], capture_output=True, text=True,
                                     timeout=60).stderr.splitlines()
    assert "did you mean 'compare'?" in lines[0] and "A subcommand is required" in "\n".join(lines[1:]), lines
    p = subprocess.run([PARITY, "eval", "pll", "a", "b"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("parity eval: unknown command 'pll': did you mean 'ppl'?"), p.stderr
    p = subprocess.run([PARITY, "--colour", "never", "compare", "a", "b"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("parity: unknown option '--colour': did you mean '--color'?"), p.stderr


def test_two_empty_inputs_never_pass(dirs):
    """Issue 14: two empty inputs printed `PASSED | 0 pass` and exited 2 — headline and exit code disagreed.
    Issue 33 §2: the JSON and parity.compare() still said `summary.verdict: "pass"` with `exit_code: 2`, so a
    script gating on the verdict let it through. Nothing readable is one state: exit 2, "no_input", named."""
    g, t = dirs
    p = run(g, t, "--json", g.parent / "out.json")
    assert p.returncode == 2 and "no usable input" in p.stderr
    assert "PASSED" not in p.stdout and p.stdout.strip().splitlines()[-1].startswith("NO INPUT"), p.stdout
    # Issue 31 §4: nothing was compared, so no empty table, noise summary or "first divergence: none".
    assert "0 rows" not in p.stdout and "First divergence" not in p.stdout and "Noise model" not in p.stdout, p.stdout
    assert p.stderr.strip().splitlines()[-1].startswith("parity compare: no usable input"), p.stderr
    summary = json.loads((g.parent / "out.json").read_text())["summary"]
    assert summary["verdict"] == "no_input" and summary["exit_code"] == 2 and str(g) in summary["no_input"], summary
    np.savez(g.parent / "empty.npz")  # an archive without members: the same state, from the Python API too
    res = parity.compare(str(g.parent / "empty.npz"), str(g.parent / "empty.npz"))
    assert res["summary"]["verdict"] == "no_input" and res["summary"]["exit_code"] == 2, res["summary"]
    o = run_overflow(g.parent / "empty.npz")
    assert o.returncode == 2 and "no usable input" in o.stderr and "empty.npz" in o.stderr, o.stdout + o.stderr
    assert "no NaN/Inf born" not in o.stdout, o.stdout


@pytest.mark.parametrize("broken", ["cut_msprobe_dump_json", "manifest_fifo", "manifest_directory", "manifest_loop"])
def test_an_unreadable_run_is_no_input_with_the_broken_file_named(tmp_path, broken):
    """Issue 33 §2: `overflow` exited 0 "no NaN/Inf born" on an msprobe dump whose dump.json was cut mid-write,
    and on a run whose manifest is a FIFO, a directory or a symlink loop; no command named the broken file
    (the folder was read as a folder of tensor files, which then held none). Both commands: exit 2, the file
    and what is wrong with it named; compare's JSON says "no_input"."""
    from test_capture_format import write_foreign_run
    run_dir = tmp_path / "run"
    if broken == "cut_msprobe_dump_json":
        (run_dir / "dump_tensor_data").mkdir(parents=True)
        text = json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch", "data": {
            "Functional.linear.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32",
                                                        "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5,
                                                        "Norm": 1.0}]}}}, indent=1)
        (run_dir / "dump.json").write_text(text[: len(text) // 2])
        bad, why = run_dir / "dump.json", "not valid JSON"
    else:
        write_foreign_run(run_dir)
        bad = run_dir / "rank0" / "manifest.pfr"
        bad.unlink()
        if broken == "manifest_fifo":
            os.mkfifo(bad)
            why = "not a regular file (a FIFO)"
        elif broken == "manifest_directory":
            bad.mkdir()
            why = "is a directory"
        else:
            os.symlink("manifest.pfr", bad)
            why = "Too many levels of symbolic links"
    o = run_overflow(run_dir)
    assert o.returncode == 2 and f"{bad}: {why}" in o.stderr.replace("cannot open: ", ""), o.stdout + o.stderr
    assert "no NaN/Inf born" not in o.stdout
    p = run(run_dir, run_dir, "--json", tmp_path / "out.json")
    assert p.returncode == 2 and str(bad) in p.stdout + p.stderr, p.stdout + p.stderr
    if (tmp_path / "out.json").exists():  # written when the run opened and held nothing readable
        assert json.loads((tmp_path / "out.json").read_text())["summary"]["verdict"] == "no_input"


def test_table_width_follows_columns(dirs):
    g, t = dirs
    long_name = "model.layers.17.self_attention.query_key_value_projection_output.npy"
    np.save(g / long_name, rnd(8))
    np.save(t / long_name, rnd(8) * 2)
    env = dict(os.environ, COLUMNS="200")
    wide = subprocess.run([PARITY, "compare", str(g), str(t)], capture_output=True, text=True, env=env, timeout=60)
    def table(p):
        return [l for l in p.stdout.splitlines() if l.startswith(("fail", "pass", "warn", "      name"))]
    assert any(long_name in l for l in table(wide))
    env["COLUMNS"] = "90"
    narrow = subprocess.run([PARITY, "compare", str(g), str(t)], capture_output=True, text=True, env=env, timeout=60)
    assert table(narrow) and not any(long_name in l for l in table(narrow))
    assert max(len(l) for l in table(narrow)) <= 90


def test_shortened_names_keep_what_tells_rows_apart(tmp_path):
    """Issue 31 §4: names were cut in the middle, so two rows that differ only in their op's call index
    (…/float#0/… and …/float#1/…, or layers 10 and 11) could print as one name. Shortened names keep the
    op#k/direction/role/index tail whole and the layer indices and leaf module of the path; --wide prints
    them whole."""
    g, t = tmp_path / "g", tmp_path / "t"
    names = ["model.decoder.layers.10.self_attention.attn/float#0/forward/input/0",
             "model.decoder.layers.10.self_attention.attn/float#1/forward/input/0",
             "model.decoder.layers.11.self_attention.attn/float#0/forward/input/0"]
    for d in (g, t):
        d.mkdir()
        np.savez(d / "x.npz", **{n: rnd(8) for n in names})
    env = dict(os.environ, COLUMNS="100")
    p = subprocess.run([PARITY, "compare", str(g), str(t), "--sort", "name"], capture_output=True, text=True,
                       env=env, timeout=60)
    shown = [l.split()[1] for l in p.stdout.splitlines() if l.startswith(("pass ", "warn ", "fail "))]
    assert len(shown) == 3 and len(set(shown)) == 3, p.stdout
    for name, cell in zip(sorted(names), shown):
        assert cell.endswith(name[name.index("/"):]) and ".1" in cell and len(cell) < len(name), (name, cell)
    assert max(len(l) for l in p.stdout.splitlines() if l.startswith("pass ")) <= 100
    wide = subprocess.run([PARITY, "compare", str(g), str(t), "--wide"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert all(any(n in l for l in wide.stdout.splitlines()) for n in names), wide.stdout


def test_npz_zip_bomb_is_refused_with_a_clear_message(tmp_path):
    """Issue 14: a small npz inflating to a large tensor (here 128 MiB of zeros in ~130 KB) is refused before
    anything is allocated, named as a problem (so the run cannot pass), and PARITY_NPZ_MAX_RATIO lifts the cap."""
    bomb = np.zeros(32 << 20, dtype=np.float32)
    np.savez_compressed(tmp_path / "g.npz", x=bomb, y=rnd(8))
    np.savez_compressed(tmp_path / "t.npz", x=bomb, y=rnd(8))
    del bomb
    assert (tmp_path / "g.npz").stat().st_size < (1 << 20)
    rc, doc, p = compare_json(tmp_path / "g.npz", tmp_path / "t.npz")
    assert rc == 1 and doc["summary"]["verdict"] == "error"
    assert any("zip bomb" in pr["message"] and "PARITY_NPZ_MAX_RATIO" in pr["message"] for pr in doc["problems"])
    assert [r["name"] for r in doc["rows"]] == ["y"]  # the rest is compared
    env = dict(os.environ, PARITY_NPZ_MAX_RATIO="100000")
    q = subprocess.run([PARITY, "compare", str(tmp_path / "g.npz"), str(tmp_path / "t.npz"), "--json", "-", "-q"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert q.returncode == 0 and len(json.loads(q.stdout)["rows"]) == 2


def test_a_narrow_dtype_mask_after_arithmetic_reads_as_minus_inf_but_real_saturation_does_not(tmp_path):
    """docs/metrics.md "Dtype extremes": an fp32 golden mask of −3.4e38 against an fp16 mask stored after adding
    scores in fp32 (−65504 + s) is one mask; a target that saturates at −65504 where the golden holds an
    ordinary value is still a difference (a non-finite mismatch, the row fails)."""
    scores = np.linspace(-0.5, 0.5, 64, dtype=np.float32).reshape(8, 8)
    mask = np.triu(np.ones((8, 8), dtype=bool), 1)
    golden = np.where(mask, np.float32(np.finfo(np.float32).min), scores).astype(np.float32)
    target = np.where(mask, np.float32(np.finfo(np.float16).min) + scores, scores).astype(np.float32)
    np.save(tmp_path / "g.npy", golden)
    np.save(tmp_path / "t.npy", target)
    rc, res, p = compare_json(tmp_path / "g.npy", tmp_path / "t.npy")
    row = res["rows"][0]
    assert rc == 0 and row["verdict"] == "pass", row
    assert row["reason"].startswith("a narrow dtype's finfo.min mask stored after arithmetic"), row["reason"]
    saturated = target.copy()
    saturated[0, 0] = np.float16(-65504)  # real data at the fp16 limit where the golden holds −0.5
    np.save(tmp_path / "s.npy", saturated)
    rc, res, p = compare_json(tmp_path / "g.npy", tmp_path / "s.npy")
    assert rc == 1 and res["rows"][0]["verdict"] in ("fail", "error"), res["rows"][0]
