"""The restricted .pt reader (src/formats/torch_pt.cpp) on files written by the real torch.save: every
dtype parity knows, transposed and offset views, nn.Parameter, and files it must refuse without
running them (a pickle that calls os.system, a dict, a tensor subclass), each refusal naming the file
and the opcode or global."""
import json
import os
import pickle
import subprocess

import numpy as np
import pytest
import torch

PARITY = os.environ.get("PARITY_BIN", "parity")


def compare(a, b, *extra):
    p = subprocess.run([PARITY, "compare", str(a), str(b), "--json", "-", "-q", *extra],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1, 2), f"rc={p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16, torch.int32,
          torch.int64, torch.uint8, torch.bool]
for _name in ("float8_e4m3fn", "float8_e5m2"):  # torch >= 2.1
    if hasattr(torch, _name):
        DTYPES.append(getattr(torch, _name))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_reads_back_exactly(tmp_path, dtype):
    x = (torch.randn(5, 7, generator=torch.Generator().manual_seed(1)) * 4).to(dtype)
    torch.save(x, tmp_path / "a.pt")
    # The same values through a second, independent reader: a .npy of the fp64 values (bool, ints and every
    # float type convert to float64 exactly), against which parity measures a max abs difference of 0.
    np.save(tmp_path / "a.npy", x.to(torch.float64).numpy())
    p = compare(tmp_path / "a.npy", tmp_path / "a.pt")
    out = json.loads(p.stdout)
    assert out["problems"] == []
    (row,) = out["rows"]
    assert row["target"]["shape"] == [5, 7]
    assert row["metrics"]["max_abs"] == 0.0, row


def test_views_parameters_and_offsets(tmp_path):
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    cases = {
        "transposed": base.t(),                 # a dense permutation: strides (1, 10)
        "param": torch.nn.Parameter(base[:2].clone()),
        "offset": base[3],                      # storage offset 30 inside a 60-element storage
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 4),
    }
    for name, t in cases.items():
        torch.save(t, tmp_path / f"{name}.pt")
        np.save(tmp_path / f"{name}.npy", t.detach().numpy())
        out = json.loads(compare(tmp_path / f"{name}.npy", tmp_path / f"{name}.pt").stdout)
        assert out["problems"] == [], (name, out["problems"])
        (row,) = out["rows"]
        assert row["target"]["shape"] == list(t.shape), name
        if t.numel():
            assert row["metrics"]["max_abs"] == 0.0, (name, row)


class Evil:
    """A pickle that runs a shell command when unpickled by pickle.load/torch.load(weights_only=False)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def refusal(tmp_path, obj, name):
    path = tmp_path / f"{name}.pt"
    torch.save(obj, path)
    np.save(tmp_path / "ref.npy", np.zeros(3, np.float32))
    p = compare(tmp_path / "ref.npy", path)
    assert p.returncode == 2, p.stdout + p.stderr  # the only target file is unreadable: no usable input
    return p.stderr


def test_pickle_code_is_never_run(tmp_path):
    marker = tmp_path / "pwned"
    err = refusal(tmp_path, Evil(marker), "evil")
    assert not marker.exists(), "parity executed pickle code"
    assert "evil.pt" in err
    assert "global 'posix.system'" in err or "global 'os.system'" in err, err


def test_non_tensor_objects_are_refused_by_name(tmp_path):
    err = refusal(tmp_path, {"w": torch.zeros(3)}, "dict")
    assert "dict.pt" in err and "opcode 0x7d ('}')" in err, err
    err = refusal(tmp_path, [torch.zeros(3)], "list")
    assert "list.pt" in err and "opcode 0x5d (']')" in err, err


def test_legacy_and_garbage_files_are_named(tmp_path):
    legacy = tmp_path / "legacy.pt"
    torch.save(torch.zeros(3), legacy, _use_new_zipfile_serialization=False)
    np.save(tmp_path / "ref.npy", np.zeros(3, np.float32))
    p = compare(tmp_path / "ref.npy", legacy)
    assert p.returncode == 2 and "legacy.pt" in p.stderr and "zip" in p.stderr, p.stderr
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(pickle.dumps(np.zeros(3)))
    p = compare(tmp_path / "ref.npy", garbage)
    assert p.returncode == 2 and "garbage.pt" in p.stderr, p.stderr


def test_truncated_files_error_never_crash(tmp_path):
    torch.save(torch.randn(4, 4), tmp_path / "full.pt")
    data = (tmp_path / "full.pt").read_bytes()
    np.save(tmp_path / "ref.npy", np.zeros((4, 4), np.float32))
    for cut in range(0, len(data), max(1, len(data) // 40)):
        (tmp_path / "cut.pt").write_bytes(data[:cut])
        p = compare(tmp_path / "ref.npy", tmp_path / "cut.pt")
        assert p.returncode == 2 and "cut.pt" in p.stderr, (cut, p.stderr)
