"""Sparse tensors (``gt.SparseTensor``, ``gt.sparse``) as TensorFlow's ``tf.sparse``.

A SparseTensor is ``indices`` (int64, ``[N, rank]``: the coordinates of its stored
entries), ``values`` (``[N]``, any dtype) and a dense shape; every other element is zero.
The three live on one device (string values, and so their indices, on the CPU). By
convention the indices are in row-major order (``gt.sparse.reorder`` makes them so); ops
that need the order check it as TensorFlow does.

    import gradtape as gt
    sp = gt.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0],
                                dense_shape=[3, 4])
    gt.sparse.to_dense(sp)                        # [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]]
    gt.sparse.sparse_dense_matmul(sp, w)          # differentiable in sp.values and w

The ops are compositions of gradtape's differentiable primitives on the values (gathers,
scatters, segment reductions), so gradients reach ``values`` (a dense gradient of their
shape) and any dense operand, to any order, where TensorFlow registers a gradient.
``concat`` passes none, as TensorFlow's. The index bookkeeping runs on the device's array
namespace and is not differentiable.

Indices outside the dense shape, out of order or repeated raise InvalidArgumentError where
TensorFlow's kernels check them, on devices the host can read; on a device it cannot (a
GPU) checking would make the host wait, so those are not checked there (scatters drop
out-of-range entries). Ops whose result size depends on the values (``from_dense``,
``add`` of two sparse tensors, ``retain``, ``slice``, ``fill_empty_rows`` ...) wait for
the device once, as TensorFlow's kernels copy those sizes back too.
"""
from __future__ import annotations

import collections
import numbers

import numpy as np

from .backend import device_scope
from .dtypes import as_dtype
from .indexed_slices import IndexedSlices
from .registry import InvalidArgumentError
from .tensor import Tensor, TensorShape, Variable, as_shape, convert_to_tensor
from .ops import core as _core
from .ops import math as _math
from .ops import scatter as _scatter
from .ops import shape as _shape

__all__ = ["SparseTensor", "SparseTensorSpec", "SparseTensorValue", "from_dense", "to_dense",
           "reorder", "reshape", "transpose", "slice", "concat", "add", "reduce_sum",
           "reduce_max", "sparse_dense_matmul", "retain", "fill_empty_rows", "to_indicator",
           "maximum", "minimum", "expand_dims", "eye", "segment_sum", "segment_mean",
           "segment_sqrt_n", "mask", "split", "bincount", "softmax", "reset_shape",
           "map_values", "embedding_lookup_sparse", "safe_embedding_lookup_sparse"]

_INT64 = np.dtype(np.int64)

# TF's SparseTensorValue (the host form of a SparseTensor): accepted wherever one is
SparseTensorValue = collections.namedtuple("SparseTensorValue",
                                           ["indices", "values", "dense_shape"])


# --- the SparseTensor type ------------------------------------------------------------------

def _values_tensor(values) -> Tensor:
    if isinstance(values, Variable):
        return values.read_value()
    if isinstance(values, Tensor):
        return values
    return convert_to_tensor(values)


def _int64_on(value, dev, what) -> Tensor:
    """``value`` as an int64 tensor on ``dev`` (TF converts Python and NumPy values to int64;
    a tensor must already be int64)."""
    if isinstance(value, Tensor):
        if value._value.dtype != _INT64:
            raise TypeError(f"SparseTensor: {what} must be int64, got a tensor of dtype "
                            f"{value.dtype.name}; use gt.cast")
        return value if value._device is dev else value.to(dev)
    if dev.is_native(value) and not isinstance(value, np.ndarray):
        return Tensor(value.astype(_INT64), dev)
    with device_scope(dev):
        return convert_to_tensor(value, dtype="int64")


def _shape_tuple(dense_shape, what="dense_shape") -> tuple:
    """A dense shape (list, tuple, TensorShape, NumPy array or int64 tensor) as host ints."""
    if isinstance(dense_shape, Tensor):
        if dense_shape._value.dtype != _INT64:
            raise TypeError(f"SparseTensor: {what} must be int64, got a tensor of dtype "
                            f"{dense_shape.dtype.name}; use gt.cast")
        host = dense_shape.numpy()
    elif isinstance(dense_shape, TensorShape):
        if dense_shape.rank is None or not dense_shape.is_fully_defined():
            raise ValueError(f"SparseTensor: {what} {dense_shape} is not fully defined")
        host = np.asarray(dense_shape.as_list(), dtype=np.int64)
    else:
        host = np.asarray(dense_shape)
        if host.size == 0:
            host = host.astype(np.int64)
        if host.dtype.kind not in "iu":
            raise TypeError(f"SparseTensor: {what} must hold integers, got {dense_shape!r}")
    if host.ndim != 1:
        raise ValueError(f"SparseTensor: {what} must have rank 1, got shape {host.shape}")
    dims = tuple(int(d) for d in host.tolist())
    if any(d < 0 for d in dims):
        raise ValueError(f"SparseTensor: {what} {list(dims)} has an unknown or negative "
                         f"dimension")
    return dims


class SparseTensor:
    """A sparse tensor: ``values[i]`` at coordinates ``indices[i]`` of a tensor of shape
    ``dense_shape``, zero elsewhere (TensorFlow's ``tf.sparse.SparseTensor``)."""

    __slots__ = ("_indices", "_values", "_shape", "_dense_shape", "__weakref__")

    def __init__(self, indices, values, dense_shape):
        vals = _values_tensor(values)
        dev = vals._device
        idx = _int64_on(indices, dev, "indices")
        shape = _shape_tuple(dense_shape)
        if idx._value.ndim != 2:
            raise ValueError(f"SparseTensor: indices must have rank 2 ([N, rank]), got shape "
                             f"{tuple(idx._value.shape)}")
        if vals._value.ndim != 1:
            raise ValueError(f"SparseTensor: values must have rank 1, got shape "
                             f"{tuple(vals._value.shape)}")
        if idx._value.shape[0] != vals._value.shape[0]:
            raise ValueError(f"SparseTensor: {idx._value.shape[0]} indices and "
                             f"{vals._value.shape[0]} values (one value per index)")
        if idx._value.shape[1] != len(shape):
            raise ValueError(f"SparseTensor: indices of shape {tuple(idx._value.shape)} have "
                             f"{idx._value.shape[1]} coordinates for a dense shape of rank "
                             f"{len(shape)} ({list(shape)})")
        self._indices = idx
        self._values = vals
        self._shape = TensorShape(shape)
        self._dense_shape = None
        if isinstance(dense_shape, Tensor) and dense_shape._value.dtype == _INT64 \
                and dense_shape._device is dev:
            self._dense_shape = dense_shape

    @classmethod
    def _make(cls, indices: Tensor, values: Tensor, shape) -> "SparseTensor":
        """A SparseTensor from parts already checked (int64 indices on the values' device)."""
        sp = cls.__new__(cls)
        sp._indices = indices
        sp._values = values
        sp._shape = TensorShape(tuple(int(d) for d in shape))
        sp._dense_shape = None
        return sp

    @classmethod
    def from_value(cls, sparse_tensor_value) -> "SparseTensor":
        """A SparseTensor from a SparseTensor or SparseTensorValue."""
        if not isinstance(sparse_tensor_value, (SparseTensor, SparseTensorValue)):
            raise TypeError(f"Argument sparse_tensor_value={sparse_tensor_value!r} is neither "
                            f"a SparseTensor nor SparseTensorValue.")
        return cls(sparse_tensor_value.indices, sparse_tensor_value.values,
                   sparse_tensor_value.dense_shape)

    # --- description --------------------------------------------------------------------
    indices = property(lambda self: self._indices,
                       doc="The int64 coordinates ``[N, rank]`` of the stored values.")
    values = property(lambda self: self._values, doc="The stored values ``[N]``.")
    dtype = property(lambda self: self._values.dtype)
    device = property(lambda self: self._values.device)
    shape = property(lambda self: self._shape, doc="The dense shape as a TensorShape.")

    @property
    def dense_shape(self) -> Tensor:
        """The dense shape as a 1-D int64 tensor."""
        if self._dense_shape is None:
            dev = self._values._device
            with device_scope(dev):
                self._dense_shape = convert_to_tensor(np.asarray(tuple(self._shape),
                                                                 dtype=np.int64))
        return self._dense_shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape) -> None:
        """Assert that the dense shape is compatible with ``shape`` (eager: no update)."""
        want = as_shape(shape)
        if not self._shape.is_compatible_with(want):
            raise ValueError(f"Shapes {self._shape} and {want} are not compatible")

    def with_values(self, new_values) -> "SparseTensor":
        """The same indices and dense shape with ``new_values`` (any dtype, same length)."""
        return SparseTensor(self._indices, new_values, self.dense_shape)

    def __repr__(self):
        return (f"SparseTensor(indices={self._indices!s}, values={self._values!s}, "
                f"dense_shape={self.dense_shape!s})")

    # --- elementwise with a dense tensor ---------------------------------------------------
    def __mul__(self, other):
        return _sparse_dense_cwise(self, other, "mul")

    def __truediv__(self, other):
        return _sparse_dense_cwise(self, other, "truediv")

    __div__ = __truediv__


