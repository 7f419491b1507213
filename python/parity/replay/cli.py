"""`python -m parity.replay run|confirm` (what `parity replay` and `compare --replay` run, docs/replay.md)."""
import json
import os
import sys

from .confirm import confirm
from .document import _write
from .emulators import _EMULATORS
from .engine import run


def main(argv=None):
    import argparse

    summary = sys.modules[__package__].__doc__.split("\n\n")[0]  # the package's first line
    ap = argparse.ArgumentParser(prog="python -m parity.replay", description=summary)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="replay the op events of one run")
    r.add_argument("run")
    r.add_argument("--event", action="append", default=[])
    r.add_argument("--module", action="append", default=[])
    r.add_argument("--suspects")
    r.add_argument("--emulate", choices=sorted({"bf16", "f16"} | set(_EMULATORS)))
    r.add_argument("--limit", type=int, default=0)
    r.add_argument("--device", default="auto",
                   help="where the recorded-dtype replay runs: auto (the recorded device when present), cpu, cuda:N")
    r.add_argument("--json", default="-")
    r.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    c = sub.add_parser("confirm", help="replay suspects of a comparison in both runs")
    c.add_argument("golden")
    c.add_argument("target")
    c.add_argument("--suspects-json", required=True)
    c.add_argument("--json", default="-")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "run":
            if not os.path.exists(a.run):
                raise ValueError("{}: no such run directory".format(a.run))
            doc = run(a.run, a.event, a.module, a.suspects, a.emulate, a.limit,
                      progress=False if a.no_progress else None, device=a.device)
        else:
            with open(a.suspects_json) as f:
                doc = confirm(a.golden, a.target, json.load(f))
    except (OSError, ValueError, RuntimeError) as e:  # bad input: named, exit 2 (docs/replay.md)
        sys.stderr.write("parity replay: {}\n".format(e))
        return 2
    _write(doc, a.json)
    return 0
