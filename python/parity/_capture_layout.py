"""The run's parallel layout, recorded once per rank in the fingerprint under `parallel` (docs/layout.md
"Recorded by the capture", docs/dump-format.md): how many ranks, this rank's coordinates in the tensor-,
pipeline- and data-parallel groups, and how each split parameter is divided among the TP ranks, so that
`parity compare` merges a sharded run's parameters without a hand-written layout file.

Sources of the sizes and coordinates, first that answers wins:
  1. Megatron-LM / MindSpeed `megatron.core.parallel_state`, when it is imported and initialised;
  2. the capture's `layout=` argument ({"tp": 2, "pp": 1, "dp": 1, "order": "tp-dp-pp"});
  3. torch.distributed: the world size alone (tp = pp = 1, dp = world);
  4. nothing: one rank.
Per parameter: Megatron's attributes (`tensor_model_parallel`, `partition_dim`, `partition_stride`,
`sequence_parallel`, `allreduce`) and a DTensor's placements. Only parameters that carry one are listed.
This runs once, at the capture's start: nothing is added to the recording of tensors.
"""
import sys

ORDER_DIMS = ("tp", "dp", "pp")
DEFAULT_ORDER = "tp-dp-pp"  # Megatron-LM's rank order, fastest-varying first
# Keys the `layout=` argument accepts besides the sizes and the order (passed through to the reader).
_LAYER_KEYS = ("num_layers", "stage_layers")


def check_layout_argument(layout):
    """The capture's `layout=` argument, checked before anything is written (ValueError naming the key)."""
    if layout is None:
        return None
    if not isinstance(layout, dict):
        raise TypeError("capture: layout must be a dict such as {\"tp\": 2}, got " + type(layout).__name__)
    unknown = set(layout) - set(ORDER_DIMS) - {"order"} - set(_LAYER_KEYS)
    if unknown:
        raise ValueError("capture: layout key(s) {} not one of tp, pp, dp, order, num_layers, stage_layers"
                         .format(", ".join(sorted(map(str, unknown)))))
    out = {}
    for key in ORDER_DIMS:
        v = layout.get(key, 1)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError("capture: layout[{!r}] must be a positive integer, got {!r}".format(key, v))
        out[key] = v
    order = layout.get("order", DEFAULT_ORDER)
    if not isinstance(order, str) or sorted(order.split("-")) != sorted(ORDER_DIMS):
        raise ValueError("capture: layout['order'] {!r} must name tp, dp and pp once each (\"tp-dp-pp\")".format(order))
    out["order"] = order
    for key in _LAYER_KEYS:
        if key in layout:
            out[key] = layout[key]
    return out


def coords_of(rank, sizes, order):
    """Where `rank` sits: {"tp": .., "dp": .., "pp": ..}, the first dimension of `order` varying fastest."""
    coords, rest = {}, rank
    for dim in order.split("-"):
        coords[dim] = rest % sizes[dim]
        rest //= sizes[dim]
    return coords


def _megatron_layout():
    """Sizes and coordinates from Megatron-LM's / MindSpeed's parallel_state, or None when it is not imported
    or not initialised. Only looked up in sys.modules: importing Megatron is the training script's business."""
    ps = sys.modules.get("megatron.core.parallel_state")
    if ps is None:
        return None
    try:
        if not ps.model_parallel_is_initialized():
            return None
        out = {"source": "megatron",
               "tp": int(ps.get_tensor_model_parallel_world_size()),
               "pp": int(ps.get_pipeline_model_parallel_world_size()),
               "dp": int(ps.get_data_parallel_world_size()),
               "coords": {"tp": int(ps.get_tensor_model_parallel_rank()),
                          "pp": int(ps.get_pipeline_model_parallel_rank()),
                          "dp": int(ps.get_data_parallel_rank())}}
    except (AttributeError, RuntimeError, AssertionError, TypeError):
        return None
    # Informative dimensions the reader does not merge yet: each only when the version has its getter.
    for key, size_fn, rank_fn in (("cp", "get_context_parallel_world_size", "get_context_parallel_rank"),
                                  ("ep", "get_expert_model_parallel_world_size", "get_expert_model_parallel_rank"),
                                  ("vpp", "get_virtual_pipeline_model_parallel_world_size",
                                   "get_virtual_pipeline_model_parallel_rank")):
        try:
            size = getattr(ps, size_fn)()
            if size is not None:
                out[key] = int(size)
                out["coords"][key] = int(getattr(ps, rank_fn)() or 0)
        except (AttributeError, RuntimeError, AssertionError, TypeError):
            pass
    return out


def _world():
    """torch.distributed's world size, or None when no process group is initialised."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return int(dist.get_world_size())
    except (ImportError, RuntimeError):
        pass
    return None


def _placement(x):
    """A DTensor placement in one spelling whatever the torch version ("S(0)" in 2.15, "Shard(dim=0)" before):
    "Shard(d)", "Replicate()", "Partial(op)"."""
    try:
        if x.is_shard():
            return "Shard({})".format(int(x.dim))
        if x.is_replicate():
            return "Replicate()"
        if x.is_partial():
            return "Partial({})".format(getattr(x, "reduce_op", "sum"))
    except (AttributeError, TypeError):
        pass
    return str(x)


def _parameter_split(p):
    """What a parameter says of its split: Megatron's attributes when tensor_model_parallel or
    sequence_parallel is set, a DTensor's placements; None when it says nothing."""
    out = {}
    if getattr(p, "tensor_model_parallel", False):
        out["tensor_model_parallel"] = True
        out["partition_dim"] = int(getattr(p, "partition_dim", -1))
        out["partition_stride"] = int(getattr(p, "partition_stride", 1))
    if getattr(p, "sequence_parallel", False):
        out["sequence_parallel"] = True
    if getattr(p, "allreduce", True) is False:  # Megatron's MoE experts: not all-reduced over DP
        out["allreduce"] = False
    if type(p).__name__ == "DTensor" and hasattr(p, "placements"):
        mesh = p.device_mesh
        out["dtensor"] = {"placements": [_placement(x) for x in p.placements], "mesh_shape": list(mesh.shape),
                          "mesh_dim_names": list(mesh.mesh_dim_names or [])}
    return out or None


def parameter_splits(model, well_formed):
    """{parameter name (named_parameters): its split} for every parameter that says how it is split."""
    out = {}
    for name, p in model.named_parameters():
        split = _parameter_split(p)
        if split is not None:
            out[well_formed(name)] = split
    return out


def parallel_layout(model, layout, rank, well_formed):
    """The fingerprint's `parallel` object of this rank (docs/layout.md "Recorded by the capture")."""
    world = _world()
    found = _megatron_layout()
    if found is None and layout is not None:
        sizes = {k: layout[k] for k in ORDER_DIMS}
        found = dict(sizes, source="argument", order=layout["order"],
                     coords=coords_of(rank, sizes, layout["order"]))
        found.update({k: layout[k] for k in _LAYER_KEYS if k in layout})
    if found is None:  # every rank a data-parallel replica (one rank without a process group)
        found = {"source": "none" if world is None else "torch.distributed", "tp": 1, "pp": 1, "dp": world or 1,
                 "order": DEFAULT_ORDER, "coords": {"tp": 0, "pp": 0, "dp": 0 if world is None else rank}}
    found.update(world=world or 1, rank=rank, params=parameter_splits(model, well_formed))
    return found
