"""Capture on a real CUDA device (the paths CPU-only CI cannot run), then judged with the real CLI.

Run on a machine with a GPU: python3 bench/gpu/cuda_capture_check.py OUT_DIR. It writes, under OUT_DIR:
  runs/<name>/          parity captures of a tiny Hugging Face Llama (2 steps of training each)
  overhead.json         step time of a larger Llama with and without capture (statistics / tensor mode),
                        host synchronisations per captured step (torch.cuda sync debug mode), the bytes a
                        tensor-mode step writes and the D2H / disk bandwidth that bounds it
and prints one line per run. The comparisons themselves are made by bench/gpu/cuda_check.sh with the CLI.
Options: --device cpu (the plan on the host: a smoke test), --no-overhead, --overhead-only,
--overhead-cases statistics_module,statistics_module_torch,... (default: all of OVERHEAD_CASES).

Runs (all seeded alike; golden = CUDA fp32 with TF32 off):
  cuda_fp32, cuda_fp32_again  the same run twice (GPU determinism: cuBLAS with CUBLAS_WORKSPACE_CONFIG)
  cuda_tf32                   TF32 matmuls (benign on Ampere+)
  cuda_bf16_autocast          torch.autocast("cuda", bfloat16) (benign)
  cpu_fp32                    the same model on the CPU (benign cross-device)
  cuda_gelu_tanh              the tanh approximation of GELU (a real implementation difference: must fail)
  cuda_fp32_stats, cpu_fp32_stats   statistics mode: statistics computed on the device vs on the host
  cuda_fp32_checksum          checksum mode (bytes copied asynchronously through pinned staging buffers)
  cuda_op_fp32, cuda_op_bf16_autocast  op-level tensor captures (for replay)
"""
import json
import os
import shutil
import sys
import time
import warnings

import torch
import transformers

import parity

VOCAB, SEQ, BATCH, STEPS = 128, 32, 2, 2
# The accelerator under test; "--device cpu" runs the same plan on the host (a smoke test of this script).
DEV = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"


def tiny_llama(act="gelu", hidden=64, layers=2, heads=4, seq=64):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=2 * hidden,
                                   num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads // 2,
                                   max_position_embeddings=seq, hidden_act=act, attn_implementation="eager")
    return transformers.LlamaForCausalLM(cfg)


def batches(n, seq=SEQ, batch=BATCH):
    g = torch.Generator().manual_seed(1)
    return [torch.randint(0, VOCAB, (batch, seq), generator=g) for _ in range(n)]


def train(model, device, path, *, autocast=None, level="module", mode="tensor", steps=STEPS):
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with parity.capture(model, path, level=level, mode=mode, steps=list(range(steps))) as cap:
        for ids in batches(steps):
            ids = ids.to(device)
            ctx = torch.autocast(device.split(":")[0], dtype=autocast) if autocast else torch.autocast("cpu", enabled=False)
            with ctx:
                out = model(input_ids=ids, labels=ids)
            out.loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
            opt.step()
            opt.zero_grad(set_to_none=True)
            cap.log(loss=out.loss, grad_norm=gn)
            cap.next_step()
    run = parity.load(path)
    return len(run.records), len(run.problems)


