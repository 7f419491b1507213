"""A training run of a few hundred steps on CPU, with one switch per way a long run departs from its golden (issue 30
§4): the runs that `parity compare` over many steps, the divergence timeline and the monitor are tested on.

The model is a Hugging Face `LlamaForCausalLM` from a tiny config (2 layers, hidden 64, vocabulary 128, built offline
with random weights under a fixed seed, as bench/zoo builds its models), trained on the learnable synthetic corpus of
parity.examples with a real AdamW (betas 0.9/0.999, eps 1e-8, weight decay 0.01), a real schedule (transformers'
linear warmup over 20 steps, then cosine decay) and gradient clipping at 1.0. The same scenario and seed give
bit-identical runs on one machine.

    python -m bench.longrun.train --scenario eps --steps 300 --out runs/eps [--capture-steps all|none|0,5,9]

Scenarios (SCENARIOS): each changes one thing against `golden_of(name)`, and says what an expert expects to see.
"""
import argparse
import dataclasses
import os
import sys
import time

import torch
import torch.nn.functional as F

VOCAB, HIDDEN, LAYERS, HEADS, FFN, SEQ, BATCH = 128, 64, 2, 4, 128, 32, 4
LR, WARMUP, CLIP = 3e-3, 20, 1.0
LOSS_SCALE = 2.0 ** 12  # the static loss scale of the scenarios that scale (a power of two: unscaling is exact)


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    golden: str = "baseline"          # the run it is compared with
    autocast_bf16: bool = False       # forward and backward under CPU autocast to bfloat16 (fp32 master weights)
    bf16_params: bool = False         # parameters (and so AdamW's states and updates) stored in bfloat16
    eps: float = 1e-8
    beta2: float = 0.999
    loss_scale: float = 1.0           # loss × scale before backward, gradients unscaled before the step
    clip_before_unscale: bool = False  # the bug: clip_grad_norm_ on the scaled gradients, unscale after
    lr_shift: int = 0                 # the schedule is stepped this many times before training (off by one)
    world: int = 1                    # data-parallel processes (gloo, one thread each), gradients averaged
    bf16_reduce_rank: int = -1        # this rank's gradients enter the all-reduce rounded to bf16


SCENARIOS = {s.name: s for s in [
    Scenario("baseline", "fp32, AdamW, warmup + cosine, clip 1.0", golden=""),
    Scenario("rerun", "the baseline again: identical records, every row passes"),
    Scenario("bf16", "forward/backward under bf16 autocast, fp32 master weights: benign drift that grows with the "
             "steps (a fault only beyond the accumulated rounding)", autocast_bf16=True),
    Scenario("eps", "AdamW eps 1e-6 instead of 1e-8: the update differs from the first step that moves the weights "
             "(step 1: the warmup's lr is 0 at step 0), exp_avg_sq from the next (gradients of other weights)",
             eps=1e-6),
    Scenario("beta2", "AdamW beta2 0.99 instead of 0.999: exp_avg_sq differs from the first step", beta2=0.99),
    Scenario("scaled", "loss scaled by 2^12, gradients unscaled, then clipped: the correct order (equal to the "
             "baseline in fp32 but for the scaled backward records)", loss_scale=LOSS_SCALE),
    Scenario("clip_before_unscale", "clip_grad_norm_ on the scaled gradients (total norm 2^12 too large, clip factor "
             "2^12 too small), unscaled after: the update shrinks from the first step", golden="scaled",
             loss_scale=LOSS_SCALE, clip_before_unscale=True),
    Scenario("bf16_master", "parameters stored in bf16 (no fp32 master weights) under bf16 autocast: updates below "
             "half an ulp of a weight are lost (an RMSNorm weight at 1.0 does not move up: half its ulp, 2^-8, is above the "
             "peak lr 3e-3)",
             golden="bf16", autocast_bf16=True, bf16_params=True),
    Scenario("lr_off_by_one", "the schedule one step ahead (stepped once before training): the lr differs from the "
             "first step, so does every update", lr_shift=1),
    Scenario("ddp", "two gloo processes, each its own batches, gradients summed by all_reduce in fp32 and averaged",
             golden="", world=2),
    Scenario("allreduce_bf16", "as ddp, but rank 1's gradients go into the all-reduce rounded to bf16: the recorded "
             "gradients (before the reduction) agree, every optimizer state of both ranks differs from step 0",
             golden="ddp", world=2, bf16_reduce_rank=1),
]}


def golden_of(name):
    return SCENARIOS[name].golden


