"""``gt.IndexedSlices``: rows ``values`` of a tensor at ``indices`` (TF's sparse gradient
type).

gradtape's gradients are always dense tensors (a gather's gradient has its repeated rows
already summed), so IndexedSlices appear only where a script makes them. They convert to
the dense tensor they stand for wherever a tensor is expected (``gt.convert_to_tensor``,
any op, an optimizer), repeated indices summing, as ``tf.convert_to_tensor`` does."""
from __future__ import annotations

from .tensor import Tensor, TensorShape

__all__ = ["IndexedSlices"]


class IndexedSlices:
    """``values[i]`` is row ``indices[i]`` of a tensor of shape ``dense_shape``."""

    def __init__(self, values, indices, dense_shape=None):
        from .tensor import convert_to_tensor
        self._values = values if isinstance(values, Tensor) else convert_to_tensor(values)
        self._indices = indices if isinstance(indices, Tensor) else convert_to_tensor(indices)
        if self._indices._value.dtype.kind not in "iu" or self._indices.ndim != 1:
            raise TypeError(f"IndexedSlices: indices must be a 1-D integer tensor, got "
                            f"{self._indices.dtype.name} of shape {tuple(self._indices.shape)}")
        if self._values.ndim < 1 or self._values.shape[0] != self._indices.shape[0]:
            raise ValueError(f"IndexedSlices: values of shape {tuple(self._values.shape)} need "
                             f"one row per index ({self._indices.shape[0]})")
        if dense_shape is not None and not isinstance(dense_shape, Tensor):
            dense_shape = convert_to_tensor(list(dense_shape) if not hasattr(dense_shape, "ndim")
                                            else dense_shape)
        self._dense_shape = dense_shape

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    device = property(lambda self: self._values.device)

    @property
    def shape(self) -> TensorShape:
        if self._dense_shape is None:
            return TensorShape([None] + list(self._values.shape[1:]))
        return TensorShape([int(d) for d in self._dense_shape.numpy().tolist()])

    def _dense(self) -> Tensor:
        """The dense tensor: rows summed into place (differentiable in ``values``)."""
        from .ops.scatter import unsorted_segment_sum
        if self._dense_shape is None:
            raise ValueError("IndexedSlices: converting to a dense tensor needs dense_shape")
        rows = int(self._dense_shape.numpy().reshape(-1)[0])
        return unsorted_segment_sum(self._values, self._indices, rows)

    def __repr__(self):
        shape = "None" if self._dense_shape is None else self._dense_shape.numpy().tolist()
        return (f"IndexedSlices(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={shape})")

    def __neg__(self):
        from .ops.math import negative
        return IndexedSlices(negative(self._values), self._indices, self._dense_shape)
