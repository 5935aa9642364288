"""``gt.TensorArray``: TensorFlow's eager ``tf.TensorArray``, a list of tensors of one dtype.

    ta = gt.TensorArray(gt.float32, size=0, dynamic_size=True)
    for t in range(T):
        h = gt.tanh(x[t] @ W + h @ U)
        ta = ta.write(t, h)
    outputs = ta.stack()                 # [T, ...]

As TF's eager implementation, the array holds the written tensors themselves and its reads
are made of gradtape's ops (``stack``, ``concat``, ``gather``'s stack, ``unstack``, ``split``),
so a tape records them and gradients flow from ``stack()``, ``read()``, ``concat()`` and
``gather()`` back through ``write()``, ``unstack()``, ``scatter()`` and ``split()`` to whatever
the written values were computed from. It works on every device: an element never written
reads as zeros of the element shape, made on the device of the written elements.

The semantics are TF 2.21's eager ones: ``write`` returns the TensorArray (always rebind it,
``ta = ta.write(i, x)``, as TF requires); writing an index twice replaces the value (eager
TF raises nothing); ``read`` clears the element when ``clear_after_read`` (the default), so a
second read of it raises; ``stack``, ``concat`` and ``gather`` read without clearing; with
``infer_shape`` the first write fixes the element shape and later writes must match it. Two
checks are stricter than eager TF, which stores the tensors unchecked there: ``unstack``
and ``split`` refuse a value of another dtype (TF warns that this "will be an error"), and
``unstack`` checks the element shape as ``write`` does. ``grad`` (graph-mode only in TF) is
not provided.
"""
from __future__ import annotations

import numpy as np

from .dtypes import as_dtype
from .errors import OutOfRangeError
from .registry import InvalidArgumentError
from .tensor import Tensor, TensorShape, Variable, as_shape, constant

__all__ = ["TensorArray"]


def _host_int(value, opname, what):
    """A Python int from an int, a NumPy integer or an integer scalar tensor (read on the
    host, as TF's eager TensorArray reads its indices)."""
    if isinstance(value, Tensor):
        arr = value.numpy()
        if arr.ndim != 0 or arr.dtype.kind not in "iu":
            raise TypeError(f"{opname}: {what} must be an integer scalar, got a tensor of "
                            f"shape {tuple(arr.shape)} and dtype {as_dtype(arr.dtype).name}")
        return int(arr)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{opname}: {what} must be an integer, got {type(value).__name__} "
                        f"{value!r}")
    return int(value)


def _host_ints(values, opname, what):
    """A list of Python ints from a 1-D integer tensor, array or sequence."""
    if isinstance(values, Tensor):
        values = values.numpy()
    arr = np.asarray(values)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise TypeError(f"{opname}: {what} must be a 1-D integer vector, got shape "
                        f"{tuple(arr.shape)} and dtype {arr.dtype}")
    return [int(v) for v in arr.tolist()]