def _is_sparse(x) -> bool:
    return isinstance(x, (SparseTensor, SparseTensorValue))


def _convert(sp_input, opname) -> SparseTensor:
    if isinstance(sp_input, SparseTensor):
        return sp_input
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    raise TypeError(f"{opname}: Input must be a SparseTensor, got {type(sp_input).__name__}")


# --- index bookkeeping (raw arrays of the values' device) -----------------------------------

def _dev(sp: SparseTensor):
    return sp._values._device


def _linear(xp, iv, shape):
    """Row-major positions of the index rows ``iv`` in ``shape`` (int64)."""
    key = xp.zeros((iv.shape[0],), dtype=_INT64)
    for j, d in enumerate(shape):
        key = key * int(d) + iv[:, j]
    return key


def _columns(xp, iv, cols):
    """The index columns ``cols`` (host ints) of ``iv``, in that order."""
    if not len(cols):
        return iv[:, :0]
    return xp.stack([iv[:, j] for j in cols], axis=1)


def _segment_sum(x: Tensor, ids: Tensor, n: int) -> Tensor:
    """``unsorted_segment_sum``, complex values summed as their real and imaginary parts
    (a device's scatter-add takes real numbers only)."""
    if x._value.dtype.kind == "c":
        return _math.complex(_scatter.unsorted_segment_sum(_math.real(x), ids, n),
                             _scatter.unsorted_segment_sum(_math.imag(x), ids, n))
    return _scatter.unsorted_segment_sum(x, ids, n)


def _unravel(xp, key, shape):
    """Index rows ``[n, len(shape)]`` of the row-major positions ``key`` in ``shape``."""
    cols = []
    rest = key
    for d in reversed(shape):
        d = max(int(d), 1)
        cols.append(rest % d)
        rest = rest // d
    if not cols:
        return xp.zeros((key.shape[0], 0), dtype=_INT64)
    return xp.stack(cols[::-1], axis=1).astype(_INT64)


def _row_text(row) -> str:
    return "[" + ",".join(str(int(v)) for v in row) + "]"


