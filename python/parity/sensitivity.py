"""Sensitivity scan: which layers can run in a lower precision, and which must stay fp32 (docs/scan.md).

    result = parity.scan(model, batches, {"lower_to": "int8", "budget_kld": 0.01})

1. golden: the model as it is (fp32) on every batch; its token distributions are the reference;
2. single: each unit (a module path or an op class) lowered alone with parity.emulate, on every batch:
   token-distribution KL(golden || lowered), top-1 agreement and loss delta, each a mean over sequences with
   its standard error; units ranked by KLD (most sensitive first);
3. greedy: starting from nothing lowered, units are added least sensitive first and kept while the
   model's KLD stays within the budget; the rest stay fp32. The last accepted set is the plan.

Every measurement is appended to a JSONL state file as it is made; a rerun with the same file skips
what is already there (resumable). `python -m parity.sensitivity --factory FILE.py:FUNC` is the engine behind
`parity scan` (the factory returns (model, batches)).
"""
import argparse
import contextlib
import importlib.util
import json
import math
import os
import sys
import time

from . import emulation as em
from ._core import core

SCHEMA = core.schemas.SCAN  # the ids are declared once, in include/parity/schemas.h
STATE_SCHEMA = core.schemas.SCAN_STATE
_OP_CLASS_UNITS = ("softmax", "matmul")
# The defaults of a scan, held once: scan() fills a policy space from them, the engine's options default
# to them, and `parity scan` passes an option only when its user gave it. Its --help and docs/scan.md
# state them; tests/python/test_scan_defaults.py fails when either drifts from this table.
DEFAULTS = {"lower_to": "bf16", "budget_kld": 0.01, "greedy": True}
TABLE_ROWS = 20  # units shown in the terminal table (--limit; 0 = all)


# ------------------------------------------------------------------------------------------- batches

def _split_batch(batch):
    """A batch is the model's input (a tensor), or (input, targets), or a dict with input_ids/labels."""
    import torch

    if isinstance(batch, torch.Tensor):
        return batch, None
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    if isinstance(batch, dict) and "input_ids" in batch:
        return batch, batch.get("labels")
    raise ValueError("scan: a batch must be a tensor, an (inputs, targets) pair or a dict with input_ids; got "
                     + type(batch).__name__)


def _logits(model, inputs):
    out = model(**inputs) if isinstance(inputs, dict) else model(inputs)
    if hasattr(out, "logits"):
        out = out.logits
    elif isinstance(out, (tuple, list)):
        out = out[0]
    return out


def _forward_logits(model, batches):
    """Per batch: the logits, [sequences, tokens, vocab], detached."""
    import torch

    out = []
    with torch.no_grad():
        for b in batches:
            inputs, _ = _split_batch(b)
            logits = _logits(model, inputs)
            if logits.dim() == 2:
                logits = logits[:, None, :]
            out.append(logits.detach())
    return out


def _log_probs(logits):
    """log-softmax in float64. Called outside the emulation context: an op rule on softmax (log_softmax is in
    that class) must not round the measurement itself."""
    import torch

    return [torch.log_softmax(x.double(), dim=-1) for x in logits]


def _mean_se(values):
    """Mean and standard error (sample std / sqrt(n)) of per-sequence values; SE is 0 for one value."""
    n = len(values)
    if n == 0:
        return {"mean": None, "se": None, "n": 0}
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return {"mean": mean, "se": math.sqrt(var / n), "n": n}


def _sequence_kld(golden_logp, lowered_logp):
    """KL(golden || lowered) per token of one sequence ([tokens, vocab] log-probabilities), averaged, and
    how many tokens the lowered run left without a distribution. The per-token KL and its non-finite
    policy are the one row policy of compare and eval (core.kl_rows, docs/metrics.md "KL divergence"):
    a side holding NaN or +inf, or -inf everywhere, has no distribution; -inf entries are masked tokens.
    A token the golden has no distribution for is left out; one the lowered run has none for makes the
    sequence's KLD +inf (a lowering that breaks the distribution is never within a budget). None when no
    token has a KL."""
    r = core.kl_rows(golden_logp.detach().cpu().numpy(), lowered_logp.detach().cpu().numpy())
    if r["skipped_target"]:
        return math.inf, r["skipped_target"]
    return (r["mean"] if r["count"] else None), 0


