"""Argument handling shared by the public op functions."""
from __future__ import annotations

import numpy as np

from ..backend import current_device
from ..dtypes import as_dtype
from ..tensor import Tensor, convert_to_tensor, _check_python_value_fits


def device_array(value, dev, dtype=None):
    """``value`` as an array of device ``dev``: a raw array of the device's namespace (a
    CuPy array, a strict array) is placed as it is, since ``np.asarray`` would refuse it or
    read it on the host; anything else (lists, scalars, host arrays) is uploaded."""
    if dev.is_native(value) and not isinstance(value, np.ndarray):
        return dev.asarray(value, dtype=dtype)
    return dev.asarray(np.asarray(value), dtype=dtype)


def dtype_name(x) -> str:
    return as_dtype(x._value.dtype).name


def as_tensor(x, opname: str) -> Tensor:
    """A Tensor for ``x`` (Tensors and Variables pass through)."""
    if isinstance(x, Tensor):
        return x
    if x is None:
        raise TypeError(f"{opname}: expected a tensor, got None")
    try:
        return convert_to_tensor(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{opname}: expected a tensor, got {type(x).__name__} ({exc})") from None


def operand(opname: str, v, ref: Tensor):
    """``v`` made fit to combine with tensor ``ref``: TF's conversion to ``ref``'s dtype.

    Python ints and floats stay Python scalars when the namespace combines them without
    changing ``ref``'s dtype (NumPy 2 / CuPy treat them as weak); anything else becomes a
    Tensor of ``ref``'s dtype on ``ref``'s device.
    """
    kind = ref._value.dtype.kind
    tv = type(v)
    if kind == "O":                          # a string tensor: text only, on the CPU
        return _string_operand(opname, v, ref)
    if tv is float:
        if kind == "f" or kind == "c":
            return v
        raise TypeError(f"{opname}: cannot convert {v!r} to a tensor of dtype "
                        f"{dtype_name(ref)} (the other operand)")
    if tv is int:
        if kind in "fiuc":
            return v
    if tv is complex:
        if kind == "c":
            return v
        raise TypeError(f"{opname}: cannot convert {v!r} to a tensor of dtype "
                        f"{dtype_name(ref)} (the other operand)")
    if isinstance(v, np.generic) and v.dtype.kind in "fiu" and kind in "fiu":
        if v.dtype.kind == "f" and kind != "f":
            raise TypeError(f"{opname}: cannot convert {v!r} to a tensor of dtype "
                            f"{dtype_name(ref)} (the other operand)")
        return v.item()
    if v is None:
        raise TypeError(f"{opname}: expected a tensor or number, got None")
    if isinstance(v, (str, bytes)):
        raise TypeError(f"{opname}: expected a tensor or number, got {type(v).__name__} {v!r}")
    dt = ref._value.dtype
    dev = ref._device
    if dev.is_native(v) and not isinstance(v, np.ndarray):
        arr = v.astype(dt, copy=False)
    else:
        _check_python_value_fits(v, dt, opname)
        try:
            host = np.asarray(v)
        except Exception as exc:
            raise TypeError(f"{opname}: cannot convert {type(v).__name__} to a tensor "
                            f"({exc})") from exc
        if host.dtype.kind not in ("fiubc" if dt.kind == "c" else "fiub"):
            raise TypeError(f"{opname}: cannot convert {type(v).__name__} {v!r} to a tensor"
                            f"{' of dtype ' + dtype_name(ref) if host.dtype.kind == 'c' else ''}")
        if host.dtype.kind == "f" and dt.kind in "iub":
            raise TypeError(f"{opname}: cannot convert float values to a tensor of dtype "
                            f"{dtype_name(ref)} (the other operand)")
        arr = dev.asarray(host, dtype=dt)
    return Tensor(arr, dev)


def _string_operand(opname, v, ref):
    from ..tensor import _string_array
    try:
        arr = _string_array(v)
    except TypeError:
        raise TypeError(f"{opname}: cannot convert {v!r} to a tensor of dtype string (the "
                        "other operand)") from None
    return Tensor(arr, ref._device)


def binary(opname: str, x, y):
    """Operands of a binary op: same dtype (no promotion, as TF), same device."""
    if isinstance(x, Tensor):
        if isinstance(y, Tensor):
            if x._value.dtype != y._value.dtype:
                raise TypeError(f"{opname}: operands have different dtypes {dtype_name(x)} and "
                                f"{dtype_name(y)}; gradtape does not promote, use gt.cast")
            return x, y
        return x, operand(opname, y, x)
    if isinstance(y, Tensor):
        return operand(opname, x, y), y
    x = as_tensor(x, opname)
    return x, operand(opname, y, x)


def float_tensor(x, opname: str) -> Tensor:
    x = as_tensor(x, opname)
    if x._value.dtype.kind != "f":
        raise TypeError(f"{opname}: expected a floating-point tensor, got {dtype_name(x)}")
    return x


def normalize_axis(axis, ndim: int, opname: str):
    """``axis`` (None, int, list, tensor) as a sorted tuple of non-negative ints, or None."""
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    if isinstance(axis, (list, tuple)):
        axes = [int(a) for a in axis]
    else:
        axes = [int(axis)]
    out = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1) and not (ndim == 0 and a in (0, -1)):
            raise ValueError(f"{opname}: axis {a} is out of range for a tensor of rank {ndim}")
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{opname}: repeated axis in {axes}")
    return tuple(sorted(out))


def current():
    return current_device()