def correctness(out):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    runs = out + "/runs/"
    plan = [
        ("cuda_fp32", dict(device=DEV)),
        ("cuda_fp32_again", dict(device=DEV)),
        ("cuda_tf32", dict(device=DEV, tf32=True)),
        ("cuda_bf16_autocast", dict(device=DEV, autocast=torch.bfloat16)),
        ("cpu_fp32", dict(device="cpu")),
        ("cuda_gelu_tanh", dict(device=DEV, act="gelu_pytorch_tanh")),
        ("cuda_fp32_stats", dict(device=DEV, mode="statistics")),
        ("cpu_fp32_stats", dict(device="cpu", mode="statistics")),
        ("cuda_fp32_checksum", dict(device=DEV, mode="checksum")),
        ("cuda_op_fp32", dict(device=DEV, level="op", steps=1)),
        ("cuda_op_bf16_autocast", dict(device=DEV, level="op", autocast=torch.bfloat16, steps=1)),
    ]
    for name, o in plan:
        torch.backends.cuda.matmul.allow_tf32 = bool(o.get("tf32"))
        t0 = time.perf_counter()
        n, bad = train(tiny_llama(o.get("act", "gelu")), o["device"], runs + name, autocast=o.get("autocast"),
                       level=o.get("level", "module"), mode=o.get("mode", "tensor"), steps=o.get("steps", STEPS))
        print("captured {:24s} {:6d} records, {} problems, {:.1f} s".format(name, n, bad, time.perf_counter() - t0),
              flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False


# (mode, level, timed steps, statistics path): "auto" = the Triton kernel where it works, "torch" = torch's
# reductions (PARITY_DEVICE_STATS=torch)
OVERHEAD_CASES = (("statistics", "module", 10, "auto"), ("statistics", "module", 10, "torch"),
                  ("statistics", "op", 5, "auto"), ("statistics", "op", 5, "torch"), ("statistics", "mix", 5, "auto"),
                  ("checksum", "module", 3, "auto"), ("tensor", "module", 3, "auto"))


def _sync():
    if DEV.startswith("cuda"):
        torch.cuda.synchronize()


def _count_syncs(fn):
    """Host synchronisations torch reports while fn runs (torch.cuda.set_sync_debug_mode("warn"))."""
    if not DEV.startswith("cuda"):
        fn()
        return None
    prev = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(prev)
    return sum(1 for w in got if "synchroniz" in str(w.message))


def step_time(model, ids, cap_mode, level, path, n=10):
    """(median step seconds, host syncs in one step's forward+backward, info) with or without capture."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        with torch.autocast(DEV.split(":")[0], dtype=torch.bfloat16):
            out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return out.loss

    for _ in range(3):
        step()
    _sync()
    times = []
    info = {}
    if cap_mode is None:
        for _ in range(n):
            t0 = time.perf_counter()
            step()
            _sync()
            times.append(time.perf_counter() - t0)
        syncs = _count_syncs(step)
        _sync()
    else:
        with parity.capture(model, path, level=level, mode=cap_mode, steps=None) as cap:
            for _ in range(n):
                t0 = time.perf_counter()
                loss = step()
                cap.log(loss=loss)
                cap.next_step()
                _sync()
                times.append(time.perf_counter() - t0)
            cap.flush()
            before = cap.writer.counters()
            box = []
            syncs = _count_syncs(lambda: box.append(step()))  # recording only: next_step() may wait
            cap.next_step()
            cap.flush()
            after = cap.writer.counters()
            info = {"events_per_step": after["events"] - before["events"],
                    "bytes_per_step": after["data_bytes"] - before["data_bytes"],
                    "device_copies": cap._pending.copies}
        shutil.rmtree(path, ignore_errors=True)  # tensor mode writes GBs per step
    times.sort()
    return times[len(times) // 2], syncs, info


def bandwidth(out):
    """Pinned D2H copy and plain file write bandwidth (GB/s): what bounds a tensor-mode step."""
    cuda = DEV.startswith("cuda")
    x = torch.empty(256 << 20, dtype=torch.uint8, device=DEV)
    h = torch.empty(256 << 20, dtype=torch.uint8, pin_memory=cuda)
    h.copy_(x, non_blocking=cuda)
    _sync()
    t0 = time.perf_counter()
    for _ in range(4):
        h.copy_(x, non_blocking=cuda)
    _sync()
    d2h = 4 * h.numel() / (time.perf_counter() - t0) / 1e9
    path = out + "/bandwidth.tmp"
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        for _ in range(4):
            f.write(memoryview(h.numpy()))
        f.flush()
        os.fsync(f.fileno())
    disk = 4 * h.numel() / (time.perf_counter() - t0) / 1e9
    os.remove(path)
    return d2h, disk


def partial_cost():
    """device_partial alone: host time to enqueue it, device time (CUDA events), per element and in
    bytes read+written per element of an equivalent memory-bound kernel at the copy bandwidth."""
    from parity._stats import device_partial_tagged, device_partial_torch

    res = {}
    for (shape, dt), (fn, how) in [(c, f) for c in (((4096, 1024), torch.float32), ((4096, 1024), torch.bfloat16),
                                                    ((8, 16, 512, 512), torch.float32))
                                   for f in ((device_partial_torch, "torch"), (device_partial_tagged, "auto"))]:
        x = torch.randn(shape, device=DEV).to(dt)
        for _ in range(3):
            fn(x)
        _sync()
        reps = 20
        t0 = time.perf_counter()
        if DEV.startswith("cuda"):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
        for _ in range(reps):
            fn(x)
        host = (time.perf_counter() - t0) / reps
        dev = None
        if DEV.startswith("cuda"):
            b.record()
            b.synchronize()
            dev = a.elapsed_time(b) / 1e3 / reps
        key = "{}_{}_{}".format("x".join(map(str, shape)), str(dt).replace("torch.", ""), how)
        res[key] = {"host_enqueue_us": host * 1e6, "device_us": dev and dev * 1e6, "numel": x.numel()}
        print("device_partial {:28s} enqueue {:.0f} us, device {} us ({} ns/element)".format(
            key, host * 1e6, "{:.0f}".format(dev * 1e6) if dev else "-",
            "{:.3f}".format(dev * 1e9 / x.numel()) if dev else "-"), flush=True)
    return res


def overhead(out, cases):
    if DEV.startswith("cuda"):
        model = tiny_llama(hidden=1024, layers=8, heads=16, seq=512).to(DEV)
        ids = batches(1, seq=512, batch=8)[0].to(DEV)
        res = {"model": "Llama 8 layers, hidden 1024, seq 512, batch 8, autocast bf16, one training step",
               "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    else:  # --device cpu: a smoke test of this function on a small model
        model = tiny_llama(hidden=64, layers=2, heads=4, seq=32)
        ids = batches(1, seq=32, batch=2)[0]
        res = {"model": "smoke test: Llama 2 layers, hidden 64, CPU", "gpu": None, "torch": torch.__version__}
    res["none"], res["none_syncs"], _ = step_time(model, ids, None, None, None)
    print("overhead {:18s} median step {:.4f} s, {} host syncs per step".format("none", res["none"], res["none_syncs"]),
          flush=True)
    res["device_partial"] = partial_cost()
    res["d2h_GBps"], res["disk_GBps"] = bandwidth(out)
    print("bandwidth: pinned D2H {:.1f} GB/s, file write+fsync {:.2f} GB/s".format(res["d2h_GBps"], res["disk_GBps"]),
          flush=True)
    for mode, level, n, path in OVERHEAD_CASES:
        key = "{}_{}".format(mode, level) + ("_torch" if path == "torch" else "")
        if cases and key not in cases:
            continue
        os.environ["PARITY_DEVICE_STATS"] = path
        t, syncs, info = step_time(model, ids, mode, level, out + "/overhead_" + key, n=n)
        os.environ.pop("PARITY_DEVICE_STATS", None)
        res[key], res[key + "_syncs"], res[key + "_info"] = t, syncs, info
        res[key + "_ratio"] = t / res["none"]
        extra = ""
        if info.get("bytes_per_step"):
            floor = info["bytes_per_step"] / 1e9 / min(res["d2h_GBps"], res["disk_GBps"])
            res[key + "_bandwidth_floor_s"] = floor
            extra = ", {:.2f} GB/step (floor {:.3f} s)".format(info["bytes_per_step"] / 1e9, floor)
        print("overhead {:18s} median step {:.4f} s vs {:.4f} s: {:.2f}x; {} host syncs per step (uncaptured {}); "
              "{} events/step{}".format(key, t, res["none"], res[key + "_ratio"], syncs, res["none_syncs"],
                                        info.get("events_per_step"), extra), flush=True)
        with open(out + "/overhead.json", "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out + "/runs", exist_ok=True)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    print("torch", torch.__version__, "cuda", torch.version.cuda,
          torch.cuda.get_device_name(0) if DEV.startswith("cuda") else DEV, flush=True)
    if "--overhead-only" not in sys.argv:
        correctness(out)
    cases = sys.argv[sys.argv.index("--overhead-cases") + 1].split(",") if "--overhead-cases" in sys.argv else None
    if "--no-overhead" not in sys.argv and (DEV.startswith("cuda") or "--overhead-only" in sys.argv):
        overhead(out, cases)
