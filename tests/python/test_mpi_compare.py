"""`mpirun -n N parity compare|overflow|info|ranks` gives the same bytes as one process (issue 13, docs/cli.md "MPI").

Each input is compared by one process and under `mpirun -n 2` and `-n 4`: the JSON, CSV, Arrow file,
HTML and the terminal table must be byte-identical once the timing fields are removed, and the exit status the same.
Inputs: capture runs of a real training loop (2 ranks x 2 steps, the target's MLP weight perturbed, so
there are failing rows, suspects and diagnoses), npy directories (transposed layout, logits with KL, NaN,
a shape mismatch, an unmatched file, a corrupt file, a tensor above the 1 MiB "big pair" size), and a
capture run with a torn manifest tail and a truncated data file. A process killed before it hands in its
rows (PARITY_TEST_KILL_RANK, the test hook of src/distributed_mpi/) must fail the command with no output
file written. Registered with ctest only when mpirun is found and parity is built with MPI."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import capture_helpers

MPIRUN = os.environ.get("PARITY_MPIRUN") or shutil.which("mpirun")
pytestmark = pytest.mark.skipif(not MPIRUN, reason="mpirun not installed (README: set-up installs openmpi-bin)")

# Timing fields of parity.compare/1 and parity.overflow/1 (docs/compare-json.md): elapsed_seconds and
# replay.seconds; in the terminal verdict line "| 0.02s |".
TIMING_JSON = re.compile(r'"(elapsed_seconds|seconds)":\s*[-+0-9.eE]+')
MEMORY_JSON = re.compile(r'"peak_resident_bytes":\s*\[[^\]]*\]')
TIMING_TEXT = re.compile(r"\| [0-9]+\.[0-9]+s \|")
MEMORY_TEXT = re.compile(r"^memory: [0-9]+ processes, peak resident MiB:[ 0-9]+\n", re.M)

GEN = r"""
import sys, torch, parity
from parity.examples import SyntheticCorpus, build_model, train
out = sys.argv[1]
corpus = SyntheticCorpus(vocab_size=64, n_tokens=1 << 12)
for side in ("golden", "target"):
    for rank in (0, 1):
        model = build_model("llama", "tiny", seed=11)
        if side == "target":  # a weight that differs before any computation: fails, suspects, WEIGHT_MISMATCH
            with torch.no_grad():
                w = dict(model.named_parameters())
                name = next(n for n in w if ".mlp." in n and n.endswith("weight") and w[n].dim() == 2)
                w[name].mul_(1.0 + 0.02 * (rank + 1))
        with parity.capture(model, f"{out}/{side}", mode="tensor", steps=(0, 1), rank=rank) as cap:
            train(model, corpus, steps=2, batch_size=2, seq_len=16, capture=cap)
