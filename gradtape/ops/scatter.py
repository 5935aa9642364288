"""Scatters and segment reductions: ``scatter_nd``, ``tensor_scatter_nd_*`` and
``math.(unsorted_)segment_*``, as TensorFlow defines them.

Indices outside their range follow TensorFlow's kernels: on the CPU they raise, on a device
the host cannot read (a GPU) checking would make the host wait, so such an update is
dropped (and gets no gradient). Negative segment ids are dropped everywhere, as TF does.
The scatters add into a zero tensor with the scatter-add of ``getitem``'s gradient (the
embedding kernel on a GPU), so their gradients are gathers and differentiable again.
"""
from __future__ import annotations

import numpy as np

from ..backend import kernels as K
from ..registry import InvalidArgumentError, apply, apply1, defop
from ..tensor import Tensor, convert_to_tensor
from ._util import as_tensor, dtype_name
from .core import shape_tuple
from .shape import _getitem_grad, _index_tensor

__all__ = ["scatter_nd", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
           "tensor_scatter_nd_update", "unsorted_segment_sum", "unsorted_segment_mean",
           "unsorted_segment_sqrt_n", "unsorted_segment_max", "unsorted_segment_min",
           "segment_sum", "segment_mean", "segment_max", "segment_min",
           "unsorted_segment_prod", "segment_prod"]


def _nd_key(opname, idx: Tensor, shape, updates: Tensor):
    """(key, valid) addressing ``shape`` with the last axis of ``idx``: ``key`` a tuple of
    index arrays (out-of-range entries sent to 0 on a device), ``valid`` None or a bool array
    broadcasting against ``updates`` (False for the dropped entries)."""
    iv = idx._value
    if iv.ndim == 0 or not 1 <= iv.shape[-1] <= len(shape):
        raise ValueError(f"{opname}: indices of shape {tuple(iv.shape)} need a last axis of 1 "
                         f"to {len(shape)} coordinates into shape {tuple(shape)}")
    m = iv.shape[-1]
    want = tuple(iv.shape[:-1]) + tuple(shape[m:])
    if tuple(updates._value.shape) != want:
        raise ValueError(f"{opname}: updates have shape {tuple(updates._value.shape)}; indices "
                         f"of shape {tuple(iv.shape)} into shape {tuple(shape)} need updates "
                         f"of shape {want}")
    dev = idx._device
    if dev.host_visible:
        if iv.size:
            flat = iv.reshape(-1, m)
            lo, hi = flat.min(axis=0), flat.max(axis=0)
            for j in range(m):
                if lo[j] < 0 or hi[j] >= shape[j]:
                    bad = int(lo[j]) if lo[j] < 0 else int(hi[j])
                    raise InvalidArgumentError(
                        f"{opname}: index {bad} is out of range [0, {shape[j]}) for axis {j} "
                        f"of shape {tuple(shape)}")
        return tuple(iv[..., j] for j in range(m)), None
    xp = dev.xp
    with dev.activate():
        ok = None
        for j in range(m):
            c = iv[..., j]
            okj = (c >= 0) & (c < shape[j])
            ok = okj if ok is None else ok & okj
        key = tuple(xp.where(ok, iv[..., j], 0) for j in range(m))
        valid = ok.reshape(tuple(ok.shape) + (1,) * (len(shape) - m))
    return key, valid


def _indices_updates(opname, indices, updates, dev=None):
    u = as_tensor(updates, opname)
    if dev is not None and u._device is not dev:
        raise ValueError(f"{opname}: updates are on {u._device}, the tensor on {dev}")
    return _index_tensor(indices, u._device, opname), u


def _scatter_add(u, key, valid, shape) -> Tensor:
    """A zero tensor of ``shape`` with ``u`` added at ``key`` (``getitem``'s gradient:
    differentiable, the embedding kernel on a GPU)."""
    return apply1(_getitem_grad, u, {"key": key, "shape": shape, "advanced": True,
                                     "valid": valid})


