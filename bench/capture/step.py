"""One process of the capture benchmark (bench/capture/run.py): one model, one kind of capture, a few timed
training steps; prints one JSON line. Each kind runs in its own process because msprobe patches torch
globally once imported.

A training step is forward, loss, backward, optimizer step and zero_grad, on the CPU; the capture covers
forward and backward (the model's tensors), the optimizer runs outside it, the same for every tool:
  parity   one capture for the process (steps = the even ones): forward + backward in a recorded step,
           next_step(), the optimizer in an unrecorded one, next_step(), flush() — the step is only done
           when its records are written.
  msprobe  PrecisionDebugger once: start(model), forward + backward, stop(), step(), the optimizer.

Each step's wall time and the process's CPU time (time.process_time: with one torch thread, the work done,
which other processes on a shared machine do not inflate as they do wall time).

usage: step.py MODEL KIND [--steps 3] [--warmup 2] [--threads N] [--dir DIR]
  MODEL  transformer6 (parity.examples Llama-style, 6 blocks, d = 512, batch 4 x 128)
         hf-llama (transformers LlamaForCausalLM: 4 layers, d = 512, batch 4 x 128)
         hf-gpt2 (transformers GPT2LMHeadModel: 4 layers, d = 512, batch 4 x 128)
  KIND   none | parity-{module,op,mix}[-tensor] | msprobe-{L0,L1,mix}[-tensor]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

BATCH, SEQ, VOCAB = 4, 128, 4096


def build(model_name):
    """(model, loss function of the model's output) of a named model, seeded: the same weights in every
    process."""
    torch.manual_seed(0)
    if model_name == "transformer6":
        from parity.examples import build_model

        model = build_model("llama", "bench", seed=0, n_layers=6, vocab_size=VOCAB, max_seq_len=SEQ)
        return model, lambda out, y: F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))
    import transformers

    if model_name == "hf-llama":
        cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                                       num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=SEQ)
        model = transformers.LlamaForCausalLM(cfg)
    elif model_name == "hf-gpt2":
        cfg = transformers.GPT2Config(vocab_size=VOCAB, n_embd=512, n_layer=4, n_head=8, n_positions=SEQ)
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        raise SystemExit("unknown model " + model_name)
    model.config.use_cache = False
    return model, lambda out, y: F.cross_entropy(out.logits.reshape(-1, out.logits.size(-1)), y.reshape(-1))


class CountingWriter:
    """The capture's writer, counting what the statistics read: records summarised (their bytes) and reused."""

    def __init__(self, writer):
        self._w = writer
        self.read_bytes = self.summarised = self.reused = 0

    def append_event(self, *args, **kwargs):
        ptr, numel, dtype = args[13], args[14], args[9]
        if ptr:
            self.summarised += 1
            self.read_bytes += numel * DTYPE_BYTES.get(dtype, 4)
        elif numel:
            self.reused += 1
        return self._w.append_event(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._w, name)


DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "u8": 1, "bool": 1}


def parity_stepper(model, dump_dir, level, mode):
    import parity

    cap = parity.capture(model, dump_dir, level=level, mode=mode, steps=range(0, 1 << 20, 2))
    cap.start()
    counting = cap.writer = CountingWriter(cap.writer)

    def run(fwd_bwd, optimizer_step):
        fwd_bwd()
        cap.next_step()
        optimizer_step()
        cap.next_step()
        cap.flush()

    def stop():
        cap.stop()
        return {"records_summarised": counting.summarised, "records_reused": counting.reused,
                "statistics_read_bytes": counting.read_bytes}

    return run, stop


def msprobe_stepper(model, dump_dir, level, task):
    from msprobe.pytorch import PrecisionDebugger

    dbg = PrecisionDebugger(task=task, level=level, dump_path=dump_dir)

    def run(fwd_bwd, optimizer_step):
        dbg.start(model)
        fwd_bwd()
        dbg.stop()
        dbg.step()
        optimizer_step()

    return run, lambda: {}


def no_stepper():
    def run(fwd_bwd, optimizer_step):
        fwd_bwd()
        optimizer_step()

    return run, lambda: {}


def make_stepper(kind, model, dump_dir):
    if kind == "none":
        return no_stepper()
    tool, level, *rest = kind.split("-")
    mode = "tensor" if rest == ["tensor"] else "statistics"
    if tool == "parity":
        return parity_stepper(model, dump_dir, level, mode)
    if tool == "msprobe":
        return msprobe_stepper(model, dump_dir, level, mode)
    raise SystemExit("unknown kind " + kind)


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("kind")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--dir", default=None, help="where the dump is written (default: a temporary folder)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model, loss_of = build(args.model)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    y = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    base = tempfile.mkdtemp(prefix="parity_capbench_", dir=args.dir)
    dump_dir = os.path.join(base, "dump")

    def fwd_bwd():
        loss_of(model(x), y).backward()

    def optimizer_step():
        opt.step()
        opt.zero_grad(set_to_none=True)

    try:
        run, stop = make_stepper(args.kind, model, dump_dir)
        for _ in range(args.warmup):
            run(fwd_bwd, optimizer_step)
        bytes_before = dir_bytes(base)
        times, cpu = [], []
        for _ in range(args.steps):
            t0, c0 = time.perf_counter(), time.process_time()
            run(fwd_bwd, optimizer_step)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        dump_bytes = (dir_bytes(base) - bytes_before) / args.steps
        counts = stop()
        steps_seen = args.warmup + args.steps
        counts = {k: v / steps_seen for k, v in counts.items()}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(dict(model=args.model, kind=args.kind, times=times, median=statistics.median(times),
                          cpu_times=cpu, cpu_median=statistics.median(cpu),
                          dump_bytes_per_step=dump_bytes, torch_threads=torch.get_num_threads(), **counts)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
