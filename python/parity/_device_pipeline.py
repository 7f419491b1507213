"""Recording accelerator tensors without waiting for the accelerator (docs/capture.md, "Statistics").

Every event of a device tensor is queued; nothing on the host waits for the device until the end of
the step (next_step / flush / stop), or until a bound below is reached:

- statistics mode: device_partial() enqueues a few reductions giving 8 float64 values on the device.
  Up to CHUNK events are stacked into one (k, 8) tensor, copied with one non_blocking copy into a
  pinned host buffer, and one CUDA event marks the chunk's completion. At most MAX_CHUNKS chunks are
  in flight; past that the oldest is resolved (its copy finished long ago, in practice).
- tensor / checksum modes: the bytes are copied with non_blocking=True into a pinned staging buffer
  (recycled through a free list: after the first step no pinned memory is allocated) and a CUDA event
  marks the copy. The bytes in flight are bounded by `staging_bytes`: past that the oldest events are
  resolved first (the device then waits for nothing but those copies). The statistics and the CRC of
  those events are computed on the host from the copied bytes by the C++ kernel, as for host tensors.

Resolution is strictly in queue order, so events are written in the order they were recorded and none
is lost; the copies run on the tensor's current stream, after the kernels that produced the tensor and
before any later kernel that could modify it in place.
Host tensors routed here (Capture._device_path_on_host, tests) use ordinary memory and no events: the
copies are then synchronous, the rest of the pipeline is the same.
"""
import collections

import torch

from ._stats import device_partial_tagged, finish_row

CHUNK = 256          # events per stacked statistics copy
MAX_CHUNKS = 64      # statistics chunks in flight before the oldest is resolved


def _round_up(n):
    """Capacity class of a staging buffer: powers of two from 4 KiB to 1 MiB, then whole MiB (a training
    step records the same sizes every step, so exact classes are reused; no 2x waste on big tensors)."""
    if n > 1 << 20:
        return (n + (1 << 20) - 1) & ~((1 << 20) - 1)
    c = 4096
    while c < n:
        c <<= 1
    return c


class DevicePipeline:
    def __init__(self, append, staging_bytes=256 << 20):
        self._append = append              # writer.append_event(name, ..., args_json, extra_json)
        self.staging_bytes = int(staging_bytes)
        self._partials = []                # statistics not stacked yet: (partial, meta, args, extra, is_float)
        self._queue = collections.deque()  # in flight, in record order: ("stats"|"data", event, buffer, payload)
        self._chunks = 0
        self._inflight = 0                 # staging bytes in flight
        self._free = {}                    # capacity -> [pinned uint8 buffers]
        self._free_bytes = 0
        self.copies = 0                    # device-to-host copies issued (tests, benchmarks)
        self.reductions = 0                # device_partial calls (the rest reused a partial)

    def __len__(self):
        return len(self._partials) + sum(len(p[3][1]) if p[0] == "stats" else 1 for p in self._queue)

    # ---- statistics --------------------------------------------------------------------------------------
    def add_stats(self, x, meta, args_json, extra_json, partial=None):
        """Queue the statistics of x; partial: its (tensor, tag) of device_partial_tagged computed already
        (the same tensor recorded under another name). Returns the partial."""
        if self._partials and self._partials[-1][0].device != x.device:
            self._stack()
        if partial is None:
            partial = device_partial_tagged(x)
            self.reductions += 1
        self._partials.append((partial[0], meta, args_json, extra_json, partial[1]))
        if len(self._partials) >= CHUNK:
            self._stack()
        return partial

    def _stack(self):
        items, self._partials = self._partials, []
        if not items:
            return
        dev = items[0][0].device
        stacked = torch.stack([p[0] for p in items])
        buf, pin = self._buffer(stacked.numel() * 8, dev)
        host = buf.view(torch.float64)[:stacked.numel()].view(stacked.shape)
        host.copy_(stacked, non_blocking=pin)
        self.copies += 1
        ev = self._event(dev)
        self._queue.append(("stats", ev, (buf, pin), (host, [(p[1], p[2], p[3], p[4]) for p in items])))
        self._chunks += 1
        while self._chunks > MAX_CHUNKS:
            self._resolve_one()

    # ---- bytes (tensor and checksum modes) ---------------------------------------------------------------
    def add_data(self, x, meta, args_json, extra_json, want_crc, want_data):
        self._stack()  # statistics recorded before stay before (one mode per capture: never in practice)
        src = x if x.is_contiguous() else x.contiguous()
        nbytes = src.numel() * src.element_size()
        while self._queue and self._inflight + nbytes > self.staging_bytes:
            self._resolve_one()
        buf, pin = self._buffer(nbytes, x.device)
        if nbytes:
            buf[:nbytes].view(src.dtype).copy_(src.reshape(-1), non_blocking=pin)
            self.copies += 1
        self._inflight += buf.numel()
        self._queue.append(("data", self._event(x.device), (buf, pin),
                            (meta, args_json, extra_json, want_crc, want_data)))

    # ---- resolution ----------------------------------------------------------------------------------------
    def resolve(self):
        """Write every queued event, in record order (waits for their copies)."""
        self._stack()
        while self._queue:
            self._resolve_one()

    def _resolve_one(self):
        kind, ev, (buf, pin), payload = self._queue.popleft()
        if ev is not None:
            ev.synchronize()
        if kind == "stats":
            self._chunks -= 1
            host, payload = payload
            rows = host.tolist()
            words = host.view(torch.int64).tolist()  # the Triton path's rows are int64 words
            self._recycle(buf, pin)
            for row, word, (meta, args_json, extra_json, tag) in zip(rows, words, payload):
                numel = meta[-1]
                self._append(*meta[:-1], 0, numel, finish_row(row, word, numel, tag), False, False, args_json,
                             extra_json, None)
            return
        meta, args_json, extra_json, want_crc, want_data = payload
        self._inflight -= buf.numel()
        try:
            self._append(*meta[:-1], buf.data_ptr(), meta[-1], None, want_crc, want_data, args_json, extra_json,
                         None)
        finally:
            self._recycle(buf, pin)

    # ---- pinned staging buffers ------------------------------------------------------------------------------
    def _buffer(self, nbytes, device):
        cap = _round_up(nbytes)
        pin = device.type == "cuda"
        free = self._free.get((cap, pin))
        if free:
            self._free_bytes -= cap
            return free.pop(), pin
        return torch.empty(cap, dtype=torch.uint8, pin_memory=pin), pin

    def _recycle(self, buf, pin):
        cap = buf.numel()
        if self._free_bytes + cap > self.staging_bytes:
            return  # the free list is bounded too: let torch's host allocator have it
        self._free.setdefault((cap, pin), []).append(buf)
        self._free_bytes += cap

    @staticmethod
    def _event(device):
        if device.type != "cuda":
            return None  # host memory, synchronous copies: nothing to wait for
        ev = torch.cuda.Event()
        ev.record(torch.cuda.current_stream(device))
        return ev
