"""Shape and indexing ops: reshape, transpose, concat, stack, split, tile, gather, pad,
slicing, and the constant makers that take a shape (range, linspace, eye, one_hot)."""
from __future__ import annotations

from builtins import range as _brange

import numpy as np

from ..backend import current_device
from ..backend import kernels as K
from ..dtypes import np_dtype
from ..registry import apply, apply1, defop
from ..tensor import Tensor
from ._util import as_tensor, device_array, dtype_name, normalize_axis

__all__ = ["reshape", "transpose", "expand_dims", "squeeze", "concat", "stack", "unstack",
           "split", "tile", "gather", "pad", "getitem", "one_hot", "range", "linspace", "eye",
           "shape", "size", "rank", "reverse", "boolean_mask", "repeat", "gather_nd"]


def _lead(g, out_rank):
    return tuple(g.shape[:g.ndim - out_rank])


# --- reshape / transpose --------------------------------------------------------------------

def _reshape_fwd(xp, x, shape, in_shape=None):
    return x.reshape(shape)


def _reshape_vjp(ops, needs, g, ans, x, shape, in_shape):
    return (ops.reshape(g, shape=_lead(g, len(shape)) + tuple(in_shape), in_shape=tuple(g.shape)),)


_reshape = defop("reshape", _reshape_fwd, _reshape_vjp, save_inputs=False, save_output=False)


def _resolve_shape(shape, size, opname, in_shape):
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    if isinstance(shape, (int, np.integer)):
        shape = [int(shape)]
    shape = [int(s) for s in shape]
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError(f"{opname}: only one dimension can be -1, got {shape}")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise ValueError(f"{opname}: negative dimension in {shape}")
            known *= s
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"{opname}: cannot reshape a tensor of shape {tuple(in_shape)} "
                             f"({size} elements) into {shape}")
        shape[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"{opname}: cannot reshape a tensor of shape {tuple(in_shape)} "
                         f"({size} elements) into shape {tuple(shape)} ({known} elements)")
    return tuple(shape)


def reshape(tensor, shape, name=None) -> Tensor:
    """The same elements in a new shape (one dimension may be -1)."""
    x = as_tensor(tensor, "reshape")
    in_shape = tuple(x._value.shape)
    new = _resolve_shape(shape, x._value.size, "reshape", in_shape)
    if new == in_shape:
        return apply1(_reshape, x, {"shape": new, "in_shape": in_shape})
    return apply1(_reshape, x, {"shape": new, "in_shape": in_shape})


def _transpose_fwd(xp, x, perm):
    return xp.transpose(x, perm)