def scatter_nd(indices, updates, shape, name=None) -> Tensor:
    """A zero tensor of ``shape`` with ``updates`` added at ``indices`` (the last axis of
    ``indices`` gives coordinates into the first axes of ``shape``; repeated indices sum)."""
    shape = shape_tuple(shape, "scatter_nd")
    idx, u = _indices_updates("scatter_nd", indices, updates)
    key, valid = _nd_key("scatter_nd", idx, shape, u)
    return _scatter_add(u, key, valid, shape)


def _tensor_scatter(opname, tensor, indices, updates):
    t = as_tensor(tensor, opname)
    if not isinstance(updates, Tensor):     # Python values take the tensor's dtype, as in TF
        from ..backend import device_scope
        with device_scope(t._device):
            updates = convert_to_tensor(updates, dtype=t.dtype)
    idx, u = _indices_updates(opname, indices, updates, t._device)
    if u.dtype != t.dtype:
        raise TypeError(f"{opname}: updates are {dtype_name(u)}, the tensor {dtype_name(t)}")
    shape = tuple(t._value.shape)
    key, valid = _nd_key(opname, idx, shape, u)
    return t, u, key, valid, shape


def tensor_scatter_nd_add(tensor, indices, updates, name=None) -> Tensor:
    """``tensor`` with ``updates`` added at ``indices`` (repeated indices sum)."""
    t, u, key, valid, shape = _tensor_scatter("tensor_scatter_nd_add", tensor, indices, updates)
    return t + _scatter_add(u, key, valid, shape)


def tensor_scatter_nd_sub(tensor, indices, updates, name=None) -> Tensor:
    """``tensor`` with ``updates`` subtracted at ``indices`` (repeated indices sum)."""
    t, u, key, valid, shape = _tensor_scatter("tensor_scatter_nd_sub", tensor, indices, updates)
    return t - _scatter_add(u, key, valid, shape)


def _update_fwd(xp, x, u, key, valid):
    out = x.copy()
    if valid is None:
        out[key] = u
        return out
    # a dropped entry was sent to index 0: it writes back what is there... unless a kept
    # entry writes there too, so the dropped ones go to one extra slot past the end instead
    pad = xp.zeros((1,) + tuple(x.shape[1:]), dtype=x.dtype)
    big = xp.concatenate([out, pad])
    ok = valid.reshape(valid.shape[:key[0].ndim])
    first = xp.where(ok, key[0], x.shape[0])
    big[(first,) + tuple(key[1:])] = u
    return big[:-1].copy()


def _update_vjp(ops, needs, g, ans, x, u, key, valid):
    gx = gu = None
    if needs[0]:        # the overwritten places get nothing
        gx = ops.tensor_scatter_nd_update(g, ops.zeros_like(u), key=key, valid=valid)
    if needs[1]:
        gu = ops.getitem(g, key=key, in_shape=tuple(g.shape), advanced=True, valid=valid)
    return gx, gu


_update = defop("tensor_scatter_nd_update", _update_fwd, _update_vjp, save_output=False,
                batch_rule=False)


def tensor_scatter_nd_update(tensor, indices, updates, name=None) -> Tensor:
    """``tensor`` with the places at ``indices`` replaced by ``updates`` (which of repeated
    indices wins is unspecified, as in TensorFlow). The gradient of ``tensor`` is zero at the
    replaced places; each update gets the gradient of its place."""
    t, u, key, valid, _ = _tensor_scatter("tensor_scatter_nd_update", tensor, indices, updates)
    return apply(_update, (t, u), {"key": key, "valid": valid})


# --- segments -----------------------------------------------------------------------------

