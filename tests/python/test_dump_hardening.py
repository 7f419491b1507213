"""Hardening of the capture dump (issue 14): two writers of one part, a part with two header or two
close records, a record whose offset + size wraps past 2^64."""
import json
import multiprocessing as mp
import os

import capture_helpers
import parity
from parity._core import core
from test_capture_format import frame, write_foreign_run

ROUNDS = 60
WRITERS = 4


def _writer_race(root, barrier, results, who):
    ok = []
    for r in range(ROUNDS):
        barrier.wait()
        try:
            w = core.DumpWriter(os.path.join(root, "run{}".format(r)), rank=0)
        except Exception as e:  # noqa: BLE001 - the refusal is what we record
            ok.append((r, False, str(e)))
            continue
        ok.append((r, True, ""))
        w.close()
    results.put((who, ok))


def test_two_writers_of_one_part_exactly_one_wins(tmp_path):
    """Processes that all believe they are rank 0 start at the same moment, many times: each time
    exactly one gets the part, the others get an error naming the folder."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(WRITERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_writer_race, args=(str(tmp_path), barrier, results, i)) for i in range(WRITERS)]
    for p in procs:
        p.start()
    got = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    wins = {r: 0 for r in range(ROUNDS)}
    for _, ok in got:
        for r, won, msg in ok:
            if won:
                wins[r] += 1
            else:
                assert os.path.join("run{}".format(r), "rank0") in msg, msg
    shared = [r for r, n in wins.items() if n != 1]
    assert not shared, "rounds where {} writers got the part: {}".format(
        "several" if shared else "no", {r: wins[r] for r in shared})


def _manifest_with(part, extra_frames):
    with open(os.path.join(part, "manifest.pfr"), "ab") as m:
        for f in extra_frames:
            m.write(frame(f))


def test_a_part_with_two_headers_is_a_problem(tmp_path):
    write_foreign_run(tmp_path / "run")
    _manifest_with(tmp_path / "run" / "rank0", [{"kind": "header", "schema": "parity.dump/1", "rank": 0,
                                                 "alignment": 64}])
    run = parity.load(tmp_path / "run")
    assert any("header" in p and "two writers" in p for p in run.problems), run.problems
    p = capture_helpers.run_cli("info", tmp_path / "run")
    assert p.returncode == 1 and "header" in p.stdout, p.stdout + p.stderr


def test_a_part_with_two_close_records_is_a_problem(tmp_path):
    write_foreign_run(tmp_path / "run")
    _manifest_with(tmp_path / "run" / "rank0", [{"kind": "close", "events": 2}])
    run = parity.load(tmp_path / "run")
    assert any("close" in p and "two writers" in p for p in run.problems), run.problems
    p = capture_helpers.run_cli("info", tmp_path / "run")
    assert p.returncode == 1, p.stdout + p.stderr


def _run_with_wrapping_offset(root):
    part = os.path.join(root, "rank0")
    os.makedirs(part)
    with open(os.path.join(part, "data-000000.bin"), "wb") as d:
        d.write(b"\0" * 256)
    events = []
    for name, offset in (("good/forward/output/0", 0), ("wraps/forward/output/0", 2**64 - 64)):
        events.append({"kind": "event", "name": name, "module": name.split("/")[0], "op": "Foreign",
                       "direction": "forward", "role": "output", "index": 0, "step": 0, "rank": 0,
                       "order": len(events), "dtype": "f32", "shape": [32],
                       "data": {"shard": "data-000000.bin", "offset": offset, "nbytes": 128}})
    with open(os.path.join(part, "manifest.pfr"), "wb") as m:
        m.write(frame({"kind": "header", "schema": "parity.dump/1", "rank": 0, "alignment": 64}))
        for e in events:
            m.write(frame(e))
        m.write(frame({"kind": "close", "events": 2}))


def test_a_record_whose_offset_plus_size_wraps_is_corrupt(tmp_path):
    _run_with_wrapping_offset(tmp_path / "run")
    run = parity.load(tmp_path / "run")
    assert any("wraps/forward/output/0" in p and "outside" in p for p in run.problems), run.problems
    assert run.get("good/forward/output/0").has_data
    assert not run.get("wraps/forward/output/0").has_data
    p = capture_helpers.run_cli("info", tmp_path / "run")
    assert p.returncode == 1 and "outside" in p.stdout, p.stdout + p.stderr
    for cmd in (("compare", tmp_path / "run", tmp_path / "run"), ("overflow", tmp_path / "run")):
        p = capture_helpers.run_cli(*cmd)
        assert p.returncode in (0, 1, 2), "parity {} -> {}\n{}{}".format(cmd[0], p.returncode, p.stdout, p.stderr)


def test_a_name_that_is_not_utf8_is_captured_escaped_without_disturbing_the_step(tmp_path):
    """Issue 33 §7: a module named with a lone surrogate ('bad\\udcffname', a name decoded from bytes with
    surrogateescape) raised TypeError from the writer into the user's forward, even with on_error="warn".
    The step runs, the name is recorded escaped, and `parity info` reads the run."""
    import torch
    import warnings

    model = torch.nn.Sequential()
    model.add_module("ok", torch.nn.Linear(4, 4))
    model.add_module("bad\udcffname", torch.nn.Linear(4, 2))
    x = torch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a capture that stopped would warn
        with parity.capture(model, str(tmp_path / "run"), level="mix", mode="statistics") as cap:
            y = model(x)
            y.sum().backward()
            cap.next_step()
    assert y.shape == (3, 2)
    p = capture_helpers.run_cli("compare", tmp_path / "run", tmp_path / "run", "--json", "-")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    names = {r["name"] for r in json.loads(p.stdout)["rows"]}
    assert "bad\\udcffname/forward/output/0" in names and "ok/forward/output/0" in names, sorted(names)
