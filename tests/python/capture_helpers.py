"""Shared helpers of the capture tests (tiny models, the parity binary, temporary runs)."""
import contextlib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("PARITY_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))


def parity_bin():
    b = os.environ.get("PARITY_BIN")
    if b and os.path.exists(b):
        return b
    for build in ("build", "build-capture"):
        cand = os.path.join(SOURCE_DIR, build, "parity")
        if os.path.exists(cand):
            return cand
    raise RuntimeError("parity binary not found: set PARITY_BIN")


def run_cli(*args, check=None):
    p = subprocess.run([parity_bin(), *map(str, args)], capture_output=True, text=True, timeout=120)
    if check is not None and p.returncode != check:
        raise AssertionError("parity {} -> {} (wanted {})\nstdout:\n{}\nstderr:\n{}".format(
            " ".join(map(str, args)), p.returncode, check, p.stdout, p.stderr))
    return p


def compare_json(tmp_path, golden, target):
    """`parity compare golden target --json` into tmp_path/cmp.json: (exit code, result with "_text", the
    terminal output). An exit code other than 0 or 1 fails the calling test."""
    import json  # noqa: PLC0415
    out = tmp_path / "cmp.json"
    p = run_cli("compare", golden, target, "--json", out)
    assert p.returncode in (0, 1), p.stdout[-3000:] + p.stderr[-3000:]
    res = json.loads(out.read_text())
    res["_text"] = p.stdout
    return p.returncode, res


def has_subcommand(name):
    p = subprocess.run([parity_bin(), "--help"], capture_output=True, text=True)
    return (" " + name + " ") in p.stdout or ("\n  " + name) in p.stdout


def child_env():
    env = dict(os.environ)
    paths = [os.path.join(SOURCE_DIR, "python")]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def assert_same_statistics(a, b):
    """Two records of one event written by two capture paths (host and device): counts equal, float
    statistics equal to 1e-12 relative (the two paths reduce in different orders)."""
    import pytest  # noqa: PLC0415  (only the tests that compare paths need it)
    for k in ("nan", "inf", "zero", "subnormal", "numel"):
        assert a.stats[k] == b.stats[k], (a.name, k)
    for k in ("min", "max", "absmax", "mean", "l2norm"):
        assert a.stats[k] == pytest.approx(b.stats[k], rel=1e-12, abs=1e-300), (a.name, k)


def capture_host_and_device(tmp_path, body, **capture_kwargs):
    """Captures a fresh, seeded tiny Llama twice, under tmp_path/host (the host path) and tmp_path/device
    (the device pipeline, forced on CPU tensors), running body(cap, model, path, runs) inside each capture;
    returns {path: parity.load(run)}. `runs` holds the runs loaded so far (the host's, for the device's)."""
    import parity  # noqa: PLC0415
    import torch  # noqa: PLC0415
    from parity.examples import build_model  # noqa: PLC0415
    runs = {}
    for path in ("host", "device"):
        torch.manual_seed(0)
        model = build_model("llama", "tiny")
        cap = parity.capture(model, tmp_path / path, steps=[0, 1], **capture_kwargs)
        cap._device_path_on_host = path == "device"
        with cap:
            body(cap, model, path, runs)
        runs[path] = parity.load(tmp_path / path)
    return runs


def run_example(module, out, *args):
    """`python -m parity.examples.<module> OUT ARGS...` with this source tree's package: OUT, as a string."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(SOURCE_DIR, "python"),
                                                                      os.environ.get("PYTHONPATH", "")])))
    subprocess.run([sys.executable, "-m", "parity.examples." + module, str(out), *args], check=True, env=env,
                   timeout=300, capture_output=True)
    return str(out)


@contextlib.contextmanager
def one_process_mesh(tmp_path, names=None):
    """A one-process gloo group and a 1-device CPU DeviceMesh over it (skipping the test where torch has no
    gloo): yields (mesh, torch.distributed.tensor); the group is destroyed after."""
    import pytest  # noqa: PLC0415
    dist = pytest.importorskip("torch.distributed")
    tensor_mod = pytest.importorskip("torch.distributed.tensor")
    from torch.distributed.device_mesh import init_device_mesh  # noqa: PLC0415

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    dist.init_process_group("gloo", init_method="file://" + str(tmp_path / "pg"), rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,), mesh_dim_names=names), tensor_mod
    finally:
        dist.destroy_process_group()

