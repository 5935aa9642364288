"""CUDA GPUs through CuPy. Imported only when a GPU device is asked for."""
from __future__ import annotations

import numpy as np

from .base import Device, DeviceError


def load_cupy():
    """Import CuPy and count devices; return ``(cupy, count, reason)``."""
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or a broken CUDA install
        return None, 0, f"CuPy is not installed or failed to import ({type(exc).__name__}: {exc}); " \
                        "install the `cuda12` (or `cuda13`) extra: pip install 'gradtape[cuda12]'"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return cupy, 0, f"CuPy {cupy.__version__} found no usable CUDA driver or device ({exc})"
    if count == 0:
        return cupy, 0, f"CuPy {cupy.__version__} imported but no CUDA device is visible"
    return cupy, count, None


class CupyDevice(Device):
    host_visible = False

    def __init__(self, index: int, cupy, count: int):
        super().__init__("gpu", index)
        self.xp = cupy
        self._cupy = cupy
        self.needs_switch = count > 1
        self._cuda_device = cupy.cuda.Device(index)
        self.peak_bytes = 0

    def is_native(self, value) -> bool:
        return isinstance(value, self._cupy.ndarray)

    def asarray(self, value, dtype=None):
        with self._cuda_device:
            if isinstance(value, self._cupy.ndarray) and value.device.id != self.index:
                return self._cupy.asarray(value.get(), dtype=dtype)
            return self._cupy.asarray(value, dtype=dtype)

    def to_host(self, array) -> np.ndarray:
        self.sync_count += 1
        if isinstance(array, self._cupy.ndarray):
            return array.get()
        return np.asarray(array)

    def from_other(self, array, source: Device):
        if isinstance(source, CupyDevice):
            with self._cuda_device:
                out = self._cupy.empty(array.shape, array.dtype)
                out.data.copy_from_device(array.data, array.nbytes)
                return out
        return self.asarray(source.to_host(array))

    def copy(self, array):
        with self._cuda_device:
            return array.copy()

    def scatter_add(self, target, indices, values):
        import cupyx
        with self._cuda_device:
            cupyx.scatter_add(target, indices, values)

    def erf(self, x):
        from cupyx.scipy.special import erf
        return erf(x)

    def errstate(self):
        import contextlib
        return contextlib.nullcontext()

    def synchronize(self):
        self._cupy.cuda.Device(self.index).synchronize()

    def activate(self):
        return self._cuda_device

    def memory_info(self) -> dict:
        pool = self._cupy.get_default_memory_pool()
        used = pool.used_bytes()
        self.peak_bytes = max(self.peak_bytes, used)
        return {"device": self.name, "used_bytes": used, "pool_bytes": pool.total_bytes(),
                "peak_bytes": self.peak_bytes}


def make_devices():
    cupy, count, reason = load_cupy()
    if cupy is None or count == 0:
        return [], reason
    return [CupyDevice(i, cupy, count) for i in range(count)], None


def require_gpu(index: int, devices, reason):
    if not devices:
        raise DeviceError(f"gpu:{index} was asked for but no GPU is usable: {reason}")
    if index >= len(devices):
        raise DeviceError(f"gpu:{index} was asked for but only {len(devices)} GPU(s) exist "
                          f"(gpu:0..gpu:{len(devices) - 1})")
    return devices[index]