def _transpose_vjp(ops, needs, g, ans, x, perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    nb = g.ndim - len(perm)
    return (ops.transpose(g, perm=tuple(_brange(nb)) + tuple(nb + i for i in inv)),)


_transpose = defop("transpose", _transpose_fwd, _transpose_vjp, save_inputs=False,
                   save_output=False)


def transpose(a, perm=None, conjugate=False, name=None) -> Tensor:
    """Permute the axes (reversed by default)."""
    x = as_tensor(a, "transpose")
    n = x._value.ndim
    if perm is None:
        perm = tuple(_brange(n - 1, -1, -1))
    else:
        if isinstance(perm, Tensor):
            perm = perm.numpy().tolist()
        perm = tuple(int(p) % n if n else 0 for p in perm)
        if sorted(perm) != list(_brange(n)):
            raise ValueError(f"transpose: perm {list(perm)} is not a permutation of "
                             f"{list(_brange(n))} for a tensor of shape {tuple(x._value.shape)}")
    out = apply1(_transpose, x, {"perm": perm})
    if conjugate and x._value.dtype.kind == "c":
        from .math import conj
        out = conj(out)
    return out


def expand_dims(input, axis, name=None) -> Tensor:
    """Insert a length-1 axis at ``axis``."""
    x = as_tensor(input, "expand_dims")
    n = x._value.ndim
    axis = int(axis)
    if not -n - 1 <= axis <= n:
        raise ValueError(f"expand_dims: axis {axis} is out of range for rank {n}")
    axis = axis % (n + 1)
    shp = list(x._value.shape)
    shp.insert(axis, 1)
    return apply1(_reshape, x, {"shape": tuple(shp), "in_shape": tuple(x._value.shape)})


def squeeze(input, axis=None, name=None) -> Tensor:
    """Remove length-1 axes (all, or those in ``axis``)."""
    x = as_tensor(input, "squeeze")
    shp = tuple(x._value.shape)
    if axis is None:
        new = tuple(d for d in shp if d != 1)
    else:
        axes = normalize_axis(axis, len(shp), "squeeze")
        for a in axes:
            if shp[a] != 1:
                raise ValueError(f"squeeze: cannot squeeze axis {a} of size {shp[a]} "
                                 f"(shape {shp})")
        new = tuple(d for i, d in enumerate(shp) if i not in axes)
    return apply1(_reshape, x, {"shape": new, "in_shape": shp})


# --- concat / stack / split / unstack --------------------------------------------------------

def _concat_fwd(xp, *xs, axis, sizes):
    return xp.concatenate(xs, axis=axis)


def _concat_vjp(ops, needs, g, ans, *xs, axis, sizes):
    return tuple(ops.split(g, sizes=sizes, axis=axis))


_concat = defop("concat", _concat_fwd, _concat_vjp, save_inputs=False, save_output=False)


def _same_dtype(ts, opname):
    for t in ts[1:]:
        if t._value.dtype != ts[0]._value.dtype:
            raise TypeError(f"{opname}: tensors have different dtypes {dtype_name(ts[0])} and "
                            f"{dtype_name(t)}")


def concat(values, axis, name=None) -> Tensor:
    """Join tensors along an existing axis."""
    if isinstance(values, Tensor):
        values = list(values)
    ts = [as_tensor(v, "concat") for v in values]
    if not ts:
        raise ValueError("concat: needs at least one tensor")
    _same_dtype(ts, "concat")
    n = ts[0]._value.ndim
    if n == 0:
        raise ValueError("concat: cannot concatenate scalars; use gt.stack")
    ax = normalize_axis(axis, n, "concat")[0]
    for t in ts:
        s0, s1 = ts[0]._value.shape, t._value.shape
        if t._value.ndim != n or any(a != b for i, (a, b) in enumerate(zip(s0, s1)) if i != ax):
            raise ValueError(f"concat: shapes {tuple(s0)} and {tuple(s1)} do not match outside "
                             f"axis {ax}")
    if len(ts) == 1:
        return ts[0]
    return apply(_concat, tuple(ts), {"axis": ax - n, "sizes": tuple(t._value.shape[ax] for t in ts)})


def _split_fwd(xp, x, sizes, axis):
    idx = np.cumsum(sizes)[:-1].tolist()
    return xp.split(x, idx, axis=axis)


def _split_vjp(ops, needs, g, ans, x, sizes, axis):
    return (ops.concat(*g, axis=axis, sizes=sizes),)


_split = defop("split", _split_fwd, _split_vjp, multi=True, save_inputs=False)


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """Split along ``axis`` into equal parts (an int) or parts of the given sizes."""
    x = as_tensor(value, "split")
    n = x._value.ndim
    ax = normalize_axis(axis, n, "split")[0]
    dim = x._value.shape[ax]
    if isinstance(num_or_size_splits, Tensor):
        num_or_size_splits = num_or_size_splits.numpy().tolist()
    if isinstance(num_or_size_splits, (int, np.integer)):
        k = int(num_or_size_splits)
        if k <= 0 or dim % k:
            raise ValueError(f"split: cannot split axis {ax} of size {dim} into {k} equal parts")
        sizes = (dim // k,) * k
    else:
        sizes = [int(s) for s in num_or_size_splits]
        if sizes.count(-1) == 1:
            sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
        if sum(sizes) != dim or any(s < 0 for s in sizes):
            raise ValueError(f"split: sizes {list(num_or_size_splits)} do not add up to axis "
                             f"{ax} of size {dim}")
        sizes = tuple(sizes)
    return list(apply1(_split, x, {"sizes": sizes, "axis": ax - n}))


def _stack_fwd(xp, *xs, axis):
    return xp.stack(xs, axis=axis)


def _stack_vjp(ops, needs, g, ans, *xs, axis):
    return tuple(ops.unstack(g, axis=axis))


_stack = defop("stack", _stack_fwd, _stack_vjp, save_inputs=False, save_output=False)


def stack(values, axis=0, name=None) -> Tensor:
    """Join tensors of one shape along a new axis."""
    ts = [as_tensor(v, "stack") for v in values]
    if not ts:
        raise ValueError("stack: needs at least one tensor")
    _same_dtype(ts, "stack")
    s0 = tuple(ts[0]._value.shape)
    for t in ts:
        if tuple(t._value.shape) != s0:
            raise ValueError(f"stack: shapes {s0} and {tuple(t._value.shape)} differ")
    n = len(s0) + 1
    ax = normalize_axis(axis, n, "stack")[0]
    return apply(_stack, tuple(ts), {"axis": ax - n})


def _unstack_fwd(xp, x, axis):
    moved = xp.moveaxis(x, axis, 0)
    return [_array(moved[i]) for i in _brange(moved.shape[0])]


def _array(v):
    """An element of a string tensor (NumPy gives the bytes itself) as a 0-d array."""
    return np.array(v, dtype=object) if v.__class__ is bytes else v


def _unstack_vjp(ops, needs, g, ans, x, axis):
    return (ops.stack(*g, axis=axis),)


_unstack = defop("unstack", _unstack_fwd, _unstack_vjp, multi=True, save_inputs=False)


def unstack(value, num=None, axis=0, name=None):
    """Split into the slices along ``axis`` (that axis removed)."""
    x = as_tensor(value, "unstack")
    n = x._value.ndim
    if n == 0:
        raise ValueError("unstack: cannot unstack a scalar")
    ax = normalize_axis(axis, n, "unstack")[0]
    if num is not None and num != x._value.shape[ax]:
        raise ValueError(f"unstack: num={num} but axis {ax} has size {x._value.shape[ax]}")
    return list(apply1(_unstack, x, {"axis": ax - n}))


# --- tile / broadcast / reverse --------------------------------------------------------------

def _tile_fwd(xp, x, multiples):
    return xp.tile(x, multiples)


def _tile_vjp(ops, needs, g, ans, x, multiples, in_shape):
    nb = g.ndim - len(in_shape)
    lead = tuple(g.shape[:nb])
    split_shape = []
    for m, s in zip(multiples, in_shape):
        split_shape += [m, s]
    g2 = ops.reshape(g, shape=lead + tuple(split_shape), in_shape=tuple(g.shape))
    axes = tuple(nb + 2 * i for i in _brange(len(in_shape)))
    return (ops.reduce_sum(g2, axis=axes, keepdims=False, in_shape=tuple(g2.shape)),)


_tile = defop("tile", lambda xp, x, multiples, in_shape: _tile_fwd(xp, x, multiples), _tile_vjp,
              save_inputs=False, save_output=False)


def tile(input, multiples, name=None) -> Tensor:
    """Repeat the tensor ``multiples[i]`` times along axis ``i``."""
    x = as_tensor(input, "tile")
    if isinstance(multiples, Tensor):
        multiples = multiples.numpy().tolist()
    multiples = tuple(int(m) for m in multiples)
    if len(multiples) != x._value.ndim:
        raise ValueError(f"tile: {len(multiples)} multiples for a tensor of rank {x._value.ndim}")
    return apply1(_tile, x, {"multiples": multiples, "in_shape": tuple(x._value.shape)})


def reverse(tensor, axis, name=None) -> Tensor:
    x = as_tensor(tensor, "reverse")
    axes = normalize_axis(axis, x._value.ndim, "reverse")
    key = tuple(slice(None, None, -1) if i in axes else slice(None)
                for i in _brange(x._value.ndim))
    return getitem(x, key)


# --- indexing -----------------------------------------------------------------------------

def _is_advanced(key):
    for k in key:
        if not (k is None or k is Ellipsis or isinstance(k, (int, slice))):
            return True
    return False


def _getitem_fwd(xp, x, key, in_shape, advanced, valid=None):
    out = x[key]
    if out.__class__ is bytes:              # one element of a string tensor
        out = _array(out)
    if valid is not None:
        out = xp.where(valid, out, out.dtype.type(0))
    return out


def _getitem_vjp(ops, needs, g, ans, x, key, in_shape, advanced, valid=None):
    return (ops.getitem_grad(g, key=key, shape=tuple(in_shape), advanced=advanced,
                             valid=valid),)


def _row_ids(key, ndim):
    """The index array of a key that picks whole rows (``x[ids]``, ``x[ids, :, ...]``: what
    gather on axis 0 and embedding_lookup make), else None."""
    if not key or ndim < 1:
        return None
    ids = key[0]
    if isinstance(ids, (int, slice, np.ndarray)) or ids is None or ids is Ellipsis or \
            getattr(ids, "dtype", None) is None or ids.dtype.kind not in "iu":
        return None
    for k in key[1:]:
        if not (k is Ellipsis or (isinstance(k, slice) and k == slice(None))):
            return None
    return ids


# dtypes CuPy's add.at does not take, and the one each is summed in there
_SCATTER_WIDER = {"b": np.int32, "h": np.int32, "B": np.uint32, "H": np.uint32, "?": np.int32}


def _getitem_grad_fwd(xp, g, key, shape, advanced, valid=None):
    if advanced:
        if valid is not None:
            g = xp.where(valid, g, g.dtype.type(0))
        ids = _row_ids(key, len(shape))
        if ids is not None and K.is_cupy_array(ids) and K.is_cupy_array(g) and \
                g.dtype.char in "fd" and tuple(g.shape) == tuple(ids.shape) + tuple(shape[1:]):
            # whole rows (an embedding table's gradient): the scatter-add kernel
            if ids.dtype.kind == "i":
                # widened first: the row count may not fit the ids' dtype (int8 ids of a
                # 200-row table)
                ids = ids.astype(np.int64, copy=False)
                ids = xp.where(ids < 0, ids + shape[0], ids)
            dim = int(np.prod(shape[1:], dtype=np.int64))
            rows = g.reshape(tuple(ids.shape) + (dim,))
            return K.embedding_backward(xp, ids, rows, shape[0]).reshape(shape)
        wide = _SCATTER_WIDER.get(g.dtype.char) if xp is not np else None
        if wide is not None:
            # (CuPy's add.at takes 32- and 64-bit numbers and float16: sum narrower ones wide,
            # bool as a count that is then tested)
            z = xp.zeros(shape, dtype=wide)
            xp.add.at(z, key, g.astype(wide))
            return z != 0 if g.dtype.kind == "b" else z.astype(g.dtype)
        z = xp.zeros(shape, dtype=g.dtype)
        xp.add.at(z, key, g)
    else:
        z = xp.zeros(shape, dtype=g.dtype)
        z[key] = g
    return z


def _getitem_grad_vjp(ops, needs, g, ans, x, key, shape, advanced, valid=None):
    return (ops.getitem(g, key=key, in_shape=tuple(shape), advanced=advanced, valid=valid),)


_getitem = defop("getitem", _getitem_fwd, _getitem_vjp, save_inputs=False, save_output=False,
                 batch_rule=False)
_getitem_grad = defop("getitem_grad", _getitem_grad_fwd, _getitem_grad_vjp, save_inputs=False,
                      save_output=False, batch_rule=False)


def _convert_key(x: Tensor, key):
    if not isinstance(key, tuple):
        key = (key,)
    dev = x._device
    out = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, (bool, np.bool_)):
            out.append(k)
        elif isinstance(k, (int, np.integer)):
            out.append(int(k))
        elif isinstance(k, slice):
            out.append(slice(*(int(v) if isinstance(v, (Tensor, np.integer)) else v
                               for v in (k.start, k.stop, k.step))))
        elif isinstance(k, Tensor):
            if k._device is not dev:
                raise ValueError(f"getitem: index tensor is on {k._device}, the tensor on {dev}")
            if k._value.dtype.kind not in "iub":
                raise TypeError(f"getitem: index tensors must be integer or bool, got "
                                f"{dtype_name(k)}")
            out.append(int(k) if k._value.ndim == 0 and k._value.dtype.kind in "iu"
                       else k._value)
        elif isinstance(k, (list, np.ndarray)) or dev.is_native(k):
            arr = np.asarray(k) if isinstance(k, list) else k
            if isinstance(arr, np.ndarray):
                if arr.dtype.kind not in "iub":
                    raise TypeError(f"getitem: index arrays must be integer or bool, got "
                                    f"{arr.dtype}")
                arr = dev.asarray(arr)
            out.append(arr)
        else:
            raise TypeError(f"getitem: unsupported index {k!r} of type {type(k).__name__}")
    return tuple(out)


def _key_dims(k) -> int:
    """How many axes of the indexed tensor the key entry ``k`` consumes."""
    if k is None or k is Ellipsis or isinstance(k, (bool, np.bool_)):
        return 0
    if isinstance(k, (int, slice)):
        return 1
    return k.ndim if k.dtype == np.bool_ else 1


_LAYOUTS: dict = {}


def _index_layout(key, ndim):
    """Where the broadcast index dimensions land in ``x[key]`` for a ``key`` of integer
    arrays, ints, slices, ``None`` and ``...`` (NumPy's rule, which CuPy follows): (first
    position, how many, rank of the result). Found by indexing a stand-in without storage
    whose axes have 4 elements with index arrays whose axes have 3."""
    sig = (ndim,) + tuple(
        "n" if k is None else "e" if k is Ellipsis else ("b", bool(k))
        if isinstance(k, (bool, np.bool_)) else "i" if isinstance(k, int) else "s"
        if isinstance(k, slice) else ("a", k.ndim) for k in key)
    found = _LAYOUTS.get(sig)
    if found is None:
        probe = []
        for k in key:
            if k is None or k is Ellipsis or isinstance(k, (bool, np.bool_)):
                probe.append(k)
            elif isinstance(k, int):
                probe.append(0)
            elif isinstance(k, slice):
                probe.append(slice(None))
            else:
                probe.append(np.zeros((3,) * k.ndim, dtype=np.intp))
        shp = np.broadcast_to(np.zeros((), np.int8), (4,) * ndim)[tuple(probe)].shape
        at = [i for i, d in enumerate(shp) if d == 3]
        found = (at[0] if at else 0, len(at), len(shp))
        if len(_LAYOUTS) < 512:
            _LAYOUTS[sig] = found
    return found


def _bounded_key(x: Tensor, key, opname, negative=True, check=None):
    """``key`` for a tensor on a device the host cannot read, and the mask of valid results.

    Checking indices there would make the host wait for the device, and CuPy wraps an
    out-of-range index around the axis. Instead, each integer index array (those at the key
    positions in ``check``; all when None) is compared with its axis on the device: indices
    outside ``[-n, n)`` (``[0, n)`` when ``negative`` is False) become 0, and the returned
    mask, shaped to broadcast against ``x[key]``, is False at the results they address, so
    those read zeros and their gradients go nowhere (TensorFlow's GPU behaviour). Boolean
    masks become the integer coordinates of their true elements once here (the one wait for
    the device a mask needs), so the backward scatter takes integer arrays and does not wait
    again. The mask is None when no index array was checked.
    """
    dev = x._device
    xp = dev.xp
    shape = tuple(x._value.shape)
    ndim = len(shape)
    ell = ndim - sum(_key_dims(k) for k in key)
    out, valid, axis = [], None, 0
    with dev.activate():
        for pos, k in enumerate(key):
            if k is Ellipsis:
                out.append(k)
                axis += ell
                continue
            d = _key_dims(k)
            if isinstance(k, int) and not isinstance(k, bool) and axis < ndim:
                if not -shape[axis] <= k < shape[axis]:
                    raise IndexError(f"{opname}: index {k} is out of bounds for axis {axis} "
                                     f"with size {shape[axis]}")
                out.append(k)
            elif k is None or isinstance(k, (int, slice, np.bool_)):
                out.append(k)
            elif k.dtype == np.bool_:
                out.extend(xp.nonzero(k) if k.ndim else (k,))
            elif (check is None or pos in check) and axis < ndim:
                n = shape[axis]
                ok = k < n
                if k.dtype.kind == "i":
                    ok &= k >= (-n if negative else 0)
                out.append(xp.where(ok, k, 0))
                valid = ok if valid is None else valid & ok
            else:
                out.append(k)
            axis += d
        out = tuple(out)
        if valid is not None:
            pos, nb, rank = _index_layout(out, ndim)
            if valid.ndim > nb:   # cannot be placed (NumPy rejects such a key anyway)
                valid = None
            else:
                valid = valid.reshape((1,) * (pos + nb - valid.ndim) + tuple(valid.shape) +
                                      (1,) * (rank - pos - nb))
    return out, valid


def _index(x: Tensor, key, opname, negative=True, check=None) -> Tensor:
    attrs = {"key": key, "in_shape": tuple(x._value.shape), "advanced": _is_advanced(key)}
    if attrs["advanced"] and not x._device.host_visible:
        key, valid = _bounded_key(x, key, opname, negative, check)
        attrs["key"] = key
        if valid is not None:
            attrs["valid"] = valid
    return apply1(_getitem, x, attrs)


def getitem(tensor, key) -> Tensor:
    """``tensor[key]``: ints, slices, ``...``, ``None``, integer arrays and boolean masks.

    Integer arrays follow NumPy (``-1`` is the last element). An index outside its axis
    raises IndexError on the CPU; on a device the host cannot read (a GPU), checking would
    make the host wait, so such an index gives zeros in the result and contributes nothing
    to the gradient, as TensorFlow's GPU kernels do (it never wraps around)."""
    x = as_tensor(tensor, "getitem")
    if type(key) is list:
        key = tuple(key)        # TF reads a list as one index per axis: x[[0, 1]] is x[0, 1]
    return _index(x, _convert_key(x, key), "getitem")


def _index_tensor(indices, dev, opname) -> Tensor:
    """``indices`` (a tensor, a raw array of ``dev``, or host values) as an integer tensor on
    ``dev``."""
    idx = indices if isinstance(indices, Tensor) else Tensor(device_array(indices, dev), dev)
    if idx._value.dtype.kind not in "iu":
        raise TypeError(f"{opname}: indices must be integers, got {dtype_name(idx)}")
    if idx._device is not dev:
        raise ValueError(f"{opname}: indices are on {idx._device}, params on {dev}")
    return idx


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None) -> Tensor:
    """Slices of ``params`` along ``axis`` at ``indices`` (repeated indices sum in backward).

    Indices must lie in ``[0, params.shape[axis])``. On the CPU one outside raises
    IndexError (as TensorFlow's CPU kernel); on a device the host cannot read (a GPU) it
    gives zeros and no gradient, as TensorFlow's GPU kernel does, since checking would make
    the host wait (negative indices are out of range there too; they never wrap around)."""
    p = as_tensor(params, "gather")
    idx = _index_tensor(indices, p._device, "gather")
    n = p._value.ndim
    ax = batch_dims if axis is None else int(axis)
    ax = ax % n
    bd = int(batch_dims) % (idx._value.ndim + 1) if batch_dims else 0
    if bd > ax:
        raise ValueError(f"gather: batch_dims ({bd}) must be <= axis ({ax})")
    dim = p._value.shape[ax]
    if p._device.host_visible and idx._value.size:
        lo, hi = int(idx._value.min()), int(idx._value.max())
        if lo < 0 or hi >= dim:
            bad = lo if lo < 0 else hi
            raise IndexError(f"gather: index {bad} is out of range [0, {dim}) for axis {ax} of "
                             f"params with shape {tuple(p._value.shape)}")
    xp = p._device.xp
    iv = idx._value
    if bd == 0:
        key = (slice(None),) * ax + (iv,)
    else:
        bshape = tuple(iv.shape[:bd])
        if tuple(p._value.shape[:bd]) != bshape:
            raise ValueError(f"gather: batch dims of params {tuple(p._value.shape[:bd])} and "
                             f"indices {bshape} differ")
        ar = []
        with p._device.activate():
            for i in _brange(bd):
                shp = [1] * iv.ndim
                shp[i] = bshape[i]
                ar.append(xp.arange(bshape[i]).reshape(shp))
        if ax != bd:
            p = transpose(p, list(_brange(bd)) + [ax] + [i for i in _brange(n)
                                                              if i >= bd and i != ax])
            out = _index(p, tuple(ar) + (iv,), "gather", negative=False, check=(bd,))
            # move the gathered-index axes back after the batch and pre-axis dims
            k = iv.ndim - bd
            r = out._value.ndim
            pre = ax - bd
            perm = list(_brange(bd)) + [bd + k + j for j in _brange(pre)] + \
                [bd + j for j in _brange(k)] + list(_brange(bd + k + pre, r))
            return transpose(out, perm)
        key = tuple(ar) + (iv,)
    return _index(p, key, "gather", negative=False, check=(len(key) - 1,))


