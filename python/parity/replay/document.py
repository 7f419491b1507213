"""The parity.replay/1 document (docs/replay.md "JSON"): its schema id, the summary of a run's replay, and
writing it."""
import json
import sys

from .._core import core

SCHEMA = core.schemas.REPLAY  # the id is declared once, in include/parity/schemas.h


def _summary(results, total):
    reasons = {}
    for r in results:
        if r["status"] != "replayed":
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    rep = [r for r in results if r["status"] == "replayed"]
    return {"op_events": total, "selected": len(results), "replayed": len(rep),
            "not_replayed": len(results) - len(rep), "bit_exact": sum(1 for r in rep if r["bit_exact"]),
            "creates_error": sum(1 for r in rep if r["creates_error"]), "reasons": reasons}


def _write(doc, path):
    text = json.dumps(doc, indent=1, allow_nan=False)
    if path in (None, "-"):
        sys.stdout.write(text + "\n")
    else:
        with open(path, "w") as f:
            f.write(text + "\n")