"""


def mpi_env(**extra):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    env.update(extra)
    return env


def run_parity(processes, args, cwd, **env):
    cmd = [capture_helpers.parity_bin(), *map(str, args)]
    if processes > 0:
        cmd = [MPIRUN, "--oversubscribe", "-n", str(processes), *cmd]
    return subprocess.run(cmd, cwd=cwd, env=mpi_env(**env), capture_output=True, text=True, timeout=300)


def normalised(path):
    text = path.read_text(errors="replace")
    return MEMORY_JSON.sub('"peak_resident_bytes": []', TIMING_JSON.sub(r'"\1": 0', text))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi")
    gen = subprocess.run([sys.executable, "-c", GEN, str(d / "cap")], env=capture_helpers.child_env(),
                         capture_output=True, text=True, timeout=300)
    assert gen.returncode == 0, gen.stderr

    # A torn tail (the last manifest record of rank 1 cut) and a bad file (rank 0's data truncated).
    torn = d / "torn"
    shutil.copytree(d / "cap" / "target", torn)
    manifest = torn / "rank1" / "manifest.pfr"
    os.truncate(manifest, os.path.getsize(manifest) - 7)
    data = torn / "rank0" / "data-000000.bin"
    os.truncate(data, os.path.getsize(data) // 2)

    rng = np.random.default_rng(3)
    g, t = d / "npy_golden", d / "npy_target"
    g.mkdir()
    t.mkdir()
    for i in range(24):
        dtype = (np.float32, np.float16, np.int32)[i % 3]
        a = (rng.standard_normal((16 + i, 40)) * 4).astype(dtype)
        b = a.copy()
        if i % 4 == 1 and dtype != np.int32:
            b = (b.astype(np.float64) * (1 + 1e-2 * rng.standard_normal(b.shape))).astype(dtype)
        np.save(g / f"t{i:02d}.npy", a)
        np.save(t / f"t{i:02d}.npy", b)
    big = rng.standard_normal((512, 640)).astype(np.float32)  # 1.3 MB a side: compared with every thread
    np.save(g / "big.npy", big)
    np.save(t / "big.npy", big + np.float32(1e-6))
    w = rng.standard_normal((24, 40)).astype(np.float32)  # stored transposed in the target
    np.save(g / "proj.npy", w)
    np.save(t / "proj.npy", np.ascontiguousarray(w.T))
    logits = rng.standard_normal((8, 64)).astype(np.float32)
    np.save(g / "logits.npy", logits)
    np.save(t / "logits.npy", logits + np.float32(0.05))
    nan = rng.standard_normal((32,)).astype(np.float16)
    np.save(g / "nan.npy", nan)
    nan[3], nan[9] = np.nan, np.inf
    np.save(t / "nan.npy", nan)
    np.save(g / "reshaped.npy", rng.standard_normal((6, 4)).astype(np.float32))
    np.save(t / "reshaped.npy", rng.standard_normal((5, 4)).astype(np.float32))
    np.save(g / "only_golden.npy", np.zeros(3, np.float32))
    (t / "corrupt.npy").write_bytes(b"\x93NUMPY\x01\x00garbage that is not a header")
    return d


def compare_all_ways(inputs, tmp_path, golden, target, extra=()):
    """Runs compare single-process, then under mpirun -n 2 and -n 4; asserts identical outputs."""
    args = ["compare", inputs / golden, inputs / target, "--json", "out.json", "--csv", "out.csv",
            "--arrow", "out.arrow", "--html", "out.html", *extra]
    outs = {}
    for n in (0, 2, 4):
        cwd = tmp_path / f"n{n}"
        cwd.mkdir()
        p = run_parity(n, args, cwd)
        assert (cwd / "out.json").exists(), p.stdout[-3000:] + p.stderr[-3000:]
        # Each process's peak memory is reported (JSON always, the terminal under mpirun), then
        # blanked for the comparison: it is the one thing that differs with N.
        peak = json.loads((cwd / "out.json").read_text())["peak_resident_bytes"]
        assert len(peak) == max(n, 1) and all(b > 0 for b in peak), peak
        assert (MEMORY_TEXT.search(p.stdout) is not None) == (n > 1), p.stdout[-500:]
        # Captures are divided by rank: every process paired its own ranks' rows as process 0 did.
        assert "did not pair" not in p.stderr, p.stderr[-2000:]
        outs[n] = (p.returncode, MEMORY_TEXT.sub("", TIMING_TEXT.sub("| s |", p.stdout)), normalised(cwd / "out.json"),
                   (cwd / "out.csv").read_bytes(), normalised(cwd / "out.html"), (cwd / "out.arrow").read_bytes())
    for n in (2, 4):
        code, text, js, csv, html, arrow = outs[n]
        assert code == outs[0][0], f"-n {n}: exit {code}, alone {outs[0][0]}"
        assert js == outs[0][2], f"-n {n}: JSON differs"
        assert csv == outs[0][3], f"-n {n}: CSV differs"
        assert html == outs[0][4], f"-n {n}: HTML differs"
        assert arrow == outs[0][5], f"-n {n}: Arrow file differs"
        assert text == outs[0][1], f"-n {n}: terminal output differs"
    return json.loads(outs[0][2])


def test_capture_runs_with_ranks_and_steps(inputs, tmp_path):
    j = compare_all_ways(inputs, tmp_path, "cap/golden", "cap/target")
    rows = j["rows"]
    assert {r["rank"] for r in rows} == {0, 1} and {r["step"] for r in rows} == {0, 1}
    assert j["summary"]["fail"] > 0 and j["suspects"] and j["diagnosis"]
    assert j["first_divergence"] is not None
    # Step 1's parameters carry their updates, measured by whichever process measured the row (the
    # earlier step's row may be another process's) and judged at process 0: identical at every N.
    updates = [r for r in rows if r["update"] is not None]
    assert updates and all(r["step"] == 1 and r["update"]["from_step"] == 0 for r in updates)
    assert all(r["update"]["grad_rel_error"] is not None for r in updates)


def test_a_share_of_many_rows_reaches_process_zero_in_several_messages(tmp_path):
    """Rows travel to process 0 in messages of 65,536 (src/compare/run_compare.cpp kRowsPerMessage), which
    it applies one at a time. Two ranks of 70,000 statistics events: under -n 2 process 1's share, rank 1,
    is 70,000 rows, so two messages, one of them holding the fault; the rows (CSV) and the analyses
    (terminal) are one process's."""
    gen = subprocess.run([sys.executable, os.path.join(capture_helpers.SOURCE_DIR, "bench", "scaling", "gen_dump.py"),
                          str(tmp_path / "big"), "--ranks", "2", "--events", "70000", "--mib-per-rank", "0.25",
                          "--mode", "statistics"], env=capture_helpers.child_env(), capture_output=True, text=True,
                         timeout=600)
    assert gen.returncode == 0, gen.stderr[-2000:]
    outs = {}
    for n in (0, 2):
        cwd = tmp_path / f"n{n}"
        cwd.mkdir()
        p = run_parity(n, ["compare", tmp_path / "big" / "golden", tmp_path / "big" / "target", "--csv", "out.csv",
                           "--limit", "5"], cwd)
        assert "did not pair" not in p.stderr, p.stderr[-2000:]
        outs[n] = (p.returncode, MEMORY_TEXT.sub("", TIMING_TEXT.sub("| s |", p.stdout)), (cwd / "out.csv").read_bytes())
    assert outs[0][0] == 1 and "First divergence: layers.2333.self_attn.v_proj/forward/output/0 (step 0, rank 1)" in outs[0][1], outs[0][1][-2000:]
    assert outs[0][2].count(b"\n") == 140_001
    assert outs[2] == outs[0]