def _shape_text(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _first_out_of_bounds(iv, shape):
    """The first entry with a coordinate outside ``shape`` (host-readable indices), or -1."""
    if iv.shape[0] == 0 or not len(shape):
        return -1
    bad = None
    for j, d in enumerate(shape):
        c = iv[:, j]
        b = (c < 0) | (c >= int(d))
        bad = b if bad is None else bad | b
    return int(bad.argmax()) if bool(bad.any()) else -1


def _check_bounds(opname, sp: SparseTensor, shape=None):
    """InvalidArgumentError for an index outside the dense shape (host-readable devices)."""
    dev = _dev(sp)
    if not dev.host_visible:
        return
    shape = tuple(sp._shape) if shape is None else shape
    iv = sp._indices._value
    i = _first_out_of_bounds(iv, shape)
    if i >= 0:
        raise InvalidArgumentError(f"{opname}: indices[{i}] = {_row_text(iv[i])} is out of "
                                   f"bounds: need 0 <= index < {_shape_text(shape)}")


def _check_order(opname, sp: SparseTensor):
    """TF's validation of sorted, unrepeated, in-bounds indices (host-readable devices)."""
    dev = _dev(sp)
    if not dev.host_visible:
        return
    iv = sp._indices._value
    n = iv.shape[0]
    shape = tuple(sp._shape)
    first = _first_out_of_bounds(iv, shape)
    stop = n if first < 0 else first
    if stop > 1:
        key = _linear(dev.xp, iv[:stop], shape)
        step = key[1:] - key[:-1]
        bad = step <= 0
        if bool(bad.any()):
            i = int(bad.argmax()) + 1
            what = "is repeated" if int(step[i - 1]) == 0 else (
                "is out of order. Many sparse ops require sorted indices. Use "
                "`gt.sparse.reorder` to create a correctly ordered copy.")
            raise InvalidArgumentError(f"{opname}: indices[{i}] = {_row_text(iv[i])} {what}")
    if first >= 0:
        raise InvalidArgumentError(f"{opname}: indices[{first}] = {_row_text(iv[first])} is "
                                   f"out of bounds: need 0 <= index < {_shape_text(shape)}")


def _raw(fn, dev):
    """``fn(xp)`` run on device ``dev`` (its arrays, its namespace)."""
    with dev.activate():
        return fn(dev.xp)


def _positions(dev, flags):
    """The positions of the true ``flags`` (an int64 array; the host waits on a device)."""
    return _raw(lambda xp: xp.nonzero(flags)[0].astype(_INT64), dev)


def _lex_order(xp, ind):
    """The stable row-major (lexicographic) order of the index rows ``ind``: any values,
    out-of-range ones included, as TF's comparisons."""
    n, r = ind.shape
    if n == 0 or r == 0:
        return xp.arange(n, dtype=_INT64)
    if r == 1:
        return xp.argsort(ind[:, 0], kind="stable").astype(_INT64)
    return xp.lexsort(xp.stack([ind[:, j] for j in range(r - 1, -1, -1)])).astype(_INT64)


def _row_groups(xp, ind, firsts=True):
    """``(ids, first)``: ``ids[i]`` numbers the distinct rows of ``ind`` in row-major order
    (in ``[0, len(ind))``, computed without the host waiting); ``first`` (when asked, the
    host waits for its length) holds the position of each distinct row's first
    occurrence, in that order."""
    n, r = ind.shape
    if n == 0:
        empty = xp.zeros((0,), dtype=_INT64)
        return empty, empty
    order = _lex_order(xp, ind)
    s = ind[order]
    head = xp.ones((1,), dtype=bool)
    new = xp.concatenate([head, (s[1:] != s[:-1]).any(axis=1) if r else
                          xp.zeros((n - 1,), dtype=bool)])
    seg = xp.cumsum(new.astype(_INT64)) - 1
    ids = xp.empty_like(seg)
    ids[order] = seg
    first = order[xp.nonzero(new)[0]] if firsts else None
    return ids, first


def _same_device(opname, *tensors):
    dev = None
    for t in tensors:
        if dev is None:
            dev = t._device
        elif t._device is not dev:
            raise ValueError(f"{opname}: operands are on different devices ({dev} and "
                             f"{t._device}); move one with .to(device)")
    return dev


def _dense_operand(value, dev, dtype=None) -> Tensor:
    if isinstance(value, Tensor):
        if dtype is not None and value._value.dtype != np.dtype(dtype):
            raise TypeError(f"expected a tensor of dtype {as_dtype(dtype).name}, got "
                            f"{value.dtype.name}; gradtape does not promote, use gt.cast")
        return value
    with device_scope(dev):
        return convert_to_tensor(value, dtype=dtype)


def _host_ints(value, what) -> list:
    """A list of Python ints from an int, list, NumPy array or tensor (read on the host)."""
    if isinstance(value, Tensor):
        if value._value.dtype.kind not in "iu":
            raise TypeError(f"{what} must be integers, got a tensor of dtype "
                            f"{value.dtype.name}")
        host = value.numpy()
    else:
        host = np.asarray(value)
        if host.size == 0:
            host = host.astype(np.int64)
        if host.dtype.kind not in "iu":
            raise TypeError(f"{what} must be integers, got {value!r}")
    return [int(v) for v in np.reshape(host, (-1,)).tolist()]


def _scalar_int(value, what) -> int:
    if isinstance(value, Tensor):
        if value._value.dtype.kind not in "iu" or value._value.ndim != 0:
            raise TypeError(f"{what} must be an integer value, got a {value.dtype.name} "
                            f"tensor of shape {tuple(value.shape)}")
        return int(value.numpy())
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer value, got {value!r}")
    return int(value)


# --- conversions ---------------------------------------------------------------------------

def from_dense(tensor, name=None) -> SparseTensor:
    """The elements of ``tensor`` not equal to zero (``""`` for strings), in row-major order;
    the values are ``gather_nd(tensor, indices)`` (differentiable in ``tensor``)."""
    x = tensor if isinstance(tensor, Tensor) else convert_to_tensor(tensor)
    if x._value.ndim == 0:
        raise InvalidArgumentError("from_dense: the input must have rank >= 1 (a scalar has "
                                   "no sparse form)")
    dev = x._device
    kind = x._value.dtype.kind

    def nonzero(xp):
        v = x._value
        flags = v if kind == "b" else (v != b"" if kind == "O" else v != 0)
        return xp.stack(xp.nonzero(flags), axis=1).astype(_INT64)
    ind = Tensor(_raw(nonzero, dev), dev)
    return SparseTensor._make(ind, _shape.gather_nd(x, ind), x._value.shape)


def _default_scalar(opname, default_value, sp: SparseTensor) -> Tensor:
    dev = _dev(sp)
    dt = sp._values._value.dtype
    if default_value is None:
        if dt.kind == "O":
            return convert_to_tensor(b"")
        return Tensor(_raw(lambda xp: xp.zeros((), dtype=dt), dev), dev)
    dv = _dense_operand(default_value, dev, dt)
    if dv._value.ndim != 0:
        raise InvalidArgumentError(f"{opname}: default_value must be a scalar, got shape "
                                   f"{tuple(dv._value.shape)}")
    return dv


def to_dense(sp_input, default_value=None, validate_indices=True, name=None) -> Tensor:
    """The dense tensor: ``values`` at ``indices``, ``default_value`` (zero) elsewhere.

    With ``validate_indices`` the indices must be in bounds, sorted and unrepeated
    (InvalidArgumentError otherwise); without, only in bounds (of repeated ones, the last
    wins). Gradients reach ``values`` and a tensor ``default_value``."""
    sp = _convert(sp_input, "to_dense")
    dv = _default_scalar("to_dense", default_value, sp)
    if validate_indices:
        _check_order("to_dense", sp)
    elif _dev(sp).host_visible and _first_out_of_bounds(sp._indices._value,
                                                         tuple(sp._shape)) >= 0:
        raise InvalidArgumentError(f"to_dense: indices are not valid (out of bounds); "
                                   f"shape {_shape_text(sp._shape)}")
    shape = tuple(sp._shape)
    if not shape:      # a scalar: the last value given, else the default
        n = sp._values._value.shape[0]
        return _shape.reshape(sp._values[n - 1:n], []) if n else dv
    base = _core.broadcast_to(dv, shape)
    if sp._values._value.shape[0] == 0:
        return base
    return _scatter.tensor_scatter_nd_update(base, sp._indices, sp._values)


# --- reordering and reshaping ----------------------------------------------------------------

def _permuted(sp: SparseTensor, order, shape=None, ind=None) -> SparseTensor:
    """``sp``'s entries in ``order`` (a raw int64 array), values gathered (differentiable)."""
    dev = _dev(sp)
    iv = sp._indices._value if ind is None else ind
    new_ind = Tensor(_raw(lambda xp: iv[order], dev), dev)
    vals = _shape.gather(sp._values, Tensor(order, dev))
    return SparseTensor._make(new_ind, vals, sp._shape if shape is None else shape)


def reorder(sp_input, name=None) -> SparseTensor:
    """The same tensor with its entries in row-major order (stable for repeated indices);
    the gradient of the values is permuted back."""
    sp = _convert(sp_input, "reorder")
    dev = _dev(sp)
    order = _raw(lambda xp: _lex_order(xp, sp._indices._value), dev)
    return _permuted(sp, order)


def _reshape_target(opname, in_shape, shape):
    dims = _host_ints(shape, f"{opname}: shape")
    size = 1
    for d in in_shape:
        size *= d
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise InvalidArgumentError(f"{opname}: only one output dimension may be -1, not both "
                                   f"{unknown[0]} and {unknown[1]}")
    for d in dims:
        if d < -1:
            raise InvalidArgumentError(f"{opname}: size {d} must be non-negative, not {d}")
    known = 1
    for d in dims:
        if d != -1:
            known *= d
    if unknown:
        if known == 0 or size % known:
            if known == 0 and size == 0:
                dims[unknown[0]] = 0
                return dims
            raise InvalidArgumentError(
                f"{opname}: Input to reshape is a SparseTensor with {size} dense values, but "
                f"the requested shape requires a multiple of {known}. input_shape="
                f"{_shape_text(in_shape)} output_shape={_shape_text(dims)}")
        dims[unknown[0]] = size // known
    elif known != size:
        raise InvalidArgumentError(
            f"{opname}: Input to reshape is a tensor with {size} dense values, but the "
            f"requested shape has {known}. input_shape={_shape_text(in_shape)} "
            f"output_shape={_shape_text(dims)}")
    return dims


def reshape(sp_input, shape, name=None) -> SparseTensor:
    """The same entries in a tensor of ``shape`` (row-major, as ``gt.reshape``; one ``-1``
    is inferred). The entries keep their order; the values pass through unchanged."""
    sp = _convert(sp_input, "reshape")
    in_shape = tuple(sp._shape)
    dims = _reshape_target("reshape", in_shape, shape)
    dev = _dev(sp)
    ind = _raw(lambda xp: _unravel(xp, _linear(xp, sp._indices._value, in_shape), dims), dev)
    return SparseTensor._make(Tensor(ind, dev), sp._values, dims)


def transpose(sp_input, perm=None, name=None) -> SparseTensor:
    """The tensor with its axes permuted by ``perm`` (reversed by default), in row-major
    order."""
    sp = _convert(sp_input, "transpose")
    rank = len(sp._shape)
    perm = list(range(rank))[::-1] if perm is None else _host_ints(perm, "transpose: perm")
    if len(perm) != rank:
        raise ValueError(f"transpose: perm {perm} has {len(perm)} entries for a tensor of "
                         f"rank {rank}")
    perm = [p % rank if -rank <= p < rank else p for p in perm]
    if sorted(perm) != list(range(rank)):
        raise InvalidArgumentError(f"transpose: perm {perm} is not a permutation of "
                                   f"0..{rank - 1}")
    shape = [sp._shape[p] for p in perm]
    dev = _dev(sp)

    def run(xp):
        iv = sp._indices._value
        ind = _columns(xp, iv, perm)
        return ind, _lex_order(xp, ind)
    ind, order = _raw(run, dev)
    return _permuted(sp, order, shape, ind)


def expand_dims(sp_input, axis=None, name=None) -> SparseTensor:
    """The tensor with a length-1 axis inserted at ``axis`` (default ``-1``: innermost)."""
    sp = _convert(sp_input, "expand_dims")
    rank = len(sp._shape)
    axis = -1 if axis is None else axis
    if isinstance(axis, Tensor):
        axis = _scalar_int(axis, "expand_dims: axis")
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError("expand_dims: axis must be an integer value in range "
                        "[-rank(sp_input) - 1, rank(sp_input)]")
    axis = int(axis)
    if not -rank - 1 <= axis <= rank:
        raise InvalidArgumentError(f"expand_dims: axis {axis} is out of range "
                                   f"[{-rank - 1}, {rank}] for a tensor of rank {rank}")
    if axis < 0:
        axis += rank + 1
    dev = _dev(sp)

    def run(xp):
        iv = sp._indices._value
        col = xp.zeros((iv.shape[0], 1), dtype=_INT64)
        return xp.concatenate([iv[:, :axis], col, iv[:, axis:]], axis=1)
    shape = list(sp._shape)
    shape.insert(axis, 1)
    return SparseTensor._make(Tensor(_raw(run, dev), dev), sp._values, shape)


def reset_shape(sp_input, new_shape=None) -> SparseTensor:
    """The same entries with dense shape ``new_shape`` (each dimension at least the old
    one), or, by default, the tightest shape holding the indices (the host reads them)."""
    sp = _convert(sp_input, "reset_shape")
    old = tuple(sp._shape)
    if new_shape is None:
        iv = sp._indices._value
        if iv.shape[0] == 0:
            dims = [0] * len(old)
        else:
            dev = _dev(sp)
            top = Tensor(_raw(lambda xp: iv.max(axis=0), dev), dev).numpy()
            dims = [max(0, int(v) + 1) for v in np.reshape(top, (-1,)).tolist()]
    else:
        dims = _host_ints(new_shape, "reset_shape: new_shape")
        if len(dims) != len(old):
            raise ValueError(f"reset_shape: new_shape {dims} has rank {len(dims)}, the "
                             f"tensor rank {len(old)}")
        if any(n < o for n, o in zip(dims, old)):
            raise ValueError(f"reset_shape: Requested new_shape should have dimension sizes "
                             f">= sp_input.shape. Found new_shape ({dims}), sp_input.shape "
                             f"({list(old)}).")
    return SparseTensor._make(sp._indices, sp._values, dims)


# --- selecting entries -------------------------------------------------------------------

def _subset(sp: SparseTensor, pos, shape=None, new_ind=None) -> SparseTensor:
    """The entries at ``pos`` (a raw int64 array, in order), values gathered; ``new_ind``
    (raw) replaces their index rows."""
    dev = _dev(sp)
    iv = sp._indices._value
    new_ind = Tensor(_raw(lambda xp: iv[pos], dev) if new_ind is None else new_ind, dev)
    return SparseTensor._make(new_ind, _shape.gather(sp._values, Tensor(pos, dev)),
                              sp._shape if shape is None else shape)


def retain(sp_input, to_retain) -> SparseTensor:
    """The entries where the 1-D ``to_retain`` (one flag per entry) is true (nonzero), in
    their order."""
    sp = _convert(sp_input, "retain")
    dev = _dev(sp)
    keep = _dense_operand(to_retain, dev)
    n = sp._values._value.shape[0]
    if keep._value.ndim != 1:
        raise ValueError(f"retain: to_retain must have rank 1, got shape "
                         f"{tuple(keep._value.shape)}")
    if keep._value.shape[0] != n:
        raise ValueError(f"retain: to_retain has {keep._value.shape[0]} flags for {n} "
                         f"entries")
    keep = keep.to(dev)
    return _subset(sp, _positions(dev, keep._value != 0))


def _window(sp: SparseTensor, start, size):
    """(positions, shifted indices, shape) of the entries in ``[start, start + size)``."""
    dev = _dev(sp)
    shape = tuple(sp._shape)
    out = [max(0, min(s + z, d) - s) for s, z, d in zip(start, size, shape)]

    def run(xp):
        iv = sp._indices._value
        ok = xp.ones((iv.shape[0],), dtype=bool)
        for j, (s, z) in enumerate(zip(start, size)):
            ok &= (iv[:, j] >= s) & (iv[:, j] < s + z)
        pos = xp.nonzero(ok)[0].astype(_INT64)
        return pos, iv[pos] - xp.asarray(start, dtype=_INT64) if len(start) else iv[pos]
    pos, ind = _raw(run, dev)
    return pos, ind, out


def slice(sp_input, start, size, name=None) -> SparseTensor:  # noqa: A001 (TF's name)
    """The entries with ``start <= index < start + size`` (in their order), shifted by
    ``start``; the dense shape is clipped to the input's. The values' gradient flows back
    to the kept entries."""
    sp = _convert(sp_input, "slice")
    rank = len(sp._shape)
    start = _host_ints(start, "slice: start")
    size = _host_ints(size, "slice: size")
    if len(start) != rank:
        raise InvalidArgumentError(f"slice: Expected start to be a vector of length {rank} "
                                   f"but got length {len(start)}")
    if len(size) != rank:
        raise InvalidArgumentError(f"slice: Expected size to be a vector of length {rank} "
                                   f"but got length {len(size)}")
    for z in size:
        if z < 0:
            raise InvalidArgumentError(f"slice: Expected a non-negative size, got {z}")
    pos, ind, shape = _window(sp, start, size)
    return _subset(sp, pos, shape, ind)


def split(sp_input=None, num_split=None, axis=None, name=None) -> list:
    """``num_split`` pieces along ``axis``: the first ``size % num_split`` one element
    longer, as TF's."""
    if sp_input is None:
        raise ValueError("split: sp_input is required")
    if num_split is None:
        raise ValueError("split: num_split is required")
    if axis is None:
        raise ValueError("split: axis is required")
    sp = _convert(sp_input, "split")
    rank = len(sp._shape)
    num_split = _scalar_int(num_split, "split: num_split")
    axis = _scalar_int(axis, "split: axis")
    if not -rank <= axis < rank:
        raise InvalidArgumentError(f"split: Input axis should be in range [{-rank}, {rank}), "
                                   f"got {axis}")
    axis %= rank
    dim = sp._shape[axis]
    if not 1 <= num_split <= dim:
        raise InvalidArgumentError(f"split: Input num_split should be between 1 and the "
                                   f"splitting dimension size ({dim}), got {num_split}")
    base, extra = divmod(dim, num_split)
    pieces = []
    at = 0
    for i in range(num_split):
        n = base + (1 if i < extra else 0)
        start = [0] * rank
        size = list(sp._shape)
        start[axis] = at
        size[axis] = n
        pos, ind, shape = _window(sp, start, size)
        pieces.append(_subset(sp, pos, shape, ind))
        at += n
    return pieces


def concat(axis, sp_inputs, expand_nonconcat_dims=False, name=None) -> SparseTensor:
    """The inputs joined along ``axis`` (their other dimensions equal, or with
    ``expand_nonconcat_dims`` the largest of each), in row-major order. As TensorFlow's, it
    passes no gradient to the values."""
    sps = [_convert(s, "concat") for s in sp_inputs]
    if not sps:
        raise ValueError("concat: sp_inputs must not be empty")
    if len(sps) == 1:
        return sps[0]
    rank = len(sps[0]._shape)
    for i, s in enumerate(sps[1:], 1):
        if len(s._shape) != rank:
            raise InvalidArgumentError(f"concat: Ranks of all input tensors must match: "
                                       f"expected {rank} but got {len(s._shape)} at position "
                                       f"{i}")
        if s.dtype != sps[0].dtype:
            raise TypeError(f"concat: input {i} has dtype {s.dtype.name}, input 0 "
                            f"{sps[0].dtype.name}")
    axis = _scalar_int(axis, "concat: axis")
    if not -rank <= axis < rank:
        raise InvalidArgumentError(f"concat: axis {axis} is out of range for tensors of rank "
                                   f"{rank}")
    axis %= rank
    dev = _same_device("concat", *[s._values for s in sps])
    if expand_nonconcat_dims:
        shape = [max(s._shape[j] for s in sps) for j in range(rank)]
    else:
        shape = list(sps[0]._shape)
        for i, s in enumerate(sps[1:], 1):
            for j in range(rank):
                if j != axis and s._shape[j] != shape[j]:
                    raise InvalidArgumentError(
                        f"concat: Input shapes must match: expected {shape[j]} for dimension "
                        f"{j} but got {s._shape[j]} at position {i}")
    shape[axis] = sum(s._shape[axis] for s in sps)

    def run(xp):
        parts = []
        at = 0
        for s in sps:
            iv = s._indices._value
            shift = xp.zeros((1, rank), dtype=_INT64)
            shift[0, axis] = at
            parts.append(iv + shift)
            at += s._shape[axis]
        ind = xp.concatenate(parts, axis=0)
        return ind, _lex_order(xp, ind)
    ind, order = _raw(run, dev)
    vals = _core.stop_gradient(_shape.concat([s._values for s in sps], axis=0))
    joined = SparseTensor._make(Tensor(ind, dev), vals, shape)
    return _permuted(joined, order)


# --- arithmetic -----------------------------------------------------------------------------

_TRUEDIV = {"int8": "float32", "uint8": "float32", "int16": "float32", "uint16": "float32",
            "int32": "float64", "uint32": "float64", "int64": "float64", "uint64": "float64"}


def _sparse_dense_cwise(sp: SparseTensor, other, op) -> SparseTensor:
    """``sp * other`` / ``sp / other`` at the stored entries, ``other`` dense (broadcast to
    the sparse shape, never the other way) or a number."""
    opname = "SparseTensor." + ("__mul__" if op == "mul" else "__truediv__")
    if _is_sparse(other):
        raise TypeError(f"{opname}: the other operand must be dense, got a SparseTensor")
    dev = _dev(sp)
    vals = sp._values
    y = _dense_operand(other, dev, vals._value.dtype)
    if y._device is not dev:
        raise ValueError(f"{opname}: the sparse tensor is on {dev}, the dense one on "
                         f"{y._device}")
    shape = tuple(sp._shape)
    ys = tuple(y._value.shape)
    r, R = len(ys), len(shape)
    if r > R or any(d != 1 and d != shape[R - r + j] for j, d in enumerate(ys)):
        raise InvalidArgumentError(f"{opname}: SparseDenseBinaryOpShared broadcasts dense to "
                                   f"sparse only; got incompatible shapes: "
                                   f"{_shape_text(shape)} vs. {_shape_text(ys)}")
    if r == 0:
        dense_vals = y
    else:
        def run(xp):
            iv = sp._indices._value
            cols = [iv[:, R - r + j] if d != 1 else xp.zeros((iv.shape[0],), dtype=_INT64)
                    for j, d in enumerate(ys)]
            return xp.stack(cols, axis=1)
        dense_vals = _shape.gather_nd(y, Tensor(_raw(run, dev), dev))
    if op == "mul":
        out = vals * dense_vals
    else:
        to = _TRUEDIV.get(vals.dtype.name)
        if to is not None:
            vals, dense_vals = _core.cast(vals, to), _core.cast(dense_vals, to)
        out = vals / dense_vals
    return SparseTensor._make(sp._indices, out, sp._shape)


def _check_same_shape(opname, a: SparseTensor, b: SparseTensor):
    if len(a._shape) != len(b._shape):
        raise InvalidArgumentError(f"{opname}: Input indices must have the same dimension, "
                                   f"got {len(a._shape)} and {len(b._shape)}")
    for j, (da, db) in enumerate(zip(a._shape, b._shape)):
        if da != db:
            raise InvalidArgumentError(f"{opname}: Operands' shapes do not match: got {da} "
                                       f"and {db} for dimension {j}")
    if a.dtype != b.dtype:
        raise TypeError(f"{opname}: operands have different dtypes {a.dtype.name} and "
                        f"{b.dtype.name}; gradtape does not promote, use gt.cast")
    return _same_device(opname, a._values, b._values)


def _union(dev, a: SparseTensor, b: SparseTensor):
    """(index rows of the union in row-major order, group of each entry of a then b, group
    count, entries per group): raw arrays; the host waits for the count."""
    def run(xp):
        ind = xp.concatenate([a._indices._value, b._indices._value], axis=0)
        ids, first = _row_groups(xp, ind)
        n = int(first.shape[0])
        return ind[first], ids, n, _count(xp, ids, n)
    return _raw(run, dev)


def add(a, b, threshold=0) -> "SparseTensor | Tensor":
    """``a + b`` with at least one SparseTensor.

    Two sparse tensors give a sparse tensor holding the union of their entries (row-major;
    an entry present in both is dropped when its sum's magnitude is below ``threshold``).
    A sparse and a dense tensor (same shape) give a dense tensor. Gradients reach both
    inputs' values (and the dense tensor)."""
    if not (_is_sparse(a) or _is_sparse(b)):
        raise TypeError("add: At least one input should be SparseTensor; do you mean to use "
                        "gt.add()?")
    if _is_sparse(a) and _is_sparse(b):
        return _add_sparse(_convert(a, "add"), _convert(b, "add"), threshold)
    if _is_sparse(b):
        a, b = b, a
    return _add_dense(_convert(a, "add"), b)


def _add_sparse(a: SparseTensor, b: SparseTensor, threshold):
    opname = "add"
    dev = _check_same_shape(opname, a, b)
    kind = a._values._value.dtype.kind
    if kind in "bO":
        raise TypeError(f"{opname}: cannot add sparse tensors of dtype {a.dtype.name}")
    real = {"complex64": "float32", "complex128": "float64"}.get(a.dtype.name, a.dtype.name)
    thr = _dense_operand(threshold, dev, real) if not isinstance(threshold, Tensor) \
        else threshold
    if thr.dtype.name != real or thr._value.ndim != 0:
        raise TypeError(f"{opname}: threshold must be a {real} scalar, got {thr.dtype.name} "
                        f"of shape {tuple(thr.shape)}")
    ind, inv, n, counts = _union(dev, a, b)
    vals = _shape.concat([a._values, b._values], axis=0)
    summed = _segment_sum(vals, Tensor(inv, dev), n)

    # an entry of both below the threshold is dropped (TF compares only sums)
    def keep(xp):
        mag = xp.abs(summed._value)
        return (counts < 2) | (mag >= thr._value)
    pos = _positions(dev, _raw(keep, dev))
    out = SparseTensor._make(Tensor(ind, dev), summed, a._shape)
    return _subset(out, pos)


def _add_dense(sp: SparseTensor, dense):
    opname = "add"
    dev = _dev(sp)
    d = _dense_operand(dense, dev, sp._values._value.dtype)
    ds = tuple(d._value.shape)
    shape = tuple(sp._shape)
    if len(ds) != len(shape):
        raise InvalidArgumentError(f"{opname}: Two operands have different ranks; received: "
                                   f"{len(shape)} and {len(ds)}")
    for j, (s, t) in enumerate(zip(shape, ds)):
        if s != t:
            raise InvalidArgumentError(f"{opname}: Dimension {j} does not equal (no "
                                       f"broadcasting is supported): sparse side {s} vs "
                                       f"dense side {t}")
    _same_device(opname, sp._values, d)
    if dev.host_visible:
        iv = sp._indices._value
        i = _first_out_of_bounds(iv, shape)
        if i >= 0:
            j = next(j for j in range(len(shape)) if not 0 <= int(iv[i, j]) < shape[j])
            raise InvalidArgumentError(
                f"{opname}: Sparse tensor has an invalid index on dimension {j}: "
                f"a_indices({i},{j}) = {int(iv[i, j])}, dense tensor shape: "
                f"{' '.join(str(s) for s in shape)}")
    if not shape:
        return d + _math.add_n([sp._values]) if sp._values._value.shape[0] else d
    vals = sp._values
    if vals._value.dtype.kind == "c":      # (a device's scatter-add takes real numbers)
        re = _scatter.scatter_nd(sp._indices, _math.real(vals), shape)
        im = _scatter.scatter_nd(sp._indices, _math.imag(vals), shape)
        return d + _math.complex(re, im)
    return _scatter.tensor_scatter_nd_add(d, sp._indices, vals)


def _extreme(sp_a, sp_b, opname, fn):
    a = _convert(sp_a, opname)
    b = _convert(sp_b, opname)
    dev = _check_same_shape(opname, a, b)
    if a._values._value.dtype.kind not in "iuf":
        raise TypeError(f"{opname}: dtype {a.dtype.name} is not a real number type")
    for s in (a, b):
        if dev.host_visible:
            iv = s._indices._value
            i = _first_out_of_bounds(iv, tuple(s._shape))
            if i >= 0:
                raise InvalidArgumentError(f"{opname}: Sparse index tuple indices[{i}, :] = "
                                           f"{_row_text(iv[i])} is out of bounds")
    ind, inv, n, _ = _union(dev, a, b)
    na = a._values._value.shape[0]
    ia = Tensor(_raw(lambda xp: inv[:na], dev), dev)
    ib = Tensor(_raw(lambda xp: inv[na:], dev), dev)
    va = _scatter.unsorted_segment_sum(a._values, ia, n)
    vb = _scatter.unsorted_segment_sum(b._values, ib, n)
    return SparseTensor._make(Tensor(ind, dev), fn(va, vb), a._shape)


def maximum(sp_a, sp_b, name=None) -> SparseTensor:
    """The elementwise maximum of two sparse tensors of one shape, over the union of their
    entries (an entry missing on one side is zero there), in row-major order."""
    return _extreme(sp_a, sp_b, "maximum", _math.maximum)


def minimum(sp_a, sp_b, name=None) -> SparseTensor:
    """The elementwise minimum of two sparse tensors (see :func:`maximum`)."""
    return _extreme(sp_a, sp_b, "minimum", _math.minimum)


# --- reductions ------------------------------------------------------------------------------

def _reduction_axes(opname, sp: SparseTensor, axis):
    rank = len(sp._shape)
    if axis is None:
        return list(range(rank))
    axes = _host_ints(axis, f"{opname}: axis")
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise InvalidArgumentError(f"{opname}: Invalid reduction dimension {a}, for input "
                                       f"with {rank} dimensions.")
        a %= rank
        if a not in out:
            out.append(a)
    return sorted(out)


def _reduce(opname, sp_input, axis, keepdims, output_is_sparse, is_max):
    sp = _convert(sp_input, opname)
    kind = sp._values._value.dtype.kind
    if kind not in ("iuf" if is_max else "iufc"):
        raise TypeError(f"{opname}: values of dtype {sp.dtype.name} cannot be reduced")
    axes = _reduction_axes(opname, sp, axis)
    shape = tuple(sp._shape)
    kept = [j for j in range(len(shape)) if j not in axes]
    kept_shape = [shape[j] for j in kept]
    out_shape = [1 if j in axes else shape[j] for j in range(len(shape))] if keepdims \
        else kept_shape
    _check_bounds(opname, sp)
    dev = _dev(sp)
    iv = sp._indices._value
    vals = sp._values
    if output_is_sparse:
        def group(xp):
            sub = _columns(xp, iv, kept)
            inv, first = _row_groups(xp, sub)
            rows = sub[first]
            if keepdims:
                full = xp.zeros((rows.shape[0], len(shape)), dtype=_INT64)
                for i, j in enumerate(kept):
                    full[:, j] = rows[:, i]
                rows = full
            return rows, inv, int(first.shape[0])
        rows, inv, n = _raw(group, dev)
        seg = _scatter.unsorted_segment_max if is_max else _segment_sum
        return SparseTensor._make(Tensor(rows, dev), seg(vals, Tensor(inv, dev), n),
                                  out_shape)
    n = 1
    for d in kept_shape:
        n *= d
    key = _raw(lambda xp: _linear(xp, _columns(xp, iv, kept), kept_shape), dev)
    ids = Tensor(key, dev)
    if is_max:
        out = _scatter.unsorted_segment_max(vals, ids, n)
        counts = Tensor(_raw(lambda xp: _count(xp, key, n) > 0, dev), dev)
        out = _math.where(counts, out, _core.zeros_like(out))
    else:
        out = _segment_sum(vals, ids, n)
    return _shape.reshape(out, out_shape)


def _count(xp, key, n):
    """Entries per id in ``[0, n)`` (ids outside are not counted)."""
    c = xp.zeros((n,), dtype=_INT64)
    if n:
        ok = (key >= 0) & (key < n)
        xp.add.at(c, xp.where(ok, key, 0), ok.astype(_INT64))
    return c


def reduce_sum(sp_input, axis=None, keepdims=None, output_is_sparse=False,
               name=None) -> "Tensor | SparseTensor":
    """The sum over ``axis`` (all by default): a dense tensor, or with ``output_is_sparse``
    a SparseTensor of the output positions that have entries. Differentiable in the
    values."""
    return _reduce("reduce_sum", sp_input, axis, bool(keepdims), output_is_sparse, False)


def reduce_max(sp_input, axis=None, keepdims=None, output_is_sparse=False,
               name=None) -> "Tensor | SparseTensor":
    """The maximum over ``axis`` of the stored values only (implicit zeros do not take
    part; a position without entries is 0 in the dense result), as TF's."""
    return _reduce("reduce_max", sp_input, axis, bool(keepdims), output_is_sparse, True)


def softmax(sp_input, name=None) -> SparseTensor:
    """The softmax of the stored values of each innermost row (over the entries present;
    the implicit zeros take no part). Rank >= 2, floating point."""
    sp = _convert(sp_input, "softmax")
    if sp._values._value.dtype.kind != "f":
        raise TypeError(f"softmax: values must be floating point, got {sp.dtype.name}")
    if len(sp._shape) < 2:
        raise InvalidArgumentError(f"softmax: Input should have rank >= 2, but received "
                                   f"shape: {_shape_text(sp._shape)}")
    dev = _dev(sp)
    ids = Tensor(_raw(lambda xp: _row_groups(xp, sp._indices._value[:, :-1], False)[0], dev),
                 dev)
    n = sp._values._value.shape[0]
    v = sp._values
    top = _scatter.unsorted_segment_max(_core.stop_gradient(v), ids, n)
    e = _math.exp(v - _shape.gather(top, ids))
    total = _scatter.unsorted_segment_sum(e, ids, n)
    return SparseTensor._make(sp._indices, e / _shape.gather(total, ids), sp._shape)


# --- products --------------------------------------------------------------------------------

def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None) -> Tensor:
    """``A @ B`` for a sparse matrix A and a dense matrix B (or a dense A and sparse B),
    either adjointed. Differentiable in the sparse values and the dense operand."""
    if _is_sparse(b):
        if adjoint_a != adjoint_b:
            return _shape.transpose(sparse_dense_matmul(b, sp_a, adjoint_a, adjoint_b))
        return _shape.transpose(sparse_dense_matmul(b, sp_a, not adjoint_a, not adjoint_b))
    opname = "sparse_dense_matmul"
    a = _convert(sp_a, opname)
    dev = _dev(a)
    b = _dense_operand(b, dev)
    if len(a._shape) != 2:
        raise InvalidArgumentError(f"{opname}: Tensor 'a_shape' must have 2 elements (a "
                                   f"sparse matrix), got shape {_shape_text(a._shape)}")
    if b._value.ndim != 2:
        raise InvalidArgumentError(f"{opname}: Tensor 'b' is not a matrix, got shape "
                                   f"{tuple(b._value.shape)}")
    if b.dtype != a.dtype:
        raise TypeError(f"{opname}: the sparse values are {a.dtype.name}, b is "
                        f"{b.dtype.name}; gradtape does not promote, use gt.cast")
    _same_device(opname, a._values, b)
    m, k = (a._shape[1], a._shape[0]) if adjoint_a else (a._shape[0], a._shape[1])
    bk, _ = (b._value.shape[1], b._value.shape[0]) if adjoint_b else b._value.shape
    if k != bk:
        raise InvalidArgumentError(
            f"{opname}: Cannot multiply A and B because inner dimension does not match: {k} "
            f"vs. {bk}.  Did you forget a transpose?  Dimensions of A: "
            f"{_shape_text(a._shape)}.  Dimensions of B: {_shape_text(b._value.shape)}")
    rcol, ccol = (1, 0) if adjoint_a else (0, 1)
    iv = a._indices._value
    if dev.host_visible and iv.shape[0]:
        bad_r = (iv[:, rcol] < 0) | (iv[:, rcol] >= m)
        bad_c = (iv[:, ccol] < 0) | (iv[:, ccol] >= k)
        bad = bad_r | bad_c
        if bool(bad.any()):
            i = int(bad.argmax())
            if bool(bad_r[i]):
                raise InvalidArgumentError(f"{opname}: m ({int(iv[i, rcol])}) from "
                                           f"index[{i},{rcol}] out of bounds (>={m})")
            raise InvalidArgumentError(f"{opname}: k ({int(iv[i, ccol])}) from "
                                       f"index[{i},{ccol}] out of bounds (>={k})")
    cplx = a._values._value.dtype.kind == "c"
    vals = _math.conj(a._values) if adjoint_a and cplx else a._values
    bb = b
    if adjoint_b:
        bb = _shape.transpose(b)
        if cplx:
            bb = _math.conj(bb)
    rows = Tensor(_raw(lambda xp: iv[:, rcol], dev), dev)
    cols = Tensor(_raw(lambda xp: iv[:, ccol], dev), dev)
    prod = _shape.gather(bb, cols) * _shape.reshape(vals, [-1, 1])
    return _segment_sum(prod, rows, m)


