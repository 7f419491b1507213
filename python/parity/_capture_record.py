"""Recording one tensor into the dump in the capture's mode: host tensors now (statistics reused while valid),
accelerator tensors through the device pipeline at the end of the step; the event filters and the tensors a dump
cannot hold."""
import contextlib
import json
import warnings
import weakref

import torch

from ._capture_memory import _storage_key
from ._tensors import DTYPE_NAMES, iter_input_tensors, iter_tensors

# The capture's own torch calls, with torch-function dispatch (modes and subclasses) off.
_own_calls = getattr(torch._C, "DisableTorchFunction", None) or contextlib.nullcontext

_STAT_KEYS = ("min", "max", "mean", "l2norm", "absmax", "nan", "inf", "zero", "subnormal")


class Recording:
    """Capture's recording of tensors."""

    def _wanted(self, name, direction):
        if self.direction != "both" and direction != self.direction:
            return False
        if self.include is not None and not self.include.search(name):
            return False
        if self.exclude is not None and self.exclude.search(name):
            return False
        return True

    def append_tensor(self, name, tensor, module="", op="", direction="forward", role="output", index=0,
                      call=0, args=None, extra=None):
        """Record one tensor under an explicit event name in the current step (used by log_logits and
        by tools that add their own events). Honours the capture's mode; returns the statistics."""
        self._check_started()
        return self._record(name, tensor, module, op, direction, role, index, call, args, extra, force=True)

    def _record(self, name, t, module, op, direction, role, index, call, args=None, extra=None, force=False):
        if not force and not self._wanted(name, direction):
            return None
        busy = self._busy
        self._busy = True
        try:
            # The calls below (dtype, detach, stride, data_ptr, _version, no_grad, ...) are the capture's own:
            # without torch-function dispatch they skip the op / watch mode's Python handler (~2-4 us a call).
            with _own_calls():
                if t.is_sparse or t.is_quantized or t.dtype not in DTYPE_NAMES or t.layout != torch.strided:
                    self.skipped += 1
                    return None
                t, extra = self._host_view(name, t, extra)
                if t is None:
                    self.skipped += 1
                    return None
                with self._lock:
                    order = self._order
                    self._order += 1
                with torch.no_grad():
                    return self._record_tensor(name, t, module, op, direction, role, index, call, order, args, extra)
        finally:
            self._busy = busy

    def _host_view(self, name, t, extra):
        """The tensor whose memory is recorded, and the record's extra. A DTensor (torch.distributed.tensor;
        FSDP2 `fully_shard` parameters are DTensors) is recorded as this rank's local shard — no collective
        runs inside a hook — with its placements, mesh shape and global shape under extra["dtensor"]; a
        tensor subclass without memory of its own is skipped. Each is named once in a warning."""
        if type(t).__name__ == "DTensor" and hasattr(t, "to_local") and hasattr(t, "placements"):
            info = {"placements": [str(p) for p in t.placements], "mesh_shape": list(t.device_mesh.shape),
                    "global_shape": list(t.shape)}
            local = t.to_local()
            self._warn_once("dtensor", "parity.capture: {} is a DTensor (placements {}, mesh {}): the local shard "
                            "of this rank is recorded (shape {}), not the global tensor of shape {}; compare it "
                            "with a run sharded the same way (docs/capture.md \"torch 2.x\")".format(
                                name, info["placements"], info["mesh_shape"], list(local.shape), info["global_shape"]))
            return local, dict(extra or {}, dtensor=info)
        try:
            has_memory = t.numel() == 0 or t.data_ptr() != 0
        except Exception:  # subclasses that refuse data_ptr()
            has_memory = False
        if not has_memory:
            self._warn_once("no-memory", "parity.capture: {} is a {} without memory of its own: not recorded "
                            "(counted in cap.skipped)".format(name, type(t).__name__))
            return None, extra
        return t, extra

    def _warn_once(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    def _record_tensor(self, name, t, module, op, direction, role, index, call, order, args, extra):
        x = t.detach()
        dtype = DTYPE_NAMES[x.dtype]
        shape = list(x.shape)
        stride = list(x.stride())
        device = str(x.device)
        args_json = json.dumps(args) if args is not None else ""
        extra_json = json.dumps(extra) if extra else ""
        want_crc = self.mode == "checksum"
        want_data = self.mode == "tensor"
        numel = x.numel()
        if x.device.type == "cpu" and not self._device_path_on_host:
            known = self._known.get(id(t))
            stats = crc = None
            if (known is not None and known[0]() is t and known[1] == t._version
                    and self._gen.get(known[4], 0) == known[5] and isinstance(known[2], list)):
                stats, crc = known[2], known[3]
            strided = False
            if stats is not None and not want_data and (crc is not None or not want_crc):
                ptr = 0  # nothing to read: statistics (and checksum) are known
            else:
                # A non-contiguous tensor is read where it lies, in logical order, by the C++ kernel (no
                # contiguous() copy on the training thread: docs/capture.md "Statistics").
                ptr = x.data_ptr()
                strided = not x.is_contiguous()
            res = self.writer.append_event(name, module, op, direction, role, index, call, self.step, order, dtype,
                                           shape, stride, device, ptr, numel, stats, want_crc, want_data,
                                           args_json, extra_json, crc, strided)
            if ptr and res is not None:
                try:
                    ref = weakref.ref(t)
                    version = t._version
                except (TypeError, RuntimeError):  # not weak-referenceable; inference tensors have no version
                    return res
                key = ptr - x.storage_offset() * x.element_size()
                if key in self._escaped:
                    return res
                self._known[id(t)] = (ref, version, [res[k] for k in _STAT_KEYS], res.get("crc32c"), key,
                                      self._gen.get(key, 0))
            return res
        # Accelerator: nothing here waits for the device. Statistics are reduced there and copied back in
        # stacked chunks; the bytes of tensor / checksum modes are copied into pinned staging buffers. Both
        # are written, in record order, when the step ends (_device_pipeline.py).
        meta = (name, module, op, direction, role, index, call, self.step, order, dtype, shape, stride, device, numel)
        if want_crc or want_data:
            self._pending.add_data(x, meta, args_json, extra_json, want_crc, want_data)
            return None
        # The same tensor recorded again (an op's output is the next op's input) reuses its partial
        # statistics on the device under the rules of the host cache (docs/capture.md "When statistics
        # are reused"): nothing is read back to decide, the partial tensor is never written.
        known = self._known.get(id(t))
        partial = None
        if (known is not None and known[0]() is t and known[1] == t._version
                and self._gen.get(known[4], 0) == known[5] and isinstance(known[2], tuple)):
            partial = known[2]
        partial = self._pending.add_stats(x, meta, args_json, extra_json, partial)
        if known is None or known[2] is not partial:
            try:
                ref = weakref.ref(t)
                version = t._version
            except (TypeError, RuntimeError):
                return None
            key = _storage_key(x)
            if key is not None and key not in self._escaped:
                self._known[id(t)] = (ref, version, partial, None, key, self._gen.get(key, 0))
        return None

    def _append_resolved(self, *args):
        w = self.writer
        if w is not None:
            w.append_event(*args)

    def _resolve_pending(self):
        busy = self._busy
        self._busy = True  # the stacking and copies below are ours, not op events
        try:
            with torch.no_grad():
                self._pending.resolve()
        finally:
            self._busy = busy

    def _record_all(self, obj, base, module, op, direction, role, call, args=None):
        """Record every tensor in obj as <base>/<direction>/<role>/<i>; returns [(i, tensor)]."""
        return self._record_indexed(((i, p, t) for i, (p, t) in enumerate(iter_tensors(obj))), base, module, op,
                                    direction, role, call, args)

    def _record_inputs(self, args, kwargs, base, module, op, call, skip=()):
        """Record a call's forward inputs; a None argument keeps its index (_tensors.iter_input_tensors).
        Tensors whose id is in `skip` (memory the call only writes) keep their index but are not recorded."""
        items = iter_input_tensors(args, kwargs)
        if skip:
            items = [(i, p, t) for i, p, t in items if id(t) not in skip]
        return self._record_indexed(items, base, module, op, "forward", "input", call)

    def _record_indexed(self, items, base, module, op, direction, role, call, args=None):
        out = []
        for i, path, t in items:
            self._record("{}/{}/{}/{}".format(base, direction, role, i), t, module, op, direction, role, i, call,
                         args if i == 0 else None, {"path": path} if path else None)
            out.append((i, t))
        return out
