"""Clipping by norm, as TensorFlow composes it: ``clip_by_norm``, ``clip_by_global_norm``,
``global_norm``. Built from tensor ops, so they are differentiable and run on the device of
their inputs without reading a value on the host (a captured step may use them)."""
from __future__ import annotations

from collections.abc import Sequence

from .ops.core import cast, identity, zeros
from .ops.math import is_finite, maximum, minimum, sqrt, where
from .ops.nn import l2_loss
from .ops.reduce import reduce_sum
from .ops.shape import stack
from .ops._util import as_tensor, dtype_name
from .indexed_slices import IndexedSlices
from .tensor import Tensor, convert_to_tensor

__all__ = ["clip_by_norm", "clip_by_global_norm", "global_norm"]


def _norm_scalar(value, like: Tensor, opname: str, what: str) -> Tensor:
    """``value`` (a number or a 0-d tensor) as a 0-d tensor of ``like``'s dtype and device."""
    if isinstance(value, Tensor):
        t = value
    else:
        try:
            t = convert_to_tensor(value, dtype=like.dtype)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{opname}: {what} must be a number or a scalar tensor, got "
                            f"{value!r} ({exc})") from None
    if t.dtype != like.dtype:
        raise TypeError(f"{opname}: {what} has dtype {dtype_name(t)}, the values "
                        f"{dtype_name(like)}")
    if t.rank != 0:
        raise ValueError(f"{opname}: {what} must be a scalar, got shape {tuple(t.shape)}")
    if t.device is not like.device:
        t = t.to(like.device)
    return t


def _values_of(t):
    """The tensor whose elements ``t`` holds: an IndexedSlices' values (as TF reads them)."""
    return t.values if isinstance(t, IndexedSlices) else t


def _like(t, values):
    """``values`` in the structure of ``t``: an IndexedSlices keeps its indices."""
    if isinstance(t, IndexedSlices):
        return IndexedSlices(values, t.indices, t.dense_shape)
    return values


def clip_by_norm(t, clip_norm, axes=None, name=None) -> Tensor:
    """``t * clip_norm / max(||t||, clip_norm)``: ``t`` rescaled so that its L2 norm (over
    ``axes``, all by default) is at most ``clip_norm``; an all-zero ``t`` stays zero, with a
    zero gradient (not NaN), as ``tf.clip_by_norm``. A negative ``clip_norm`` is taken as 0.
    An IndexedSlices gives an IndexedSlices, its values clipped (their norm is the one
    taken)."""
    if isinstance(t, IndexedSlices):
        return _like(t, clip_by_norm(t.values, clip_norm, axes))
    t = as_tensor(t, "clip_by_norm")
    if not t.dtype.is_floating:
        raise TypeError(f"clip_by_norm: t must be a float tensor, got {dtype_name(t)}")
    # a negative clip_norm counts as 0 (the result is then 0), as TF clamps it
    c = _norm_scalar(clip_norm, t, "clip_by_norm", "clip_norm")
    c = maximum(c, 0.0)
    l2sum = reduce_sum(t * t, axes, keepdims=True)
    positive = l2sum > 0
    # sqrt at 0 has an infinite derivative: take it only where the sum is positive
    l2norm = where(positive, sqrt(where(positive, l2sum, 1.0)), l2sum)
    return identity(t * c / maximum(l2norm, c))


def global_norm(t_list, name=None) -> Tensor:
    """``sqrt(sum of the squares of every element of every tensor)`` (Nones skipped; an
    IndexedSlices counts its values), on the first tensor's device, as
    ``tf.linalg.global_norm``; 0 (float32) for no tensor."""
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"global_norm: t_list should be a sequence of tensors, got "
                        f"{type(t_list).__name__}")
    values = [as_tensor(_values_of(t), "global_norm") for t in t_list if t is not None]
    if not values:      # (TF's sum over no tensor: a float32 zero)
        return zeros((), "float32")
    dev = values[0].device
    halves = [l2_loss(v if v.device is dev else v.to(dev)) for v in values]
    dtypes = {h.dtype for h in halves}
    if len(dtypes) > 1:
        raise TypeError(f"global_norm: the tensors have different dtypes "
                        f"({', '.join(sorted(d.name for d in dtypes))})")
    return sqrt(reduce_sum(stack(halves)) * 2.0)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """``(clipped, norm)``: every tensor of ``t_list`` times
    ``clip_norm / max(global_norm, clip_norm)`` (Nones stay None), and the global norm (or
    ``use_norm``). A global norm that is inf or NaN makes every value NaN, as in TF. An
    IndexedSlices stays one, its values scaled."""
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"clip_by_global_norm: t_list should be a sequence of tensors, got "
                        f"{type(t_list).__name__}")
    t_list = list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list)
    else:
        first = next((t for t in t_list if t is not None), None)
        like = as_tensor(_values_of(first), "clip_by_global_norm") if first is not None else None
        use_norm = use_norm if isinstance(use_norm, Tensor) else convert_to_tensor(
            use_norm, dtype=like.dtype if like is not None else None)
    c = _norm_scalar(clip_norm, use_norm, "clip_by_global_norm", "clip_norm")
    # finite norms: clip_norm * min(1 / norm, 1 / clip_norm); inf and NaN turn the scale NaN
    scale = where(is_finite(use_norm), c * minimum(1.0 / use_norm, 1.0 / c), float("nan"))
    out = []
    for t in t_list:
        if t is None:
            out.append(None)
            continue
        v = as_tensor(_values_of(t), "clip_by_global_norm")
        s = scale if scale.device is v.device else scale.to(v.device)
        out.append(_like(t, identity(v * (s if s.dtype == v.dtype else cast(s, v.dtype)))))
    return out, use_norm
