"""Primitives the engine itself relies on: sums to a shape, broadcasts, identity, casts,
device copies and the constant makers."""
from __future__ import annotations

import numpy as np

from ..backend import get_device
from ..dtypes import np_dtype
from ..registry import STATE, DiffOps, apply, apply1, defop
from ..tensor import Tensor
from ._util import as_tensor

__all__ = ["identity", "stop_gradient", "cast", "copy_to_device", "broadcast_to",
           "zeros", "ones", "zeros_like", "ones_like", "fill"]


def _sum_axes(gshape, shape):
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    for i, d in enumerate(shape):
        if d == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    return tuple(axes)


def sum_leading(xp, g, lead):
    """``g`` summed over its first ``lead`` axes.

    A bias gradient sums many rows of a short trailing block ((N, H, W, C) -> (C,)), which
    NumPy reduces in a slow strided loop; a product with a vector of ones runs in BLAS,
    about 10x faster there and more accurate (blocked, not one running sum). A device
    reduces in one tree-shaped kernel (the ones would cost a launch of their own)."""
    if xp is not np:                 # (dtype: integers keep theirs, as TF's sums)
        return xp.sum(g, axis=tuple(range(lead)), dtype=g.dtype)
    gshape = tuple(g.shape)
    n = 1
    for d in gshape[lead:]:
        n *= d
    size = g.size
    if size >= 4096 and n and size // n >= 64 and g.dtype.kind == "f" and \
            g.dtype.itemsize >= 4 and g.flags.c_contiguous:
        m = size // n
        return np.matmul(np.ones(m, dtype=g.dtype), g.reshape(m, n)).reshape(gshape[lead:])
    # (np.sum's Python layer skipped; dtype: integers keep theirs)
    return np.add.reduce(g, axis=tuple(range(lead)), dtype=g.dtype)


def _sum_to_fwd(xp, g, shape):
    if tuple(g.shape) == tuple(shape):
        return g
    axes = _sum_axes(g.shape, shape)
    if not axes:
        return g.reshape(shape)
    if axes == tuple(range(len(axes))):
        return sum_leading(xp, g, len(axes)).reshape(shape)
    return xp.sum(g, axis=axes).reshape(shape)


def _sum_to_vjp(ops, needs, g, ans, x, shape):
    return (ops.broadcast_to(g, shape=tuple(x.shape)),)


defop("sum_to", _sum_to_fwd, _sum_to_vjp, save_output=False)


def _sum_to_batched_fwd(xp, g, shape, batch_ndim):
    gshape = tuple(g.shape)
    inner = gshape[batch_ndim:]
    if inner == tuple(shape):
        return g
    axes = tuple(batch_ndim + a for a in _sum_axes(inner, shape))
    return xp.sum(g, axis=axes).reshape(gshape[:batch_ndim] + tuple(shape))


def _sum_to_batched_vjp(ops, needs, g, ans, x, shape, batch_ndim):
    kept = tuple(g.shape[:batch_ndim]) + (1,) * (x.ndim - batch_ndim - len(shape)) + tuple(shape)
    return (ops.broadcast_to(ops.reshape(g, shape=kept, in_shape=tuple(g.shape)),
                             shape=tuple(x.shape)),)


defop("sum_to_batched", _sum_to_batched_fwd, _sum_to_batched_vjp, save_output=False)


def _broadcast_to_fwd(xp, x, shape):
    if xp is np and type(x) is np.ndarray and x.flags.c_contiguous and len(shape) >= x.ndim:
        # np.broadcast_to's read-only zero-stride view, built without its Python layer
        lead = len(shape) - x.ndim
        strides = [0] * lead
        for d, n, st in zip(shape[lead:], x.shape, x.strides):
            if n != d and n != 1:
                return xp.broadcast_to(x, shape)   # (raises NumPy's error)
            strides.append(st if n == d and n != 1 else 0)
        out = np.ndarray(tuple(shape), x.dtype, x, 0, tuple(strides))
        out.flags.writeable = False
        return out
    return xp.broadcast_to(x, shape)


def _broadcast_to_vjp(ops, needs, g, ans, x, shape):
    return (ops.sum_to(g, shape=tuple(x.shape)),)


_broadcast_to = defop("broadcast_to", _broadcast_to_fwd, _broadcast_to_vjp, save_output=False,
                      batch_rule=False)


def broadcast_to(input, shape, name=None) -> Tensor:
    """Broadcast ``input`` to ``shape`` (the gradient is summed back)."""
    x = as_tensor(input, "broadcast_to")
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    shape = tuple(int(s) for s in shape)
    try:
        np.broadcast_shapes(tuple(x._value.shape), shape)
        if len(shape) < x._value.ndim:
            raise ValueError
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast shape {tuple(x._value.shape)} to "
                         f"{shape}") from None
    return apply1(_broadcast_to, x, {"shape": shape})


def _identity_vjp(ops, needs, g, ans, x):
    return (g,)


_identity = defop("identity", lambda xp, x: x, _identity_vjp, save_inputs=False,
                  save_output=False)


def identity(input, name=None) -> Tensor:
    """The same value as a new tensor (recorded, gradient passes through)."""
    return apply1(_identity, as_tensor(input, "identity"))


_stop = defop("stop_gradient", lambda xp, x: x, nondiff=True)


def stop_gradient(input, name=None) -> Tensor:
    """The same value, with no gradient flowing back through it."""
    return apply1(_stop, as_tensor(input, "stop_gradient"))


