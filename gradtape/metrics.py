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

import re

import numpy as np

from . import losses as _losses
from ._config import Configurable
from .dtypes import as_dtype
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


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


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
        self.name = name or _snake(type(self).__name__)
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


def _weights_like(values, sample_weight, metric):
    """``sample_weight`` cast to ``values``' dtype and broadcast to its shape (Keras' rules: a
    trailing axis of 1 is squeezed, a missing trailing axis added)."""
    w = cast(_tensor(sample_weight, "sample_weight", metric), values.dtype)
    if w.rank == values.rank + 1 and w.shape[-1] == 1:
        w = squeeze(w, -1)
    elif w.rank == values.rank - 1 and values.rank > 0:
        w = expand_dims(w, -1)
    try:
        return broadcast_to(w, values.shape)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{metric}: sample_weight of shape {tuple(w.shape)} does not "
                         f"broadcast to the values' shape {tuple(values.shape)} ({exc})") \
            from None


class Sum(Metric):
    """The (weighted) sum of every value seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name, dtype)
        self.total = self.add_weight("total")

    def update_state(self, values, sample_weight=None) -> None:
        values = cast(_tensor(values, "values", self.name), self._dtype)
        if sample_weight is not None:
            values = values * _weights_like(values, sample_weight, self.name)
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
            w = _weights_like(values, sample_weight, self.name)
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
        y_true = _tensor(y_true, "y_true", self.name)
        y_pred = _tensor(y_pred, "y_pred", self.name)
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


_BY_NAME = {"accuracy": Accuracy, "acc": Accuracy, "binary_accuracy": BinaryAccuracy,
            "categorical_accuracy": CategoricalAccuracy,
            "sparse_categorical_accuracy": SparseCategoricalAccuracy,
            "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
            "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError,
            "categorical_crossentropy": CategoricalCrossentropy,
            "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
            "binary_crossentropy": BinaryCrossentropy, "mean": Mean, "sum": Sum}


def get(identifier) -> Metric:
    """A metric from its name (``"accuracy"``, ``"mse"`` ...) or the metric itself."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        key = _snake(identifier) if identifier[:1].isupper() else identifier
        cls = _BY_NAME.get(key)
        if cls is None:
            raise ValueError(f"metrics.get: unknown metric {identifier!r} (known: "
                             f"{', '.join(sorted(_BY_NAME))})")
        return cls()
    raise TypeError(f"metrics.get: expected a metric name or a Metric, got "
                    f"{type(identifier).__name__}")
