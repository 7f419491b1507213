#!/usr/bin/env python3
"""Writes the seed corpora (fuzz/corpus/<harness>/) and the past-crash inputs (fuzz/regressions/<harness>/).

Run once by a developer (the files are checked in; docs/fuzzing.md):
    python3 fuzz/make_corpus.py            # numpy and safetensors (PyPI) for the tensor-file seeds

Tensor files come from the real writers (numpy.save/savez/savez_compressed, safetensors.numpy.save_file).
Capture runs, logits files and TensorBoard events are built here from their specifications
(docs/dump-format.md, docs/eval.md "Representation", TFRecord + tensorboard's Event proto), in each
harness's input layout (fuzz/*.cpp): sections separated by SEP, a leading 'F' where the harness frames
the payloads itself. Regression inputs reuse the constructions of the hardening unit tests in tests/,
at sizes that keep each file small (the tests carry the full-size versions).
"""
import io
import json
import os
import shutil
import struct
import sys
import tempfile
import zipfile

import numpy as np

ROOT = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(ROOT, "..", "tests", "fixtures")
SEP = b"\n%%\n"  # fuzz_input.h kSeparator


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), "rb") as f:
        return f.read()


def out(kind, harness, name, data):
    d = os.path.join(ROOT, kind, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def seed(harness, name, data):
    out("corpus", harness, name, data)


def regression(harness, name, data):
    out("regressions", harness, name, data)


# ---- CRC32C (Castagnoli, reflected 0x82F63B78), as parity::dump::crc32c ---------------------------------
_TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _TABLE.append(c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def nested(depth):  # tests/formats/test_util.h nested(): objects
    return '{"a":' * depth + "1" + "}" * depth


# ---- tensor files ------------------------------------------------------------------------------------
def npy_bytes(arr):
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


def tensor_files():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    seed("npy", "f32_2x3.npy", npy_bytes(a))
    seed("npy", "f64_fortran.npy", npy_bytes(np.asfortranarray(np.linspace(-1, 1, 12).reshape(3, 4))))
    seed("npy", "i64_scalar.npy", npy_bytes(np.array(7, dtype=np.int64)))
    seed("npy", "bool.npy", npy_bytes(np.array([True, False, True])))
    seed("npy", "f16_big_endian.npy", npy_bytes(np.array([1.5, -2.0, np.inf], dtype=">f2")))
    seed("npy", "u8_empty.npy", npy_bytes(np.zeros((0, 4), dtype=np.uint8)))
    seed("npy", "f32_nan.npy", npy_bytes(np.array([np.nan, 1e-40, -0.0], dtype=np.float32)))

    tmp = tempfile.mkdtemp()
    try:
        p = os.path.join(tmp, "x.npz")
        np.savez(p, w=a, b=np.arange(3, dtype=np.int32))
        seed("npz", "stored.npz", open(p, "rb").read())
        np.savez_compressed(p, w=np.ones((16, 16), dtype=np.float32), m=np.array([1, 2], dtype=">i4"))
        seed("npz", "deflated.npz", open(p, "rb").read())

        # a member stored twice: numpy reads the last copy (tests/formats/hardening_test.cpp)
        with zipfile.ZipFile(p, "w") as z:
            z.writestr("x.npy", npy_bytes(np.array([1.0], dtype=np.float32)))
            z.writestr("x.npy", npy_bytes(np.array([2.0], dtype=np.float32)))
        regression("npz", "duplicate_member.npz", open(p, "rb").read())
        # a zip bomb: 72 KiB inflating to 72 MiB (ratio ~1000 > 200, above 64 MiB) is refused before any
        # allocation (src/formats/inflate.cpp)
        big = npy_bytes(np.zeros(18 * 1024 * 1024, dtype=np.float32))
        with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
            z.writestr("bomb.npy", big)
        regression("npz", "zip_bomb_ratio.npz", open(p, "rb").read())

        from safetensors.numpy import save_file
        p = os.path.join(tmp, "x.safetensors")
        save_file({"w": a, "h": np.array([1, -2], dtype=np.float16), "i": np.arange(4, dtype=np.int64)}, p,
                  metadata={"format": "np"})
        seed("safetensors", "mixed.safetensors", open(p, "rb").read())
        save_file({"empty": np.zeros((0,), dtype=np.float32), "s": np.array(3.0, dtype=np.float64)}, p)
        seed("safetensors", "empty_and_scalar.safetensors", open(p, "rb").read())
    finally:
        shutil.rmtree(tmp)

    def st(header, data):
        h = json.dumps(header).encode()
        return struct.pack("<Q", len(h)) + h + data

    seed("safetensors", "bf16_f8.safetensors",
         st({"b": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
             "e": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [4, 6]}}, b"\x80\x3f\x00\xc0\x38\xb8"))
    # repeated keys: the last one is kept, order preserved (tests/formats/hardening_test.cpp)
    regression("safetensors", "repeated_keys.safetensors",
               struct.pack("<Q", 120) + (b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                                         b'"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}').ljust(120)
               + b"\x00\x00\x80\x3f\x00\x00\x00\x40")


# ---- capture runs (docs/dump-format.md) ---------------------------------------------------------------
def frame(payload):
    p = payload.encode() if isinstance(payload, str) else payload
    n = struct.pack("<I", len(p))
    return struct.pack("<I", 0x31524650) + n + struct.pack("<I", crc32c(p, crc32c(n))) + p


HEADER = {"kind": "header", "schema": "parity.dump/1", "rank": 0, "alignment": 64,
          "created_unix_ms": 1796026712000, "writer": "parity 0.1.0"}


def event(name, order, shape, data=None, **extra):
    numel = int(np.prod(shape)) if shape else 1
    e = {"kind": "event", "name": name, "module": "layers.0", "op": "Linear", "call": 0,
         "direction": "forward", "role": "output", "index": 0, "step": 0, "rank": 0, "order": order,
         "dtype": "f32", "shape": shape, "stride": [], "device": "cpu",
         "stats": {"min": 0, "max": 5, "mean": 2.5, "l2norm": 7.4, "absmax": 5, "nan": 0, "inf": 0,
                   "zero": 1, "subnormal": 0, "numel": numel}}
    if data is not None:
        e["data"] = data
    e.update(extra)
    return e


def dump_input(manifest, shard=b"", scalars=(), env=(), framed=True):
    lines = lambda recs: "\n".join(r if isinstance(r, str) else json.dumps(r) for r in recs).encode()
    if framed:
        parts = [lines(manifest), shard, lines(scalars), lines(env)]
        return b"F" + SEP.join(parts)
    f = lambda recs: b"".join(frame(r if isinstance(r, str) else json.dumps(r)) for r in recs)
    return SEP.join([f(manifest), shard, f(scalars), f(env)])


def dumps():
    shard = np.arange(6, dtype=np.float32).tobytes().ljust(64, b"\0") + np.ones(4, dtype=np.float32).tobytes()
    manifest = [HEADER,
                event("layers.0/forward/output/0", 0, [2, 3], {"shard": "data-000000.bin", "offset": 0, "nbytes": 24}),
                event("relu#0/forward/output/0", 1, [4], {"shard": "data-000000.bin", "offset": 64, "nbytes": 16},
                      op="relu", args={"args": ["<tensor f32 [4]>"], "kwargs": {"inplace": False}}),
                event("layers.0.weight", 2, [3], None, role="parameter", crc32c="1a2b3c4d"),
                {"kind": "close", "events": 3, "data_bytes": 80, "scalars": 2, "shards": 1}]
    scalars = [{"kind": "scalars", "rank": 0, "step": 0, "values": {"loss": 2.31, "grad_norm": 0.93, "lr": 3e-4}},
               {"kind": "scalars", "rank": 0, "step": 1, "values": {"loss": 2.1, "group_norms": [0.5, "nan"]}}]
    env = [{"kind": "fingerprint", "rank": 0, "fingerprint": {"python": "3.11", "torch": "2.5"}}]
    seed("dump", "run_framed", dump_input(manifest, shard, scalars, env))
    seed("dump", "run_raw", dump_input(manifest, shard, scalars, env, framed=False))
    seed("dump", "torn_tail_raw", dump_input(manifest, shard, scalars, env, framed=False)[:-40])
    seed("dump", "stats_only_framed", dump_input([HEADER, event("x", 0, [1, 2]), event("y", 1, [])]))

    # offset + nbytes wrapping past 2^64 passed the bounds check (SIGSEGV in compare/overflow)
    regression("dump", "offset_wrap", dump_input(
        [HEADER, event("wrap", 0, [16], {"shard": "data-000000.bin", "offset": 2**64 - 64, "nbytes": 64})], shard))
    # JSON nested past the 512-level limit in args, scalars and environment (crashed at ~66k levels;
    # tests/dump/hardening_test.cpp has the 200k version)
    regression("dump", "deep_json", dump_input(
        [HEADER, '{"kind":"event","name":"d","module":"m","op":"relu","direction":"forward","role":"output",'
                 '"index":0,"step":0,"rank":0,"order":0,"dtype":"f32","shape":[1],"args":' + nested(1000) + "}"],
        b"", ['{"kind":"scalars","rank":0,"step":1,"values":{"loss":' + nested(1000) + "}}"],
        ['{"kind":"fingerprint","rank":0,"fingerprint":' + nested(1000) + "}"]))
    # two writers in one part: a second header and a second close record are reported
    regression("dump", "two_headers_two_closes", dump_input(
        [HEADER, HEADER, event("a", 0, [4], {"shard": "data-000000.bin", "offset": 64, "nbytes": 16}),
         {"kind": "close", "events": 1}, {"kind": "close", "events": 1}], shard))
    # export of a tensor with >= 22k dimensions wrote a broken .npy header
    regression("dump", "export_22k_dims", dump_input(
        [HEADER, event("many_dims", 0, [1] * 22000, {"shard": "data-000000.bin", "offset": 0, "nbytes": 4})],
        shard))
    # scalars: a list holding "nan", numbers as strings, a non-UTF-8 key
    regression("dump", "scalars_odd_values", dump_input(
        [HEADER], b"", ['{"kind":"scalars","rank":0,"step":2,"values":{"loss":"2.5","l\xffss":1}}',
                        '{"kind":"scalars","rank":0,"step":1e300,"values":{"loss":1}}']))


# ---- curves -------------------------------------------------------------------------------------------
def varint(n):
    b = bytearray()
    while True:
        x = n & 0x7F
        n >>= 7
        b.append(x | (0x80 if n else 0))
        if not n:
            return bytes(b)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def tb_event(step, values=(), file_version=None, tensor_values=()):
    e = field(1, 1, struct.pack("<d", 1714557600.0 + step)) + field(2, 0, varint(step))
    if file_version:
        e += field(3, 2, file_version.encode())
    summary = b""
    for tag, v in values:
        tag = tag if isinstance(tag, bytes) else tag.encode()
        summary += field(1, 2, field(1, 2, tag) + field(2, 5, struct.pack("<f", v)))
    for tag, dtype, payload in tensor_values:  # TensorProto: dtype, shape [] , content
        tensor = field(1, 0, varint(dtype)) + field(2, 2, b"") + field(4, 2, payload)
        meta = field(1, 2, field(1, 2, b"scalars"))
        summary += field(1, 2, field(1, 2, tag.encode()) + field(9, 2, meta) + field(8, 2, tensor))
    if summary:
        e += field(5, 2, summary)
    return e


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(payload):
    n = struct.pack("<Q", len(payload))
    return n + struct.pack("<I", masked(n)) + payload + struct.pack("<I", masked(payload))


def curves():
    events = [tb_event(0, file_version="brain.Event:2"),
              tb_event(1, [("train/loss", 2.5), ("grad_norm", 1.25)]),
              tb_event(2, [("train/loss", 2.25)], tensor_values=[("lr", 2, struct.pack("<d", 3e-4))]),
              tb_event(3, tensor_values=[("train/loss", 1, struct.pack("<f", 2.0))])]
    seed("tensorboard", "events_framed", b"F" + SEP.join(events))
    seed("tensorboard", "events_raw", b"".join(tfrecord(e) for e in events))
    regression("tensorboard", "non_utf8_tag", b"F" + SEP.join([tb_event(1, [(b"lo\xffss", 1.0)])]))

    seed("trainer_state", "fixture.json", fixture("curves", "trainer_state.json"))
    regression("trainer_state", "step_1e300.json",
               b'{"log_history": [{"step": 1, "loss": 2.0}, {"step": 1e300, "loss": 1.0}, {"step": 3, "loss": 1.5}]}')
    regression("trainer_state", "deep_json.json",
               b'{"log_history": [{"step": 1, "loss": 2.0, "x": ' + nested(1000).encode() + b"}]}")

    seed("jsonl", "fixture.jsonl", fixture("curves", "run.jsonl"))
    seed("jsonl", "ranks.jsonl", b"".join(
        json.dumps({"step": s, "rank": r, "loss": 2.0 - 0.1 * s + (0.01 if r == 1 and s > 2 else 0)}).encode() + b"\n"
        for s in range(5) for r in range(2)))
    regression("jsonl", "step_rank_out_of_range.jsonl",
               b'{"step": 1, "loss": 2.0}\n{"step": 1e300, "loss": 1.0}\n{"step": 2, "rank": 99999999999, "loss": 1.0}\n'
               b'{"step": 3, "loss": 1.5}\n')
    regression("jsonl", "deep_line.jsonl",
               b'{"step": 1, "loss": 2.0}\n{"step": 2, "x": ' + nested(1000).encode() + b'}\n{"step": 3, "loss": 1.5}\n')

    seed("csv", "fixture.csv", fixture("curves", "golden.csv"))
    seed("csv", "tabs.csv", b"step\trank\tloss\tlr\n1\t0\t2.0\t1e-4\n2\t0\tnan\t1e-4\n3\t0\t1.5\t\n1\t1\t2.0\t1e-4\n")
    regression("csv", "step_rank_out_of_range.csv", b"step,rank,loss\n1,0,2.0\n1e300,0,1.0\n2,1e30,1.0\n3,0,1.5\n")
    regression("csv", "non_utf8_header.csv", b"step,loss,lo\xfess\n1,2.0,1\n2,1.5,1\n")
    regression("csv", "quoted_bad_header_byte.csv", b'step,"lo\xffss"\n1,2.0\n')

    seed("textlog", "megatron.log", b"M" + fixture("curves", "megatron.log"))
    seed("textlog", "deepspeed.log", b"D" + fixture("curves", "deepspeed.log"))
    seed("textlog", "detect.log", fixture("curves", "megatron.log")[:800])
    huge = b"a" * 60000  # std::regex recursed per character: ~50 KB overflowed its stack
    regression("textlog", "megatron_long_line.log",
               b"M iteration        1/      10 | lm loss: 2.0 |\n iteration        2/      10 | " + huge +
               b": 1.0 |\n iteration        3/      10 | lm loss: 1.5 |\n")
    regression("textlog", "megatron_iteration_overflow.log",
               b"M iteration        1/      10 | lm loss: 2.0 |\n iteration 99999999999999999999/      10 | lm loss: 1.0 |\n")
    regression("textlog", "deepspeed_rank_overflow.log",
               b"D[Rank 0] step=1, loss=2.0\n[Rank 99999999999] step=2, loss=1.0\n[Rank 0] step=3, loss=1.5\n")
    regression("textlog", "megatron_non_utf8_key.log",
               b"M iteration        1/      10 | l\xffm loss: 2.0 |\n iteration        2/      10 | l\xffm loss: 1.0 |\n")


# ---- eval -----------------------------------------------------------------------------------------------
def logits_payload(tokens, vocab, top_k, tail_bits=8, ids=None, step=-1):
    """docs/eval.md "Representation": header + tokens x token block."""
    p = struct.pack("<IIIHBBq", 1, len(tokens), vocab, top_k, tail_bits, 2, step)
    for label, logp in tokens:
        top = ids if ids is not None else list(range(top_k))
        p += struct.pack("<iB3xddd", label, 0, logp, -12.0, 0.05)
        p += b"".join(struct.pack("<i", i) for i in top)
        p += b"".join(struct.pack("<d", -1.0 - 0.5 * k) for k in range(top_k))
        code = "<B" if tail_bits == 8 else "<H"
        p += b"".join(struct.pack(code, (7 * j) % 200) for j in range(vocab - top_k))
    return p


def plg_frame(payload):
    n = struct.pack("<I", len(payload))
    return struct.pack("<I", 0x31474C50) + n + struct.pack("<I", crc32c(payload, crc32c(n))) + payload


def evals():
    toks = [(0, -1.0), (2, -2.0), (5, -4.5)]
    p1, p2 = logits_payload(toks, 8, 3), logits_payload(toks[:1], 8, 3, tail_bits=16, step=4)
    seed("logits", "framed", b"F" + SEP.join([p1, p2]))
    seed("logits", "raw.plg", plg_frame(p1) + plg_frame(p2))
    seed("logits", "torn_raw.plg", (plg_frame(p1) + plg_frame(p2))[:-7])
    # repeated top-k ids with valid checksums were read past the end of the token (ASan)
    regression("logits", "repeated_topk_ids", b"F" + logits_payload(toks, 8, 3, ids=[1, 1, 1]))
    regression("logits", "topk_id_out_of_range", b"F" + logits_payload(toks, 8, 3, ids=[0, 7, 9]))

    a, b = fixture("eval", "lmeval_a.json"), fixture("eval", "lmeval_b.json")
    sa = fixture("eval", "samples_arc_easy_2024-05-01T12-00-00.123456.jsonl")
    sb = fixture("eval", "samples_arc_easy_2024-05-02T08-30-00.654321.jsonl")
    seed("lmeval", "results_only", a + SEP + b)
    seed("lmeval", "with_samples", SEP.join([a, b, sa[:3000].rsplit(b"\n", 1)[0] + b"\n", sb[:3000].rsplit(b"\n", 1)[0] + b"\n"]))
    results = b'{"results": {"t": {"acc,none": 0.5}}, "n-samples": {"t": {"effective": 2}}}'
    good = b'{"doc_id": 0, "filter": "none", "acc": 1.0}\n'
    regression("lmeval", "deep_doc_id", SEP.join([results, results, good + b'{"doc_id": ' + nested(1000).encode() +
                                                  b', "acc": 0.0}\n', good]))

    seed("mc", "fixture", fixture("eval", "mc_golden.jsonl") + SEP + fixture("eval", "mc_target.jsonl"))
    seed("mc", "lm_eval_samples", sa[:2500].rsplit(b"\n", 1)[0] + b"\n")
    regression("mc", "deep_id.jsonl", b'{"id": "a", "loglik": [-1, -2], "answer": 0}\n{"id": ' + nested(1000).encode() +
               b', "loglik": [-1, -2], "answer": 0}\n{"id": "c", "loglik": [-3, -2], "answer": 1}\n')
    regression("mc", "non_utf8_id_and_nan.jsonl",
               b'{"id": "\xff", "subject": "s\xfe", "loglik": [NaN, -2], "answer": 0}\n'
               b'{"id": "b", "loglik": [-1e308, -1e308], "length": [0, 0], "answer": 5}\n')


# ---- thresholds and map files ------------------------------------------------------------------------
def configs():
    seed("thresholds", "docs_example.json",
         b'{\n  "all":  { "rel_l2_warn": 0.02 },\n  "bf16": { "cosine_pass": 0.998, "kl_pass": 0.01 },\n'
         b'  "default": { "max_abs_fail": "Infinity" }\n}\n')
    seed("thresholds", "policy.json", b'{"policy": "fixed-thresholds", "torch.float16": {"cosine_fail": 0.9}}')
    regression("thresholds", "deep_json.json", b'{"bf16": ' + nested(1000).encode() + b"}")
    seed("map", "docs_example.map",
         b"# target name / module prefix  =>  golden name / module prefix\n"
         b"model.decoder => model                        # a module-path prefix: everything under it\n"
         b"lm_head/forward/output/0 => head/forward/output/0\n"
         b"re:^blk\\.(\\d+)\\.(.*)$ => layers.$1.$2         # ECMAScript regex over the whole target name\n")
    seed("map", "bad_regex.map", b"re:([ => x\n")


def interop():
    """Other tools' files: .pt written by torch.save, msprobe dump.json (+ construct.json, + a tensor)."""
    for name in ("f32_2x3.pt", "bf16_2x3.pt", "f8e4m3_2x3.pt", "i64_offset_3.pt", "param_transposed_3x2.pt"):
        seed("pt", name, fixture("torch_pt", name))
    dump = fixture("msprobe", "statistics_mix", "dump.json")
    construct = fixture("msprobe", "statistics_mix", "construct.json")
    sep = b"\n%%\n"
    seed("msprobe", "statistics_mix", dump + sep + construct)
    seed("msprobe", "statistics_mix_no_construct", dump)
    tensor = (b'{"task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": null, "data": {'
              b'"Functional.linear.0.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", '
              b'"shape": [2, 3], "Max": 5.0, "Min": 0.0, "Mean": 2.5, "Norm": 7.416, "requires_grad": false, '
              b'"data_name": "Functional.linear.0.forward.input.0.npy"}], "input_kwargs": {}, "output": []}}}')
    import numpy as np
    seed("msprobe", "tensor_l1", tensor + sep + b"{}" + sep + npy_bytes(np.arange(6, dtype=np.float32).reshape(2, 3)))


def main():
    # Only the seed corpus is rewritten from scratch: fuzz/regressions also holds the inputs campaigns
    # found (crash-*, timeout-*), which no script can make again.
    shutil.rmtree(os.path.join(ROOT, "corpus"), ignore_errors=True)
    tensor_files()
    dumps()
    curves()
    evals()
    configs()
    interop()
    total = sum(os.path.getsize(os.path.join(d, f)) for kind in ("corpus", "regressions")
                for d, _, fs in os.walk(os.path.join(ROOT, kind)) for f in fs)
    print(f"wrote fuzz/corpus and fuzz/regressions: {total} bytes")


if __name__ == "__main__":
    sys.exit(main())
