"""Loss functions with Keras semantics (``tf.keras.losses``).

    mse = gt.losses.MeanSquaredError()
    loss = mse(y_true, y_pred)                  # a scalar: sum over the batch / batch size

A loss object computes one value per sample (the mean over the last axis for the regression
losses, the cross-entropy over the class axis for the classification ones) and reduces them:
``reduction="sum_over_batch_size"`` (the default; sum divided by the number of per-sample
values; ``"mean"`` is the same), ``"sum"``, ``"mean_with_sample_weight"`` (sum divided by
the sum of the sample weights) or ``"none"``/``None`` (the per-sample values).
``sample_weight`` multiplies the per-sample values before the reduction; as in Keras 3, a
trailing axis of 1 is squeezed, or added to rank-1 weights, and the product broadcasts as any
product does (so ``(N,)`` weights of ``(N, T)`` per-sample values weigh the last axis, and
need ``N == T``). ``y_true`` and ``y_pred`` ranks are matched the same way: ``(N,)`` labels
beside ``(N, 1)`` predictions give one value per sample. ``y_true`` is cast to ``y_pred``'s
dtype. As in Keras 3, a loss object applies a Keras mask on ``y_pred`` (the output of
``Embedding(mask_zero=True)``, ``Masking`` ...): the mean runs over the unmasked entries and
the per-sample values are 0 at the masked ones. The function forms
(``gt.losses.mean_squared_error`` ...) return the per-sample values, unmasked. Everything
is built from gradtape ops, so losses are differentiable on any device; the cross-entropies
with ``from_logits=True`` use the numerically stable fused ops of :mod:`gt.nn`.
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

__all__ = ["Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "CosineSimilarity",
           "Huber", "LogCosh", "Hinge", "SquaredHinge", "CategoricalHinge", "KLDivergence",
           "Poisson", "BinaryCrossentropy", "BinaryFocalCrossentropy", "CategoricalCrossentropy",
           "CategoricalFocalCrossentropy", "SparseCategoricalCrossentropy",
           "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
           "mean_squared_logarithmic_error", "cosine_similarity", "huber", "log_cosh",
           "logcosh", "hinge", "squared_hinge", "categorical_hinge", "kl_divergence", "kld",
           "KLD", "kullback_leibler_divergence", "poisson", "binary_crossentropy",
           "binary_focal_crossentropy", "categorical_crossentropy",
           "categorical_focal_crossentropy", "sparse_categorical_crossentropy", "mse", "mae",
           "mape", "msle", "MSE", "MAE", "MAPE", "MSLE", "get", "serialize", "deserialize",
           "Reduction", "CTC", "ctc", "Dice", "Tversky", "Circle",
           "CategoricalGeneralizedCrossEntropy", "dice", "tversky", "circle",
           "categorical_generalized_cross_entropy"]

#: Keras' fuzz factor: probabilities are clipped to [EPSILON, 1 - EPSILON] before a log.
EPSILON = 1e-7


class Reduction:
    """The reduction names a loss accepts."""

    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"
    MEAN = "mean"
    MEAN_WITH_SAMPLE_WEIGHT = "mean_with_sample_weight"
    AUTO = "auto"

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE, cls.MEAN,
                cls.MEAN_WITH_SAMPLE_WEIGHT, cls.AUTO)


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


def _squeeze_or_expand(x1: Tensor, x2: Tensor, expand_rank_1=True):
    """Keras 3's ``squeeze_or_expand_to_same_rank``: where the ranks differ by one and the
    higher-rank tensor ends in an axis of 1, that axis is dropped, or, when the other tensor
    has rank 1 (``expand_rank_1``), the other gets a trailing axis of 1 (so ``(N,)`` labels
    beside ``(N, 1)`` predictions give one value per sample)."""
    r1, r2 = x1._value.ndim, x2._value.ndim
    if r1 == r2 + 1 and x1._value.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = _sh.expand_dims(x2, -1)
        else:
            x1 = _sh.squeeze(x1, axis=-1)
    elif r2 == r1 + 1 and x2._value.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = _sh.expand_dims(x1, -1)
        else:
            x2 = _sh.squeeze(x2, axis=-1)
    return x1, x2


def _match_ranks(y_true: Tensor, y_pred: Tensor, who):
    """:func:`_squeeze_or_expand`, then require shapes that broadcast together."""
    y_true, y_pred = _squeeze_or_expand(y_true, y_pred)
    st, sp = tuple(y_true._value.shape), tuple(y_pred._value.shape)
    try:
        np.broadcast_shapes(st, sp)
    except ValueError:
        raise ValueError(f"{who}: y_true of shape {st} and y_pred of shape {sp} are "
                         "incompatible") from None
    return y_true, y_pred


def _apply_mask(sample_weight, mask, reduction, dtype, who):
    """Keras 3's ``apply_mask``: a Keras mask merged into the sample weights. For the mean
    reductions (``"sum_over_batch_size"``, ``"mean"``) the kept entries weigh
    ``size / kept`` and the masked ones 0 (so the mean runs over the kept entries; 0 when
    nothing is kept); for the others the mask is a 0/1 weight. A given ``sample_weight``
    (a tensor of ``dtype``) is squeezed or expanded to the mask's rank and multiplied by it."""
    m = _core.cast(mask, dtype)
    if reduction in (Reduction.SUM_OVER_BATCH_SIZE, Reduction.MEAN):
        kept = _r.reduce_sum(m)
        m = m * _m.divide_no_nan(_core.ones_like(kept) * float(m._value.size), kept)
    if sample_weight is None:
        return m
    given = tuple(sample_weight._value.shape)
    m, sw = _squeeze_or_expand(m, sample_weight)
    try:
        np.broadcast_shapes(tuple(sw._value.shape), tuple(m._value.shape))
    except ValueError:
        raise ValueError(f"{who}: sample_weight of shape {given} does not fit the Keras mask "
                         f"of shape {tuple(mask._value.shape)}") from None
    return sw * m


