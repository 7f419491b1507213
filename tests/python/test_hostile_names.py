"""Hostile names never reach the terminal as control characters (issue 14 §4).

A tensor, module, file or curve name comes from other people's files. With an ESC in it a name could
clear the screen, retitle the window or rewrite lines above; with a newline it could forge a line of
output such as a PASSED headline. Every human-readable output of every command must show such bytes
as visible escapes (`\\x1b`, `\\x0a`, `\\u009b`)."""
import json
import os
import re
import subprocess

import numpy as np
import pytest
import torch

import capture_helpers
import parity

HOSTILE = [
    "title\x1b]0;pwned\x07",              # OSC: set the window title
    "clear\x1b[2J\x1b[H",                 # CSI: clear the screen, cursor home
    "forged\nPASSED | 99 pass, 0 warn",   # a newline forging an output line
    "c1\u009b31m",                        # C1 CSI (U+009B), for terminals that honour 8-bit controls
    "bell\x07del\x7f",
]
# Anything a terminal acts on: C0 except newline, DEL, and UTF-8 C1 (C2 80..C2 9F).
CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def _run(*args):
    env = dict(os.environ, COLUMNS="200")  # names shown whole (pytest may set a narrow COLUMNS)
    p = subprocess.run([capture_helpers.parity_bin(), "--color", "never", *map(str, args)], capture_output=True,
                       timeout=120, env=env)
    return p.returncode, p.stdout + p.stderr


def _assert_clean(out, what):
    m = CONTROL.search(out)
    assert m is None, "{}: raw control byte {!r} at {}: {!r}".format(what, m.group(), m.start(),
                                                                      out[max(0, m.start() - 60):m.start() + 60])
    # and no forged line: the only headline is the real one
    assert out.count(b"99 pass") == 0 or b"\\x0aPASSED | 99 pass" in out, what


def _npy_dirs(tmp_path):
    g, t = tmp_path / "golden", tmp_path / "target"
    g.mkdir()
    t.mkdir()
    rng = np.random.default_rng(0)
    for i, name in enumerate(HOSTILE):
        x = rng.standard_normal(64).astype(np.float32)
        np.save(g / (name + ".npy"), x)
        np.save(t / (name + ".npy"), x * (1.5 if i % 2 else 1.0))  # some rows fail: their names are listed
    np.save(t / ("only-in-target\x1b[31m" + ".npy"), np.zeros(3, np.float32))
    (t / "broken\x1b[5m.npy").write_bytes(b"\x93NUMPY garbage")
    (g / "broken\x1b[5m.npy").write_bytes(b"\x93NUMPY garbage")
    return g, t


def test_compare_and_info_of_tensor_files_with_hostile_names(tmp_path):
    g, t = _npy_dirs(tmp_path)
    for args in (["compare", g, t], ["compare", g, t, "-v"], ["info", t], ["overflow", t],
                 ["compare", g, t, "--include", "nothing\x1b[2J"]):
        code, out = _run(*args)
        assert code in (1, 2), (args, code, out[-2000:])
        _assert_clean(out, " ".join(map(str, args[:1])))
    code, out = _run("compare", g, t)
    assert b"\\x1b" in out and b"\\u009b" in out and b"\\x07" in out, out[-3000:]  # shown, escaped
    assert b"FAILED" in out


def test_capture_dump_with_hostile_module_names(tmp_path):
    """Module names are attribute names: a model can register a child under any string."""
    def build(scale):
        torch.manual_seed(0)
        m = torch.nn.Sequential()
        m.add_module("lin\x1b]0;x\x07", torch.nn.Linear(8, 8))
        m.add_module("act\nPASSED", torch.nn.Tanh())
        with torch.no_grad():
            m[0].weight.mul_(scale)
        return m

    runs = []
    for name, scale in (("golden", 1.0), ("target", 3.0)):
        model = build(scale)
        with parity.capture(model, tmp_path / name, level="mix", mode="tensor"):
            model(torch.ones(2, 8))
        runs.append(tmp_path / name)
    for args in (["compare", *runs], ["compare", *runs, "-v"], ["info", runs[1]], ["overflow", runs[1]],
                 ["ranks", runs[1]]):
        code, out = _run(*args)
        _assert_clean(out, args[0])
    # The diagnosis names the changed weight under its escaped name (this ran `compare --diagnose`, an
    # option compare does not have, and discarded the exit code: it checked a usage error; issue 32 §7).
    code, out = _run("compare", *runs)
    assert code == 1, out[-3000:]
    diagnosis = out[out.index(b"Diagnosis"):]
    assert b"WEIGHT_MISMATCH" in diagnosis and b"lin\\x1b]0;x\\x07" in diagnosis, diagnosis[-3000:]


def test_curves_with_hostile_metric_names(tmp_path):
    g, t = tmp_path / "g.jsonl", tmp_path / "t.jsonl"
    for path, k in ((g, 1.0), (t, 1.3)):
        with open(path, "w") as f:
            for step in range(20):
                f.write(json.dumps({"step": step, "loss\x1b[2J": 2.0 / (1 + step) * k, "lr\nPASSED": 1e-3}) + "\n")
    code, out = _run("curve", g, t)
    _assert_clean(out, "curve")
    assert b"loss\\x1b[2" in out, out[-2000:]  # (metric names are normalised to lower case)