class TensorArray:
    """A list of tensors of one dtype that grows and is read by index (``tf.TensorArray``,
    eager). See the module docstring for its semantics."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if handle is not None:
            raise ValueError("TensorArray: TensorArray handles are not supported when eager "
                             "execution is enabled.")
        if size is None:
            raise ValueError("TensorArray: Size must be declared for TensorArrays when eager "
                             "execution is enabled.")
        n = _host_int(size, "TensorArray", "size")
        if n < 0:
            raise ValueError(f"TensorArray: size must be >= 0, got {n}")
        self._dtype = as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = bool(infer_shape)
        self._element_shape = as_shape(element_shape)
        self._colocate_with_first_write_call = colocate_with_first_write_call
        self._previously_read_indices = set()
        self._tensor_array = [None] * n

    # --- properties ----------------------------------------------------------------------------
    @property
    def dtype(self):
        """The dtype of the elements."""
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        """The shape the elements have (inferred from the writes when ``infer_shape``)."""
        return self._element_shape

    @property
    def dynamic_size(self) -> bool:
        """Whether writes past the end grow the array."""
        return self._dynamic_size

    @property
    def flow(self) -> Tensor:
        """For compatibility: eager TF's placeholder flow, an int32 scalar 0."""
        return constant(np.int32(0))

    @property
    def handle(self):
        """For compatibility: None, as eager TF's."""
        return None

    def __repr__(self):
        return (f"<gt.TensorArray dtype={self._dtype.name} size={len(self._tensor_array)} "
                f"element_shape={self._element_shape}>")

    # --- helpers -----------------------------------------------------------------------------
    def _value(self, value, opname) -> Tensor:
        """``value`` as a tensor of this array's dtype (TF's conversion with the array's dtype
        preferred); a tensor of another dtype raises InvalidArgumentError."""
        if isinstance(value, Variable):
            value = value.read_value()
        elif not isinstance(value, Tensor):
            try:
                value = constant(value, dtype=self._dtype)
            except (TypeError, ValueError):
                value = constant(value)
        if value.dtype != self._dtype:
            raise InvalidArgumentError(
                None, None, f"{opname}: TensorArray dtype is {self._dtype.name} but Op is "
                            f"trying to write dtype {value.dtype.name}")
        return value

    def _check_shape(self, shape, opname):
        if not self._element_shape.is_compatible_with(shape):
            raise ValueError(f"{opname}: Incompatible shape for value ({TensorShape(shape)}), "
                             f"expected ({self._element_shape})")
        if self._infer_shape:
            self._element_shape = self._element_shape.merge_with(shape)

    def _write(self, index, value, opname):
        index = _host_int(index, opname, "index")
        if index < 0:
            raise OutOfRangeError(None, None, f"{opname}: Writing to negative indices (index "
                                              f"{index}) is not allowed.")
        size = len(self._tensor_array)
        if index >= size:
            if not self._dynamic_size:
                raise OutOfRangeError(
                    None, None, f"{opname}: Tried to write to index {index} but array is not "
                                f"resizeable and size is: {size}")
            self._tensor_array.extend([None] * (index - size + 1))
        value = self._value(value, opname)
        self._check_shape(tuple(value._value.shape), opname)
        self._tensor_array[index] = value

    def _device(self):
        """The device of the written elements (for the zeros of unwritten ones)."""
        for t in self._tensor_array:
            if t is not None:
                return t._device
        return None

    def _zeros(self, shape):
        from .backend import device_scope
        from .ops.core import zeros
        dev = self._device()
        if dev is None:
            return zeros(shape, dtype=self._dtype)
        with device_scope(dev):
            return zeros(shape, dtype=self._dtype)

    def _maybe_zero(self, index, opname):
        val = self._tensor_array[index]
        if val is None:
            if not self._element_shape.is_fully_defined():
                raise ValueError(
                    f"{opname}: index {index} was never written and the element shape "
                    f"{self._element_shape} is not fully defined, so it has no zero value "
                    f"(give element_shape=, or write every index)")
            val = self._tensor_array[index] = self._zeros(tuple(self._element_shape))
        return val

    def _check_read_index(self, index, opname):
        if index < 0:
            raise OutOfRangeError(None, None, f"{opname}: Reading from negative indices "
                                              f"(index {index}) is not allowed.")
        if index >= len(self._tensor_array):
            raise OutOfRangeError(None, None, f"{opname}: Tried to read from index {index} but "
                                              f"array size is: {len(self._tensor_array)}")

    # --- reads ---------------------------------------------------------------------------------
    def read(self, index, name=None) -> Tensor:
        """The tensor at ``index`` (zeros of the element shape if it was never written). With
        ``clear_after_read`` the element is cleared: reading it again raises."""
        opname = "TensorArray.read"
        index = _host_int(index, opname, "index")
        self._check_read_index(index, opname)
        if self._tensor_array[index] is None and index in self._previously_read_indices:
            raise InvalidArgumentError(
                None, None, f"{opname}: Could not read index {index} twice because it was "
                            f"cleared after a previous read (perhaps try setting "
                            f"clear_after_read = false?)")
        tensor = self._maybe_zero(index, opname)
        if self._clear_after_read:
            self._tensor_array[index] = None
            self._previously_read_indices.add(index)
        return tensor

    def stack(self, name=None) -> Tensor:
        """The elements stacked along a new first axis: ``[size] + element_shape``."""
        from .ops.shape import stack
        opname = "TensorArray.stack"
        if not self._tensor_array:
            shape = (0,) + tuple(self._element_shape) if (
                self._element_shape.is_fully_defined()) else (0,)
            return self._zeros(shape)
        values = [self._maybe_zero(i, opname) for i in range(len(self._tensor_array))]
        self._same_shapes(values, opname)
        return stack(values)

    def gather(self, indices, name=None) -> Tensor:
        """The elements at ``indices`` (a 1-D integer vector) stacked along a new first axis."""
        from .ops.shape import stack
        opname = "TensorArray.gather"
        idx = _host_ints(indices, opname, "indices")
        for i in idx:
            if not 0 <= i < len(self._tensor_array):
                raise OutOfRangeError(None, None, f"{opname}: index {i} is out of range for a "
                                                  f"TensorArray of size "
                                                  f"{len(self._tensor_array)}")
        if not idx:
            if not self._element_shape.is_fully_defined():
                raise ValueError(f"{opname}: no indices and the element shape "
                                 f"{self._element_shape} is not fully defined")
            return self._zeros((0,) + tuple(self._element_shape))
        values = [self._maybe_zero(i, opname) for i in idx]
        self._same_shapes(values, opname)
        return stack(values)

    def concat(self, name=None) -> Tensor:
        """The elements joined along their first axis (each must be at least a vector, and
        their other sizes must match)."""
        from .ops.shape import concat
        opname = "TensorArray.concat"
        if not self._tensor_array:
            es = self._element_shape
            if es.rank is not None and es.rank >= 1 and es[1:].is_fully_defined():
                return self._zeros((0,) + tuple(es[1:]))
            raise ValueError(f"{opname}: the TensorArray is empty and its element shape {es} "
                             f"does not give the shape of the result")
        values = [self._maybe_zero(i, opname) for i in range(len(self._tensor_array))]
        for i, v in enumerate(values):
            if v._value.ndim == 0:
                raise InvalidArgumentError(None, None, f"{opname}: Concat saw a scalar shape at "
                                                       f"index {i} but requires at least "
                                                       f"vectors.")
        first = tuple(values[0]._value.shape[1:])
        for i, v in enumerate(values):
            if tuple(v._value.shape[1:]) != first:
                raise InvalidArgumentError(
                    None, None, f"{opname}: the elements' shapes must match after the first "
                                f"axis: element 0 has shape {tuple(values[0]._value.shape)}, "
                                f"element {i} has shape {tuple(v._value.shape)}")
        return concat(values, 0)

    @staticmethod
    def _same_shapes(values, opname):
        s0 = tuple(values[0]._value.shape)
        for i, v in enumerate(values):
            if tuple(v._value.shape) != s0:
                raise InvalidArgumentError(
                    None, None, f"{opname}: Shapes of all inputs must match: values[0].shape = "
                                f"{list(s0)} != values[{i}].shape = {list(v._value.shape)}")

    def size(self, name=None) -> Tensor:
        """The number of elements, an int32 scalar tensor."""
        return constant(np.int32(len(self._tensor_array)))

    # --- writes --------------------------------------------------------------------------------
    def write(self, index, value, name=None) -> "TensorArray":
        """Write ``value`` at ``index``; returns the TensorArray (use it from then on)."""
        self._write(index, value, "TensorArray.write")
        return self

    def unstack(self, value, name=None) -> "TensorArray":
        """The slices of ``value`` along its first axis become the elements (the array then
        holds exactly them); returns the TensorArray."""
        from .ops.shape import unstack
        opname = "TensorArray.unstack"
        value = self._value(value, opname)
        if value._value.ndim == 0:
            raise ValueError(f"{opname}: cannot unstack a scalar")
        n = value._value.shape[0]
        if n > len(self._tensor_array) and not self._dynamic_size:
            raise ValueError(f"{opname}: Cannot unstack {n} tensors into a TensorArray of "
                             f"static size {len(self._tensor_array)}")
        self._check_shape(tuple(value._value.shape[1:]), opname)
        self._tensor_array = list(unstack(value)) if n else []
        return self

    def scatter(self, indices, value, name=None) -> "TensorArray":
        """Write the slices of ``value`` along its first axis at ``indices``; returns the
        TensorArray."""
        from .ops.shape import unstack
        opname = "TensorArray.scatter"
        idx = _host_ints(indices, opname, "indices")
        value = self._value(value, opname)
        if value._value.ndim == 0:
            raise ValueError(f"{opname}: value must have rank >= 1, got a scalar")
        if value._value.shape[0] != len(idx):
            raise ValueError(f"{opname}: {len(idx)} indices for a value of "
                             f"{value._value.shape[0]} slices (shape "
                             f"{tuple(value._value.shape)})")
        if idx:
            for i, v in zip(idx, unstack(value)):
                self._write(i, v, opname)
        return self

    def split(self, value, lengths, name=None) -> "TensorArray":
        """Split ``value`` along its first axis into pieces of ``lengths``, which become the
        elements; returns the TensorArray."""
        from .ops.shape import split
        opname = "TensorArray.split"
        value = self._value(value, opname)
        if isinstance(lengths, Tensor):
            lengths = lengths.numpy()
        lens = np.asarray(lengths)
        if lens.ndim != 1:
            raise InvalidArgumentError(None, None, f"{opname}: Expected lengths to be a vector, "
                                                   f"received shape: {list(lens.shape)}")
        lens = _host_ints(lens, opname, "lengths")
        if value._value.ndim == 0:
            raise InvalidArgumentError(None, None, f"{opname}: Expected value to be at least a "
                                                   f"vector, but received shape: []")
        total = sum(lens)
        if total != value._value.shape[0]:
            raise InvalidArgumentError(
                None, None, f"{opname}: Expected sum of lengths to be equal to values.shape[0], "
                            f"but sum of lengths is {total} and value's shape is: "
                            f"{list(value._value.shape)}")
        if not self._dynamic_size and len(lens) != len(self._tensor_array):
            raise InvalidArgumentError(
                None, None, f"{opname}: TensorArray's size is not equal to the size of lengths "
                            f"({len(self._tensor_array)} vs. {len(lens)}), and the TensorArray "
                            f"is not marked as dynamically resizeable.")
        if any(n < 0 for n in lens):
            raise InvalidArgumentError(None, None, f"{opname}: lengths must be >= 0, got {lens}")
        self._tensor_array = list(split(value, lens, axis=0)) if lens else []
        return self

    # --- the rest ------------------------------------------------------------------------------
    def identity(self) -> "TensorArray":
        """The TensorArray itself (TF's eager ``identity``)."""
        return self

    def close(self, name=None) -> None:
        """Drop every element (the size becomes 0)."""
        del self._tensor_array[:]

    def mark_used(self) -> None:
        """Nothing to do: TF wraps the TensorArrays ``write`` and friends return in a checker
        whose ``mark_used()`` silences its "never used" warning; gradtape has no checker."""
        return None
