"""`python -m parity` and parity.binary_path() in the in-tree layout (python/ + <build>/python on the
path, the binary at <build>/parity). The installed layout is tests/install/wheel_test.sh's."""
import os
import subprocess
import sys

import numpy as np
import pytest

BUILD = os.environ.get("PARITY_BINARY_DIR")
pytestmark = pytest.mark.skipif(not BUILD, reason="needs PARITY_BINARY_DIR (run through ctest)")


def run(args, cwd, **env_changes):
    env = {k: v for k, v in os.environ.items() if k != "PARITY_BIN"}
    env.update(env_changes)
    return subprocess.run([sys.executable] + args, cwd=cwd, env=env, capture_output=True, text=True)


def test_binary_path_is_the_build_trees_binary(tmp_path):
    r = run(["-c", "import parity; print(parity.binary_path())"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == os.path.realpath(os.path.join(BUILD, "parity"))


def test_parity_bin_overrides_and_a_bad_one_is_named(tmp_path):
    r = run(["-c", "import parity; print(parity.binary_path())"], tmp_path, PARITY_BIN=str(tmp_path / "nope"))
    assert r.returncode != 0 and "PARITY_BIN=" in r.stderr and "nope" in r.stderr


def test_module_runs_the_tool_with_its_arguments_and_exit_code(tmp_path):
    exe = os.path.join(BUILD, "parity")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "g.npy", a)
    np.save(tmp_path / "t.npy", a * 2)
    for args, expected in ((["--version"], 0), (["compare", "g.npy", "t.npy"], 1), (["compare", "g.npy"], 2)):
        direct = subprocess.run([exe] + args, cwd=tmp_path, capture_output=True, text=True)
        via_module = run(["-m", "parity"] + args, tmp_path)
        assert direct.returncode == expected, (args, direct.stderr)
        assert via_module.returncode == direct.returncode, (args, via_module.stderr)
    assert run(["-m", "parity", "--version"], tmp_path).stdout == "parity {}\n".format(_version())


def _version():
    import _parity_core
    return _parity_core.__version__
