"""Reductions with ``axis`` and ``keepdims``, and their rules."""
from __future__ import annotations

from math import prod as _size_of

import numpy as np

from ..registry import apply1, defop
from ._util import as_tensor, dtype_name, normalize_axis
from .core import sum_leading
from . import math as m

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_logsumexp", "reduce_variance", "reduce_std", "reduce_any", "reduce_all",
           "cumsum", "cumprod", "argmax", "argmin", "norm", "count_nonzero", "reduce_euclidean_norm"]


def _kept_shape(in_shape, axes):
    if axes is None:
        return (1,) * len(in_shape)
    return tuple(1 if i in axes else d for i, d in enumerate(in_shape))


def _expand(ops, g, in_shape, axes, keepdims):
    """Reshape a reduced cotangent so it broadcasts against the input (batch axes kept)."""
    out_rank = len(in_shape) if keepdims else (0 if axes is None else len(in_shape) - len(axes))
    lead = tuple(g.shape[:g.ndim - out_rank])
    return ops.reshape(g, shape=lead + _kept_shape(in_shape, axes), in_shape=tuple(g.shape)), lead


def _sum_fwd(xp, x, axis, keepdims, in_shape):
    if axis and len(axis) < x.ndim and axis == tuple(range(len(axis))):
        out = sum_leading(xp, x, len(axis))   # leading axes: BLAS when that is faster
        return out.reshape((1,) * len(axis) + tuple(out.shape)) if keepdims else out
    if x.dtype.kind in "iu":     # in the input's dtype (wrapping around), as TF
        return xp.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    return xp.sum(x, axis=axis, keepdims=keepdims)


def _sum_vjp(ops, needs, g, ans, x, axis, keepdims, in_shape):
    gk, lead = _expand(ops, g, in_shape, axis, keepdims)
    return (ops.broadcast_to(gk, shape=lead + tuple(in_shape)),)


_sum = defop("reduce_sum", _sum_fwd, _sum_vjp, save_inputs=False, save_output=False)


