"""Emulated replay: the op run on its inputs held in another precision (bf16 / f16 with torch's own casts,
the formats of parity.emulation through registered rounding functions, docs/replay.md "--emulate")."""
from ._lazy import _torch
from .call import _call
from .measure import _measure, _num
from .ops import _NotReplayable


# Emulated precisions of the emulated replay: name -> (torch dtype name or None, rounding function or None).
# bf16 and fp16 run the op in that dtype with torch's own casts; other formats round through a registered
# function (register_emulator; parity.emulate of issue 11 §4 provides fp8 / int8 / FTZ).
_EMULATORS = {}


def register_emulator(name, round_fn):
    """Make `name` usable for emulated replay: round_fn(float tensor) -> float tensor holding the values
    that format keeps. The op runs in float32 on rounded inputs and its outputs are rounded too."""
    _EMULATORS[name] = round_fn


# The formats of precision emulation (parity.emulation, docs/emulation.md) beyond bf16/f16: fp8 with
# per-tensor scaling, int8 fake quantisation, TF32 inputs, flush-to-zero; the C++ core's kernels.
EMULATION_MODES = ("fp8_e4m3", "fp8_e5m2", "int8", "int8:channel", "tf32", "ftz")


def _register_emulation_modes():
    from .. import emulation

    for mode in EMULATION_MODES:
        register_emulator(mode, lambda t, mode=mode: emulation.round_tensor(t, mode))


_register_emulation_modes()


def emulated_outputs(spec, tensors, precision, device_map=None, autocast=()):
    """The op on inputs held in `precision`: bf16 / f16 run the op in that dtype (torch's casts and
    kernels); a registered emulator rounds inputs and outputs around a float32 op."""
    torch = _torch()
    if precision in ("bf16", "f16"):
        dt = torch.bfloat16 if precision == "bf16" else torch.float16
        low = {i: (t.to(dt) if t.is_floating_point() else t) for i, t in tensors.items()}
        return _call(spec, low, lambda d: dt if d.is_floating_point else d, device_map, autocast)
    rnd = _EMULATORS.get(precision)
    if rnd is None:
        raise _NotReplayable("no emulator for {} (bf16 and f16 are built in; fp8 / int8 / FTZ come from "
                             "parity.emulate, registered with parity.replay.register_emulator)".format(precision))
    low = {i: (rnd(t.float().cpu()).to(t.device) if t.is_floating_point() else t) for i, t in tensors.items()}
    return [rnd(o.float().cpu()) if o.is_floating_point() else o for o in
            _call(spec, low, lambda d: torch.float32 if d.is_floating_point else d, device_map, autocast)]


def _emulated(spec, tensors, precision, recorded, ref, u_of, n, device_map=None, autocast=()):
    """{"precision", "error_u"} of the op run in `precision` against the exact reference, or
    {"precision", "problem"} when it cannot run that way (CPU torch lacks many f16 kernels): the
    replay's own result stands either way."""
    try:
        em = [t.cpu() for t in emulated_outputs(spec, tensors, precision, device_map, autocast)]
        er, _, _ = _measure({i: em[i] for i in recorded if i < len(em)}, ref, u_of, n)
        return {"precision": precision, "error_u": _num(er)}
    except Exception as e:
        return {"precision": precision, "problem": "{}: {}".format(type(e).__name__, str(e)[:200])}
