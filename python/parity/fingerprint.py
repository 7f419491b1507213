"""The environment fingerprint written at the start of every capture (docs/capture.md, "Fingerprint").

Two runs that disagree numerically often differ here first: library versions, TF32, deterministic
algorithms, autocast, precision-mode environment variables. The fingerprint is a plain JSON object.
"""
import json
import os
import platform
import socket
import sys

from ._core import core
from .seed import LAST_SEEDS

# Environment variables that change numerics. Sources: PyTorch reproducibility and CUDA semantics
# notes (CUBLAS_WORKSPACE_CONFIG, NVIDIA_TF32_OVERRIDE, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE), cuDNN / NCCL
# docs, Ascend CANN and torch_npu docs (ACL_PRECISION_MODE, ASCEND_*, INF_NAN_MODE_ENABLE, HCCL_*), oneDNN.
PRECISION_ENV_VARS = [
    "CUBLAS_WORKSPACE_CONFIG", "NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "CUDA_LAUNCH_BLOCKING", "CUBLASLT_WORKSPACE_SIZE", "CUDNN_DETERMINISTIC", "TORCH_CUDNN_V8_API_ENABLED",
    "NCCL_ALGO", "NCCL_PROTO", "PYTORCH_CUDA_ALLOC_CONF", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "ONEDNN_DEFAULT_FPMATH_MODE", "DNNL_DEFAULT_FPMATH_MODE", "TORCH_FP32_PRECISION", "PYTHONHASHSEED",
    "XLA_USE_BF16", "XLA_DOWNCAST_BF16",
    # Ascend (CANN / torch_npu)
    "ACL_PRECISION_MODE", "ASCEND_PRECISION_MODE", "INF_NAN_MODE_ENABLE", "INF_NAN_MODE_FORCE_DISABLE",
    "ASCEND_LAUNCH_BLOCKING", "HCCL_DETERMINISTIC", "ASCEND_GLOBAL_LOG_LEVEL", "ACLNN_CACHE_LIMIT",
    "ALLOW_FP32_TO_FP16", "ALLOW_HF32", "CLOSE_MATMUL_K_SHIFT", "TASK_QUEUE_ENABLE", "ASCEND_HOME_PATH",
]


def _model_info(model):
    import torch

    info = {"class": type(model).__name__}
    n, dtypes = 0, {}
    for p in model.parameters():
        n += p.numel()
        k = str(p.dtype).replace("torch.", "")
        dtypes[k] = dtypes.get(k, 0) + p.numel()
    info["parameters"] = n
    info["parameter_dtypes"] = dtypes
    info["training"] = bool(model.training)
    cfg = getattr(model, "config", None)
    if cfg is not None:
        if hasattr(cfg, "to_dict"):
            cfg = cfg.to_dict()
        elif hasattr(cfg, "__dataclass_fields__"):
            import dataclasses

            cfg = dataclasses.asdict(cfg)
        elif not isinstance(cfg, dict):
            cfg = dict(getattr(cfg, "__dict__", {}))
        info["config"] = json.loads(json.dumps(cfg, default=str))
    del torch
    return info


# Device types whose autocast state torch reports (torch ≥ 2.4: torch.is_autocast_enabled(device_type)).
AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "hpu", "mps", "npu", "xla")


def _autocast_state(torch):
    """'off', or the enabled autocast regions as 'device:dtype' joined by ',' (e.g. 'cpu:bfloat16')."""
    on = []
    for dev in AUTOCAST_DEVICES:
        try:
            enabled = torch.is_autocast_enabled(dev)
            dtype = torch.get_autocast_dtype(dev)
        except (TypeError, RuntimeError, AttributeError):
            # torch < 2.4: only the cpu and cuda queries exist, without a device argument
            if dev == "cpu":
                enabled, dtype = torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype()
            elif dev == "cuda":
                enabled, dtype = torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype()
            else:
                continue
        if enabled:
            on.append("{}:{}".format(dev, str(dtype).replace("torch.", "")))
    return ",".join(on) if on else "off"


_AUTOCAST_QUERIES = []


def autocast_state():
    """_autocast_state, fast enough to be called at every op event (capture records it in the replay
    spec): the devices present whose autocast can be queried are found once."""
    import torch

    if not _AUTOCAST_QUERIES:
        for dev in AUTOCAST_DEVICES:
            mod = getattr(torch, dev, None)
            if dev != "cpu" and not (mod is not None and hasattr(mod, "is_available") and mod.is_available()):
                continue  # no such device here: nothing can run under its autocast
            try:
                torch.is_autocast_enabled(dev)
                torch.get_autocast_dtype(dev)
                _AUTOCAST_QUERIES.append(dev)
            except (TypeError, RuntimeError, AttributeError):
                pass
        if not _AUTOCAST_QUERIES:
            _AUTOCAST_QUERIES.append(None)  # torch < 2.4: the slow general path
    if _AUTOCAST_QUERIES[0] is None:
        return _autocast_state(torch)
    on = ["{}:{}".format(dev, str(torch.get_autocast_dtype(dev)).replace("torch.", ""))
          for dev in _AUTOCAST_QUERIES if torch.is_autocast_enabled(dev)]
    return ",".join(on) if on else "off"


