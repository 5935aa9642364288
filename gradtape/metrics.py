"""``gt.keras.metrics``: running metrics for custom training loops, as ``tf.keras.metrics``.

    train_loss = gt.keras.metrics.Mean(name="train_loss")
    train_acc = gt.keras.metrics.SparseCategoricalAccuracy()
    ...
    train_loss(loss)                      # update_state, then result()
    train_acc(labels, logits)
    print(float(train_loss.result()), float(train_acc.result()))
    train_loss.reset_state()

A metric's state is a few non-trainable Variables on the device current when it was made;
``update_state`` adds to them with device ops (nothing is read on the host, so a captured
step may update metrics); ``result()`` is a tensor.
"""
from __future__ import annotations

import numpy as np

from . import losses as _losses
from ._config import Configurable
from .dtypes import as_dtype
from .layers import _snake_case
from .ops.core import broadcast_to, cast, zeros_like
from .ops.math import equal, greater
from .ops.reduce import argmax, reduce_mean, reduce_sum
from .ops.shape import expand_dims, size, squeeze
from .tensor import Tensor, Variable, convert_to_tensor

__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
           "CategoricalAccuracy", "SparseCategoricalAccuracy", "MeanSquaredError",
           "MeanAbsoluteError", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "BinaryCrossentropy", "accuracy", "binary_accuracy", "categorical_accuracy",
           "sparse_categorical_accuracy", "get"]


def _tensor(x, what, metric):
    if isinstance(x, Tensor):
        return x
    try:
        return convert_to_tensor(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{metric}: {what} must be a tensor or array, got "
                        f"{type(x).__name__} ({exc})") from None


class Metric(Configurable):
    """Base class: state Variables made with :meth:`add_weight`, ``update_state``,
    ``result``, ``reset_state``; calling a metric updates it and returns its result."""

    def __init__(self, name=None, dtype=None):
        self.name = name or _snake_case(type(self).__name__)
        self._dtype = np.dtype(as_dtype(dtype or "float32").np)
        if self._dtype.kind != "f":
            raise TypeError(f"{self.name}: a metric's dtype must be a float dtype, got "
                            f"{self._dtype.name}")
        self._weights = []

    @property
    def dtype(self):
        return as_dtype(self._dtype)

    def add_weight(self, name, shape=(), initializer="zeros", dtype=None) -> Variable:
        """A non-trainable state Variable of zeros on the current device."""
        if initializer != "zeros":
            raise ValueError(f"{self.name}: metric state starts at zeros, got initializer "
                             f"{initializer!r}")
        dt = self._dtype if dtype is None else np.dtype(as_dtype(dtype).np)
        v = Variable(np.zeros(tuple(shape), dt), trainable=False, name=f"{self.name}/{name}")
        self._weights.append(v)
        return v

    @property
    def variables(self):
        return list(self._weights)

    weights = variables

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define update_state")

    def result(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define result")

    def reset_state(self) -> None:
        """Every state Variable back to zero."""
        for v in self._weights:
            v.assign(zeros_like(v))

    reset_states = reset_state

    def __call__(self, *args, **kwargs) -> Tensor:
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self._dtype.name}

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"


def _weighted(values, sample_weight, metric):
    """``(values, weights)`` of one shape, as Keras weighs them: a trailing axis of 1 on the
    weights is squeezed, a missing trailing axis added; weights that still do not broadcast
    but match the leading axes weigh the values' mean over the other axes."""
    w = cast(_tensor(sample_weight, "sample_weight", metric), values.dtype)
    given = tuple(w.shape)
    if w.rank == values.rank + 1 and w.shape[-1] == 1:
        w = squeeze(w, -1)
    elif w.rank == values.rank - 1 and values.rank > 0:
        w = expand_dims(w, -1)
    try:
        return values, broadcast_to(w, values.shape)
    except (ValueError, TypeError) as exc:
        if w.rank < values.rank and tuple(w.shape) == tuple(values.shape[:w.rank]):
            values = reduce_mean(values, axis=list(range(w.rank, values.rank)))
            return values, w
        raise ValueError(f"{metric}: sample_weight of shape {given} does not broadcast to "
                         f"the values' shape {tuple(values.shape)} ({exc})") from None