def test_npy_directories(inputs, tmp_path):
    j = compare_all_ways(inputs, tmp_path, "npy_golden", "npy_target")
    by = {r["name"]: r for r in j["rows"]}
    assert "transposed" in by["proj.npy"]["reason"] or by["proj.npy"].get("layout_note")
    assert by["reshaped.npy"]["verdict"] == "error"
    assert j["problems"] and j["unmatched"]["golden"]


def test_torn_tail_and_bad_file(inputs, tmp_path):
    j = compare_all_ways(inputs, tmp_path, "cap/golden", "torn")
    assert len(j["problems"]) > 1
    assert any("torn" in p["message"] for p in j["problems"])
    assert any("outside data-000000.bin" in p["message"] for p in j["problems"])


def one_output_every_way(tmp_path, args, files, read=lambda path: path.read_text()):
    """Runs `parity ARGS` alone and under mpirun -n 2 and -n 4; asserts that the exit status, the terminal
    output and each of `files` (read by `read`) are the same every way; returns them."""
    outs = {}
    for n in (0, 2, 4):
        cwd = tmp_path / f"n{n}"
        cwd.mkdir()
        p = run_parity(n, args, cwd)
        assert all((cwd / f).exists() for f in files), p.stderr[-3000:]
        outs[n] = (p.returncode, p.stdout, *(read(cwd / f) for f in files))
    assert outs[2] == outs[0] and outs[4] == outs[0]
    return outs[0]


@pytest.mark.parametrize("run", ["npy_target", "torn", "cap/target"])
def test_overflow(inputs, tmp_path, run):
    _, _, doc = one_output_every_way(tmp_path, ["overflow", inputs / run, "--json", "out.json"], ["out.json"],
                                     normalised)
    if run == "npy_target":
        assert json.loads(doc)["nonfinite_records"] == 1


