"""Torch and the C++ extension, imported when first used: importing parity.replay imports neither (a run
without op events is answered without torch, docs/replay.md)."""


def _torch():
    import torch

    return torch

_CORE = []


def _core():
    if not _CORE:
        from .._core import core

        _CORE.append(core)
    return _CORE[0]
