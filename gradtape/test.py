"""``gt.test``: TensorFlow's ``tf.test`` device queries, for scripts that check for a GPU."""
from __future__ import annotations

from . import backend as _backend

__all__ = ["is_gpu_available", "gpu_device_name", "is_built_with_cuda",
           "is_built_with_gpu_support"]


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None) -> bool:
    """Whether a visible CUDA GPU is usable (of at least ``(major, minor)`` compute
    capability when given), as the deprecated ``tf.test.is_gpu_available``."""
    gpus = [d for d in _backend.list_devices() if d.kind == "gpu"]
    if min_cuda_compute_capability is None:
        return bool(gpus)
    want = tuple(int(v) for v in min_cuda_compute_capability)
    for d in gpus:
        cc = d.xp.cuda.Device(d.index).compute_capability     # e.g. "90"
        if (int(cc[:-1]), int(cc[-1])) >= want:
            return True
    return False


def gpu_device_name() -> str:
    """``"/device:GPU:0"`` for the first visible GPU, ``""`` when there is none."""
    gpus = [d for d in _backend.list_devices() if d.kind == "gpu"]
    return "/device:GPU:0" if gpus else ""      # (visible GPUs are numbered from 0)


def is_built_with_cuda() -> bool:
    """Whether CuPy (the ``cuda12``/``cuda13`` extra) is installed: gradtape's CUDA support."""
    import importlib.util
    return importlib.util.find_spec("cupy") is not None


def is_built_with_gpu_support() -> bool:
    """As :func:`is_built_with_cuda`."""
    return is_built_with_cuda()
