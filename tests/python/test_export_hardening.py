"""`parity export` writes only inside its output directory and says truthfully what it wrote (issue 14):
no write through a planted link (dangling out/index.json, symlinked out/rank0), unique safetensors keys
(a record named __metadata__, two records of one name), no broken .npy header for a tensor of ~22k
dimensions, and a failed write names the reason (strerror) and the tensors, and leaves no partial file."""
import json
import os
import resource
import signal
import struct
import subprocess

import numpy as np
import pytest

import capture_helpers
from test_capture_format import crc32c, frame


def write_run(root, tensors):
    """A capture run of (name, array[, shape]) records at rank 0 step 0, as the format page describes."""
    part = os.path.join(root, "rank0")
    os.makedirs(part)
    with open(os.path.join(part, "manifest.pfr"), "ab") as m, open(os.path.join(part, "data-000000.bin"), "ab") as d:
        m.write(frame({"kind": "header", "schema": "parity.dump/1", "rank": 0, "alignment": 64}))
        for order, t in enumerate(tensors):
            name, a = t[0], t[1]
            shape = t[2] if len(t) > 2 else list(a.shape)
            d.write(b"\0" * ((-d.tell()) % 64))
            offset = d.tell()
            d.write(a.tobytes())
            d.flush()
            m.write(frame({"kind": "event", "name": name, "module": "m", "op": "Foreign", "direction": "forward",
                           "role": "output", "index": 0, "step": 0, "rank": 0, "order": order,
                           "dtype": {"float32": "f32", "float64": "f64"}[a.dtype.name], "shape": shape,
                           "crc32c": "{:08x}".format(crc32c(a.tobytes())),
                           "data": {"shard": "data-000000.bin", "offset": offset, "nbytes": a.nbytes}}))
        m.write(frame({"kind": "close", "events": len(tensors)}))


def files_under(d):
    return sorted(os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs)


@pytest.fixture
def run(tmp_path):
    write_run(tmp_path / "run", [("a/forward/output/0", np.arange(6, dtype=np.float32)),
                                 ("b/forward/output/0", np.ones(3, dtype=np.float64))])
    return tmp_path / "run"


def test_a_dangling_index_link_is_not_followed(run, tmp_path):
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    os.symlink(outside / "index.json", out / "index.json")  # dangling: the target does not exist
    p = capture_helpers.run_cli("export", run, "-o", out)
    assert p.returncode == 2 and "index.json" in p.stderr and "already exists" in p.stderr, p.stdout + p.stderr
    assert files_under(outside) == []
    assert files_under(out) == ["index.json"]  # only the planted link; nothing written


@pytest.mark.parametrize("link", ["rank0", "rank0/step0"])
def test_a_symlinked_folder_inside_the_output_is_refused(run, tmp_path, link):
    out, outside = tmp_path / "out", tmp_path / "outside"
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    outside.mkdir()
    os.symlink(outside, out / link)
    p = capture_helpers.run_cli("export", run, "-o", out)
    assert p.returncode == 2 and "symbolic link" in p.stderr, p.stdout + p.stderr
    assert files_under(outside) == []
    assert not (out / "index.json").exists()


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return header, data


def test_safetensors_keys_are_unique_and_the_count_is_true(tmp_path):
    a, b, c = np.arange(4, dtype=np.float32), np.full(2, 7.0, dtype=np.float32), np.full(3, -1.0, dtype=np.float64)
    write_run(tmp_path / "run", [("__metadata__", a), ("x", b), ("x", c)])
    out = tmp_path / "out"
    p = capture_helpers.run_cli("export", tmp_path / "run", "--format", "safetensors", "-o", out)
    assert p.returncode == 0, p.stdout + p.stderr
    header, data = read_safetensors(out / "rank0_step0.safetensors")
    meta = header.pop("__metadata__")
    assert meta["format"] == "pt" and all(isinstance(v, str) for v in meta.values()), meta
    assert len(header) == 3, header
    assert "exported 3 tensors" in p.stdout, p.stdout
    got = sorted(np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]],
                               dtype={"F32": np.float32, "F64": np.float64}[e["dtype"]]).tolist()
                 for e in header.values())
    assert got == sorted([a.tolist(), b.tolist(), c.tolist()])
    renamed = json.loads(meta["parity.renamed"])
    assert sorted(renamed.values()) == ["__metadata__", "x"] and set(renamed) <= set(header), meta


def test_a_tensor_of_22k_dimensions_is_an_error_not_a_broken_npy(tmp_path):
    write_run(tmp_path / "run", [("ok/forward/output/0", np.arange(3, dtype=np.float32)),
                                 ("deep/forward/output/0", np.ones(1, dtype=np.float32), [1] * 22000)])
    out = tmp_path / "out"
    p = capture_helpers.run_cli("export", tmp_path / "run", "-o", out)
    assert p.returncode == 1 and "deep/forward/output/0" in p.stderr and "22000 dimensions" in p.stderr, \
        p.stdout + p.stderr
    assert "exported 1 tensors" in p.stdout
    for f in files_under(out):
        if f.endswith(".npy"):
            np.load(out / f)  # every file written is a valid .npy
    assert not any("deep" in f for f in files_under(out))


def _limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_failed_write_names_the_reason_and_the_tensors_and_leaves_no_partial_file(tmp_path):
    """Every tensor is larger than the file-size limit (a full disk as far as export can tell)."""
    big = np.arange(4096, dtype=np.float32)  # 16 KiB each
    write_run(tmp_path / "run", [("a/forward/output/0", big), ("b/forward/output/0", big)])
    for fmt in ("npy", "safetensors"):
        out = tmp_path / ("out_" + fmt)
        p = subprocess.run([capture_helpers.parity_bin(), "export", str(tmp_path / "run"), "--format", fmt,
                            "-o", str(out)], capture_output=True, text=True, timeout=120, preexec_fn=_limit_file_size)
        assert p.returncode != 0, p.stdout + p.stderr
        assert os.strerror(27) in p.stderr, p.stderr  # EFBIG: "File too large"
        assert "a/forward/output/0" in p.stderr and "b/forward/output/0" in p.stderr, p.stderr
        assert "exported 0 tensors" not in p.stdout, p.stdout
        assert files_under(out) == [], files_under(out)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_output_folder_names_errno_and_tensors(run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o555)
    try:
        p = capture_helpers.run_cli("export", run, "-o", out)
    finally:
        out.chmod(0o755)
    assert p.returncode != 0 and os.strerror(13) in p.stderr and "a/forward/output/0" in p.stderr, p.stderr
    assert "exported 0 tensors" not in p.stdout and files_under(out) == []
