"""parity.load: a capture run read back through the C++ reader, tensors memory-mapped by numpy.

Records come in manifest order (execution order within each rank and step). A torn tail left by a
crash is not an error: `Run.problems` says where the dump ends and every complete record is there.
"""
import json

import numpy as np

from ._core import core

# numpy dtype of each parity dtype; bf16 and fp8 have no numpy dtype and come back as their raw bits
# (uint16 / uint8); RunRecord.to_float32() widens them exactly.
_NP_DTYPES = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.uint16,
    "f8_e4m3": np.uint8, "f8_e5m2": np.uint8, "i8": np.int8, "i16": np.int16,
    "i32": np.int32, "i64": np.int64, "u8": np.uint8, "bool": np.bool_,
}


class RunRecord:
    """One event: metadata (name, module, op, direction, role, index, step, rank, order, dtype, shape,
    stride, device), `stats` (dict), `crc32c` (int or None), `args` (op arguments, dict or None) and,
    for tensor-mode records, `array` (read-only numpy memmap of the stored bytes)."""

    __slots__ = ("name", "module", "op", "direction", "role", "index", "step", "rank", "order", "dtype",
                 "shape", "stride", "device", "stats", "crc32c", "_args", "file", "offset", "nbytes", "_run")

    def __init__(self, d, run):
        for k in ("name", "module", "op", "direction", "role", "index", "step", "rank", "order", "dtype",
                  "shape", "stride", "device", "stats", "crc32c", "file", "offset", "nbytes"):
            setattr(self, k, d[k])
        self._args = d["args"]
        self._run = run

    @property
    def has_data(self):
        return self.file is not None

    @property
    def args(self):
        return json.loads(self._args) if self._args else None

    @property
    def array(self):
        """The tensor as a read-only numpy array mapped from its shard (None without data)."""
        if self.file is None:
            return None
        mm = self._run._map(self.file)
        count = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        a = np.frombuffer(mm, dtype=_NP_DTYPES[self.dtype], count=count, offset=self.offset)
        return a.reshape(self.shape)

    def to_float32(self):
        """The tensor widened to float32 (exact for bf16, f16 and fp8)."""
        a = self.array
        if a is None:
            return None
        if self.dtype == "bf16":
            return (a.astype(np.uint32) << 16).view(np.float32)
        if self.dtype in ("f8_e4m3", "f8_e5m2"):
            import torch  # fp8 decoding: torch >= 2.1 only; numpy has none

            name = "float8_e4m3fn" if self.dtype == "f8_e4m3" else "float8_e5m2"
            return torch.from_numpy(a.copy()).view(getattr(torch, name)).float().numpy()
        return a.astype(np.float32)

    def __repr__(self):
        return "RunRecord({!r}, step={}, rank={}, {} {})".format(self.name, self.step, self.rank, self.dtype,
                                                                list(self.shape))


class Run:
    """A capture run: records, problems (torn tails, missing shards), parts, scalars, fingerprints."""

    def __init__(self, path):
        self.path = str(path)
        self._reader = core.RunReader(self.path)
        self._maps = {}
        self.records = [RunRecord(d, self) for d in self._reader.records()]
        self.problems = list(self._reader.problems())
        self.parts = list(self._reader.parts())
        self.fingerprints = {int(k): json.loads(v) for k, v in self._reader.fingerprints().items()}
        self._scalars = [(r, s, v) for r, s, v in ((r, s, json.loads(j)) for r, s, j in self._reader.scalars())
                         if isinstance(v, dict)]  # the reader lists a record that is not an object in problems
        self._index = {(r.rank, r.step, r.name): r for r in self.records}

    def _map(self, file):
        mm = self._maps.get(file)
        if mm is None:
            mm = self._maps[file] = np.memmap(file, dtype=np.uint8, mode="r")
        return mm

    @property
    def fingerprint(self):
        """The lowest rank's environment fingerprint (dict), or None."""
        return self.fingerprints[min(self.fingerprints)] if self.fingerprints else None

    def get(self, name, step=0, rank=0):
        """The record `name` of (rank, step); KeyError naming what is missing."""
        try:
            return self._index[(rank, step, name)]
        except KeyError:
            raise KeyError("{}: no record {!r} at rank {} step {}".format(self.path, name, rank, step)) from None

    def names(self, step=0, rank=0):
        return [r.name for r in self.records if r.step == step and r.rank == rank]

    def steps(self, rank=0):
        return sorted({r.step for r in self.records if r.rank == rank} |
                      {s for rr, s, _ in self._scalars if rr == rank})

    def scalars(self, rank=0):
        """{step: {name: value}} of everything cap.log() wrote for `rank` (later calls of a step merge)."""
        out = {}
        for r, s, values in self._scalars:
            if r == rank:
                out.setdefault(s, {}).update(values)
        return out

    def scalar_series(self, key, rank=0):
        """[(step, value)] of one logged scalar, in step order."""
        return [(s, v[key]) for s, v in sorted(self.scalars(rank).items()) if key in v]

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def __repr__(self):
        return "Run({!r}: {} records, {} parts, {} problems)".format(self.path, len(self.records), len(self.parts),
                                                                    len(self.problems))


def load(path):
    """Read the capture run at `path` (the run directory or one rank<R>/ part)."""
    return Run(path)