def _measure(golden_logp, lowered_logp, batches):
    """KL(golden || lowered) per token, top-1 agreement and loss delta, each averaged per sequence, then
    the mean and standard error over sequences (tokens of one sequence are not independent)."""
    kld, top1, dloss = [], [], []
    nonfinite = 0
    for g, q, b in zip(golden_logp, lowered_logp, batches):
        _, targets = _split_batch(b)
        for gs, qs in zip(g.reshape(-1, *g.shape[-2:]), q.reshape(-1, *q.shape[-2:])):
            k, broken = _sequence_kld(gs, qs)
            nonfinite += broken
            if k is not None:
                kld.append(k)
        top1 += (g.argmax(-1) == q.argmax(-1)).double().mean(-1).tolist()
        if targets is not None:
            t = targets.to(g.device).long()
            if t.dim() == 1:
                t = t[:, None]
            valid = t >= 0  # -100 (ignore_index) and friends are skipped
            tt = t.clamp(min=0)[..., None]
            nll_g = -g.gather(-1, tt).squeeze(-1)
            nll_q = -q.gather(-1, tt).squeeze(-1)
            d = ((nll_q - nll_g) * valid).sum(-1) / valid.sum(-1).clamp(min=1)
            dloss += d.tolist()
    return {"kld": _mean_se(kld), "top1": _mean_se(top1),
            "loss_delta": _mean_se(dloss) if dloss else {"mean": None, "se": None, "n": 0},
            "nonfinite_tokens": nonfinite}


# ------------------------------------------------------------------------------------------- units

def default_units(model, lower_to):
    """The units a scan lowers one at a time when none are given: for matmul operand formats (int8, fp8,
    tf32) every GEMM module (nn.Linear, convolutions, HF Conv1D); for arithmetic formats (bf16, fp16, ftz)
    every module that owns parameters, plus the softmax op class."""
    mode = em.parse_mode(lower_to)
    units = []
    for name, module in model.named_modules():
        if not name:
            continue
        own = any(True for _ in module.parameters(recurse=False))
        if mode.operand_only:
            if type(module).__name__ in em._GEMM_TYPES:
                units.append(name)
        elif own:
            units.append(name)
    if not mode.operand_only:
        units.append("softmax")
    return units


# ------------------------------------------------------------------------------------------- state

