"""Loss functions with Keras semantics (``tf.keras.losses``).

    mse = gt.losses.MeanSquaredError()
    loss = mse(y_true, y_pred)                  # a scalar: sum over the batch / batch size

A loss object computes one value per sample (the mean over the last axis for the regression
losses, the cross-entropy over the class axis for the classification ones) and reduces them:
``reduction="sum_over_batch_size"`` (the default; sum divided by the number of per-sample
values), ``"sum"``, or ``"none"``/``None`` (the per-sample values). ``sample_weight``
multiplies the per-sample values before the reduction. ``y_true`` is cast to ``y_pred``'s
dtype. The function forms (``gt.losses.mean_squared_error`` ...) return the per-sample
values. Everything is built from gradtape ops, so losses are differentiable on any device;
the cross-entropies with ``from_logits=True`` use the numerically stable fused ops of
:mod:`gt.nn`.
"""
from __future__ import annotations

import numpy as np

from . import _config
from .backend import device_scope
from .ops import core as _core
from .ops import math as _m
from .ops import reduce as _r
from .ops import shape as _sh
from .tensor import Tensor, convert_to_tensor

__all__ = ["Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError", "Huber",
           "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "mean_squared_error", "mean_absolute_error", "huber", "binary_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy", "mse", "mae", "MSE",
           "MAE", "get", "serialize", "deserialize", "Reduction"]

#: Keras' fuzz factor: probabilities are clipped to [EPSILON, 1 - EPSILON] before a log.
EPSILON = 1e-7


class Reduction:
    """The reduction names a loss accepts."""

    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"
    AUTO = "auto"

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE, cls.AUTO)


def _check_reduction(reduction, who):
    if reduction is None:
        return Reduction.NONE
    if reduction not in Reduction.all():
        raise ValueError(f"{who}: unknown reduction {reduction!r}; known reductions: "
                         f"{list(Reduction.all())} or None")
    return Reduction.SUM_OVER_BATCH_SIZE if reduction == Reduction.AUTO else reduction


# --- conversion -------------------------------------------------------------------------------

def _prediction(y_pred, who) -> Tensor:
    if not isinstance(y_pred, Tensor):
        try:
            y_pred = convert_to_tensor(y_pred)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{who}: cannot convert y_pred ({type(y_pred).__name__}) to a "
                            f"tensor: {exc}") from None
    if y_pred._value.dtype.kind != "f":
        y_pred = _core.cast(y_pred, np.float32)
    return y_pred


def _target_like(y_true, y_pred: Tensor, who, dtype=None) -> Tensor:
    """``y_true`` as a tensor of ``dtype`` (default: ``y_pred``'s) on ``y_pred``'s device."""
    dt = y_pred._value.dtype if dtype is None else np.dtype(dtype)
    if isinstance(y_true, Tensor):
        if y_true._device is not y_pred._device:
            raise ValueError(f"{who}: y_true is on {y_true._device}, y_pred on "
                             f"{y_pred._device}")
        return y_true if y_true._value.dtype == dt else _core.cast(y_true, dt)
    dev = y_pred._device
    if dev.is_native(y_true) and not isinstance(y_true, np.ndarray):
        # a raw array of y_pred's device: placed as it is (np.asarray would read it)
        if y_true.dtype.kind not in "biuf":
            raise TypeError(f"{who}: y_true must be numeric, got dtype {y_true.dtype}")
        return Tensor(dev.asarray(y_true, dtype=dt), dev)
    with device_scope(dev):
        try:
            host = np.asarray(y_true)
        except Exception as exc:  # noqa: BLE001 - report the conversion failure by name
            raise TypeError(f"{who}: cannot convert y_true ({type(y_true).__name__}) to a "
                            f"tensor: {exc}") from None
        if host.dtype.kind not in "biuf":
            raise TypeError(f"{who}: y_true must be numeric, got dtype {host.dtype}")
        return convert_to_tensor(host.astype(dt, copy=False))


def _match_ranks(y_true: Tensor, y_pred: Tensor, who):
    """Keras' squeeze-or-expand: drop or add a trailing axis of size 1 so ranks agree, then
    require shapes that broadcast to ``y_pred``'s."""
    rt, rp = y_true._value.ndim, y_pred._value.ndim
    if rt == rp + 1 and y_true._value.shape[-1] == 1:
        y_true = _sh.squeeze(y_true, axis=-1)
    elif rp == rt + 1 and y_pred._value.shape[-1] == 1:
        y_pred = _sh.squeeze(y_pred, axis=-1)
    st, sp = tuple(y_true._value.shape), tuple(y_pred._value.shape)
    try:
        np.broadcast_shapes(st, sp)
    except ValueError:
        raise ValueError(f"{who}: y_true of shape {st} and y_pred of shape {sp} are "
                         "incompatible") from None
    return y_true, y_pred