def gather_nd(params, indices, batch_dims=0, name=None) -> Tensor:
    """Gather slices addressed by the last axis of ``indices``.

    Out-of-range (and negative) indices follow :func:`gather`: IndexError on the CPU, zeros
    and no gradient on a device the host cannot read."""
    p = as_tensor(params, "gather_nd")
    idx = _index_tensor(indices, p._device, "gather_nd")
    if batch_dims:
        raise ValueError("gather_nd: batch_dims > 0 is not supported; use gather with batch_dims")
    iv = idx._value
    pshape = tuple(p._value.shape)
    if iv.ndim == 0 or iv.shape[-1] > len(pshape):
        raise ValueError(f"gather_nd: indices of shape {tuple(iv.shape)} need a last axis of at "
                         f"most {len(pshape)} coordinates for params of shape {pshape}")
    m = iv.shape[-1]
    if p._device.host_visible and iv.size:
        flat = iv.reshape(-1, m)
        lo, hi = flat.min(axis=0), flat.max(axis=0)
        for j in _brange(m):
            if lo[j] < 0 or hi[j] >= pshape[j]:
                bad = int(lo[j]) if lo[j] < 0 else int(hi[j])
                raise IndexError(f"gather_nd: index {bad} is out of range [0, {pshape[j]}) for "
                                 f"axis {j} of params with shape {pshape}")
    key = tuple(iv[..., i] for i in _brange(m))
    return _index(p, key, "gather_nd", negative=False)


