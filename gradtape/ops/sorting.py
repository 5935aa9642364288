"""Sorting: ``sort``, ``argsort``, ``top_k`` (TF's names and order of ties).

The order is an integer op of its own (not differentiable); the sorted values are a gather
along the sorted axis at those positions, so their gradient is the gather's: each output's
gradient goes back to the element it came from. Ties keep their index order in both
directions, as TF's top_k-based kernels do.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..registry import apply1, defop
from ._util import as_tensor, dtype_name
from .shape import gather, transpose

__all__ = ["sort", "argsort", "top_k", "TopKV2"]

TopKV2 = namedtuple("TopKV2", ["values", "indices"])


def _order_fwd(xp, x, descending):
    """Positions sorting the last axis of ``x`` (stable: ties in index order)."""
    if descending:
        # floats negate; integers and bools invert their bits, which reverses their order
        # without overflowing (-INT_MIN would wrap)
        key = -x if x.dtype.kind in "fc" else xp.invert(x)
    else:
        key = x
    order = xp.argsort(key, axis=-1, kind="stable")
    if descending and x.dtype.kind == "f":
        # NaN ranks above +inf, as TF's top_k: a stable pass moving the NaNs to the front
        nan_last = ~xp.isnan(xp.take_along_axis(x, order, axis=-1))
        order = xp.take_along_axis(order, xp.argsort(nan_last, axis=-1, kind="stable"),
                                   axis=-1)
    return order.astype(np.int32)


_order = defop("argsort", _order_fwd, None, nondiff=True)

_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _checked(values, axis, direction, opname):
    x = as_tensor(values, opname)
    if x._value.dtype.kind not in "biuf":
        raise TypeError(f"{opname}: values must be real numbers, got {dtype_name(x)}")
    if x.ndim == 0:
        raise ValueError(f"{opname}: values must have at least one axis, got a scalar")
    if direction not in _DIRECTIONS:
        raise ValueError(f"{opname}: direction must be 'ASCENDING' or 'DESCENDING', got "
                         f"{direction!r}")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"{opname}: axis must be an int, got {axis!r}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"{opname}: axis {axis} is out of range for values of rank {x.ndim}")
    return x, int(axis) % x.ndim


def _to_last(x, ax):
    """``x`` with axis ``ax`` moved last, and the permutation that moves it back."""
    n = x.ndim
    if ax == n - 1:
        return x, None
    perm = [i for i in range(n) if i != ax] + [ax]
    back = [0] * n
    for i, p in enumerate(perm):
        back[p] = i
    return transpose(x, perm), back


def _take_last(x, order):
    """``x`` gathered along its last axis at ``order`` (of the same leading shape)."""
    n = x.ndim
    return gather(x, order, axis=n - 1, batch_dims=n - 1)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """int32 positions that sort ``values`` along ``axis`` (ties in index order, whatever
    ``stable`` says)."""
    x, ax = _checked(values, axis, direction, "argsort")
    y, back = _to_last(x, ax)
    order = apply1(_order, y, {"descending": direction == "DESCENDING"})
    return order if back is None else transpose(order, back)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis``; differentiable (the gradient of each output goes to
    the element it came from)."""
    x, ax = _checked(values, axis, direction, "sort")
    y, back = _to_last(x, ax)
    out = _take_last(y, apply1(_order, y, {"descending": direction == "DESCENDING"}))
    return out if back is None else transpose(out, back)


def top_k(input, k=1, sorted=True, index_type=None, name=None):  # noqa: A002
    """``(values, indices)`` of the ``k`` largest entries of the last axis, largest first
    (ties: the lower index first), as ``tf.math.top_k``; ``values`` is differentiable."""
    x, _ = _checked(input, -1, "DESCENDING", "top_k")
    if hasattr(k, "numpy"):
        k = k.numpy()
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) and not (
            isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu"):
        raise TypeError(f"top_k: k must be an int, got {k!r}")
    k = int(k)
    n = x._value.shape[-1]
    if not 0 <= k <= n:
        raise ValueError(f"top_k: input must have at least k={k} columns, got shape "
                         f"{tuple(x._value.shape)}" if k > n else
                         f"top_k: k must be non-negative, got {k}")
    order = apply1(_order, x, {"descending": True})[..., :k]
    if index_type is not None:
        from ..ops.core import cast
        order = cast(order, index_type)
    return TopKV2(_take_last(x, order), order)