# --- rows -------------------------------------------------------------------------------------

def fill_empty_rows(sp_input, default_value, name=None):
    """``(filled, empty_row_indicator)``: an entry ``default_value`` at ``[row, 0, ...]``
    for each row (first coordinate) without entries, entries grouped by row in their
    order; ``empty_row_indicator[row]`` says which rows were filled. Gradients reach the
    values and ``default_value``."""
    sp = _convert(sp_input, "fill_empty_rows")
    rank = len(sp._shape)
    if rank < 1:
        raise InvalidArgumentError("fill_empty_rows: the input must have rank >= 1")
    dev = _dev(sp)
    dt = sp._values._value.dtype
    dv = _dense_operand(default_value, dev, dt)
    if dv._value.ndim != 0:
        raise InvalidArgumentError(f"fill_empty_rows: default_value must be a scalar, saw: "
                                   f"{_shape_text(dv._value.shape)}")
    nrows = sp._shape[0]
    iv = sp._indices._value
    if dev.host_visible and iv.shape[0]:
        rows = iv[:, 0]
        bad = (rows < 0) | (rows >= nrows)
        if bool(bad.any()):
            i = int(bad.argmax())
            raise InvalidArgumentError(f"fill_empty_rows: indices({i}, 0) is invalid: "
                                       f"{int(rows[i])} >= {nrows}")
    empty = _raw(lambda xp: _count(xp, iv[:, 0], nrows) == 0, dev)
    missing = _positions(dev, empty)

    def run(xp):
        new = xp.zeros((missing.shape[0], rank), dtype=_INT64)
        new[:, 0] = missing
        ind = xp.concatenate([iv, new], axis=0)
        return ind, xp.argsort(ind[:, 0], kind="stable")
    ind, order = _raw(run, dev)
    fill = _core.broadcast_to(dv, [int(missing.shape[0])])
    vals = _shape.concat([sp._values, fill], axis=0)
    out = _permuted(SparseTensor._make(Tensor(ind, dev), vals, sp._shape), order)
    return out, Tensor(empty, dev)