def boolean_mask(tensor, mask, axis=None, name=None) -> Tensor:
    """The elements (or slices along ``axis``) of ``tensor`` where ``mask`` is true. The
    result's shape depends on the mask's values: on a device the host cannot read, the host
    waits for the device once, in the forward (the gradient does not wait again)."""
    x = as_tensor(tensor, "boolean_mask")
    mk = as_tensor(mask, "boolean_mask")
    ax = 0 if axis is None else int(axis) % x._value.ndim
    return getitem(x, (slice(None),) * ax + (mk,))


def repeat(input, repeats, axis=None, name=None) -> Tensor:
    """Each element (slice along ``axis``) repeated ``repeats`` times. The result's shape
    depends on ``repeats``: a tensor or device array of repeats is copied to the host."""
    x = as_tensor(input, "repeat")
    if axis is None:
        x = reshape(x, [-1])
        axis = 0
    ax = int(axis) % x._value.ndim
    if isinstance(repeats, Tensor):
        repeats = repeats.numpy()
    elif x._device.is_native(repeats) and not isinstance(repeats, np.ndarray):
        repeats = x._device.to_host(repeats)
    idx = np.repeat(np.arange(x._value.shape[ax]), repeats)
    return _index(x, (slice(None),) * ax + (x._device.asarray(idx),), "repeat", check=())