class _State:
    """The JSONL state file: one JSON object per line, appended and flushed as each measurement is made."""

    def __init__(self, path, header):
        self.path = path
        self.done = {}
        if path and os.path.exists(path):
            with open(path) as f:
                for i, line in enumerate(f, 1):
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        # a torn last line (the previous run was killed mid-write) is dropped, not fatal
                        print("parity scan: {}:{}: unreadable line skipped (a torn write?)".format(path, i),
                              file=sys.stderr)
                        continue
                    if rec.get("schema") == STATE_SCHEMA and rec.get("kind") == "header":
                        if rec.get("config") != header:
                            raise ValueError("scan: {} was written by a scan with a different configuration ({}); "
                                             "use another --state file or delete it".format(path, rec.get("config")))
                        continue
                    self.done[rec.get("key")] = rec
        self._f = None
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            fresh = not os.path.exists(path) or os.path.getsize(path) == 0
            self._f = open(path, "a")
            if fresh:
                self._write({"schema": STATE_SCHEMA, "kind": "header", "config": header})

    def _write(self, rec):
        self._f.write(json.dumps(rec) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def add(self, rec):
        self.done[rec["key"]] = rec
        if self._f:
            self._write(rec)

    def close(self):
        if self._f:
            self._f.close()


class _Progress:
    """A one-line progress bar on stderr when it is a terminal (nothing otherwise)."""

    def __init__(self, total, enabled=None):
        self.total, self.n = max(total, 1), 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.t0 = time.monotonic()

    def step(self, label):
        self.n += 1
        if not self.enabled:
            return
        frac = min(self.n / self.total, 1.0)
        bar = "#" * int(frac * 30)
        eta = (time.monotonic() - self.t0) / self.n * (self.total - self.n)
        sys.stderr.write("\r[{:<30}] {}/{} {:<40.40} eta {:.0f}s".format(bar, self.n, self.total, label, eta))
        sys.stderr.flush()

    def done(self):
        if self.enabled:
            sys.stderr.write("\n")


# ------------------------------------------------------------------------------------------- scan

def scan(model, batches, policy_space=None, *, state_path=None, progress=None):
    """Scan `model` (fp32, eval mode is the caller's business) on `batches` (a list) over `policy_space`:

        {"lower_to": "int8",        # the mode each unit is lowered to (parity.emulate syntax)
         "units": [...] | None,     # module paths / patterns / op classes; None = default_units()
         "base": {},                # a policy applied in every run (golden included), e.g. {"*.norm": "fp32"}
         "budget_kld": 0.01,        # the plan's KL(golden || plan) mean must stay within this
         "greedy": True}            # also build the plan (False: rank only)

    A key left out takes its value from DEFAULTS (units: default_units()).
    Returns the parity.scan/1 result (docs/scan.md)."""
    space = _scan_space(model, policy_space)
    batches = list(batches)
    _check_scan_inputs(model, batches, space)
    lower_to, base, units = space["lower_to"], space["base"], space["units"]
    header = {"lower_to": lower_to, "base": base, "budget_kld": space["budget_kld"], "units": units,
              "batches": len(batches)}
    runs = _Runs(model, batches, _State(state_path, header))
    bar = _Progress(1 + len(units) + (len(units) if space["greedy"] else 0), progress)
    t_start = time.monotonic()
    try:
        golden, golden_s = runs.run(base)
        bar.step("golden")
        golden_loss = _golden_loss(golden, batches)
        ranked = _rank_units(runs, golden, space, bar)
        plan, steps = _greedy_plan(runs, golden, ranked, space, bar) if space["greedy"] else (None, [])
    finally:
        bar.done()
        runs.state.close()
    return _finite_or_none({
        "schema": SCHEMA,
        "lower_to": lower_to,
        "base": base,
        "budget_kld": space["budget_kld"],
        "batches": len(batches),
        "sequences": sum(int(g.shape[0]) for g in golden),
        "tokens": sum(int(g.shape[0] * g.shape[1]) for g in golden),
        "golden": {"loss": golden_loss, "seconds": golden_s},
        "units": [_unit_row(r) for r in ranked],
        "greedy": [_step_row(r) for r in steps],
        "plan": plan,
        "cost": runs.cost(time.monotonic() - t_start),
        "state_file": state_path,
    })


def _scan_space(model, policy_space):
    """policy_space with its defaults: lower_to, base, budget_kld, greedy and units (default_units when not
    given); unknown keys and an unknown mode are errors."""
    space = dict(policy_space or {})
    unknown = set(space) - {"lower_to", "units", "base", "budget_kld", "greedy"}
    if unknown:
        raise ValueError("scan: unknown policy_space keys: " + ", ".join(sorted(unknown)))
    lower_to = space.get("lower_to", DEFAULTS["lower_to"])
    em.parse_mode(lower_to)
    return {"lower_to": lower_to, "base": dict(space.get("base") or {}),
            "budget_kld": float(space.get("budget_kld", DEFAULTS["budget_kld"])),
            "greedy": bool(space.get("greedy", DEFAULTS["greedy"])),
            "units": list(space["units"]) if space.get("units") else default_units(model, lower_to)}


def _check_scan_inputs(model, batches, space):
    """Fails before any work: no batches, no units, or a unit that selects nothing."""
    if not batches:
        raise ValueError("scan: no batches")
    if not space["units"]:
        raise ValueError("scan: no units to lower (the model has no module {} acts on)".format(space["lower_to"]))
    for u in space["units"]:
        em.Emulation(model, {**space["base"], u: space["lower_to"]})


class _Runs:
    """The forward passes of a scan under emulation policies, counted, and each evaluation's record kept in (and
    resumed from) the state file."""

    def __init__(self, model, batches, state):
        self.model, self.batches, self.state = model, batches, state
        self.passes = self.resumed = 0

    def run(self, policy):
        """(log-probabilities of every batch, seconds) of the model under `policy` ({} or None: as it is)."""
        t0 = time.monotonic()
        ctx = em.emulate(self.model, policy) if policy else contextlib.nullcontext()
        with ctx:
            logits = _forward_logits(self.model, self.batches)
        logp = _log_probs(logits)
        self.passes += len(self.batches)
        return logp, time.monotonic() - t0

    def recorded(self, key, evaluate):
        """The record of evaluation `key`: the state file's when an earlier scan made it, else evaluate()'s,
        which the state file then keeps."""
        rec = self.state.done.get(key)
        self.resumed += rec is not None
        if rec is None:
            rec = evaluate()
            self.state.add(rec)
        return rec

    def cost(self, elapsed):
        return {"forward_passes": self.passes, "seconds": elapsed,
                "seconds_per_pass": elapsed / self.passes if self.passes else None,
                "evaluations_resumed": self.resumed}


def _rank_units(runs, golden, space, bar):
    """Each unit lowered alone, measured against the golden and ranked most sensitive first (rank 1)."""
    lower_to, base = space["lower_to"], space["base"]
    singles = []
    for u in space["units"]:
        key = "single|{}".format(u)

        def evaluate(u=u, key=key):
            logp, secs = runs.run({**base, u: lower_to})
            return {"key": key, "kind": "single", "unit": u, "mode": lower_to, "seconds": secs,
                    **_measure(golden, logp, runs.batches)}

        singles.append(runs.recorded(key, evaluate))
        bar.step(u)
    ranked = sorted(singles, key=lambda r: _sort_kld(r), reverse=True)
    for i, r in enumerate(ranked, 1):
        r["rank"] = i
    return ranked


def _greedy_plan(runs, golden, ranked, space, bar):
    """(plan, steps): units lowered one by one, least sensitive first, each kept when the plan stays within the
    KL budget."""
    lower_to, base, budget = space["lower_to"], space["base"], space["budget_kld"]
    lowered, current, steps = [], None, []
    for r in reversed(ranked):  # least sensitive first
        u = r["unit"]
        trial = lowered + [u]
        key = "greedy|" + "|".join(trial)

        def evaluate(u=u, trial=trial, key=key):
            logp, secs = runs.run({**base, **{x: lower_to for x in trial}})
            m = _measure(golden, logp, runs.batches)
            return {"key": key, "kind": "greedy", "unit": u, "lowered": trial, "seconds": secs,
                    "accepted": _within(m, budget), **m}

        rec = runs.recorded(key, evaluate)
        steps.append(rec)
        if rec["accepted"]:
            lowered, current = trial, rec
        bar.step("greedy " + u)
    plan = {
        "policy": {**base, **{x: lower_to for x in lowered}},
        "lowered": lowered,
        "kept_fp32": [r["unit"] for r in ranked if r["unit"] not in lowered],
        "kld": current["kld"] if current else {"mean": 0.0, "se": 0.0, "n": 0},
        "top1": current["top1"] if current else {"mean": 1.0, "se": 0.0, "n": 0},
        "loss_delta": current["loss_delta"] if current else {"mean": 0.0, "se": 0.0, "n": 0},
        "meets_budget": current is None or _within(current, budget),
    }
    return plan, steps


def _finite_or_none(obj):
    """JSON has no inf/NaN: a non-finite measurement (a lowered run with NaN logits) is written as null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_or_none(v) for v in obj]
    return obj


def _sort_kld(r):
    m = r["kld"]["mean"]
    return math.inf if m is None or (isinstance(m, float) and math.isnan(m)) else m


def _within(m, budget):
    k = m["kld"]["mean"]
    return k is not None and math.isfinite(k) and k <= budget


def _golden_loss(golden, batches):
    losses = []
    for g, b in zip(golden, batches):
        _, t = _split_batch(b)
        if t is None:
            return None
        t = t.long()
        if t.dim() == 1:
            t = t[:, None]
        valid = t >= 0
        nll = -g.gather(-1, t.clamp(min=0)[..., None]).squeeze(-1)
        losses += ((nll * valid).sum(-1) / valid.sum(-1).clamp(min=1)).tolist()
    return _mean_se(losses)


def _unit_row(r):
    return {"unit": r["unit"], "mode": r["mode"], "rank": r["rank"], "kld": r["kld"], "top1": r["top1"],
            "loss_delta": r["loss_delta"], "nonfinite_tokens": r["nonfinite_tokens"], "seconds": r["seconds"]}


def _step_row(r):
    return {"unit": r["unit"], "accepted": r["accepted"], "lowered": len(r["lowered"]), "kld": r["kld"],
            "top1": r["top1"], "loss_delta": r["loss_delta"], "seconds": r["seconds"]}


# ------------------------------------------------------------------------------------------- output

def _fmt(m, digits=3, pct=False):
    if m is None or m.get("mean") is None:
        return "-"
    if pct:
        return "{:.1f}% ± {:.1f}".format(100 * m["mean"], 100 * m["se"])
    return "{:.{d}g} ± {:.2g}".format(m["mean"], m["se"], d=digits)


def format_table(result, limit=TABLE_ROWS):
    """The terminal table: units by sensitivity, then the plan."""
    lines = ["sensitivity to {} (KL(golden||lowered) per token; mean ± standard error over {} sequences)".format(
        result["lower_to"], result["sequences"])]
    rows = result["units"][:limit] if limit else result["units"]
    width = max([len(r["unit"]) for r in rows] + [4])
    lines.append("{:>4}  {:<{w}}  {:>22}  {:>16}  {:>22}".format("rank", "unit", "KLD", "top-1 agree", "loss delta",
                                                                w=width))
    for r in rows:
        lines.append("{:>4}  {:<{w}}  {:>22}  {:>16}  {:>22}".format(
            r["rank"], r["unit"], _fmt(r["kld"]), _fmt(r["top1"], pct=True), _fmt(r["loss_delta"]), w=width))
    if limit and len(result["units"]) > limit:
        lines.append("  ... {} more units (--json has all)".format(len(result["units"]) - limit))
    plan = result.get("plan")
    if plan is not None:
        lines.append("plan (KLD budget {:g}): {} of {} units in {}, {} kept fp32: KLD {}, top-1 {}, loss delta {} -> {}"
                     .format(result["budget_kld"], len(plan["lowered"]), len(result["units"]), result["lower_to"],
                             len(plan["kept_fp32"]), _fmt(plan["kld"]), _fmt(plan["top1"], pct=True),
                             _fmt(plan["loss_delta"]), "MEETS BUDGET" if plan["meets_budget"] else "OVER BUDGET"))
        if plan["kept_fp32"]:
            lines.append("  keep fp32: " + ", ".join(plan["kept_fp32"]))
    c = result["cost"]
    lines.append("cost: {} forward passes in {:.2f} s ({:.4f} s per pass)".format(
        c["forward_passes"], c["seconds"], c["seconds_per_pass"] or 0.0))
    return "\n".join(lines)


def _load_factory(spec):
    path, sep, func = spec.rpartition(":")
    if not sep or not path or not func:
        raise ValueError("--factory {!r}: expected FILE.py:FUNCTION".format(spec))
    if not os.path.isfile(path):
        raise ValueError("--factory {!r}: {} does not exist".format(spec, path))
    mod_spec = importlib.util.spec_from_file_location("parity_scan_factory", path)
    module = importlib.util.module_from_spec(mod_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    mod_spec.loader.exec_module(module)
    fn = getattr(module, func, None)
    if fn is None:
        raise ValueError("--factory {!r}: {} defines no {}".format(spec, path, func))
    made = fn()
    if not (isinstance(made, (tuple, list)) and len(made) == 2):
        raise ValueError("--factory {!r}: {}() must return (model, batches)".format(spec, func))
    return made


def main(argv=None):
    p = argparse.ArgumentParser(prog="parity scan", description=__doc__.split("\n\n")[0])
    p.add_argument("--factory", required=True, help="FILE.py:FUNCTION returning (model, batches)")
    p.add_argument("--lower-to", default=DEFAULTS["lower_to"], help="mode each unit is lowered to (docs/emulation.md)")
    p.add_argument("--unit", action="append", default=None, help="a unit to scan (repeatable; default: all)")
    p.add_argument("--base", default=None, help="JSON policy applied to every run")
    p.add_argument("--budget-kld", type=float, default=DEFAULTS["budget_kld"])
    p.add_argument("--no-plan", action="store_true")
    p.add_argument("--state", default=None, help="JSONL file results are appended to; a rerun skips what it holds")
    p.add_argument("--json", default=None, help="write the parity.scan/1 result here ('-' = stdout)")
    p.add_argument("--limit", type=int, default=TABLE_ROWS)
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    try:
        model, batches = _load_factory(a.factory)
        space = {"lower_to": a.lower_to, "budget_kld": a.budget_kld, "greedy": not a.no_plan}
        if a.unit:
            space["units"] = a.unit
        if a.base:
            space["base"] = json.loads(a.base)
        result = scan(model, batches, space, state_path=a.state)
    except (ValueError, KeyError) as e:
        print("parity scan: {}".format(e), file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2, allow_nan=False, default=_json_default)
    if a.json == "-":
        sys.stdout.write(text + "\n")
    elif a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    if not a.quiet:
        print(format_table(result, a.limit), file=sys.stderr if a.json == "-" else sys.stdout)
    plan = result.get("plan")
    return 0 if plan is None or plan["meets_budget"] else 1


def _json_default(o):
    raise TypeError("scan: {} is not JSON".format(type(o).__name__))


if __name__ == "__main__":
    sys.exit(main())
