"""Array functions composed from other ops (so differentiable and device-resident):
``roll``, ``meshgrid``, ``sequence_mask``."""
from __future__ import annotations

import numpy as np

from .backend import device_scope
from .dtypes import as_dtype
from .ops._util import as_tensor
from .ops.core import broadcast_to, cast
from .ops.math import less
from .ops.reduce import reduce_max
from .ops.shape import concat, expand_dims, range as _range, reshape
from .tensor import Tensor

__all__ = ["roll", "meshgrid", "sequence_mask"]


def _ints(value, opname, what):
    if isinstance(value, Tensor):
        value = value.numpy()
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise TypeError(f"{opname}: {what} must be an int or a list of ints, got {value!r}")
    return [int(v) for v in arr.reshape(-1)]


def roll(input, shift, axis, name=None) -> Tensor:  # noqa: A002
    """Elements shifted by ``shift`` along ``axis`` (ints, or lists of the same length),
    wrapping around, as ``tf.roll``."""
    x = as_tensor(input, "roll")
    shifts, axes = _ints(shift, "roll", "shift"), _ints(axis, "roll", "axis")
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shifts} and axis {axes} differ in length")
    total = {}
    for s, a in zip(shifts, axes):
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"roll: axis {a} is out of range for a tensor of rank {x.ndim}")
        a %= x.ndim
        total[a] = total.get(a, 0) + s
    for a, s in total.items():
        n = x._value.shape[a]
        if n == 0 or s % n == 0:
            continue
        k = s % n
        head = tuple(slice(None) for _ in range(a))
        x = concat([x[head + (slice(n - k, None),)], x[head + (slice(0, n - k),)]], axis=a)
    return x


def meshgrid(*args, indexing="xy", name=None):
    """Coordinate grids from 1-D tensors, ``"xy"`` (Cartesian: the first two outputs' axes
    swapped) or ``"ij"`` (matrix) indexing, as ``tf.meshgrid``."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    vs = [as_tensor(a, "meshgrid") for a in args]
    if not vs:
        return []
    for v in vs:
        if v.ndim != 1:
            raise ValueError(f"meshgrid: inputs must be 1-D, got shape {tuple(v.shape)}")
    sizes = [v._value.shape[0] for v in vs]
    n = len(vs)
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(vs):
        pos = i
        if indexing == "xy" and n > 1 and i < 2:
            pos = 1 - i
        shape = [1] * n
        shape[pos] = -1
        out.append(broadcast_to(reshape(v, shape), sizes))
    return out


def sequence_mask(lengths, maxlen=None, dtype="bool", name=None) -> Tensor:
    """``mask[..., j] = j < lengths[...]`` for ``j`` below ``maxlen`` (the longest length when
    not given, read on the host), as ``tf.sequence_mask``."""
    lens = as_tensor(lengths, "sequence_mask")
    if lens._value.dtype.kind not in "iu":
        raise TypeError(f"sequence_mask: lengths must be integers, got {lens.dtype.name}")
    if maxlen is None:
        maxlen = int(reduce_max(lens).numpy()) if lens._value.size else 0
    elif isinstance(maxlen, Tensor):
        maxlen = int(maxlen.numpy())
    with device_scope(lens.device):
        steps = _range(max(int(maxlen), 0), dtype=lens.dtype)
    mask = less(steps, expand_dims(lens, -1))
    return mask if as_dtype(dtype).np == np.bool_ else cast(mask, dtype)
