"""Which recorded ops can be called again, and the callable a replay spec names: the op families replay treats
apart (casts, quantisers, collectives, random ops, dropout) and the reason an event is not replayed."""
from .._op_tables import _COLLECTIVES  # the collectives capture records as op events
from ._lazy import _torch

SPEC_VERSION = 1  # the highest args.replay["v"] this engine reads (parity._tensors.REPLAY_SPEC_VERSION)

_CASTS = frozenset("to type half float double bfloat16 int long short char byte".split())

_QUANTISERS = frozenset("round floor ceil trunc fix".split())

_RANDOM = frozenset("""rand rand_like randn randn_like randint randint_like randperm bernoulli bernoulli_ multinomial
normal normal_ uniform_ exponential_ geometric_ cauchy_ log_normal_ random_ poisson rrelu""".split())

_DROPOUTS = frozenset("dropout dropout1d dropout2d dropout3d alpha_dropout feature_alpha_dropout".split())


def _numel(rec):
    """The element count of a record's shape."""
    n = 1
    for d in rec.shape:
        n *= int(d)
    return n


class _NotReplayable(Exception):
    pass


def _spec_problem(ev):
    """The reason `ev` cannot be called again, or None."""
    name = ev.stem.rsplit("/", 1)[-1].split("#")[0]
    if name in _COLLECTIVES:
        return "collective: its result depends on the other ranks' tensors"
    if not ev.outputs:
        return "no output recorded"
    missing_data = [r for r in list(ev.inputs.values()) + list(ev.outputs.values())
                    if not r.has_data and _numel(r) > 0]
    if missing_data:
        r = missing_data[0]
        how = "checksum" if r.crc32c is not None else "statistics"
        return "{}-mode dump: the tensors were not recorded (capture with mode='tensor')".format(how)
    if ev.described is None:
        return "no arguments recorded for this op"
    spec = ev.spec
    if spec is None:
        return "recorded by a writer before replay information (parity.dump/1): no typed arguments"
    if int(spec.get("v", 0)) > SPEC_VERSION:
        return "replay spec version {} is newer than this parity reads ({})".format(spec.get("v"), SPEC_VERSION)
    if spec.get("unreplayable"):
        return spec["unreplayable"]
    if name in _RANDOM or (name in _DROPOUTS and _dropout_active(spec)):
        return "random: its output depends on the generator state"
    return None


def _dropout_active(spec):
    kw = spec.get("kwargs", {})
    args = spec.get("args", [])
    training = kw.get("training", args[2] if len(args) > 2 else {"t": "bool", "v": True})
    p = kw.get("p", args[1] if len(args) > 1 else {"t": "float", "v": 0.5})
    return bool(training.get("v")) and float(p.get("v") or 0) > 0

_RESOLVED = {}


def resolve(fn):
    """The callable named by a spec's `fn` ("torch.Tensor.softmax", "torch.nn.functional.layer_norm")."""
    if fn not in _RESOLVED:
        _RESOLVED[fn] = _resolve(fn)
    return _RESOLVED[fn]


def _resolve(fn):
    import importlib

    parts = fn.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for p in parts[cut:]:
                obj = getattr(obj, p)
            return obj
        except AttributeError:
            break
    raise _NotReplayable("torch {} has no {}".format(_torch().__version__, fn))