def build_model(seed=0):
    """The tiny Llama, random weights under `seed` (no download)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                      num_attention_heads=HEADS, num_key_value_heads=2, max_position_embeddings=64,
                      attention_dropout=0.0, tie_word_embeddings=False)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


_CORPUS = []


def corpus():
    from parity.examples import SyntheticCorpus

    if not _CORPUS:
        _CORPUS.append(SyntheticCorpus(VOCAB, 1 << 14))
    return _CORPUS[0]


def make_optimizer(model, s, steps):
    from transformers import get_cosine_schedule_with_warmup

    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, s.beta2), eps=s.eps, weight_decay=0.01)
    sched = get_cosine_schedule_with_warmup(opt, WARMUP, steps)
    for _ in range(s.lr_shift):
        opt.step()  # no gradients yet: nothing moves (keeps the scheduler from warning about the order)
        sched.step()
    return opt, sched


def train_step(model, opt, sched, s, step, rank=0):
    """One optimizer step of scenario s on this rank; returns (loss, total gradient norm before clipping)."""
    x, y = corpus().batch(step * s.world + rank, BATCH, SEQ)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=s.autocast_bf16):
        logits = model(input_ids=x).logits
    loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    (loss * s.loss_scale if s.loss_scale != 1.0 else loss).backward()
    params = [p for p in model.parameters() if p.grad is not None]
    if s.world > 1:
        _all_reduce(params, s, rank)
    if s.clip_before_unscale:
        norm = torch.nn.utils.clip_grad_norm_(params, CLIP)
        _unscale(params, s.loss_scale)
    else:
        _unscale(params, s.loss_scale)
        norm = torch.nn.utils.clip_grad_norm_(params, CLIP)
    opt.step()
    sched.step()
    return loss.detach(), norm


def _all_reduce(params, s, rank):
    """Data parallelism by hand: each gradient summed over the ranks and averaged (DDP's result without its buckets,
    which run in C++ where a capture does not see them)."""
    import torch.distributed as dist

    with torch.no_grad():
        for p in params:
            if rank == s.bf16_reduce_rank:
                p.grad.copy_(p.grad.to(torch.bfloat16))
            dist.all_reduce(p.grad)
            p.grad.div_(s.world)


def _unscale(params, scale):
    if scale != 1.0:
        with torch.no_grad():
            torch._foreach_mul_([p.grad for p in params], 1.0 / scale)


def run(name, steps, out=None, capture_steps=None, mode="statistics", level="module", optimizer=True, update=True,
        seed=0):
    """Trains scenario `name` for `steps` steps, captured into `out` (None: not captured) at `capture_steps`
    (None: every step) with the optimizer states (`optimizer`) and updates (`update`). Returns (losses, seconds of
    training: the capture's stop, which drains its writer, included; a scenario of several processes: no losses,
    the seconds of all of them, process start included)."""
    if SCENARIOS[name].world > 1:
        return _spawn(name, steps, out, capture_steps, mode, level, optimizer, update, seed)
    return _train(name, steps, out, capture_steps, mode, level, optimizer, update, seed)


def _train(name, steps, out, capture_steps, mode, level, optimizer, update, seed, rank=0):
    import parity

    s = SCENARIOS[name]
    # One thread: a tiny model's ops are too small to share, and two threads on a machine other jobs use
    # spin-wait for each other (5 ms a step on one thread, 290 ms on two under load).
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = build_model(seed)
    if s.bf16_params:
        model.to(torch.bfloat16)
    model.train()
    opt, sched = make_optimizer(model, s, steps)
    corpus()  # built before the clock starts
    cap = None
    if out is not None:
        cap = parity.capture(model, out, level=level, mode=mode, steps=capture_steps,
                             optimizer=opt if optimizer else None, optimizer_update=update, overwrite=True,
                             fingerprint_extra={"scenario": name}).start()
    losses = []
    t0 = time.perf_counter()
    try:
        for step in range(steps):
            lr = opt.param_groups[0]["lr"]
            loss, norm = train_step(model, opt, sched, s, step, rank)
            losses.append(float(loss))
            if cap is not None:
                cap.log(loss=loss, grad_norm=norm, lr=lr)
                cap.next_step()
    finally:
        if cap is not None:
            cap.stop()  # inside the clock: it drains the writer
    return losses, time.perf_counter() - t0


def _spawn(name, steps, *rest):
    """Runs scenario `name` in SCENARIOS[name].world processes of a gloo group on this machine; each captures its
    own rank's part of the run."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    t0 = time.perf_counter()
    mp.spawn(_rank_main, args=(port, (name, steps) + rest), nprocs=SCENARIOS[name].world, join=True)
    return [], time.perf_counter() - t0


def _rank_main(rank, port, args):
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=SCENARIOS[args[0]].world)
    try:
        _train(*args, rank=rank)
    finally:
        dist.destroy_process_group()


def parse_steps(text):
    if text == "all":
        return None
    if text == "none":
        return ()
    return [int(x) for x in text.split(",") if x]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="baseline", choices=sorted(SCENARIOS))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", help="capture into this run directory (default: no capture)")
    ap.add_argument("--capture-steps", default="all", help="all, none, or a comma list of steps")
    ap.add_argument("--mode", default="statistics", choices=["statistics", "tensor", "checksum"])
    ap.add_argument("--no-update", action="store_true", help="do not record the parameters' updates")
    ap.add_argument("--list", action="store_true", help="print the scenarios and exit")
    a = ap.parse_args(argv)
    if a.list:
        for s in SCENARIOS.values():
            print("{:20s} golden {:10s} {}".format(s.name, s.golden or "-", s.about))
        return 0
    losses, secs = run(a.scenario, a.steps, a.out, parse_steps(a.capture_steps), a.mode, update=not a.no_update)
    print("{}: {} steps in {:.2f} s{}{}".format(
        a.scenario, a.steps, secs, ", loss {:.4f} -> {:.4f}".format(losses[0], losses[-1]) if losses else "",
        ", captured into " + a.out if a.out else ""))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    sys.exit(main())