def _reduce(values: Tensor, sample_weight, reduction, who) -> Tensor:
    if sample_weight is not None:
        sw = _target_like(sample_weight, values, who)
        rw, rv = sw._value.ndim, values._value.ndim
        if rw == rv + 1 and sw._value.shape[-1] == 1:
            sw = _sh.squeeze(sw, axis=-1)
        while sw._value.ndim < rv and tuple(sw._value.shape) == tuple(values._value.shape[:sw._value.ndim]):
            sw = _sh.expand_dims(sw, -1)
        try:
            np.broadcast_shapes(tuple(sw._value.shape), tuple(values._value.shape))
        except ValueError:
            raise ValueError(f"{who}: sample_weight of shape {tuple(sw._value.shape)} does not "
                             f"fit the per-sample losses of shape "
                             f"{tuple(values._value.shape)}") from None
        values = values * sw
    if reduction == Reduction.NONE:
        return values
    total = _r.reduce_sum(values)
    if reduction == Reduction.SUM:
        return total
    n = int(values._value.size)
    return total / n if n else total


# --- per-sample functions -----------------------------------------------------------------------

def mean_squared_error(y_true, y_pred) -> Tensor:
    """``mean(square(y_pred - y_true), axis=-1)``."""
    y_pred = _prediction(y_pred, "mean_squared_error")
    y_true = _target_like(y_true, y_pred, "mean_squared_error")
    y_true, y_pred = _match_ranks(y_true, y_pred, "mean_squared_error")
    return _r.reduce_mean(_m.squared_difference(y_pred, y_true), axis=-1)


def mean_absolute_error(y_true, y_pred) -> Tensor:
    """``mean(abs(y_pred - y_true), axis=-1)``."""
    y_pred = _prediction(y_pred, "mean_absolute_error")
    y_true = _target_like(y_true, y_pred, "mean_absolute_error")
    y_true, y_pred = _match_ranks(y_true, y_pred, "mean_absolute_error")
    return _r.reduce_mean(_m.abs(y_pred - y_true), axis=-1)


def huber(y_true, y_pred, delta=1.0) -> Tensor:
    """Mean over the last axis of ``0.5 e^2`` where ``|e| <= delta`` and
    ``delta |e| - 0.5 delta^2`` elsewhere, ``e = y_pred - y_true``."""
    y_pred = _prediction(y_pred, "huber")
    y_true = _target_like(y_true, y_pred, "huber")
    y_true, y_pred = _match_ranks(y_true, y_pred, "huber")
    delta = float(delta)
    error = y_pred - y_true
    abs_error = _m.abs(error)
    quadratic = 0.5 * _m.square(error)
    linear = delta * abs_error - 0.5 * delta * delta
    return _r.reduce_mean(_m.where(abs_error <= delta, quadratic, linear), axis=-1)


def _nn():
    from . import nn
    return nn


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0,
                        axis=-1) -> Tensor:
    """Mean over ``axis`` of the binary cross-entropy; ``y_pred`` holds probabilities
    (clipped to ``[1e-7, 1 - 1e-7]``) or, with ``from_logits``, logits."""
    who = "binary_crossentropy"
    y_pred = _prediction(y_pred, who)
    y_true = _target_like(y_true, y_pred, who)
    y_true, y_pred = _match_ranks(y_true, y_pred, who)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if tuple(y_true._value.shape) != tuple(y_pred._value.shape):
        y_true = _core.broadcast_to(y_true, tuple(y_pred._value.shape))
    if from_logits:
        per_element = _nn().sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = _m.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        per_element = -(y_true * _m.log(p) + (1.0 - y_true) * _m.log(1.0 - p))
    return _r.reduce_mean(per_element, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0,
                             axis=-1) -> Tensor:
    """Cross-entropy between one-hot (or soft) ``y_true`` and ``y_pred`` along ``axis``;
    probabilities are renormalised and clipped to ``[1e-7, 1 - 1e-7]`` as Keras does."""
    who = "categorical_crossentropy"
    y_pred = _prediction(y_pred, who)
    y_true = _target_like(y_true, y_pred, who)
    if tuple(y_true._value.shape) != tuple(y_pred._value.shape):
        raise ValueError(f"{who}: y_true of shape {tuple(y_true._value.shape)} and y_pred of "
                         f"shape {tuple(y_pred._value.shape)} must have the same shape (one-hot "
                         "labels); for integer labels use sparse_categorical_crossentropy")
    if label_smoothing:
        num_classes = y_true._value.shape[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    if from_logits:
        return _nn().softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    p = y_pred / _r.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = _m.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    return -_r.reduce_sum(y_true * _m.log(p), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1) -> Tensor:
    """Cross-entropy between integer class ids ``y_true`` and ``y_pred`` (probabilities, or
    logits with ``from_logits``) over the last axis."""
    who = "sparse_categorical_crossentropy"
    y_pred = _prediction(y_pred, who)
    nd = y_pred._value.ndim
    if axis not in (-1, nd - 1):
        raise ValueError(f"{who}: only the last axis is supported for the classes, got "
                         f"axis={axis} for y_pred of rank {nd}")
    if nd < 1:
        raise ValueError(f"{who}: y_pred must have a class axis, got a scalar")
    if isinstance(y_true, Tensor) and y_true._value.dtype.kind == "f":
        y_true = _core.cast(y_true, np.int64)
    y_true = _target_like(y_true, y_pred, who,
                          dtype=y_true._value.dtype if isinstance(y_true, Tensor) else np.int64)
    if y_true._value.ndim == nd and y_true._value.shape[-1] == 1:
        y_true = _sh.squeeze(y_true, axis=-1)
    if tuple(y_true._value.shape) != tuple(y_pred._value.shape[:-1]):
        raise ValueError(f"{who}: labels of shape {tuple(y_true._value.shape)} do not fit "
                         f"y_pred of shape {tuple(y_pred._value.shape)}; expected labels of "
                         f"shape {tuple(y_pred._value.shape[:-1])}")
    logits = y_pred if from_logits else _m.log(_m.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON))
    return _nn().sparse_softmax_cross_entropy_with_logits(labels=y_true, logits=logits)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


