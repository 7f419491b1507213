"""Tables of torch call names that capture and replay share, without importing torch: which calls are
torch.distributed collectives (and what each reads and writes), and which write their receiver in place."""

# torch.distributed calls that write tensors without bumping their version counter: name -> (parameters
# read, parameters written, root parameter). Reads are recorded as the event's inputs before the call,
# writes as its outputs after it; "src": the input is only read on that rank (elsewhere it is
# typically uninitialised memory); "dst": the result is only defined on that rank.
_COLLECTIVES = {
    "all_reduce": (("tensor",), ("tensor",), None),
    "all_reduce_coalesced": (("tensors",), ("tensors",), None),
    "broadcast": (("tensor",), ("tensor",), "src"),
    "reduce": (("tensor",), ("tensor",), "dst"),
    "all_gather": (("tensor",), ("tensor_list",), None),
    "all_gather_coalesced": (("input_tensor_list",), ("output_tensor_lists",), None),
    "all_gather_into_tensor": (("input_tensor",), ("output_tensor",), None),
    "_all_gather_base": (("input_tensor",), ("output_tensor",), None),
    "reduce_scatter": (("input_list",), ("output",), None),
    "reduce_scatter_tensor": (("input",), ("output",), None),
    "_reduce_scatter_base": (("input",), ("output",), None),
    "all_to_all_single": (("input",), ("output",), None),
    "all_to_all": (("input_tensor_list",), ("output_tensor_list",), None),
    "scatter": (("scatter_list",), ("tensor",), None),
    "gather": (("tensor",), ("gather_list",), None),
    "send": (("tensor",), (), None),
    "recv": ((), ("tensor",), None),
    "isend": (("tensor",), (), None),
    "irecv": ((), ("tensor",), None),
    "batch_isend_irecv": ((), (), None),  # tensors inside the P2POp list: _collective_tensors
}

_ASYNC_COLLECTIVES = frozenset(("isend", "irecv", "batch_isend_irecv"))

# Calls that write their receiver (args[0]) in place although their name does not end in "_" (torch 1.13
# reports `a += b` as add_, newer versions may report __iadd__).
_INPLACE_DUNDERS = frozenset("""
__iadd__ __isub__ __imul__ __imatmul__ __itruediv__ __ifloordiv__ __imod__ __ipow__ __ilshift__ __irshift__
__iand__ __ixor__ __ior__ __setitem__
""".split())
