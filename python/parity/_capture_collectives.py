"""torch.distributed collectives as op events (op and mix levels): the functions are replaced by wrappers
(restored on stop) that record what a collective reads and writes, and, at every level, invalidate cached
statistics of what it writes without moving version counters."""
import functools
import inspect
import threading

import torch

from ._capture_registry import _open_captures
from ._op_tables import _ASYNC_COLLECTIVES, _COLLECTIVES
from ._patches import SharedPatches
from ._tensors import describe_args, has_tensor


# One wrapper per collective, shared by every open capture (they all watch them).
_dist_patches = SharedPatches()

_in_collective = threading.local()  # depth > 0 inside a wrapped collective call


class _EqualsOriginal:
    """A wrapper that compares and hashes equal to the function it wraps: P2POp checks
    `op in [isend, irecv]`, which must keep accepting the function captured before start."""

    def __init__(self, fn, orig):
        self._fn, self.__wrapped__ = fn, orig
        functools.update_wrapper(self, orig)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __eq__(self, other):
        return other is self or other is self.__wrapped__ or other == self.__wrapped__

    def __hash__(self):
        return hash(self.__wrapped__)


def _make_collective_wrapper(name, orig):
    try:
        sig = inspect.signature(orig)
    except (TypeError, ValueError):
        sig = None

    def wrapper(*args, **kwargs):
        caps = [c for c in list(_open_captures) if c._watch_collectives]
        # torch 2.x: a collective may reach another wrapped one (or itself, through its torch-function
        # dispatch): the outermost call is the event.
        if not caps or sig is None or getattr(_in_collective, "depth", 0):
            return orig(*args, **kwargs)
        try:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
        except TypeError:
            return orig(*args, **kwargs)  # let torch report the bad call
        a = bound.arguments
        states = [(c, c._collective_before(name, a)) for c in caps]
        ok, out = False, None
        _in_collective.depth = 1
        try:
            out = orig(*args, **kwargs)
            ok = True
        finally:
            _in_collective.depth = 0
            for c, st in states:
                c._collective_after(name, a, st, ok)
        return out

    if name in ("isend", "irecv"):
        return _EqualsOriginal(wrapper, orig)
    return functools.wraps(orig)(wrapper)


def _install_collective_hooks():
    _dist_patches.acquire(_wrap_collectives)


def _wrap_collectives(replace):
    dist = getattr(torch, "distributed", None)
    try:
        if dist is None or not dist.is_available():
            return
    except Exception:
        return
    namespaces = [dist]
    c10d = getattr(dist, "distributed_c10d", None)
    if c10d is not None:
        namespaces.append(c10d)
    for name in _COLLECTIVES:
        orig = getattr(dist, name, None)
        if orig is None or not callable(orig):
            continue
        wrapper = _make_collective_wrapper(name, orig)
        for ns in namespaces:
            replace(ns, name, orig, wrapper)


def _uninstall_collective_hooks():
    _dist_patches.release()


def _one(objs):
    """A single argument stands for itself (index 0, no path), several for a list."""
    return objs[0] if len(objs) == 1 else objs


def _p2p_tensors(a):
    reads, writes = [], []
    for op in a.get("p2p_op_list") or ():
        t = getattr(op, "tensor", None)
        fn = getattr(getattr(op, "op", None), "__name__", "")
        if isinstance(t, torch.Tensor):
            (writes if "recv" in fn else reads).append(t)
    return reads, writes


class CollectiveEvents:
    """Capture's recording of collectives: the wrapper calls _collective_before and _collective_after."""

    @staticmethod
    def _collective_tensors(name, a):
        """(read, written, asynchronous) of a collective call whose bound arguments are a."""
        if name == "batch_isend_irecv":
            reads, writes = _p2p_tensors(a)
            return reads, writes, True
        read_params, write_params, _ = _COLLECTIVES[name]
        reads = [a[p] for p in read_params if a.get(p) is not None]
        writes = [a[p] for p in write_params if a.get(p) is not None]
        return _one(reads), _one(writes), name in _ASYNC_COLLECTIVES or a.get("async_op") is True

    @staticmethod
    def _is_root(a, which):
        """Whether this rank is the collective's src / dst (a global rank, or group_src / group_dst)."""
        dist = torch.distributed
        try:
            r = a.get(which)
            if r is None and a.get("group_" + which) is not None:
                return a["group_" + which] == dist.get_rank(a.get("group"))
            return r is None or r == dist.get_rank()
        except Exception:
            return True

    def _collective_before(self, name, a):
        """Records the collective's inputs as an op event `<parent>/<name>#k` (recorded step, capture
        thread); returns what _collective_after needs, or None when the call is not recorded."""
        if (not self._started or not self._recording or self._busy or self.level == "module"
                or threading.get_ident() != self._thread):
            return None  # module level: not an event, _collective_after only invalidates what it writes
        base, module, k = self._next_op_call(name)
        reads, writes, asynchronous = self._collective_tensors(name, a)
        if _COLLECTIVES[name][2] == "src" and not self._is_root(a, "src"):
            reads = None  # broadcast: off the source rank the tensor's old contents are not an input
        args = describe_args((), {p: v for p, v in a.items() if not isinstance(v, (torch.Tensor, list, tuple))})
        self._busy = True
        try:
            self._record_all(reads, base, module, name, "forward", "input", k,
                             args=args if asynchronous or not has_tensor(writes) else None)
        finally:
            self._busy = False
        return base, module, k, args

    def _collective_after(self, name, a, state, ok):
        """The collective has written its outputs (or failed): cached statistics of their memory are
        dropped (asynchronous: never cached again, the write lands at wait()); a recorded event gets
        its outputs, except an asynchronous one, whose outputs are not there yet."""
        _, writes, asynchronous = self._collective_tensors(name, a)
        if writes is not None:
            self._wrote(writes, escape=asynchronous)
        if state is None or not ok or asynchronous or not self._started or not has_tensor(writes):
            return
        if _COLLECTIVES[name][2] == "dst" and not self._is_root(a, "dst"):
            return  # reduce: the result is only defined on the destination rank
        base, module, k, args = state
        self._busy = True
        try:
            self._record_all(writes, base, module, name, "forward", "output", k, args=args)
        finally:
            self._busy = False