# --- loss objects ----------------------------------------------------------------------------

class Loss(_config.Configurable):
    """Base class: ``loss(y_true, y_pred, sample_weight=None)`` returns the reduced loss.

    Subclasses implement :meth:`call` returning per-sample values.
    """

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None):
        self.name = name or _snake(type(self).__name__)
        self.reduction = _check_reduction(reduction, type(self).__name__)
        self.dtype = dtype

    def call(self, y_true, y_pred) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def __call__(self, y_true, y_pred, sample_weight=None) -> Tensor:
        who = type(self).__name__
        y_pred = _prediction(y_pred, who)
        if self.dtype is not None and y_pred._value.dtype != np.dtype(self.dtype):
            y_pred = _core.cast(y_pred, self.dtype)
        values = self.call(y_true, y_pred)
        return _reduce(values, sample_weight, self.reduction, who)

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}

    def __repr__(self):
        return f"<gt.losses.{type(self).__name__} reduction={self.reduction!r}>"


class LossFunctionWrapper(Loss):
    """A loss object around a per-sample function ``fn(y_true, y_pred, **kwargs)``."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(reduction=reduction, name=name or getattr(fn, "__name__", None),
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


class MeanSquaredError(LossFunctionWrapper):
    """Mean of squared errors over the last axis, then reduced over the batch."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class MeanAbsoluteError(LossFunctionWrapper):
    """Mean of absolute errors over the last axis, then reduced over the batch."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class Huber(LossFunctionWrapper):
    """Huber loss: quadratic for errors up to ``delta``, linear beyond."""

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss",
                 dtype=None):
        if delta <= 0:
            raise ValueError(f"Huber: delta must be > 0, got {delta}")
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=float(delta))


class BinaryCrossentropy(LossFunctionWrapper):
    """Binary cross-entropy averaged over the last axis (``from_logits``,
    ``label_smoothing``)."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="binary_crossentropy", dtype=None):
        _check_smoothing(label_smoothing, "BinaryCrossentropy")
        super().__init__(binary_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=bool(from_logits), label_smoothing=float(label_smoothing),
                         axis=axis)
        self.from_logits = bool(from_logits)


class CategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy for one-hot labels (``from_logits``, ``label_smoothing``)."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy", dtype=None):
        _check_smoothing(label_smoothing, "CategoricalCrossentropy")
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=bool(from_logits), label_smoothing=float(label_smoothing),
                         axis=axis)
        self.from_logits = bool(from_logits)


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy for integer class labels (``from_logits``)."""

    def __init__(self, from_logits=False, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=bool(from_logits))
        self.from_logits = bool(from_logits)


def _check_smoothing(value, who):
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{who}: label_smoothing must be in [0, 1], got {value}")


def _snake(name):
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


# --- by name ----------------------------------------------------------------------------------

_CLASSES = {c.__name__: c for c in (MeanSquaredError, MeanAbsoluteError, Huber,
                                    BinaryCrossentropy, CategoricalCrossentropy,
                                    SparseCategoricalCrossentropy)}
_FUNCTIONS = {"mean_squared_error": mean_squared_error, "mse": mean_squared_error,
              "MSE": mean_squared_error, "mean_absolute_error": mean_absolute_error,
              "mae": mean_absolute_error, "MAE": mean_absolute_error, "huber": huber,
              "huber_loss": huber, "binary_crossentropy": binary_crossentropy,
              "categorical_crossentropy": categorical_crossentropy,
              "sparse_categorical_crossentropy": sparse_categorical_crossentropy}


def known_names() -> list:
    """Every name :func:`get` accepts."""
    return sorted(_CLASSES) + sorted(_FUNCTIONS)


def get(identifier):
    """A loss from a name (a class name gives a new object, a function name the function),
    a config dict, or a callable (returned as is)."""
    if isinstance(identifier, str):
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        if identifier in _FUNCTIONS:
            return _FUNCTIONS[identifier]
        raise ValueError(f"unknown loss {identifier!r}; known losses: {known_names()}")
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise TypeError(f"cannot interpret {identifier!r} as a loss")


serialize = _config.serialize


def deserialize(config: dict) -> Loss:
    return _config.deserialize(config, _CLASSES, "loss", sorted(_CLASSES), fold_case=False)
