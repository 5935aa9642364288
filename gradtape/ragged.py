"""Ragged tensors (``gt.RaggedTensor``, ``gt.ragged``): rows of different lengths, as
TensorFlow's ``tf.RaggedTensor``.

A RaggedTensor is ``values`` (a Tensor, or a RaggedTensor for more than one ragged axis)
cut into rows by ``row_splits`` (int64: row ``i`` is ``values[row_splits[i]:row_splits[i +
1]]``). Its shape is ``[nrows, None, ...]``: ``None`` for each ragged axis, then the inner
axes of the flat values. The row partitions are kept on the host (NumPy int64, read back
as CPU tensors); the flat values stay where they are (string values on the CPU). What
these ragged tensors serve is text preprocessing (``gt.strings.split``, ``unicode_split``,
``StringLookup``, ``TextVectorization``): they are not recorded by tapes.
"""
from __future__ import annotations

import numpy as np

from .backend import CPU, current_device
from .dtypes import as_dtype
from .tensor import Tensor, TensorShape, constant, convert_to_tensor

__all__ = ["RaggedTensor", "constant", "map_flat_values", "stack", "boolean_mask",
           "row_splits_to_segment_ids", "segment_ids_to_row_splits"]

_constant_tensor = constant


def _host(t) -> np.ndarray:
    """The host NumPy value of a tensor (or array-like)."""
    if isinstance(t, Tensor):
        v = t.numpy()
        return v if isinstance(v, np.ndarray) else np.asarray(v, dtype=t._value.dtype)
    return np.asarray(t)


def _splits_tensor(splits: np.ndarray) -> Tensor:
    return Tensor(np.ascontiguousarray(splits, dtype=np.int64), CPU)


def _like(host: np.ndarray, ref) -> Tensor:
    """``host`` as a tensor on the device of ``ref`` (a Tensor), strings on the CPU."""
    if host.dtype.kind == "O" or ref is None:
        dev = CPU if host.dtype.kind == "O" else current_device()
    else:
        dev = ref._device
    if dev is CPU:
        return Tensor(np.array(host, copy=True) if host.base is not None else host, CPU)
    return Tensor(dev.asarray(host), dev)


def _as_values(values) -> "Tensor | RaggedTensor":
    if isinstance(values, (Tensor, RaggedTensor)):
        return values
    return convert_to_tensor(values)


def _formatter(x):
    """TF's ragged element formatter: NumPy arrays with comma separators."""
    if isinstance(x, np.ndarray):
        if x.size != 0:
            return np.array2string(x, separator=", ")
        return repr(x.tolist())
    return str(x)


