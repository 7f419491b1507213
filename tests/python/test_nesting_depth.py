"""No reader recurses on the depth of its input (issue 33): each reader is given a file nested about a
million levels deep (1 MB of brackets, or 65,535 pickle tuples, or 500,000 protobuf groups) and run by
the command a user would run, under a 256 KB stack (`ulimit -s 256`: threads get the same). A reader
that recursed once per level died with SIGSEGV (exit 139 in a shell); each must answer with exit 1 or 2
and say what is wrong with which file."""
import json
import os
import resource
import struct
import subprocess
import zipfile

import numpy as np
import pytest

import capture_helpers
from test_capture_format import frame, write_foreign_run

DEPTH = 1_000_000
STACK_BYTES = 256 * 1024


def small_stack():
    resource.setrlimit(resource.RLIMIT_STACK, (STACK_BYTES, STACK_BYTES))


def run_small_stack(*args):
    p = subprocess.run([capture_helpers.parity_bin(), *map(str, args)], capture_output=True, timeout=300,
                       preexec_fn=small_stack, env=capture_helpers.child_env())
    return p.returncode, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")


def nested_json(depth=DEPTH):
    return "[" * depth + "]" * depth


def npy_bytes(header_text):
    """A version-3 .npy (4-byte header length, UTF-8) holding `header_text` as its header."""
    h = header_text.encode()
    h += b" " * ((64 - (12 + len(h) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x03\x00" + struct.pack("<I", len(h)) + h + b"\0" * 4


def deep_npy():
    return npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + "(" * DEPTH + ")" * DEPTH + ", }")


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


def good_npy(path):
    np.save(path, np.arange(4, dtype=np.float32))
    return path


# ---- one case per reader: (write the inputs into tmp, the command's arguments, what its message names) ----

def case_npy(tmp):
    f = write(tmp / "deep.npy", deep_npy())
    return ["compare", f, f], "nested more than"


def case_npz(tmp):
    with zipfile.ZipFile(tmp / "deep.npz", "w") as z:
        z.writestr("x.npy", deep_npy())
    return ["compare", tmp / "deep.npz", tmp / "deep.npz"], "nested more than"


def case_pt(tmp):
    # torch.save's zip layout around a pickle of one empty tuple wrapped in 65,000 TUPLE1 opcodes.
    pkl = b"\x80\x02)" + b"\x85" * 65_000 + b"."
    with zipfile.ZipFile(tmp / "deep.pt", "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    return ["compare", tmp / "deep.pt", tmp / "deep.pt"], "nested more than"


def foreign_run_with(tmp, log, payload):
    write_foreign_run(tmp / "run")
    with open(tmp / "run" / "rank0" / log, "ab") as f:
        f.write(frame(payload) if isinstance(payload, dict) else payload)
    return tmp / "run"


def raw_frame(text):
    """A framed record whose payload is `text` as given (frame() would serialize a dict)."""
    return frame_bytes(text.encode())


def frame_bytes(payload):
    from test_capture_format import crc32c
    length = struct.pack("<I", len(payload))
    return b"PFR1" + length + struct.pack("<I", crc32c(length + payload)) + payload


def case_manifest_args(tmp):
    ev = json.dumps({"kind": "event", "name": "deep", "op": "f", "direction": "forward", "role": "output",
                     "index": 0, "step": 0, "rank": 0, "order": 9, "dtype": "f32", "shape": [1], "args": "@@"})
    run = foreign_run_with(tmp, "manifest.pfr", raw_frame(ev.replace('"@@"', nested_json())))
    return ["compare", run, run], "deeper than"


def case_scalars(tmp):
    text = '{"kind": "scalars", "rank": 0, "step": 1, "values": {"loss": ' + nested_json() + "}}"
    run = foreign_run_with(tmp, "scalars.pfr", raw_frame(text))
    return ["curve", run, run], "scalars.pfr: record"


def case_msprobe_dump_json(tmp):
    for side in ("a", "b"):
        d = tmp / side
        os.makedirs(d / "dump_tensor_data")
        write(d / "dump.json", '{"task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": "'
              + str(d / "dump_tensor_data") + '", "data": {"Functional.linear.0.forward": {"input_args": '
              + nested_json() + "}}}")
    return ["compare", tmp / "a", tmp / "b"], "deeper than"


def case_msprobe_construct_json(tmp):
    for side in ("a", "b"):
        d = tmp / side
        write(d / "dump.json", '{"task": "statistics", "level": "mix", "framework": "pytorch", "data": '
              '{"Functional.linear.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", '
              '"shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0}]}}}')
        write(d / "construct.json", '{"Functional.linear.0.forward": ' + nested_json() + "}")
    return ["compare", tmp / "a", tmp / "b"], "construct.json"


def case_trainer_state(tmp):
    f = write(tmp / "trainer_state.json", '{"log_history": ' + nested_json() + "}")
    return ["curve", "--format", "hf-trainer-state", f, f], "deeper than"


def case_jsonl(tmp):
    f = write(tmp / "log.jsonl", '{"step": 0, "loss": 1.0}\n{"step": 1, "loss": ' + nested_json() + "}\n")
    return ["curve", "--format", "jsonl", f, f], "log.jsonl:2: JSON nests"


def case_tensorboard(tmp):
    # An Event whose field 1 (wall_time, a double) arrives as start-group tags nested 500,000 deep:
    # protobuf reads it as an unknown group, one level per tag.
    event = b"\x0b" * 500_000
    from test_capture_format import crc32c

    def masked(data):  # TFRecord's masked CRC32C
        c = crc32c(data)
        return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    header = struct.pack("<Q", len(event))
    record = header + struct.pack("<I", masked(header)) + event + struct.pack("<I", masked(event))
    f = write(tmp / "tb" / "events.out.tfevents.1.host", record)
    return ["curve", "--format", "tensorboard", f, f], "events.out.tfevents"


def case_lm_eval(tmp):
    f = write(tmp / "results.json", '{"results": {"t": ' + nested_json() + "}}")
    return ["eval", "lm-eval", f, f], "deeper than"


def case_mc(tmp):
    f = write(tmp / "mc.jsonl", '{"id": "a", "loglik": [-1, -2], "answer": 0}\n{"id": ' + nested_json() + "}\n")
    return ["eval", "mc", f, f], "deeper than"


def case_thresholds(tmp):
    a = good_npy(tmp / "a.npy")
    t = write(tmp / "thresholds.json", '{"f32": ' + nested_json() + "}")
    return ["compare", "--thresholds", t, a, a], "deeper than"


def case_report(tmp):
    f = write(tmp / "result.json", '{"schema": "parity.compare/1", "rows": ' + nested_json() + "}")
    return ["report", "-o", tmp / "r.html", f], "deeper than"


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


@pytest.mark.parametrize("reader", sorted(CASES))
def test_a_million_levels_under_a_256k_stack(tmp_path, reader):
    args, named = CASES[reader](tmp_path)
    rc, out = run_small_stack(*args)
    assert rc in (1, 2), f"{reader}: exit {rc} (a negative exit is the signal that killed it)\n{out[-2000:]}"
    assert named in out, f"{reader}: the message does not say '{named}'\n{out[-2000:]}"