def to_indicator(sp_input, vocab_size, name=None) -> Tensor:
    """A dense bool tensor ``[..., vocab_size]`` (the last dimension replaced): true at
    ``[..., value]`` for each entry's integer value."""
    sp = _convert(sp_input, "to_indicator")
    vocab = _scalar_int(vocab_size, "to_indicator: vocab_size")
    dev = _dev(sp)
    if sp._values._value.dtype.kind not in "iuf":
        raise TypeError(f"to_indicator: values must be integer ids, got {sp.dtype.name}")
    shape = list(sp._shape[:-1]) + [vocab]

    def run(xp):
        iv = sp._indices._value
        col = sp._values._value.astype(_INT64).reshape(-1, 1)
        return xp.concatenate([iv[:, :-1], col], axis=1)
    ind = _raw(run, dev)
    if dev.host_visible and _first_out_of_bounds(ind, shape) >= 0:
        raise InvalidArgumentError(f"to_indicator: indices are not valid (out of bounds); "
                                   f"shape {_shape_text(shape)}")
    base = Tensor(_raw(lambda xp: xp.zeros(shape, dtype=bool), dev), dev)
    if ind.shape[0] == 0:
        return base
    ones = Tensor(_raw(lambda xp: xp.ones((ind.shape[0],), dtype=bool), dev), dev)
    return _scatter.tensor_scatter_nd_update(base, Tensor(ind, dev), ones)