def _cast_fwd(xp, x, dtype):
    if x.dtype == dtype:
        return x
    if x.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        x = x.real                  # complex to real keeps the real part, as TF
    if x.dtype.kind == "f" and np.dtype(dtype).kind in "iub":
        errstate = getattr(xp, "errstate", None)    # NaN/inf to an integer: quiet, as TF
        if errstate is not None:
            with errstate(invalid="ignore"):
                return x.astype(dtype, copy=False)
    return x.astype(dtype, copy=False)


def _cast_vjp(ops, needs, g, ans, x, dtype, src):
    # between floating and complex types (a complex gradient to a real source: its real part)
    if np.dtype(src).kind not in "fc":
        return (None,)
    return (ops.cast(g, dtype=src, src=g.dtype),)


_cast = defop("cast", lambda xp, x, dtype, src: _cast_fwd(xp, x, dtype), _cast_vjp,
              save_inputs=False, save_output=False, complex_rule=True)


def cast(x, dtype, name=None) -> Tensor:
    """``x`` converted to ``dtype`` (gradients flow between floating types)."""
    x = as_tensor(x, "cast")
    dt = np_dtype(dtype)
    if x._value.dtype == dt:
        return x
    return apply1(_cast, x, {"dtype": dt, "src": x._value.dtype})


def _copy_fwd(xp, x, src, dst):
    return dst.from_other(x, src)


def _copy_vjp(ops, needs, g, ans, x, src, dst):
    return (ops.copy_to_device(g, src=dst, dst=src),)


_copy = defop("copy_to_device", _copy_fwd, _copy_vjp, save_inputs=False, save_output=False)


def _copy_apply(x: Tensor, src, dst):
    out = Tensor(dst.from_other(x._value, src), dst)
    if STATE.active:
        from ..registry import _slow_path
        _slow_path(_copy, (x,), out, {"src": src, "dst": dst})
    return out


# Rules running on tensors must land the copy on the destination device.
DiffOps.copy_to_device = staticmethod(lambda g, src, dst: _copy_apply(g, src, dst))


def copy_to_device(x, device) -> Tensor:
    """A copy of ``x`` on ``device``; gradients flow back to ``x``'s device."""
    x = as_tensor(x, "copy_to_device")
    dst = get_device(device)
    if dst is x._device:
        return x
    return _copy_apply(x, x._device, dst)


# --- constants ---------------------------------------------------------------------------

def shape_tuple(shape, opname):
    """A shape (list, tuple, int or 1-D tensor) as a tuple of non-negative ints."""
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{opname}: shape must be a list of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"{opname}: negative dimension in shape {shape}")
    return shape


_zeros = defop("zeros", lambda xp, shape, dtype: xp.zeros(shape, dtype=dtype), nondiff=True)
_ones = defop("ones", lambda xp, shape, dtype: xp.ones(shape, dtype=dtype), nondiff=True)
_zeros_like = defop("zeros_like", lambda xp, x, dtype=None: xp.zeros(x.shape, dtype=dtype or x.dtype),
                    nondiff=True)
_ones_like = defop("ones_like", lambda xp, x, dtype=None: xp.ones(x.shape, dtype=dtype or x.dtype),
                   nondiff=True)
_fill = defop("fill", lambda xp, shape, value, dtype: xp.full(shape, value, dtype=dtype),
              nondiff=True)


def _default_float(dtype):
    return np_dtype(dtype) if dtype is not None else np.dtype(np.float32)


def zeros(shape, dtype=None, name=None) -> Tensor:
    dt = _default_float(dtype)
    if dt.kind == "O":                    # strings: b"", on the host (as TF's string kernels)
        return _empty_strings(shape_tuple(shape, "zeros"), None)
    return apply(_zeros, (), {"shape": shape_tuple(shape, "zeros"), "dtype": dt})


def ones(shape, dtype=None, name=None) -> Tensor:
    dt = _default_float(dtype)
    if dt.kind == "O":
        raise TypeError("ones: there is no one of dtype string")
    return apply(_ones, (), {"shape": shape_tuple(shape, "ones"), "dtype": dt})


def zeros_like(input, dtype=None, name=None) -> Tensor:
    """Zeros of ``input``'s shape (and dtype); not connected to ``input`` for gradients."""
    x = as_tensor(input, "zeros_like")
    if x._value.dtype.kind == "O" and dtype is None or dtype is not None and \
            np_dtype(dtype).kind == "O":
        return _empty_strings(tuple(x._value.shape), x)
    return apply1(_zeros_like, x, {"dtype": np_dtype(dtype)} if dtype is not None else None)


def ones_like(input, dtype=None, name=None) -> Tensor:
    x = as_tensor(input, "ones_like")
    if (np_dtype(dtype) if dtype is not None else x._value.dtype).kind == "O":
        raise TypeError("ones_like: there is no one of dtype string")
    return apply1(_ones_like, x, {"dtype": np_dtype(dtype)} if dtype is not None else None)


def _empty_strings(shape, like):
    """A string tensor of ``b""`` (on ``like``'s device, else the host)."""
    from .. import backend
    arr = np.full(shape, b"", dtype=object)
    return Tensor(arr, like._device if like is not None and like._value.dtype.kind == "O"
                  else backend.CPU)


def fill(dims, value, name=None) -> Tensor:
    """A tensor of shape ``dims`` filled with ``value`` (dtype from the value, as TF)."""
    v = as_tensor(value, "fill")
    if v._value.ndim != 0:
        raise ValueError(f"fill: value must be a scalar, got shape {tuple(v._value.shape)}")
    dev = v._device
    shp = shape_tuple(dims, "fill")
    with dev.activate():
        arr = dev.xp.full(shp, v._value, dtype=v._value.dtype)
    return Tensor(arr, dev)