class Sum(Metric):
    """The (weighted) sum of every value seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_weight("total")

    def update_state(self, values, sample_weight=None) -> None:
        values = cast(_tensor(values, "values", self.name), self._dtype)
        if sample_weight is not None:
            values, w = _weighted(values, sample_weight, self.name)
            values = values * w
        self.total.assign_add(reduce_sum(values))

    def result(self) -> Tensor:
        return self.total + 0.0                # (a snapshot, not the Variable's buffer)


class Mean(Metric):
    """The (weighted) mean of every value seen: total / count, 0 before any value."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_weight("total")
        self.count = self.add_weight("count")

    def update_state(self, values, sample_weight=None) -> None:
        values = cast(_tensor(values, "values", self.name), self._dtype)
        if sample_weight is None:
            count = cast(size(values), self._dtype)
        else:
            values, w = _weighted(values, sample_weight, self.name)
            values = values * w
            count = reduce_sum(w)
        self.total.assign_add(reduce_sum(values))
        self.count.assign_add(count)

    def result(self) -> Tensor:
        from .math import divide_no_nan
        return divide_no_nan(self.total, self.count)


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)`` over every sample seen."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name or getattr(fn, "__name__", "mean_metric_wrapper"), dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        # as Keras: both cast to the metric's dtype, and a trailing axis of 1 that one of them
        # has beyond the other's rank squeezed ((N,) labels beside (N, 1) predictions)
        y_true = cast(_tensor(y_true, "y_true", self.name), self._dtype)
        y_pred = cast(_tensor(y_pred, "y_pred", self.name), self._dtype)
        if y_pred.rank == y_true.rank + 1 and y_pred.shape[-1] == 1:
            y_pred = squeeze(y_pred, -1)
        elif y_true.rank == y_pred.rank + 1 and y_true.shape[-1] == 1:
            y_true = squeeze(y_true, -1)
        super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight)

    def get_config(self) -> dict:
        return {**super().get_config(), **self._fn_kwargs}


# --- the per-sample functions ---------------------------------------------------------------

def accuracy(y_true, y_pred) -> Tensor:
    """1.0 where ``y_pred`` equals ``y_true`` (cast to its dtype), else 0.0."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(f"accuracy: y_true of shape {tuple(y_true.shape)} and y_pred of shape "
                         f"{tuple(y_pred.shape)} differ")
    if y_pred.dtype != y_true.dtype:
        y_pred = cast(y_pred, y_true.dtype)
    return cast(equal(y_true, y_pred), "float32")


def binary_accuracy(y_true, y_pred, threshold=0.5) -> Tensor:
    """The fraction, over the last axis, of ``y_pred > threshold`` equal to ``y_true``."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    predicted = cast(greater(y_pred, threshold), y_true.dtype)
    return reduce_mean(cast(equal(y_true, predicted), "float32"), axis=-1)


def categorical_accuracy(y_true, y_pred) -> Tensor:
    """1.0 where the one-hot ``y_true`` and ``y_pred`` have their maximum at the same class."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    return cast(equal(argmax(y_true, axis=-1), argmax(y_pred, axis=-1)), "float32")


def sparse_categorical_accuracy(y_true, y_pred) -> Tensor:
    """1.0 where the class id ``y_true`` is ``y_pred``'s most likely class (a trailing axis
    of 1 on ``y_true`` is squeezed)."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    if y_true.rank == y_pred.rank and y_true.rank > 0 and y_true.shape[-1] == 1:
        y_true = squeeze(y_true, -1)
    predicted = argmax(y_pred, axis=-1)
    if y_true.dtype.is_floating:
        predicted = cast(predicted, y_true.dtype)
    elif predicted.dtype != y_true.dtype:
        y_true = cast(y_true, predicted.dtype)
    return cast(equal(y_true, predicted), "float32")


# --- the metrics --------------------------------------------------------------------------------

class Accuracy(MeanMetricWrapper):
    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name, dtype)


class BinaryAccuracy(MeanMetricWrapper):
    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name, dtype, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name, dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name, dtype)


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(_losses.mean_squared_error, name, dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(_losses.mean_absolute_error, name, dtype)


class CategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0):
        super().__init__(_losses.categorical_crossentropy, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False):
        super().__init__(_losses.sparse_categorical_crossentropy, name, dtype,
                         from_logits=from_logits)


class BinaryCrossentropy(MeanMetricWrapper):
    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0):
        super().__init__(_losses.binary_crossentropy, name, dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


_CLASSES = {cls.__name__: cls for cls in (
    Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
    MeanSquaredError, MeanAbsoluteError, CategoricalCrossentropy, SparseCategoricalCrossentropy,
    BinaryCrossentropy)}
_FUNCTIONS = {"accuracy": accuracy, "acc": accuracy, "binary_accuracy": binary_accuracy,
              "categorical_accuracy": categorical_accuracy,
              "sparse_categorical_accuracy": sparse_categorical_accuracy,
              "mean_squared_error": _losses.mean_squared_error,
              "mse": _losses.mean_squared_error,
              "mean_absolute_error": _losses.mean_absolute_error,
              "mae": _losses.mean_absolute_error,
              "categorical_crossentropy": _losses.categorical_crossentropy,
              "sparse_categorical_crossentropy": _losses.sparse_categorical_crossentropy,
              "binary_crossentropy": _losses.binary_crossentropy}


def get(identifier):
    """As ``tf.keras.metrics.get``: a class name (``"Accuracy"``) gives a new metric, a
    function name (``"accuracy"``, ``"mse"``) the per-sample function; a metric or a
    callable is returned as it is."""
    if isinstance(identifier, Metric) or callable(identifier) and \
            not isinstance(identifier, type):
        return identifier
    if isinstance(identifier, str):
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        if identifier in _FUNCTIONS:
            return _FUNCTIONS[identifier]
        raise ValueError(f"metrics.get: unknown metric {identifier!r} (known: "
                         f"{', '.join(sorted(_CLASSES) + sorted(_FUNCTIONS))})")
    raise TypeError(f"metrics.get: expected a metric name or a Metric, got "
                    f"{type(identifier).__name__}")