def _reduce(values: Tensor, sample_weight, reduction, who, mask=None) -> Tensor:
    """Keras 3's ``reduce_weighted_values``: a mask (of the prediction or of the per-sample
    values) becomes a weight (:func:`_apply_mask`); the weights are squeezed or expanded to
    the values' rank and multiply them (broadcasting as any product does); then the
    reduction."""
    if mask is not None:
        sw = None if sample_weight is None else _target_like(sample_weight, values, who)
        sample_weight = _apply_mask(sw, mask, reduction, values._value.dtype, who)
    if sample_weight is not None:
        sw = _target_like(sample_weight, values, who)
        given = tuple(sw._value.shape)
        values, sw = _squeeze_or_expand(values, sw)
        try:
            np.broadcast_shapes(tuple(sw._value.shape), tuple(values._value.shape))
        except ValueError:
            raise ValueError(f"{who}: sample_weight of shape {given} does not fit the "
                             f"per-sample losses of shape {tuple(values._value.shape)}"
                             ) from None
        values = values * sw
        sample_weight = sw
    if reduction == Reduction.NONE or values._value.ndim == 0 or \
            tuple(values._value.shape) == (0,):
        return values
    total = _r.reduce_sum(values)
    if reduction == Reduction.SUM:
        return total
    if reduction == Reduction.MEAN_WITH_SAMPLE_WEIGHT and sample_weight is not None:
        return _m.divide_no_nan(total, _r.reduce_sum(sample_weight))
    n = int(values._value.size)
    return total / n if n else total


# --- per-sample functions -----------------------------------------------------------------------

def _pair(y_true, y_pred, who):
    """``(y_true, y_pred)`` as tensors of ``y_pred``'s float dtype, ranks matched as Keras."""
    y_pred = _prediction(y_pred, who)
    y_true = _target_like(y_true, y_pred, who)
    return _match_ranks(y_true, y_pred, who)


def mean_squared_error(y_true, y_pred) -> Tensor:
    """``mean(square(y_pred - y_true), axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred, "mean_squared_error")
    return _r.reduce_mean(_m.squared_difference(y_pred, y_true), axis=-1)


def mean_absolute_error(y_true, y_pred) -> Tensor:
    """``mean(abs(y_pred - y_true), axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred, "mean_absolute_error")
    return _r.reduce_mean(_m.abs(y_pred - y_true), axis=-1)


def mean_absolute_percentage_error(y_true, y_pred) -> Tensor:
    """``100 * mean(abs((y_true - y_pred) / maximum(abs(y_true), 1e-7)), axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred, "mean_absolute_percentage_error")
    diff = _m.abs((y_true - y_pred) / _m.maximum(_m.abs(y_true), EPSILON))
    return 100.0 * _r.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred) -> Tensor:
    """``mean(square(log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1)), axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred, "mean_squared_logarithmic_error")
    first = _m.log(_m.maximum(y_pred, EPSILON) + 1.0)
    second = _m.log(_m.maximum(y_true, EPSILON) + 1.0)
    return _r.reduce_mean(_m.square(first - second), axis=-1)


def huber(y_true, y_pred, delta=1.0) -> Tensor:
    """Mean over the last axis of ``0.5 e^2`` where ``|e| <= delta`` and
    ``delta |e| - 0.5 delta^2`` elsewhere, ``e = y_pred - y_true``."""
    y_true, y_pred = _pair(y_true, y_pred, "huber")
    delta = float(delta)
    error = y_pred - y_true
    abs_error = _m.abs(error)
    quadratic = 0.5 * _m.square(error)
    linear = delta * abs_error - 0.5 * delta * delta
    return _r.reduce_mean(_m.where(abs_error <= delta, quadratic, linear), axis=-1)


