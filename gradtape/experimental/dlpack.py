"""Zero-copy exchange of tensors with other array libraries through DLPack
(``tf.experimental.dlpack``).

``to_dlpack(t)`` gives a DLPack capsule of ``t``'s buffer; ``from_dlpack(x)`` a Tensor
sharing ``x``'s memory, where ``x`` is a capsule or any object with ``__dlpack__`` (NumPy,
CuPy, PyTorch, JAX arrays). A Tensor is such an object too, so ``torch.from_dlpack(t)``,
``cupy.from_dlpack(t)`` and ``np.from_dlpack(t)`` take gradtape tensors directly. Host
memory becomes a CPU tensor, CUDA memory a tensor of the GPU that holds it; nothing is
copied either way. The strict test device does not export (its arrays stand for memory the
host cannot read).

Tensors are immutable: a buffer shared out must not be written by the other side while
gradtape uses it (a tape may have saved it).
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..backend import DeviceError, get_device, physical_gpu
from ..tensor import Tensor

__all__ = ["to_dlpack", "from_dlpack"]

_KDLCPU, _KDLCUDA, _KDLCUDAHOST, _KDLCUDAMANAGED = 1, 2, 3, 13


def _exportable(t: Tensor, opname: str):
    if not isinstance(t, Tensor):
        raise TypeError(f"{opname}: expected a gradtape Tensor, got {type(t).__name__}")
    dev = t._device
    if dev.kind not in ("cpu", "gpu"):
        raise DeviceError(f"{opname}: tensors of {dev} cannot be shared through DLPack (the "
                          "strict test device keeps its arrays from the host); use .numpy()")
    value = t._value
    if isinstance(value, np.generic):        # a reduction's NumPy scalar: a 0-d array
        value = np.asarray(value)
    return value


def dlpack_of(t: Tensor, stream=None, max_version=None, dl_device=None, copy=None):
    """``t.__dlpack__(...)``: the capsule of the tensor's array, made by its array library."""
    value = _exportable(t, "__dlpack__")
    kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version),
                                ("dl_device", dl_device), ("copy", copy)) if v is not None}
    if isinstance(value, np.ndarray):
        if max_version is None and not value.flags.writeable:
            # the legacy capsule cannot mark memory read-only (a broadcast view, an array
            # NumPy lent read-only): such a tensor is exported as a copy
            value = value.copy()
        return value.__dlpack__(**kwargs)
    with t._device.activate():               # the stream handshake runs on the tensor's GPU
        try:
            return value.__dlpack__(**kwargs)
        except TypeError:
            if "max_version" not in kwargs:
                raise
            if "dl_device" in kwargs or "copy" in kwargs:
                raise BufferError(f"__dlpack__: this CuPy version has no versioned DLPack "
                                  f"protocol, so dl_device={dl_device!r} and copy={copy!r} "
                                  "cannot be honoured") from None
            # a library without the versioned protocol: the legacy capsule
            kwargs.pop("max_version")
            return value.__dlpack__(**kwargs)


def dlpack_device_of(t: Tensor):
    """``t.__dlpack_device__()``: ``(device type, device id)``, 1 for host memory, 2 for
    CUDA."""
    return _exportable(t, "__dlpack_device__").__dlpack_device__()


def to_dlpack(tf_tensor) -> object:
    """A DLPack capsule of the tensor's buffer (no copy); it may be consumed once."""
    return dlpack_of(tf_tensor)


class _Capsule:
    """An object with the DLPack protocol around a bare capsule, for ``from_dlpack``."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def _capsule_device(capsule):
    """``(device type, device id)`` read from a capsule's DLTensor (legacy ``dltensor``
    capsules: a ``DLManagedTensor`` whose ``DLTensor`` starts with the data pointer and
    then the device)."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    name = get_name(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        used = " (already consumed)" if name in (b"used_dltensor",
                                                 b"used_dltensor_versioned") else ""
        raise ValueError(f"from_dlpack: expected an unconsumed DLPack capsule named "
                         f"'dltensor' or 'dltensor_versioned', got {name!r}{used}")
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                  ctypes.c_char_p]
    ptr = get_pointer(capsule, name)
    void_p = ctypes.sizeof(ctypes.c_void_p)
    # DLManagedTensorVersioned: {DLPackVersion (2 x uint32), manager_ctx, deleter, uint64
    # flags, DLTensor}; DLManagedTensor starts with its DLTensor. A DLTensor is the data
    # pointer, then the device.
    tensor = ptr + (8 + 2 * void_p + 8 if name == b"dltensor_versioned" else 0)
    dev = (ctypes.c_int32 * 2).from_address(tensor + void_p)
    return int(dev[0]), int(dev[1])


def from_dlpack(dlcapsule) -> Tensor:
    """A Tensor sharing the memory of ``dlcapsule``: a DLPack capsule or an object with
    ``__dlpack__``. Host memory gives a CPU tensor, CUDA memory a tensor of its GPU."""
    obj = dlcapsule
    if isinstance(obj, Tensor):
        # (a Variable gives a tensor of its current buffer, as its other consumers do)
        return obj if type(obj) is Tensor else Tensor(obj._value, obj._device)
    if type(obj).__name__ == "PyCapsule":
        obj = _Capsule(obj, _capsule_device(obj))
    elif not hasattr(obj, "__dlpack__") or not hasattr(obj, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: expected a DLPack capsule or an object with "
                        f"__dlpack__, got {type(obj).__name__}")
    kind, index = obj.__dlpack_device__()
    kind, index = int(kind), int(index)
    if kind in (_KDLCPU, _KDLCUDAHOST):
        dev = get_device("cpu")
        try:
            value = np.from_dlpack(obj)
        except (BufferError, TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(f"from_dlpack: NumPy cannot take this host array ({exc}); "
                            "bfloat16 and other dtypes NumPy lacks are not supported") from None
    elif kind in (_KDLCUDA, _KDLCUDAMANAGED):
        dev = physical_gpu(index)
        with dev.activate():
            value = dev.xp.from_dlpack(obj)
    else:
        raise DeviceError(f"from_dlpack: DLPack device type {kind} (device {index}) is "
                          "neither host memory (1) nor CUDA (2)")
    if value.dtype.kind not in "biufc":
        raise TypeError(f"from_dlpack: unsupported dtype {value.dtype}")
    return Tensor(value, dev)
