"""_parity_core.compare_arrays returns the metrics under the keys of parity.compare/1's rows[].metrics:
both are built from the metric table (include/parity/metrics.h). Until issue 32 the dict spelled the side
statistics `golden` / `target` where the JSON has `golden_stats` / `target_stats`; the JSON's spelling, the
published one, is the one kept (docs/metrics.md "From Python")."""
import json
import os
import subprocess

import numpy as np

import _parity_core as core

PARITY = os.environ.get("PARITY_BIN", "parity")


def keys(value):
    """The nested key structure of a metrics object: {key: sub-keys or None}."""
    return {k: keys(v) if isinstance(v, dict) else None for k, v in value.items()}


def test_python_dict_has_the_json_keys(tmp_path):
    rng = np.random.default_rng(32)
    golden = rng.standard_normal((8, 16)).astype(np.float32)
    target = (golden * (1 + 1e-3 * rng.standard_normal(golden.shape))).astype(np.float32)
    for side, array in (("golden", golden), ("target", target)):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "logits.npy", array)
    p = subprocess.run([PARITY, "compare", tmp_path / "golden", tmp_path / "target", "--json", "-", "-q"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    rows = json.loads(p.stdout)["rows"]
    assert len(rows) == 1 and rows[0]["mode"] == "tensor"
    from_json = keys(rows[0]["metrics"])
    from_python = keys(core.compare_arrays(golden, target))
    assert from_python == from_json
    assert "golden_stats" in from_python and "target_stats" in from_python


def test_python_dict_values_are_the_json_values(tmp_path):
    golden = np.array([1.0, 2.0, 0.0, -3.0], np.float32)
    target = np.array([1.0, 2.5, 0.0, -3.0], np.float32)
    got = core.compare_arrays(golden, target)
    assert got["max_abs"] == 0.5 and got["max_abs_index"] == 1
    assert got["golden_stats"]["zero_count"] == 1 and got["target_stats"]["max"] == 2.5
    assert got["nonfinite_agree"] is True and got["kl_computed"] is False
