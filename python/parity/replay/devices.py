"""Where the recorded-dtype replay runs (docs/replay.md "Device"): each input on the device it was recorded on
when this torch has it, else the host, or one device for everything."""
from ._lazy import _torch


class DeviceMap:
    """Where the recorded-dtype replay runs (docs/replay.md "Device"): choice "auto" puts each tensor and
    device argument on the device it was recorded on when this torch has that device, else on the host;
    "cpu" (or any device name) puts everything there."""

    def __init__(self, choice="auto"):
        self.choice = choice or "auto"
        self._cache = {}
        if self.choice != "auto":
            torch = _torch()
            try:
                dev = torch.device(self.choice)
            except (RuntimeError, TypeError) as e:
                raise ValueError("--device {}: not a device ({})".format(self.choice, e))
            if not _available(dev):
                raise ValueError("--device {}: this torch ({}) has no such device".format(self.choice, torch.__version__))
            self._fixed = dev
        else:
            self._fixed = None

    def __call__(self, recorded):
        if self._fixed is not None:
            return self._fixed
        key = str(recorded or "cpu")
        dev = self._cache.get(key)
        if dev is None:
            torch = _torch()
            try:
                dev = torch.device(key)
            except (RuntimeError, TypeError):
                dev = torch.device("cpu")
            if not _available(dev):
                dev = torch.device("cpu")
            self._cache[key] = dev
        return dev


def _available(dev):
    torch = _torch()
    if dev.type == "cpu":
        return True
    mod = getattr(torch, dev.type, None)
    try:
        if mod is None or not mod.is_available():
            return False
        return dev.index is None or dev.index < mod.device_count()
    except Exception:
        return False


def _same_device(a, b):
    """Whether two device names are one device ("cuda" and "cuda:0": an unindexed name is device 0 here)."""
    def norm(x):
        kind, _, index = str(x or "cpu").partition(":")
        return kind, (0 if kind == "cpu" or not index else int(index))

    try:
        return norm(a) == norm(b)
    except ValueError:
        return str(a) == str(b)


def _placed(ev, tensors, devices):
    """The inputs on their replay devices (each where it was recorded, mapped by `devices`)."""
    out = {}
    for i, t in tensors.items():
        dev = devices(ev.inputs[i].device)
        out[i] = t if dev.type == "cpu" else t.to(dev)
    return out


def _why_not_exact(recorded_dev, replay_dev):
    if not _same_device(recorded_dev, replay_dev):
        return "recorded on {}, replayed on {}: another kernel".format(recorded_dev, replay_dev)
    return "the replay on this machine differs from the recorded output"
