"""The device protocol: one object per place that owns its array namespace."""
from __future__ import annotations

import contextlib

import numpy as np


#: Set once a device with ``needs_switch`` exists (several GPUs): the backward sweep then
#: makes each entry's device current while it runs that entry's rule.
SWITCHING_DEVICES = False


def native_order(arr):
    """``arr`` itself, or a copy in native byte order when it is byte-swapped (devices keep
    native arrays only: NumPy computes results and gradients natively)."""
    dt = getattr(arr, "dtype", None)
    if dt is not None and not dt.isnative:
        return arr.astype(dt.newbyteorder("="))
    return arr


def single_value(value, dtype=None):
    """``(shape, scalar, dtype)`` when the host ``value`` holds exactly one number (a Python
    or NumPy scalar, or a one-element array), else None. A device makes such a value with a
    fill kernel that takes the number as an argument: no host-to-device copy, so it can be
    recorded in a CUDA graph (with the number frozen, as a Python number in ``x * 2.0``)."""
    if isinstance(value, (bool, int, float, complex, np.generic)):
        host = np.asarray(value, dtype=dtype)
    elif type(value) is np.ndarray and value.size == 1:
        host = value if dtype is None else value.astype(dtype, copy=False)
    else:
        return None
    if host.dtype.kind not in "biufc":
        return None
    host = native_order(host)
    return host.shape, host.reshape(())[()], host.dtype


class DeviceError(RuntimeError):
    """A device is unknown, unavailable, or two devices were mixed."""


class Device:
    """A place where arrays live (``cpu:0``, ``gpu:0`` ...).

    ``xp`` is the array namespace (``numpy`` or ``cupy``); every op runs through it.
    """

    kind: str = "cpu"
    index: int = 0
    xp = np
    #: True when arrays live in host memory (NumPy can read them without a copy).
    host_visible = True
    # Optimizers update variables with the fused kernels of backend.kernels (one launch per
    # variable on CuPy; their NumPy references elsewhere)
    fused_updates = False
    #: True when a switch of the active device is needed before launching work.
    needs_switch = False

    def __init__(self, kind: str, index: int):
        self.kind = kind
        self.index = index
        self.name = f"{kind}:{index}"
        self.sync_count = 0
        self.transfer_count = 0     # host arrays copied to the device (uploads)

    # --- identity -------------------------------------------------------------------
    @property
    def device_type(self) -> str:
        """``"CPU"`` or ``"GPU"`` (``"STRICT"``), as TF's PhysicalDevice.device_type."""
        return self.kind.upper()

    def __repr__(self):
        return f"Device('{self.name}')"

    def __str__(self):
        return self.name

    def __eq__(self, other):
        if isinstance(other, Device):
            return self is other
        if isinstance(other, str):
            from . import parse_device_name
            try:
                return parse_device_name(other) == (self.kind, self.index)
            except DeviceError:
                return False
        return NotImplemented

    def __hash__(self):
        return hash(self.name)

    # --- arrays ---------------------------------------------------------------------
    def is_native(self, value) -> bool:
        """True when ``value`` is an array of this device's namespace."""
        return isinstance(value, np.ndarray)

    def asarray(self, value, dtype=None):
        """Place a host value (scalar, list, NumPy array) on this device, in native byte order
        (a byte-swapped array, say from a big-endian file, is converted once here, so that
        the dtypes of values and of their gradients, which NumPy computes natively, agree)."""
        return native_order(np.asarray(value, dtype=dtype))

    def to_host(self, array) -> np.ndarray:
        """Copy an array of this device to a host NumPy array."""
        return np.asarray(array)

    def from_other(self, array, source: "Device"):
        """Copy an array of another device onto this one."""
        return self.asarray(source.to_host(array))

    def copy(self, array):
        return self.xp.array(array, copy=True)

    def owns_memory(self, array) -> bool:
        """Whether ``array`` owns its memory (is no view of another array's); its views then
        reference it, so its reference count says whether anything else can read it."""
        return array.base is None

    def scatter_add(self, target, indices, values):
        """``target[indices] += values`` with repeated indices summed (in place)."""
        np.add.at(target, indices, values)

    def erf(self, x):
        """The error function of a device array (same dtype)."""
        try:
            from scipy.special import erf
        except ImportError:  # pragma: no cover - exercised only without SciPy
            return _erf_numpy(x)
        return erf(x).astype(x.dtype, copy=False)

    def erfc(self, x):
        """``1 - erf(x)``, accurate in the tail where that difference cancels."""
        try:
            from scipy.special import erfc
        except ImportError:  # pragma: no cover - exercised only without SciPy
            return _erf_numpy(x, complement=True)
        return erfc(x).astype(x.dtype, copy=False)

    def errstate(self):
        """Silence floating-point warnings (1/0, log(0)): results follow IEEE as TF does."""
        return np.errstate(all="ignore")

    def synchronize(self):
        pass

    def activate(self):
        return contextlib.nullcontext()

    def memory_info(self) -> dict:
        return {"device": self.name, "used_bytes": None, "pool_bytes": None, "peak_bytes": None}


def _erf_numpy(x, complement=False):
    """erf (or erfc) to float64 precision without SciPy (Abramowitz-Stegun 7.1.26 is too
    coarse; erfc as 1 - erf cancels in the tail)."""
    import math
    f = np.frompyfunc(math.erfc if complement else math.erf, 1, 1)
    # (np.asarray: on a 0-d input, newer NumPy returns the Python float itself)
    return np.asarray(f(x)).astype(x.dtype if x.dtype.kind == "f" else np.float64)