def eye(num_rows, num_columns=None, dtype="float32", name=None) -> SparseTensor:
    """A sparse ``[num_rows, num_columns]`` matrix with ones on the diagonal."""
    rows = _scalar_int(num_rows, "eye: num_rows")
    cols = rows if num_columns is None else _scalar_int(num_columns, "eye: num_columns")
    if rows < 0 or cols < 0:
        raise InvalidArgumentError(f"eye: num_rows and num_columns must be >= 0, got "
                                   f"{rows} and {cols}")
    n = min(rows, cols)
    diag = np.arange(n, dtype=np.int64)
    ind = convert_to_tensor(np.stack([diag, diag], axis=1))
    vals = _core.ones([n], dtype=dtype)
    return SparseTensor._make(ind.to(vals._device), vals, [rows, cols])


def mask(a, mask_indices, name=None) -> IndexedSlices:
    """The slices of IndexedSlices ``a`` whose index is not in ``mask_indices``."""
    if not isinstance(a, IndexedSlices):
        raise TypeError(f"mask: a must be IndexedSlices, got {type(a).__name__}")
    idx = a.indices
    dev = idx._device
    m = _dense_operand(mask_indices, dev)
    if m._value.dtype.kind not in "iu":
        raise TypeError(f"mask: mask_indices must be integers, got {m.dtype.name}")
    m = m.to(dev)
    keep = _raw(lambda xp: ~xp.isin(idx._value, m._value.reshape(-1)), dev)
    pos = _positions(dev, keep)
    out_idx = Tensor(_raw(lambda xp: idx._value[pos], dev), dev)
    vals = _shape.gather(a.values, Tensor(pos, dev))
    return IndexedSlices(vals, out_idx, a.dense_shape)