class RaggedTensor:
    """Rows of different lengths: ``values`` cut by ``row_splits`` (``tf.RaggedTensor``)."""

    __slots__ = ("_values", "_row_splits", "_uniform", "__weakref__")

    def __init__(self, values, row_splits, internal=False, uniform=None):
        if not internal:
            raise ValueError("RaggedTensor constructor is private; please use one of the "
                             "factory methods instead (e.g., RaggedTensor.from_row_lengths())")
        self._values = values
        self._row_splits = row_splits          # host int64 array
        # the length every row has by construction (from a dense axis), else None
        self._uniform = uniform

    # --- factories --------------------------------------------------------------------
    @classmethod
    def _make(cls, values, splits, validate=True, uniform=None) -> "RaggedTensor":
        values = _as_values(values)
        splits = np.asarray(_host(splits)).astype(np.int64, copy=False).reshape(-1)
        if validate:
            nvals = values.nrows_host() if isinstance(values, RaggedTensor) else (
                values._value.shape[0] if values._value.ndim else None)
            if nvals is None:
                raise ValueError("RaggedTensor: values must have rank >= 1, got a scalar")
            if (splits.size == 0 or splits[0] != 0 or np.any(np.diff(splits) < 0)
                    or splits[-1] != nvals):
                raise ValueError(f"RaggedTensor: row_splits {splits.tolist()} do not form a "
                                 f"valid RaggedTensor over {nvals} values (they must start at "
                                 f"0, never decrease and end at {nvals})")
        return cls(values, np.ascontiguousarray(splits), internal=True, uniform=uniform)

    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        """Rows ``values[row_splits[i]:row_splits[i + 1]]``."""
        return cls._make(values, row_splits, validate)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        """Consecutive rows of the given lengths."""
        lengths = _host(row_lengths).astype(np.int64).reshape(-1)
        if validate and np.any(lengths < 0):
            raise ValueError(f"RaggedTensor.from_row_lengths: negative row length in "
                             f"{lengths.tolist()}")
        return cls._make(values, np.concatenate([[0], np.cumsum(lengths)]), validate)

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate=True):
        values = _as_values(values)
        starts = _host(row_starts).astype(np.int64).reshape(-1)
        n = values.nrows_host() if isinstance(values, RaggedTensor) else values._value.shape[0]
        return cls._make(values, np.concatenate([starts, [n]]), validate)

    @classmethod
    def from_row_limits(cls, values, row_limits, name=None, validate=True):
        limits = _host(row_limits).astype(np.int64).reshape(-1)
        return cls._make(values, np.concatenate([[0], limits]), validate)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate=True):
        """Value ``i`` in row ``value_rowids[i]`` (sorted); ``nrows`` rows (one past the
        last id by default)."""
        ids = _host(value_rowids).astype(np.int64).reshape(-1)
        if validate and ids.size and (np.any(np.diff(ids) < 0) or ids[0] < 0):
            raise ValueError("RaggedTensor.from_value_rowids: value_rowids must be sorted "
                             "and non-negative")
        n = int(_host(nrows)) if nrows is not None else (int(ids[-1]) + 1 if ids.size else 0)
        counts = np.bincount(ids, minlength=n)[:n] if ids.size else np.zeros(n, np.int64)
        return cls._make(values, np.concatenate([[0], np.cumsum(counts)]), validate)

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None,
                               validate=True):
        result = _as_values(flat_values)
        for splits in reversed(list(nested_row_splits)):
            result = cls._make(result, splits, validate)
        return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None,
                                validate=True):
        result = _as_values(flat_values)
        for lengths in reversed(list(nested_row_lengths)):
            result = cls.from_row_lengths(result, lengths, validate=validate)
        return result

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1, name=None,
                    row_splits_dtype="int64"):
        """The rows of a dense tensor, cut to ``lengths``, or with trailing ``padding``
        values removed (nothing removed by default)."""
        t = convert_to_tensor(tensor)
        host = _host(t)
        if host.ndim < 2:
            raise ValueError(f"RaggedTensor.from_tensor: tensor must have rank >= 2, got "
                             f"shape {host.shape}")
        if ragged_rank != 1:
            inner = cls.from_tensor(host.reshape((-1,) + host.shape[2:]), lengths=None,
                                    padding=padding, ragged_rank=ragged_rank - 1)
            n, m = host.shape[:2]
            return cls._make(inner, np.arange(0, n * m + 1, m), False, uniform=m)
        n, m = host.shape[:2]
        if lengths is not None:
            lens = np.minimum(_host(lengths).astype(np.int64).reshape(-1), m)
        elif padding is not None:
            pad = _host(padding)
            same = host == pad
            if same.ndim > 2:
                same = same.reshape(n, m, -1).all(axis=2)
            keep = ~same
            # a row keeps everything up to its last value that is not padding
            last = np.where(keep.any(axis=1), m - np.argmax(keep[:, ::-1], axis=1), 0)
            lens = last.astype(np.int64)
        else:
            lens = np.full(n, m, np.int64)
        mask = np.arange(m)[None, :] < lens[:, None]
        vals = host[mask]
        uniform = m if lengths is None and padding is None else None
        return cls._make(_like(vals, t), np.concatenate([[0], np.cumsum(lens)]), False,
                         uniform=uniform)

    # --- description ------------------------------------------------------------------
    @property
    def values(self):
        """The concatenated rows (a Tensor, or a RaggedTensor under another ragged axis)."""
        return self._values

    @property
    def row_splits(self) -> Tensor:
        return _splits_tensor(self._row_splits)

    @property
    def flat_values(self) -> Tensor:
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v._values
        return v

    @property
    def nested_row_splits(self) -> tuple:
        out, v = [], self
        while isinstance(v, RaggedTensor):
            out.append(v.row_splits)
            v = v._values
        return tuple(out)

    @property
    def ragged_rank(self) -> int:
        return 1 + (self._values.ragged_rank if isinstance(self._values, RaggedTensor) else 0)

    @property
    def dtype(self):
        return self.flat_values.dtype

    @property
    def row_splits_dtype(self):
        return as_dtype(np.int64)

    @property
    def shape(self) -> TensorShape:
        """``[nrows, None (each ragged axis; the size of one made from a dense axis),
        inner sizes...]``."""
        inner = self._values.shape[1:]
        return TensorShape([self.nrows_host(), self._uniform] + list(inner))

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def device(self):
        return self.flat_values.device

    def nrows_host(self) -> int:
        return len(self._row_splits) - 1

    def nrows(self, out_type=None, name=None) -> Tensor:
        dt = np.int64 if out_type is None else as_dtype(out_type).np
        return Tensor(np.asarray(self.nrows_host(), dt), CPU)

    def row_lengths(self, axis=1, name=None) -> Tensor:
        """The length of each row (``axis=1``), or of each row of a deeper ragged axis."""
        if axis < 0:
            axis += self.ndim
        if axis == 1:
            return _splits_tensor(np.diff(self._row_splits))
        if axis == 0:
            raise ValueError("RaggedTensor.row_lengths: axis=0 has no row lengths")
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.row_lengths(axis - 1))
        raise ValueError(f"RaggedTensor.row_lengths: axis {axis} is not a ragged axis")

    def nested_row_lengths(self, name=None) -> tuple:
        out, v = [], self
        while isinstance(v, RaggedTensor):
            out.append(_splits_tensor(np.diff(v._row_splits)))
            v = v._values
        return tuple(out)

    def row_starts(self, name=None) -> Tensor:
        return _splits_tensor(self._row_splits[:-1])

    def row_limits(self, name=None) -> Tensor:
        return _splits_tensor(self._row_splits[1:])

    def value_rowids(self, name=None) -> Tensor:
        return _splits_tensor(np.repeat(np.arange(self.nrows_host(), dtype=np.int64),
                                        np.diff(self._row_splits)))

    def bounding_shape(self, axis=None, name=None, out_type=None) -> Tensor:
        """The smallest dense shape holding every row: ``[nrows, longest row, ...]``."""
        dims = self._bounding_dims()
        dt = np.int64 if out_type is None else as_dtype(out_type).np
        arr = np.asarray(dims, dt)
        if axis is not None:
            arr = arr[axis]
        return Tensor(arr, CPU)

    def _bounding_dims(self) -> list:
        lens = np.diff(self._row_splits)
        longest = int(lens.max()) if lens.size else 0
        inner = (self._values._bounding_dims()[1:] if isinstance(self._values, RaggedTensor)
                 else list(self._values._value.shape[1:]))
        return [self.nrows_host(), longest] + inner

    def merge_dims(self, outer_axis, inner_axis) -> "RaggedTensor | Tensor":
        """The axes ``outer_axis`` to ``inner_axis`` merged into one (``merge_dims(0, -1)``:
        the flat values)."""
        ndim = self.ndim
        outer = outer_axis + ndim if outer_axis < 0 else outer_axis
        inner = inner_axis + ndim if inner_axis < 0 else inner_axis
        if not 0 <= outer <= inner < ndim:
            raise ValueError(f"RaggedTensor.merge_dims: expected 0 <= outer_axis ({outer_axis}) "
                             f"<= inner_axis ({inner_axis}) < rank ({ndim})")
        if outer == inner:
            return self
        values = self._values
        if outer >= 2:
            return self.with_values(values.merge_dims(outer - 1, inner - 1))
        merged = _merge_leading(values, inner - 1)
        if outer == 0:
            return merged
        splits = _merged_offsets(values, inner - 1)[self._row_splits]
        return RaggedTensor._make(merged, splits, False)

    # --- conversion -------------------------------------------------------------------
    def with_values(self, new_values) -> "RaggedTensor":
        return RaggedTensor._make(new_values, self._row_splits, False, uniform=self._uniform)

    def with_flat_values(self, new_values) -> "RaggedTensor":
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def _rows_host(self) -> list:
        """Each row as a host NumPy array (nested: a list of such lists)."""
        s = self._row_splits
        if isinstance(self._values, RaggedTensor):
            inner = self._values._rows_host()
            return [inner[s[i]:s[i + 1]] for i in range(len(s) - 1)]
        vals = _host(self._values)
        return [vals[s[i]:s[i + 1]] for i in range(len(s) - 1)]

    def to_list(self) -> list:
        """The rows as nested Python lists (string elements as ``bytes``)."""
        s = self._row_splits
        inner = (self._values.to_list() if isinstance(self._values, RaggedTensor)
                 else _host(self._values).tolist())
        return [inner[s[i]:s[i + 1]] for i in range(len(s) - 1)]

    def numpy(self):
        """The rows as NumPy arrays: one array when every row has the same length, else an
        object array of row arrays, as TensorFlow."""
        values = self._values.numpy()
        splits = self._row_splits
        rows = [values[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]
        if not rows:
            return np.zeros((0, 0) + values.shape[1:], dtype=values.dtype)
        ragged_rows = any(len(row) != len(rows[0]) for row in rows)
        return np.array(rows, dtype=np.object_ if ragged_rows else None)

    def to_tensor(self, default_value=None, name=None, shape=None) -> Tensor:
        """A dense tensor: each row padded with ``default_value`` (zero or ``b""``) to the
        longest row, or to ``shape`` (rows and values beyond it cut off; None keeps the
        bounding size)."""
        flat = self.flat_values
        dt = flat._value.dtype
        dims = self._bounding_dims()
        if shape is not None:
            shape = list(shape.as_list() if isinstance(shape, TensorShape) else shape)
            if len(shape) != len(dims):
                raise ValueError(f"RaggedTensor.to_tensor: shape {shape} has rank "
                                 f"{len(shape)}, the ragged tensor has rank {len(dims)}")
            dims = [d if s is None else int(s) for d, s in zip(dims, shape)]
        if default_value is None:
            fill = b"" if dt.kind == "O" else dt.type(0)
        else:
            fill = _host(convert_to_tensor(default_value, dtype=dt) if not isinstance(
                default_value, Tensor) else default_value)
        out = np.empty(dims, dtype=dt)
        out[...] = fill
        self._fill(out)
        return _like(out, flat)

    def _fill(self, out):
        """Write the rows into the dense host array ``out`` (cut to its shape)."""
        s = self._row_splits
        n = min(self.nrows_host(), out.shape[0])
        m = out.shape[1]
        if isinstance(self._values, RaggedTensor):
            for i in range(n):
                start, stop = int(s[i]), int(min(s[i + 1], s[i] + m))
                if stop > start:
                    self._values._rows(slice(start, stop))._fill(out[i, :stop - start])
            return
        if not n:
            return
        vals = _host(self._values)
        inner = tuple(out.shape[2:])
        lens = np.minimum(np.diff(s)[:n], m)
        rows = np.repeat(np.arange(n), lens)
        cols = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        take = np.repeat(s[:n], lens) + cols
        if vals.shape[1:] == inner:
            out[rows, cols] = vals[take]
        else:
            sl = tuple(slice(0, min(a, b)) for a, b in zip(inner, vals.shape[1:]))
            out[(rows, cols) + sl] = vals[(take,) + sl]

    # --- indexing ---------------------------------------------------------------------
    def _row(self, i: int):
        n = self.nrows_host()
        if not -n <= i < n:
            raise IndexError(f"Row key {i} out of bounds")
        i %= n
        start, stop = int(self._row_splits[i]), int(self._row_splits[i + 1])
        return self._values[start:stop]

    def _rows(self, sl: slice) -> "RaggedTensor":
        idx = range(self.nrows_host())[sl]
        s = self._row_splits
        if sl.step in (None, 1):
            start = int(s[idx.start]) if len(idx) else 0
            stop = int(s[idx.stop]) if len(idx) else 0
            return RaggedTensor._make(self._values[start:stop],
                                      s[idx.start:idx.stop + 1] - start if len(idx)
                                      else np.zeros(1, np.int64), False)
        rows = [self._row(i) for i in idx]
        return _concat_rows(rows, self)

    def __getitem__(self, key):
        """``rt[i]`` (a row), ``rt[a:b]`` (rows), ``rt[i, j]``, ``rt[:, a:b]`` (each row cut),
        as TensorFlow; an int index into a ragged axis of every row is refused, as TF."""
        if not isinstance(key, tuple):
            key = (key,)
        if not key:
            return self
        first, rest = key[0], key[1:]
        if isinstance(first, Tensor):
            first = int(first.numpy())
        if first is Ellipsis:
            if not rest:
                return self
            raise ValueError("RaggedTensor indexing with '...' is not supported")
        if isinstance(first, (int, np.integer)):
            row = self._row(int(first))
            return row[rest] if rest else row
        if isinstance(first, slice):
            rows = self._rows(first)
            if not rest:
                return rows
            second = rest[0]
            if isinstance(second, slice):
                parts = [rows._row(i)[(second,) + rest[1:]] for i in range(rows.nrows_host())]
                return _concat_rows(parts, rows)
            raise ValueError("Cannot index into an inner ragged dimension.")
        raise TypeError(f"RaggedTensor: cannot index with {first!r}")

    def __iter__(self):
        for i in range(self.nrows_host()):
            yield self._row(i)

    # --- elementwise operators (on the flat values) -----------------------------------
    def _binary(self, other, fn):
        if isinstance(other, RaggedTensor):
            if self.ragged_rank != other.ragged_rank or any(
                    not np.array_equal(a.numpy(), b.numpy())
                    for a, b in zip(self.nested_row_splits, other.nested_row_splits)):
                raise ValueError("RaggedTensor: the two ragged tensors have different row "
                                 "partitions")
            return self.with_flat_values(fn(self.flat_values, other.flat_values))
        return self.with_flat_values(fn(self.flat_values, other))

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._binary(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._binary(other, lambda a, b: b * a)

    def __truediv__(self, other):
        return self._binary(other, lambda a, b: a / b)

    def __eq__(self, other):
        return self._binary(other, lambda a, b: a == b)

    def __ne__(self, other):
        return self._binary(other, lambda a, b: a != b)

    def __lt__(self, other):
        return self._binary(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._binary(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._binary(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._binary(other, lambda a, b: a >= b)

    def __neg__(self):
        return self.with_flat_values(-self.flat_values)

    __hash__ = None

    def __bool__(self):
        raise TypeError("the truth value of a RaggedTensor is ambiguous")

    # --- printing ---------------------------------------------------------------------
    def __repr__(self):
        with np.printoptions(formatter={"all": _formatter}):
            text = _formatter(self.numpy())
        return f"<gt.RaggedTensor {text}>"

    __str__ = __repr__


def _merge_leading(values, k):
    """``values`` with its axes 0 to ``k`` merged."""
    if k == 0:
        return values
    if isinstance(values, RaggedTensor):
        return values.merge_dims(0, k)
    from .ops.shape import reshape
    shape = list(values._value.shape)
    return reshape(values, [-1] + shape[k + 1:])


def _merged_offsets(values, k) -> np.ndarray:
    """Where each row of ``values`` starts once its axes 0 to ``k`` are merged (and, last,
    the merged size)."""
    if isinstance(values, RaggedTensor):
        if k == 0:
            return np.arange(values.nrows_host() + 1, dtype=np.int64)
        return _merged_offsets(values._values, k - 1)[values._row_splits]
    shape = values._value.shape
    per_row = int(np.prod(shape[1:k + 1], dtype=np.int64))
    return np.arange(shape[0] + 1, dtype=np.int64) * per_row


def _concat_rows(rows, like) -> RaggedTensor:
    """A RaggedTensor whose rows are ``rows`` (Tensors or RaggedTensors)."""
    lengths = [(r.nrows_host() if isinstance(r, RaggedTensor) else r._value.shape[0])
               for r in rows]
    if not rows:
        vals = like._values[0:0]
    elif isinstance(rows[0], RaggedTensor):
        vals = _concat_ragged(rows)
    else:
        from .ops.shape import concat
        vals = concat(rows, 0) if len(rows) > 1 else rows[0]
    return RaggedTensor._make(vals, np.concatenate([[0], np.cumsum(lengths)]), False)


def _concat_ragged(parts) -> RaggedTensor:
    """RaggedTensors joined along their rows."""
    inner = [p._values for p in parts]
    if isinstance(inner[0], RaggedTensor):
        vals = _concat_ragged(inner)
    else:
        from .ops.shape import concat
        vals = concat(inner, 0) if len(inner) > 1 else inner[0]
    lengths = np.concatenate([np.diff(p._row_splits) for p in parts])
    return RaggedTensor._make(vals, np.concatenate([[0], np.cumsum(lengths)]), False)


# --- gt.ragged ----------------------------------------------------------------------------

def _max_depth(x) -> int:
    """Like :func:`_depth`, with empty lists counting as deep as their siblings."""
    if isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim > 0):
        ds = [_max_depth(v) for v in x]
        known = {d for d in ds if d is not None}
        if len(known) > 1:
            raise ValueError("all scalar values must have the same nesting depth")
        return 1 + known.pop() if known else None
    return 0


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None,
             row_splits_dtype="int64") -> RaggedTensor:
    """A RaggedTensor from a nested list (``tf.ragged.constant``): every nesting level
    above the scalars is ragged, except the ``inner_shape`` ones (or those below
    ``ragged_rank``). Python ints become int32, floats float32, text ``gt.string``; a flat
    list (no ragged axis) gives a Tensor."""
    if isinstance(pylist, RaggedTensor):
        return pylist
    depth = _max_depth(pylist)
    if depth is None:                     # only empty lists: one level per bracket
        depth = 1
        x = pylist
        while isinstance(x, (list, tuple)) and x and isinstance(x[0], (list, tuple)):
            depth += 1
            x = x[0]
        depth += 0 if inner_shape is None else len(inner_shape)
    inner_rank = 0 if inner_shape is None else len(inner_shape)
    if ragged_rank is None:
        ragged_rank = max(depth - 1 - inner_rank, 0)
    else:
        ragged_rank = int(ragged_rank)
        if ragged_rank < 0 or ragged_rank >= max(depth, 1):
            raise ValueError(f"ragged.constant: ragged_rank={ragged_rank} must be in "
                             f"[0, {max(depth - 1, 0)}] for a list of depth {depth}")
    if ragged_rank == 0:
        return _constant_tensor(pylist, dtype=dtype)
    nested_splits = []
    level = list(pylist)
    for _ in range(ragged_rank):
        lengths = [len(x) for x in level]
        nested_splits.append(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
        level = [v for x in level for v in x]
    flat_dims = depth - ragged_rank - 1
    if level:
        flat = _constant_tensor(level, dtype=dtype)
    else:
        dt = "float32" if dtype is None else dtype
        shape = (0,) + (tuple(inner_shape) if inner_shape is not None else
                        (0,) * max(flat_dims, 0))
        flat = _constant_tensor(np.zeros(shape, as_dtype(dt).np) if as_dtype(dt).np.kind
                                != "O" else np.full(shape, b"", object), dtype=dt)
    if inner_shape is not None and level:
        from .ops.shape import reshape
        flat = reshape(flat, [-1] + list(inner_shape))
    result = flat
    for splits in reversed(nested_splits):
        result = RaggedTensor._make(result, splits, False)
    return result


def map_flat_values(op, *args, **kwargs):
    """``op`` applied to the flat values of the RaggedTensor arguments (which must share
    their row partitions); the result has those partitions."""
    ragged = [a for a in list(args) + list(kwargs.values()) if isinstance(a, RaggedTensor)]
    if not ragged:
        return op(*args, **kwargs)
    first = ragged[0]
    splits = [s.numpy() for s in first.nested_row_splits]
    for r in ragged[1:]:
        other = [s.numpy() for s in r.nested_row_splits]
        if len(other) != len(splits) or any(not np.array_equal(a, b)
                                            for a, b in zip(splits, other)):
            raise ValueError("map_flat_values: the ragged inputs have different row "
                             "partitions")
    unwrap = (lambda a: a.flat_values if isinstance(a, RaggedTensor) else a)
    out = op(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
    return first.with_flat_values(out)


def stack(values, axis=0, name=None) -> RaggedTensor:
    """Tensors (dense or ragged, of one rank) as the rows of a new RaggedTensor
    (``axis=0`` only): row ``i`` holds ``values[i]``."""
    if axis != 0:
        raise ValueError("ragged.stack: only axis=0 is supported")
    parts = [v if isinstance(v, (Tensor, RaggedTensor)) else convert_to_tensor(v)
             for v in values]
    if not parts:
        raise ValueError("ragged.stack: needs at least one tensor")
    if any(isinstance(p, RaggedTensor) for p in parts):
        parts = [p if isinstance(p, RaggedTensor) else RaggedTensor.from_tensor(p)
                 for p in parts]
        inner = _concat_ragged(parts)
        sizes = [p.nrows_host() for p in parts]
    else:
        if any(p._value.ndim == 0 for p in parts):
            raise ValueError("ragged.stack: the tensors need at least one axis")
        from .ops.shape import concat
        inner = concat(parts, 0) if len(parts) > 1 else parts[0]
        sizes = [p._value.shape[0] for p in parts]
    return RaggedTensor._make(inner, np.concatenate([[0], np.cumsum(sizes)]), False)


def boolean_mask(data, mask, name=None):
    """The rows (or row elements, for a ragged mask) of ``data`` where ``mask`` holds."""
    if isinstance(mask, RaggedTensor):
        keep = _host(mask.flat_values).astype(bool)
        flat = _host(data.flat_values)[keep]
        ids = _host(data.value_rowids())[keep]
        counts = np.bincount(ids, minlength=data.nrows_host()) if ids.size else np.zeros(
            data.nrows_host(), np.int64)
        return RaggedTensor._make(_like(flat, data.flat_values),
                                  np.concatenate([[0], np.cumsum(counts)]), False)
    keep = np.nonzero(_host(mask).astype(bool).reshape(-1))[0]
    return _concat_rows([data._row(int(i)) for i in keep], data)


def row_splits_to_segment_ids(splits, name=None, out_type=None) -> Tensor:
    s = _host(splits).astype(np.int64)
    dt = np.int64 if out_type is None else as_dtype(out_type).np
    return Tensor(np.repeat(np.arange(len(s) - 1), np.diff(s)).astype(dt), CPU)


def segment_ids_to_row_splits(segment_ids, num_segments=None, out_type=None,
                              name=None) -> Tensor:
    ids = _host(segment_ids).astype(np.int64)
    n = int(_host(num_segments)) if num_segments is not None else (
        int(ids.max()) + 1 if ids.size else 0)
    dt = np.int64 if out_type is None else as_dtype(out_type).np
    counts = np.bincount(ids, minlength=n) if ids.size else np.zeros(n, np.int64)
    return Tensor(np.concatenate([[0], np.cumsum(counts)]).astype(dt), CPU)