# --- pad -------------------------------------------------------------------------------------

def _pad_fwd(xp, x, paddings, value):
    if x.dtype.kind == "O":        # strings (host only): keep the elements plain bytes
        out = np.full([d + a + b for d, (a, b) in zip(x.shape, paddings)], value, dtype=object)
        out[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, paddings))] = x
        return out
    return xp.pad(x, paddings, mode="constant", constant_values=value)


def _pad_vjp(ops, needs, g, ans, x, paddings, value, in_shape):
    nb = g.ndim - len(in_shape)
    key = (slice(None),) * nb + tuple(slice(lo, lo + d) for (lo, _), d in zip(paddings, in_shape))
    return (ops.getitem(g, key=key, in_shape=tuple(g.shape), advanced=False),)


_pad = defop("pad", lambda xp, x, paddings, value, in_shape: _pad_fwd(xp, x, paddings, value),
             _pad_vjp, save_inputs=False, save_output=False)


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None) -> Tensor:
    """Pad each axis by ``paddings[i] = [before, after]`` (CONSTANT, REFLECT or SYMMETRIC)."""
    x = as_tensor(tensor, "pad")
    if isinstance(paddings, Tensor):
        paddings = paddings.numpy().tolist()
    pads = tuple((int(a), int(b)) for a, b in paddings)
    if len(pads) != x._value.ndim:
        raise ValueError(f"pad: {len(pads)} paddings for a tensor of rank {x._value.ndim}")
    if any(a < 0 or b < 0 for a, b in pads):
        raise ValueError(f"pad: paddings must be non-negative, got {[list(p) for p in pads]}")
    mode = mode.upper()
    if x._value.dtype.kind == "O":           # strings pad with b"" (or the given text)
        constant_values = constant_values.encode() if isinstance(constant_values, str) else (
            constant_values if isinstance(constant_values, bytes) else b"")
    if mode == "CONSTANT":
        return apply1(_pad, x, {"paddings": pads, "value": constant_values,
                                "in_shape": tuple(x._value.shape)})
    if mode not in ("REFLECT", "SYMMETRIC"):
        raise ValueError(f"pad: mode must be CONSTANT, REFLECT or SYMMETRIC, got {mode!r}")
    out = x
    for ax, (lo, hi) in enumerate(pads):
        if lo == 0 and hi == 0:
            continue
        n = x._value.shape[ax]
        limit = n - 1 if mode == "REFLECT" else n
        if lo > limit or hi > limit:
            raise ValueError(f"pad: {mode} padding ({lo}, {hi}) too large for axis {ax} of size {n}")
        dev = x._device
        xp = dev.xp
        with dev.activate():      # the source positions, computed on the device
            src = xp.arange(-lo, n + hi, dtype=np.int64)
            if mode == "REFLECT":
                src = xp.where(src < 0, -src, src)
                src = xp.where(src >= n, 2 * (n - 1) - src, src)
            else:
                src = xp.where(src < 0, -src - 1, src)
                src = xp.where(src >= n, 2 * n - 1 - src, src)
        out = _index(out, (slice(None),) * ax + (src,), "pad", check=())
    return out


