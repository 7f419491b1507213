"""The rounding-noise model on real torch ops (issue 4 §2, docs/judgement.md).

Golden = the op in float32; target = the same op in a lower precision (bf16 natively, fp16 emulated by
rounding through float16 because CPU torch lacks fp16 kernels). Tensors are written as safetensors with
their real dtypes (the noise unit is the lower-precision side's unit roundoff) and compared with the
real `parity compare --json`. Pure rounding differences must land in "noise"; structural faults
(norm statistics in fp16 without upcast, softmax without max subtraction, wrong epsilon, transposed
weight) in "structural".
"""
import json
import math
import os
import struct
import subprocess

import pytest
import torch

PARITY = os.environ.get("PARITY_BIN") or os.path.join(
    os.environ.get("PARITY_BINARY_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build")), "parity")

_ST_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.float64: "F64"}


def write_safetensors(path, tensors):
    """Minimal safetensors writer (header length, JSON header, raw little-endian bytes) — no PyPI."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype in (torch.bfloat16, torch.float16) else t.numpy().tobytes()
        header[name] = {"dtype": _ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def r16(x):
    """fp16 emulation: round to float16 and keep float16 storage (the target's real dtype)."""
    return x.half()


def rmsnorm(x, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rmsnorm_fp16_no_upcast(x, eps=1e-6):
    # Every intermediate rounded to fp16, as a kernel without the fp32 upcast computes it (seed 004 §3.1).
    xs = x.half().float()
    sq = xs.mul(xs).half().float()
    var = (sq.sum(-1, keepdim=True).half().float() / x.shape[-1]).half().float()
    inv = torch.rsqrt((var + eps).half().float()).half().float()
    return (xs * inv).half()


def softmax_fp16_no_max(z):
    e = torch.exp(z.half().float()).half().float()
    return (e / e.sum(-1, keepdim=True).half().float()).half()


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    torch.manual_seed(1234)
    d = tmp_path_factory.mktemp("noise")
    g, t = {}, {}
    a, b = torch.randn(32, 256), torch.randn(256, 48)
    g["matmul_bf16"], t["matmul_bf16"] = a @ b, a.bfloat16() @ b.bfloat16()
    z = torch.randn(16, 128) * 3
    g["softmax_bf16"], t["softmax_bf16"] = torch.softmax(z, -1), torch.softmax(z.bfloat16(), -1)
    g["softmax_fp16"], t["softmax_fp16"] = torch.softmax(z, -1), r16(torch.softmax(z.half().float(), -1))
    x = torch.randn(16, 128) * 2 + 0.5
    ln = torch.nn.LayerNorm(128)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.1, 0.1)
        g["layernorm_bf16"] = ln(x)
        t["layernorm_bf16"] = ln.bfloat16()(x.bfloat16())
    h = torch.randn(16, 256) * 30  # residual-stream magnitudes: sum of squares 2.3e5 > fp16 max 65504
    g["rmsnorm_fp16_no_upcast"], t["rmsnorm_fp16_no_upcast"] = rmsnorm(h), rmsnorm_fp16_no_upcast(h)
    g["rmsnorm_fp16_upcast"], t["rmsnorm_fp16_upcast"] = rmsnorm(h), r16(rmsnorm(h.half().float()))
    big = torch.randn(16, 128) * 6  # logits whose max exceeds ln(65504) = 11.09
    g["softmax_fp16_no_max"], t["softmax_fp16_no_max"] = torch.softmax(big, -1), softmax_fp16_no_max(big)
    u = torch.randn(16, 128)
    g["rmsnorm_wrong_eps"], t["rmsnorm_wrong_eps"] = rmsnorm(u, 1e-6), rmsnorm(u, 1e-3)
    w, v = torch.randn(64, 64), torch.randn(8, 64)
    g["linear_transposed_bf16"], t["linear_transposed_bf16"] = v @ w.T, v.bfloat16() @ w.bfloat16()
    write_safetensors(d / "golden.safetensors", g)
    write_safetensors(d / "target.safetensors", t)
    proc = subprocess.run([PARITY, "compare", str(d / "golden.safetensors"), str(d / "target.safetensors"),
                           "--json", "-", "--quiet"], capture_output=True, text=True, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    rows = {r["name"].split(":")[-1]: r for r in json.loads(proc.stdout)["rows"]}
    assert len(rows) == len(g), sorted(rows)
    return rows


@pytest.mark.parametrize("name", ["matmul_bf16", "softmax_bf16", "softmax_fp16", "layernorm_bf16", "rmsnorm_fp16_upcast"])
def test_pure_rounding_is_noise(compared, name):
    row = compared[name]
    assert row["noise"] == "noise", (name, row["noise_ratio"], row["metrics"]["rel_l2"])
    assert float(row["noise_ratio"]) <= 4.0


@pytest.mark.parametrize("name", ["rmsnorm_fp16_no_upcast", "softmax_fp16_no_max", "rmsnorm_wrong_eps",
                                  "linear_transposed_bf16"])
def test_structural_faults_are_structural(compared, name):
    row = compared[name]
    assert row["noise"] == "structural", (name, row["noise_ratio"], row["metrics"] and row["metrics"]["rel_l2"])


def test_noise_ratio_is_in_units_of_the_lower_precision_side(compared):
    # rel_l2 / (u_bf16 · sqrt(1 + log2 n)): the documented formula, recomputed here. Plain tensor files
    # carry no op, so n is the tensor's last dimension (48 for the [32, 48] matmul output).
    row = compared["matmul_bf16"]
    expected = 2.0 ** -8 * math.sqrt(1 + math.log2(48))
    assert float(row["noise_ratio"]) == pytest.approx(row["metrics"]["rel_l2"] / expected, rel=1e-9)