def _segment_key(opname, data: Tensor, segment_ids, num_segments):
    """(key, valid, out shape): rows of ``data`` (over the axes of ``segment_ids``) to their
    segments; negative ids dropped everywhere, ids past the end raise on the CPU and are
    dropped on a device."""
    ids = _index_tensor(segment_ids, data._device, opname)
    iv = ids._value
    dshape = tuple(data._value.shape)
    if tuple(dshape[:iv.ndim]) != tuple(iv.shape):
        raise ValueError(f"{opname}: segment_ids of shape {tuple(iv.shape)} must be a prefix "
                         f"of the data's shape {dshape}")
    n = int(num_segments.numpy()) if isinstance(num_segments, Tensor) else int(num_segments)
    if n < 0:
        raise ValueError(f"{opname}: num_segments must be >= 0, got {n}")
    dev = data._device
    if dev.host_visible and iv.size and int(iv.max()) >= n:
        bad = int(np.argmax(iv.reshape(-1) >= n))
        raise InvalidArgumentError(f"{opname}: segment_ids[{bad}] = {int(iv.reshape(-1)[bad])} "
                                   f"is out of range [0, {n})")
    xp = dev.xp
    with dev.activate():
        ok = iv >= 0 if dev.host_visible else (iv >= 0) & (iv < n)
        key = (xp.where(ok, iv, 0),)
        valid = ok.reshape(tuple(ok.shape) + (1,) * (len(dshape) - iv.ndim))
    return key, valid, (n,) + dshape[iv.ndim:]


def unsorted_segment_sum(data, segment_ids, num_segments, name=None) -> Tensor:
    """``out[s] = sum of data[i] over segment_ids[i] == s`` for ``s < num_segments``
    (``segment_ids`` indexes the first axes of ``data``)."""
    x = as_tensor(data, "unsorted_segment_sum")
    key, valid, shape = _segment_key("unsorted_segment_sum", x, segment_ids, num_segments)
    return _scatter_add(x, key, valid, shape)


def _counts(opname, x, segment_ids, num_segments):
    """Elements per segment, shaped to broadcast against the segment sums (a constant)."""
    key, valid, shape = _segment_key(opname, x, segment_ids, num_segments)
    dev = x._device
    iv = key[0]
    with dev.activate():
        xp = dev.xp
        ones = valid.reshape(iv.shape).astype(x._value.dtype)
        count = xp.zeros((shape[0],), dtype=x._value.dtype)
        xp.add.at(count, key, ones)
        count = count.reshape((shape[0],) + (1,) * (len(shape) - 1))
    return count, key, valid, shape


def _scaled_segment_sum(opname, data, segment_ids, num_segments, root):
    """Each segment's sum divided by its size (``root``: the size's square root); 0 for an
    empty segment. The divisor is a constant."""
    x = as_tensor(data, opname)
    if x._value.dtype.kind not in "fc":
        raise TypeError(f"{opname}: data must be floating point, got {dtype_name(x)}")
    count, key, valid, shape = _counts(opname, x, segment_ids, num_segments)
    dev = x._device
    with dev.activate():
        size = dev.xp.maximum(count, 1)
        scale = 1 / (dev.xp.sqrt(size) if root else size)
    return _scatter_add(x, key, valid, shape) * Tensor(scale, dev)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None) -> Tensor:
    """The mean of each segment (0 for an empty one)."""
    return _scaled_segment_sum("unsorted_segment_mean", data, segment_ids, num_segments, False)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None) -> Tensor:
    """Each segment's sum divided by the square root of its size (0 for an empty one)."""
    return _scaled_segment_sum("unsorted_segment_sqrt_n", data, segment_ids, num_segments,
                               True)


def _segext_fwd(is_max):
    def fwd(xp, x, key, valid, shape):
        ids = key[0]
        if valid is not None:
            ids = xp.where(valid.reshape(ids.shape), ids, -1)     # dropped rows: id -1
        # (on a GPU, float32 and float64 take segment.cu's exact compare-and-swap)
        return K.segment_extreme(xp, x, ids, shape[0], is_max)
    return fwd


def _raw(v):
    return v._value if isinstance(v, Tensor) else v


def _segext_vjp(ops, needs, g, ans, x, key, valid, shape):
    # TF's rule: each segment's gradient is shared equally by the elements equal to its
    # extreme (ties split it); the others get none. The sharing weights are constants.
    xr, ar = _raw(x), _raw(ans)
    dev = x._device if isinstance(x, Tensor) else None
    xp = ops.xp if ops.raw else dev.xp
    sel = xr == ar[key]
    if valid is not None:
        sel &= valid
    w = sel.astype(xr.dtype)
    num = xp.zeros(shape, dtype=xr.dtype)
    xp.add.at(num, key, w)
    w = w / xp.maximum(num, 1)[key]
    gathered = ops.getitem(g, key=key, in_shape=tuple(shape), advanced=True, valid=None)
    return (gathered * (w if ops.raw else Tensor(w, dev)),)