# --- shape queries and constants ----------------------------------------------------------------

def shape(input, out_type=np.int32, name=None) -> Tensor:
    x = as_tensor(input, "shape")
    return Tensor(x._device.asarray(np.array(x._value.shape, dtype=np_dtype(out_type))), x._device)


def size(input, out_type=np.int32, name=None) -> Tensor:
    x = as_tensor(input, "size")
    return Tensor(x._device.asarray(np.array(x._value.size, dtype=np_dtype(out_type))), x._device)


def rank(input, name=None) -> Tensor:
    x = as_tensor(input, "rank")
    return Tensor(x._device.asarray(np.array(x._value.ndim, dtype=np.int32)), x._device)


def _one_hot_fwd(xp, indices, depth, on, off, axis, dtype):
    idx = indices.astype(xp.int64)
    eye = (xp.arange(depth) == idx[..., None])
    # (0-d fills, not asarray: on a GPU that would copy the values from the host)
    out = xp.where(eye, xp.full((), on, dtype=dtype), xp.full((), off, dtype=dtype))
    if axis != -1 and axis != out.ndim - 1:
        out = xp.moveaxis(out, -1, axis)
    return out


_one_hot = defop("one_hot", _one_hot_fwd, nondiff=True)


def _dtype_of(value):
    """The dtype a tensor of ``value`` has or would have (TF's defaults), worked out on the
    host (no upload)."""
    if isinstance(value, Tensor):
        return value._value.dtype
    from ..tensor import _infer_host
    return _infer_host(value, None).dtype


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors; indices outside ``[0, depth)`` give all-off rows, as in TF."""
    idx = as_tensor(indices, "one_hot")
    if idx._value.dtype.kind not in "iu":
        raise TypeError(f"one_hot: indices must be integers, got {dtype_name(idx)}")
    if dtype is not None:
        dt = np_dtype(dtype)
    else:       # as TF: the dtype of on_value, else of off_value, else float32
        given = on_value if on_value is not None else off_value
        dt = np.dtype(np.float32) if given is None else _dtype_of(given)
    on = 1 if on_value is None else (on_value.numpy() if isinstance(on_value, Tensor) else on_value)
    off = 0 if off_value is None else (off_value.numpy() if isinstance(off_value, Tensor)
                                       else off_value)
    ax = -1 if axis is None else int(axis)
    return apply1(_one_hot, idx, {"depth": int(depth), "on": on, "off": off, "axis": ax,
                                  "dtype": dt})


def range(start, limit=None, delta=1, dtype=None, name="range") -> Tensor:  # noqa: A001
    """``[start, limit)`` in steps of ``delta`` (dtype inferred from the arguments, as TF)."""
    if limit is None:
        start, limit = 0, start
    args = (start, limit, delta)
    vals = [v.numpy().item() if isinstance(v, Tensor) else
            v.item() if isinstance(v, (np.generic, np.ndarray)) else v for v in args]
    if vals[2] == 0:
        raise ValueError("range: delta must not be 0")
    if dtype is None:
        # as TF: each argument's own dtype (a Python int is int32, a float float32), the
        # widest of them in the order int32 < int64 < float16 < float32 < float64
        order = ("int32", "int64", "float16", "float32", "float64")
        kinds = []
        for a in args:
            d = getattr(a, "dtype", None)
            if d is not None:
                name = np.dtype(d).name
                if name not in order:
                    raise TypeError(f"range: arguments must be int32, int64, float16, float32 "
                                    f"or float64 (or dtype= given), got {name}")
                kinds.append(name)
            else:
                kinds.append("float32" if isinstance(a, float) else "int32")
        dt = np.dtype(max(kinds, key=order.index))
    else:
        dt = np_dtype(dtype)
    dev = current_device()
    if dev.host_visible:
        return Tensor(np.arange(*vals).astype(dt), dev)
    with dev.activate():          # made on the device (no upload), in NumPy's arithmetic
        return Tensor(dev.xp.arange(*vals, dtype=np.result_type(*vals)).astype(dt), dev)


def linspace(start, stop, num, name=None, axis=0) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive."""
    s = start.numpy() if isinstance(start, Tensor) else start
    e = stop.numpy() if isinstance(stop, Tensor) else stop
    # as TF: start's dtype; integer starts (a Python int too) give float64
    sdt = _dtype_of(start)
    dt = sdt if sdt.kind == "f" else np.dtype(np.float64)
    dev = current_device()
    if np.ndim(s) == 0 and np.ndim(e) == 0 and axis not in (0, -1):
        raise ValueError(f"linspace: axis {axis} is out of range for scalar start and stop "
                         "(the result has one axis)")
    if not dev.host_visible and np.ndim(s) == 0 and np.ndim(e) == 0:
        with dev.activate():      # scalar ends: made on the device, no upload
            return Tensor(dev.xp.linspace(float(s), float(e), int(num), dtype=np.float64)
                          .astype(dt), dev)
    return Tensor(dev.asarray(np.linspace(s, e, int(num), axis=axis).astype(dt)), dev)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=None, name=None) -> Tensor:
    dt = np_dtype(dtype) if dtype is not None else np.dtype(np.float32)
    dev = current_device()
    xp = dev.xp
    with dev.activate():          # made on the device: no upload
        m = xp.eye(int(num_rows), int(num_columns) if num_columns is not None else None,
                   dtype=dt)
        if batch_shape is not None:
            m = xp.broadcast_to(m, tuple(int(b) for b in batch_shape) + m.shape).copy()
    return Tensor(m, dev)