def log_cosh(y_true, y_pred) -> Tensor:
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, computed as
    ``x + softplus(-2 x) - log(2)`` (no overflow for large errors)."""
    y_true, y_pred = _pair(y_true, y_pred, "log_cosh")
    x = y_pred - y_true
    return _r.reduce_mean(x + _m.softplus(x * -2.0) - float(np.log(2.0)), axis=-1)


def _l2_normalize(x: Tensor, axis) -> Tensor:
    """Keras' ``normalize``: ``x * minimum(rsqrt(sum(x^2)), 1 / 1e-7)``."""
    inv = _m.rsqrt(_r.reduce_sum(_m.square(x), axis=axis, keepdims=True))
    return x * _m.minimum(inv, 1.0 / EPSILON)


def cosine_similarity(y_true, y_pred, axis=-1) -> Tensor:
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)``: -1 for vectors of one
    direction, 0 where either is zero."""
    y_true, y_pred = _pair(y_true, y_pred, "cosine_similarity")
    return -_r.reduce_sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)


def kl_divergence(y_true, y_pred) -> Tensor:
    """``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to ``[1e-7, 1]``."""
    y_true, y_pred = _pair(y_true, y_pred, "kl_divergence")
    y_true = _m.clip_by_value(y_true, EPSILON, 1.0)
    y_pred = _m.clip_by_value(y_pred, EPSILON, 1.0)
    return _r.reduce_sum(y_true * _m.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred) -> Tensor:
    """``mean(y_pred - y_true * log(y_pred + 1e-7), axis=-1)``."""
    y_true, y_pred = _pair(y_true, y_pred, "poisson")
    return _r.reduce_mean(y_pred - y_true * _m.log(y_pred + EPSILON), axis=-1)


def _hinge_labels(y_true: Tensor) -> Tensor:
    """Labels that are all 0 or 1 become -1 or 1 (decided on the device, no host read)."""
    binary = _r.reduce_all(_m.logical_or(_m.equal(y_true, 0.0), _m.equal(y_true, 1.0)))
    return _m.where(binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred) -> Tensor:
    """``mean(maximum(1 - y_true * y_pred, 0), axis=-1)``; 0/1 labels become -1/1."""
    y_true, y_pred = _pair(y_true, y_pred, "hinge")
    y_true = _hinge_labels(y_true)
    return _r.reduce_mean(_m.maximum(1.0 - y_true * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred) -> Tensor:
    """``mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)``; 0/1 labels become -1/1."""
    y_true, y_pred = _pair(y_true, y_pred, "squared_hinge")
    y_true = _hinge_labels(y_true)
    return _r.reduce_mean(_m.square(_m.maximum(1.0 - y_true * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred) -> Tensor:
    """``maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` over the last
    axis."""
    y_true, y_pred = _pair(y_true, y_pred, "categorical_hinge")
    pos = _r.reduce_sum(y_true * y_pred, axis=-1)
    neg = _r.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return _m.maximum(neg - pos + 1.0, 0.0)


def _nn():
    from . import nn
    return nn


def _bce_elements(y_true, y_pred, from_logits):
    if from_logits:
        return _nn().sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    p = _m.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
    return -(y_true * _m.log(p) + (1.0 - y_true) * _m.log(1.0 - p))


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0,
                        axis=-1) -> Tensor:
    """Mean over ``axis`` of the binary cross-entropy; ``y_pred`` holds probabilities
    (clipped to ``[1e-7, 1 - 1e-7]``) or, with ``from_logits``, logits."""
    who = "binary_crossentropy"
    y_true, y_pred = _pair(y_true, y_pred, who)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if tuple(y_true._value.shape) != tuple(y_pred._value.shape):
        y_true = _core.broadcast_to(y_true, tuple(y_pred._value.shape))
    return _r.reduce_mean(_bce_elements(y_true, y_pred, from_logits), axis=axis)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False, label_smoothing=0.0,
                              axis=-1) -> Tensor:
    """The binary cross-entropy times ``(1 - p_t) ** gamma`` (``p_t`` the probability given
    to the true class), and with ``apply_class_balancing`` times ``alpha`` for class 1 and
    ``1 - alpha`` for class 0; the mean over ``axis``."""
    who = "binary_focal_crossentropy"
    y_true, y_pred = _pair(y_true, y_pred, who)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if tuple(y_true._value.shape) != tuple(y_pred._value.shape):
        y_true = _core.broadcast_to(y_true, tuple(y_pred._value.shape))
    if from_logits:
        y_pred = _m.sigmoid(y_pred)
    bce = _bce_elements(y_true, y_pred, False)
    p_t = y_true * y_pred + (1.0 - y_true) * (1.0 - y_pred)
    focal = _m.pow(1.0 - p_t, float(gamma)) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return _r.reduce_mean(focal, axis=axis)


def _smooth_categorical(y_true, label_smoothing, axis):
    if label_smoothing:
        num_classes = y_true._value.shape[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    return y_true


def _same_shape(y_true, y_pred, who):
    if tuple(y_true._value.shape) != tuple(y_pred._value.shape):
        raise ValueError(f"{who}: y_true of shape {tuple(y_true._value.shape)} and y_pred of "
                         f"shape {tuple(y_pred._value.shape)} must have the same shape (one-hot "
                         "labels); for integer labels use sparse_categorical_crossentropy")


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0,
                             axis=-1) -> Tensor:
    """Cross-entropy between one-hot (or soft) ``y_true`` and ``y_pred`` along ``axis``;
    probabilities are renormalised and clipped to ``[1e-7, 1 - 1e-7]`` as Keras does."""
    who = "categorical_crossentropy"
    y_pred = _prediction(y_pred, who)
    y_true = _target_like(y_true, y_pred, who)
    _same_shape(y_true, y_pred, who)
    y_true = _smooth_categorical(y_true, label_smoothing, axis)
    if from_logits:
        return _nn().softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    p = y_pred / _r.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = _m.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    return -_r.reduce_sum(y_true * _m.log(p), axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False,
                                   label_smoothing=0.0, axis=-1) -> Tensor:
    """``sum(alpha * (1 - p) ** gamma * -y_true * log(p), axis)`` with ``p`` the renormalised
    probabilities clipped to ``[1e-7, 1 - 1e-7]`` (the softmax of logits with
    ``from_logits``); ``alpha`` a float or one per class."""
    who = "categorical_focal_crossentropy"
    y_pred = _prediction(y_pred, who)
    y_true = _target_like(y_true, y_pred, who)
    _same_shape(y_true, y_pred, who)
    y_true = _smooth_categorical(y_true, label_smoothing, axis)
    if from_logits:
        y_pred = _nn().softmax(y_pred, axis=axis)
    p = y_pred / _r.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = _m.clip_by_value(p, EPSILON, 1.0 - EPSILON)
    cce = -y_true * _m.log(p)
    if isinstance(alpha, (list, tuple, np.ndarray)):
        alpha = _target_like(np.asarray(alpha, np.float64), y_pred, who)
    weight = _m.pow(1.0 - p, float(gamma)) * alpha
    return _r.reduce_sum(weight * cce, axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1) -> Tensor:
    """Cross-entropy between integer class ids ``y_true`` and ``y_pred`` (probabilities, or
    logits with ``from_logits``) over the last axis. With ``ignore_class``, labels equal to
    it give 0 and no gradient, and the result carries a Keras mask of the kept entries (a
    loss object then averages over those alone)."""
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
    valid = None
    if ignore_class is not None:
        valid = _m.not_equal(y_true, int(ignore_class))
        y_true = _m.where(valid, y_true, _core.zeros_like(y_true))
        y_pred = _m.where(_sh.expand_dims(valid, -1), y_pred, _core.zeros_like(y_pred))
    logits = y_pred if from_logits else _m.log(_m.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON))
    res = _nn().sparse_softmax_cross_entropy_with_logits(labels=y_true, logits=logits)
    if valid is not None:
        res = _m.where(valid, res, _core.zeros_like(res))
        from .layers import set_mask
        set_mask(res, valid)
    return res


def ctc(y_true, y_pred) -> Tensor:
    """CTC loss of integer labels ``y_true`` ``[batch, max_length]`` (0 is the blank and
    pads; a row's length is its count of non-zero labels) under the logits ``y_pred``
    ``[batch, frames, classes]`` (every frame used), as Keras 3's ``keras.losses.ctc``
    (``keras.ops.ctc_loss`` with ``mask_index=0``)."""
    from . import keras_ops
    y_pred = _prediction(y_pred, "ctc")
    y_true = _target_like(y_true, y_pred, "ctc", dtype=_label_dtype(y_true, y_pred))
    if y_true._value.ndim != 2:
        raise ValueError("Targets `y_true` are expected to be a tensor of shape "
                         "`(batch_size, max_length)` in integer format. "
                         f"Received: y_true.shape={tuple(y_true._value.shape)}")
    if y_pred._value.ndim != 3:
        raise ValueError("Logits `y_pred` are expected to be a tensor of shape "
                         "`(batch_size, max_length, num_classes)`. "
                         f"Received: y_pred.shape={tuple(y_pred._value.shape)}")
    n_b, n_t = y_pred._value.shape[0], y_pred._value.shape[1]
    with device_scope(y_pred._device):
        input_length = _core.fill((n_b,), np.int32(n_t))
    label_length = _core.cast(_r.reduce_sum(_core.cast(_m.not_equal(y_true, 0), np.int32),
                                            axis=-1), np.int32)
    return keras_ops.ctc_loss(y_true, y_pred, label_length, input_length, mask_index=0)


def dice(y_true, y_pred, axis=None) -> Tensor:
    """Dice loss ``1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + epsilon)``,
    the sums over ``axis`` (default: every axis, giving a scalar), as Keras 3's
    ``keras.losses.dice``; ``y_true`` is cast to ``y_pred``'s dtype."""
    y_pred = _prediction(y_pred, "dice")
    y_true = _target_like(y_true, y_pred, "dice")
    axis = _loss_axis(axis, "dice")
    inter = _r.reduce_sum(y_true * y_pred, axis=axis)
    denom = _r.reduce_sum(y_true, axis=axis) + _r.reduce_sum(y_pred, axis=axis) + EPSILON
    return 1.0 - (2.0 * inter) / denom


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None) -> Tensor:
    """Tversky loss ``1 - tp / (tp + alpha * fp + beta * fn + epsilon)`` with
    ``tp = sum(y_true * y_pred)``, ``fp = sum((1 - y_pred) * y_true)`` and
    ``fn = sum(y_pred * (1 - y_true))`` over ``axis`` (default: every axis), as Keras 3's
    ``keras.losses.tversky`` (its ``fp``/``fn`` naming kept; ``alpha = beta = 0.5`` is the
    Dice loss)."""
    y_pred = _prediction(y_pred, "tversky")
    y_true = _target_like(y_true, y_pred, "tversky")
    axis = _loss_axis(axis, "tversky")
    inter = _r.reduce_sum(y_true * y_pred, axis=axis)
    fp = _r.reduce_sum((1.0 - y_pred) * y_true, axis=axis)
    fn = _r.reduce_sum(y_pred * (1.0 - y_true), axis=axis)
    return 1.0 - inter / (inter + fp * alpha + fn * beta + EPSILON)


def _loss_axis(axis, who):
    if axis is None or isinstance(axis, (int, np.integer)):
        return axis
    try:
        return tuple(int(a) for a in axis)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: axis must be None, an int or a tuple of ints, got "
                        f"{axis!r}") from None


def circle(y_true, y_pred, ref_labels=None, ref_embeddings=None, remove_diagonal=True,
           gamma=80, margin=0.4) -> Tensor:
    """Circle loss (Sun et al., 2020) of integer labels ``y_true`` ``[batch]`` and
    L2-normalized embeddings ``y_pred`` ``[batch, dim]`` against ``ref_embeddings`` /
    ``ref_labels`` (default: the batch itself), as Keras 3's ``keras.losses.circle``: per
    row ``softplus(logsumexp(-gamma * ap * (margin - d)) + logsumexp(gamma * an *
    (1 - margin - d)))`` over the positive / negative pairs, ``d`` the cosine distance
    (clipped at 0), ``ap = max(margin + d, 0)``, ``an = max(1 + margin - d, 0)``;
    ``remove_diagonal`` drops the self-pairs from the positives. The result carries a
    Keras mask of its entries > 0 (a loss object averages over those)."""
    from . import keras_ops as K
    from .layers import set_mask
    who = "circle"
    y_pred = _prediction(y_pred, who)
    y_true = _target_like(y_true, y_pred, who, dtype=np.int32)
    ref_emb = y_pred if ref_embeddings is None else _target_like(ref_embeddings, y_pred, who)
    ref_lab = y_true if ref_labels is None else _target_like(ref_labels, y_pred, who,
                                                             dtype=np.int32)
    if y_pred._value.ndim != 2 or ref_emb._value.ndim != 2:
        raise ValueError(f"{who}: y_pred and ref_embeddings must be [batch, dim] matrices, "
                         f"got shapes {tuple(y_pred._value.shape)} and "
                         f"{tuple(ref_emb._value.shape)}")
    dist = K.maximum(1.0 - K.matmul(y_pred, K.transpose(ref_emb)), 0.0)
    q = y_true if y_true._value.ndim != 1 else K.reshape(y_true, (-1, 1))
    k = ref_lab if ref_lab._value.ndim != 1 else K.reshape(ref_lab, (-1, 1))
    pos = K.equal(q, K.transpose(k))
    neg = K.logical_not(pos)
    if remove_diagonal:
        n_q, n_k = int(y_true._value.size), int(ref_lab._value.size)
        with device_scope(y_pred._device):
            pos = K.logical_and(pos, K.logical_not(K.eye(n_q, n_k, dtype="bool")))
    pos_f = K.cast(pos, dist.dtype)
    neg_f = K.cast(neg, dist.dtype)
    pos_w = K.maximum((margin + dist) * pos_f, 0.0)
    neg_w = K.maximum((1.0 + margin - dist) * neg_f, 0.0)
    pos_wd = -1 * gamma * pos_w * (margin - dist)
    neg_wd = gamma * neg_w * ((1.0 - margin) - dist)
    with np.errstate(divide="ignore"):     # a row without pairs: log(0) = -inf, as in TF
        p_loss = K.logsumexp(K.where(pos, pos_wd, float("-inf")), axis=1)
        n_loss = K.logsumexp(K.where(neg, neg_wd, float("-inf")), axis=1)
    out = K.softplus(p_loss + n_loss)
    set_mask(out, _m.greater(out, 0.0))
    return out


def categorical_generalized_cross_entropy(y_true, y_pred, q) -> Tensor:
    """Generalized cross-entropy (Zhang & Sabuncu, 2018) ``(1 - p ** q) / q`` with ``p``
    the probability ``y_pred`` gives the integer class ``y_true``, as Keras 3's
    ``keras.losses.categorical_generalized_cross_entropy`` (``y_true`` one-hot encoded to
    ``y_pred``'s last axis and broadcast against ``y_pred`` as Keras does)."""
    from . import keras_ops as K
    who = "categorical_generalized_cross_entropy"
    y_pred = _prediction(y_pred, who)
    if y_pred._value.ndim < 1:
        raise ValueError(f"{who}: y_pred must have a class axis, got a scalar")
    y_true = _target_like(y_true, y_pred, who, dtype=np.int32)
    one_hot = K.cast(K.one_hot(y_true, int(y_pred._value.shape[-1])), y_pred.dtype)
    p = _r.reduce_sum(y_pred * one_hot, axis=-1)
    return (1.0 - _m.pow(p, q)) / q


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh


# --- loss objects ----------------------------------------------------------------------------

class Loss(_config.Configurable):
    """Base class: ``loss(y_true, y_pred, sample_weight=None)`` returns the reduced loss.

    Subclasses implement :meth:`call` returning per-sample values. As in Keras 3, a Keras
    mask on ``y_pred`` (the output of ``Embedding(mask_zero=True)``, ``Masking`` ...) and one
    on those values (``SparseCategoricalCrossentropy(ignore_class=...)``), ANDed when both
    are there, weigh the values: the mean reductions average over the kept entries, and the
    per-sample values (``reduction="none"``) are 0 at the masked ones.
    """

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None):
        self.name = name or _snake(type(self).__name__)
        self.reduction = _check_reduction(reduction, type(self).__name__)
        self.dtype = dtype

    def call(self, y_true, y_pred) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def __call__(self, y_true, y_pred, sample_weight=None) -> Tensor:
        from .layers import get_mask
        who = type(self).__name__
        in_mask = get_mask(y_pred) if isinstance(y_pred, Tensor) else None
        y_pred = _prediction(y_pred, who)
        if self.dtype is not None and y_pred._value.dtype != np.dtype(self.dtype):
            y_pred = _core.cast(y_pred, self.dtype)
        values = self.call(y_true, y_pred)
        out_mask = get_mask(values) if isinstance(values, Tensor) else None
        if in_mask is not None and out_mask is not None:
            mask = _m.logical_and(_core.cast(in_mask, np.bool_), _core.cast(out_mask, np.bool_))
        else:
            mask = in_mask if in_mask is not None else out_mask
        return _reduce(values, sample_weight, self.reduction, who, mask=mask)

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}

    def __repr__(self):
        return f"<gt.losses.{type(self).__name__} reduction={self.reduction!r}>"


class LossFunctionWrapper(Loss):
    """A loss object around a per-sample function ``fn(y_true, y_pred, **kwargs)``; as in
    Keras 3, the ranks of ``y_true`` and ``y_pred`` are matched first (a trailing axis of 1
    squeezed, or added to a rank-1 tensor)."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(reduction=reduction, name=name or getattr(fn, "__name__", None),
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        if isinstance(y_pred, Tensor) and not isinstance(y_true, (list, tuple, dict)):
            y_true = _target_like(y_true, y_pred, type(self).__name__,
                                  dtype=_label_dtype(y_true, y_pred))
            y_true, y_pred = _squeeze_or_expand(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


def _label_dtype(y_true, y_pred):
    """The dtype ``y_true`` keeps before the function sees it: integer labels stay integers
    (sparse labels), everything else takes ``y_pred``'s float dtype."""
    dt = getattr(y_true, "dtype", None)
    if isinstance(y_true, Tensor):
        dt = y_true._value.dtype
    elif dt is None:
        dt = np.asarray(y_true).dtype
    dt = np.dtype(getattr(dt, "np", dt))
    return dt if dt.kind in "iu" else y_pred._value.dtype


class _Plain(LossFunctionWrapper):
    """A wrapper whose config is the base one (the function is fixed by the class)."""

    def get_config(self):
        return Loss.get_config(self)


class MeanSquaredError(_Plain):
    """Mean of squared errors over the last axis, then reduced over the batch."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(_Plain):
    """Mean of absolute errors over the last axis, then reduced over the batch."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsolutePercentageError(_Plain):
    """``100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7))`` over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_percentage_error",
                 dtype=None):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name,
                         dtype=dtype)


class MeanSquaredLogarithmicError(_Plain):
    """Mean squared difference of ``log(1 + x)`` over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_logarithmic_error",
                 dtype=None):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name,
                         dtype=dtype)


class CosineSimilarity(LossFunctionWrapper):
    """Negative cosine similarity along ``axis``."""

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity",
                 dtype=None):
        super().__init__(cosine_similarity, reduction=reduction, name=name, dtype=dtype,
                         axis=axis)


class Huber(LossFunctionWrapper):
    """Huber loss: quadratic for errors up to ``delta``, linear beyond."""

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss",
                 dtype=None):
        if delta <= 0:
            raise ValueError(f"Huber: delta must be > 0, got {delta}")
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=float(delta))


class LogCosh(_Plain):
    """Mean of ``log(cosh(y_pred - y_true))`` over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="log_cosh", dtype=None):
        super().__init__(log_cosh, reduction=reduction, name=name, dtype=dtype)


class Hinge(_Plain):
    """Mean of ``maximum(1 - y_true * y_pred, 0)`` over the last axis (0/1 labels become
    -1/1)."""

    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(hinge, reduction=reduction, name=name, dtype=dtype)


class SquaredHinge(_Plain):
    """Mean of ``square(maximum(1 - y_true * y_pred, 0))`` over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, reduction=reduction, name=name, dtype=dtype)


class CategoricalHinge(_Plain):
    """``maximum(neg - pos + 1, 0)`` for one-hot labels."""

    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, reduction=reduction, name=name, dtype=dtype)


class KLDivergence(_Plain):
    """Kullback-Leibler divergence ``sum(y_true * log(y_true / y_pred))`` over the last
    axis."""

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, reduction=reduction, name=name, dtype=dtype)


class Poisson(_Plain):
    """Mean of ``y_pred - y_true * log(y_pred + 1e-7)`` over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(poisson, reduction=reduction, name=name, dtype=dtype)


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
        self.label_smoothing = float(label_smoothing)
        self.axis = axis


class BinaryFocalCrossentropy(LossFunctionWrapper):
    """Binary focal cross-entropy (Lin et al.): ``(1 - p_t) ** gamma`` times the binary
    cross-entropy, with ``apply_class_balancing`` also ``alpha`` / ``1 - alpha``."""

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                 label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="binary_focal_crossentropy", dtype=None):
        _check_smoothing(label_smoothing, "BinaryFocalCrossentropy")
        super().__init__(binary_focal_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         apply_class_balancing=bool(apply_class_balancing), alpha=alpha,
                         gamma=gamma, from_logits=bool(from_logits),
                         label_smoothing=float(label_smoothing), axis=axis)
        self.from_logits = bool(from_logits)
        self.label_smoothing = float(label_smoothing)
        self.axis = axis
        self.apply_class_balancing = bool(apply_class_balancing)
        self.alpha = alpha
        self.gamma = gamma


class CategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy for one-hot labels (``from_logits``, ``label_smoothing``)."""

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy", dtype=None):
        _check_smoothing(label_smoothing, "CategoricalCrossentropy")
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=bool(from_logits), label_smoothing=float(label_smoothing),
                         axis=axis)
        self.from_logits = bool(from_logits)
        self.label_smoothing = float(label_smoothing)
        self.axis = axis


class CategoricalFocalCrossentropy(LossFunctionWrapper):
    """Categorical focal cross-entropy: ``alpha * (1 - p) ** gamma`` times the
    cross-entropy of each class."""

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_focal_crossentropy",
                 dtype=None):
        _check_smoothing(label_smoothing, "CategoricalFocalCrossentropy")
        super().__init__(categorical_focal_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, alpha=alpha, gamma=gamma, from_logits=bool(from_logits),
                         label_smoothing=float(label_smoothing), axis=axis)
        self.from_logits = bool(from_logits)
        self.label_smoothing = float(label_smoothing)
        self.axis = axis
        self.alpha = alpha
        self.gamma = gamma


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy for integer class labels (``from_logits``; ``ignore_class``: entries
    with that label count neither in the sum nor in the mean's divisor)."""

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 axis=-1, name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=bool(from_logits), ignore_class=ignore_class,
                         axis=axis)
        self.from_logits = bool(from_logits)
        self.ignore_class = ignore_class
        self.axis = axis

    def get_config(self):
        return {**Loss.get_config(self), "from_logits": self.from_logits,
                "ignore_class": self.ignore_class}


class CTC(_Plain):
    """CTC loss (Connectionist Temporal Classification) of integer labels (0 the blank)
    under logits ``[batch, frames, classes]``, as Keras 3's ``keras.losses.CTC``."""

    def __init__(self, reduction="sum_over_batch_size", name="ctc", dtype=None):
        super().__init__(ctc, reduction=reduction, name=name, dtype=dtype)


class Dice(LossFunctionWrapper):
    """Dice loss ``1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred))`` over
    ``axis`` (default: every axis), as Keras 3's ``keras.losses.Dice``."""

    def __init__(self, reduction="sum_over_batch_size", name="dice", axis=None, dtype=None):
        super().__init__(dice, reduction=reduction, name=name, dtype=dtype,
                         axis=_loss_axis(axis, "Dice"))
        self.axis = self._fn_kwargs["axis"]


class Tversky(LossFunctionWrapper):
    """Tversky loss weighing false positives by ``alpha`` and false negatives by ``beta``
    (0.5 each: the Dice loss) over ``axis``, as Keras 3's ``keras.losses.Tversky``."""

    def __init__(self, alpha=0.5, beta=0.5, reduction="sum_over_batch_size", name="tversky",
                 axis=None, dtype=None):
        super().__init__(tversky, reduction=reduction, name=name, dtype=dtype, alpha=alpha,
                         beta=beta, axis=_loss_axis(axis, "Tversky"))
        self.alpha = alpha
        self.beta = beta
        self.axis = self._fn_kwargs["axis"]


class Circle(LossFunctionWrapper):
    """Circle loss between integer labels and L2-normalized embeddings of the batch, as
    Keras 3's ``keras.losses.Circle`` (the mean runs over the samples whose loss is > 0)."""

    def __init__(self, gamma=80.0, margin=0.4, remove_diagonal=True,
                 reduction="sum_over_batch_size", name="circle", dtype=None):
        super().__init__(circle, reduction=reduction, name=name, dtype=dtype, gamma=gamma,
                         margin=margin, remove_diagonal=remove_diagonal)
        self.gamma = gamma
        self.margin = margin
        self.remove_diagonal = remove_diagonal


class CategoricalGeneralizedCrossEntropy(LossFunctionWrapper):
    """Generalized cross-entropy ``(1 - p ** q) / q`` of integer labels, ``q`` in (0, 1),
    as Keras 3's ``keras.losses.CategoricalGeneralizedCrossEntropy``."""

    def __init__(self, q=0.5, reduction="sum_over_batch_size",
                 name="categorical_generalized_cross_entropy", dtype=None):
        if not 0 < q < 1:
            raise ValueError(f"CategoricalGeneralizedCrossEntropy: q must be in the interval "
                             f"(0, 1), got q={q}")
        super().__init__(categorical_generalized_cross_entropy, reduction=reduction,
                         name=name, dtype=dtype, q=q)
        self.q = q


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

_CLASSES = {c.__name__: c for c in (
    MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError, CosineSimilarity, Huber, LogCosh, Hinge, SquaredHinge,
    CategoricalHinge, KLDivergence, Poisson, BinaryCrossentropy, BinaryFocalCrossentropy,
    CategoricalCrossentropy, CategoricalFocalCrossentropy, SparseCategoricalCrossentropy, CTC,
    Dice, Tversky, Circle, CategoricalGeneralizedCrossEntropy)}
_FUNCTIONS = {f.__name__: f for f in (
    mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
    mean_squared_logarithmic_error, cosine_similarity, huber, log_cosh, hinge, squared_hinge,
    categorical_hinge, kl_divergence, poisson, binary_crossentropy, binary_focal_crossentropy,
    categorical_crossentropy, categorical_focal_crossentropy, sparse_categorical_crossentropy,
    ctc, dice, tversky, circle, categorical_generalized_cross_entropy)}
_FUNCTIONS.update({
    "mse": mean_squared_error, "MSE": mean_squared_error, "mae": mean_absolute_error,
    "MAE": mean_absolute_error, "mape": mean_absolute_percentage_error,
    "MAPE": mean_absolute_percentage_error, "msle": mean_squared_logarithmic_error,
    "MSLE": mean_squared_logarithmic_error, "kld": kl_divergence, "KLD": kl_divergence,
    "bce": binary_crossentropy, "BCE": binary_crossentropy, "huber_loss": huber})


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


def serialize(obj) -> dict:
    """Keras' config of a loss: a Loss object's class and config, or for one of the loss
    functions ``{"module": "builtins", "class_name": "function", "config": <its name>,
    "registered_name": "function"}``."""
    if not isinstance(obj, Loss) and callable(obj):
        name = getattr(obj, "__name__", None)
        if _FUNCTIONS.get(name) is not obj:
            name = next((k for k, f in _FUNCTIONS.items() if f is obj), name)
        if not isinstance(name, str):
            raise TypeError(f"serialize: cannot serialize the loss {obj!r}")
        return {"module": "builtins", "class_name": "function", "config": name,
                "registered_name": "function"}
    return _config.serialize(obj)


def deserialize(config: dict) -> Loss:
    if isinstance(config, dict) and config.get("class_name") == "function":
        return get(config.get("config"))
    return _config.deserialize(config, _CLASSES, "loss", sorted(_CLASSES), fold_case=False)