_segment_max = defop("unsorted_segment_max", _segext_fwd(True), _segext_vjp, save_output=True,
                     batch_rule=False)
_segment_min = defop("unsorted_segment_min", _segext_fwd(False), _segext_vjp,
                     save_output=True, batch_rule=False)


def _segment_extreme(op, opname, data, segment_ids, num_segments):
    x = as_tensor(data, opname)
    key, valid, shape = _segment_key(opname, x, segment_ids, num_segments)
    return apply1(op, x, {"key": key, "valid": valid, "shape": shape})


def unsorted_segment_max(data, segment_ids, num_segments, name=None) -> Tensor:
    """The maximum of each segment (the dtype's lowest value for an empty one, as TF)."""
    return _segment_extreme(_segment_max, "unsorted_segment_max", data, segment_ids,
                            num_segments)


def unsorted_segment_min(data, segment_ids, num_segments, name=None) -> Tensor:
    """The minimum of each segment (the dtype's highest value for an empty one, as TF)."""
    return _segment_extreme(_segment_min, "unsorted_segment_min", data, segment_ids,
                            num_segments)


def _sorted_segments(opname, data, segment_ids):
    """``num_segments`` of a sorted segment op: the last id + 1, read on the host (a wait on a
    device, as TF's GPU kernel copies it back too). Ids must be 1-D, non-negative, sorted."""
    x = as_tensor(data, opname)
    ids = _index_tensor(segment_ids, x._device, opname)
    if ids._value.ndim != 1:
        raise ValueError(f"{opname}: segment_ids must be 1-D, got shape "
                         f"{tuple(ids._value.shape)}")
    if ids._value.shape[0] != (x._value.shape[0] if x._value.ndim else None):
        raise ValueError(f"{opname}: {ids._value.shape[0]} segment_ids for data of shape "
                         f"{tuple(x._value.shape)} (one id per row)")
    host = ids.numpy()
    if host.size and (host[0] < 0 or (np.diff(host) < 0).any()):
        raise InvalidArgumentError(f"{opname}: segment_ids must be sorted and non-negative, "
                                   f"got {host.tolist()[:10]}{' ...' if host.size > 10 else ''}")
    return x, ids, (int(host[-1]) + 1 if host.size else 0)


def segment_sum(data, segment_ids, name=None) -> Tensor:
    """:func:`unsorted_segment_sum` with sorted ids, ``num_segments`` = the last id + 1."""
    x, ids, n = _sorted_segments("segment_sum", data, segment_ids)
    return unsorted_segment_sum(x, ids, n)


def segment_mean(data, segment_ids, name=None) -> Tensor:
    """:func:`unsorted_segment_mean` with sorted ids."""
    x, ids, n = _sorted_segments("segment_mean", data, segment_ids)
    return unsorted_segment_mean(x, ids, n)


def _sorted_extreme(fn, opname, data, segment_ids):
    from .math import where
    from .core import zeros_like
    x, ids, n = _sorted_segments(opname, data, segment_ids)
    out = fn(x, ids, n)
    count, _, _, _ = _counts(opname, x, ids, n)
    # an empty segment (an id skipped) is 0 in the sorted ops, as TF's
    return where(Tensor(count > 0, x._device), out, zeros_like(out))


def segment_max(data, segment_ids, name=None) -> Tensor:
    """The maximum of each segment of sorted ids (0 for an id that does not occur)."""
    return _sorted_extreme(unsorted_segment_max, "segment_max", data, segment_ids)


def segment_min(data, segment_ids, name=None) -> Tensor:
    """The minimum of each segment of sorted ids (0 for an id that does not occur)."""
    return _sorted_extreme(unsorted_segment_min, "segment_min", data, segment_ids)


# --- segment products ---------------------------------------------------------------------