def precision_state():
    """The precision settings a forward runs under, as seen from inside it: context managers and
    switches a training loop typically flips after the capture started (torch.autocast, the default
    dtype, fp32 matmul precision / TF32, reduced-precision reductions). Flat {name: value}."""
    import torch

    matmul = torch.backends.cuda.matmul

    def flag(name):
        try:
            return bool(getattr(matmul, name))
        except (AttributeError, AssertionError):  # torch 1.13 asserts on attributes it does not know
            return None

    state = {
        "autocast": _autocast_state(torch),
        "default_dtype": str(torch.get_default_dtype()).replace("torch.", ""),
        "matmul_precision": (torch.get_float32_matmul_precision()
                             if hasattr(torch, "get_float32_matmul_precision") else None),
        "tf32_cuda_matmul": flag("allow_tf32"),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "fp16_reduced_precision_reduction": flag("allow_fp16_reduced_precision_reduction"),
        "bf16_reduced_precision_reduction": flag("allow_bf16_reduced_precision_reduction"),
    }
    return state


class PrecisionTimeline:
    """`precision_by_step` of the fingerprint: per setting, the steps at which its value (as seen by the
    model's forward) changed, {"autocast": {"0": "off", "5": "cpu:bfloat16"}, ...}. Only changes are
    kept, so a run that never changes a setting holds one entry per setting, and two runs that differ
    show exactly the setting and the step where they part (parity compare's CONFIG_DIFF)."""

    def __init__(self):
        self.by_setting = {}
        self._last = {}

    def observe(self, step):
        """Records the current state at `step`; True when something changed since the last call."""
        changed = False
        for key, value in precision_state().items():
            if key not in self._last or self._last[key] != value:
                self.by_setting.setdefault(key, {})[str(step)] = value
                self._last[key] = value
                changed = True
        return changed


def environment_fingerprint(model=None, extra=None):
    import numpy
    import torch

    fp = {
        "schema": core.schemas.FINGERPRINT,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "hostname": socket.gethostname(),
        "argv": list(sys.argv),
        "pid": os.getpid(),
        "default_dtype": str(torch.get_default_dtype()).replace("torch.", ""),
        "num_threads": torch.get_num_threads(),
        "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
        "autocast": {
            "cpu": bool(torch.is_autocast_cpu_enabled()),
            "cpu_dtype": str(torch.get_autocast_cpu_dtype()).replace("torch.", ""),
            "cuda": bool(torch.is_autocast_enabled()),
        },
        "seeds": dict(LAST_SEEDS),
        "env": {k: os.environ[k] for k in PRECISION_ENV_VARS if k in os.environ},
        "devices": [{"kind": "cpu", "name": platform.processor() or platform.machine()}],
    }
    fp["matmul_precision"] = torch.get_float32_matmul_precision() if hasattr(torch, "get_float32_matmul_precision") else None
    fp["tf32"] = {
        "cuda_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn": bool(torch.backends.cudnn.allow_tf32),
    }
    fp["cudnn"] = {"deterministic": bool(torch.backends.cudnn.deterministic),
                   "benchmark": bool(torch.backends.cudnn.benchmark)}
    if torch.cuda.is_available():
        fp["cuda"] = {"toolkit": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            fp["devices"].append({"kind": "cuda", "index": i, "name": p.name,
                                  "capability": "{}.{}".format(p.major, p.minor),
                                  "memory_bytes": int(p.total_memory)})
        try:
            import subprocess

            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=5)
            if out.returncode == 0:
                fp["cuda"]["driver"] = out.stdout.strip().splitlines()[0]
        except Exception:
            pass
    try:
        import torch_npu  # noqa: F401  (Ascend)

        npu = torch.npu
        fp["ascend"] = {"torch_npu": getattr(torch_npu, "__version__", None),
                        "cann": getattr(getattr(torch_npu, "version", None), "cann", None)}
        for i in range(npu.device_count()):
            fp["devices"].append({"kind": "npu", "index": i, "name": npu.get_device_name(i)})
    except Exception:
        pass
    if model is not None:
        fp["model"] = _model_info(model)
    if extra:
        fp["extra"] = extra
    return fp
