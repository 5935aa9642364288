"""``gt.sets``: set operations along the last axis, as TensorFlow's ``tf.sets``.

A rank-``n`` tensor (dense or a ``gt.sparse.SparseTensor``) holds one set per position of
its first ``n - 1`` axes: the values along the last axis (a sparse tensor's stored values of
that row). ``size`` counts the distinct values of each set; ``intersection``, ``union`` and
``difference`` pair the sets of ``a`` and ``b`` (their first ``n - 1`` dimensions must match)
and return a SparseTensor of the same rank whose rows hold each result in ascending order
(strings by their bytes), its last dimension the largest result's size, as TF's kernels.
Values are int8, int16, int32, int64, uint8, uint16 or strings. A sparse input's indices must
be in row-major order; ``validate_indices`` checks it (and that they are in range). Like
TensorFlow's kernels (CPU only), the sets are formed on the host: the result's size depends
on the values. No gradient, as TF.
"""
from __future__ import annotations

import numpy as np

from .backend import device_scope
from .registry import InvalidArgumentError
from .sparse import SparseTensor, SparseTensorValue, _check_order
from .tensor import Tensor, convert_to_tensor

__all__ = ["size", "intersection", "union", "difference"]

_VALID = ("int8", "int16", "int32", "int64", "uint8", "uint16", "string")


def _dtype_error(x, what):
    return TypeError(f"{what}has invalid dtype `{x.dtype.name}` not in supported dtypes: "
                     f"{', '.join(_VALID)}.")


def _convert(x, what):
    """A Tensor or SparseTensor (SparseTensorValues and array-likes converted)."""
    if isinstance(x, SparseTensorValue):
        x = SparseTensor.from_value(x)
    if not isinstance(x, (Tensor, SparseTensor)):
        x = convert_to_tensor(x)
    if x.dtype.name not in _VALID:
        raise _dtype_error(x, what)
    return x


def _text(shape):
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _groups(x, opname, validate):
    """``(group shape, group rows [N, rank-1], values [N], device)`` on the host: one entry
    per element of a dense tensor, per stored value of a sparse one."""
    if isinstance(x, SparseTensor):
        shape = tuple(x.shape)
        if len(shape) < 2:
            raise InvalidArgumentError(f"{opname}: Invalid rank {len(shape)}.")
        if validate:
            _check_order(opname, x)
        ind = x.indices.numpy()
        return shape[:-1], ind[:, :-1], x.values.numpy(), x.values._device
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise InvalidArgumentError(f"{opname}: Shape {_text(shape)} has rank {len(shape)} < 2")
    vals = x.numpy()
    lead = shape[:-1]
    rows = np.indices(lead, dtype=np.int64).reshape(len(lead), -1).T
    rows = np.repeat(rows, shape[-1], axis=0)
    return lead, rows, vals.reshape(-1), x._device


def _keys(rows_list, vals_list):
    """Integer keys ``group * K + code`` ordering the entries by group (row-major) then value,
    the distinct group rows, the distinct values, and ``K``."""
    rows = np.concatenate(rows_list, axis=0)
    vals = np.concatenate(vals_list)
    if len(vals) == 0:
        return [np.zeros(0, np.int64) for _ in vals_list], rows[:0], vals, 1
    groups, gid = np.unique(rows, axis=0, return_inverse=True)
    uniq, code = np.unique(vals, return_inverse=True)
    k = max(len(uniq), 1)
    key = gid.reshape(-1).astype(np.int64) * k + code.reshape(-1).astype(np.int64)
    out, start = [], 0
    for v in vals_list:
        out.append(key[start:start + len(v)])
        start += len(v)
    return out, groups, uniq, k


def size(a, validate_indices=True) -> Tensor:
    """The number of distinct values in each set of the SparseTensor ``a`` (``tf.sets.size``):
    an int32 tensor of shape ``a.dense_shape[:-1]``."""
    opname = "sets.size"
    if isinstance(a, SparseTensorValue):
        a = SparseTensor.from_value(a)
    if not isinstance(a, SparseTensor):
        raise TypeError(f"{opname}: Expected `SparseTensor`, got {type(a).__name__}.")
    if a.dtype.name not in _VALID:
        raise _dtype_error(a, "sets.size: `a` ")
    lead, rows, vals, dev = _groups(a, opname, validate_indices)
    (key,), groups, _, k = _keys([rows], [vals])
    counts = np.zeros(int(np.prod(lead, dtype=np.int64)), np.int32)
    if len(key):
        distinct = np.unique(key)
        g = distinct // k
        lin = np.ravel_multi_index(tuple(groups[g].T), lead)
        np.add.at(counts, lin, 1)
    with device_scope(dev):
        return convert_to_tensor(counts.reshape(lead))


def _set_operation(a, b, operation, validate_indices, opname):
    a = _convert(a, f"{opname}: 'a' ")
    b = _convert(b, f"{opname}: 'b' ")
    if a.dtype != b.dtype:
        raise TypeError(f"{opname}: Types don't match, {a.dtype.name} vs {b.dtype.name}.")
    if isinstance(a, SparseTensor) and not isinstance(b, SparseTensor):
        a, b = b, a
        operation = {"a-b": "b-a", "b-a": "a-b"}.get(operation, operation)
    lead_a, rows_a, vals_a, dev = _groups(a, opname, validate_indices)
    lead_b, rows_b, vals_b, _ = _groups(b, opname, validate_indices)
    if lead_a != lead_b:
        raise InvalidArgumentError(f"{opname}: Mismatched shapes {_text(lead_a)} vs "
                                   f"{_text(lead_b)}")
    (ka, kb), groups, uniq, k = _keys([rows_a, rows_b], [vals_a, vals_b])
    if operation == "intersection":
        key = np.intersect1d(ka, kb)
    elif operation == "union":
        key = np.union1d(ka, kb)
    elif operation == "a-b":
        key = np.setdiff1d(ka, kb)
    else:
        key = np.setdiff1d(kb, ka)
    g = key // k
    n = len(key)
    first = np.ones(n, bool)
    first[1:] = g[1:] != g[:-1]
    starts = np.nonzero(first)[0]
    pos = np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.append(starts, n)))
    width = int(pos.max()) + 1 if n else 0
    indices = np.concatenate([groups[g].reshape(n, len(lead_a)).astype(np.int64),
                              pos[:, None]], axis=1)
    values = uniq[key % k] if n else vals_a[:0]
    dtype = a.dtype
    with device_scope(dev):
        return SparseTensor(indices, convert_to_tensor(values, dtype=dtype),
                            list(lead_a) + [width])


def intersection(a, b, validate_indices=True) -> SparseTensor:
    """The values in both sets, per set of ``a`` and ``b`` (``tf.sets.intersection``)."""
    return _set_operation(a, b, "intersection", validate_indices, "sets.intersection")


def union(a, b, validate_indices=True) -> SparseTensor:
    """The values in either set, per set of ``a`` and ``b`` (``tf.sets.union``)."""
    return _set_operation(a, b, "union", validate_indices, "sets.union")


def difference(a, b, aminusb=True, validate_indices=True) -> SparseTensor:
    """The values of ``a``'s set not in ``b``'s (``aminusb=False``: of ``b``'s not in
    ``a``'s), per set (``tf.sets.difference``)."""
    return _set_operation(a, b, "a-b" if aminusb else "b-a", validate_indices,
                          "sets.difference")