@pytest.mark.parametrize("run", ["torn", "cap/target", "cap/target/rank1"])
def test_info(inputs, tmp_path, run):
    # Each process reads its share of the ranks (-n 4 over 2 ranks: two processes read none); process 0
    # prints the parts, the torn tail and the problems in rank order, exactly as one process does.
    rc, _, doc = one_output_every_way(tmp_path, ["info", inputs / run, "--json", "out.json"], ["out.json"])
    j = json.loads(doc)
    if run == "torn":
        assert rc == 1 and [part["complete"] for part in j["parts"]] == [True, False]
        assert any("data-000000.bin" in m for m in j["problems"]), j["problems"]
    else:
        assert rc == 0 and len(j["parts"]) == (1 if run.endswith("rank1") else 2)


@pytest.mark.parametrize("run", ["cap/golden", "cap/target", "torn"])
def test_ranks(inputs, tmp_path, run):
    # The scalars the training loop logged (loss, grad_norm, lr) of each rank, read in shares: the
    # target's ranks differ (their weights were perturbed differently), the golden's agree, and the torn
    # run's problems come out in rank order.
    rc, out, doc, _ = one_output_every_way(
        tmp_path, ["ranks", inputs / run, "--json", "out.json", "--csv", "out.csv"], ["out.json", "out.csv"])
    assert rc == (0 if run == "cap/golden" else 1), out
    assert {m["metric"] for m in json.loads(doc)["metrics"]} >= {"loss", "grad_norm"}


def test_info_of_no_run_is_a_usage_error_said_once(tmp_path):
    p = run_parity(2, ["info", tmp_path / "missing"], tmp_path)
    assert p.returncode == 2
    assert p.stderr.count("parity info: ") == 1 and "no such run directory" in p.stderr, p.stderr


def test_a_dead_process_fails_the_command_without_output(inputs, tmp_path):
    # Process 1 kills itself (SIGKILL) after measuring its share, before handing it to process 0.
    p = run_parity(2, ["compare", inputs / "cap/golden", inputs / "cap/target", "--json", "out.json",
                       "--csv", "out.csv", "--html", "out.html"], tmp_path, PARITY_TEST_KILL_RANK="1")
    assert p.returncode != 0
    assert "exited on signal 9" in p.stderr, p.stderr
    assert not any((tmp_path / f).exists() for f in ("out.json", "out.csv", "out.html"))
    assert "FAILED" not in p.stdout and "PASSED" not in p.stdout  # no verdict from a partial result


def test_a_process_that_cannot_open_the_inputs_ends_the_job(inputs, tmp_path):
    # Process 1 runs in a folder without the target, process 0 in one with it: process 1 must end the
    # job with its message (process 0 would otherwise wait for its rows for ever), and nothing is written.
    for k in (0, 1):
        (tmp_path / f"d{k}").mkdir()
        (tmp_path / f"d{k}" / "golden").symlink_to(inputs / "npy_golden")
    (tmp_path / "d0" / "target").symlink_to(inputs / "npy_target")
    cmd = [MPIRUN, "--oversubscribe", "-n", "2", "bash", "-c",
           'cd d$OMPI_COMM_WORLD_RANK && exec "$0" compare golden target --json out.json', capture_helpers.parity_bin()]
    p = subprocess.run(cmd, cwd=tmp_path, env=mpi_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr
    assert "parity compare: process 1 of 2: cannot open target" in p.stderr
    # (mpirun adds its own "MPI_ABORT was invoked on rank 1" banner, except when its help system is short
    # of resources on a loaded machine: "ORTE_ERROR_LOG: Out of resource ... show_help.c". Not parity's text.)
    assert not (tmp_path / "d0" / "out.json").exists()


def test_an_input_no_process_can_open_is_a_usage_error_said_once(inputs, tmp_path):
    p = run_parity(2, ["compare", inputs / "npy_golden", tmp_path / "missing"], tmp_path)
    assert p.returncode == 2
    assert p.stderr.count("parity compare: cannot open target") == 1, p.stderr
