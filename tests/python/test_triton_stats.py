"""The optional Triton statistics kernel (python/parity/_triton_stats.py), run on the CPU by Triton's
interpreter (TRITON_INTERPRET=1, in a child process: the variable is read when kernels are defined): its
statistics equal the C++ kernel's on edge cases of every float dtype, across several reduction rounds,
and a whole capture through the accelerator path with it writes the host path's statistics."""
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("PARITY_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))

pytest.importorskip("triton")


def run_interpreted(code, tmp_path):
    env = dict(os.environ, TRITON_INTERPRET="1", PARITY_TRITON_ON_HOST="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(SOURCE_DIR, "python"), HERE, env.get("PYTHONPATH", "")])
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code), str(tmp_path)], capture_output=True, text=True,
                       timeout=900, env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p.stdout


def test_kernel_statistics_equal_the_cpu_kernel(tmp_path):
    out = run_interpreted("""
        import torch
        import capture_helpers  # noqa: F401
        from parity import _triton_stats as T
        from parity._core import core

        names = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.float64: "f64"}
        g = torch.Generator().manual_seed(3)
        x = torch.randn(10000, generator=g) * 2
        x[1], x[5], x[9], x[12], x[33], x[34], x[50] = float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-39, -3e-40
        cases = [x.to(dt) for dt in names] + [torch.full((5,), float("nan")), torch.tensor([-2.0, -1.0]),
                 torch.tensor([3.0]).to(torch.bfloat16), torch.randn(64, 48, generator=g).t(),
                 torch.tensor([float("inf"), 1e-45])]
        T.BLOCK, T.RBLOCK = 16, 8  # several rounds of the final reduction
        for t in cases:
            if t.dtype == torch.float16:
                t[60] = 1e-6
            got = T.finish_words(T.words(t).tolist(), t.numel(), t.dtype)
            h = t.contiguous()
            ref = list(core.fused_stats(h.data_ptr(), names[t.dtype], t.numel()))[:9]
            assert got[5:] == ref[5:] and got[:2] == ref[:2] and got[4] == ref[4], (t.dtype, got, ref)
            for a, b in zip(got[2:4], ref[2:4]):
                assert abs(a - b) <= 1e-12 * max(abs(b), 1e-300), (t.dtype, got, ref)
        print("ok", len(cases))
    """, tmp_path)
    assert "ok 9" in out


def test_capture_through_the_kernel_writes_the_host_statistics(tmp_path):
    out = run_interpreted("""
        import sys
        import torch
        import capture_helpers  # noqa: F401
        import parity
        from parity import _triton_stats as T
        from parity.examples import SyntheticCorpus, build_model

        corpus = SyntheticCorpus(64, 1 << 13)
        runs = {}
        for path in ("host", "device"):
            torch.manual_seed(0)
            model = build_model("llama", "tiny")
            cap = parity.capture(model, sys.argv[1] + "/" + path, steps=[0], level="op")
            cap._device_path_on_host = path == "device"
            with cap:
                x, y = corpus.batch(0, 2, 8)
                torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
                cap.next_step()
            runs[path] = parity.load(sys.argv[1] + "/" + path).records
        assert T._CHECKED.get(torch.float32) is True, T._CHECKED
        host, dev = runs["host"], runs["device"]
        assert len(host) == len(dev) > 100
        for a, b in zip(host, dev):
            assert (a.name, a.order) == (b.name, b.order)
            for k in ("nan", "inf", "zero", "subnormal", "numel", "min", "max", "absmax"):
                assert a.stats[k] == b.stats[k], (a.name, k, a.stats, b.stats)
            for k in ("mean", "l2norm"):
                assert abs(a.stats[k] - b.stats[k]) <= 1e-12 * max(abs(a.stats[k]), 1e-300), (a.name, k)
        print("ok", len(dev))
    """, tmp_path)
    assert out.startswith("ok")