def map_values(op, *args, **kwargs) -> SparseTensor:
    """``op`` applied to the values of the SparseTensors among the arguments (which must
    share indices and dense shape); the result keeps those indices."""
    from .nest import map_structure
    found = []

    def swap(x):
        if isinstance(x, SparseTensor):
            found.append(x)
            return x._values
        return x
    inner_args = map_structure(swap, list(args))
    inner_kwargs = {k: map_structure(swap, v) for k, v in kwargs.items()}
    if not found:
        raise ValueError("map_values: No SparseTensor in argument list of map_values")
    first = found[0]
    for s in found[1:]:
        if tuple(s._shape) != tuple(first._shape):
            raise InvalidArgumentError(f"map_values: Mismatched shapes! {list(first._shape)} "
                                       f"and {list(s._shape)}")
        if s._indices is first._indices:
            continue
        same = s._indices._value.shape == first._indices._value.shape
        if same and s._indices._device is first._indices._device and \
                first._indices._device.host_visible:
            same = bool((s._indices._value == first._indices._value).all())
        if not same:
            raise InvalidArgumentError("map_values: Mismatched indices! The SparseTensors "
                                       "must have equal indices")
    return SparseTensor(first._indices, op(*inner_args, **inner_kwargs), first.dense_shape)


# --- segments over selected rows -------------------------------------------------------------

def _sparse_segment(opname, data, indices, segment_ids, num_segments, reducer):
    x = data if isinstance(data, Tensor) else convert_to_tensor(data)
    dev = x._device
    idx = _dense_operand(indices, dev)
    ids = _dense_operand(segment_ids, dev)
    for t, what in ((idx, "indices"), (ids, "segment_ids")):
        if t._value.dtype.kind not in "iu":
            raise TypeError(f"{opname}: {what} must be int32 or int64, got {t.dtype.name}")
        if t._value.ndim != 1:
            raise InvalidArgumentError(f"{opname}: {what} must be a vector, got shape "
                                       f"{tuple(t._value.shape)}")
    if reducer != "sum" and x._value.dtype.kind != "f":
        raise TypeError(f"{opname}: data must be floating point, got {x.dtype.name}")
    if x._value.ndim < 1:
        raise InvalidArgumentError(f"{opname}: data must have rank >= 1")
    idx, ids = idx.to(dev), ids.to(dev)
    n = idx._value.shape[0]
    if ids._value.shape[0] != n:
        raise InvalidArgumentError(f"{opname}: segment_ids and indices should have same "
                                   f"size.")
    rows = x._value.shape[0]
    if num_segments is None:
        host = ids.numpy()
        count = int(host[-1]) + 1 if n else 0
    else:
        count = _scalar_int(num_segments, f"{opname}: num_segments")
        host = ids.numpy() if dev.host_visible else None
    if dev.host_visible and n:
        iv = idx._value
        bad = (iv < 0) | (iv >= rows)
        if bool(bad.any()):
            i = int(bad.argmax())
            raise InvalidArgumentError(f"{opname}: Bad: indices[{i}] == {int(iv[i])} out of "
                                       f"range [0, {rows})")
    if host is not None and n:
        steps = host[1:] < host[:-1]
        if bool(steps.any()):
            raise InvalidArgumentError(f"{opname}: segment ids are not increasing")
        if int(host[0]) < 0:
            raise InvalidArgumentError(f"{opname}: Segment id {int(host[0])} out of range "
                                       f"[0, {count}), possibly because 'segment_ids' input "
                                       f"is not sorted.")
        if int(host[-1]) >= count:
            raise InvalidArgumentError(f"{opname}: segment ids must be < num_segments")
    picked = _shape.gather(x, idx)
    fn = {"sum": _segment_sum, "mean": _scatter.unsorted_segment_mean,
          "sqrt_n": _scatter.unsorted_segment_sqrt_n}[reducer]
    return fn(picked, ids, count)


def segment_sum(data, indices, segment_ids, num_segments=None, name=None,
                sparse_gradient=False) -> Tensor:
    """``out[s] = sum of data[indices[i]] over segment_ids[i] == s`` (ids sorted; with no
    ``num_segments``, the last id + 1 segments). The gradient of ``data`` is dense."""
    return _sparse_segment("segment_sum", data, indices, segment_ids, num_segments, "sum")


def segment_mean(data, indices, segment_ids, num_segments=None, name=None,
                 sparse_gradient=False) -> Tensor:
    """The mean of the rows ``data[indices[i]]`` of each segment (0 for an empty one)."""
    return _sparse_segment("segment_mean", data, indices, segment_ids, num_segments, "mean")


def segment_sqrt_n(data, indices, segment_ids, num_segments=None, name=None,
                   sparse_gradient=False) -> Tensor:
    """Each segment's sum of rows ``data[indices[i]]`` over the square root of its size."""
    return _sparse_segment("segment_sqrt_n", data, indices, segment_ids, num_segments,
                           "sqrt_n")


# --- counting --------------------------------------------------------------------------------

def bincount(values, weights=None, axis=0, minlength=None, maxlength=None,
             binary_output=False, name=None) -> SparseTensor:
    """Counts of each non-negative integer in ``values`` (dense, sparse or ragged) as a
    SparseTensor: over everything (``axis=0``) or per row of a 2-D input (``axis=-1``).
    With ``weights`` (the values' shape) each occurrence adds its weight; with
    ``binary_output`` a present value counts 1. ``maxlength`` fixes the output length
    (larger values are dropped), else it is the largest value + 1 (at least
    ``minlength``)."""
    opname = "bincount"
    if weights is not None and binary_output:
        raise ValueError(f"{opname}: Arguments `binary_output` and `weights` are mutually "
                         f"exclusive. Please specify only one.")
    axis = 0 if axis is None else axis
    if axis not in (0, -1):
        raise ValueError(f"{opname}: Unsupported value for argument axis={axis}. Only 0 and "
                         f"-1 are currently supported.")
    if _is_sparse(values):
        sp = _convert(values, opname)
        dev = _dev(sp)
        flat = sp._values
        if weights is not None and not _is_sparse(weights):
            raise ValueError(f"{opname}: Argument `weights` must be a SparseTensor if "
                             f"`values` is a SparseTensor. Received weights={weights!r} of "
                             f"type: {type(weights).__name__}")
        w = None if weights is None else _convert(weights, opname)._values
        if axis == -1 and len(sp._shape) >= 2:
            batch = _raw(lambda xp: sp._indices._value[:, 0], dev)
            nbatch = sp._shape[0]
        else:
            batch, nbatch = None, None
    elif hasattr(values, "flat_values") and hasattr(values, "value_rowids"):
        flat = values.flat_values
        dev = flat._device
        w = None if weights is None else (
            weights.flat_values if hasattr(weights, "flat_values")
            else _dense_operand(weights, dev))
        if axis == -1:
            batch = _core.cast(values.value_rowids(), "int64").to(dev)._value
            nbatch = int(values.nrows().numpy())
        else:
            batch, nbatch = None, None
    else:
        x = values if isinstance(values, Tensor) else convert_to_tensor(values)
        dev = x._device
        w = None if weights is None else _dense_operand(weights, dev)
        if w is not None and tuple(w._value.shape) != tuple(x._value.shape):
            raise InvalidArgumentError(f"{opname}: Weights and data must have the same "
                                       f"shape. Weight shape: {_shape_text(w._value.shape)}; "
                                       f"data shape: {_shape_text(x._value.shape)}")
        if axis == -1 and x._value.ndim > 2:
            raise InvalidArgumentError(f"{opname}: Input must be a 1 or 2-dimensional "
                                       f"tensor. Got: {_shape_text(x._value.shape)}")
        if axis == -1 and x._value.ndim == 2:
            r, c = x._value.shape
            batch = _raw(lambda xp: xp.repeat(xp.arange(r, dtype=_INT64), c), dev)
            nbatch = r
        else:
            batch, nbatch = None, None
        flat = _shape.reshape(x, [-1])
        w = None if w is None else _shape.reshape(w, [-1])
    if flat._value.dtype not in (np.dtype(np.int32), _INT64):
        raise TypeError(f"{opname}: values must be int32 or int64, got {flat.dtype.name}")
    if w is not None and w._value.shape[0] != flat._value.shape[0]:
        raise InvalidArgumentError(f"{opname}: Weights and data must have the same shape. "
                                   f"Weight shape: {_shape_text(w._value.shape)}; data shape: "
                                   f"{_shape_text(flat._value.shape)}")
    v = flat._value
    if minlength is not None and int(minlength) < -1:
        raise InvalidArgumentError(f"{opname}: minlength must be >= -1, got {minlength}")
    if maxlength is not None and int(maxlength) < -1:
        raise InvalidArgumentError(f"{opname}: maxlength must be >= -1, got {maxlength}")
    if dev.host_visible and v.size and int(v.min()) < 0:
        raise InvalidArgumentError(f"{opname}: Input values must all be non-negative")
    if maxlength is not None and int(maxlength) >= 0:
        size = int(maxlength)
    else:
        top = int(Tensor(_raw(lambda xp: xp.max(v), dev), dev).numpy()) if v.size else 0
        size = max(top + 1, 1, int(minlength) if minlength is not None else 0)

    def count(xp):
        key = v.astype(_INT64)
        ok = (key >= 0) & (key < size)
        if batch is not None:
            key = batch * size + key
        pos = xp.nonzero(ok)[0].astype(_INT64)
        u, inv, cnt = xp.unique(key[pos], return_inverse=True, return_counts=True)
        lead = [] if batch is None else [nbatch]
        return _unravel(xp, u, lead + [size]), pos, inv.reshape(-1).astype(_INT64), cnt
    ind, pos, inv, cnt = _raw(count, dev)
    out_shape = ([] if batch is None else [nbatch]) + [size]
    n = int(cnt.shape[0])
    if binary_output:
        out = Tensor(_raw(lambda xp: xp.ones((n,), dtype=v.dtype), dev), dev)
    elif w is None:
        out = Tensor(_raw(lambda xp: cnt.astype(v.dtype), dev), dev)
    else:
        w = w.to(dev)
        out = _scatter.unsorted_segment_sum(_shape.gather(w, Tensor(pos, dev)),
                                            Tensor(inv, dev), n)
    return SparseTensor._make(Tensor(ind, dev), out, out_shape)


