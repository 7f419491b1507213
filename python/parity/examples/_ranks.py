"""What the parallel-layout examples share (tensor_parallel, pipeline_parallel): running one function per
rank in a gloo group on this machine, and writing the run's layout file beside it."""
import json
import os
import tempfile

import torch
import torch.distributed as dist


def _rank_main(rank, fn, world, init_file, args):
    if world > 1:
        dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=world)
    torch.set_num_threads(1)  # tiny ops: one thread per process, the machine's cores shared between them
    try:
        fn(rank, world, *args)
    finally:
        if world > 1:
            dist.destroy_process_group()


def run_ranks(fn, world, *args):
    """fn(rank, world, *args) in `world` processes of a gloo group (file rendezvous: no port), or in this
    process when world is 1."""
    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "init")
        if world == 1:
            _rank_main(0, fn, 1, init, args)
        else:
            torch.multiprocessing.spawn(_rank_main, args=(fn, world, init, args), nprocs=world)


def write_layout(out, layout):
    """The layout file beside the run, OUT.layout.json: what `parity compare --layout` reads."""
    with open(out.rstrip("/") + ".layout.json", "w") as f:
        json.dump(layout, f, indent=2)
