"""parity.replay: call a recorded op again on its recorded inputs (docs/replay.md).

For every op event of a tensor-mode dump written with replay information (parity.dump/1.1, the
event's `args.replay`), the engine

  (a) runs the op in float64 on the recorded inputs widened exactly: the reference of what the op
      computes given its own inputs. Casts and quantisers (`.to(...)`, `.half()`, `round`, ...) are the
      identity there: their exact result is the value they were given, so the error they add is the
      rounding (or quantisation) they apply;
  (b) runs it again in the recorded dtypes, and says whether that reproduces the recorded outputs bit
      for bit;

and measures the recorded output's error against (a) in units of the expected rounding of its dtype,
u·sqrt(1 + log2 n) (include/parity/noise.h, docs/judgement.md "Noise unit"). An op whose ratio is above
the structural bound (32) *creates* error given its inputs; one within rounding only carries what its
inputs brought.

`confirm(golden, target, suspects)` is what `parity compare --replay` runs: for each suspect event
(an op, or a module through the op events inside it) it replays the target's ops with the golden's
call (the golden's callable and non-tensor arguments) on the target's inputs, and marks the suspect
`confirmed` when one of them creates error the golden's same op does not, `refuted` when every op
inside only carries it.

Command line (the `parity replay` subcommand runs this; it is also usable directly):
    python -m parity.replay run RUN [--event NAME]... [--module PREFIX]... [--suspects compare.json]
                                    [--emulate bf16|f16] [--limit N] --json OUT
    python -m parity.replay confirm GOLDEN TARGET --suspects-json IN --json OUT

The package, one module per purpose: events (a run's op events, their tensors, the selection), ops (which
ops can be called again, the callable a spec names), call (calling an op again; the exact reference),
measure (error in noise units: the core's rules), devices (where the replay runs), emulators (the op in
another precision), engine (mode "run"), confirm (mode "confirm"), document (the parity.replay/1 object),
progress, cli (`python -m parity.replay`). Importing it imports neither torch nor the extension (_lazy).
"""
# The names parity.replay has always offered (docs/replay.md, tests, bench/replay_cost.py).
from .call import _call, exact_outputs  # noqa: F401
from .cli import main  # noqa: F401
from .confirm import _confirm_op, _evidence, _ratio_text, confirm  # noqa: F401
from .devices import DeviceMap, _same_device, _why_not_exact  # noqa: F401
from .document import SCHEMA  # noqa: F401
from .emulators import _EMULATORS, EMULATION_MODES, emulated_outputs, register_emulator  # noqa: F401
from .engine import replay_event, run  # noqa: F401
from .events import OpEvent, _stem, is_op_event, op_events, record_tensor, select, suspects_from_compare  # noqa: F401
from .measure import bit_exact, error_ratio, expected_rounding, noise_class, unit_roundoff  # noqa: F401
from .ops import SPEC_VERSION, _NotReplayable, _spec_problem, resolve  # noqa: F401

__all__ = ["DeviceMap", "EMULATION_MODES", "OpEvent", "SCHEMA", "SPEC_VERSION", "bit_exact", "confirm",
           "emulated_outputs", "error_ratio", "exact_outputs", "expected_rounding", "is_op_event", "main", "noise_class", "op_events",
           "record_tensor", "register_emulator", "replay_event", "resolve", "run", "select", "suspects_from_compare",
           "unit_roundoff"]
