"""docs/dump-format.md is complete enough to write a compatible dump: this file writes one with
nothing but the standard library (its own CRC32C, struct, json), following the page, and parity reads
it — records, statistics, memory-mapped tensors, scalars, the fingerprint — and reports a torn tail."""
import json
import os
import struct

import numpy as np

import capture_helpers
import parity

# CRC32C, reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF (docs/dump-format.md, Frames).
_TABLE = []
for _b in range(256):
    _c = _b
    for _ in range(8):
        _c = (_c >> 1) ^ (0x82F63B78 if _c & 1 else 0)
    _TABLE.append(_c)


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    for byte in data:
        c = (c >> 8) ^ _TABLE[(c ^ byte) & 0xFF]
    return c ^ 0xFFFFFFFF


def frame(obj):
    payload = json.dumps(obj).encode()
    length = struct.pack("<I", len(payload))
    return b"PFR1" + length + struct.pack("<I", crc32c(length + payload)) + payload


def stats(a):
    f = a.astype(np.float64)
    return {"min": f.min(), "max": f.max(), "mean": f.mean(), "l2norm": float(np.sqrt((f * f).sum())),
            "absmax": float(np.abs(f).max()), "nan": 0, "inf": 0, "zero": int((f == 0).sum()), "subnormal": 0,
            "numel": int(f.size)}


def write_foreign_run(root):
    part = os.path.join(root, "rank0")
    os.makedirs(part)
    tensors = [("embed/forward/output/0", np.arange(12, dtype=np.float32).reshape(3, 4)),
               ("head/forward/output/0", np.linspace(-1, 1, 5).astype(np.float64))]
    with open(os.path.join(part, "manifest.pfr"), "ab") as m, open(os.path.join(part, "data-000000.bin"), "ab") as d:
        m.write(frame({"kind": "header", "schema": "parity.dump/1", "rank": 0, "alignment": 64}))
        for order, (name, a) in enumerate(tensors):
            pad = (-d.tell()) % 64
            d.write(b"\0" * pad)
            offset = d.tell()
            d.write(a.astype(a.dtype.newbyteorder("<")).tobytes())
            d.flush()
            m.write(frame({"kind": "event", "name": name, "module": name.split("/")[0], "op": "Foreign",
                           "direction": "forward", "role": "output", "index": 0, "step": 0, "rank": 0,
                           "order": order, "dtype": {"float32": "f32", "float64": "f64"}[a.dtype.name],
                           "shape": list(a.shape), "stats": stats(a),
                           "crc32c": "{:08x}".format(crc32c(a.tobytes())),
                           "data": {"shard": "data-000000.bin", "offset": offset, "nbytes": a.nbytes}}))
        m.write(frame({"kind": "close", "events": 2}))
    with open(os.path.join(part, "scalars.pfr"), "ab") as s:
        s.write(frame({"kind": "scalars", "rank": 0, "step": 0, "values": {"loss": 1.25}}))
    with open(os.path.join(part, "environment.pfr"), "ab") as e:
        e.write(frame({"kind": "fingerprint", "rank": 0, "fingerprint": {"python": "3", "torch": "none"}}))
    return tensors


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283
    from parity._core import core

    assert core.crc32c(b"123456789") == 0xE3069283


def test_a_dump_written_from_the_documentation_reads_back(tmp_path):
    tensors = write_foreign_run(tmp_path / "run")
    run = parity.load(tmp_path / "run")
    assert not run.problems and run.parts[0]["closed"]
    for name, a in tensors:
        r = run.get(name)
        np.testing.assert_array_equal(r.array, a)
        assert r.array.ctypes.data % 64 == 0
        assert r.crc32c == crc32c(a.tobytes()) and r.stats["max"] == a.max()
    assert run.scalars() == {0: {"loss": 1.25}} and run.fingerprint == {"python": "3", "torch": "none"}
    capture_helpers.run_cli("info", tmp_path / "run", check=0)
    # a torn tail: append half a frame, as a writer killed mid-write would leave
    with open(tmp_path / "run" / "rank0" / "manifest.pfr", "ab") as m:
        m.write(frame({"kind": "event", "name": "late"})[:9])
    run = parity.load(tmp_path / "run")
    assert len(run.records) == 2 and any("torn record" in p for p in run.problems)
    info = capture_helpers.run_cli("info", tmp_path / "run", check=1)
    assert "TORN" in info.stdout