def _mean_fwd(xp, x, axis, keepdims, in_shape):
    if x.dtype.kind in "iu":
        # the sum in the input's dtype divided by the count, truncated toward zero (as TF)
        n = max(_count(in_shape, axis), 1)
        s = xp.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
        if x.dtype.kind == "u":
            return s // x.dtype.type(n)
        return xp.where(s < 0, -((-s) // n), s // n).astype(x.dtype)
    if xp is np and x.dtype.itemsize >= 4:
        # np.mean's own steps without its Python layer: the pairwise sum, then the division
        return np.add.reduce(x, axis=axis, keepdims=keepdims) / _count(in_shape, axis)
    return xp.mean(x, axis=axis, keepdims=keepdims)


def _count(in_shape, axis):
    if axis is None:
        return _size_of(in_shape) if in_shape else 1
    return _size_of([in_shape[a] for a in axis]) if axis else 1


def _mean_vjp(ops, needs, g, ans, x, axis, keepdims, in_shape):
    gk, lead = _expand(ops, g, in_shape, axis, keepdims)
    n = _count(in_shape, axis)
    return (ops.broadcast_to(gk / n, shape=lead + tuple(in_shape)),)


_mean = defop("reduce_mean", _mean_fwd, _mean_vjp, save_inputs=False, save_output=False)


def _extreme_vjp(ops, needs, g, ans, x, axis, keepdims, in_shape):
    # The gradient is split equally among tied extreme elements (TF's reduce_max rule).
    ak, _ = _expand(ops, ans, in_shape, axis, keepdims)
    mask = ops.cast(x == ak, dtype=x.dtype, src=np.dtype(bool))
    count = ops.reduce_sum(mask, axis=axis, keepdims=True, in_shape=tuple(in_shape))
    gk, lead = _expand(ops, g, in_shape, axis, keepdims)
    return (gk * (mask / count),)


def _empty_extreme(xp, x, axis, keepdims, lowest):
    """reduce_max/min over no elements: the identity (-inf/inf, or the integer dtype's
    lowest/highest value), as TF."""
    dt = x.dtype
    if dt.kind == "f":
        fill = -np.inf if lowest else np.inf
    else:
        info = np.iinfo(dt)
        fill = info.min if lowest else info.max
    shape = [1 if (axis is None or i in axis) else d for i, d in enumerate(x.shape)]
    if not keepdims:
        shape = [d for i, d in enumerate(x.shape) if not (axis is None or i in axis)]
    return xp.full(tuple(shape), fill, dtype=dt)


def _max_fwd(xp, x, axis, keepdims, in_shape):
    if x.size == 0:
        return _empty_extreme(xp, x, axis, keepdims, True)
    return xp.max(x, axis=axis, keepdims=keepdims)


def _min_fwd(xp, x, axis, keepdims, in_shape):
    if x.size == 0:
        return _empty_extreme(xp, x, axis, keepdims, False)
    return xp.min(x, axis=axis, keepdims=keepdims)


_rmax = defop("reduce_max", _max_fwd, _extreme_vjp)
_rmin = defop("reduce_min", _min_fwd, _extreme_vjp)


def _prod_fwd(xp, x, axis, keepdims, in_shape):
    if x.dtype.kind in "iu":     # in the input's dtype (wrapping around), as TF
        return xp.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    return xp.prod(x, axis=axis, keepdims=keepdims)


def _prod_vjp(ops, needs, g, ans, x, axis, keepdims, in_shape):
    # d prod / d x_i = product of the others, computed without dividing by zeros:
    # no zero in the slice -> prod / x_i; one zero -> the product of the non-zeros at the
    # zero, 0 elsewhere; two or more -> 0.
    zero = x == 0
    safe = ops.where(zero, 1, x)
    kw = dict(axis=axis, keepdims=True, in_shape=tuple(in_shape))
    nonzero_prod = ops.reduce_prod(safe, **kw)
    nzeros = ops.reduce_sum(ops.cast(zero, dtype=x.dtype, src=np.dtype(bool)), **kw)
    others = ops.where(nzeros == 0, nonzero_prod / safe,
                       ops.where((nzeros == 1) & zero, nonzero_prod, 0))
    gk, lead = _expand(ops, g, in_shape, axis, keepdims)
    return (gk * others,)


_prod = defop("reduce_prod", _prod_fwd, _prod_vjp, save_output=False)


def _lse_fwd(xp, x, axis, keepdims, in_shape):
    mx = xp.max(x, axis=axis, keepdims=True)
    mx = xp.where(xp.isfinite(mx), mx, 0)
    out = xp.log(xp.sum(xp.exp(x - mx), axis=axis, keepdims=True)) + mx
    if not keepdims:
        out = out.reshape([d for i, d in enumerate(out.shape)
                           if not (axis is None or i in axis)])
    return out


def _lse_vjp(ops, needs, g, ans, x, axis, keepdims, in_shape):
    ak, _ = _expand(ops, ans, in_shape, axis, keepdims)
    gk, _ = _expand(ops, g, in_shape, axis, keepdims)
    return (gk * ops.exp(x - ak),)


_lse = defop("reduce_logsumexp", _lse_fwd, _lse_vjp)


def _reducer(op, opname, float_only=False):
    def fn(input_tensor, axis=None, keepdims=False, name=None):
        x = as_tensor(input_tensor, opname)
        if float_only and x._value.dtype.kind != "f":
            raise TypeError(f"{opname}: expected a floating-point tensor, got {dtype_name(x)}")
        if x._value.dtype.kind == "b" and opname != "reduce_sum":
            raise TypeError(f"{opname}: bool tensors are not supported; cast first")
        axes = normalize_axis(axis, x._value.ndim, opname)
        return apply1(op, x, {"axis": axes, "keepdims": bool(keepdims),
                              "in_shape": tuple(x._value.shape)})
    fn.__name__ = opname
    return fn


reduce_sum = _reducer(_sum, "reduce_sum")
reduce_mean = _reducer(_mean, "reduce_mean")
reduce_max = _reducer(_rmax, "reduce_max")
reduce_min = _reducer(_rmin, "reduce_min")
reduce_prod = _reducer(_prod, "reduce_prod")
reduce_logsumexp = _reducer(_lse, "reduce_logsumexp", float_only=True)

_any = defop("reduce_any", lambda xp, x, axis, keepdims: xp.any(x, axis=axis, keepdims=keepdims),
             nondiff=True)
_all = defop("reduce_all", lambda xp, x, axis, keepdims: xp.all(x, axis=axis, keepdims=keepdims),
             nondiff=True)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    x = as_tensor(input_tensor, "reduce_any")
    return apply1(_any, x, {"axis": normalize_axis(axis, x.ndim, "reduce_any"),
                            "keepdims": bool(keepdims)})


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    x = as_tensor(input_tensor, "reduce_all")
    return apply1(_all, x, {"axis": normalize_axis(axis, x.ndim, "reduce_all"),
                            "keepdims": bool(keepdims)})


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Population variance over ``axis``."""
    x = as_tensor(input_tensor, "reduce_variance")
    if x._value.dtype.kind != "f":
        raise TypeError(f"reduce_variance: expected a floating-point tensor, got {dtype_name(x)}")
    mean = reduce_mean(x, axis=axis, keepdims=True)
    return reduce_mean(m.squared_difference(x, mean), axis=axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Population standard deviation over ``axis``."""
    return m.sqrt(reduce_variance(input_tensor, axis=axis, keepdims=keepdims))


def _cumsum_fwd(xp, x, axis, exclusive, reverse):
    if reverse:
        x = xp.flip(x, axis=axis)
    out = xp.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = out - x
    if reverse:
        out = xp.flip(out, axis=axis)
    return out


def _cumsum_vjp(ops, needs, g, ans, x, axis, exclusive, reverse):
    return (ops.cumsum(g, axis=axis, exclusive=exclusive, reverse=not reverse),)


_cumsum = defop("cumsum", _cumsum_fwd, _cumsum_vjp, save_inputs=False, save_output=False)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along ``axis``."""
    x = as_tensor(x, "cumsum")
    ax = normalize_axis(axis, x.ndim, "cumsum")[0] - x.ndim   # negative: batch-safe rule
    return apply1(_cumsum, x, {"axis": ax, "exclusive": bool(exclusive), "reverse": bool(reverse)})


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along ``axis`` (differentiable as a chain of products)."""
    from .shape import unstack, stack
    x = as_tensor(x, "cumprod")
    ax = normalize_axis(axis, x.ndim, "cumprod")[0]
    parts = unstack(x, axis=ax)
    if reverse:
        parts = parts[::-1]
    out = []
    acc = None
    for p in parts:
        if exclusive:
            out.append(m.add(m.multiply(p, 0), 1) if acc is None else acc)
            acc = p if acc is None else m.multiply(acc, p)
        else:
            acc = p if acc is None else m.multiply(acc, p)
            out.append(acc)
    if reverse:
        out = out[::-1]
    return stack(out, axis=ax)


def _arg(name, fn):
    op = defop(name, fn, None, nondiff=True)

    def f(input, axis=None, output_type=np.int64, name=None):
        x = as_tensor(input, op.name)
        ax = 0 if axis is None else normalize_axis(axis, x.ndim, op.name)[0]
        from ..dtypes import np_dtype
        return apply1(op, x, {"axis": ax, "dtype": np_dtype(output_type)})
    f.__name__ = name
    return f


argmax = _arg("argmax", lambda xp, x, axis, dtype: xp.argmax(x, axis=axis).astype(dtype))
argmin = _arg("argmin", lambda xp, x, axis, dtype: xp.argmin(x, axis=axis).astype(dtype))


def count_nonzero(input, axis=None, keepdims=False, dtype=np.int64, name=None):
    from .core import cast
    x = as_tensor(input, "count_nonzero")
    nz = m.not_equal(x, 0) if x._value.dtype.kind != "b" else x
    return cast(reduce_sum(cast(nz, np.int64), axis=axis, keepdims=keepdims), dtype)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """Vector and matrix norms (``ord``: 'euclidean', 'fro', 1, 2, np.inf, or p > 0)."""
    x = as_tensor(tensor, "norm")
    if x._value.dtype.kind != "f":
        raise TypeError(f"norm: expected a floating-point tensor, got {dtype_name(x)}")
    keep = bool(keepdims)
    is_matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if is_matrix:
        a0, a1 = normalize_axis(axis[0], x.ndim, "norm")[0], normalize_axis(axis[1], x.ndim, "norm")[0]
        if ord in ("euclidean", "fro"):
            return m.sqrt(reduce_sum(m.square(x), axis=(a0, a1), keepdims=keep))
        if ord == 1:
            s = reduce_sum(m.abs(x), axis=a0, keepdims=True)
            out = reduce_max(s, axis=a1, keepdims=True)
        elif ord == np.inf:
            s = reduce_sum(m.abs(x), axis=a1, keepdims=True)
            out = reduce_max(s, axis=a0, keepdims=True)
        elif ord in (2, 2.0):       # the largest singular value
            from ..linalg import _spectral_norm
            return _spectral_norm(x, axis, keep)
        else:
            raise ValueError(f"norm: matrix ord {ord!r} is not supported (use 'fro', "
                             "'euclidean', 1, 2 or np.inf)")
        if not keep:
            from .shape import squeeze
            out = squeeze(out, axis=sorted((a0, a1)))
        return out
    if axis is not None and isinstance(axis, (list, tuple)) and len(axis) != 1:
        raise ValueError(f"norm: axis must be an int or a pair, got {axis!r}")
    ax = axis[0] if isinstance(axis, (list, tuple)) else axis
    if ord in ("euclidean", "fro", 2, 2.0):
        return m.sqrt(reduce_sum(m.square(x), axis=ax, keepdims=keep))
    if ord == 1:
        return reduce_sum(m.abs(x), axis=ax, keepdims=keep)
    if ord == np.inf:
        return reduce_max(m.abs(x), axis=ax, keepdims=keep)
    if isinstance(ord, (int, float)) and ord > 0:
        p = float(ord)
        return m.pow(reduce_sum(m.pow(m.abs(x), p), axis=ax, keepdims=keep), 1.0 / p)
    raise ValueError(f"norm: ord must be 'euclidean', 'fro', np.inf or a positive number, got {ord!r}")


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    return norm(input_tensor, axis=axis, keepdims=keepdims)