# --- embeddings ------------------------------------------------------------------------------

_COMBINERS = ("mean", "sqrtn", "sum")


def embedding_lookup_sparse(params, sp_ids, sp_weights, combiner=None, max_norm=None,
                            name=None, allow_fast_lookup=False) -> Tensor:
    """Rows of ``params`` at the ids of each row of ``sp_ids`` (rows sorted), combined by
    ``combiner`` (``"mean"`` by default, ``"sum"``, ``"sqrtn"``), weighted by
    ``sp_weights`` (same indices) when given. The result has one row per row index up to
    the last one present. Gradients reach ``params`` and the weights' values."""
    if combiner is None:
        combiner = "mean"
    if combiner not in _COMBINERS:
        raise ValueError(f"embedding_lookup_sparse: combiner must be one of 'mean', 'sqrtn' "
                         f"or 'sum', got {combiner}")
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"embedding_lookup_sparse: sp_ids must be SparseTensor, got "
                        f"{type(sp_ids)}")
    if sp_weights is not None:
        if not isinstance(sp_weights, SparseTensor):
            raise TypeError(f"embedding_lookup_sparse: sp_weights must be either None or "
                            f"SparseTensor, got {type(sp_weights)}")
        if sp_weights._values._value.shape != sp_ids._values._value.shape:
            raise ValueError(f"embedding_lookup_sparse: Shapes "
                             f"{tuple(sp_ids._values._value.shape)} and "
                             f"{tuple(sp_weights._values._value.shape)} are incompatible")
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("embedding_lookup_sparse: params must not be empty")
        parts = [p if isinstance(p, Tensor) else convert_to_tensor(p) for p in params]
        table = parts[0] if len(parts) == 1 else _shape.concat(parts, axis=0)
    else:
        table = params if isinstance(params, Tensor) else convert_to_tensor(params)
    return _embedding_combine(table, sp_ids, sp_weights, combiner, max_norm)


def _embedding_combine(table, sp_ids, sp_weights, combiner, max_norm):
    opname = "embedding_lookup_sparse"
    dev = _dev(sp_ids)
    segment_ids = Tensor(_raw(lambda xp: sp_ids._indices._value[:, 0], dev), dev)
    ids = sp_ids._values
    if ids._value.dtype.kind not in "iu":
        raise TypeError(f"{opname}: ids must be integers, got {ids.dtype.name}")
    _same_device(opname, table, ids)
    if sp_weights is None and max_norm is None:
        seg = {"sum": segment_sum, "mean": segment_mean, "sqrtn": segment_sqrt_n}[combiner]
        return seg(table, ids, segment_ids)
    n = ids._value.shape[0]
    if dev.host_visible and n:      # the ids checked as the sparse segment ops check them
        iv = ids._value
        bad = (iv < 0) | (iv >= table._value.shape[0])
        if bool(bad.any()):
            i = int(bad.argmax())
            raise InvalidArgumentError(f"{opname}: Bad: indices[{i}] == {int(iv[i])} out of "
                                       f"range [0, {table._value.shape[0]})")
    from .ops.nn import embedding_lookup
    emb = embedding_lookup(table, ids, max_norm=max_norm)
    if sp_weights is None:
        seg = {"sum": segment_sum, "mean": segment_mean, "sqrtn": segment_sqrt_n}[combiner]
        arange = Tensor(_raw(lambda xp: xp.arange(n, dtype=_INT64), dev), dev)
        return seg(emb, arange, segment_ids)
    weights = sp_weights._values
    out_dtype = emb.dtype
    if out_dtype.name in ("float16", "bfloat16"):
        emb = _core.cast(emb, "float32")
    if weights.dtype != emb.dtype:
        weights = _core.cast(weights, emb.dtype)
    weights = _shape.reshape(weights, [n] + [1] * (emb._value.ndim - 1))
    emb = emb * weights
    out = _scatter.segment_sum(emb, segment_ids)
    if combiner == "mean":
        out = _math.divide_no_nan(out, _scatter.segment_sum(weights, segment_ids))
    elif combiner == "sqrtn":
        total = _scatter.segment_sum(weights * weights, segment_ids)
        out = _math.divide_no_nan(out, _math.sqrt(total))
    if out.dtype != out_dtype:
        out = _core.cast(out, out_dtype)
    return out


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner="mean", default_id=None, max_norm=None, name=None,
                                 allow_fast_lookup=False) -> Tensor:
    """:func:`embedding_lookup_sparse` made total: ids < 0 (and, unless ``combiner`` is
    ``"sum"``, weights <= 0) are dropped, a row without ids gives zeros (or the embedding
    of ``default_id``), ``sparse_ids`` may have any rank >= 2; the result has shape
    ``sparse_ids.dense_shape[:-1] + params.shape[1:]``."""
    if embedding_weights is None:
        raise ValueError(f"safe_embedding_lookup_sparse: Missing embedding_weights "
                         f"{embedding_weights}.")
    params = list(embedding_weights) if isinstance(embedding_weights, (list, tuple)) \
        else [embedding_weights]
    if not params:
        raise ValueError(f"safe_embedding_lookup_sparse: Missing embedding_weights "
                         f"{embedding_weights}.")
    dtype = sparse_weights.dtype if sparse_weights is not None else None
    params = [p if isinstance(p, Variable) and dtype in (None, p.dtype)
              else convert_to_tensor(p, dtype=dtype) for p in params]
    if combiner not in _COMBINERS:
        raise ValueError(f"safe_embedding_lookup_sparse: combiner must be one of 'mean', "
                         f"'sqrtn' or 'sum', got {combiner}")
    sp_ids = _convert(sparse_ids, "safe_embedding_lookup_sparse")
    original = tuple(sp_ids._shape)
    if len(original) < 2:
        raise ValueError(f"safe_embedding_lookup_sparse: sparse_ids must have rank >= 2, got "
                         f"shape {list(original)}")
    lead = 1
    for d in original[:-1]:
        lead *= d
    sp_ids = reshape(sp_ids, [lead, original[-1]])
    weights = None
    if sparse_weights is not None:
        weights = SparseTensor._make(sp_ids._indices,
                                     _convert(sparse_weights, "safe_embedding_lookup_sparse")
                                     ._values, sp_ids._shape)
    # drop invalid ids (and non-positive weights unless summing)
    dev = _dev(sp_ids)
    keep = _raw(lambda xp: sp_ids._values._value >= 0, dev)
    if weights is not None and combiner != "sum":
        w = weights._values._value
        keep = _raw(lambda xp: keep & (w > 0), dev)
    pos = _positions(dev, keep)
    sp_ids = _subset(sp_ids, pos)
    if weights is not None:
        weights = _subset(weights, pos)
    sp_ids, empty = fill_empty_rows(sp_ids, default_id or 0)
    if weights is not None:
        weights, _ = fill_empty_rows(weights, 1.0)
    table = params[0] if len(params) == 1 else _shape.concat(params, axis=0)
    result = _embedding_combine(table, sp_ids, weights, combiner, max_norm)
    if default_id is None:
        flags = _shape.reshape(empty, [-1] + [1] * (result._value.ndim - 1))
        result = _math.where(flags, _core.zeros_like(result), result)
    return _shape.reshape(result, list(original[:-1]) + list(result._value.shape[1:]))


# --- type specs --------------------------------------------------------------------------------

class SparseTensorSpec:
    """The type of a SparseTensor: its dense shape (dimensions may be None) and dtype."""

    __slots__ = ("_shape", "_dtype")

    def __init__(self, shape=None, dtype="float32"):
        self._shape = as_shape(shape)
        self._dtype = as_dtype(dtype)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    value_type = property(lambda self: SparseTensor)

    @classmethod
    def from_value(cls, value) -> "SparseTensorSpec":
        if isinstance(value, SparseTensor):
            return cls(value.shape, value.dtype)
        if isinstance(value, SparseTensorValue):
            return cls.from_value(SparseTensor.from_value(value))
        raise TypeError(f"Expected SparseTensor or SparseTensorValue. Received: {value!r} of "
                        f"type {type(value).__name__}.")

    def is_compatible_with(self, spec_or_value) -> bool:
        other = spec_or_value
        if _is_sparse(other):
            other = SparseTensorSpec.from_value(other)
        if not isinstance(other, SparseTensorSpec):
            return False
        return self._dtype == other._dtype and self._shape.is_compatible_with(other._shape)

    def _key(self):
        dims = None if self._shape.rank is None else tuple(self._shape.as_list())
        return dims, self._dtype.name

    def __eq__(self, other):
        return type(other) is type(self) and self._key() == other._key()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"SparseTensorSpec({self._shape!r}, {self._dtype!r})"