def _segprod_fwd(xp, x, key, valid, shape):
    ids = key[0]
    ones = x.dtype.type(1)
    if valid is not None:
        x = xp.where(valid, x, ones)          # dropped rows multiply by one
    if xp is np:                              # the host: in order, as TF's CPU kernel
        out = np.ones(shape, dtype=x.dtype)
        np.multiply.at(out, key, x)
        return out
    # a device: sort by segment, an inclusive segmented scan of products by doubling
    # (log2(N) broadcast steps), and each segment's last running product written out
    n = shape[0]
    rows = int(np.prod(ids.shape, dtype=np.int64))
    inner = tuple(shape[1:])
    if rows == 0:
        return xp.ones(shape, dtype=x.dtype)
    flat_ids = ids.reshape((rows,))
    order = xp.argsort(flat_ids)
    sid = flat_ids[order]
    vals = x.reshape((rows,) + inner)[order]
    step = 1
    while step < rows:
        same = sid[step:] == sid[:-step]
        same = same.reshape(same.shape + (1,) * len(inner))
        vals = xp.concatenate([vals[:step], xp.where(same, vals[step:] * vals[:-step],
                                                     vals[step:])])
        step *= 2
    last = xp.concatenate([sid[:-1] != sid[1:], xp.ones((1,), dtype=bool)])
    out = xp.ones((n + 1,) + inner, dtype=x.dtype)
    out[xp.where(last, sid, n)] = vals          # (the other rows land in the spare row n)
    return out[:n].copy()


def _segprod_vjp(ops, needs, g, ans, x, key, valid, shape):
    # TF's rule: a segment's product divided by each element, except for zeros: with one
    # zero in a segment only that element gets a gradient (the product of the others), with
    # two or more none does. Which elements are zero is a constant of the rule.
    xr = _raw(x)
    dev = x._device if isinstance(x, Tensor) else None
    xp = ops.xp if ops.raw else dev.xp
    real = np.finfo(xr.dtype).dtype
    zero = xr == 0
    count = zero.astype(real)
    if valid is not None:
        count = xp.where(valid, count, real.type(0))
    num = xp.zeros(shape, dtype=real)
    xp.add.at(num, key, count)
    many = num > 1
    zero_t = zero if ops.raw else Tensor(zero, dev)
    many_t = many if ops.raw else Tensor(many, dev)
    g = ops.where(many_t, 0, g)
    safe = ops.where(zero_t, 1, x)
    nonzero_prod = ops.unsorted_segment_prod(safe, key=key, valid=valid, shape=shape)
    gathered = ops.getitem(ans, key=key, in_shape=tuple(shape), advanced=True, valid=None)
    gathered_nz = ops.getitem(nonzero_prod, key=key, in_shape=tuple(shape), advanced=True,
                              valid=None)
    partial = ops.where(zero_t, gathered_nz, gathered / safe)
    return (ops.getitem(g, key=key, in_shape=tuple(shape), advanced=True, valid=valid)
            * partial,)


_segment_prod = defop("unsorted_segment_prod", _segprod_fwd, _segprod_vjp, save_output=True,
                      batch_rule=False)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None) -> Tensor:
    """``out[s] = product of data[i] over segment_ids[i] == s`` (1 for an empty segment),
    as ``tf.math.unsorted_segment_prod``; negative ids are dropped. The gradient is TF's,
    which handles zeros (the product of the others for a segment's only zero, nothing for
    a segment with two or more)."""
    x = as_tensor(data, "unsorted_segment_prod")
    if x._value.dtype.kind not in "iufc":
        raise TypeError(f"unsorted_segment_prod: data must be numeric, got {dtype_name(x)}")
    key, valid, shape = _segment_key("unsorted_segment_prod", x, segment_ids, num_segments)
    return apply1(_segment_prod, x, {"key": key, "valid": valid, "shape": shape})


def segment_prod(data, segment_ids, name=None) -> Tensor:
    """:func:`unsorted_segment_prod` with sorted ids, ``num_segments`` = the last id + 1 (1
    for an id that does not occur, as ``tf.math.segment_prod``)."""
    x, ids, n = _sorted_segments("segment_prod", data, segment_ids)
    return unsorted_segment_prod(x, ids, n)
