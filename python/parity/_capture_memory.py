"""What the capture knows about tensor memory (docs/capture.md "When statistics are reused", "Uninitialised
memory"): storage identity and version counters, writes that bypass them (aliases, collectives), and memory from
`empty*` factories that holds no values yet."""
import threading
import weakref

import torch

from ._tensors import iter_input_tensors, iter_tensors


# Writes that replace every element of their receiver: after one covering the whole storage, the memory holds
# values. Other in-place writes (`__setitem__`, `index_put_`, `scatter_`, `index_add_`, ...) fill a part.
_FULL_WRITES = frozenset("copy_ fill_ zero_ normal_ uniform_ random_ bernoulli_ exponential_ geometric_ "
                         "log_normal_ cauchy_ set_".split())


def _storage_key(t):
    """Address of the start of t's storage: equal for every tensor that shares t's memory (views,
    `.data`, `detach()`), whatever its own version counter."""
    try:
        return t.data_ptr() - t.storage_offset() * t.element_size()
    except Exception:  # tensor subclasses without storage
        return None


def _version(t):
    """t's version counter (bumped by every in-place write); None for inference tensors, which have none."""
    try:
        return t._version
    except RuntimeError:
        return None


def _versions(tensors):
    """{id(t): version} of tensors, to tell afterwards which of them a call returned unchanged."""
    return {id(t): _version(t) for t in tensors}


def _drop(obj, tensors):
    """obj without the tensors in `tensors` (by identity): None when obj is one of them, a list otherwise."""
    ids = {id(t) for t in tensors}
    if isinstance(obj, torch.Tensor):
        return None if id(obj) in ids else obj
    return [t for _, t in iter_tensors(obj) if id(t) not in ids]


class MemoryTracking:
    """Capture's memory bookkeeping: which cached statistics are still valid, which memory holds no values."""

    def _wrote(self, obj, escape=False):
        """Tensors in obj were (or may be) written without their version counter moving: every cached
        statistic of memory they share is invalid; escape: and never cached again."""
        mine = threading.get_ident() == self._thread
        busy = self._busy
        if mine:
            self._busy = True  # data_ptr() below must not come back through the op mode
        try:
            for _, t in iter_tensors(obj):
                self._known.pop(id(t), None)
                key = _storage_key(t)
                if key is None:
                    continue
                if escape:
                    self._escaped.add(key)
                self._gen[key] = self._gen.get(key, 0) + 1
        finally:
            if mine:
                self._busy = busy

    def _note_uninitialised(self, out):
        """`out` came from an `empty*` factory: its memory holds no values until writes have covered it."""
        if not isinstance(out, torch.Tensor):
            return
        busy, self._busy = self._busy, True  # data_ptr() must not come back through the op mode
        try:
            key = _storage_key(out)
            if key is not None and out.numel() > 0:
                self._uninit[key] = [weakref.ref(out), 0]  # the factory's tensor, elements written so far
        except TypeError:  # not weak-referenceable
            pass
        finally:
            self._busy = busy

    def _uninitialised(self, t):
        """Whether t's memory came from an `empty*` factory whose tensor still lives and that writes have not
        covered yet (_count_written)."""
        if not self._uninit or not isinstance(t, torch.Tensor):
            return False
        entry = self._uninit.get(_storage_key(t))
        return entry is not None and entry[0]() is not None

    def _count_written(self, name, args, kwargs, written):
        """After a call wrote into fresh memory: add the elements it wrote — a whole receiver or `out=`
        destination for `copy_`-like fills and `out=`, the values' element count for indexed writes
        (`__setitem__`, `index_put_`, `scatter_`, ...) — and forget the memory once the writes cover it
        (Mixtral's inverse permutation: one `__setitem__` of n values into n elements; DeepSeek-V3's keys:
        two `copy_` into the halves of a `new_empty` buffer)."""
        destinations = [t for _, t in iter_tensors(kwargs.get("out"))]
        values = [t for _, _, t in iter_input_tensors(args[1:], {k: v for k, v in kwargs.items() if k != "out"})]
        for _, t in iter_tensors(written):
            key = _storage_key(t)
            entry = self._uninit.get(key)
            base = entry[0]() if entry is not None else None
            if base is None:
                continue
            whole = name in _FULL_WRITES or any(t is d for d in destinations)
            entry[1] += t.numel() if whole else (values[-1].numel() if values and values[-1].numel() > 1 else 0)
            if entry[1] >= base.numel():
                del self._uninit[key]
