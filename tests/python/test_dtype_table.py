"""One dtype table (include/parity/dtype.h, issue 32 §4): the Python package's maps of foreign types to
parity dtypes — capture's torch dtypes, load's numpy dtypes, emulation's formats — are checked against the
core's table through `_parity_core.dtypes()`, so none can name a dtype the core does not have, give it
another element size, or restate a format limit differently."""
import importlib

import numpy as np
import torch

from parity import emulation
from parity._core import core
from parity._tensors import DTYPE_NAMES

TABLE = {d["name"]: d for d in core.dtypes()}
load = importlib.import_module("parity.load")  # the module (parity.load is also the function)


def test_the_core_table_is_every_dtype_once():
    names = [d["name"] for d in core.dtypes()]
    assert len(names) == len(set(names)) == 12
    assert TABLE["bf16"]["size"] == 2 and TABLE["bf16"]["is_float"]
    assert TABLE["f8_e4m3"]["max_finite"] == 448.0 and TABLE["i64"]["max_finite"] is None


def test_capture_names_torch_dtypes_as_the_core_does():
    for torch_dtype, name in DTYPE_NAMES.items():
        assert name in TABLE, name
        assert torch.empty((), dtype=torch_dtype).element_size() == TABLE[name]["size"], name
        assert torch_dtype.is_floating_point == TABLE[name]["is_float"], name
    # every dtype the core knows is one capture can record (bool and the fp8 pair where this torch has them)
    assert set(DTYPE_NAMES.values()) == set(TABLE)


def test_load_reads_each_dtype_with_elements_of_its_size():
    assert set(load._NP_DTYPES) == set(TABLE)
    for name, np_dtype in load._NP_DTYPES.items():
        assert np.dtype(np_dtype).itemsize == TABLE[name]["size"], name


def test_emulation_formats_are_core_dtypes_with_the_core_limits():
    for fmt, name in emulation._CORE_DTYPE.items():
        assert TABLE[name]["is_float"], fmt
    assert emulation._FP8_MAX == {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0}
    for fmt, limit in emulation._FP8_MAX.items():
        assert limit == TABLE[emulation._CORE_DTYPE[fmt]]["max_finite"]
